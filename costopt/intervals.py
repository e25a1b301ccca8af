"""80% ranges on predicted throughput, from leave-one-source-out residuals.

For every shipped measurement row i, r_i = ln(measured_i / predicted_i) where predicted_i comes from
parameters fitted WITHOUT row i's source (leave-one-source-out, `costopt.calibrate.loso`): the error a
prediction makes on a system nobody fitted on. Per communication stack s (costopt/stacks.py) with at
least MIN_ROWS such residuals, and over all rows otherwise:

    q10_s, q90_s = the 10th and 90th percentiles of r over the rows of s
    low  = τ · exp(min(q10_s, 0))          high = min(τ · exp(max(q90_s, 0)), τ_perfect)

τ is the point prediction, τ_perfect = N · b / t_compute (no cluster beats perfect scaling of its own
GPU). The min/max with 0 keep low ≤ τ ≤ high even when a stack's residuals all lie on one side of 0.
`tools/fit_defaults.py` writes the ratios exp(q10), exp(q90) into `system_defaults.toml` [interval]
(`<stack>_p10_ratio`, `<stack>_p90_ratio`, `<stack>_rows`, `<stack>_basis`).

Coverage check (`coverage`): the range of source k's rows is built from the residuals of the OTHER
sources only, so the share of rows inside their range is itself out of sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .stacks import STACKS
from .system import fit_record

MIN_ROWS = 20  # fewer residuals than this for a stack: its range comes from all stacks' rows
LOW_Q, HIGH_Q = 10.0, 90.0


def _ratios(r: np.ndarray) -> tuple[float, float]:
    return float(np.exp(np.percentile(r, LOW_Q))), float(np.exp(np.percentile(r, HIGH_Q)))


def quantile_table(log_ratio: np.ndarray, stack: np.ndarray, min_rows: int = MIN_ROWS) -> dict[str, dict[str, Any]]:
    """Per stack name: p10_ratio, p90_ratio, rows (residuals of that stack) and basis ("stack" or "all rows")."""
    r = np.asarray(log_ratio, dtype=np.float64)
    st = np.asarray(stack)
    ok = np.isfinite(r)
    pooled = _ratios(r[ok]) if ok.any() else (1.0, 1.0)
    out: dict[str, dict[str, Any]] = {}
    for name in STACKS:
        mine = ok & (st == name)
        n = int(mine.sum())
        if n >= min_rows:
            lo, hi = _ratios(r[mine])
            basis = "stack"
        else:
            lo, hi = pooled
            basis = "all rows"
        out[name] = {"p10_ratio": lo, "p90_ratio": hi, "rows": n, "basis": basis}
    return out


def coverage(log_ratio: np.ndarray, stack: np.ndarray, source: np.ndarray, min_rows: int = MIN_ROWS) -> np.ndarray:
    """Per row: True when measured lies inside the range built from the other sources' residuals."""
    r = np.asarray(log_ratio, dtype=np.float64)
    src = np.asarray(source)
    st = np.asarray(stack)
    inside = np.zeros(len(r), dtype=bool)
    for s in sorted(set(src.tolist())):
        mine = src == s
        table = quantile_table(np.where(mine, np.nan, r), st, min_rows)
        lo = np.log(np.array([table[x]["p10_ratio"] for x in st[mine]]))
        hi = np.log(np.array([table[x]["p90_ratio"] for x in st[mine]]))
        rr = r[mine]
        inside[mine] = (rr >= np.minimum(lo, 0.0)) & (rr <= np.maximum(hi, 0.0))
    return inside


def shipped_table() -> dict[str, tuple[float, float]]:
    """(p10_ratio, p90_ratio) per stack from the shipped defaults' [interval]; (1, 1) where absent."""
    rec = fit_record()["interval"]
    return {s: (float(rec.get(f"{s}_p10_ratio", 1.0)), float(rec.get(f"{s}_p90_ratio", 1.0))) for s in STACKS}


def bounds(throughput: np.ndarray, stack_idx: np.ndarray, perfect: np.ndarray | None = None,
           table: dict[str, tuple[float, float]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per design: the stack's 80% range around `throughput`, capped at perfect scaling."""
    t = shipped_table() if table is None else table
    lo_r = np.array([min(t[s][0], 1.0) for s in STACKS])[np.asarray(stack_idx, dtype=np.int64)]
    hi_r = np.array([max(t[s][1], 1.0) for s in STACKS])[np.asarray(stack_idx, dtype=np.int64)]
    thr = np.asarray(throughput, dtype=np.float64)
    high = thr * hi_r
    if perfect is not None:
        high = np.minimum(high, np.maximum(np.asarray(perfect, dtype=np.float64), thr))
    return thr * lo_r, high


__all__ = ["quantile_table", "coverage", "shipped_table", "bounds", "MIN_ROWS"]
