"""Benchmark: scenarios per second of `costopt sweep` on 1 and 2 workers (costopt/search/sweep.py).

Prints figures; it is not a test. The grid: 3 data-parallel models x 4 budgets x the reference catalog
x 2 limit sets (24 scenarios, each a full `solve`), and optionally (`--llm`) llama3_8b at the same
budgets. It runs the grid in this process, on 1 and 2 local worker processes and, when Dask distributed
is installed, on a LocalCluster of 1 and 2 worker processes; checks every run gives the same table.

    python benchmarks/bench_sweep.py [--llm] [--no-dask]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from costopt.search.sweep import load_sweep, run_sweep, table

GRID = """[sweep]
name = "bench"
models = [{models}]
budgets_usd = [100000, 200000, 500000, 1000000]
catalogs = ["reference-2026"]
{tokens}
[[limits]]
name = "none"
[[limits]]
name = "20 kW"
max_power_kw = 20
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", action="store_true", help="add llama3_8b (tokens 1e11) to the models")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster runs")
    args = ap.parse_args()
    models = ['"inception_v3"', '"resnet50"', '"vgg16"'] + (['"llama3_8b"'] if args.llm else [])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "bench.toml"
        p.write_text(GRID.format(models=", ".join(models), tokens="tokens = 1e11" if args.llm else ""))
        spec = load_sweep(p)
        n = len(spec.scenarios)
        print(f"{n} scenarios ({len(models)} models x 4 budgets x 1 catalog x 2 limit sets)")
        ref = None
        runs = [("in this process", dict(workers=1)), ("1 worker process", None), ("2 worker processes", dict(workers=2))]
        for label, kw in runs:
            if kw is None:  # one process beside this one: the pool's own cost, no parallelism
                from concurrent.futures import ProcessPoolExecutor

                from costopt.search.sweep import run_scenario

                t0 = time.perf_counter()
                with ProcessPoolExecutor(max_workers=1) as pool:
                    rows = [r["row"] for r in pool.map(run_scenario, [s.as_dict() for s in spec.scenarios])]
                sec = time.perf_counter() - t0
                same = rows == ref
            else:
                res = run_sweep(spec, progress=False, **kw)
                sec, rows = res.seconds, res.rows
                same = True if ref is None else rows == ref
                ref = ref or rows
            print(f"{label:24s}: {sec:6.2f} s wall, {n / sec:6.2f} scenarios/s; same table: {same}")
        if not args.no_dask:
            try:
                import distributed
            except ImportError:
                print("Dask distributed not installed: pip install 'costopt[sweep]'")
                return
            for workers in (1, 2):
                with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                              dashboard_address=None) as cl, distributed.Client(cl) as client:
                    client.run(lambda: __import__("costopt.search.engine"))  # import on the workers first
                    res = run_sweep(spec, client=client, progress=False)
                print(f"Dask, {workers} worker process{'es' if workers > 1 else '  '}: {res.seconds:6.2f} s wall, "
                      f"{res.scenarios_per_s:6.2f} scenarios/s; same table: {res.rows == ref}")
        print(table(res if not args.no_dask else run_sweep(spec, workers=1, progress=False))
              [["model", "budget_usd", "limits", "gpu", "nodes", "throughput"]].head(4).to_string(index=False))


if __name__ == "__main__":
    main()
