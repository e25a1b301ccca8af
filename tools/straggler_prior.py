"""Print the prior of `[sync] straggler_cv` from the measured H200 step times: `python tools/straggler_prior.py`.

The straggler term (costopt/perf/timing.py) models one GPU's iteration time as t·(1 + cv·z), z ~ N(0, 1),
independent per GPU, and charges the synchronous wait cv·t·E[max of N standard normals]. Its prior is
the step-to-step spread of one GPU measured on the same machine: ../shared/data/h200/train_step.jsonl
records, per (model, precision, batch), the median, min and max of `iters` timed iterations. For n
normal draws the expected range is d2(n)·σ (d2(15) = 3.472, the control-chart constant, computed here
by quadrature rather than taken from a table), so each record gives cv ≈ (max − min) / (d2(n)·median).
The prior is the median over all records; the spread across records is printed beside it.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "h200" / "train_step.jsonl"


def expected_range(n: int, steps: int = 20001, lim: float = 9.0) -> float:
    """d2(n) = E[max − min] of n iid standard normals = ∫ 1 − Φ(x)^n − (1 − Φ(x))^n dx (trapezoid rule)."""
    h = 2 * lim / (steps - 1)
    total = 0.0
    for i in range(steps):
        x = -lim + i * h
        phi = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
        f = 1.0 - phi ** n - (1.0 - phi) ** n
        total += f * (0.5 if i in (0, steps - 1) else 1.0)
    return total * h


def main() -> int:
    if not DATA.exists():
        print(f"error: {DATA} not found (../shared beside the repository)", file=sys.stderr)
        return 2
    recs = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    cvs = []
    for r in recs:
        n = int(r["iters"])
        cvs.append((r["iteration_ms_max"] - r["iteration_ms_min"]) / (expected_range(n) * r["iteration_ms"]))
    cvs.sort()
    q = statistics.quantiles(cvs, n=4)
    print(f"records: {len(cvs)} (model, precision, batch) from {DATA.relative_to(ROOT.parent)}")
    print(f"d2({int(recs[0]['iters'])}) = {expected_range(int(recs[0]['iters'])):.4f}")
    print(f"cv per record: min {cvs[0]:.4f}, quartiles {q[0]:.4f} / {q[1]:.4f} / {q[2]:.4f}, max {cvs[-1]:.4f}")
    print(f"prior straggler_cv = median = {statistics.median(cvs):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
