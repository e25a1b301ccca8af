"""Typed checks of option values and output paths, each failing with one `InputError` that names what.

The API functions (`solve`, `predict`, `compare`, ...) call these, so a bad number is caught the same way
from Python and from the command line; the CLI adds nothing of its own.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any

from .errors import InputError

# Largest count (nodes, GPUs per node, batch, shards...) accepted anywhere: far above any real cluster,
# far below the int64 arithmetic of the design space.
MAX_COUNT = 10**9


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def positive(name: str, v: float | None) -> None:
    """None (not given) or a finite number > 0."""
    if v is None:
        return
    if not _is_number(v) or not math.isfinite(v):
        raise InputError(f"{name} must be a finite number > 0, got {v}")
    if not v > 0:
        raise InputError(f"{name} must be > 0, got {v}")


def non_negative(name: str, v: float | None) -> None:
    """None (not given) or a finite number >= 0."""
    if v is None:
        return
    if not _is_number(v) or not math.isfinite(v):
        raise InputError(f"{name} must be a finite number >= 0, got {v}")
    if not v >= 0:
        raise InputError(f"{name} must be >= 0, got {v}")


def count(name: str, v: int | None, *, minimum: int = 1) -> None:
    """None (not given) or a whole number in [minimum, MAX_COUNT]."""
    if v is None:
        return
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise InputError(f"{name} must be a whole number, got {v!r}")
    if v < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {v}")
    if v > MAX_COUNT:
        raise InputError(f"{name} must be at most {MAX_COUNT:,}, got {v}")


def output_path(path: str | Path, what: str) -> Path:
    """An output file we can create: its folder exists and it is not itself a folder."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p}: is a directory, not a file")
    parent = p.parent
    if not parent.exists():
        raise InputError(f"{what} {p}: directory {parent} does not exist")
    if not parent.is_dir():
        raise InputError(f"{what} {p}: {parent} is not a directory")
    return p


def write_text(path: str | Path, text: str, what: str) -> Path:
    """Write `text` to `path` (checked with `output_path`); an OS error becomes one InputError."""
    p = output_path(path, what)
    try:
        p.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot write: {exc.strerror or exc}") from None
    return p
