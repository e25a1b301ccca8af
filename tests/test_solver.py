"""Solver: the front search against a plain loop over every candidate (written here), hand-computed ties,
Pareto front, monotonicity in budget, determinism."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hand_tco import whole_cost_without_power

import costopt
from costopt.search.api import evaluate_space
from costopt.hardware.catalog import parse_catalog
from costopt.search.design_space import enumerate_designs
from costopt.search.solver import OBJECTIVES, best_on_front, pareto_front
from costopt.perf.system import default_system
from costopt.perf.workload import load_workload

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


def reference_pick(objective, cost, thr, rank, budget=None, min_thr=None):
    """The rule as the docs state it, over every candidate (no front), as a plain loop."""
    cand = [i for i in range(len(cost))
            if (budget is None or cost[i] <= budget) and (objective != "cost" or min_thr is None or thr[i] >= min_thr)]
    if not cand:
        return None

    def value(i):  # smaller is better
        if objective == "throughput":
            return -float(thr[i])
        if objective == "cost-per-throughput":
            return float(cost[i]) / float(thr[i])
        return float(cost[i])

    best = min(value(i) for i in cand)
    tied = [i for i in cand if value(i) <= best + 1e-9 * abs(best)]
    if objective == "throughput":  # cheaper, then faster, then design order
        return min(tied, key=lambda i: (cost[i], -thr[i], rank[i]))
    return min(tied, key=lambda i: (-thr[i], cost[i], rank[i]))  # faster, then cheaper, then design order


def test_reference_pick_hand_cases():
    # the reference itself, on numbers worked out by hand
    cost = np.array([100.0, 90.0, 150.0, 40.0, 90.0])
    thr = np.array([10.0, 10.0, 20.0, 5.0, 10.0])
    rank = np.array([0, 3, 1, 2, 4])
    # throughput within 120: designs 0, 1, 4 reach 10; 1 and 4 cost 90; 1 is earlier in the design order
    assert reference_pick("throughput", cost, thr, rank, 120) == 1
    # $ per sample/s: 10, 9, 7.5, 8, 9 -> design 2
    assert reference_pick("cost-per-throughput", cost, thr, rank) == 2
    # least cost reaching 8 samples/s: 90 (designs 1 and 4, same speed) -> design 1
    assert reference_pick("cost", cost, thr, rank, None, 8.0) == 1


def test_best_on_front_hand_computed_ties():
    cost = np.array([100.0, 90.0, 150.0, 40.0, 90.0, 90.0])
    thr = np.array([10.0, 10.0, 20.0, 5.0, 10.0, 9.0])
    rank = np.array([0, 3, 1, 2, 4, 5])
    # most throughput within $120: 10 samples/s, cheapest of those $90, first in design order: index 1
    assert best_on_front("throughput", cost, thr, rank, budget=120)[0] == 1
    # $/(sample/s): 10, 9, 7.5, 8, 9, 10 -> index 2 (150 / 20)
    assert best_on_front("cost-per-throughput", cost, thr, rank)[0] == 2
    # within $100 the cost-per-throughput best is 8 (index 3, 40 / 5)
    assert best_on_front("cost-per-throughput", cost, thr, rank, budget=100)[0] == 3
    # least cost reaching 9 samples/s: $90 for indices 1, 4 (10/s) and 5 (9/s): faster first, then order -> 1
    assert best_on_front("cost", cost, thr, rank, min_throughput=9.0)[0] == 1
    # cost-per-throughput tie (50/5 = 100/10 = 10): the faster design wins
    c2, t2 = np.array([50.0, 100.0]), np.array([5.0, 10.0])
    assert best_on_front("cost-per-throughput", c2, t2, np.array([0, 1]))[0] == 1
    assert best_on_front("cost-per-throughput", c2, t2, np.array([1, 0]))[0] == 1
    # throughput tie at 10/s, $60 vs $70: the cheaper wins whatever the design order says
    assert best_on_front("throughput", np.array([70.0, 60.0]), np.array([10.0, 10.0]), np.array([0, 1]))[0] == 1
    # near-tie within 1e-9 relative: $70 at 10·(1 + 5e-10)/s is on the front (faster), but tied with $60 at
    # 10/s, and the cheaper wins, even when the dearer comes first in the design order
    near = np.array([10.0 * (1 + 5e-10), 10.0])
    assert best_on_front("throughput", np.array([70.0, 60.0]), near, np.array([0, 1]))[0] == 1
    # ...but 2e-9 apart is not a tie: the faster wins
    apart = np.array([10.0 * (1 + 2e-9), 10.0])
    assert best_on_front("throughput", np.array([70.0, 60.0]), apart, np.array([0, 1]))[0] == 0
    # cost objective, near-tie on cost ($100 vs $100·(1 + 5e-10)): the faster wins, whatever the order
    c3, t3 = np.array([100.0, 100.0 * (1 + 5e-10)]), np.array([5.0, 6.0])
    assert best_on_front("cost", c3, t3, np.array([0, 1]), min_throughput=4.0)[0] == 1
    # nothing within budget
    pick, info = best_on_front("throughput", cost, thr, rank, budget=10)
    assert pick is None and info["status"] == "Infeasible"


def _order_rank(ev):
    rank = np.empty(len(ev.space), dtype=np.int64)
    rank[ev.space.sort_key()] = np.arange(len(ev.space))
    return rank


@pytest.mark.parametrize("seed", range(6))
def test_front_search_equals_plain_loop_on_random_catalogs(seed):
    rng = np.random.default_rng(seed)
    ev = evaluated(random_catalog(rng), model=["resnet50", "vgg16", "inception_v3"][seed % 3])
    ok = ev.timing.feasible & ev.costs.buildable
    idx = np.flatnonzero(ok)
    cost, thr = ev.costs.cost_usd[idx], ev.timing.throughput_samples_per_s[idx]
    rank = _order_rank(ev)[idx]
    for objective in OBJECTIVES:
        for budget in rng.uniform(cost.min() * 0.5, cost.max(), size=4):
            min_thr = float(rng.uniform(thr.min(), thr.max())) if objective == "cost" else None
            want = reference_pick(objective, cost, thr, rank, budget, min_thr)
            got, info = best_on_front(objective, cost, thr, rank, budget, min_thr)
            assert got == want, (objective, budget, min_thr, info)


@pytest.mark.parametrize("seed", range(20))
def test_front_search_equals_plain_loop_with_many_ties(seed):
    # small integer costs and speeds: many exact ties, so every tie-break rule decides some cases
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 120))
    cost = rng.integers(1, 12, n).astype(float) * 10.0
    thr = rng.integers(1, 8, n).astype(float)
    if seed % 2:  # near-ties: values a few 1e-10 apart are tied (within 1e-9), but not equal
        cost *= 1 + rng.uniform(-3e-10, 3e-10, n)
        thr *= 1 + rng.uniform(-3e-10, 3e-10, n)
    rank = rng.permutation(n)
    for objective in OBJECTIVES:
        for budget in (None, *rng.uniform(5, 130, size=3)):
            min_thr = float(rng.integers(1, 9)) if objective == "cost" else None
            want = reference_pick(objective, cost, thr, rank, budget, min_thr)
            got, _ = best_on_front(objective, cost, thr, rank, budget, min_thr)
            assert got == want, (objective, budget, min_thr)


def test_pareto_front_is_non_dominated_and_complete():
    rng = np.random.default_rng(7)
    cost = rng.integers(1, 50, size=400).astype(float)
    thr = rng.integers(1, 50, size=400).astype(float)
    rank = rng.permutation(400)
    front = pareto_front(cost, thr, rank)
    # strictly increasing in both along the front
    assert np.all(np.diff(cost[front]) > 0) and np.all(np.diff(thr[front]) > 0)
    for i in range(400):  # every point is dominated by (or equal to) a front point
        assert np.any((cost[front] <= cost[i]) & (thr[front] >= thr[i]))
    for f in front:  # no front point is dominated; of equal points the earliest in design order is kept
        for i in range(400):
            if i == f:
                continue
            assert not (cost[i] <= cost[f] and thr[i] >= thr[f] and (cost[i] < cost[f] or thr[i] > thr[f]))
            if cost[i] == cost[f] and thr[i] == thr[f]:
                assert rank[f] < rank[i]


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
    # --tco-years 4: the whole cost of owning (tests/hand_tco.py) plus 4 years of electricity at full use
    whole = whole_cost_without_power(a["capex_usd"], a["power_kw"], a["total_gpus"], 4)
    assert b["cost_usd"] == pytest.approx(whole + 4 * a["energy_usd_per_year"], rel=1e-6)
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
    # one tier: one whole 4-port switch (4 x 500) -- the same as 4 ports
    # two tiers (5 ports > 4): leaves 5 / 2 -> 3, spines 3 x 2 / 4 -> 2: 5 whole switches x 2,000; links 5 + 3 x 2 = 11
    assert two_tier["capex_usd"] == pytest.approx(5 * 11_000 + 5 * 2_000 + 11 * 100 + 2_000)  # 68,100
    too_big = costopt.predict("resnet50", "halfcard", 1, 9, "ib100", "ring", catalog=MINI)  # 5 leaves > 4 spine ports
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


def test_auto_precision_is_the_best_each_gpu_trains_in():
    # issue 11: bf16 AMP on Ampere and later, fp16 AMP on Volta/Turing, fp32 before; per design
    want = {"k80": "fp32", "p100-sxm2": "fp32", "v100-sxm2-16gb": "amp_fp16", "t4": "amp_fp16",
            "a100-sxm-80gb": "amp_bf16", "h200-sxm": "amp_bf16", "mi300x": "amp_bf16"}
    # every part class, so old generations (fp32 / fp16 ones) are in the search too (part_filter.py)
    res = costopt.solve(300_000, "resnet50", top=50, include="consumer,legacy,eol")
    for r in [res.best] + res.alternatives + res.best_per_gpu:
        if r["gpu"] in want:
            assert r["precision"] == want[r["gpu"]], r["gpu"]
    assert len({r["precision"] for r in res.best_per_gpu}) >= 2
    # an explicit precision still forces one for all
    forced = costopt.solve(300_000, "resnet50", top=50, precision="fp32")
    assert {r["precision"] for r in [forced.best] + forced.alternatives} == {"fp32"}
