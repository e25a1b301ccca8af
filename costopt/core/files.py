"""Reading user files and writing JSON, with one clear `InputError` for every way a file can be bad."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from costopt.core.errors import InputError


def read_toml(path: str | Path, what: str) -> dict:
    """Parse a TOML file; `what` names the kind of file in the not-found message ('catalog file')."""
    p = Path(path)
    field = what.removesuffix(" file").replace(" ", "_")  # the input at fault: 'catalog', 'model_config', ...
    if not p.exists():
        raise InputError(f"{what} not found: {p}", field=field)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML: {exc}", field=field) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read: {exc}", field=field) from None


def json_safe(value: Any) -> Any:
    """NaN and infinities become null (JSON has no such numbers), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(x) for k, x in value.items()}
    if isinstance(value, list):
        return [json_safe(x) for x in value]
    return value


def json_with_columns(head: dict[str, Any], rows_key: str, columns: dict[str, list], tail: dict[str, Any]) -> str:
    """`json.dumps(json_safe({**head, rows_key: rows, **tail}), indent=2)` byte for byte, where `rows` are the
    dicts whose values are `columns` (one list per key, all the same length), built column by column: a
    validation file's 100,000 rows are encoded in one pass per column (strings by the json module's own C
    encoder, floats by `float.__repr__` as json does, non-finite floats as null as `json_safe` makes them)."""
    import json
    from json.encoder import encode_basestring_ascii as enc_str

    def scalar(v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        t = type(v)
        if t is str:
            return enc_str(v)
        if t is int:
            return int.__repr__(v)
        if t is float:
            return float.__repr__(v) if math.isfinite(v) else "null"
        raise TypeError(t)

    keys = list(columns)
    if not all(isinstance(k, str) for k in [*head, *keys, *tail]) or rows_key in head or rows_key in tail:
        raise ValueError("json_with_columns: string keys, rows_key only once")
    n = len(columns[keys[0]]) if keys else 0
    encoded = []
    for k in keys:
        values = columns[k]
        if len(values) != n:
            raise ValueError(f"json_with_columns: column {k!r} has {len(values)} values, not {n}")
        kinds = set(map(type, values))
        if kinds == {str}:
            enc = map(enc_str, values)
        elif kinds == {float} and all(map(math.isfinite, values)):
            enc = map(float.__repr__, values)
        elif kinds <= {int}:
            enc = map(int.__repr__, values)
        else:
            enc = map(scalar, values)  # TypeError on a nested value: not a flat table
        encoded.append(list(map(("      " + enc_str(k) + ": ").__add__, enc)))
    if n == 0:
        rows_text = "[]"
    elif not keys:
        rows_text = "[\n" + ",\n".join(["    {}"] * n) + "\n  ]"
    else:
        rows_text = "[\n" + ",\n".join("    {\n" + ",\n".join(cells) + "\n    }" for cells in zip(*encoded)) + "\n  ]"
    parts = [f"  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  ") for k, v in head.items()]
    parts.append(f"  {enc_str(rows_key)}: {rows_text}")
    parts += [f"  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  ") for k, v in tail.items()]
    return "{\n" + ",\n".join(parts) + "\n}"
