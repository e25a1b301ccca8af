"""Benchmark: CPU time of the headline command against `python -c "import numpy"`, in one run.

Prints figures; it is not a test. Target (issue 13): the headline

    costopt solve --budget 200000 --model inception_v3

in at most 0.35 s of CPU (user + system, the process and its children). The numpy import is printed
beside it because CPU time on a shared machine moves with its load: the ratio travels better than the
seconds. Also prints the solve's own work on the largest reference space (1.76 M designs) for the
fast paths of issue 13 against the multi-key sorts they replace (written here, as references).

    python benchmarks/bench_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HEADLINE = [sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model", "inception_v3"]
NUMPY = [sys.executable, "-c", "import numpy"]


def child_cpu(cmd: list[str]) -> float:
    """User + system CPU seconds of one run of `cmd` (and whatever it starts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_of(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    child_cpu(HEADLINE)  # warm the file cache and the bytecode
    head, nump = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        head.append(child_cpu(HEADLINE))
        nump.append(child_cpu(NUMPY))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"headline `costopt solve --budget 200000 --model inception_v3`: CPU min {min(head):.3f} s, "
          f"median {statistics.median(head):.3f} s (target <= 0.35 s)")
    print(f"`python -c \"import numpy\"`:                                  CPU min {min(nump):.3f} s, "
          f"median {statistics.median(nump):.3f} s")
    print(f"headline / numpy import: {statistics.median(head) / statistics.median(nump):.2f}x (medians)")

    # fast paths on the largest reference space, against the sorts they replace
    import costopt
    from costopt import api
    from costopt.catalog import load_catalog
    from costopt.design_space import enumerate_designs
    from costopt.solver import pareto_front

    cat = load_catalog()
    space = enumerate_designs(cat, max_nodes=1024)
    rng = np.random.default_rng(0)
    cost = rng.integers(1, 10**6, len(space)).astype(float)
    thr = rng.integers(1, 10**5, len(space)).astype(float)
    print(f"\nreference catalog, max 1024 nodes: {len(space):,} designs")

    def old_rank():
        r = np.empty(len(space), dtype=np.int64)
        gpu_rank = np.argsort(np.argsort([g.id for g in space.gpus], kind="stable"))
        ch_rank = np.argsort(np.argsort([c.id for c in space.chassis], kind="stable"))
        nic_rank = np.concatenate([np.argsort(np.argsort([n.id for n in space.nics], kind="stable")) + 1, [0]])
        r[np.lexsort((space.reduce_on, space.strategy, space.nics_per_node, nic_rank[space.nic_idx], space.nodes,
                      ch_rank[space.chassis_idx], space.gpus_per_node, gpu_rank[space.gpu_idx]))] = np.arange(len(space))
        return r

    rank = space.order_rank()
    fam = api._family(space, np.arange(len(space)))

    def old_front():
        order = np.lexsort((rank, -thr, cost))
        t = thr[order]
        return order[t > np.concatenate([[-np.inf], np.maximum.accumulate(t)[:-1]])]

    def old_families():
        order = np.lexsort((rank, cost, -thr, fam))
        first = np.ones(len(order), dtype=bool)
        first[1:] = fam[order][1:] != fam[order][:-1]
        return order[first]

    for name, old, new in (
        ("design order (8-key lexsort -> one integer key)", old_rank, space.order_rank),
        ("Pareto front (3-key lexsort -> one sort + maximum.reduceat)", old_front, lambda: pareto_front(cost, thr, rank)),
        ("each family's best (4-key lexsort -> one sort + reduceat)", old_families,
         lambda: api.best_per_group(fam, thr, cost, rank)),
    ):
        o, n = best_of(old, 3)[0], best_of(new, 3)[0]
        print(f"  {name:62s} {o * 1e3:7.1f} ms -> {n * 1e3:7.1f} ms")
    t0 = time.process_time()
    res = costopt.solve(None, "resnet50", objective="cost", min_throughput=20000)
    print(f"  solve --objective cost --min-throughput 20000 --model resnet50: {res.candidates_evaluated:,} designs, "
          f"{time.process_time() - t0:.2f} s CPU")


if __name__ == "__main__":
    main()
