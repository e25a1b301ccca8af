"""Fit the large-model compute parameters on measured rows, and judge them leave-one-source-out.

Fitted, two numbers shared by every GPU and row:
  η     `matmul_share_of_mamf`: the share of a GPU's measured maximum achievable matmul rate (MAMF,
        data/llm_defaults.toml, from single-GPU matmul measurements) that a training step's weight
        matmuls reach, e_mm = η·MAMF(gpu). How the GPUs differ comes from the MAMF table, not from
        the LLM rows, so a GPU with no LLM row (H100 when llm-foundry is held out) is predicted from
        the others' η and its own MAMF.
  c_bw  element-wise bytes per token per layer per hidden unit.
Everything else (attention fractions, unfused-attention and optimizer bytes, links, overlap, memory) is a
sourced or counted figure and stays at its default. Loss: Σ huber(ln(predicted/measured)) over rows with
a measured tokens/s per GPU, with a weak pull toward each prior (η 0.85: transformer GEMMs run near but
below the best shape; c_bw 68: Korthikanti et al.'s 34 bytes stored per token, layer and hidden unit,
written once and read once). Minimised by cyclic golden-section search on each parameter within its
bounds (two parameters: no general optimiser needed).

Leave-one-source-out: for each source, fit on the other sources' rows and predict the held-out ones.
Leave-one-GPU-out: the same with the rows of one GPU held out (what a GPU with no published run meets:
η fitted on the other GPUs' runs, its own MAMF). `leave_one_group_out` does both; each fold's fitted
values are returned with it (tools/llm_fit.py records them beside the residuals).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from costopt.hardware.catalog import load_catalog
from costopt.perf.llm.evaluate import default_llm_params
from costopt.perf.llm.step import LlmParams
from costopt.measure.llm_validate import LlmRow, predict_rows

PRIOR_SHARE_OF_MAMF = 0.85
PRIOR_ELEMENTWISE = 68.0
BOUNDS = {"share": (0.2, 1.0), "elementwise": (0.0, 600.0)}
PRIOR_WEIGHT = 0.5  # in units of one row's squared log error at 10%: weak
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _with(params: LlmParams, share: float, elementwise: float) -> LlmParams:
    return replace(params, matmul_share_of_mamf=share, elementwise_bytes_per_token_per_hidden=elementwise)


def _loss(rows: list[LlmRow], params: LlmParams, catalog) -> float:
    res = predict_rows(rows, params, catalog)
    e = np.array([math.log(1.0 + r["error_pct"] / 100.0) for r in res if r.get("error_pct") is not None])
    k = 0.1
    a = np.abs(e)
    return float(np.sum(np.where(a <= k, 0.5 * e * e, k * (a - 0.5 * k))))


def _golden(f, lo: float, hi: float, tol: float) -> float:
    a, b = lo, hi
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol * (hi - lo):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2.0


def fit(rows: list[LlmRow], start: LlmParams | None = None, sweeps: int = 3, tol: float = 1e-3) -> LlmParams:
    """Fitted parameters (module docstring)."""
    catalog = load_catalog(None)
    base = start or default_llm_params()
    share, elementwise = PRIOR_SHARE_OF_MAMF, PRIOR_ELEMENTWISE
    n = max(1, sum(1 for r in rows if not r.skip))
    w = PRIOR_WEIGHT * 0.5 * 0.1 ** 2

    def total(sh: float, el: float) -> float:
        prior = ((sh - PRIOR_SHARE_OF_MAMF) / 0.2) ** 2 + ((el - PRIOR_ELEMENTWISE) / 100.0) ** 2
        return _loss(rows, _with(base, sh, el), catalog) + w * prior * min(n, 10) / 10

    for _ in range(sweeps):
        share = _golden(lambda v: total(v, elementwise), *BOUNDS["share"], tol)
        elementwise = _golden(lambda v: total(share, v), *BOUNDS["elementwise"], tol)
    return _with(base, share, elementwise)


def fold_params(fold: dict, start: LlmParams | None = None) -> LlmParams:
    """The parameters of one recorded fold of `leave_one_group_out` (its two fitted values on the defaults)."""
    return _with(start or default_llm_params(), float(fold["matmul_share_of_mamf"]),
                 float(fold["elementwise_bytes_per_token_per_hidden"]))


def leave_one_group_out(rows: list[LlmRow], group: Callable[[LlmRow], str],
                        start: LlmParams | None = None) -> tuple[list[dict], list[dict]]:
    """Held-out predictions per row (each group predicted by a fit on the other groups' rows) and the
    folds: one dict per group with the values fitted without it and the number of rows fitted on."""
    base = start or default_llm_params()
    prior = _with(base, PRIOR_SHARE_OF_MAMF, PRIOR_ELEMENTWISE)
    out: dict[int, dict] = {}
    folds = []
    groups = sorted({group(r) for r in rows if not r.skip and r.measured_tokens is not None})
    for g in groups:
        train = [r for r in rows if group(r) != g]
        held = [r for r in rows if group(r) == g]
        fitted = fit(train, prior) if any(not r.skip for r in train) else prior
        folds.append({"held_out": g, "train_rows": sum(1 for r in train if not r.skip),
                      "matmul_share_of_mamf": fitted.matmul_share_of_mamf,
                      "elementwise_bytes_per_token_per_hidden": fitted.elementwise_bytes_per_token_per_hidden})
        for rec in predict_rows(held, fitted):
            out[rec["line"]] = rec
    return [out[r.line] for r in rows if r.line in out], folds


def leave_one_source_out(rows: list[LlmRow], start: LlmParams | None = None) -> list[dict]:
    """Held-out predictions per row: each source predicted by a fit on the others."""
    return leave_one_group_out(rows, lambda r: r.source, start)[0]
