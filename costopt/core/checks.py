"""Typed checks of everything a user hands in, each failing with one `InputError` that names what.

The API functions (`solve`, `predict`, `compare`, ...) call these, so a bad value is caught the same way
from Python and from the command line; the CLI adds nothing of its own. Every number is checked finite
and in range where it enters; ids are checked as ids (a short single-line string, never a path); dates
as calendar dates; output paths so that a command never writes over one of its own inputs, and files
are written atomically (a temporary file in the same folder, then a rename).
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import os
import re
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from costopt.core.errors import InputError
from costopt.core.files import file_kind
from costopt.core.interrupts import signals_held

# Largest count (nodes, GPUs per node, batch, shards...) accepted anywhere: far above any real cluster,
# far below the int64 arithmetic of the design space.
MAX_COUNT = 10**9
# Largest amount of money (USD) or physical quantity a user may give: the products the model forms
# (nodes x price, samples x epochs, ...) stay far below float64 overflow (1.8e308).
MAX_AMOUNT = 1e15


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def shown(v: Any, limit: int = 60) -> str:
    """A user-given value as it appears in a one-line message: repr (newlines escaped), shortened."""
    s = repr(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def positive(name: str, v: float | None, *, maximum: float = MAX_AMOUNT) -> None:
    """None (not given) or a finite number in (0, maximum]."""
    if v is None:
        return
    if not _is_number(v) or not math.isfinite(v):
        raise InputError(f"{name} must be a finite number > 0, got {shown(v)}", field=name)
    if not v > 0:
        raise InputError(f"{name} must be > 0, got {v}", field=name)
    if v > maximum:
        raise InputError(f"{name} must be at most {maximum:g}, got {v:g}", field=name)


def non_negative(name: str, v: float | None, *, maximum: float = MAX_AMOUNT) -> None:
    """None (not given) or a finite number in [0, maximum]."""
    if v is None:
        return
    if not _is_number(v) or not math.isfinite(v):
        raise InputError(f"{name} must be a finite number >= 0, got {shown(v)}", field=name)
    if not v >= 0:
        raise InputError(f"{name} must be >= 0, got {v}", field=name)
    if v > maximum:
        raise InputError(f"{name} must be at most {maximum:g}, got {v:g}", field=name)


def fraction(name: str, v: float | None) -> None:
    """None (not given) or a finite number in [0, 1]."""
    non_negative(name, v, maximum=1.0)


def count(name: str, v: int | None, *, minimum: int = 1) -> None:
    """None (not given) or a whole number in [minimum, MAX_COUNT]."""
    if v is None:
        return
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise InputError(f"{name} must be a whole number, got {shown(v)}", field=name)
    if v < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {v}", field=name)
    if v > MAX_COUNT:
        raise InputError(f"{name} must be at most {MAX_COUNT:,}, got {v}", field=name)


def as_count(name: str, v: Any) -> int | None:
    """`count`, then the value as a Python int (floats such as 8.0 accepted)."""
    count(name, v)
    return None if v is None else int(v)


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


def ident(name: str, v: Any, *, optional: bool = False) -> None:
    """An id (model, GPU, chassis, NIC, strategy...): a short one-line string of letters, digits and
    `._+-`, so never a path (no `/`, no `..` start) and never two lines in a message."""
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise InputError(f"{name} must be an id (a string), got {type(v).__name__} {shown(v)}", field=name)
    if not _ID.match(v):
        raise InputError(f"{name} {shown(v)} is not an id (letters, digits, '.', '_', '+', '-'; no paths)",
                         field=name)


def ident_list(name: str, v: Any) -> list[str] | None:
    """None or a list (or tuple) of ids; a bare string is refused (it would read as its letters)."""
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise InputError(f"{name} must be a list of ids, got {type(v).__name__} {shown(v)}", field=name)
    for x in v:
        ident(name, x)
    return list(v)


def choice(name: str, v: Any, allowed: Iterable[str]) -> None:
    """One of `allowed` (a string)."""
    allowed = tuple(allowed)
    if not isinstance(v, str) or v not in allowed:
        raise InputError(f"unknown {name} {shown(v)} (choose from {', '.join(allowed)})", field=name)


def path_like(name: str, v: Any, *, optional: bool = True) -> None:
    """None (when optional) or a str / os.PathLike naming a file."""
    if v is None and optional:
        return
    if isinstance(v, bool) or not isinstance(v, (str, os.PathLike)):
        raise InputError(f"{name} must be a file path, got {type(v).__name__} {shown(v)}", field=name)
    if isinstance(v, str) and (not v or "\x00" in v):
        raise InputError(f"{name} must be a file path, got {shown(v)}", field=name)


_DATE = re.compile(r"^([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?\Z")  # ASCII digits only (\d takes "２")


def date(name: str, v: Any) -> str:
    """A calendar date: YYYY-MM-DD, or YYYY-MM / YYYY where only that much is known. Returns it."""
    m = _DATE.match(v) if isinstance(v, str) else None
    if m is None:
        raise InputError(f"{name} must be a date YYYY-MM-DD (or YYYY-MM, YYYY), got {shown(v)}", field=name)
    y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    try:
        _dt.date(y, mo, d)
    except ValueError as exc:
        raise InputError(f"{name} {v!r} is not a calendar date ({exc})", field=name) from None
    return v


def as_of(v: Any) -> _dt.date | None:
    """The day price ages are counted to (`--as-of`): None (today), a `datetime.date`, or YYYY-MM-DD."""
    if v is None or (isinstance(v, _dt.date) and not isinstance(v, _dt.datetime)):
        return v
    if not (isinstance(v, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", v.strip())):
        raise InputError(f"--as-of must be a date YYYY-MM-DD, got {shown(v)}", field="as_of")
    date("--as-of", v.strip())
    return _dt.date.fromisoformat(v.strip())


def is_date(v: Any) -> bool:
    """Whether `date` accepts v (for validators that raise their own error type)."""
    try:
        date("date", v)
        return True
    except InputError:
        return False


# --- output files ---------------------------------------------------------------------------------------


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


# `--force`: a command line may replace a read-only output file (set by the commands that take it, reset
# for every command by the CLI's root callback). Special files (FIFOs, devices, sockets) are never replaced.
_FORCE: ContextVar[bool] = ContextVar("costopt_force_overwrite", default=False)


def force_overwrite(on: bool) -> None:
    """Whether outputs may replace read-only files (`--force`) from now on in this context."""
    _FORCE.set(bool(on))


def output_path(path: str | Path, what: str, inputs: Iterable[Any] = ()) -> Path:
    """An output file we can create or replace: its folder exists; it is not a folder, not a special file
    (a FIFO, a device such as /dev/null, a socket, or a link to one such as /dev/stdout: those are never
    replaced), not read-only (unless `--force`), and none of the command's `inputs` (files it reads; None
    entries and built-in names are skipped). A link to a regular file is written through: the file it
    names is replaced, the link stays. Returns the path to replace."""
    path_like(what, path, optional=False)
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p}: is a directory, not a file", field=what)
    parent = p.parent
    if not parent.exists():
        raise InputError(f"{what} {p}: directory {parent} does not exist", field=what)
    if not parent.is_dir():
        raise InputError(f"{what} {p}: {parent} is not a directory", field=what)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
        if p.is_symlink():  # a dangling link: where it points is not ours to create
            raise InputError(f"{what} {p}: is a link to a missing file; refusing to write through it", field=what)
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot check it: {exc.strerror or exc}", field=what) from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {p}: is {file_kind(st.st_mode)}; refusing to replace it (an output is a "
                             "regular file; leave out --out to print to stdout)", field=what)
        read_only = not st.st_mode & 0o222 or (os.geteuid() != 0 and not os.access(p, os.W_OK))
        if read_only and not _FORCE.get():
            raise InputError(f"{what} {p}: is read-only; refusing to replace it (--force replaces it)", field=what)
    for src in inputs:
        if src is None or not isinstance(src, (str, os.PathLike)):
            continue
        if _same_file(p, Path(src)):
            raise InputError(f"{what} {p}: is one of this command's inputs; refusing to write over it "
                             f"(choose another output file)", field=what)
    if p.is_symlink():
        # a link through /dev or /proc (/dev/stdout -> /proc/self/fd/1 -> whatever fd 1 is) names a stream,
        # not a file to replace, even when fd 1 happens to be a regular file
        hop = os.path.abspath(p)
        for _ in range(40):
            if hop.startswith(("/dev/", "/proc/")):
                raise InputError(f"{what} {p}: is a link through {hop}; refusing to replace it (leave out --out "
                                 "to print to stdout)", field=what)
            if not os.path.islink(hop):
                break
            hop = os.path.abspath(os.path.join(os.path.dirname(hop), os.readlink(hop)))
        return Path(os.path.realpath(p))
    return p


@contextmanager
def atomic_output(path: str | Path, what: str, inputs: Iterable[Any] = ()) -> Iterator[BinaryIO]:
    """A binary file handle to a temporary file beside `path` (checked with `output_path`), renamed over
    `path` when the block ends without an error: a failure (an exception in the block, a full disk) never
    leaves a half-written file, and readers see the old file or the new one. For output written in
    pieces (`export` streams its rows), so the whole never has to be in memory."""
    import tempfile  # only when writing (its import pulls in shutil, random, ...)

    p = output_path(path, what, inputs)
    tmp = None
    try:
        with signals_held():  # the name is in `tmp`, so `finally` removes it, before a signal can end the block
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        with os.fdopen(fd, "wb") as fh:
            yield fh
        if p.exists():
            try:
                os.chmod(tmp, p.stat().st_mode & 0o7777)
            except OSError:
                pass
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot write: {exc.strerror or exc}", field=what) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_bytes_atomic(path: str | Path, data: bytes, what: str, inputs: Iterable[Any] = ()) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path` (`atomic_output`)."""
    with atomic_output(path, what, inputs) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | Path, text: str, what: str, inputs: Iterable[Any] = ()) -> Path:
    """Write `text` (UTF-8) atomically to `path`, checked with `output_path`."""
    return write_bytes_atomic(path, text.encode("utf-8"), what, inputs)


def budget(v: Any) -> None:
    """A budget is a finite number of USD in (0, MAX_AMOUNT] (None: no budget)."""
    if v is None:
        return
    if not _is_number(v) or not math.isfinite(v) or not v > 0:
        raise InputError(f"budget must be a positive number of USD, got {shown(v)}", field="budget")
    if v > MAX_AMOUNT:
        raise InputError(f"budget must be at most {MAX_AMOUNT:g} USD, got {v:g}", field="budget")


def samples_to_train(epochs: Any, dataset_size: Any) -> float | None:
    """epochs x dataset size (both or neither; each finite and > 0)."""
    positive("epochs", epochs)
    positive("dataset size", dataset_size)
    if (epochs is None) != (dataset_size is None):
        raise InputError("--epochs and --dataset-size go together (samples to train = epochs x dataset size)",
                         field="dataset_size" if dataset_size is None else "epochs")
    return None if epochs is None else float(epochs) * float(dataset_size)
