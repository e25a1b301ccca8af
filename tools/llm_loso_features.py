"""Where the large-model out-of-sample error comes from: the leave-one-source-out (and leave-one-GPU-out)
residuals of costopt/data/llm_residuals.json (written by tools/llm_fit.py), joined to their shipped rows
(costopt/data/validation/llm_training.csv) and grouped by feature: interleaved pipeline (vp > 1), context
parallel (cp > 1), low precision, strategy (fsdp vs zero1 ...), framework, source and GPU generation.

    python tools/llm_loso_features.py [--sample by_source|by_gpu]

Per group: rows, median and p90 of |error| (error = measured / predicted - 1 of tokens/s per GPU) and the signed
median (+: under-predicted). Then the out-of-sample coverage of the 80% ranges per GPU generation (the issue's
70-90% target), four ways:
  - leave-one-source-out, plain: each source's rows against the range from the other sources' residuals;
  - leave-one-source-out, as printed: each source's rows against the range the product prints once that source's
    rows are removed from the residual file (`printed_inside`): a GPU, precision or framework that only this
    source ran is then one the product has no run of, and widens the range as it would for a buyer;
  - leave-one-GPU-out, plain: each GPU's rows against the range from the other GPUs' residuals;
  - leave-one-GPU-out, as printed: each GPU's rows against the range the product prints for a GPU with no
    published run (costopt/perf/llm/ranges.py `bounds` on the residual file with that GPU's rows removed: both
    samples' quantiles and the between-GPU widening).
The as-printed columns leave out the MFU cap, so they are upper bounds on coverage.
Per source and per GPU coverage is tools/llm_fit.py's. Reads only shipped files; prints tables, writes nothing
(the as-printed ways write a temporary copy of the residual file per group, removed afterwards).
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
from costopt.perf.llm.ranges import LLM_RESIDUALS_PATH, SAMPLES, bounds, group_coverage  # noqa: E402

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
    print()
    print(generation_coverage())


GROUP_FIELD = {"by_source": "source", "by_gpu": "gpu"}  # what each residual sample holds out


def printed_inside(data: dict, sample: str, tmp: Path) -> np.ndarray:
    """Per row of `sample` (by_source or by_gpu): inside the range the product would print for it with its whole group
    (its GPU or its source) absent from the residual file: costopt/perf/llm/ranges.py `bounds` on a copy of the
    file without the group's rows in either sample, with the row's GPU, precision and framework, so every one
    of them that the other groups never ran widens the range as it would for a buyer (the MFU cap left out)."""
    field = GROUP_FIELD[sample]
    rows = data[sample]
    r = np.array([x["log_residual"] for x in rows])
    inside = np.zeros(len(r), dtype=bool)
    for g in sorted({x[field] for x in rows}):
        held = dict(data, **{s: [x for x in data[s] if x[field] != g] for s in SAMPLES})
        path = tmp / f"without-{field}-{g}.json"
        path.write_text(json.dumps(held))
        by_kind: dict[tuple, list[int]] = {}
        for i, x in enumerate(rows):
            if x[field] == g:
                by_kind.setdefault((x["gpu"], x["precision"], x["framework"]), []).append(i)
        for (gpu, precision, framework), idx in sorted(by_kind.items()):
            n = len(idx)
            rng = bounds(np.ones(n), np.zeros(n), np.array([gpu] * n), np.ones(n), path=path, precision=precision,
                         framework=framework)
            inside[idx] = (np.exp(r[idx]) >= rng.low) & (np.exp(r[idx]) <= rng.high)
    return inside


def generation_coverage() -> str:
    """The coverage table per GPU generation (module docstring)."""
    import tempfile

    data = json.loads(Path(LLM_RESIDUALS_PATH).read_text())
    resid = {s: np.array([x["log_residual"] for x in data[s]]) for s in SAMPLES}
    gens = {s: [_generation(x["gpu"]) for x in data[s]] for s in SAMPLES}
    cols = {s: (group_coverage(resid[s], np.array([x[field] for x in data[s]])), gens[s])
            for s, field in GROUP_FIELD.items()}
    with tempfile.TemporaryDirectory() as tmp:
        cols |= {f"printed_{s}": (printed_inside(data, s, Path(tmp)), gens[s]) for s in GROUP_FIELD}
    lines = ["80% range coverage out of sample per GPU generation (target 70-90%); plain: the group's range from the "
             "other groups' residuals; as printed: the range the product prints with the group absent",
             f"{'generation':12} {'rows':>5} {'source out, plain':>18} {'as printed':>11} {'GPU out, plain':>15} "
             f"{'as printed':>11}"]
    for gen in ("Ampere", "Hopper", "Blackwell", "all"):
        cells = []
        for key in ("by_source", "printed_by_source", "by_gpu", "printed_by_gpu"):
            inside, g = cols[key]
            sel = np.array([gen in ("all", x) for x in g])
            cells.append(f"{inside[sel].mean() * 100:.1f}%")
        lines.append(f"{gen:12} {int(sel.sum()):5d} {cells[0]:>18} {cells[1]:>11} {cells[2]:>15} {cells[3]:>11}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
