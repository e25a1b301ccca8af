"""Fit the large-model compute parameters on measured rows, and judge them leave-one-source-out.

Fitted: the achieved matmul fraction of peak per GPU generation present in the rows (e_mm) and the
element-wise bytes per token per layer per hidden unit (c_bw), shared by every GPU; everything else
(links, overlap, memory) stays at its default. Loss: Σ huber(ln(predicted/measured)) over rows with a
measured tokens/s per GPU, with a weak pull toward each prior (0.7 for e_mm: cuBLAS reaches 70-80% of
peak on transformer GEMMs; 68 for c_bw: Korthikanti et al.'s 34 bytes stored per token, layer and hidden
unit, written once and read once), so a generation or term the rows barely see stays near its prior.
Minimised by cyclic golden-section search on each parameter within its bounds (three or four
parameters: no general optimiser needed).

Leave-one-source-out: for each source, fit on the other sources' rows and predict the held-out ones; a
generation absent from the training rows falls back to its prior.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..catalog import load_catalog
from .evaluate import default_llm_params
from .step import LlmParams
from .validate import LlmRow, predict_rows

PRIOR_MATMUL_FRACTION = 0.7
PRIOR_ELEMENTWISE = 68.0
BOUNDS = {"matmul": (0.2, 1.0), "elementwise": (0.0, 600.0)}
PRIOR_WEIGHT = 0.5  # in units of one row's squared log error at 10%: weak
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _with(params: LlmParams, fractions: dict[str, float], elementwise: float) -> LlmParams:
    return replace(params, matmul_fraction=dict(fractions), elementwise_bytes_per_token_per_hidden=elementwise)


def _loss(rows: list[LlmRow], params: LlmParams, catalog) -> float:
    res = predict_rows(rows, params, catalog)
    e = np.array([math.log(1.0 + r["error_pct"] / 100.0) for r in res if r.get("error_pct") is not None])
    k = 0.1
    a = np.abs(e)
    return float(np.sum(np.where(a <= k, 0.5 * e * e, k * (a - 0.5 * k))))


def _generations(rows: list[LlmRow], catalog) -> list[str]:
    from .evaluate import gpu_generation
    return sorted({gpu_generation(catalog.gpus[r.gpu]) for r in rows if not r.skip and r.gpu in catalog.gpus})


def fit(rows: list[LlmRow], start: LlmParams | None = None, sweeps: int = 3, tol: float = 1e-3) -> LlmParams:
    """Fitted parameters (module docstring)."""
    catalog = load_catalog(None)
    base = start or default_llm_params()
    gens = _generations(rows, catalog)
    fractions = {g: PRIOR_MATMUL_FRACTION for g in gens}
    elementwise = PRIOR_ELEMENTWISE
    n = max(1, sum(1 for r in rows if not r.skip))
    w = PRIOR_WEIGHT * 0.5 * 0.1 ** 2

    def total(fr: dict[str, float], el: float) -> float:
        prior = sum(((v - PRIOR_MATMUL_FRACTION) / 0.2) ** 2 for v in fr.values()) + ((el - PRIOR_ELEMENTWISE) / 100.0) ** 2
        return _loss(rows, _with(base, fr, el), catalog) + w * prior * min(n, 10) / 10

    def golden(f, lo, hi):
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

    for _ in range(sweeps):
        for g in gens:
            fractions[g] = golden(lambda v: total({**fractions, g: v}, elementwise), *BOUNDS["matmul"])
        elementwise = golden(lambda v: total(fractions, v), *BOUNDS["elementwise"])
    merged = {**base.matmul_fraction, **fractions}
    return _with(base, merged, elementwise)


def leave_one_source_out(rows: list[LlmRow], start: LlmParams | None = None) -> list[dict]:
    """Held-out predictions per row: each source predicted by a fit on the others (generations it
    does not see stay at the prior)."""
    base = start or default_llm_params()
    prior = replace(base, matmul_fraction={k: PRIOR_MATMUL_FRACTION for k in base.matmul_fraction},
                    elementwise_bytes_per_token_per_hidden=PRIOR_ELEMENTWISE)
    out: dict[int, dict] = {}
    sources = sorted({r.source for r in rows if not r.skip and r.measured_tokens is not None})
    for src in sources:
        train = [r for r in rows if r.source != src]
        held = [r for r in rows if r.source == src]
        fitted = fit(train, prior) if any(not r.skip for r in train) else prior
        for rec in predict_rows(held, fitted):
            out[rec["line"]] = rec
    return [out[r.line] for r in rows if r.line in out]
