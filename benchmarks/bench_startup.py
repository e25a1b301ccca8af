"""Benchmark: CPU time of the headline command against `python -c "import numpy"`, in one run.

Prints figures; it is not a test. Target (issue 13): the headline

    costopt solve --budget 200000 --model inception_v3

in at most 0.35 s of CPU (user + system, the process and its children). The numpy import is printed
beside it because CPU time on a shared machine moves with its load: the ratio travels better than the
seconds. Printed:

- the first run on a machine (an empty validated-catalog cache: the catalog is validated, which imports
  pydantic) and the normal repeated run (the catalog comes from the cache, costopt/hardware/validated_cache.py),
  each interleaved with the numpy import;
- the numpy import also with one BLAS thread, as the command line runs it (costopt/cli/main.py);
- `costopt --version` and `costopt solve --help`;
- with `--against DIR` (a checkout of another commit, e.g. main before a change): whether the headline
  prints the same bytes there and here (table, JSON and CSV); exit code 1 when not;
- the solve's own work on the largest reference space (1.76 M designs) for the fast paths of issue 13
  against the multi-key sorts they replace (written here, as references).

The package's modules are byte-compiled first (as an installed package is), so no run pays for
compiling them (PYTHONDONTWRITEBYTECODE would otherwise make every run compile them again).

    python benchmarks/bench_startup.py [--repeats 7] [--against DIR]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["solve", "--budget", "200000", "--model", "inception_v3"]
HEADLINE = [sys.executable, "-m", "costopt.cli", *ARGS]
NUMPY = [sys.executable, "-c", "import numpy"]
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1"}  # what the command line asks for (costopt/cli/main.py)
VERSION = [sys.executable, "-m", "costopt.cli", "--version"]
SOLVE_HELP = [sys.executable, "-m", "costopt.cli", "solve", "--help"]


def _env(tree: Path, cache: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "COSTOPT_CACHE_DIR": cache, "COLUMNS": "120"}


def child_cpu(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> float:
    """User + system CPU seconds of one run of `cmd` (and whatever it starts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _line(label: str, xs: list[float], note: str = "") -> str:
    return f"{label:58s} CPU min {min(xs):.3f} s, median {statistics.median(xs):.3f} s{note}"


def same_bytes(other: Path, cache: str) -> bool:
    """Whether the headline prints the same bytes (stdout, stderr, exit code) from `other` and from here."""
    ok = True
    for fmt in ([], ["--format", "json"], ["--format", "csv"]):
        cmd = [sys.executable, "-m", "costopt.cli", *ARGS, *fmt]
        runs = [subprocess.run(cmd, capture_output=True, env=_env(tree, cache), cwd=tree) for tree in (other, ROOT)]
        a, b = runs
        same = (a.stdout, a.stderr, a.returncode) == (b.stdout, b.stderr, b.returncode)
        print(f"  {' '.join(['costopt', *ARGS, *fmt])}: {'identical' if same else 'DIFFERENT'} "
              f"({len(runs[1].stdout):,} bytes)")
        ok &= same
    return ok


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
    ap.add_argument("--against", type=Path, help="a checkout of another commit: compare the headline's bytes")
    ap.add_argument("--startup-only", action="store_true", help="skip the fast paths on 1.76 M designs")
    args = ap.parse_args()
    compileall.compile_dir(ROOT / "costopt", quiet=1)
    with tempfile.TemporaryDirectory(prefix="costopt-bench-") as tmp:
        warm = str(Path(tmp) / "warm")
        env = _env(ROOT, warm)
        child_cpu(HEADLINE, env)  # warms the file cache and the validated-catalog cache
        cold, head, nump, nump1, version, helps = [], [], [], [], [], []
        for i in range(args.repeats):  # interleaved, so all see the same machine load
            cold.append(child_cpu(HEADLINE, _env(ROOT, str(Path(tmp) / f"cold{i}"))))
            head.append(child_cpu(HEADLINE, env))
            nump.append(child_cpu(NUMPY, env))
            nump1.append(child_cpu(NUMPY, {**env, **ONE_THREAD}))
            version.append(child_cpu(VERSION, env))
            helps.append(child_cpu(SOLVE_HELP, env))
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}")
        print(_line("headline, repeated use (catalog from the cache)", head, " (target <= 0.35 s)"))
        print(_line("headline, first run (empty cache: validates)", cold))
        print(_line('`python -c "import numpy"`', nump))
        print(_line('the same with OPENBLAS_NUM_THREADS=1', nump1, " (as the command line runs)"))
        print(f"headline / numpy import: {statistics.median(head) / statistics.median(nump):.2f}x repeated, "
              f"{statistics.median(cold) / statistics.median(nump):.2f}x first run (medians)")
        print(_line("`costopt --version`", version))
        print(_line("`costopt solve --help`", helps))
        if args.against is not None:
            print(f"\nheadline output, {args.against} vs {ROOT}:")
            if not same_bytes(args.against.resolve(), warm):
                sys.exit(1)
    if args.startup_only:
        return

    # fast paths on the largest reference space, against the sorts they replace
    import costopt
    from costopt.search import api
    from costopt.hardware.catalog import load_catalog
    from costopt.search.design_space import enumerate_designs
    from costopt.search.solver import pareto_front

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
