"""Where the package's shipped files live, for every module whatever folder it sits in."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = PACKAGE_DIR / "data"
BUILTIN_CATALOG_DIR = PACKAGE_DIR / "catalogs"
