"""Reading user files and writing JSON, with one clear `InputError` for every way a file can be bad.

One validation layer for every file a user hands in (CLI, API and files that name other files, such as
an overlay's `base`): `input_path` checks the type before anything opens it (a FIFO would block the
open, a device such as /dev/zero would be read forever, a directory is not a file) and the size against
the cap of its kind (`MAX_BYTES`); `read_input_bytes` then reads at most that many bytes from a
descriptor opened without blocking and checked again (the file cannot be swapped between the check and
the read); `read_input_text` decodes with an explicit encoding (UTF-8, a UTF-8 BOM allowed) and names
the line of the first byte that is not, or of a NUL (a binary file); `read_toml` / `read_json` parse and
bound the nesting depth (`MAX_DEPTH`; a file nested 20,000 deep is an InputError, never a RecursionError).
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from costopt.core.errors import InputError

# Largest input of each kind (bytes). Far above any real file of the kind (the reference catalog is
# 84 kB, a profile a few kB, a validation CSV of 1M rows about 150 MB), far below what would exhaust
# memory when parsed (a TOML file costs ~20x its size as Python objects, a CSV read in rows much less).
MAX_BYTES = {"toml": 20_000_000, "json": 200_000_000, "csv": 2_000_000_000, "text": 20_000_000}
# Deepest nesting of arrays/tables a TOML or JSON input may have: the deepest real file (a catalog's
# `[[gpu]]` with a `reference_throughput` list of tables) is 4 levels.
MAX_DEPTH = 64


def _field(what: str) -> str:
    return what.removesuffix(" file").replace(" ", "_")  # the input at fault: 'catalog', 'model_config', ...


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for a message that refuses it)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def input_path(path: Any, what: str, kind: str = "text", *, field: str | None = None) -> Path:
    """`path` as a Path if it names a regular file (links followed) of at most MAX_BYTES[kind] bytes;
    else one InputError naming it and why. Nothing is opened (a FIFO is refused without blocking)."""
    field = field or _field(what)
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and (
            not path or "\x00" in path)):
        raise InputError(f"{what} must be a file path, got {type(path).__name__} {path!r}"[:200], field=field)
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"{what} not found: {p}", field=field) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what}: {exc.strerror or exc}", field=field) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{p}: {what} is {file_kind(st.st_mode)}, not a regular file", field=field)
    cap = MAX_BYTES[kind]
    if st.st_size > cap:
        raise InputError(f"{p}: {what} is {st.st_size / 1e6:,.1f} MB, over the {cap / 1e6:,.0f} MB limit for "
                         f"a {kind} input", field=field)
    return p


def read_input_bytes(path: Any, what: str, kind: str = "text", *, field: str | None = None) -> bytes:
    """The bytes of a regular file checked by `input_path`, read through a non-blocking descriptor that
    is checked again after opening, and never more than the cap of `kind`."""
    field = field or _field(what)
    p = input_path(path, what, kind, field=field)
    return b"".join(_regular_file_blocks(p, what, kind, field, 1 << 22))


def _regular_file_blocks(p: Path, what: str, kind: str, field: str, block: int):
    """The blocks of `p` (checked by `input_path`), read through a non-blocking descriptor that is checked
    again after opening (a file swapped for a FIFO in between is refused, never waited on), ending with one
    empty block; an InputError once more than the cap of `kind` has been read."""
    cap = MAX_BYTES[kind]
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what}: {exc.strerror or exc}", field=field) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{p}: {what} is {file_kind(st.st_mode)}, not a regular file", field=field)
        total = 0
        while True:
            try:
                b = os.read(fd, block)
            except OSError as exc:
                raise InputError(f"{p}: cannot read {what}: {exc.strerror or exc}", field=field) from None
            total += len(b)
            if total > cap:
                raise InputError(f"{p}: {what} is over the {cap / 1e6:,.0f} MB limit for a {kind} input", field=field)
            yield b
            if not b:
                return
    finally:
        os.close(fd)


def decode_text(data: bytes, where: str, what: str, *, field: str | None = None) -> str:
    """UTF-8 text (a leading UTF-8 BOM dropped), or one InputError naming the line of the first byte that
    is not UTF-8 or is a NUL (a binary file), and what the file looks like (UTF-16 by its BOM)."""
    field = field or _field(what)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{where}: {what} is UTF-16 (byte-order mark at the start); save it as UTF-8",
                         field=field)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start if nul < 0 else min(exc.start, nul)
        line = data.count(b"\n", 0, at) + 1
        byte = data[at]
        why = "a NUL byte (a binary file?)" if byte == 0 else f"byte 0x{byte:02x} is not UTF-8 (Latin-1 or another encoding?)"
        raise InputError(f"{where}: line {line}: {why}; {what} must be UTF-8 text", field=field) from None
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(f"{where}: line {line}: a NUL byte (a binary file?); {what} must be UTF-8 text", field=field)
    return text


def read_input_text(path: Any, what: str, kind: str = "text", *, field: str | None = None) -> str:
    """`read_input_bytes` decoded by `decode_text`."""
    return decode_text(read_input_bytes(path, what, kind, field=field), str(path), what, field=field)


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Depth of nested lists/dicts (a scalar: 0), walked without recursion; stops counting past `limit`."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        elif not isinstance(v, list):
            continue
        deepest = max(deepest, d)
        if d > limit:
            return d
        stack.extend((x, d + 1) for x in v if isinstance(x, (list, dict)))
    return deepest


def _bounded(data: Any, where: str, what: str, field: str) -> Any:
    if nesting_depth(data) > MAX_DEPTH:
        raise InputError(f"{where}: {what} nests arrays/tables more than {MAX_DEPTH} deep", field=field)
    return data


def read_toml(path: str | Path, what: str) -> dict:
    """Parse a TOML file; `what` names the kind of file in the messages ('catalog file')."""
    field = _field(what)
    text = read_input_text(path, what, "toml", field=field)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}", field=field) from None
    except RecursionError:
        raise InputError(f"{path}: {what} nests arrays/tables more than {MAX_DEPTH} deep", field=field) from None
    return _bounded(data, str(path), what, field)


def read_json(path: str | Path, what: str, *, field: str | None = None) -> Any:
    """Parse a JSON file (bounded like `read_toml`)."""
    import json

    field = field or _field(what)
    text = read_input_text(path, what, "json", field=field)
    try:
        data = json.loads(text)
    except RecursionError:
        raise InputError(f"{path}: {what} nests arrays/objects more than {MAX_DEPTH} deep", field=field) from None
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}", field=field) from None
    return _bounded(data, str(path), what, field)


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

    keys = list(columns)
    if not all(isinstance(k, str) for k in [*head, *keys, *tail]) or rows_key in head or rows_key in tail:
        raise ValueError("json_with_columns: string keys, rows_key only once")
    n = len(columns[keys[0]]) if keys else 0
    rows = _json_row_blocks(columns)
    if n == 0:
        rows_text = "[]"
    else:
        rows_text = "[\n" + ",\n".join(rows) + "\n  ]"
    parts = [f"  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  ") for k, v in head.items()]
    parts.append(f"  {enc_str(rows_key)}: {rows_text}")
    parts += [f"  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  ") for k, v in tail.items()]
    return "{\n" + ",\n".join(parts) + "\n}"


def write_json_with_columns(out, head: dict[str, Any], rows_key: str, chunks, tail) -> None:
    """Write `json_with_columns(head, rows_key, columns, tail())` to the text stream `out`, byte for byte, where
    `columns` are the chunks' columns one after the other (`chunks`: dicts of equal-length lists with the same
    keys): each chunk is encoded and written as it comes, so the rows are never all in memory. `tail` is
    called after the last chunk (e.g. summaries of every row)."""
    import json
    from json.encoder import encode_basestring_ascii as enc_str

    if not all(isinstance(k, str) for k in head) or rows_key in head:
        raise ValueError("write_json_with_columns: string keys, rows_key only once")
    parts = [f"  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  ") for k, v in head.items()]
    out.write("{\n" + "".join(p + ",\n" for p in parts) + f"  {enc_str(rows_key)}: ")
    started = False
    for columns in chunks:
        rows = _json_row_blocks(columns)
        if rows:
            out.write((",\n" if started else "[\n") + ",\n".join(rows))
            started = True
    out.write("\n  ]" if started else "[]")
    t = tail()
    if not all(isinstance(k, str) for k in t) or rows_key in t:
        raise ValueError("write_json_with_columns: string keys, rows_key only once")
    for k, v in t.items():
        out.write(f",\n  {enc_str(k)}: " + json.dumps(json_safe(v), indent=2).replace("\n", "\n  "))
    out.write("\n}")


def _json_row_blocks(columns: dict[str, list]) -> list[str]:
    """Each row of `columns` as the indented JSON object `json_with_columns` writes for it."""
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
    if not all(isinstance(k, str) for k in keys):
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
    if not keys:
        return ["    {}"] * n
    return ["    {\n" + ",\n".join(cells) + "\n    }" for cells in zip(*encoded)]


def iter_input_lines(path: Any, what: str, kind: str = "csv", *, field: str | None = None,
                     block: int = 1 << 20):
    """The lines of a regular file checked by `input_path`, decoded one block at a time (never the whole
    file in memory): the same lines, with their ends, as `read_input_text(...).splitlines(keepends=True)`,
    and the same errors, raised when the reader reaches them: UTF-16 by its byte-order mark, the line of
    the first byte that is not UTF-8 or is a NUL, a file over the cap of `kind`. A leading UTF-8 BOM is
    dropped."""
    field = field or _field(what)
    p = input_path(path, what, kind, field=field)
    rest, line_no, first = b"", 0, True
    for b in _regular_file_blocks(p, what, kind, field, block):
        data = rest + b
        if first and (len(data) >= 3 or not b):
            first = False
            if data.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise InputError(f"{p}: {what} is UTF-16 (byte-order mark at the start); save it as UTF-8",
                                 field=field)
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        elif first:  # fewer than 3 bytes so far: wait for more before judging the start
            rest = data
            continue
        cut = len(data) if not b else data.rfind(b"\n") + 1
        done, rest = data[:cut], data[cut:]
        for raw in _lf_lines(done):
            line_no += 1
            nul = raw.find(b"\x00")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                at = exc.start if nul < 0 else min(exc.start, nul)
                byte = raw[at]
                why = ("a NUL byte (a binary file?)" if byte == 0
                       else f"byte 0x{byte:02x} is not UTF-8 (Latin-1 or another encoding?)")
                raise InputError(f"{p}: line {line_no}: {why}; {what} must be UTF-8 text", field=field) from None
            if nul >= 0:
                raise InputError(f"{p}: line {line_no}: a NUL byte (a binary file?); {what} must be UTF-8 text",
                                 field=field)
            yield from text.splitlines(keepends=True)
        if not b:
            return


def _lf_lines(data: bytes) -> list[bytes]:
    """`data` cut after each b"\\n" (the line numbers `decode_text` counts), the last piece unterminated."""
    parts = data.split(b"\n")
    out = [x + b"\n" for x in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out
