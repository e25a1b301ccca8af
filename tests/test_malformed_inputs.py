"""Property-based: malformed inputs of every kind end with exit code 2, one line, no traceback (issue 26,
item 8). Kinds: catalog, workload mix, measurement CSV, profile, price list, command-line options.
Each property draws a value that is wrong by construction (a negative, zero, boolean, text, NaN, array or
table where a positive number belongs; a missing column; junk bytes; a random JSON document) and puts it
where a well-formed file has a good one. Kept small (max_examples) so the default run stays fast."""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "costopt" / "data" / "validation" / "lambda_scaling.csv"
SAMPLE_CSV = ROOT / "catalogs" / "aws-vms-sample.csv"
FAST = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _exit_2_one_line(args) -> None:
    """Run the real entry point (`costopt.cli.main.main`: usage errors become one line there) in-process."""
    import contextlib

    from costopt.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([*map(str, args)])
        except SystemExit as exc:
            code = exc.code
    text = err.getvalue().strip()
    assert code == 2, (args, code, text[-300:], out.getvalue()[-300:])
    assert "Traceback" not in text + out.getvalue() and len(text.splitlines()) == 1, text


def _file(data: bytes | str, suffix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix="costopt-malformed-"))
    p = d / f"input{suffix}"
    p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return p


def _toml(v) -> str:
    """A TOML value (inline) for v: numbers, booleans, strings, arrays, inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(_toml, v)) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


# not a positive finite number, by construction
NOT_POSITIVE = st.one_of(
    st.integers(max_value=0), st.floats(max_value=0.0, allow_nan=False), st.just(math.nan), st.just(math.inf),
    st.just(-math.inf), st.booleans(), st.text(max_size=8), st.lists(st.integers(1, 5), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 3), max_size=1))
NOT_WHOLE = st.one_of(NOT_POSITIVE, st.floats(0.01, 1e6).filter(lambda x: not x.is_integer()))


@FAST
@given(field=st.sampled_from(["electricity_usd_per_kwh", "pue", "average_draw_fraction"]), value=NOT_POSITIVE)
def test_malformed_catalog(field, value):
    # an overlay on the built-in catalog whose [site] number is wrong
    text = f'[catalog]\nname = "q"\ndate = "2026-01-01"\nbase = "reference-2026"\n[site]\n{field} = {_toml(value)}\n'
    _exit_2_one_line(["catalog", "show", _file(text, ".toml")])


@FAST
@given(junk=st.binary(min_size=1, max_size=40))
def test_catalog_with_junk_bytes_appended(junk):
    text = b'[catalog]\nname = "q"\ndate = "2026-01-01"\nbase = "reference-2026"\n[site]\npue = ' + junk + b"\n"
    try:  # junk that happens to be a valid pue (e.g. b"1.3") is not malformed: skip it
        v = float(junk.decode("ascii"))
        if math.isfinite(v) and v >= 1:
            return
    except (UnicodeDecodeError, ValueError):
        pass
    _exit_2_one_line(["catalog", "show", _file(text, ".toml")])


@FAST
@given(where=st.sampled_from([("limits", "budget_usd"), ("limits", "max_power_kw"), ("jobs.a", "weight"),
                              ("jobs.a", "batch_per_gpu"), ("limits", "max_nodes")]), value=NOT_WHOLE)
def test_malformed_mix(where, value):
    table, field = where
    body = '[jobs.a]\nmodel = "resnet50"\n'
    if table == "jobs.a":
        body += f"{field} = {_toml(value)}\n"
    else:
        body += f"[{table}]\n{field} = {_toml(value)}\n"
    _exit_2_one_line(["solve", "--workload", _file(body, ".toml")])


_ROWS = list(csv.reader(VALIDATION.read_text(encoding="utf-8").splitlines()))


@FAST
@given(column=st.sampled_from(["gpus_per_node", "nodes", "batch_per_gpu", "single_gpu_samples_per_s",
                               "measured_samples_per_s"]),
       value=st.one_of(st.integers(max_value=0).map(str), st.text(alphabet="abcxyz-_ ", min_size=1, max_size=6),
                       st.sampled_from(["nan", "inf", "-1", "1e400", "0", "2.5e"])))
def test_malformed_measurement_csv(column, value):
    head, row = _rows = _ROWS[0], list(_ROWS[1])
    row[head.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf).writerows([head, row])
    _exit_2_one_line(["validate", _file(buf.getvalue(), ".csv")])


@FAST
@given(junk=st.binary(min_size=1, max_size=64).filter(lambda b: b"\x00" in b or not _utf8(b)))
def test_binary_measurement_csv(junk):
    _exit_2_one_line(["validate", _file(VALIDATION.read_bytes()[:300] + junk, ".csv")])


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=8)


@FAST
@given(doc=JSON)
def test_malformed_profile(doc):
    _exit_2_one_line(["solve", "--budget", "200000", "--model", "resnet50", "--profile",
                      _file(json.dumps(doc), ".json")])


_PRICES = list(csv.reader(SAMPLE_CSV.read_text(encoding="utf-8").splitlines()))


@FAST
@given(drop=st.sampled_from(["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"]),
       extra=st.text(alphabet="abcXYZ,", max_size=6))
def test_price_list_missing_a_column(drop, extra):
    head = [h for h in _PRICES[0] if h != drop] + ([extra] if extra and extra not in _PRICES[0] else [])
    buf = io.StringIO()
    csv.writer(buf).writerows([head] + [r[: len(head)] for r in _PRICES[1:]])
    out = Path(tempfile.mkdtemp(prefix="costopt-malformed-")) / "o.toml"
    _exit_2_one_line(["catalog", "import", _file(buf.getvalue(), ".csv"), "-o", out, "--price-date", "2025-03-17"])


@FAST
@given(value=st.one_of(st.sampled_from(["0", "-1", "free", "nan", "inf", "1e400", ""]),
                       st.integers(max_value=0).map(str)))
def test_price_list_with_no_usable_price(value):
    head = _PRICES[0]
    j = head.index("Price")
    rows = [head] + [[value if i == j else c for i, c in enumerate(r)] for r in _PRICES[1:]]
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    out = Path(tempfile.mkdtemp(prefix="costopt-malformed-")) / "o.toml"
    _exit_2_one_line(["catalog", "import", _file(buf.getvalue(), ".csv"), "-o", out, "--price-date", "2025-03-17"])


def _not_positive_text(s: str) -> bool:
    try:
        v = float(s)
    except ValueError:
        return True
    return not (math.isfinite(v) and v > 0)


@FAST
@given(option=st.sampled_from(["--budget", "--hours", "--min-throughput", "--tco-years", "--top", "--max-nodes",
                               "--batch-per-gpu", "--gpus-per-node", "--global-batch", "--as-of"]),
       value=st.one_of(st.text(alphabet="0123456789-.eE abc\uff12", min_size=1, max_size=8), st.integers(max_value=0)
                       .map(str)).filter(_not_positive_text))
def test_malformed_option(option, value):
    if option == "--tco-years" and value.strip() in ("0", "-0", "0.0", "-0.0", "0e0") or (
            option == "--tco-years" and _zero(value)):
        return  # zero years is a valid --tco-years (no electricity)
    args = ["solve", "--budget", "200000", "--model", "resnet50", option, value]
    if option == "--budget":
        args = ["solve", "--model", "resnet50", "--budget", value]
    _exit_2_one_line(args)


def _zero(s: str) -> bool:
    try:
        return float(s) == 0
    except ValueError:
        return False
