"""The one rule of the build tools for a file they ship: `--check` compares a fresh build with it (exit 1
when it differs), otherwise the fresh build is written."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path


def check_or_write(path: Path, text: str, check: bool) -> None:
    """With `check`: print whether `path` holds `text` and exit 0 (same) or 1; else write `text` to it."""
    if check:
        same = path.exists() and path.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{path} differs from a fresh build")
        sys.exit(0 if same else 1)
    path.write_text(text, encoding="utf-8")


def csv_text(rows: list[dict], columns: list[str]) -> str:
    """The CSV text a build tool ships: header, then `rows` in order, "\n" line ends (byte-stable across OSes)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
