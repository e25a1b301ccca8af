"""Solver: ILP = brute force on random catalogs, Pareto front, monotonicity in budget, determinism."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import costopt
from costopt.api import evaluate_space
from costopt.catalog import parse_catalog
from costopt.design_space import enumerate_designs
from costopt.solver import OBJECTIVES, brute_force, pareto_front, solve_ilp
from costopt.system import default_system
from costopt.workload import load_workload

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def random_catalog(rng: np.random.Generator) -> costopt.Catalog:
    """The mini catalog with random prices, speeds and link rates."""
    data = tomllib.loads(MINI.read_text())
    for g in data["gpu"]:
        g["price_usd"] = float(rng.uniform(1_000, 40_000))
        g["throughput"]["fp32_samples_per_s"] = float(rng.uniform(200, 3000))
        if g["gpu_link_gbs"]:
            g["gpu_link_gbs"] = float(rng.uniform(20, 500))
    for c in data["chassis"]:
        c["price_usd"] = float(rng.uniform(2_000, 60_000))
        c["power_overhead_w"] = float(rng.uniform(100, 5000))
    for n in data["nic"]:
        n["line_rate_gbps"] = float(rng.choice([10, 25, 40, 100]))
        n["price_usd"] = float(rng.uniform(50, 3000))
        n["switch_port_price_usd"] = float(rng.uniform(50, 1000))
        n["switch_ports"] = int(rng.choice([4, 8, 16, 48]))
    return parse_catalog(data, "random")


def evaluated(cat, model="resnet50", max_nodes=12):
    w = load_workload(model)
    space = enumerate_designs(cat, max_nodes=max_nodes, reduce_on=("gpu", "cpu"))
    return evaluate_space(space, catalog=cat, workload=w, tensors=w.tensors("pytorch"), params=default_system(),
                          precision="fp32", batch_per_gpu=64)


@pytest.mark.parametrize("seed", range(6))
def test_ilp_equals_brute_force_on_random_catalogs(seed):
    rng = np.random.default_rng(seed)
    ev = evaluated(random_catalog(rng), model=["resnet50", "vgg16", "inception_v3"][seed % 3])
    ok = ev.timing.feasible & ev.costs.buildable
    idx = np.flatnonzero(ok)
    cost, thr = ev.costs.cost_usd[idx], ev.timing.throughput_samples_per_s[idx]
    rank = np.empty(len(ev.space), dtype=np.int64)
    rank[ev.space.sort_key()] = np.arange(len(ev.space))
    rank = rank[idx]
    for objective in OBJECTIVES:
        for budget in rng.uniform(cost.min() * 0.5, cost.max(), size=4):
            min_thr = float(rng.uniform(thr.min(), thr.max())) if objective == "cost" else None
            want = brute_force(objective, cost, thr, rank, budget, min_thr)
            got, info = solve_ilp(objective, cost, thr, rank, budget, min_thr)
            assert got == want, (objective, budget, min_thr, info)


def test_pareto_front_is_non_dominated_and_complete():
    rng = np.random.default_rng(7)
    cost = rng.integers(1, 50, size=400).astype(float)
    thr = rng.integers(1, 50, size=400).astype(float)
    rank = np.arange(400)
    front = pareto_front(cost, thr, rank)
    # strictly increasing in both along the front
    assert np.all(np.diff(cost[front]) > 0) and np.all(np.diff(thr[front]) > 0)
    for i in range(400):  # every point is dominated by (or equal to) a front point
        assert np.any((cost[front] <= cost[i]) & (thr[front] >= thr[i]))


def test_more_budget_never_less_throughput():
    last = 0.0
    for budget in (30_000, 60_000, 100_000, 200_000, 400_000, 800_000):
        res = costopt.solve(budget, "resnet50", top=1)
        thr = res.best["throughput_samples_per_s"]
        assert thr >= last - 1e-9
        assert res.best["cost_usd"] <= budget
        last = thr


def test_cost_objective_meets_target_at_least_cost():
    res = costopt.solve(500_000, "bert_base", objective="cost", min_throughput=2000, top=3)
    assert res.best["throughput_samples_per_s"] >= 2000
    full = costopt.solve(500_000, "bert_base", objective="throughput", top=1)
    assert res.best["cost_usd"] <= full.best["cost_usd"]


def test_deadline_converts_to_min_throughput():
    # 90 epochs of 1.28M images in 24 h needs 90 * 1.28e6 / 86400 = 1333.3 images/s
    res = costopt.solve(1_000_000, "resnet50", objective="cost", deadline_hours=24, epochs=90, dataset_size=1.28e6)
    assert res.best["throughput_samples_per_s"] >= 90 * 1.28e6 / 86400
    assert res.best["time_to_train_h"] <= 24 + 1e-9


def test_constraints_are_respected():
    res = costopt.solve(400_000, "resnet50", max_power_kw=8, max_rack_units=12, max_nodes=3, top=20)
    for d in [res.best] + res.alternatives:
        assert d["power_kw"] <= 8 and d["rack_units"] <= 12 and d["nodes"] <= 3 and d["cost_usd"] <= 400_000


def test_tco_years_add_electricity():
    a = costopt.predict("resnet50", "h100-sxm", 8, 2, "ib-ndr", "ring")
    b = costopt.predict("resnet50", "h100-sxm", 8, 2, "ib-ndr", "ring", tco_years=4)
    assert b["cost_usd"] == pytest.approx(a["capex_usd"] + 4 * a["energy_usd_per_year"], rel=1e-6)
    # energy = kW x draw x PUE x $/kWh x 8766 h (reference site: 0.75, 1.5, 0.0826 — hardware_facts.md §7e)
    assert a["energy_usd_per_year"] == pytest.approx(a["power_kw"] * 0.75 * 1.5 * 0.0826 * 8766, rel=1e-5)


def test_switch_tiers_cost():
    # mini catalog: ib100 has 4-port switches at $500/port and $100 per cable; nodes = 1x halfcard boxes at
    # 5000 + 5000 + 1000; one 42 U / 20 kW rack at $1,000 with 2 PDUs at $500 holds them all (5-9 U, 0.52 kW
    # per node), so every design below needs exactly one rack: $2,000.
    one_tier = costopt.predict("resnet50", "halfcard", 1, 4, "ib100", "ring", catalog=MINI)
    two_tier = costopt.predict("resnet50", "halfcard", 1, 5, "ib100", "ring", catalog=MINI)
    # one tier: 4 node ports, 4 cables
    assert one_tier["capex_usd"] == pytest.approx(4 * 11_000 + 4 * 500 + 4 * 100 + 2_000)  # 48,400
    # two tiers: 3 x 5 switch ports, 2 x 5 links (node-leaf and leaf-spine)
    assert two_tier["capex_usd"] == pytest.approx(5 * 11_000 + 3 * 5 * 500 + 2 * 5 * 100 + 2_000)  # 65,500
    too_big = costopt.predict("resnet50", "halfcard", 1, 9, "ib100", "ring", catalog=MINI)  # > 4*4/2 nodes
    assert too_big["feasible"] is False


def test_same_input_same_output_bytes():
    cmd = [sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model", "inception_v3",
           "--format", "json"]
    a = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    b = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    assert a == b
    data = json.loads(a)
    assert data["best"]["cost_usd"] <= 200000
    assert set(costopt.DESIGN_FIELDS) <= set(data["best"])
    assert {"model", "budget_usd", "objective", "candidates_evaluated", "best", "alternatives"} <= set(data)


def test_table_output_names_winner_and_why():
    p = subprocess.run([sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model", "inception_v3"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    assert "Why:" in p.stdout and "Best:" in p.stdout


def test_auto_precision_uses_fp32_where_measured_else_amp():
    assert costopt.solve(300_000, "resnet50", top=1).best["precision"] == "fp32"
    # llama_1b was measured in bf16 only (shared/data/h200/train_step.jsonl)
    assert costopt.solve(1_000_000, "llama_1b", top=1).best["precision"] == "amp_bf16"
