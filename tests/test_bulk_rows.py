"""Large measurement files (issue 13, bounded work): `validate` groups rows by identical design and
evaluates each distinct design once; its JSON and table are built column by column.

References written here: a row-by-row prediction loop (the way `prepare` worked before, one design space
per row, compute scaled by the formula in its docstring), the json module's own `json.dumps(indent=2)`,
and rich's own rendering of the same table.
"""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from costopt.cli.accuracy import _validate_cells
from costopt.cli.common import plain_table_text
from costopt.search.design_space import REDUCE_ON, STRATEGIES, DesignSpace, single_design
from costopt.core.errors import InputError
from costopt.core.files import json_with_columns
from costopt.perf.stacks import STACKS
from costopt.perf.system import load_system
from costopt.perf.timing import VARIABLE_UPDATES, GpuCompute, evaluate
from costopt.measure.validate import COLUMNS, VALIDATION_DIR, prepare, read_measurements, validate, validation_catalog
from costopt.perf.workload import load_workload

SHIPPED = VALIDATION_DIR / "published.csv"


def _row_by_row(rows, cat, params) -> np.ndarray:
    """One prediction per row, each row its own one-design space (no grouping, no sharing)."""
    out = []
    for r in rows:
        g = cat.gpus[r.gpu]
        w = load_workload(r.model)
        est = w.compute(g, r.precision, r.batch_per_gpu, cat)
        k = r.grad_accum
        f, b, st = k * est.forward_s + (k - 1) * est.backward_s, est.backward_s, est.step_s
        s = 1.0 if r.single_gpu_samples_per_s is None else (k * r.batch_per_gpu / r.single_gpu_samples_per_s) / (f + b + st)
        f, b, st = f * s, b * s, st * s
        if r.strategy == "single":
            out.append(r.batch_per_gpu * k / (f + b + st))
            continue
        nics = r.nics_per_node if r.nodes > 1 else 1
        one = single_design(cat, r.gpu, r.gpus_per_node, r.nodes, r.nic_id, r.strategy, r.reduce_on, r.chassis, nics)
        a = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
        space = DesignSpace([g], one.chassis, one.nics, a(0), one.chassis_idx, one.nic_idx, a(r.nodes),
                            a(STRATEGIES.index(r.strategy)), a(REDUCE_ON.index(r.reduce_on)), a(nics),
                            a(STACKS.index(r.stack)))
        comp = GpuCompute(np.array([f]), np.array([b]), np.array([st]), np.ones(1, bool), np.ones(1, bool), ["x"], ["x"])
        t = evaluate(space, comp, w.tensors(r.tensor_set), params, r.batch_per_gpu * k, r.overlap,
                     num_ps=a(r.num_ps or 0), gpus_per_process=a(r.gpus_per_process),
                     variable_update=a(VARIABLE_UPDATES.index(r.variable_update)) if r.strategy == "ps" else None)
        out.append(float(t.throughput_samples_per_s[0]))
    return np.array(out)


def _repeated_file(tmp_path: Path, copies: int, seed: int = 0) -> tuple[Path, list[int]]:
    """The shipped rows `copies` times, shuffled, each with its own measured value; and each line's
    shipped row (0-based)."""
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    import csv

    body = list(csv.reader(lines[1:]))
    header = next(csv.reader([lines[0]]))
    im = header.index("measured_samples_per_s")
    rng = random.Random(seed)
    order = [i for _ in range(copies) for i in range(len(body))]
    rng.shuffle(order)
    p = tmp_path / "many.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i in order:
            row = list(body[i])
            row[im] = f"{float(row[im]) * rng.uniform(0.8, 1.2):.6g}"
            w.writerow(row)
    return p, order


def test_grouped_prediction_equals_row_by_row_on_the_shipped_rows():
    path, rows, header = read_measurements(SHIPPED)
    cat = validation_catalog(rows)
    params = load_system(None)
    got = prepare(rows, cat, path, header).predict(params)
    np.testing.assert_array_equal(got, _row_by_row(rows, cat, params))


def test_repeated_rows_are_evaluated_once_and_predicted_alike(tmp_path):
    params = load_system(None)
    _, base_rows, _ = read_measurements(SHIPPED)
    base_prep = prepare(base_rows)
    base = base_prep.predict(params)
    p, order = _repeated_file(tmp_path, 3)
    path, rows, header = read_measurements(p)
    assert [r.line for r in rows] == list(range(2, len(order) + 2))
    prep = prepare(rows, None, path, header)
    np.testing.assert_array_equal(prep.predict(params), base[order])
    # three copies of each row: no more designs evaluated than for one copy
    assert sum(len(g.space) for g in prep.groups) == sum(len(g.space) for g in base_prep.groups)
    # the measured values are each line's own
    measured = [float(x) for x in (ln.split(",")[13] for ln in p.read_text().splitlines()[1:])]
    np.testing.assert_array_equal(prep.measured, measured)


