"""Several jobs: the MILP against references written here, hand-derived answers, mix-file validation, CLI.

Every reference below is written in this file (plain loops over every combination, part costs by
trying every quantity to buy), never with the product's own functions, so a bug shared by the solver
and its helpers cannot pass unnoticed.
"""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costopt.cli import app
from costopt.core.errors import InfeasibleError, InputError
from costopt.search.mix import load_mix
from costopt.search.multijob import JobCandidates, Market, MixLimits, brute_force, reduce_jobs, solve_mix, solve_program
from costopt.search.multijob.fair import _FairLevels

HERE = Path(__file__).parent
MINI = HERE / "fixtures" / "mini.toml"
EXAMPLE = HERE.parent / "examples" / "mix.toml"
GPUS, CHASSIS, NICS = ("g0", "g1"), ("c0", "c1"), ("n0", "n1")
PRICE = {("gpus", "g0"): 100.0, ("gpus", "g1"): 300.0, ("chassis", "c0"): 50.0, ("chassis", "c1"): 80.0,
         ("nics", "n0"): 10.0, ("nics", "n1"): 30.0}
REL = 1e-9  # the limits' relative tolerance
TIE = 1e-7  # selections within this relative distance of the optimum are tied


# --------------------------------------------------------------------------------------------------
# References (independent of the product: plain loops over the data)
# --------------------------------------------------------------------------------------------------

def ref_units(job, d, part):
    """Units of part (kind, id) design d of job uses: GPUs, nodes (chassis) or NIC adapters (one per node
    of a multi-node design unless the job says otherwise)."""
    kind, pid = part
    if kind == "gpus":
        return int(job.gpus[d]) if job.gpu[d] == pid else 0
    if kind == "chassis":
        return int(job.nodes[d]) if job.chassis[d] == pid else 0
    if job.nic[d] != pid:
        return 0
    per_node = 1 if job.nics_per_node is None else int(job.nics_per_node[d])
    return int(job.nodes[d]) * per_node


def ref_part_cost(need, list_price, owned=0, stock=None, tiers=()):
    """Cheapest cost of having `need` units: own `owned`, buy b >= need - owned units (b <= stock), all b
    priced at the unit price of the tier b falls in (list price below the first tier). Tries every b up
    to the last tier's start (beyond it the unit price is constant, so more units only cost more)."""
    short = max(0, need - owned)
    if short == 0:
        return 0.0
    top = max([short] + [start for start, _ in tiers])
    best = math.inf
    for b in range(short, top + 1):
        if stock is not None and b > stock:
            break
        unit = list_price
        for start, usd in sorted(tiers):
            if b >= start:
                unit = usd
        best = min(best, unit * b)
    return best


def ref_totals(jobs, market, sel):
    """Cost (design list prices, shared parts re-priced for the summed need), power, rack units, nodes,
    NIC types and per-job throughput of one selection (one design index per job)."""
    cost = sum(float(job.cost_usd[d]) for job, d in zip(jobs, sel))
    for part in set(market.owned) | set(market.stock) | set(market.tiers):
        need = sum(ref_units(job, d, part) for job, d in zip(jobs, sel))
        cost += ref_part_cost(need, market.price[part], market.owned.get(part, 0), market.stock.get(part),
                              market.tiers.get(part, ())) - market.price[part] * need
    return {"cost": cost,
            "power": sum(float(job.power_kw[d]) for job, d in zip(jobs, sel)),
            "ru": sum(float(job.rack_units[d]) for job, d in zip(jobs, sel)),
            "nodes": sum(int(job.nodes[d]) for job, d in zip(jobs, sel)),
            "nic_types": len({job.nic[d] for job, d in zip(jobs, sel)} - {"none"}),
            "gpu_types": len({job.gpu[d] for job, d in zip(jobs, sel)}),
            "thr": [float(job.throughput[d]) for job, d in zip(jobs, sel)]}


def ref_feasible(jobs, lim, objective, t):
    if not math.isfinite(t["cost"]):  # a stock limit cannot be met
        return False
    for limit, used in ((lim.budget_usd, t["cost"]), (lim.max_power_kw, t["power"]),
                        (lim.max_rack_units, t["ru"]), (lim.max_nodes, t["nodes"])):
        if limit is not None and used > limit * (1 + REL):
            return False
    if lim.one_nic_type and t["nic_types"] > 1:
        return False
    if lim.max_gpu_types is not None and t["gpu_types"] > lim.max_gpu_types:
        return False
    if objective != "fair":
        return all(job.target is None or thr >= job.target * (1 - REL) for job, thr in zip(jobs, t["thr"]))
    return True


def ref_primary(objective, jobs, t):
    """The objective (larger is better for throughput and fair; cost is minimised)."""
    if objective == "throughput":
        return sum(job.weight * thr for job, thr in zip(jobs, t["thr"]))
    if objective == "fair":
        return min(thr / job.target for job, thr in zip(jobs, t["thr"]))
    return t["cost"]


def ref_secondary(objective, jobs, t):
    """The tie-break, as something to maximise: least cost; most Σ w τ / T; most Σ w τ."""
    if objective == "throughput":
        return -t["cost"]
    if objective == "fair":
        return sum(job.weight * thr / job.target for job, thr in zip(jobs, t["thr"]))
    return sum(job.weight * thr for job, thr in zip(jobs, t["thr"]))


