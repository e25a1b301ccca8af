"""Input files are regular files of bounded size, decoded explicitly, nested boundedly (issue 26, item 3),
in one layer (costopt/core/files.py) shared by the CLI, the API and files that name files (an overlay's
`base`). Every case: exit code 2, one line on stderr, no traceback, and no hang (a FIFO would block an
open(): an alarm fails the test instead of letting it hang)."""

from __future__ import annotations

import csv
import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costopt.cli.main import app
from costopt.core import files
from costopt.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_CSV = ROOT / "catalogs" / "aws-vms-sample.csv"
VALIDATION = ROOT / "costopt" / "data" / "validation" / "lambda_scaling.csv"


@contextmanager
def no_hang(seconds: int = 30):
    def boom(*_):
        raise AssertionError(f"still running after {seconds} s: an input was opened and blocked")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def one_line_exit_2(args, pattern: str):
    with no_hang():
        r = CliRunner().invoke(app, [*map(str, args)])
    assert r.exit_code == 2, (args, r.output, r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    text = r.output.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert pattern in text, text
    return text


def _commands(bad: str, tmp: Path) -> list[list[str]]:
    """Every command line that reads a user file, with `bad` as that file."""
    overlay = tmp / "overlay.toml"
    overlay.write_text(f'[catalog]\nname = "q"\ndate = "2026-01-01"\nbase = "{bad}"\n', encoding="utf-8")
    return [
        ["catalog", "show", bad],
        ["catalog", "show", overlay],  # the base an overlay names goes through the same layer
        ["solve", "--budget", "200000", "--model", "resnet50", "--catalog", bad],
        ["solve", "--workload", bad],
        ["solve", "--budget", "200000", "--model", "resnet50", "--profile", bad],
        ["solve", "--budget", "200000", "--model", "resnet50", "--system", bad],
        ["solve", "--budget", "2000000", "--model-config", bad],
        ["validate", bad],
        ["catalog", "import", bad, "-o", tmp / "out.toml", "--price-date", "2025-03-17"],
    ]


def test_fifo_inputs_are_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for args in _commands(str(fifo), tmp_path):
        one_line_exit_2(args, "FIFO")


def test_device_and_directory_inputs_are_refused(tmp_path):
    for bad, word in (("/dev/zero", "a device"), (str(tmp_path), "a directory")):
        for args in _commands(bad, tmp_path):
            one_line_exit_2(args, word)


def test_size_cap_per_kind(tmp_path, monkeypatch):
    # a 2,000-byte catalog against a 1,000-byte cap (the real caps: MAX_BYTES, far above real files)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 2000 + "\n", encoding="utf-8")
    monkeypatch.setitem(files.MAX_BYTES, "toml", 1000)
    msg = one_line_exit_2(["catalog", "show", big], "over the 0 MB limit")
    assert "big.toml" in msg and "toml input" in msg
    with pytest.raises(InputError, match="over the"):
        files.read_toml(big, "catalog file")


@pytest.mark.parametrize("depth", [65, 20000])
def test_nesting_depth_is_bounded(tmp_path, depth):
    toml = tmp_path / "deep.toml"
    toml.write_text("a = " + "[" * depth + "]" * depth + "\n", encoding="utf-8")
    one_line_exit_2(["catalog", "show", toml], "more than 64 deep")
    js = tmp_path / "deep.json"
    js.write_text("[" * depth + "]" * depth, encoding="utf-8")
    one_line_exit_2(["solve", "--budget", "200000", "--model", "resnet50", "--profile", js], "more than 64 deep")


def test_nesting_of_64_is_read():
    # the limit itself: 64 levels parse (a file at the limit is not refused)
    assert files.nesting_depth([[]]) == 2 and files.nesting_depth({"a": {"b": 1}}) == 2 and files.nesting_depth(3) == 0
    v: list = []
    for _ in range(63):
        v = [v]
    assert files.nesting_depth(v) == 64


def _measurements(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "m.csv"
    p.write_bytes(data)
    return p


def test_csv_encodings_name_the_line(tmp_path):
    text = VALIDATION.read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    utf16 = _measurements(tmp_path, "".join(text).encode("utf-16"))
    one_line_exit_2(["validate", utf16], "is UTF-16")
    # a Latin-1 byte on the third line (line 3 of the file): 'é' as 0xe9
    latin = "".join(text[:2]) + text[2].replace("Lambda", "Lambd\u00e9", 1) + text[3]
    assert "\u00e9" in latin
    msg = one_line_exit_2(["validate", _measurements(tmp_path, latin.encode("latin-1"))], "line 3: byte 0xe9")
    assert "UTF-8" in msg
    binary = _measurements(tmp_path, "".join(text[:3]).encode() + b"\x00\x01\x02binary\n")
    one_line_exit_2(["validate", binary], "line 4: a NUL byte")
    # a UTF-8 BOM is not an error (spreadsheets write one)
    bom = _measurements(tmp_path, b"\xef\xbb\xbf" + "".join(text).encode())
    with no_hang():
        r = CliRunner().invoke(app, ["validate", str(bom)])
    assert r.exit_code == 0, r.output


def test_price_list_encodings(tmp_path):
    p = tmp_path / "vms.csv"
    p.write_bytes(SAMPLE_CSV.read_text(encoding="utf-8").encode("utf-16"))
    one_line_exit_2(["catalog", "import", p, "-o", tmp_path / "o.toml", "--price-date", "2025-03-17"], "UTF-16")


@pytest.mark.parametrize("args, pattern", [
    (["solve", "--budget", "200000", "--model", "resnet50", "--as-of", "\uff12\uff10\uff12\uff15-01-01"], "--as-of"),
    (["solve", "--budget", "200000", "--model", "resnet50", "--as-of", "\u0662\u0660\u0662\u0665-01-01"], "--as-of"),
    (["catalog", "import", str(SAMPLE_CSV), "-o", "{tmp}/x.toml", "--price-date", "\uff12\uff10\uff12\uff15-01-01"],
     "--price-date"),
    (["solve", "--budget", "200000", "--model", "resnet50", "--global-batch", "-8"], "--global-batch must be > 0"),
    (["solve", "--budget", "200000", "--model", "resnet50", "--global-batch", "8"], "applies only to transformer"),
    (["solve", "--budget", "200000", "--model", "resnet50", "--seq-len", "-1"], "--seq-len must be > 0"),
    (["solve", "--budget", "200000", "--model", "resnet50", "--time-limit", "-5"], "--time-limit must be > 0"),
])
def test_dates_and_numbers_at_the_edge(tmp_path, args, pattern):
    one_line_exit_2([a.replace("{tmp}", str(tmp_path)) for a in args], pattern)


def test_date_check_takes_ascii_digits_only():
    from costopt.core import checks

    assert checks.date("d", "2025-01-01") == "2025-01-01"
    for bad in ("\uff12\uff10\uff12\uff15-01-01", "2025-01-0\u0661", "2025-01-01\n"):
        with pytest.raises(InputError):
            checks.date("d", bad)
        if bad.strip() == bad:  # --as-of strips surrounding blanks on purpose
            with pytest.raises(InputError):
                checks.as_of(bad)


def test_booleans_are_not_numbers_in_a_mix(tmp_path):
    for table, field in (("limits", "budget_usd = true"), ("jobs.a", "weight = false")):
        p = tmp_path / "mix.toml"
        body = '[jobs.a]\nmodel = "resnet50"\n'
        body = body + f"{field}\n" if table == "jobs.a" else body + f"[{table}]\n{field}\n"
        p.write_text(body, encoding="utf-8")
        one_line_exit_2(["solve", "--workload", p], "must be a number, not")


def test_whole_number_written_as_float_is_read_as_that_number(tmp_path):
    # gpus_per_node written 8.0 in a measurement CSV is the whole number 8: the same predictions as '8'
    rows = list(csv.reader(VALIDATION.read_text(encoding="utf-8").splitlines()))
    head, row = rows[0], rows[1]
    j = head.index("gpus_per_node")
    out = []
    for cell in (row[j], row[j] + ".0"):
        r2 = list(row)
        r2[j] = cell
        p = tmp_path / f"v{len(out)}.csv"
        with open(p, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([head, r2])
        with no_hang():
            res = CliRunner().invoke(app, ["validate", str(p), "--format", "json"])
        assert res.exit_code == 0, res.output
        out.append(res.output.replace(str(p), "FILE"))
    assert out[0] == out[1]


def test_api_refuses_bad_types_with_input_error():
    from costopt.search import api

    for kw in (dict(include=5), dict(include=[5]), dict(exclude_gpus="h100-sxm"), dict(exclude_gpus=[3])):
        with pytest.raises(InputError):
            api.solve(200000, "resnet50", **kw)


def test_input_layer_refuses_before_opening(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with no_hang(10):
        for fn in (files.input_path, files.read_input_bytes, files.read_input_text):
            with pytest.raises(InputError, match="FIFO"):
                fn(fifo, "catalog file")
        with pytest.raises(InputError, match="not found"):
            files.read_toml(tmp_path / "missing.toml", "catalog file")
        for bad in (None, 5, True, "", "a\x00b"):
            with pytest.raises(InputError, match="must be a file path"):
                files.input_path(bad, "catalog file")