def test_a_copied_row_still_checks_its_own_source_and_measurement(tmp_path):
    head = ",".join(COLUMNS)
    good = "T,resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,384"
    for bad, column in ((",resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,384", "source"),
                        ("U,resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,nan", "measured_samples_per_s")):
        p = tmp_path / "m.csv"
        p.write_text("\n".join([head, good, good, bad]) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=f"line 4, column '{column}'"):
            read_measurements(p)


def test_to_json_dict_rounds_every_value_as_before(tmp_path):
    p, _ = _repeated_file(tmp_path, 2, seed=1)
    res = validate(p)
    expected = []
    for rec in res.frame.to_dict(orient="records"):  # the per-record rule, written here
        expected.append({k: (None if isinstance(v, float) and not math.isfinite(v)
                             else float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in rec.items()})
    d = res.to_json_dict()
    assert d["rows"] == expected
    assert [list(r) for r in d["rows"]] == [list(r) for r in expected]  # key order too
    assert res.json_text() == json.dumps(d, indent=2)


CASES = {
    "a": ["plain", 'quote " and \\ backslash', "new\nline", "µ unicode ☃", ""],
    "b": [1, -2, 0, 10**20, 7],
    "c": [1.5, float("nan"), float("inf"), -0.0, 1e-300],
    "d": [True, False, None, 3, 2.25],
    "e": [0.1, 0.2, 1e16, 123456.789, 5e-324],
}


@pytest.mark.parametrize("n", [0, 1, 5])
def test_json_with_columns_is_json_dumps_byte_for_byte(n):
    cols = {k: v[:n] for k, v in CASES.items()}
    head = {"file": "x.csv"}
    tail = {"summary": {"n": n, "median": float("nan"), "nested": [1, {"k": None}]}, "empty": {}}
    rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
    reference = json.dumps({**head, "rows": rows, **tail}, indent=2).replace("NaN", "null").replace("Infinity", "null")
    assert json_with_columns(head, "rows", cols, tail) == reference


def _console(width: int = 200) -> Console:
    return Console(file=io.StringIO(), width=width, highlight=False, color_system=None, force_terminal=False)


def _rich(con: Console, title, headers, right, rows) -> str:
    t = Table(title=title, title_justify="left")
    for h, r in zip(headers, right):
        t.add_column(h, justify="right" if r else "left")
    for row in rows:
        t.add_row(*row)
    con.print(t)
    return con.file.getvalue()


def test_plain_table_is_what_rich_prints_for_the_shipped_rows():
    res = validate(SHIPPED)
    cells = _validate_cells(res.frame)
    headers = ["line", "source", "model", "gpu", "GxM", "batch", "strategy", "stack", "nic", "measured", "predicted",
               "80% range", "err %"]
    right = [h in ("line", "batch", "measured", "predicted", "80% range", "err %") for h in headers]
    con = _console()
    text = plain_table_text(con, f"costopt validate: {res.path}", headers, right, cells)
    assert text is not None and text == _rich(_console(), f"costopt validate: {res.path}", headers, right, cells)


@pytest.mark.parametrize("rows", [[], [["", ""]], [["a", "1"], ["longer cell", "22"]], [["x", "y"]] * 3])
def test_plain_table_matches_rich_on_small_cases(rows):
    args = ("a title", ["h1", "second"], [False, True], rows)
    text = plain_table_text(_console(), *args)
    assert text == _rich(_console(), *args)


@pytest.mark.parametrize("cell, width", [("[bold]x[/bold]", 200), ("a :smile: b", 200), ("µs", 200), ("tab\there", 200),
                                         ("fits", 7)])
def test_plain_table_leaves_to_rich_what_rich_would_change(cell, width):
    assert plain_table_text(_console(width), "t", ["h"], [False], [[cell]]) is None
    assert plain_table_text(Console(file=io.StringIO(), width=200, force_terminal=True), "t", ["h"], [False], [["x"]]) is None
    assert plain_table_text(_console(), "a title wider than its table", ["h"], [False], [["x"]]) is None


def test_select_is_np_select_value_for_value():
    from costopt.core.arrays import select

    rng = np.random.default_rng(7)
    for _ in range(100):
        n, k = int(rng.integers(0, 40)), int(rng.integers(1, 4))
        conds = [rng.random(n) < 0.4 for _ in range(k)]
        choices = [rng.standard_normal(n) for _ in range(k)]
        choices[0][rng.random(n) < 0.2] = np.nan
        default = float(rng.choice([0.0, 2.5]))
        want = np.select(conds, choices, default)
        got = select(conds, choices, default)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_calibrate_reports_progress_once_per_fit(tmp_path):
    """One step per fit: the fit on all rows, then one per left-out source; done counts rise to the total."""
    from costopt.measure.calibrate import calibrate

    head = ",".join(COLUMNS)
    rows = ["A,resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,384", "A,resnet50,k80,4,1,64,fp32,ring,,,,gpu,51.5,196",
            "B,resnet50,k80,2,1,64,fp32,ring,,,,gpu,51.5,99", "B,alexnet,k80,8,1,128,fp32,ring,,,,gpu,400,2900"]
    p = tmp_path / "m.csv"
    p.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")
    seen = []
    calibrate(p, names=("nccl_sync_us",), max_iter=2, progress=lambda done, total, label: seen.append((done, total, label)))
    assert [(d, t) for d, t, _ in seen] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert [label for *_, label in seen[2:]] == ["left out A", "left out B"]


def test_fit_on_grouped_designs_equals_fit_on_row_by_row_predictions(tmp_path, monkeypatch):
    """calibrate's fit reads per-design predictions; with a row-by-row predictor in their place (written
    here) it fits the same numbers, bit for bit."""
    from costopt.measure.calibrate import fit
    from costopt.perf.system import prior_system
    from costopt.measure.validate import Prepared

    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    p = tmp_path / "few.csv"
    picked = [ln for ln in lines[1:] if ln.startswith(("TF_BENCH_2017", "EBUG_DISTTF_2017"))][:3] + \
             [ln for ln in lines[1:] if ln.startswith("EBUG_DISTTF_2017")][:3]
    p.write_text("\n".join([lines[0], *picked]) + "\n", encoding="utf-8")
    path, rows, header = read_measurements(p)
    cat = validation_catalog(rows)
    start = prior_system()
    got = fit(prepare(rows, cat, path, header), start=start, max_iter=3)
    monkeypatch.setattr(Prepared, "predict_designs", lambda self, params, groups=None: _row_by_row(self.rows, cat, params))
    monkeypatch.setattr(Prepared, "design_of_row", property(lambda self: np.arange(len(self.rows))))
    want = fit(prepare(rows, cat, path, header), start=start, max_iter=3)
    assert got.fitted and got.params != start  # a fit that moved
    assert got.params == want.params and got.sigma == want.sigma and got.fitted == want.fitted


# --------------------------------------------------------------------------------------------------
# Streaming (issue 26, bounded work): rows are read, predicted and written a chunk at a time

def _shipped_copies(tmp_path, copies: int, bad_line: int | None = None) -> Path:
    """The shipped rows `copies` times over; with `bad_line`, that line's measured value is 'oops'."""
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    head, body = lines[0], lines[1:]
    out = [head] + body * copies
    if bad_line is not None:
        col = head.split(",").index("measured_samples_per_s")
        import csv as _csv
        cells = next(_csv.reader([out[bad_line - 1]]))
        cells[col] = "oops"
        buf = io.StringIO()
        _csv.writer(buf, lineterminator="").writerow(cells)
        out[bad_line - 1] = buf.getvalue()
    p = tmp_path / "rows.csv"
    p.write_text("\n".join(out) + "\n", encoding="utf-8")
    return p


def test_validate_consumes_rows_a_chunk_at_a_time(tmp_path):
    # 3 x 166 shipped rows with a bad value on line 400 (in the 4th chunk of 100 rows): the stream hands
    # out its first three chunks, 100 rows each, before it reads line 400; only then does it stop, naming it
    from costopt.measure.validate import ValidationStream

    n = len(SHIPPED.read_text(encoding="utf-8").splitlines()) - 1
    assert n >= 134
    path = _shipped_copies(tmp_path, 3, bad_line=400)
    stream = ValidationStream(path, chunk_rows=100)
    frames = stream.frames()
    got = [next(frames) for _ in range(3)]
    assert [len(f) for f in got] == [100, 100, 100]
    assert [int(f["line"].iloc[0]) for f in got] == [2, 102, 202]  # line 1 is the header
    with pytest.raises(InputError, match=r"line 400, column 'measured_samples_per_s'"):
        next(frames)


def test_streamed_validation_equals_the_whole_file_at_once(tmp_path):
    # chunks of 37 rows (the shipped rows twice, so some chunks straddle the copy) give the same frame,
    # the same summaries and the same JSON bytes as one chunk of every row; the CLI's streamed JSON and
    # table are those of the whole result
    from costopt.cli.common import plain_table_stream

    path = _shipped_copies(tmp_path, 2)
    whole = validate(path, chunk_rows=10**9)
    chunked = validate(path, chunk_rows=37)
    assert whole.frame.equals(chunked.frame) and len(whole.frame) > 5 * 37  # several chunks (136 shipped rows twice)
    assert json.dumps(whole.summaries) == json.dumps(chunked.summaries)
    assert whole.json_text() == chunked.json_text()
    from costopt.cli import app
    from typer.testing import CliRunner

    out = CliRunner().invoke(app, ["validate", str(path), "--format", "json"], env={"COLUMNS": "200"})
    assert out.exit_code == 0 and out.stdout == whole.json_text() + "\n"
    headers = ["line", "source", "model", "gpu", "GxM", "batch", "strategy", "stack", "nic", "measured", "predicted",
               "80% range", "err %"]
    right = [h in ("line", "batch", "measured", "predicted", "80% range", "err %") for h in headers]
    cells = _validate_cells(whole.frame)
    con = _console()
    assert plain_table_stream(con, "t", headers, right, [cells[i:i + 37] for i in range(0, len(cells), 37)]) is None
    assert con.file.getvalue() == plain_table_text(_console(), "t", headers, right, cells)