def ref_optimum(jobs, market, lim, objective):
    """(optimum, best tie-break value among the selections tied with it), or None when nothing is
    feasible, by trying every combination of every job's designs."""
    rows = []
    for sel in itertools.product(*(range(len(job)) for job in jobs)):
        t = ref_totals(jobs, market, sel)
        if ref_feasible(jobs, lim, objective, t):
            rows.append((ref_primary(objective, jobs, t), ref_secondary(objective, jobs, t)))
    if not rows:
        return None
    best = (min if objective == "cost" else max)(p for p, _ in rows)
    tol = TIE * max(abs(best), 1e-9)
    tied = [s for p, s in rows if abs(p - best) <= tol]
    return best, max(tied)


def original(jobs_reduced, picks):
    """Design indices in the unreduced jobs of the solver's picks."""
    return [int(j.index[d]) for j, d in zip(jobs_reduced, picks)]


def check_answer(jobs, market, lim, objective, res, ref):
    """The solver's answer is feasible (checked here), optimal and wins the tie-break."""
    if ref is None:
        assert res.picks is None, res
        return
    assert res.status == "Optimal" and res.gap == 0.0
    t = ref_totals(jobs, market, res.sel)
    assert ref_feasible(jobs, lim, objective, t)
    assert ref_primary(objective, jobs, t) == pytest.approx(ref[0], rel=1e-6)
    assert res.objective_value == pytest.approx(ref[0], rel=1e-6)
    assert ref_secondary(objective, jobs, t) == pytest.approx(ref[1], rel=1e-6, abs=1e-9), objective


def solve_reduced(jobs, market, lim, objective, **kw):
    reduced = reduce_jobs(jobs, market, lim, objective)
    res = solve_program(reduced, market, lim, objective, **kw)
    res.sel = None if res.picks is None else original(reduced, res.picks)
    return res


# --------------------------------------------------------------------------------------------------
# Instances
# --------------------------------------------------------------------------------------------------

def random_job(rng, name, n, market_price, target=None):
    gpu = rng.choice(GPUS, n).astype(object)
    chassis = rng.choice(CHASSIS, n).astype(object)
    nodes = rng.integers(1, 4, n)
    nic = np.where(nodes > 1, rng.choice(NICS, n), "none").astype(object)
    slots = np.where(chassis == "c0", 2, 4)
    gpus = nodes * slots
    parts = np.array([market_price[("gpus", g)] for g in gpu]) * gpus
    parts += np.array([market_price[("chassis", c)] for c in chassis]) * nodes
    parts += np.array([market_price.get(("nics", x), 0.0) for x in nic]) * nodes
    cost = parts + rng.integers(0, 200, n)  # switch ports, energy: anything non-negative
    thr = np.round(gpus * rng.uniform(5, 15, n), 1)
    power = np.round(gpus * rng.uniform(0.3, 0.8, n), 2)
    ru = nodes * np.where(chassis == "c0", 1, 2) + (nodes > 1)
    return JobCandidates(name, cost, thr, power, ru.astype(float), nodes, gpus, gpu, chassis, nic,
                         weight=float(rng.choice([1.0, 2.0, 0.5])), target=target)


def random_instance(seed):
    rng = np.random.default_rng(seed)
    n_jobs = int(rng.integers(1, 4))
    jobs = [random_job(rng, f"j{k}", int(rng.integers(3, 7)), PRICE) for k in range(n_jobs)]
    for job in jobs:  # targets reachable by some design, so `fair` and `cost` are usually feasible
        job.target = float(np.quantile(job.throughput, rng.uniform(0.1, 0.6)))
    owned = {("gpus", "g1"): int(rng.integers(0, 6))} if rng.random() < 0.6 else {}
    stock = {("gpus", "g0"): int(rng.integers(4, 20))} if rng.random() < 0.5 else {}
    tiers = {("gpus", "g0"): [(4, 90.0), (12, 70.0)]} if rng.random() < 0.6 else {}
    if rng.random() < 0.4:
        tiers[("nics", "n1")] = [(3, 20.0)]
    market = Market(PRICE, owned, stock, tiers)
    full_cost = sum(float(j.cost_usd.max()) for j in jobs)
    lim = MixLimits(
        budget_usd=float(rng.uniform(0.3, 0.9) * full_cost),
        max_power_kw=float(rng.uniform(0.4, 1.0) * sum(j.power_kw.max() for j in jobs)) if rng.random() < 0.5 else None,
        max_rack_units=float(rng.integers(3, 12)) if rng.random() < 0.5 else None,
        max_nodes=int(rng.integers(2, 7)) if rng.random() < 0.4 else None,
        one_nic_type=bool(rng.random() < 0.7),
    )
    if rng.random() < 0.3:
        lim.max_gpu_types = 1  # one GPU model for the whole cluster (of the two)
    return jobs, market, lim


