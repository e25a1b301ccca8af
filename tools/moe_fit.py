"""Fit the mixture-of-experts grouped-GEMM share η_e on the shipped MoE rows and print its errors in sample and out
of sample (costopt/measure/llm_moe_fit.py says how).

    python tools/moe_fit.py

The value found is written by hand into [moe] expert_gemm_share of costopt/data/llm_defaults.toml.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costopt.measure.llm_moe_fit import GRID, abs_pct, held_out, log_errors, pick, release_of  # noqa: E402
from costopt.measure.llm_validate import MOE_DATASET, predict_rows, read_llm_csv  # noqa: E402
from costopt.perf.llm.evaluate import default_llm_params  # noqa: E402


def _fmt(e) -> str:
    med, p90, signed = abs_pct(e)
    return f"{med:5.1f} / {p90:5.1f}% (signed median {signed:+.1f}%)"


def main() -> None:
    rows = [r for r in read_llm_csv(MOE_DATASET) if not r.skip]
    with open(MOE_DATASET, newline="", encoding="utf-8") as fh:
        notes = {i + 2: raw["notes"] for i, raw in enumerate(csv.DictReader(fh))}
    base = default_llm_params()
    err = log_errors(rows, base)
    meas = np.array([r.measured_tokens for r in rows])
    shipped = np.log(meas / np.array([x["predicted_tokens_per_s_per_gpu"] for x in predict_rows(rows, params=base)]))
    k = pick(err, np.ones(len(rows), dtype=bool))
    print(f"{len(rows)} MoE rows; fitted expert_gemm_share = {GRID[k]:.2f}"
          + ("  WARNING: at the end of its grid" if k in (0, len(GRID) - 1) else ""))
    print(f"shipped value {base.moe_expert_gemm_share:.2f}, in sample: median / p90 |error| {_fmt(shipped)}")
    print(f"at 1.00 (grouped GEMMs as dense ones): {_fmt(err[:, -1])}")
    for name, key in (("model", lambda r: r.cfg.name.split(" (")[0]), ("GPU", lambda r: r.gpu),
                      ("release", lambda r: release_of(notes.get(r.line, "")))):
        groups = np.array([key(r) for r in rows])
        out, per = held_out(err, groups)
        print(f"leave-one-{name}-out: {_fmt(out)}")
        for g, (n, v) in per.items():
            print(f"  {g:<18s} {n:3d} rows, picked on the others {v:.2f}: {_fmt(out[groups == g])}")


if __name__ == "__main__":
    main()
