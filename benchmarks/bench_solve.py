"""Benchmark: designs evaluated per second and full solve time on the reference catalog.

Prints figures; it is not a test. Targets (issue 2): >= 1,000,000 designs/s through the timing model
and cost, and a full `solve` (design space + model + Pareto front + pick) under 0.3 s.

    python benchmarks/bench_solve.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import costopt
from costopt.search.api import evaluate_space
from costopt.hardware.catalog import load_catalog
from costopt.search.design_space import enumerate_designs
from costopt.perf.system import default_system
from costopt.perf.workload import load_workload


def best_of(fn, repeats):
    """(first call, best, median, result): the first call also fills the PS placement cache."""
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times[0], min(times), float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    cat = load_catalog()
    params = default_system()
    print(f"reference catalog: {len(cat.gpu)} GPUs, {len(cat.chassis)} chassis, {len(cat.nic)} NICs")
    for model in ("inception_v3", "resnet50", "vgg16", "bert_base", "resnet152"):
        w = load_workload(model)
        ts = w.tensors("pytorch")
        for max_nodes in (64, 512):
            space = enumerate_designs(cat, max_nodes=max_nodes, reduce_on=("gpu", "cpu"))
            run = lambda: evaluate_space(space, catalog=cat, workload=w, tensors=ts, params=params,  # noqa: E731
                                         precision="fp32", batch_per_gpu=w.default_batch)
            first, best, med, _ = best_of(run, args.repeats)
            print(f"{model:13s} max_nodes={max_nodes:4d}: {len(space):9,d} designs, evaluate first {first * 1e3:7.1f} ms "
                  f"({len(space) / first:10,.0f}/s), best {best * 1e3:7.1f} ms (median {med * 1e3:7.1f} ms) "
                  f"-> {len(space) / best:10,.0f} designs/s")
    for model in ("inception_v3", "resnet50", "vgg16"):
        first, best, med, res = best_of(lambda: costopt.solve(200_000, model), args.repeats)
        print(f"solve --budget 200000 --model {model:13s}: first {first * 1e3:6.1f} ms, best {best * 1e3:6.1f} ms, "
              f"median {med * 1e3:6.1f} ms, "
              f"{res.candidates_evaluated:,} candidates, Pareto front {res.solver['pareto_front_size']}")


if __name__ == "__main__":
    main()