def larger_instance(seed, n_jobs=3, n_designs=14):
    """Like random_instance, with more designs per job (so the fair search's partial rows get thinned)."""
    jobs, market, lim = random_instance(seed)
    rng = np.random.default_rng(1000 + seed)
    jobs = [random_job(rng, f"j{k}", n_designs, PRICE) for k in range(n_jobs)]
    for job in jobs:
        job.target = float(np.quantile(job.throughput, rng.uniform(0.1, 0.6)))
    full_cost = sum(float(j.cost_usd.max()) for j in jobs)
    lim.budget_usd = float(rng.uniform(0.3, 0.9) * full_cost)
    if lim.max_power_kw is not None:
        lim.max_power_kw = float(rng.uniform(0.4, 1.0) * sum(j.power_kw.max() for j in jobs))
    if lim.max_rack_units is not None:
        lim.max_rack_units = float(rng.integers(3, 8 * n_jobs))
    return jobs, market, lim


def hand_job(name, cost, thr, power=None, weight=1.0, target=None, gpu=None):
    """Single-node designs of one GPU each, given by their cost, throughput and power (and GPU model: one
    per job unless given per design)."""
    n = len(cost)
    gpu = gpu if isinstance(gpu, list) else [gpu or f"g-{name}"] * n
    return JobCandidates(name, np.array(cost, float), np.array(thr, float),
                         np.array(power if power is not None else [1.0] * n, float), np.ones(n), np.ones(n, int),
                         np.ones(n, int), np.array(gpu, dtype=object),
                         np.array(["c"] * n, dtype=object), np.array(["none"] * n, dtype=object),
                         weight=weight, target=target)


# --------------------------------------------------------------------------------------------------
# The references themselves, on hand-derived numbers
# --------------------------------------------------------------------------------------------------

def test_reference_part_cost_hand_computed():
    # 3 owned, stock 12, list $100, from 5 units $90, from 10 units $80
    tiers = [(5, 90.0), (10, 80.0)]
    got = [ref_part_cost(n, 100.0, 3, 12, tiers) for n in (2, 5, 7, 12, 13, 15, 16)]
    # need 2: nothing; 5 -> 2 at list; 7 -> 4 at list (400) < 5 at 90 (450); 12 -> 9 at 90 = 810 > 10 at 80 = 800
    # (one spare); 13 -> 10 at 80; 15 -> 12 at 80 = the stock; 16 -> 13 units, more than the stock
    assert got == [0.0, 200.0, 400.0, 800.0, 800.0, 960.0, math.inf]


def test_volume_tiers_inventory_and_stock_hand_computed():
    m = Market({("gpus", "g"): 100.0}, owned={("gpus", "g"): 3}, stock={("gpus", "g"): 12},
               tiers={("gpus", "g"): [(5, 90.0), (10, 80.0)]})
    assert m.bands(("gpus", "g")) == [(1, 4, 100.0), (5, 9, 90.0), (10, float("inf"), 80.0)]
    cost, bought = m.part_cost(("gpus", "g"), np.array([2, 5, 7, 12, 13, 15, 16]))
    # the same hand-computed figures as above
    assert cost.tolist() == [0.0, 200.0, 400.0, 800.0, 800.0, 960.0, float("inf")]
    assert bought[:6].tolist() == [0, 2, 4, 10, 10, 12]


# --------------------------------------------------------------------------------------------------
# Hand-derived answers
# --------------------------------------------------------------------------------------------------

HANDOFFS = [{}, {"tie_enumeration_max": 0}, {"tie_enumeration_max": 0, "fair_enumeration_rows": 1}]


@pytest.mark.parametrize("kw", HANDOFFS)
def test_tie_break_throughput_hand_derived(kw):
    # A (weight 1): a0 $100 10/s, a1 $300 30/s; B (weight 2): b0 $100 5/s, b1 $250 15/s; budget $400.
    # (a0,b0) $200 -> 20; (a1,b0) $400 -> 30 + 10 = 40; (a0,b1) $350 -> 10 + 30 = 40; (a1,b1) $550 > budget.
    # 40 is tied between (a1,b0) and (a0,b1): the tie-break takes the cheaper, (a0,b1) at $350.
    jobs = [hand_job("a", [100, 300], [10, 30]), hand_job("b", [100, 250], [5, 15], weight=2.0)]
    market, lim = Market({}), MixLimits(budget_usd=400.0)
    res = solve_reduced(jobs, market, lim, "throughput", **kw)
    assert res.objective_value == pytest.approx(40.0)
    assert res.sel == [0, 1]
    assert ref_totals(jobs, market, res.sel)["cost"] == 350.0


@pytest.mark.parametrize("kw", HANDOFFS)
def test_tie_break_fair_hand_derived(kw):
    # targets A 10/s, B 5/s. A: a0 $100 10/s (ratio 1), a1 $200 20/s (2); B: b0 $100 5/s (1), b1 $150 10/s (2),
    # b2 $200 15/s (3); budget $400. Every selection with a0 or b0 reaches ratio 1; (a1,b1) $350 and (a1,b2) $400
    # reach 2, the optimum. Tie-break, most Σ w τ / T: (a1,b1) 2 + 2 = 4, (a1,b2) 2 + 3 = 5: (a1,b2), B at 15/s.
    jobs = [hand_job("a", [100, 200], [10, 20], target=10.0), hand_job("b", [100, 150, 200], [5, 10, 15], target=5.0)]
    market, lim = Market({}), MixLimits(budget_usd=400.0)
    res = solve_reduced(jobs, market, lim, "fair", **kw)
    assert res.objective_value == pytest.approx(2.0)
    assert res.sel == [1, 2]
    assert ref_totals(jobs, market, res.sel)["thr"] == [20.0, 15.0]


