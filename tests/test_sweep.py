"""`costopt sweep` (costopt/search/sweep.py): a grid of scenarios through the solve engine, one table.

- the grid is models x budgets x catalogs x limits in that order, the work goes to the model kind that
  uses it, and every row is what `costopt.solve` answers for that scenario;
- in this process, on 2 local processes and on a Dask LocalCluster of 2 workers (started here) the
  table is the same, byte for byte;
- a bad sweep file exits 2 with one line naming the file and what is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from costopt.search.sweep import COLUMNS, load_sweep, run_sweep, table, write_plot, write_table

ROOT = Path(__file__).resolve().parents[1]
GRID = """
[sweep]
name = "test grid"
models = ["inception_v3", "resnet50"]
budgets_usd = [100000, 400000]
catalogs = ["reference-2026", "{vendor}"]

[[limits]]
name = "none"
[[limits]]
name = "8 kW"
max_power_kw = 8
"""


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    return _write(d, GRID.format(vendor=str(ROOT / "catalogs" / "vendor-a-datacenter-2026.toml")))


@pytest.fixture(scope="module")
def local(grid):
    return run_sweep(load_sweep(grid), workers=1, progress=False)


def test_grid_order_and_rows_are_the_engines_answers(grid, local):
    import costopt

    spec = load_sweep(grid)
    # 2 models x 2 budgets x 2 catalogs x 2 limit sets = 16 scenarios, the last axis fastest
    assert len(spec.scenarios) == 16
    first = [(s.model, s.budget_usd, s.catalog_label, s.limits_name) for s in spec.scenarios[:3]]
    assert first == [("inception_v3", 100000.0, "reference-2026", "none"),
                     ("inception_v3", 100000.0, "reference-2026", "8 kW"),
                     ("inception_v3", 100000.0, str(ROOT / "catalogs" / "vendor-a-datacenter-2026.toml"), "none")]
    rows = local.rows
    assert [r["scenario"] for r in rows] == list(range(16)) and all(list(r) == list(COLUMNS) for r in rows)
    # scenario 2 (index 1): inception_v3, $100,000, the reference catalog, at most 8 kW
    want = costopt.solve(100000, "inception_v3", max_power_kw=8).best
    r = rows[1]
    assert r["status"] == "ok" and r["power_kw"] <= 8
    assert (r["gpu"], r["nodes"], r["nic"], r["strategy"], r["throughput"], r["cost_usd"]) == \
        (want["gpu"], want["nodes"], want["nic"], want["strategy"], want["throughput_samples_per_s"], want["cost_usd"])
    assert r["throughput_unit"] == "samples/s"
    # a power limit never raises the best throughput of the same (model, budget, catalog)
    for a, b in zip(rows[0::2], rows[1::2]):
        if b["status"] == "ok":
            assert b["throughput"] <= a["throughput"] * (1 + 1e-12)


def test_two_processes_give_the_same_table(grid, local, tmp_path):
    two = run_sweep(load_sweep(grid), workers=2, progress=False)
    assert two.engine == "processes" and two.workers == 2
    a, b = write_table(local, tmp_path / "a.csv", "csv"), write_table(two, tmp_path / "b.csv", "csv")
    assert a.read_bytes() == b.read_bytes()


def test_dask_local_cluster_of_two_workers_gives_the_same_table(grid, local, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl:
        with distributed.Client(cl) as client:
            on_dask = run_sweep(load_sweep(grid), client=client, progress=False)
        by_address = run_sweep(load_sweep(grid), scheduler=cl.scheduler_address, progress=False)
    assert on_dask.engine == "dask" and on_dask.workers == 2 and by_address.workers == 2
    ref = write_table(local, tmp_path / "ref.json", "json").read_bytes()
    assert write_table(on_dask, tmp_path / "d.json", "json").read_bytes() == ref
    assert write_table(by_address, tmp_path / "e.json", "json").read_bytes() == ref


def test_transformer_rows_take_tokens_and_infeasible_rows_say_why(tmp_path):
    p = _write(tmp_path, '[sweep]\nmodels = ["llama3_8b", "inception_v3"]\nbudgets_usd = [1000, 200000]\n'
                         'catalogs = ["reference-2026"]\ntokens = 1e11\n')
    res = run_sweep(load_sweep(p), workers=1, progress=False)
    by = {(r["model"], r["budget_usd"]): r for r in res.rows}
    llm = by[("llama3_8b", 200000.0)]
    assert llm["status"] == "ok" and llm["throughput_unit"] == "tokens/s"
    # hours to train 1e11 tokens = 1e11 / tokens/s / 3600
    assert llm["hours_to_train"] == pytest.approx(1e11 / llm["throughput"] / 3600.0, rel=1e-12)
    assert by[("inception_v3", 200000.0)]["hours_to_train"] is None  # tokens are not its work
    for m in ("llama3_8b", "inception_v3"):
        r = by[(m, 1000.0)]
        assert r["status"] == "infeasible" and "budget" in r["reason"] and r["gpu"] is None
    png = write_plot(res, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert table(res).shape == (4, len(COLUMNS))


def run_cli(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "costopt.cli", *args], capture_output=True, text=True, cwd=cwd,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


BAD = [
    ("no table", "x = 1\n", "unknown table(s) x"),
    ("no sweep", "[[limits]]\nname = 'a'\n", "no [sweep] table"),
    ("unknown key", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\nbudget = 1\n',
     "unknown key(s) budget"),
    ("missing axis", '[sweep]\nmodels = ["resnet50"]\ncatalogs = ["reference-2026"]\n', "[sweep] needs budgets_usd"),
    ("unknown model", '[sweep]\nmodels = ["resnet5"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\n',
     "unknown model 'resnet5'"),
    ("negative budget", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [-1]\ncatalogs = ["reference-2026"]\n',
     "budgets_usd: every value must be a positive number"),
    ("tokens, no transformer", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\n'
     'tokens = 1e9\n', "no transformer among the models"),
    ("epochs alone", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\nepochs = 2\n',
     "epochs and dataset_size go together"),
    ("missing catalog", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["nope.toml"]\n',
     "catalogs: 'nope.toml'"),
    ("unknown limit", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\n'
     '[[limits]]\nmax_power = 3\n', "unknown key(s) max_power"),
    ("same limits name", '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\n'
     '[[limits]]\nname = "a"\n[[limits]]\nname = "a"\n', "two sets have the same name"),
    ("not toml", "[sweep\n", ""),
    # the engine refuses a scenario: a deadline with no tokens to train -> the file exits 2, naming it
    ("engine refuses", '[sweep]\nmodels = ["llama3_8b"]\nbudgets_usd = [1e5]\ncatalogs = ["reference-2026"]\n'
     '[[limits]]\nname = "24 h"\ndeadline_hours = 24\n', "scenario 1 (llama3_8b, $100,000, reference-2026, limits '24 h')"),
]


@pytest.mark.parametrize("case,text,words", BAD, ids=[b[0] for b in BAD])
def test_bad_sweep_file_exits_2_with_one_line(tmp_path, case, text, words):
    p = _write(tmp_path, text)
    rc, out, err = run_cli("sweep", str(p), "--workers", "1", "--no-progress")
    assert rc == 2, (case, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert str(p) in lines[0] or case == "not toml"
    assert words in lines[0], lines[0]


def test_cli_writes_table_and_plot_and_refuses_to_overwrite_its_input(tmp_path, grid):
    p = _write(tmp_path, '[sweep]\nmodels = ["resnet50"]\nbudgets_usd = [1e5, 2e5]\ncatalogs = ["reference-2026"]\n')
    rc, out, err = run_cli("sweep", str(p), "--workers", "1", "--no-progress", "--format", "json", "-o",
                           str(tmp_path / "t.json"), "--plot", str(tmp_path / "t.png"))
    assert rc == 0, err
    rows = json.loads((tmp_path / "t.json").read_text())
    assert [r["budget_usd"] for r in rows] == [1e5, 2e5] and rows[1]["throughput"] >= rows[0]["throughput"]
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert "sweep: 2 scenarios (2 solved, 0 infeasible) on 1 process" in err
    rc, _, err = run_cli("sweep", str(p), "--no-progress", "-o", str(p))
    assert rc == 2 and "error:" in err
