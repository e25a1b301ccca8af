"""Reading user files and writing JSON, with one clear `InputError` for every way a file can be bad."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from .errors import InputError


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
