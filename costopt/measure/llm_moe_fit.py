"""Fit the one mixture-of-experts constant, the routed experts' grouped-GEMM share η_e ([moe] expert_gemm_share of
data/llm_defaults.toml; perf/llm/moe.py), on the shipped MoE rows (data/validation/llm_moe_training.csv), and judge it
out of sample. tools/moe_fit.py prints the tables.

Everything else stays as shipped (the dense fit of tools/llm_fit.py, made on dense rows only). η_e is picked on a grid
of 0.10-1.00 (step 0.01), minimising the median |ln(measured / predicted)| of tokens/s per GPU; a value at either end
of the grid is a warning. The rows come from one source (Megatron-Bridge's performance archive), so leave-one-source-
out cannot be run: out of sample is measured by leaving one model, one GPU or one container release out at a time
(each fold picked on the other rows).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from costopt.measure.llm_validate import LlmRow, predict_rows
from costopt.perf.llm.step import LlmParams

GRID = np.round(np.arange(0.10, 1.0001, 0.01), 2)


def release_of(notes: str) -> str:
    m = re.search(r"section '([0-9.]+) NeMo Container'", notes)
    return m.group(1) if m else "?"


def log_errors(rows: list[LlmRow], base: LlmParams) -> np.ndarray:
    """ln(measured / predicted) of every row at every grid value (rows x grid)."""
    meas = np.array([r.measured_tokens for r in rows])
    return np.stack([np.log(meas / np.array([x["predicted_tokens_per_s_per_gpu"] for x in
                                             predict_rows(rows, params=replace(base, moe_expert_gemm_share=float(v)))]))
                     for v in GRID], axis=1)


def pick(err: np.ndarray, mask: np.ndarray) -> int:
    """Grid index minimising the median |log error| of the rows in `mask`."""
    return int(np.argmin(np.median(np.abs(err[mask]), axis=0)))


def held_out(err: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, dict]:
    """Each group's log errors at the value picked on the other groups; and per group (rows, value)."""
    out = np.zeros(len(groups))
    per = {}
    for g in sorted(set(groups.tolist())):
        held = groups == g
        j = pick(err, ~held)
        out[held] = err[held, j]
        per[g] = (int(held.sum()), float(GRID[j]))
    return out, per


def abs_pct(e: np.ndarray) -> tuple[float, float, float]:
    """(median, p90 of |predicted − measured| / measured, signed median), in %, from log errors ln(meas/pred)."""
    rel = np.expm1(-np.asarray(e))
    return float(100 * np.median(np.abs(rel))), float(100 * np.percentile(np.abs(rel), 90)), float(100 * np.median(rel))
