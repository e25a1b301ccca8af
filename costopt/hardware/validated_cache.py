"""A user cache of validated input files: validation done once per file content, not once per run.

An entry is the validated data of one file, `<kind>-<key>.json` in the cache folder
(`$COSTOPT_CACHE_DIR`, else `$XDG_CACHE_HOME/costopt`, else `~/.cache/costopt`;
`COSTOPT_CACHE_DIR=off` turns the cache off). The key is a SHA-256 of the costopt version, the source
of the modules that validate, the file's path as given and its bytes.

Trust model (docs/catalogs.md, "The validated-catalog cache"): the cache is believed only as far as
it is the user's own and intact; anything else is a miss, never an error and never an answer.

- The folder is created 0700. A folder (or entry) that is not owned by the user running costopt, or
  that is group- or world-writable, is not used at all: no entry is read from it or written to it (as
  ssh does with keys). Entries are opened without following links and without blocking, and must be
  regular files of at most MAX_ENTRY_BYTES: a FIFO, a device, a link or a huge file is a miss.
- An entry is one header line `costopt-cache <FORMAT> sha256=<digest of the rest>` and then JSON
  holding its key, the SHA-256 of the source file it was validated from, the SHA-256 of every other
  file the data was built from (a catalog's bases), and the data. On read the header digest, the key,
  the source digest (against the file's bytes now) and every other file's digest are checked; a
  mismatch, a parse error (deep nesting included) or data the caller's `build` cannot use is a miss.
- A miss is validated again from the file and the entry rewritten atomically (a new 0600 file, then
  a rename), so a tampered, truncated or foreign entry costs one validation and is replaced.

The digests detect a changed source, a truncated or edited entry, a corrupt disk; they do not stop
someone who can write as the user (who could as well edit the catalog itself). Entries are written
only for files that validated, at most MAX_ENTRIES per kind (the oldest go). Within one process,
entries are also kept in memory (a command that loads the same catalog twice reads it once).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Callable

from costopt.core.paths import PACKAGE_DIR

FORMAT = 2
MAX_ENTRIES = 64
# Largest entry read (bytes): the reference catalog's entry is about 95 kB; an entry 170x that is no
# entry costopt wrote.
MAX_ENTRY_BYTES = 16_000_000
_MAGIC = b"costopt-cache %d sha256=" % FORMAT
_memo: dict[str, bytes] = {}  # key -> the entry's verified JSON, for this process (parsed afresh per get)
_code: dict[tuple[str, ...], bytes] = {}  # modules -> digest of their source
_source: dict[str, str] = {}  # key -> SHA-256 (hex) of the source file's bytes when the key was made


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


def _own_and_private(st: os.stat_result) -> bool:
    """Owned by the user running costopt and writable by no one else (group/world write bits clear)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def trusted_dir(create: bool = False) -> Path | None:
    """The cache folder if it may be used: a directory the user owns that no one else can write.
    `create`: make it (mode 0700) when it does not exist. None: no cache this run."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        if create and not folder.exists():
            folder.parent.mkdir(parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
        st = os.stat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or not _own_and_private(st):
        return None
    return folder


def _sha256(data: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(data).digest()


def key(kind: str, path: Path, modules: tuple[str, ...], extra: str = "") -> str | None:
    """Cache key of `path` validated by `modules` (file names in the costopt package), and `extra` (what else
    the entry depends on, e.g. a function's arguments); None when the file or a module cannot be read, or
    is not a regular file (the caller's uncached load then says why)."""
    from costopt.core.version import __version__

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        content = path.read_bytes()
        if modules not in _code:
            here = PACKAGE_DIR
            _code[modules] = b"".join(_sha256((here / m).read_bytes()) for m in modules)
    except OSError:
        return None
    head = f"costopt {__version__}; cache {FORMAT}; {kind}; {path}\n{extra}".encode("utf-8", "surrogateescape")
    k = f"{kind}-{_sha256(head + _code[modules] + content).hex()}"
    _source[k] = _sha256(content).hex()
    return k


def _read_entry(folder: Path, key: str) -> bytes | None:
    """The entry's bytes if it is a regular file the user owns, writable by no one else, not too large."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / f"{key}.json", flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _own_and_private(st) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, left = [], MAX_ENTRY_BYTES + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        blob = b"".join(chunks)
        return None if len(blob) > MAX_ENTRY_BYTES else blob
    except OSError:
        return None
    finally:
        os.close(fd)


def _decode(blob: bytes, key: str) -> Any | None:
    """The data of an entry's bytes, or None when any check fails (module docstring)."""
    head, sep, body = blob.partition(b"\n")
    if not sep or not head.startswith(_MAGIC) or head[len(_MAGIC):] != _sha256(body).hex().encode():
        return None
    entry = json.loads(body.decode("utf-8"))
    if not isinstance(entry, dict) or entry.get("key") != key or entry.get("source") != _source.get(key):
        return None
    files = entry["files"]
    if not isinstance(files, list):
        return None
    for name, digest in files:
        p = Path(name)
        if not stat.S_ISREG(os.stat(p).st_mode) or _sha256(p.read_bytes()).hex() != digest:
            return None
    return entry["data"]


def get(key: str | None, build: Callable[[Any], Any] | None = None) -> Any | None:
    """What is kept under `key` (passed through `build` when given), or None: no entry, an entry that is
    not trusted or fails a check, a file it was built from changed, or `build` cannot use the data.
    Never raises (a bad entry is a miss; the caller validates the file again and `put`s the result)."""
    if key is None:
        return None
    try:
        blob = _memo.get(key)
        if blob is None:
            folder = trusted_dir()
            if folder is None:
                return None
            blob = _read_entry(folder, key)
            if blob is None:
                return None
        data = _decode(blob, key)
        if data is None:
            return None
        out = build(data) if build is not None else data
    except Exception:  # noqa: BLE001 - any oddity of an entry (parse error, recursion, bad layout) is a miss
        return None
    _memo[key] = blob
    return out


def put(key: str | None, files: list[Path], data: Any) -> None:
    """Keep `data` (JSON-able), validated from `files` (the first is the source the key was made from),
    under `key`; a folder that cannot be written or is not trusted is no error (the next run validates
    again)."""
    if key is None or key not in _source:
        return
    try:
        digests = [[str(f), _sha256(Path(f).read_bytes()).hex()] for f in files]
        body = json.dumps({"key": key, "source": _source[key], "files": digests, "data": data}).encode("utf-8")
    except (OSError, TypeError, ValueError):
        return
    blob = _MAGIC + _sha256(body).hex().encode() + b"\n" + body
    _memo[key] = blob
    folder = trusted_dir(create=True)
    if folder is None:
        return
    kind = key.split("-", 1)[0]
    tmp = folder / f".{key}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, folder / f"{key}.json")
        entries = []
        for f in folder.glob(f"{kind}-*.json"):
            try:
                entries.append((f.lstat().st_mtime, f))
            except OSError:
                pass
        for _, old in sorted(entries)[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
