"""What the option-walk tests share (tests/test_option_walk*.py)."""

from __future__ import annotations


def merge_options(base: list[str], extra: list[str]) -> list[str]:
    """`base` with `extra`'s options replacing the base's value of the same option (each option in `base`
    takes one value), then `extra` appended."""
    flags = {a for a in extra if a.startswith("--")}
    out, i = [], 0
    while i < len(base):
        if base[i] in flags:
            i += 2
            continue
        out.append(base[i])
        i += 1
    return out + extra