@pytest.mark.parametrize("kw", HANDOFFS)
def test_tie_break_cost_hand_derived(kw):
    # targets 10/s each, power at most 6 kW. A: a0 $100 10/s 5 kW, a1 $150 20/s 1 kW; B: b0 $100 10/s 5 kW,
    # b1 $150 12/s 1 kW. (a0,b0) needs 10 kW; (a0,b1) and (a1,b0) cost $250 (the optimum) with 6 kW; (a1,b1) $300.
    # Tie-break, most Σ w τ: (a0,b1) 10 + 12 = 22, (a1,b0) 20 + 10 = 30: (a1,b0).
    jobs = [hand_job("a", [100, 150], [10, 20], power=[5, 1], target=10.0),
            hand_job("b", [100, 150], [10, 12], power=[5, 1], target=10.0)]
    market, lim = Market({}), MixLimits(max_power_kw=6.0)
    res = solve_reduced(jobs, market, lim, "cost", **kw)
    assert res.objective_value == pytest.approx(250.0)
    assert res.sel == [1, 0]


def test_volume_discount_across_jobs_hand_derived():
    # each job's one design: 3 GPUs g at list $100 plus a $50 chassis (kept at list): $350 each, $700 together.
    # From 5 units g costs $80: 6 GPUs bought together cost 480, so the cluster costs 2 x 50 + 480 = $580.
    # With 2 owned: 4 short; 4 at $100 = 400 or 5 at $80 = 400 (one spare): $100 + $400 = $500.
    def one(name):
        return JobCandidates(name, np.array([350.0]), np.array([10.0]), np.array([1.0]), np.array([1.0]),
                             np.array([1]), np.array([3]), np.array(["g"], dtype=object),
                             np.array(["c"], dtype=object), np.array(["none"], dtype=object), target=1.0)
    price = {("gpus", "g"): 100.0, ("chassis", "c"): 50.0}
    for owned, expect in ((0, 580.0), (2, 500.0)):
        market = Market(price, owned={("gpus", "g"): owned} if owned else {}, tiers={("gpus", "g"): [(5, 80.0)]})
        res = solve_reduced([one("a"), one("b")], market, MixLimits(budget_usd=1e4), "cost")
        assert res.objective_value == pytest.approx(expect)


@pytest.mark.parametrize("objective", ["throughput", "fair"])
def test_max_gpu_types_hand_derived(objective):
    # A: on gA $100 20/s, on gB $100 15/s; B: on gA $100 10/s, on gB $100 18/s; budget $200; targets 10/s.
    # Any GPU models: gA for A and gB for B, 20 + 18 = 38/s (fair: min(2.0, 1.8) = 1.8).
    # One GPU model: both gA 20 + 10 = 30 (fair 1.0), both gB 15 + 18 = 33 (fair 1.5): both on gB.
    jobs = [hand_job("a", [100, 100], [20, 15], gpu=["gA", "gB"], target=10.0),
            hand_job("b", [100, 100], [10, 18], gpu=["gA", "gB"], target=10.0)]
    market = Market({})
    free = solve_reduced(jobs, market, MixLimits(budget_usd=200.0), objective)
    one = solve_reduced(jobs, market, MixLimits(budget_usd=200.0, max_gpu_types=1), objective)
    assert free.sel == [0, 1] and one.sel == [1, 1]
    assert (free.objective_value, one.objective_value) == ((38.0, 33.0) if objective == "throughput" else
                                                           (pytest.approx(1.8), pytest.approx(1.5)))


def test_binding_limits_and_unused_owned_parts_hand_derived():
    # the throughput tie-break instance: the answer (a0, b1) costs $350 of $400. Changing A to a1 gives
    # 30 + 2 x 15 = 60 (+50% on 40) for $550, $150 over the budget: the budget binds. Power is not limited.
    from costopt.search.multijob.explain import explain

    jobs = [hand_job("a", [100, 300], [10, 30]), hand_job("b", [100, 250], [5, 15], weight=2.0)]
    rows, unused = explain(jobs, Market({}), MixLimits(budget_usd=400.0), "throughput", np.array([0, 1]), 40.0)
    (budget,) = rows
    assert (budget["limit"], budget["used"], budget["slack"], budget["binds"]) == ("budget", 350.0, 50.0, True)
    assert budget["blocked_change"] == {"job": "a", "design": "1 x g-a (1 node)", "objective_change": 0.5,
                                        "over_by": 150.0}
    assert unused == {}
    # one job; 2 owned GPUs gX (list $100 each). a0: 1 x gA, $100, 20/s; a1: 2 x gX, $200 at list, so $0 with the
    # owned ones, 10/s. Budget $100: a0 (20/s) beats a1 (10/s, -50%), and the owned GPUs stay unused for that.
    job = JobCandidates("a", np.array([100.0, 200.0]), np.array([20.0, 10.0]), np.ones(2), np.ones(2),
                        np.ones(2, int), np.array([1, 2]), np.array(["gA", "gX"], dtype=object),
                        np.array(["c", "c"], dtype=object), np.array(["none", "none"], dtype=object))
    market = Market({("gpus", "gX"): 100.0, ("gpus", "gA"): 100.0}, owned={("gpus", "gX"): 2})
    res = solve_reduced([job], market, MixLimits(budget_usd=100.0), "throughput")
    assert res.sel == [0]
    rows, unused = explain([job], market, MixLimits(budget_usd=100.0), "throughput", np.array([0]), 20.0)
    assert unused == {("gpus", "gX"): {"units": 2, "reason": "worse", "job": "a", "design": "2 x gX (1 node)",
                                       "objective_change": -0.5}}
    assert rows[0]["binds"] is False and rows[0]["slack"] == 0.0 and rows[0]["at_limit"] is True
    # with a 1.5 kW power limit and a1 drawing 1 kW per GPU (2 kW), a1 breaks power: that is the reason now
    job.power_kw = np.array([1.0, 2.0])
    lim = MixLimits(budget_usd=100.0, max_power_kw=1.5)
    _, unused = explain([job], market, lim, "throughput", np.array([0]), 20.0)
    assert unused[("gpus", "gX")] == {"units": 2, "reason": "limit", "limit": "power", "over_by": 0.5, "job": "a",
                                      "design": "2 x gX (1 node)"}


