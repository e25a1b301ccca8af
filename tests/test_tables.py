"""Tables a buyer can read at 120 columns: no cut cell, money in dollars (never 1.26e+06), kW and RU, NICs
per node, units in the headers, a range column when predictions carry one."""

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"


def run_cli(*args, columns=120):
    from typer.testing import CliRunner

    from costopt.cli import app

    r = CliRunner().invoke(app, [*map(str, args)], env={"COLUMNS": str(columns)})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def dollars(v):
    return f"${v:,.0f}"


SOLVES = [
    ("--budget", "200000", "--model", "inception_v3"),
    ("--budget", "5000000", "--model", "resnet50"),
    ("--budget", "2000000", "--model", "resnet50", "--gpu", "h100-sxm", "--gpu", "a100-sxm-80gb"),
    ("--catalog", AWS, "--budget", "500", "--model", "resnet50", "--epochs", "90", "--dataset-size", "1281167"),
]


@pytest.mark.parametrize("args", SOLVES)
def test_solve_table_fits_120_columns_uncut(args):
    rc, out, err = run_cli("solve", *args, "--top", "8")
    assert rc == 0, err
    rc, js, err = run_cli("solve", *args, "--top", "8", "--format", "json")
    d = json.loads(js)
    assert "…" not in out and "..." not in out
    assert max(len(line) for line in out.splitlines()) <= 120
    table_lines = [line for line in out.splitlines() if re.match(r"\s*\d+\s+\S", line)]
    for r in [d["best"], *d["alternatives"]]:
        # every row's GPU id, GPU count and cost appear whole on one line of the table
        cost = dollars(r["cost_usd"]) if r["cost_usd"] >= 100 else f"${r['cost_usd']:,.2f}"
        gpus = f"{r['gpus_per_node']}x{r['nodes']}={r['total_gpus']}"
        assert any(r["gpu"] in line and gpus in line and cost in line and f"{r['throughput_samples_per_s']:,.0f}"
                   in line for line in table_lines), (r["gpu"], gpus, cost)
    head = out.split("Ranked designs")[1]
    for unit in ("USD", "samples/s", "kW", "RU"):
        assert unit in head.split("───")[0]


def test_best_line_names_nics_per_node_power_and_space():
    rc, out, err = run_cli("solve", "--budget", "2000000", "--model", "resnet50", "--gpu", "h100-sxm")
    assert rc == 0, err
    best = json.loads(run_cli("solve", "--budget", "2000000", "--model", "resnet50", "--gpu", "h100-sxm",
                              "--format", "json")[1])["best"]
    line = " ".join(out.split("Best: ")[1].split("Why:")[0].split())
    assert best["nics_per_node"] == 8  # HGX H100: one adapter per GPU
    assert f"{best['nics_per_node']} x {best['nic']} per node" in line
    assert f"{best['power_kw']:,.1f} kW" in line and f"{best['rack_units']:,.0f} RU" in line


def test_predict_money_not_scientific():
    rc, out, err = run_cli("predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes",
                           "16", "--nic", "ib-ndr", "--strategy", "ring", "--nics-per-node", "8")
    assert rc == 0, err
    d = json.loads(run_cli("predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes",
                           "16", "--nic", "ib-ndr", "--strategy", "ring", "--nics-per-node", "8", "--format", "json")[1])
    assert d["capex_usd"] > 1e6
    assert not re.search(r"\de[+-]\d", out)
    assert dollars(d["capex_usd"]) in out


@pytest.mark.parametrize("v,text", [(1265920.4, "$1,265,920"), (19.564, "$19.56"), (0.00004, "$0.000040"),
                                    (0.000065, "$0.000065"), (0.0123, "$0.01"), (0.0, "$0.00")])
def test_money_format(v, text):
    from costopt.cli.common import _fmt_money

    assert _fmt_money(v) == text


def test_range_column_when_predictions_carry_one():
    from costopt.cli.common import _design_table

    row = {"rank": 1, "gpu": "a100-pcie-80gb", "gpus_per_node": 8, "nodes": 128, "total_gpus": 1024,
           "nic": "100gbe-roce", "nics_per_node": 8, "chassis": "pcie8", "strategy": "hierarchical", "reduce_on": "gpu",
           "cost_usd": 19_876_543.0, "cost_basis": "USD capex (one-off purchase)", "throughput_samples_per_s": 1_234_567.0,
           "usd_per_sample_per_s": 16.1, "scaling_efficiency": 0.9, "power_kw": 1234.5, "rack_units": 1031.0,
           "compute_source": "scaled", "t_iter_s": 0.1, "t_exposed_comm_s": 0.01, "bottleneck": "network"}
    plain = Console(width=120, record=True)
    plain.print(_design_table([row], "t"))
    assert "range" not in plain.export_text()
    ranged = dict(row, throughput_low_samples_per_s=1_172_839.0, throughput_high_samples_per_s=1_308_641.0)
    c = Console(width=120, record=True)
    c.print(_design_table([ranged], "t"))
    text = c.export_text()
    # -5% and +6% of 1,234,567 (1,172,839 / 1,234,567 = 0.950; 1,308,641 / 1,234,567 = 1.060)
    assert "-5/+6%" in text and "$19,876,543" in text and "1,234,567" in text and "8x 100gbe-roce" in text
    assert "1,234" in text and "1,031" in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 120


def test_wide_adds_columns():
    rc, out, err = run_cli("solve", "--budget", "200000", "--model", "inception_v3", "--top", "3", "--wide",
                           columns=250)
    assert rc == 0, err
    assert "bottleneck" in out and "t_iter" in out and "chassis" in out
