"""The one-number baseline the timing model must beat, per validation regime.

The baseline predicts a measured row from one scaling efficiency and nothing else:

    throughput_baseline = η × N × X₁

N = gpus_per_node × nodes, X₁ = one GPU's throughput (the row's own `single_gpu_samples_per_s`, or the zoo's
compute estimate in the cross-GPU regime). η is fitted per regime on log error, the metric `calibrate` uses:

    ln η = mean_i ln(measured_i / (N_i · X₁,i))          (least squares on ln(predicted / measured))

Leave-one-source-out (LOSO): a source's rows are predicted with η fitted on the *other* sources' rows of the
same regime only. A regime that only one source measures has no LOSO baseline (NaN): nothing else informs it.
`fit_mask` names the rows η may be fitted on (the rows `calibrate` fits on, so that model and baseline learn
from the same rows); every row of a regime is predicted.

Regimes (rows with N >= 2; `regime_of`):
- `single node`: nodes = 1 (intra-node PS or all-reduce);
- `multi-node PS`: nodes > 1, strategy ps;
- `multi-node all-reduce`: nodes > 1, strategy ring or hierarchical.
The fourth regime of the accuracy tables, cross-GPU, is the same rows predicted without their 1-GPU figure
(the zoo's compute for that GPU instead): it is a choice of X₁, not a subset of rows (tools/accuracy_table.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

REGIMES = ("single node", "multi-node PS", "multi-node all-reduce")


def regime_of(frame: pd.DataFrame) -> np.ndarray:
    """Regime name per row ('' for 1-GPU rows, which no regime scores)."""
    nodes = frame["nodes"].astype(int).to_numpy()
    n = frame["gpus_per_node"].astype(int).to_numpy() * nodes
    strategy = frame["strategy"].astype(str).to_numpy()
    out = np.full(len(frame), "", dtype=object)
    out[(n >= 2) & (nodes == 1)] = REGIMES[0]
    out[(nodes > 1) & (strategy == "ps")] = REGIMES[1]
    out[(nodes > 1) & np.isin(strategy, ("ring", "hierarchical"))] = REGIMES[2]
    return out


def fit_eta(measured: np.ndarray, n_gpus: np.ndarray, one_gpu: np.ndarray) -> float:
    """exp(mean ln(measured / (N · X₁))); NaN when there are no rows."""
    m = np.asarray(measured, float)
    if len(m) == 0:
        return float("nan")
    return float(np.exp(np.mean(np.log(m / (np.asarray(n_gpus, float) * np.asarray(one_gpu, float))))))


def fit_rows(frame: pd.DataFrame) -> np.ndarray:
    """Rows `calibrate` fits on by default: not an assumed network speed, not a stated-efficiency row."""
    def col(name: str) -> np.ndarray:
        return (frame[name].fillna("").astype(str).to_numpy() if name in frame
                else np.full(len(frame), "", dtype=object))
    return (col("nic_basis") != "assumed") & (col("measured_basis") != "efficiency")


def baseline_predictions(frame: pd.DataFrame, one_gpu: np.ndarray | None = None,
                         fit_mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(in-sample, leave-one-source-out) baseline predictions per row; NaN outside the regimes.

    `one_gpu`: X₁ per row (default: the row's `single_gpu_samples_per_s`). `fit_mask`: rows η may be fitted
    on (default all).
    """
    x1 = (frame["single_gpu_samples_per_s"].astype(float).to_numpy() if one_gpu is None
          else np.asarray(one_gpu, float))
    n = (frame["gpus_per_node"].astype(int) * frame["nodes"].astype(int)).to_numpy().astype(float)
    measured = frame["measured_samples_per_s"].astype(float).to_numpy()
    source = frame["source"].astype(str).to_numpy()
    regime = regime_of(frame)
    ins = np.full(len(frame), np.nan)
    loso = np.full(len(frame), np.nan)
    usable = np.isfinite(x1) & (x1 > 0)
    fit_ok = np.ones(len(frame), bool) if fit_mask is None else np.asarray(fit_mask, bool)
    for name in REGIMES:
        rows = (regime == name) & usable
        fitted = rows & fit_ok
        if not fitted.any():
            continue
        eta = fit_eta(measured[fitted], n[fitted], x1[fitted])
        ins[rows] = eta * n[rows] * x1[rows]
        for s in np.unique(source[rows]):
            test = rows & (source == s)
            train = fitted & (source != s)
            if train.any():
                loso[test] = fit_eta(measured[train], n[train], x1[train]) * n[test] * x1[test]
    return ins, loso


def error_pct(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(predicted − measured) / measured × 100."""
    m = np.asarray(measured, float)
    return (np.asarray(predicted, float) - m) / m * 100.0


__all__ = ["REGIMES", "regime_of", "fit_eta", "fit_rows", "baseline_predictions", "error_pct"]
