"""Benchmark: peak memory of `costopt validate` on a generated 1,000,000-row measurement file (issue 26,
bounded work: under 1 GB; before the streaming reader, 3.7 GB). Prints figures; it is not a test.

    python benchmarks/bench_validate_stream.py [--rows 1000000] [--formats json,table] [--keep FILE]

The rows are benchmarks/bench_bulk.py's (`make_rows`: the shipped published.csv over and over, each row
its own measured value and, for multi-node rows, its own node count). Each format runs in its own
process (`costopt validate FILE --format F`, stdout to a file), which reports its peak resident memory
(ru_maxrss of the child), CPU and wall time; the output's size is printed too. `validate` reads, predicts
and writes the rows a chunk at a time (costopt/measure/validate.py ValidationStream, STREAM_ROWS rows).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_bulk import make_rows  # noqa: E402  (one definition of the generated rows)


def run(args: list[str], out: Path) -> dict:
    """One `costopt` command in a child process: its peak RSS (MB), CPU and wall seconds, exit code."""
    env = {**os.environ, "COLUMNS": "200"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with out.open("w") as fh:
        p = subprocess.run([sys.executable, "-c", "import resource, sys\nfrom costopt.cli.main import main\n"
                            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
                            "sys.stderr.write(f'PEAK {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
                            "sys.exit(code)\n", *args], stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = [line for line in p.stderr.splitlines() if line.startswith("PEAK ")]
    return {"rc": p.returncode, "wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_mb": int(peak[-1].split()[1]) / 1e3 if peak else float("nan"), "stderr": p.stderr[-500:],
            "out_mb": out.stat().st_size / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--formats", default="json,table")
    ap.add_argument("--keep", type=Path, help="write the generated CSV here (and reuse it when it exists)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="costopt-bench-") as tmp:
        path = a.keep or Path(tmp) / "rows.csv"
        if not path.exists():
            t0 = time.perf_counter()
            make_rows(a.rows, path)
            print(f"generated {a.rows:,} rows ({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.0f} s")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
        for fmt in a.formats.split(","):
            r = run(["validate", str(path), "--format", fmt], Path(tmp) / f"out.{fmt}")
            verdict = "under 1 GB" if r["peak_mb"] < 1000 else "OVER 1 GB"
            print(f"validate --format {fmt:5s}: peak RSS {r['peak_mb']:,.0f} MB ({verdict}), CPU {r['cpu_s']:.0f} s, "
                  f"wall {r['wall_s']:.0f} s, output {r['out_mb']:,.0f} MB, exit {r['rc']}"
                  + ("" if r["rc"] == 0 else f"\n  {r['stderr']}"))
        print("before (issue 26): validate on 1,000,000 rows peaked at 3.7 GB")


if __name__ == "__main__":
    main()
