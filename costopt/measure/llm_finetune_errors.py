"""Errors of the fine-tuning predictions on the published fine-tuning runs (validation/llm_finetune.csv).

Nothing is fitted on these rows: they are predicted with the pre-training efficiency (perf/llm/finetune.py's
maths on the parameters fitted on validation/llm_training.csv). Two readings per row:

    in sample      the shipped parameters, whose fit saw the same source's pre-training rows (NeMo 24.07's and
                   Megatron-Bridge's pre-training tables: the same stack and hardware)
    out of sample  the leave-one-source-out fold (data/llm_residuals.json `folds.by_source`) that held that
                   source's pre-training rows out: the fine-tuning rows' source is then unseen by the fit

A row's source is matched to the pre-training source it comes from (`SOURCE_OF`); a source with no fold is
out of sample under both readings. error = 100·(predicted − measured)/measured on tokens/s per GPU.
"""

from __future__ import annotations

import json

import numpy as np

from costopt.measure.llm_fit import fold_params
from costopt.measure.llm_validate import FINETUNE_DATASET, predict_rows, read_llm_csv
from costopt.perf.llm.ranges import LLM_RESIDUALS_PATH

# fine-tuning source id -> the pre-training source of the same document (llm_finetune_sources.md)
SOURCE_OF = {"NEMO_2407_FT": "NEMO_2407", "MBRIDGE_FT": "MBRIDGE"}


def finetune_errors(path=FINETUNE_DATASET) -> list[dict]:
    """Per row: source, model, gpu, finetune, measured and predicted tokens/s per GPU in and out of sample,
    and their errors (module docstring)."""
    rows = read_llm_csv(path)
    shipped = {r["line"]: r for r in predict_rows(rows)}
    folds = {f["held_out"]: f for f in json.loads(LLM_RESIDUALS_PATH.read_text(encoding="utf-8"))["folds"]["by_source"]}
    loso = dict(shipped)
    for src in sorted({r.source for r in rows}):
        fold = folds.get(SOURCE_OF.get(src, src))
        if fold is not None:
            mine = [r for r in rows if r.source == src]
            loso.update({r["line"]: r for r in predict_rows(mine, fold_params(fold))})
    out = []
    for r in rows:
        a, b = shipped[r.line], loso[r.line]
        out.append({"line": r.line, "source": r.source, "model": r.model, "gpu": r.gpu,
                    "finetune": r.cfg.finetune.method if r.cfg.finetune else None,
                    "measured_tokens_per_s_per_gpu": r.measured_tokens,
                    "predicted_in_sample": a.get("predicted_tokens_per_s_per_gpu"),
                    "predicted_out_of_sample": b.get("predicted_tokens_per_s_per_gpu"),
                    "error_in_sample_pct": a.get("error_pct"), "error_out_of_sample_pct": b.get("error_pct")})
    return out


def summary(recs: list[dict], key: str) -> dict:
    """Median and p90 of |error| of `key` over all rows and per fine-tune method."""
    def stats(v):
        a = np.abs(np.array(v, dtype=np.float64))
        return {"n": int(len(a)), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))} if len(a) else {}

    groups = {"all": [r[key] for r in recs if r[key] is not None]}
    for r in recs:
        if r[key] is not None:
            groups.setdefault(r["finetune"] or "pre-training", []).append(r[key])
    return {k: stats(v) for k, v in groups.items()}


__all__ = ["SOURCE_OF", "finetune_errors", "summary"]