# --------------------------------------------------------------------------------------------------
# The program against the reference on random instances
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(14))
def test_time_limited_answer_is_feasible_and_its_gap_holds(seed):
    # with no time to spare the answer is the heuristic's, with the gap to the Lagrangian bound: the
    # answer must be feasible, and the optimum (reference) within the reported gap of it
    jobs, market, lim = larger_instance(seed, n_jobs=3, n_designs=10)
    for objective in ("throughput", "cost"):
        ref = ref_optimum(jobs, market, lim, objective)
        res = solve_reduced(jobs, market, lim, objective, time_limit=1e-3)
        if res.picks is None:
            assert res.status.startswith("No solution") or ref is None
            continue
        assert res.status in ("Optimal", "Feasible (time limit)") and res.gap is not None and res.gap >= 0
        t = ref_totals(jobs, market, res.sel)
        assert ref_feasible(jobs, lim, objective, t)
        value = ref_primary(objective, jobs, t)
        if objective == "throughput":
            assert value <= ref[0] * (1 + 1e-9) and ref[0] <= value * (1 + res.gap) * (1 + 1e-9)
        else:
            assert value >= ref[0] * (1 - 1e-9) and ref[0] >= value * (1 - res.gap) * (1 - 1e-9)



def test_time_limit_stops_with_the_incumbent_its_bound_and_gap_hand_checked():
    # a: $100 10/s, $200 25/s, $300 30/s; b: $100 8/s, $200 20/s; budget $400. Selections within it:
    # a0+b0 $200 18/s, a0+b1 $300 30/s, a1+b0 $300 33/s, a1+b1 $400 45/s, a2+b0 $400 38/s (a2+b1 $500 breaks
    # it): the optimum is 45/s. With 1 ms there is no time for CBC: the answer is the heuristic's selection,
    # stopped at the limit, with the Lagrangian bound. Whatever it found, best found <= 45 <= bound, the gap
    # is (bound - best) / best, and the line says all three with the limit.
    from costopt.search.multijob.pipeline import time_limit_note

    jobs = [hand_job("a", [100, 200, 300], [10, 25, 30]), hand_job("b", [100, 200], [8, 20])]
    market, lim = Market({}), MixLimits(budget_usd=400.0)
    res = solve_reduced(jobs, market, lim, "throughput", time_limit=1e-3)
    assert res.status == "Feasible (time limit)" and res.picks is not None
    best, bound, gap = res.objective_value, res.bound, res.gap
    assert best in (18.0, 30.0, 33.0, 45.0, 38.0)  # one of the selections within the budget
    assert best <= 45.0 * (1 + 1e-12) and bound >= 45.0 * (1 - 1e-12)
    assert gap == pytest.approx((bound - best) / best, rel=1e-12)
    note = time_limit_note(res.status, 1e-3, best, bound, gap)
    assert note == f"stopped at the time limit 0.001 s; best found {best:,.6g}, bound {bound:,.6g}, gap {gap:.2%}"
    # the cost objective's bound is a lower one: cheapest meeting targets a >= 25/s, b >= 8/s is a1+b0, $300
    jobs[0].target, jobs[1].target = 25.0, 8.0
    res = solve_reduced(jobs, market, lim, "cost", time_limit=1e-3)
    assert res.status == "Feasible (time limit)"
    assert res.objective_value >= 300.0 * (1 - 1e-12) and res.bound <= 300.0 * (1 + 1e-12)
    assert res.gap == pytest.approx((res.objective_value - res.bound) / res.objective_value, rel=1e-12)
    # an answer the limit did not cut short carries no such line
    assert time_limit_note("Optimal", 60.0, 45.0, 45.0, 0.0) == ""


def test_help_states_the_default_time_limit():
    from costopt.search.multijob import DEFAULT_TIME_LIMIT_S

    out = CliRunner().invoke(app, ["solve", "--help"], env={"COLUMNS": "200"}).output
    assert f"(default {DEFAULT_TIME_LIMIT_S:g})" in " ".join(out.split()) and DEFAULT_TIME_LIMIT_S == 60.0


# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(14))
def test_milp_equals_reference_on_random_instances(seed):
    jobs, market, lim = random_instance(seed)
    for objective in ("throughput", "fair", "cost"):
        ref = ref_optimum(jobs, market, lim, objective)  # every combination, no pruning
        res = solve_reduced(jobs, market, lim, objective)  # pruning + per-design limits + MILP + tie-break
        check_answer(jobs, market, lim, objective, res, ref)
        bf, _ = brute_force(jobs, market, lim, objective)  # the benchmark's brute force agrees too
        assert (bf is None) == (ref is None) and (ref is None or bf == pytest.approx(ref[0], rel=1e-9))


def test_shared_parts_change_the_answer():
    # two GPU types, one job: owning the expensive GPU makes it free, and the MILP must see that
    rng = np.random.default_rng(0)
    job = random_job(rng, "j", 30, PRICE)
    lim = MixLimits(budget_usd=1500.0, one_nic_type=False)
    plain = Market(PRICE)
    owned = Market(PRICE, owned={("gpus", "g1"): 16, ("chassis", "c1"): 4})
    for market in (plain, owned):
        res = solve_reduced([job], market, lim, "throughput")
        check_answer([job], market, lim, "throughput", res, ref_optimum([job], market, lim, "throughput"))
    assert ref_optimum([job], owned, lim, "throughput")[0] > ref_optimum([job], plain, lim, "throughput")[0]


def test_spare_units_in_a_band_beyond_the_need_are_priced_exactly():
    # the only useful band starts above any quantity the jobs need: buying spare units to reach it is
    # cheaper, and the program (which drops only bands that can never pay off) must see that
    rng = np.random.default_rng(3)
    jobs = [random_job(rng, f"j{k}", 5, PRICE, target=1.0) for k in range(2)]
    for tiers in ([(40, 5.0)], [(40, 95.0)], [(8, 99.0), (40, 1.0)]):
        market = Market(PRICE, stock={("gpus", "g0"): 60}, tiers={("gpus", "g0"): tiers})
        lim = MixLimits(budget_usd=1e6)
        for objective in ("cost", "throughput"):
            res = solve_reduced(jobs, market, lim, objective)
            check_answer(jobs, market, lim, objective, res, ref_optimum(jobs, market, lim, objective))


@pytest.mark.parametrize("seed", range(12))
def test_fair_levels_exact_check_and_bound_equal_reference(seed):
    # a level t is reachable exactly when t <= the fair optimum (reference); the enumeration must say so
    # at every level, and the lower bounds must never rule out a reachable level
    jobs, market, lim = (random_instance if seed % 2 else larger_instance)(seed)
    ref = ref_optimum(jobs, market, lim, "fair")
    fl = _FairLevels(jobs, market, lim)
    levels = sorted({float(thr) / job.target for job in jobs for thr in job.throughput})
    ok = fl.bound(np.array(levels))
    for t, open_ in zip(levels, ok):
        reachable = ref is not None and t <= ref[0]
        if reachable:
            assert open_.any(), t
        verdict, picks, _ = fl.check(t, open_ if open_.any() else np.ones(len(fl.options), bool))
        if verdict is None:  # left to CBC: only when the enumeration cannot track a limit on GPU models
            assert lim.max_gpu_types is not None
            continue
        assert verdict is reachable, (t, ref)
        if verdict:
            tot = ref_totals(jobs, market, picks)
            assert min(thr / job.target for job, thr in zip(jobs, tot["thr"])) >= t
            assert ref_feasible(jobs, lim, "fair", tot)


@pytest.mark.parametrize("seed", range(8))
def test_fair_equals_reference_on_larger_instances_and_without_enumeration(seed):
    # the enumeration path (and its tie-break by enumeration with bounds), then the CBC fallback when the
    # partial rows would be too many, against the reference over every combination
    jobs, market, lim = larger_instance(seed, n_jobs=3 + seed % 2, n_designs=12 if seed % 2 else 16)
    ref = ref_optimum(jobs, market, lim, "fair")
    for kw in ({"tie_enumeration_max": 0}, {"tie_enumeration_max": 0, "fair_enumeration_rows": 1}):
        res = solve_reduced(jobs, market, lim, "fair", **kw)
        check_answer(jobs, market, lim, "fair", res, ref)
        if ref is not None and "fair_enumeration_rows" not in kw and lim.max_gpu_types is None:
            assert "0 by CBC" in res.stages[0]["method"]  # small enough: every level decided without a solver



