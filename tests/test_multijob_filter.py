"""`solve --workload` applies the part filter of single solves (costopt/hardware/part_filter.py) to every job and
reports what it left out (costopt/search/multijob/pipeline.py `excluded_report`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costopt
from costopt.cli.main import app
from costopt.core.errors import InputError
from costopt.search.multijob import solve_mix

MINI = Path(__file__).parent / "fixtures" / "mini.toml"

MIX = """
[jobs.vision]
model = "resnet50"
min_throughput = 1000
[limits]
budget_usd = 400000
max_power_kw = 20
"""


@pytest.fixture(scope="module")
def consumer_mini(tmp_path_factory):
    """The mini catalog with its cheap PCIe card marked a consumer card (a GeForce-like part)."""
    p = tmp_path_factory.mktemp("cat") / "mini-consumer.toml"
    p.write_text(MINI.read_text().replace('segment = "workstation"', 'segment = "consumer"'))
    return p


def _mix(tmp_path, text=MIX):
    p = tmp_path / "mix.toml"
    p.write_text(text)
    return p


def test_default_mix_leaves_consumer_parts_out_and_says_what_they_give(tmp_path, consumer_mini):
    mix = _mix(tmp_path)
    opened = solve_mix(mix, catalog=consumer_mini, include="consumer")
    default = solve_mix(mix, catalog=consumer_mini)
    # with the consumer card offered, this budget buys it (the cheaper card per sample/s on the mini catalog)
    assert opened.jobs[0]["design"]["gpu"] == "halfcard" and opened.excluded["counts"] == {}
    pick = default.jobs[0]["design"]
    assert pick["gpu"] == "h200-sxm"  # the filter took the consumer card away
    ex = default.excluded
    assert ex["counts"]["consumer"] > 0 and "consumer" in ex["sentence"]
    job = ex["jobs"]["vision"]
    best = job["best"]
    assert best["gpu"] == "halfcard" and best["excluded_reason"] == "consumer"
    assert best["cost_usd"] <= pick["cost_usd"] + 1e-6 and best["power_kw"] <= 20
    thr_pick = default.jobs[0]["throughput_samples_per_s"]
    assert job["throughput_ratio"] == pytest.approx(best["throughput_samples_per_s"] / thr_pick)
    # cross-check: a single solve of the halfcard alone, budget = the pick's list cost, same power limit
    alone = costopt.solve(pick["cost_usd"] * (1 + 1e-9), "resnet50", catalog=consumer_mini, gpus=["halfcard"],
                          max_power_kw=20, include="consumer", top=1)
    assert best["throughput_samples_per_s"] == pytest.approx(alone.best["throughput_samples_per_s"])
    assert job["throughput_ratio"] > 1  # 28 halfcards beat the 8 x H200 pick at lower cost on this catalog
    assert "licence" in job["sentence"] and f"{job['throughput_ratio']:.2f}x" in job["sentence"]


def test_parts_the_mix_names_are_offered(tmp_path, consumer_mini):
    owned = MIX + '[inventory]\ngpus = { "halfcard" = 4 }\n'
    res = solve_mix(_mix(tmp_path, owned), catalog=consumer_mini)
    assert "consumer" not in res.excluded["counts"] and "halfcard" in res.excluded["offered"]
    named = MIX.replace('min_throughput = 1000\n', 'min_throughput = 1000\ngpus = ["halfcard"]\n')
    res = solve_mix(_mix(tmp_path, named), catalog=consumer_mini)
    assert res.jobs[0]["design"]["gpu"] == "halfcard"


def test_exclude_gpu_applies_to_the_mix_and_clashes_are_input_errors(tmp_path, consumer_mini):
    res = solve_mix(_mix(tmp_path), catalog=consumer_mini, include="consumer", exclude_gpus=["halfcard"])
    assert res.jobs[0]["design"]["gpu"] == "h200-sxm" and res.excluded["counts"].get("excluded_gpu", 0) > 0
    owned = MIX + '[inventory]\ngpus = { "halfcard" = 4 }\n'
    with pytest.raises(InputError, match="names it"):
        solve_mix(_mix(tmp_path, owned), catalog=consumer_mini, exclude_gpus=["halfcard"])


def test_cli_workload_takes_include_and_prints_the_filter(tmp_path, consumer_mini):
    mix = _mix(tmp_path)
    r = CliRunner().invoke(app, ["solve", "--workload", str(mix), "--catalog", str(consumer_mini), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["jobs"][0]["design"]["gpu"] == "h200-sxm" and d["excluded"]["counts"]["consumer"] > 0
    r = CliRunner().invoke(app, ["solve", "--workload", str(mix), "--catalog", str(consumer_mini), "--include",
                                 "consumer", "--format", "json"])
    assert json.loads(r.stdout)["jobs"][0]["design"]["gpu"] == "halfcard"
    r = CliRunner().invoke(app, ["solve", "--workload", str(mix), "--catalog", str(consumer_mini)],
                           env={"COLUMNS": "120"})
    assert r.exit_code == 0 and "Part filter:" in r.output and "left out" in r.output
    assert "…" not in r.output  # 120 columns: cells fold, none is cut
