"""Benchmark of the multi-job program on the reference catalog (prints figures; not a test).

    python benchmarks/bench_multijob.py [--quick] [--bounded-only] [--time-limit S] [--jobs 10,40,200]

For 1, 3 and 10 jobs, each objective and two settings of the shared limits:
  plain:   a budget and one NIC type for the fabric;
  full:    budget, power, rack units, owned inventory, a stock limit and volume tiers (examples/mix.toml's).
It prints the candidates per job (feasible designs -> within the per-design and joint limits -> after
dominance pruning), the MILP time (first solve, which proves optimality; then with the tie-break solve)
and, where the number of combinations allows, the brute-force answer over the same candidates.

Bounded work (skipped by --quick): generated N-job mixes (`generated_mix`: the 10 models in turn, each
job its own seeded target and weight, the 'full' limits scaled to N; N = 10, 40, 200 unless --jobs says)
through `solve_mix` under its default time limit (`DEFAULT_TIME_LIMIT_S`, or --time-limit), each in a
child process so its peak memory is its own: wall time, peak resident memory, status, the best answer,
the best bound proven and the gap ("stopped at the time limit ..." when the limit cut it short), and
what each stage did.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import load_catalog
from costopt.search.mix import parse_mix
from costopt.search.multijob import MixLimits, brute_force, build_jobs, market_from, reduce_jobs, solve_program

MODELS = ["resnet50", "bert_base", "gpt2", "vgg16", "inception_v3", "densenet121", "resnet101", "googlenet",
          "alexnet", "resnet152"]
TARGETS = {"resnet50": 2500, "bert_base": 2000, "gpt2": 300, "vgg16": 1000, "inception_v3": 1500, "densenet121": 1500,
           "resnet101": 1500, "googlenet": 3000, "alexnet": 5000, "resnet152": 1000}
BRUTE_MAX = 3_000_000  # combinations


def mix_dict(n_jobs: int, full: bool) -> dict:
    jobs = {}
    for k in range(n_jobs):
        m = MODELS[k % len(MODELS)]
        jobs[f"{m}" if k < len(MODELS) else f"{m}_{k}"] = {"model": m, "precision": "amp_bf16",
                                                         "min_throughput": TARGETS[m], "weight": 1.0 / TARGETS[m]}
    budget = 500_000.0 * n_jobs
    d = {"jobs": jobs, "limits": {"budget_usd": budget}}
    if full:
        d["limits"].update({"max_power_kw": 20.0 * n_jobs, "max_rack_units": 28.0 * n_jobs})
        d["inventory"] = {"gpus": {"a100-sxm-80gb": 16}, "chassis": {"sxm8-a100": 2}}
        d["stock"] = {"gpus": {"h200-sxm": 48}}
        d["discount"] = [{"gpu": "h100-sxm", "tiers": [{"from_units": 16, "unit_price_usd": 29000.0},
                                                       {"from_units": 32, "unit_price_usd": 27500.0}]}]
    return d


def generated_mix(n_jobs: int, seed: int = 26) -> dict:
    """A mix of `n_jobs` jobs as a mix-file dict: job k trains MODELS[k % 10] in amp_bf16 with its own
    target, TARGETS[model] x U(0.5, 1.5) (seeded), and weight 1 / target (so each job counts by its share of
    its target); the 'full' limits of `mix_dict` scaled to N jobs: 20 kW and 28 RU per job, owned A100s, an
    H200 stock and H100 volume tiers; budget $500k per job up to $20M (a larger budget admits every design
    up to it for every job: 200 jobs at $100M made each design space 5x the 40-job one). Jobs of one model
    share one evaluation of their design space (`build_jobs`), so the build grows with the models and
    the budget, the program with the jobs."""
    rng = np.random.default_rng(seed)
    d = mix_dict(n_jobs, True)
    d["limits"]["budget_usd"] = min(d["limits"]["budget_usd"], 20e6)
    for name, job in d["jobs"].items():
        target = float(f"{TARGETS[job['model']] * rng.uniform(0.5, 1.5):.4g}")
        job["min_throughput"], job["weight"] = target, float(f"{1.0 / target:.6g}")
    return d


def run(n_jobs: int, full: bool, objectives: list[str], cat) -> None:
    mix = parse_mix(mix_dict(n_jobs, full), f"bench-{n_jobs}-{'full' if full else 'plain'}")
    fl = mix.spec.limits
    lim = MixLimits(fl.budget_usd, fl.max_power_kw, fl.max_rack_units, fl.max_nodes, fl.one_nic_type)
    market = market_from(cat, mix)
    t0 = time.perf_counter()
    raw = build_jobs(mix, cat, market, lim)
    t_build = time.perf_counter() - t0
    print(f"\n## {n_jobs} job(s), limits '{'full' if full else 'plain'}': budget ${lim.budget_usd:,.0f}"
          + (f", {lim.max_power_kw:g} kW, {lim.max_rack_units:g} RU, inventory/stock/tiers" if full else "")
          + f", one NIC type; enumerate + timing model {t_build:.2f} s")
    for objective in objectives:
        t0 = time.perf_counter()
        jobs = reduce_jobs(raw, market, lim, objective)
        t_prune = time.perf_counter() - t0
        if objective == objectives[0]:
            print("  candidates per job (feasible -> within limits -> pruned):")
            for j in jobs:
                c = j.counts
                print(f"    {j.name:14s} {c['enumerated']:>7,} enumerated, {c['feasible']:>7,} -> "
                      f"{c['within_limits']:>6,} -> {c['after_pruning']:>6,}")
        res = solve_program(jobs, market, lim, objective)
        first = res.stages[0]["time_s"] if res.stages else 0.0
        combos = float(np.prod([len(j) for j in jobs], dtype=np.float64))
        line = (f"  {objective:10s} prune {t_prune:5.2f} s | MILP {res.status}, gap {res.gap}, first solve {first:5.2f} s, "
                f"with tie-break {res.solve_time_s:5.2f} s, {sum(len(j) for j in jobs):,} binaries, "
                f"objective {res.objective_value if res.objective_value is None else f'{res.objective_value:,.6g}'}")
        if combos <= BRUTE_MAX:
            t0 = time.perf_counter()
            best, _ = brute_force(jobs, market, lim, objective)
            tb = time.perf_counter() - t0
            same = (best is None and res.objective_value is None) or (
                best is not None and res.objective_value is not None
                and abs(best - res.objective_value) <= 1e-6 * max(abs(best), 1e-9))
            line += f" | brute force {combos:,.0f} combinations {tb:.2f} s: {best:,.6g} ({'equal' if same else 'DIFFERENT'})"
        else:
            line += f" | brute force: {combos:.1e} combinations, not run"
        print(line)
    if n_jobs == 1 and not full:
        # one job: brute force over every candidate build_jobs keeps (it prunes each job as it evaluates it)
        t0 = time.perf_counter()
        best, _ = brute_force(raw, market, lim, "throughput")
        res = solve_program(reduce_jobs(raw, market, lim, "throughput"), market, lim, "throughput")
        print(f"  brute force over all {len(raw[0]):,} candidates {time.perf_counter() - t0:.2f} s: {best:,.6g} vs "
              f"MILP {res.objective_value:,.6g}")


def bounded_child(n_jobs: int, time_limit: float) -> None:
    """In a child process: one solve_mix of a generated n-job mix; prints one JSON line of figures."""
    from costopt.core.errors import InfeasibleError
    from costopt.search.multijob import solve_mix

    mix = parse_mix(generated_mix(n_jobs), f"bench-{n_jobs}-generated")
    t0 = time.perf_counter()
    try:
        res = solve_mix(mix, objective="throughput", time_limit=time_limit,
                        progress=lambda line: print(f"    [{time.perf_counter() - t0:6.1f} s] {line}", file=sys.stderr,
                                                    flush=True))
    except InfeasibleError as exc:  # e.g. the build took its share of the limit: said, with the time it took
        print(json.dumps({"wall_s": time.perf_counter() - t0, "status": f"stopped: {exc}", "gap": None,
                          "objective": None, "bound": None, "note": "", "stages": [], "candidates": 0,
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}))
        return
    wall = time.perf_counter() - t0
    print(json.dumps({"wall_s": wall, "status": res.status, "gap": res.gap, "objective": res.objective_value,
                      "bound": res.bound, "note": res.note,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
                      "stages": [s["method"] for s in res.solver["stages"]],
                      "candidates": sum(res.solver["candidates_after_limits"])}))


def bounded(n_jobs: int, time_limit: float) -> dict:
    print(f"\n## Bounded work: {n_jobs} generated jobs ({min(n_jobs, len(MODELS))} models), limits 'full' x {n_jobs}, "
          f"objective throughput, time limit {time_limit:g} s (whole solve_mix call; progress lines below are its stderr)",
          flush=True)
    out = subprocess.run([sys.executable, __file__, "--child", str(n_jobs), str(time_limit)], capture_output=False,
                         stdout=subprocess.PIPE, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    gap = "n/a" if r["gap"] is None else f"{r['gap']:.2%}"
    obj = "n/a" if r["objective"] is None else f"{r['objective']:,.6g}"
    print(f"  wall {r['wall_s']:.1f} s (limit {time_limit:g} s: {'within' if r['wall_s'] <= time_limit else 'OVER'}), "
          f"peak memory {r['peak_rss_mb']:,.0f} MB, {r['status']}, gap {gap}, objective {obj}, "
          f"{r['candidates']:,} candidates")
    if r["note"]:
        print(f"  {r['note']}")
    for m in r["stages"]:
        print(f"  stage: {m}")
    return r


def main() -> None:
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        bounded_child(int(sys.argv[i + 1]), float(sys.argv[i + 2]))
        return
    from costopt.search.multijob import DEFAULT_TIME_LIMIT_S

    quick = "--quick" in sys.argv
    limit = float(sys.argv[sys.argv.index("--time-limit") + 1]) if "--time-limit" in sys.argv else DEFAULT_TIME_LIMIT_S
    sizes = [int(n) for n in sys.argv[sys.argv.index("--jobs") + 1].split(",")] if "--jobs" in sys.argv else [10, 40, 200]
    cat = load_catalog()
    print(f"costopt multi-job benchmark, catalog {cat.catalog.name} ({Path(cat.path).name}); "
          "times are wall-clock on this machine")
    if "--bounded-only" not in sys.argv:
        objectives = ["throughput", "fair", "cost"]
        for n in (1, 3) if quick else (1, 3, 10):
            for full in (False, True):
                run(n, full, objectives if n < 10 else ["throughput", "cost"], cat)
    if not quick:
        rows = [(n, bounded(n, limit)) for n in sizes]
        print(f"\n## Bounded work, summary (time limit {limit:g} s; before, issue 13: a 40-job mix ran past 900 s "
              "using 2.4 GB)")
        for n, r in rows:
            gap = "n/a" if r["gap"] is None else f"{r['gap']:.2%}"
            print(f"  {n:4d} jobs: {r['wall_s']:6.1f} s, {r['peak_rss_mb']:,.0f} MB, {r['status']}, gap {gap}")


if __name__ == "__main__":
    main()
