"""Several jobs: the MILP against brute force, pruning validity, part costs, mix-file validation, CLI."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costopt.cli import app
from costopt.errors import InfeasibleError, InputError
from costopt.mix import load_mix
from costopt.multijob import (
    JobCandidates, Market, MixLimits, reduce_jobs, solve_mix, solve_program,
)

HERE = Path(__file__).parent
MINI = HERE / "fixtures" / "mini.toml"
EXAMPLE = HERE.parent / "examples" / "mix.toml"
GPUS, CHASSIS, NICS = ("g0", "g1"), ("c0", "c1"), ("n0", "n1")
PRICE = {("gpus", "g0"): 100.0, ("gpus", "g1"): 300.0, ("chassis", "c0"): 50.0, ("chassis", "c1"): 80.0,
         ("nics", "n0"): 10.0, ("nics", "n1"): 30.0}


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
    return jobs, market, lim


# --------------------------------------------------------------------------------------------------
# Reference: the program's rules (multijob module docstring) as plain loops over every combination.
# Nothing here calls the product: part costs, totals, limits, objectives and the tie-break are
# written out again from the stated rules.
# --------------------------------------------------------------------------------------------------

REL = 1e-9  # limits are met within 1e-9 relative; ties on the optimum are within 1e-7 relative (docstring)
TIE = 1e-7


def ref_shared(market):
    return set(market.owned) | set(market.stock) | set(market.tiers)


def ref_units(job, d, part):
    kind, pid = part
    if kind == "gpus":
        return int(job.gpus[d]) if job.gpu[d] == pid else 0
    if kind == "chassis":
        return int(job.nodes[d]) if job.chassis[d] == pid else 0
    return int(job.nodes[d] * job.nics_per_node[d]) if job.nic[d] == pid else 0


def ref_part_cost(market, part, need):
    """f_p(n): owned units free; buy b >= the shortfall (spares allowed), every unit at the price of the
    band b falls in (all-units tiers; below the first tier: list price); b <= stock; inf if impossible."""
    short = max(need - market.owned.get(part, 0), 0)
    if short == 0:
        return 0.0
    tiers = sorted(market.tiers.get(part, []))
    stock = market.stock.get(part, float("inf"))

    def unit_price(b):
        price = market.price[part]
        for lo, usd in tiers:
            if b >= lo:
                price = usd
        return price

    top = max([short] + [lo for lo, _ in tiers])  # beyond the last tier's start more units only cost more
    costs = [unit_price(b) * b for b in range(short, top + 1) if b <= stock]
    return min(costs) if costs else float("inf")


def ref_totals(jobs, market, picks):
    shared = ref_shared(market)
    cost = 0.0
    for job, d in zip(jobs, picks):
        cost += float(job.cost_usd[d]) - sum(market.price[p] * ref_units(job, d, p) for p in shared)
    for p in shared:
        cost += ref_part_cost(market, p, sum(ref_units(job, d, p) for job, d in zip(jobs, picks)))
    return {
        "cost": cost,
        "power": sum(float(job.power_kw[d]) for job, d in zip(jobs, picks)),
        "ru": sum(float(job.rack_units[d]) for job, d in zip(jobs, picks)),
        "nodes": sum(int(job.nodes[d]) for job, d in zip(jobs, picks)),
        "nics": {job.nic[d] for job, d in zip(jobs, picks)} - {"none"},
        "thr": [float(job.throughput[d]) for job, d in zip(jobs, picks)],
    }


def ref_feasible(jobs, lim, objective, t):
    if t["cost"] == float("inf"):
        return False
    if lim.budget_usd is not None and t["cost"] > lim.budget_usd * (1 + REL):
        return False
    for limit, key in ((lim.max_power_kw, "power"), (lim.max_rack_units, "ru"), (lim.max_nodes, "nodes")):
        if limit is not None and t[key] > limit * (1 + REL):
            return False
    if lim.one_nic_type and len(t["nics"]) > 1:
        return False
    if objective != "fair":
        for job, thr in zip(jobs, t["thr"]):
            if job.target is not None and thr < job.target * (1 - REL):
                return False
    return True


def ref_primary(jobs, objective, t):
    """Larger is better: Σ w τ; min τ / T; −cost."""
    if objective == "throughput":
        return sum(job.weight * thr for job, thr in zip(jobs, t["thr"]))
    if objective == "fair":
        return min(thr / job.target for job, thr in zip(jobs, t["thr"]))
    return -t["cost"]


def ref_secondary(jobs, objective, t):
    """Larger is better, among selections tied on the primary: −cost; Σ w τ / T; Σ w τ."""
    if objective == "throughput":
        return -t["cost"]
    if objective == "fair":
        return sum(job.weight * thr / job.target for job, thr in zip(jobs, t["thr"]))
    return sum(job.weight * thr for job, thr in zip(jobs, t["thr"]))


def reference_mix(jobs, market, lim, objective):
    """(optimal value as the solver reports it, one optimal selection, the best secondary among selections
    within 1e-7 relative of the optimum); (None, None, None) when nothing is feasible."""
    rows = []
    for picks in itertools.product(*[range(len(job)) for job in jobs]):
        t = ref_totals(jobs, market, picks)
        if ref_feasible(jobs, lim, objective, t):
            rows.append((ref_primary(jobs, objective, t), ref_secondary(jobs, objective, t), picks))
    if not rows:
        return None, None, None
    best = max(r[0] for r in rows)
    pick = next(r[2] for r in rows if r[0] == best)
    tol = TIE * max(abs(best), 1e-9)
    second = max(r[1] for r in rows if r[0] >= best - tol)
    value = -best if objective == "cost" else best
    return value, np.array(pick), second


def _assert_within(jobs, market, lim, objective, picks):
    assert ref_feasible(jobs, lim, objective, ref_totals(jobs, market, [int(d) for d in picks]))


@pytest.mark.parametrize("seed", range(14))
def test_milp_equals_brute_force_on_random_instances(seed):
    jobs, market, lim = random_instance(seed)
    for objective in ("throughput", "fair", "cost"):
        best, _, _ = reference_mix(jobs, market, lim, objective)  # every combination, no pruning
        reduced = reduce_jobs(jobs, market, lim, objective)  # pruning + per-design limits
        res = solve_program(reduced, market, lim, objective, tie_break=(seed % 3 == 0))
        if best is None:
            assert res.picks is None, (objective, res)
            continue
        assert res.status == "Optimal"
        assert res.gap == 0.0
        assert res.objective_value == pytest.approx(best, rel=1e-6), objective
        _assert_within(reduced, market, lim, objective, res.picks)


def test_volume_tiers_inventory_and_stock_hand_computed():
    m = Market({("gpus", "g"): 100.0}, owned={("gpus", "g"): 3}, stock={("gpus", "g"): 12},
               tiers={("gpus", "g"): [(5, 90.0), (10, 80.0)]})
    assert m.bands(("gpus", "g")) == [(1, 4, 100.0), (5, 9, 90.0), (10, float("inf"), 80.0)]
    cost, bought = m.part_cost(("gpus", "g"), np.array([2, 5, 7, 12, 13, 15, 16]))
    # need 2 (3 owned): nothing; 5 -> buy 2 at list; 7 -> 4 at list (400) vs 5 at 90 (450); 12 -> 9 at 90 = 810
    # vs 10 at 80 = 800 (one spare); 13 -> 10 at 80; 15 -> 12 at 80 = stock; 16 -> 13 > stock
    assert cost.tolist() == [0.0, 200.0, 400.0, 800.0, 800.0, 960.0, float("inf")]
    # the tests' reference prices the same needs the same way
    assert [ref_part_cost(m, ("gpus", "g"), n) for n in (2, 5, 7, 12, 13, 15, 16)] == cost.tolist()
    assert bought[:6].tolist() == [0, 2, 4, 10, 10, 12]


def test_shared_parts_change_the_answer():
    # two GPU types, one job: owning the expensive GPU makes it free, and the MILP must see that
    rng = np.random.default_rng(0)
    job = random_job(rng, "j", 30, PRICE)
    lim = MixLimits(budget_usd=1500.0, one_nic_type=False)
    plain = Market(PRICE)
    owned = Market(PRICE, owned={("gpus", "g1"): 16, ("chassis", "c1"): 4})
    for market in (plain, owned):
        best, _, _ = reference_mix([job], market, lim, "throughput")
        res = solve_program(reduce_jobs([job], market, lim, "throughput"), market, lim, "throughput")
        assert res.objective_value == pytest.approx(best)
    assert reference_mix([job], owned, lim, "throughput")[0] > reference_mix([job], plain, lim, "throughput")[0]


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


@pytest.mark.parametrize("seed", range(14))
def test_tie_break_pick_equals_brute_force(seed):
    # the answer's primary objective is the optimum, and its secondary objective equals the best secondary
    # among every selection tied with the optimum, both found by the plain loop over all combinations of
    # the unpruned candidates written above (reference_mix)
    jobs, market, lim = random_instance(seed)
    for objective in ("throughput", "fair", "cost"):
        best, _, best_second = reference_mix(jobs, market, lim, objective)
        if best is None:
            continue
        reduced = reduce_jobs(jobs, market, lim, objective)
        res = solve_program(reduced, market, lim, objective)
        picks = [int(j.index[d]) for j, d in zip(reduced, res.picks)]
        t = ref_totals(jobs, market, picks)
        assert ref_feasible(jobs, lim, objective, t)
        primary = ref_primary(jobs, objective, t)
        assert (-primary if objective == "cost" else primary) == pytest.approx(best, rel=1e-6)
        assert ref_secondary(jobs, objective, t) == pytest.approx(best_second, rel=1e-6, abs=1e-9), objective


def test_spare_units_in_a_band_beyond_the_need_are_priced_exactly():
    # the only useful band starts above any quantity the jobs need: buying spare units to reach it is
    # cheaper, and the program (which drops only bands that can never pay off) must see that
    rng = np.random.default_rng(3)
    jobs = [random_job(rng, f"j{k}", 5, PRICE, target=1.0) for k in range(2)]
    for tiers in ([(40, 5.0)], [(40, 95.0)], [(8, 99.0), (40, 1.0)]):
        market = Market(PRICE, stock={("gpus", "g0"): 60}, tiers={("gpus", "g0"): tiers})
        lim = MixLimits(budget_usd=1e6)
        for objective in ("cost", "throughput"):
            best, _, _ = reference_mix(jobs, market, lim, objective)
            res = solve_program(reduce_jobs(jobs, market, lim, objective), market, lim, objective)
            assert res.objective_value == pytest.approx(best), (tiers, objective)


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


@pytest.mark.parametrize("seed", range(12))
def test_fair_levels_exact_check_and_bound_equal_brute_force(seed):
    # a level t is reachable exactly when t <= the fair optimum (brute force); the enumeration must
    # say so at every level, and the lower bounds must never rule out a reachable level
    from costopt.multijob.fair import _FairLevels

    jobs, market, lim = (random_instance if seed % 2 else larger_instance)(seed)
    best, _, _ = reference_mix(jobs, market, lim, "fair")
    fl = _FairLevels(jobs, market, lim)
    levels = np.unique(np.concatenate(fl.ratio))
    ok = fl.bound(levels)
    assert fl.highest(levels) == (np.flatnonzero(~ok.any(axis=1)).tolist() + [len(levels)])[0]
    for t, open_ in zip(levels, ok):
        reachable = bool(best is not None and t <= best)
        if reachable:
            assert open_.any(), t
        verdict, picks, _ = fl.check(float(t), open_ if open_.any() else np.ones(len(fl.options), bool))
        assert verdict is reachable, (t, best)
        if verdict:
            assert min(r[d] for r, d in zip(fl.ratio, picks)) >= t
            _assert_within(jobs, market, lim, "fair", picks)


@pytest.mark.parametrize("seed", range(8))
def test_fair_equals_brute_force_on_larger_instances_and_without_enumeration(seed, monkeypatch):
    # the enumeration path (and its tie-break by enumeration with bounds), then the CBC fallback when the
    # partial rows would be too many, against brute force over every combination
    import costopt.multijob.fair as mj_fair
    import costopt.multijob.program as mj_program

    jobs, market, lim = larger_instance(seed, n_jobs=3 + seed % 2, n_designs=12 if seed % 2 else 16)
    best, _, best_second = reference_mix(jobs, market, lim, "fair")
    monkeypatch.setattr(mj_program, "_ENUM_MAX", 0)  # the tie-break never enumerates plainly
    for rows in (mj_fair._FAIR_ROWS, 1):
        monkeypatch.setattr(mj_fair, "_FAIR_ROWS", rows)
        reduced = reduce_jobs(jobs, market, lim, "fair")
        res = solve_program(reduced, market, lim, "fair")
        if best is None:
            assert res.picks is None
            continue
        assert res.status == "Optimal" and res.gap == 0.0
        assert res.objective_value == pytest.approx(best, rel=1e-9)
        method = res.stages[0]["method"]
        if rows > 1:
            assert "0 by CBC" in method, method  # small enough: every level decided without a solver
        _assert_within(reduced, market, lim, "fair", res.picks)
        picks = np.array([int(j.index[d]) for j, d in zip(reduced, res.picks)])
        assert ref_secondary(jobs, "fair", ref_totals(jobs, market, picks)) == pytest.approx(best_second, rel=1e-9)


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
