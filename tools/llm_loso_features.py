"""Where the large-model out-of-sample error comes from: the leave-one-source-out (and leave-one-GPU-out)
residuals of costopt/data/llm_residuals.json (written by tools/llm_fit.py), joined to their shipped rows
(costopt/data/validation/llm_training.csv) and grouped by feature: interleaved pipeline (vp > 1), context
parallel (cp > 1), low precision, strategy (fsdp vs zero1 ...), framework, source and GPU generation.

    python tools/llm_loso_features.py [--sample by_source|by_gpu]

Per group: rows, median and p90 of |error| (error = measured / predicted - 1 of tokens/s per GPU) and the signed
median (+: under-predicted). Out-of-sample coverage of the 80% ranges is tools/llm_fit.py's (per source and GPU).
Reads only shipped files; prints a table, writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costopt.measure.llm_validate import LLM_DATASET, read_llm_csv  # noqa: E402
from costopt.perf.llm.ranges import LLM_RESIDUALS_PATH  # noqa: E402

GENERATION = (("a100", "Ampere"), ("h100", "Hopper"), ("h200", "Hopper"), ("b200", "Blackwell"), ("b300", "Blackwell"),
              ("gb200", "Blackwell"), ("gb300", "Blackwell"))


def _generation(gpu: str) -> str:
    return next((g for p, g in GENERATION if gpu.startswith(p)), "other")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="by_source", choices=("by_source", "by_gpu"))
    args = ap.parse_args()
    res = json.loads(Path(LLM_RESIDUALS_PATH).read_text())[args.sample]
    rows = {r.line: r for r in read_llm_csv(LLM_DATASET)}
    r = np.array([x["log_residual"] for x in res])
    feats = []
    for x in res:
        row = rows[x["line"]]
        feats.append({"all": "all", "source": x["source"], "generation": _generation(x["gpu"]),
                      "interleaved": "vp>1" if row.vp > 1 else "vp=1", "context parallel": "cp>1" if row.cp > 1 else "cp=1",
                      "precision": row.precision, "strategy": row.strategy, "framework": row.framework,
                      "pipeline": "pp>1" if row.pp > 1 else "pp=1", "checkpointing": row.ckpt})
    print(f"{args.sample}: {len(r)} rows ({LLM_RESIDUALS_PATH.name})")
    print(f"{'feature':18} {'group':14} {'rows':>5} {'median':>7} {'p90':>7} {'signed':>7}")
    for key in ("all", "source", "generation", "interleaved", "context parallel", "pipeline", "precision", "strategy",
                "framework", "checkpointing"):
        for val in sorted({f[key] for f in feats}):
            sel = np.array([f[key] == val for f in feats])
            err = np.abs(np.expm1(r[sel])) * 100
            print(f"{key:18} {val:14} {sel.sum():5d} {np.median(err):7.1f} {np.percentile(err, 90):7.1f} "
                  f"{np.median(np.expm1(r[sel])) * 100:+7.1f}")


if __name__ == "__main__":
    main()
