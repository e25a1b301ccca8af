"""Fit the large-model compute parameters on measured rows, and judge them leave-one-source-out.

Fitted, two numbers shared by every GPU and row:
  η     `matmul_share_of_mamf`: the share of a GPU's measured maximum achievable matmul rate (MAMF,
        data/llm_defaults.toml, from single-GPU matmul measurements) that a training step's weight
        matmuls reach, e_mm = η·MAMF(gpu). How the GPUs differ comes from the MAMF table, not from
        the LLM rows, so a GPU with no LLM row (H100 when llm-foundry is held out) is predicted from
        the others' η and its own MAMF.
  c_bw  element-wise bytes per token per layer per hidden unit.
Per training framework f (the rows' `framework` column: megatron, fsdp, deepspeed), the same two numbers
(η_f, c_bw,f) fitted on that framework's rows alone, pulled toward the pooled fit over all rows (η, c_bw)
instead of the fixed priors. Stored as a factor k_f = η_f/η on the pooled share and c_bw,f
(data/llm_defaults.toml [framework.*]); a framework with no rows in the fit (torchtitan; deepspeed when its
sources are held out) runs at the pooled values. Why per framework: the kernels differ (Megatron/TE fuse
norms, activations, RoPE and the loss; Composer runs them unfused), and the pooled fit under-predicted
NeMo-class runs by 13-18%.

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
from costopt.perf.llm.evaluate import FRAMEWORKS, default_llm_params
from costopt.perf.llm.step import LlmParams
from costopt.measure.llm_validate import LlmRow, predict_rows

PRIOR_SHARE_OF_MAMF = 0.85
PRIOR_ELEMENTWISE = 68.0
BOUNDS = {"share": (0.2, 1.0), "elementwise": (68.0, 600.0)}  # c_bw floor: the 34 stored bytes written and read once
PRIOR_WEIGHT = 0.5  # in units of one row's squared log error at 10%: weak
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _with(params: LlmParams, share: float, elementwise: float, frameworks: dict | None = None) -> LlmParams:
    """`frameworks`: framework -> (share factor, element-wise bytes); absent: every framework at the pooled values."""
    fw = frameworks or {}
    return replace(params, matmul_share_of_mamf=share, elementwise_bytes_per_token_per_hidden=elementwise,
                   framework_share_factor={f: fw[f][0] if f in fw else 1.0 for f in FRAMEWORKS},
                   framework_elementwise_bytes={f: fw[f][1] for f in fw})


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


def _fit_two(rows: list[LlmRow], base: LlmParams, prior: tuple[float, float], scale: tuple[float, float],
             sweeps: int, tol: float, catalog, framework: str | None = None) -> tuple[float, float]:
    """(share, element-wise bytes) minimising the loss of `rows` with a weak pull toward `prior`; with
    `framework`, only that framework's pair moves (the pooled values stay those of `base`)."""
    share, elementwise = prior
    n = max(1, sum(1 for r in rows if not r.skip))
    w = PRIOR_WEIGHT * 0.5 * 0.1 ** 2

    def params(sh: float, el: float) -> LlmParams:
        if framework is None:
            return _with(base, sh, el)
        return _with(base, base.matmul_share_of_mamf, base.elementwise_bytes_per_token_per_hidden,
                     {framework: (sh / base.matmul_share_of_mamf, el)})

    def total(sh: float, el: float) -> float:
        pr = ((sh - prior[0]) / scale[0]) ** 2 + ((el - prior[1]) / scale[1]) ** 2
        return _loss(rows, params(sh, el), catalog) + w * pr * min(n, 10) / 10

    for _ in range(sweeps):
        share = _golden(lambda v: total(v, elementwise), *BOUNDS["share"], tol)
        elementwise = _golden(lambda v: total(share, v), *BOUNDS["elementwise"], tol)
    return share, elementwise


def fit(rows: list[LlmRow], start: LlmParams | None = None, sweeps: int = 3, tol: float = 1e-3,
        per_framework: bool = True) -> LlmParams:
    """Fitted parameters (module docstring): the pooled pair on every row, then each framework's pair on its
    own rows, pulled toward the pooled one."""
    catalog = load_catalog(None)
    base = start or default_llm_params()
    share, elementwise = _fit_two(rows, _with(base, PRIOR_SHARE_OF_MAMF, PRIOR_ELEMENTWISE),
                                  (PRIOR_SHARE_OF_MAMF, PRIOR_ELEMENTWISE), (0.2, 100.0), sweeps, tol, catalog)
    pooled = _with(base, share, elementwise)
    fw = {}
    for f in FRAMEWORKS if per_framework else ():
        mine = [r for r in rows if r.framework == f and not r.skip and r.measured_tokens is not None]
        if mine:
            sh, el = _fit_two(mine, pooled, (share, elementwise), (0.2, 100.0), sweeps, tol, catalog, framework=f)
            fw[f] = (sh / share, el)
    return _with(base, share, elementwise, fw)


def fold_params(fold: dict, start: LlmParams | None = None) -> LlmParams:
    """The parameters of one recorded fold of `leave_one_group_out` (its fitted values on the defaults)."""
    fw = {f: (float(v["matmul_share_factor"]), float(v["elementwise_bytes_per_token_per_hidden"]))
          for f, v in fold.get("frameworks", {}).items()}
    return _with(start or default_llm_params(), float(fold["matmul_share_of_mamf"]),
                 float(fold["elementwise_bytes_per_token_per_hidden"]), fw)


def framework_values(params: LlmParams) -> dict:
    """The per-framework fitted values of `params`, as a fold records them."""
    return {f: {"matmul_share_factor": params.framework_share_factor.get(f, 1.0),
                "elementwise_bytes_per_token_per_hidden": v}
            for f, v in sorted(params.framework_elementwise_bytes.items())}


def leave_one_group_out(rows: list[LlmRow], group: Callable[[LlmRow], str],
                        start: LlmParams | None = None, per_framework: bool = True) -> tuple[list[dict], list[dict]]:
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
        fitted = fit(train, prior, per_framework=per_framework) if any(not r.skip for r in train) else prior
        folds.append({"held_out": g, "train_rows": sum(1 for r in train if not r.skip),
                      "matmul_share_of_mamf": fitted.matmul_share_of_mamf,
                      "elementwise_bytes_per_token_per_hidden": fitted.elementwise_bytes_per_token_per_hidden,
                      "frameworks": framework_values(fitted)})
        for rec in predict_rows(held, fitted):
            out[rec["line"]] = rec
    return [out[r.line] for r in rows if r.line in out], folds


def leave_one_source_out(rows: list[LlmRow], start: LlmParams | None = None) -> list[dict]:
    """Held-out predictions per row: each source predicted by a fit on the others."""
    return leave_one_group_out(rows, lambda r: r.source, start)[0]
