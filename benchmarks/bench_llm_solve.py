"""Benchmark: the large-model layout search (`solve --budget 5000000 --model llama3_70b --tokens 1e11`).

Prints figures; it is not a test. It times the command `costopt solve --budget 5000000 --model llama3_70b
--tokens 1e12` as a user runs it (process CPU, user + system, startup included: the target is 2 s), the whole
`solve_llm` call (CPU and wall), the layout
search alone on the node grid (the space before search/llm_nodes.py), the same search done
the plain way (every design x layout pair timed in chunks of 400,000, the search before the two-pass
pruning), and the node search over every whole node count against timing every node count; it checks
that both choose the same layout for every design, the same pick, and that the JSON of the solve is the
same byte for byte.

    python benchmarks/bench_llm_solve.py [--repeats 3] [--skip-plain] [--report]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from costopt.hardware.catalog import load_catalog
from costopt.search.design_space import enumerate_designs
from costopt.core.files import json_safe
from costopt.search.llm_search import DEFAULT_MAX_NODES, solve_llm
from costopt.perf.llm.arch import load_llm_model
from costopt.hardware.cost import evaluate_costs, within_budget
from costopt.search.llm_nodes import search_node_counts
from costopt.search.solver import best_on_front
from costopt.perf.llm.evaluate import (NODE_GRID, Layout, all_layouts, best_layout_per_design, default_global_batch,
                                  evaluate_layouts)

FIELDS = ("strategy", "tp", "pp", "micro_batch", "ckpt")


def plain_search(cfg, space, layouts, gb, chunk_elements=400_000):
    """Every (design, layout) pair timed, layout-major in chunks; per design the first of the fastest."""
    n, n_lay = len(space), len(layouts.tp)
    best_thr, best_k = np.full(n, -1.0), np.zeros(n, dtype=np.int64)
    per = max(1, chunk_elements // n)
    for start in range(0, n_lay, per):
        ks = np.arange(start, min(n_lay, start + per))
        design, k = np.tile(np.arange(n), len(ks)), np.repeat(ks, n)
        ev = evaluate_layouts(cfg, space.take(design), Layout(*(getattr(layouts, f)[k] for f in FIELDS)),
                              precision="amp_bf16", global_batch=gb)
        thr = np.where(ev.fits, ev.timing.tokens_per_s, -1.0).reshape(len(ks), n)
        j = np.argmax(thr, axis=0)
        top = thr[j, np.arange(n)]
        better = top > best_thr
        best_thr, best_k = np.where(better, top, best_thr), np.where(better, ks[j], best_k)
    return best_k


def timed(fn, repeats):
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


COMMAND = ["solve", "--budget", "5000000", "--model", "llama3_70b", "--tokens", "1e12"]


def command_cpu(repeats: int) -> list[float]:
    """Process CPU seconds (user + system, interpreter start and imports included) of `costopt solve ...`."""
    out = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "costopt", *COMMAND], stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-plain", action="store_true", help="do not run the plain search (about 8 s CPU)")
    ap.add_argument("--report", action="store_true", help="also time the large-model report (search, memory grid, "
                    "four plots)")
    args = ap.parse_args()
    cat = load_catalog()
    cfg = load_llm_model("llama3_70b")
    gb = default_global_batch(cfg)
    every = enumerate_designs(cat, max_nodes=DEFAULT_MAX_NODES, strategies=("ring",), node_budget_usd=5e6)
    space = every.take(np.flatnonzero(np.isin(every.nodes, NODE_GRID)))
    layouts = all_layouts()
    pairs = len(space) * len(layouts.tp)
    print(f"llama3_70b, budget $5,000,000: {len(space):,} hardware designs x {len(layouts.tp):,} layouts = {pairs:,} pairs")
    cpus = command_cpu(args.repeats)
    print(f"costopt {' '.join(COMMAND)}: process CPU (user + system, startup included) median "
          f"{statistics.median(cpus):.2f} s, min {min(cpus):.2f} s of {len(cpus)} (target 2 s)")
    wall, cpu, res = timed(lambda: solve_llm(5e6, "llama3_70b", tokens=1e11, catalog=cat), args.repeats)
    print(f"solve_llm (whole solve, catalog loaded): wall {wall:6.2f} s, CPU {cpu:6.2f} s (best of {args.repeats})")
    wall, cpu, ev = timed(lambda: best_layout_per_design(cfg, space, precision="amp_bf16", global_batch=gb,
                                                         layouts=layouts), args.repeats)
    print(f"layout search, two-pass:                 wall {wall:6.2f} s, CPU {cpu:6.2f} s, "
          f"{pairs / cpu:12,.0f} pairs/s of CPU")
    if not args.skip_plain:
        wall, cpu, best_k = timed(lambda: plain_search(cfg, space, layouts, gb), 1)
        print(f"layout search, every pair timed:         wall {wall:6.2f} s, CPU {cpu:6.2f} s, "
              f"{pairs / cpu:12,.0f} pairs/s of CPU")
        same = all(np.array_equal(getattr(ev.layout, f), getattr(layouts, f)[best_k]) for f in FIELDS)
        print(f"same layout chosen for every design: {same}")
    costs = evaluate_costs(every, cat.site, facility=cat.facility)
    adm = costs.buildable & within_budget(costs, 5e6)
    wall, cpu, nodes = timed(lambda: search_node_counts(cfg, every, costs.cost_usd, adm, every.gpu_idx,
                                                        objective="throughput", precision="amp_bf16",
                                                        global_batch=gb, layouts=layouts), args.repeats)
    print(f"every whole node count: {len(every):,} designs; pass 1 (each family's two largest counts) "
          f"{nodes.timed_first:,}, pass 2 {len(nodes.keep) - nodes.timed_first:,}, skipped by the bound "
          f"{nodes.skipped:,}; wall {wall:6.2f} s, CPU {cpu:6.2f} s")
    if not args.skip_plain:
        wall, cpu, full = timed(lambda: best_layout_per_design(cfg, every, precision="amp_bf16", global_batch=gb,
                                                               layouts=layouts), 1)
        print(f"every whole node count, all timed:      wall {wall:6.2f} s, CPU {cpu:6.2f} s")
        rank = every.order_key()
        thr = np.where(full.fits & adm, full.timing.tokens_per_s, np.nan)
        sel = np.flatnonzero(np.isfinite(thr))
        j, _ = best_on_front("throughput", costs.cost_usd[sel], thr[sel], rank[sel], 5e6)
        k = nodes.keep[nodes.ev.fits & adm[nodes.keep]]
        t2 = nodes.ev.timing.tokens_per_s[np.searchsorted(nodes.keep, k)]
        j2, _ = best_on_front("throughput", costs.cost_usd[k], t2, rank[k], 5e6)
        print("same pick as timing every node count:", int(sel[j]) == int(k[j2]))
    again = solve_llm(5e6, "llama3_70b", tokens=1e11, catalog=cat)
    print("solve JSON byte-identical run to run:",
          json.dumps(json_safe(res), sort_keys=True) == json.dumps(json_safe(again), sort_keys=True))
    if args.report:
        from costopt.purchase.llm_report import build_llm_report

        wall, cpu, _ = timed(lambda: build_llm_report("llama3_70b", 5e6, cat, tokens=1e11, progress=False), 1)
        print(f"report (search, memory grid, plots):     wall {wall:6.2f} s, CPU {cpu:6.2f} s")
    b = res["best"]
    print(f"best: {b['total_gpus']} x {b['gpu']} {b['strategy']} tp{b['tp']} pp{b['pp']} mb{b['micro_batch']}, "
          f"{b['tokens_per_s']:,.0f} tokens/s, ${b['cost_usd']:,.0f}")


if __name__ == "__main__":
    main()
