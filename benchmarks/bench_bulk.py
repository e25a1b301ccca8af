"""Benchmark of bounded work (issue 13): prints figures; it is not a test.

    python benchmarks/bench_bulk.py [--rows 100000] [--copies 20] [--budget 1000000] [--time-limit 120]
                                    [--skip validate,calibrate,memory,mix]

1. `validate` of N measurement rows (default 100,000; target <= 10 s) as a table and as JSON, and
   `calibrate` of the same rows (target <= 60 s; its progress bar shows on a terminal's stderr). The rows
   are the shipped dataset's (costopt/data/validation/published.csv) over and over, each with its own
   measured value (x U(0.9, 1.1), seeded) and, for multi-node rows, its own node count (2-16), so the file
   has a few hundred distinct designs, as a user's sweep of runs would.
2. Peak memory of `solve`, `compare`, `report` and `export` on a catalog 20x the reference (every GPU
   cloned, benchmarks/bench_memory.py's catalog; target <= 2 GB): each command in its own process, its own
   peak resident memory (ru_maxrss) read at exit.
3. The 40-job mix (benchmarks/bench_multijob.py's bounded run): time within its limit, peak memory, gap.

Each figure is CPU seconds of the command's process and wall seconds on this machine (the machine may be
shared: CPU is the steadier figure).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory import big_catalog, run_cli, show  # noqa: E402  (the 20x catalog and the runner, one definition)

from costopt.measure.validate import VALIDATION_DIR  # noqa: E402

def make_rows(n: int, out: Path, seed: int = 13) -> None:
    with (VALIDATION_DIR / "published.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]
    rng = random.Random(seed)
    im, inodes = head.index("measured_samples_per_s"), head.index("nodes")
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for i in range(n):
            r = list(body[i % len(body)])
            r[im] = f"{float(r[im]) * rng.uniform(0.9, 1.1):.6g}"
            if int(r[inodes]) > 1:
                r[inodes] = str(rng.choice([2, 3, 4, 6, 8, 12, 16]))
            w.writerow(r)


def rows_part(n: int, tmp: Path, calibrate: bool = True) -> None:
    path = tmp / "rows.csv"
    make_rows(n, path)
    print(f"\n## {n:,} measurement rows ({path.stat().st_size / 1e6:.1f} MB; before issue 13: validate 179 s as a "
          "table, 41 s as JSON; calibrate past 300 s)")
    show("validate (table)", run_cli(["validate", str(path)], tmp / "v.txt"), "target <= 10 s")
    show("validate --format json", run_cli(["validate", str(path), "--format", "json"], tmp / "v.json"), "target <= 10 s")
    if not calibrate:
        return
    r = run_cli(["calibrate", str(path), "--format", "json"], tmp / "c.json")
    show("calibrate (fit + leave-one-source-out)", r, "target <= 60 s")
    if r["rc"] == 0:
        c = json.loads((tmp / "c.json").read_text())
        print(f"      {len(c['parameters'])} parameters fitted; rms log error {c['rms_log_error']:.4f}")


def memory_part(copies: int, budget: float, tmp: Path) -> None:
    cat = tmp / "big.toml"
    cat.write_text(big_catalog(copies))
    from costopt.hardware.catalog import REFERENCE_CATALOG, load_catalog
    from costopt.search.design_space import count_designs

    n = count_designs(load_catalog(cat), max_nodes=1024, reduce_on=("gpu", "cpu"))
    print(f"\n## Peak memory on the x{copies} catalog ({n:,} designs with no budget, GPU and CPU reduction; "
          f"target <= 2 GB each)")
    b = f"{budget:g}"
    runs = [
        ("solve --objective cost (no budget)",
         ["solve", "--model", "resnet50", "--objective", "cost", "--min-throughput", "20000", "--reduce-on", "gpu",
          "--reduce-on", "cpu", "--catalog", str(cat), "--format", "json"]),
        (f"solve --budget {b}", ["solve", "--model", "resnet50", "--budget", b, "--catalog", str(cat), "--format", "json"]),
        (f"compare x{copies} vs reference", ["compare", str(cat), str(REFERENCE_CATALOG), "--model", "resnet50", "--budget", b,
                                            "--format", "json"]),
        ("report (html)", ["report", "--model", "resnet50", "--budget", b, "--catalog", str(cat), "--out",
                           str(tmp / "report.html"), "--no-progress"]),
        ("export --format csv", ["export", "--model", "resnet50", "--budget", b, "--catalog", str(cat), "--out",
                                 str(tmp / "all.csv")]),
    ]
    for name, args in runs:
        show(name, run_cli(args), "target <= 2 GB")
    if (tmp / "all.csv").exists():
        with (tmp / "all.csv").open() as fh:
            print(f"      export table: {sum(1 for _ in fh) - 1:,} designs within the budget")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--budget", type=float, default=1_000_000.0)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: validate,calibrate,memory,mix")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print(f"costopt bounded-work benchmark (python {sys.version.split()[0]}); CPU = the command's own process")
    with tempfile.TemporaryDirectory() as tmp:
        if "validate" not in skip:
            rows_part(args.rows, Path(tmp), "calibrate" not in skip)
        if "memory" not in skip:
            memory_part(args.copies, args.budget, Path(tmp))
    if "mix" not in skip:
        from bench_multijob import bounded

        bounded(40, args.time_limit)


if __name__ == "__main__":
    main()
