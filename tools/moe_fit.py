"""Fit the mixture-of-experts grouped-GEMM share η_e on the shipped MoE rows and print its errors in sample and out
of sample (costopt/measure/llm_moe_fit.py says how).

    python tools/moe_fit.py [--check]

The value found is written by hand into [moe] expert_gemm_share of costopt/data/llm_defaults.toml. The tool writes
costopt/data/llm_moe_residuals.json (`--check`: compares instead): each MoE row's ln(measured / predicted) with its
model held out of the pick, the sample a mixture-of-experts design's 80% range comes from (perf/llm/ranges.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from shipped_file import check_or_write  # noqa: E402
from costopt.perf.llm.ranges import LLM_MOE_RESIDUALS_PATH  # noqa: E402

from costopt.measure.llm_moe_fit import GRID, abs_pct, held_out, log_errors, pick, release_of  # noqa: E402
from costopt.measure.llm_validate import MOE_DATASET, predict_rows, read_llm_csv  # noqa: E402
from costopt.perf.llm.evaluate import default_llm_params  # noqa: E402


def _fmt(e) -> str:
    med, p90, signed = abs_pct(e)
    return f"{med:5.1f} / {p90:5.1f}% (signed median {signed:+.1f}%)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the residual file with a fresh build, do not write")
    a = ap.parse_args()
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
        if name == "model":
            by_model = [{"line": r.line, "model": str(g), "gpu": r.gpu, "log_residual": round(float(e), 6)}
                        for r, g, e in zip(rows, groups, out)]
    data = {"built_by": "tools/moe_fit.py", "dataset": f"costopt/data/validation/{MOE_DATASET.name}",
            "description": ("ln(measured / predicted) tokens/s per GPU of each mixture-of-experts row, its model left out "
                            "of the pick of expert_gemm_share (leave-one-model-out); the rows are one source "
                            "(Megatron-Bridge's performance archive)"),
            "expert_gemm_share": float(base.moe_expert_gemm_share), "models": sorted(set(x["model"] for x in by_model)),
            "by_model": by_model}
    check_or_write(LLM_MOE_RESIDUALS_PATH, json.dumps(data, indent=1) + "\n", a.check)


if __name__ == "__main__":
    main()
