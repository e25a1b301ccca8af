"""A user cache of validated input files: validation done once per file content, not once per run.

An entry is the validated data of one file as JSON, `<kind>-<key>.json` in the cache folder
(`$COSTOPT_CACHE_DIR`, else `$XDG_CACHE_HOME/costopt`, else `~/.cache/costopt`;
`COSTOPT_CACHE_DIR=off` turns the cache off). The key is a SHA-256 of the costopt version, the source
of the modules that validate, the file's path as given and its bytes; the entry also records the
SHA-256 of every file the data was built from (a catalog's bases) and is used only while each still
matches. Entries are written atomically (a temporary file, then a rename), only for files that
validated, at most MAX_ENTRIES per kind (the oldest go). An entry that cannot be read, does not match
or does not parse is a miss: the caller validates again, so the cache changes how fast a file loads,
never what it holds or which error a bad file gets. Within one process, entries are also kept in memory
(a command that loads the same catalog twice reads it once).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from costopt.core.paths import PACKAGE_DIR

FORMAT = 1
MAX_ENTRIES = 64
_memo: dict[str, str] = {}  # key -> entry JSON, for this process
_code: dict[tuple[str, ...], bytes] = {}  # modules -> digest of their source


def cache_dir() -> Path | None:
    """The cache folder; None when the cache is turned off (or there is no home folder)."""
    env = os.environ.get("COSTOPT_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        return (Path(xdg) if xdg else Path.home() / ".cache") / "costopt"
    except RuntimeError:
        return None


def _sha256(data: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(data).digest()


def key(kind: str, path: Path, modules: tuple[str, ...]) -> str | None:
    """Cache key of `path` validated by `modules` (file names in the costopt package); None when the
    file or a module cannot be read (the caller's uncached load then says why)."""
    from costopt.core.version import __version__

    try:
        content = path.read_bytes()
        if modules not in _code:
            here = PACKAGE_DIR
            _code[modules] = b"".join(_sha256((here / m).read_bytes()) for m in modules)
    except OSError:
        return None
    head = f"costopt {__version__}; cache {FORMAT}; {kind}; {path}\n".encode("utf-8", "surrogateescape")
    return f"{kind}-{_sha256(head + _code[modules] + content).hex()}"


def get(key: str | None) -> Any | None:
    """The validated data kept under `key`, or None (no entry, or a file it was built from changed)."""
    if key is None:
        return None
    try:
        text = _memo.get(key)
        if text is None:
            folder = cache_dir()
            if folder is None:
                return None
            text = (folder / f"{key}.json").read_text(encoding="utf-8")
        entry = json.loads(text)
        if entry.get("format") != FORMAT or entry.get("key") != key:
            return None
        for name, digest in entry["files"]:
            if _sha256(Path(name).read_bytes()).hex() != digest:
                return None
        data = entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    _memo[key] = text
    return data


def put(key: str | None, files: list[Path], data: Any) -> None:
    """Keep `data` (JSON-able), validated from `files`, under `key`; a folder that cannot be written is
    no error (the next run validates again)."""
    if key is None:
        return
    try:
        digests = [[str(f), _sha256(Path(f).read_bytes()).hex()] for f in files]
    except OSError:
        return
    text = json.dumps({"format": FORMAT, "key": key, "files": digests, "data": data})
    _memo[key] = text
    folder = cache_dir()
    if folder is None:
        return
    kind = key.split("-", 1)[0]
    tmp = folder / f".{key}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, folder / f"{key}.json")
        entries = sorted(folder.glob(f"{kind}-*.json"), key=lambda f: f.stat().st_mtime)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