def write(tmp_path, text, name="mix.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


SMALL_MIX = """
[jobs.vision]
model = "resnet50"
min_throughput = 1000
[jobs.text]
model = "bert_base"
weight = 2
min_throughput = 100
[limits]
budget_usd = 400000
max_power_kw = 20
"""


def test_solve_mix_on_mini_catalog_respects_limits(tmp_path):
    mix = write(tmp_path, SMALL_MIX)
    res = solve_mix(mix, catalog=MINI)
    assert res.status == "Optimal" and res.gap == 0.0
    assert res.totals["cost_usd"] <= 400000 and res.totals["power_kw"] <= 20
    assert len(res.totals["nic_types"]) <= 1
    for j in res.jobs:
        assert j["throughput_samples_per_s"] >= j["target_samples_per_s"]
        assert j["design"]["feasible"] is True
    d = res.to_json_dict()
    assert {"status", "objective_value", "gap", "jobs"} <= set(d)
    assert d["objective_value"] == pytest.approx(
        sum(j["weight"] * j["throughput_samples_per_s"] for j in res.jobs))


def test_infeasible_mix_names_the_binding_limit(tmp_path):
    mix = write(tmp_path, SMALL_MIX.replace("budget_usd = 400000", "budget_usd = 5000"))
    with pytest.raises(InfeasibleError) as e:
        solve_mix(mix, catalog=MINI)
    msg = str(e.value)
    assert "budget" in msg and "over by $" in msg
    rows = {r["limit"]: r for r in e.value.nearest}
    assert rows["budget"]["short_by"] > 0
    # raising the budget by exactly the reported amount makes it feasible
    need = 5000 + rows["budget"]["short_by"]
    res = solve_mix(mix, catalog=MINI, budget=need + 1e-6)
    assert res.totals["cost_usd"] <= need + 1e-6


def test_target_out_of_reach_is_reported(tmp_path):
    mix = write(tmp_path, SMALL_MIX.replace("min_throughput = 100\n", "min_throughput = 1e9\n"))
    with pytest.raises(InfeasibleError) as e:
        solve_mix(mix, catalog=MINI)
    assert "job 'text': no design reaches its target" in str(e.value)
    assert e.value.nearest[0]["limit"] == "target text"


@pytest.mark.parametrize("text, expect", [
    ("[jobs.a]\nmodel = 'resnet50'\nbatch = 3\n", "job 'a', field 'batch': unknown key"),
    ("[jobs.a]\nprecision = 'fp32'\n", "job 'a', field 'model': missing required field"),
    ("[jobs.a]\nmodel = 'resnet50'\ndeadline_hours = 3\n", "missing epochs, dataset_size"),
    ("[jobs.a]\nmodel = 'resnet50'\nweight = -1\n", "job 'a', field 'weight'"),
    ("[jobs.a]\nmodel = 'resnet50'\n[limits]\nbudget = 5\n", "[limits], field 'budget': unknown key"),
    ("[jobs.a]\nmodel = 'resnet50'\n[[discount]]\ngpu = 'x'\nnic = 'y'\ntiers = [{from_units = 2, unit_price_usd = 1}]\n",
     "exactly one of gpu, chassis, nic"),
    ("[limits]\nbudget_usd = 5\n", "field 'jobs': missing required field"),
    ("[jobs.a]\nmodel = 'resnet50'\n[limits]\nmax_gpu_types = 0\n", "[limits], field 'max_gpu_types'"),
    ("[jobs.a]\nmodel = 'resnet50'\n[limits]\nmax_gpu_types = 1.5\n", "[limits], field 'max_gpu_types'"),
    ("[jobs.a]\nmodel = 'resnet50'\n[limits]\nmax_gpu_types = '2'\n", "[limits], field 'max_gpu_types'"),
    ("[jobs.a\nmodel = 1", "not valid TOML"),
])
def test_bad_mix_files_fail_clearly(tmp_path, text, expect):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_mix(p)
    assert str(p) in str(e.value) and expect in str(e.value)


def test_bad_mix_references_fail_clearly(tmp_path):
    p = write(tmp_path, "[jobs.a]\nmodel = 'resnet50'\n[limits]\nbudget_usd = 1e5\n[inventory]\ngpus = {nope = 2}\n")
    with pytest.raises(InputError, match=r"\[inventory\], field 'gpus': unknown gpus id 'nope'"):
        solve_mix(p, catalog=MINI)
    p = write(tmp_path, "[jobs.a]\nmodel = 'no_such_model'\n[limits]\nbudget_usd = 1e5\n")
    with pytest.raises(InputError, match=r"job 'a'"):
        solve_mix(p, catalog=MINI)
    p = write(tmp_path, "[jobs.a]\nmodel = 'resnet50'\n[limits]\nbudget_usd = 1e5\n")
    with pytest.raises(InputError, match="needs a throughput or deadline target for every job"):
        solve_mix(p, catalog=MINI, objective="fair")


def test_cli_workload_json_and_exit_codes(tmp_path):
    runner = CliRunner()
    mix = write(tmp_path, SMALL_MIX)
    r = runner.invoke(app, ["solve", "--workload", str(mix), "--catalog", str(MINI), "--format", "json",
                            "--objective", "cost", "--time-limit", "30"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["status"] == "Optimal" and d["gap"] == 0.0 and d["objective"] == "cost"
    assert [j["name"] for j in d["jobs"]] == ["vision", "text"] and "gpu" in d["jobs"][0]["design"]
    assert d["objective_value"] == pytest.approx(d["totals"]["cost_usd"])
    r = runner.invoke(app, ["solve", "--workload", str(mix), "--catalog", str(MINI)])
    assert r.exit_code == 0 and "One design per job" in r.output
    bad = write(tmp_path, "[jobs.a]\nmodel = 'resnet50'\nbatchsize = 2\n", "bad.toml")
    r = runner.invoke(app, ["solve", "--workload", str(bad), "--budget", "1e5", "--catalog", str(MINI)])
    assert r.exit_code == 2 and "unknown key" in r.output
    r = runner.invoke(app, ["solve", "--workload", str(mix), "--model", "gpt2", "--catalog", str(MINI)])
    assert r.exit_code == 2 and "--model" in r.output
    r = runner.invoke(app, ["solve", "--workload", str(mix), "--budget", "1000", "--catalog", str(MINI),
                            "--format", "json"])
    assert r.exit_code == 1 and json.loads(r.output)["binding"][0]["limit"] == "budget"


def test_example_mix_is_valid():
    mix = load_mix(EXAMPLE)
    assert len(mix.jobs) == 3 and {j.model for j in mix.jobs.values()} == {"resnet50", "bert_base", "gpt2"}



def test_workload_json_is_byte_identical_and_timings_are_opt_in():
    runner = CliRunner()
    args = ["solve", "--workload", str(Path(__file__).parents[1] / "examples" / "mix.toml"), "--format", "json"]
    a = runner.invoke(app, args)
    b = runner.invoke(app, args)
    assert a.exit_code == 0 and a.stdout == b.stdout
    assert "time_s" not in a.stdout
    c = runner.invoke(app, args + ["--timings"])
    assert "solve_time_s" in json.loads(c.stdout)


def test_mix_rejects_infinite_numbers(tmp_path):
    p = tmp_path / "mix.toml"
    p.write_text('[jobs.a]\nmodel = "resnet50"\nmin_throughput = inf\n')
    with pytest.raises(InputError, match="min_throughput"):
        load_mix(p)


def test_throughput_tie_goes_to_the_cheaper_selection_hand_computed():
    # job a: ($100, 10/s) or ($200, 20/s); job b: ($100, 12/s) or ($250, 22/s); budget $350; weights 1.
    # a2+b1 = 32/s for $300 and a1+b2 = 32/s for $350 tie on throughput; a2+b2 (42/s) costs $450 > budget.
    # Neither design of a job dominates the other, so pruning keeps all four; the tie goes to the cheaper: a2+b1.
    def job(name, cost, thr):
        n = len(cost)
        return JobCandidates(name, np.array(cost, float), np.array(thr, float), np.ones(n), np.ones(n),
                             np.ones(n, dtype=np.int64), np.full(n, 2), np.array(["g0"] * n, object),
                             np.array(["c0"] * n, object), np.array(["none"] * n, object))

    jobs = [job("a", [100, 200], [10, 20]), job("b", [100, 250], [12, 22])]
    lim = MixLimits(budget_usd=350.0)
    market = Market(PRICE)
    for seed_order in (jobs, jobs[::-1]):
        reduced = reduce_jobs(seed_order, market, lim, "throughput")
        res = solve_program(reduced, market, lim, "throughput")
        picks = {j.name: int(j.index[d]) for j, d in zip(reduced, res.picks)}
        assert picks == {"a": 1, "b": 0}
        assert res.objective_value == pytest.approx(32.0)


def test_nic_units_count_every_adapter_of_every_node():
    # design 0: 2 nodes x 4 n0 adapters = 8 NIC units, 20/s; design 1: one node, no NIC, 10/s.
    # Only 6 n0 adapters in stock: design 0 cannot be built (8 > 6), so the answer is design 1.
    job = JobCandidates("j", np.array([1000.0, 500.0]), np.array([20.0, 10.0]), np.ones(2), np.ones(2),
                        np.array([2, 1]), np.array([4, 2]), np.array(["g0", "g0"], object),
                        np.array(["c0", "c0"], object), np.array(["n0", "none"], object),
                        nics_per_node=np.array([4, 0]))
    lim = MixLimits(budget_usd=10_000.0)
    for stock, want in ((6, 1), (8, 0)):
        market = Market(PRICE, stock={("nics", "n0"): stock})
        reduced = reduce_jobs([job], market, lim, "throughput")
        res = solve_program(reduced, market, lim, "throughput")
        assert int(reduced[0].index[res.picks[0]]) == want, stock


def test_cli_progress_goes_to_stderr_and_json_lists_the_limits(tmp_path):
    mix = write(tmp_path, SMALL_MIX + "max_gpu_types = 1\n")
    r = CliRunner().invoke(app, ["solve", "--workload", str(mix), "--catalog", str(MINI), "--format", "json",
                                 "--progress"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)  # progress lines never reach stdout
    assert "[mix] job 1/2 'vision'" in r.stderr and "in all" in r.stderr
    assert d["limits"]["max_gpu_types"] == 1 and len(d["totals"]["gpu_types"]) == 1
    assert len({j["design"]["gpu"] for j in d["jobs"]}) == 1
    rows = {b["limit"]: b for b in d["limits_at_answer"]}
    assert {"budget", "power", "GPU types"} <= set(rows)
    for b in rows.values():  # used + slack = allowed, and a limit binds only with a change it blocks
        assert b["used"] + b["slack"] == pytest.approx(b["allowed"])
        assert b["binds"] == (b["blocked_change"] is not None)
    assert rows["budget"]["used"] == pytest.approx(d["totals"]["cost_usd"])
    quiet = CliRunner().invoke(app, ["solve", "--workload", str(mix), "--catalog", str(MINI), "--format", "json"])
    assert quiet.exit_code == 0 and "[mix]" not in quiet.stderr  # stderr is not a terminal here
