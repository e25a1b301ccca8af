"""80% ranges on large-model predictions, from the out-of-sample errors of published training runs.

Data: costopt/data/llm_residuals.json, written by tools/llm_fit.py: r = ln(measured / predicted)
tokens/s per GPU of every shipped large-model row (costopt/data/validation/llm_training.csv) that the
model predicts, in two samples:

    by_source   predicted by the fit on the other sources' rows (leave-one-source-out)
    by_gpu      predicted by the fit on the other GPUs' rows (leave-one-GPU-out)

Sample of a design: its GPU has published runs in the file → `by_source` (a new configuration and
software stack on a GPU the data know); it has none → `by_gpu` (the fitted matmul share carried over to
it through its own MAMF, which is what leave-one-GPU-out measures).

Range of a design with predicted tokens/s X and MFU u on a GPU whose maximum achievable matmul fraction
of peak is f (data/llm_defaults.toml; evaluate.mamf_fraction):

    q10, q90 = 10th and 90th percentiles of the sample (Weibull plotting positions, as
               costopt/perf/intervals.py: the j-th smallest of n at j / (n + 1))
    low  = X · exp(min(q10, 0))
    high = min(X · exp(max(q90, 0)),  max(X, X · f / u))

The cap keeps the high end's MFU at or below f: no prediction beats the GPU's measured matmul rate.

Ranges by evidence: a design with no published run of its GPU, its precision (fp8, mxfp8, nvfp4, ...)
or its training framework in the residual file gets a wider range than one with runs. With n such
missing features (0-3):

    GPU without runs: q10 = min(q10 of by_gpu, q10 of by_source), q90 = max(q90 of both)
    w = z·σ_between·√n        z = 1.2816 (the 80% two-sided normal quantile)
    σ_between = standard deviation of the per-GPU medians of the by_gpu residuals (how far one
                GPU's whole population of runs sits from another's: the between-generation term)
    low = X·exp(min(q10, 0) − w),  high = X·exp(max(q90, 0) + w)  (then the MAMF cap)

A mixture-of-experts model takes its q10, q90 from its own sample instead: costopt/data/llm_moe_residuals.json
(tools/moe_fit.py), the MoE rows' errors with their model held out of the fit of the MoE constant
(leave-one-model-out; validation/llm_moe_training.csv, one source), since the dense rows' errors say nothing of
what the MoE terms miss; the other features widen it as above.

A fine-tune (sft, lora, qlora) counts as one such feature: the residuals are of pre-training runs, and the
published fine-tuning rows (validation/llm_finetune.csv) are predicted out of sample, never fitted.
The range's `range_basis` names what had no run.
min/max with 0 keep low ≤ X ≤ high. Tokens/s per GPU and MFU scale with X by the same factors. Time
runs the other way: hours = tokens / X, so hours_low = tokens / high and hours_high = tokens / low; the
same for USD per 1e9 tokens and a rented cluster's cost to train (an owned cluster's cost to train is
its purchase: no range).

Coverage (`group_coverage`): each group's (source's or GPU's) range from the OTHER groups' residuals
only, and the share of rows whose residual lies inside it (out of sample).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from costopt.perf.intervals import HIGH_Q, LOW_Q, coverage_by_group as group_coverage, percentiles
from costopt.core.paths import DATA_DIR

LLM_RESIDUALS_PATH = DATA_DIR / "llm_residuals.json"
LLM_MOE_RESIDUALS_PATH = DATA_DIR / "llm_moe_residuals.json"
SAMPLES = ("by_source", "by_gpu")
_WHAT = {"by_source": "leave-one-source-out", "by_gpu": "leave-one-GPU-out"}


def quantiles(r: np.ndarray) -> tuple[float, float]:
    """(q10, q90) of log residuals, Weibull plotting positions."""
    lo, hi = percentiles(np.asarray(r, dtype=np.float64), (LOW_Q, HIGH_Q))
    return float(lo), float(hi)


@dataclass(frozen=True)
class LlmResiduals:
    samples: dict  # sample name -> np.ndarray of log residuals
    gpus: frozenset  # GPUs with published rows
    sources: int  # sources in by_source
    date: str
    coverage: dict  # sample -> the share of rows inside the range built without their group (tools/llm_fit.py)
    precisions: frozenset | None = None  # precisions with published rows (None: the file does not say)
    frameworks: frozenset | None = None  # training frameworks with published rows
    between_sd: float = 0.0  # σ_between (module docstring)

    def basis(self, sample: str) -> str:
        """The words a buyer reads about where a range comes from."""
        n = len(self.samples[sample])
        if sample == "by_gpu":
            return (f"leave-one-GPU-out errors of {n} published runs on {len(self.gpus)} other GPUs, none "
                    "published on this GPU")
        return f"leave-one-source-out errors of {n} published runs from {self.sources} sources"


@lru_cache(maxsize=4)
def load_llm_residuals(path: str = str(LLM_RESIDUALS_PATH)) -> LlmResiduals:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    samples = {s: np.array([x["log_residual"] for x in data[s]], dtype=np.float64) for s in SAMPLES}
    rows = data["by_source"]
    seen = lambda k: frozenset(x[k] for x in rows) if rows and all(k in x for x in rows) else None  # noqa: E731
    by_gpu: dict[str, list[float]] = {}
    for x in data["by_gpu"]:
        by_gpu.setdefault(x["gpu"], []).append(x["log_residual"])
    medians = [float(np.median(v)) for _, v in sorted(by_gpu.items())]
    between = float(np.std(medians, ddof=1)) if len(medians) > 1 else 0.0
    return LlmResiduals(samples, frozenset(x["gpu"] for x in rows),
                        len({x["source"] for x in rows}), str(data.get("date", "")),
                        {s: float(data.get("coverage", {}).get(s, {}).get("all", {}).get("inside", float("nan")))
                         for s in SAMPLES}, seen("precision"), seen("framework"), between)


Z80 = 1.2816  # two-sided 80% normal quantile


@lru_cache(maxsize=2)
def load_moe_residuals(path: str = str(LLM_MOE_RESIDUALS_PATH)) -> tuple[np.ndarray, int, int]:
    """(leave-one-model-out log residuals of the MoE rows, their rows, their models)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    r = np.array([x["log_residual"] for x in data["by_model"]], dtype=np.float64)
    return r, len(r), len(data["models"])


def unseen(res: LlmResiduals, gpu: str | None, precision: str | None, framework: str | None,
           finetune: str | None = None) -> list[str]:
    """What a design has no published run of: its GPU (None: not asked), precision, framework, fine-tune (sft, lora,
    qlora: the residuals are of pre-training runs only; the fine-tuning rows are validation, never fitted)."""
    out = [] if gpu is None or gpu in res.gpus else [f"the {gpu}"]
    if precision is not None and res.precisions is not None and precision not in res.precisions:
        out.append(precision)
    if framework is not None and res.frameworks is not None and framework not in res.frameworks:
        out.append(framework)
    if finetune is not None:
        out.append(f"{finetune} fine-tuning in the fit")
    return out


@dataclass(frozen=True)
class LlmRange:
    """Per design: low and high tokens/s and the sample each range comes from (index into SAMPLES)."""
    low: np.ndarray
    high: np.ndarray
    sample: np.ndarray


def bounds(tokens_per_s: np.ndarray, mfu: np.ndarray, gpu_ids: np.ndarray, mamf: np.ndarray,
           path: str | Path = LLM_RESIDUALS_PATH, precision: str | None = None,
           framework: str | None = None, finetune: str | None = None, moe=False) -> LlmRange:
    """The 80% range of every design at once (module docstring). `gpu_ids` and `mamf` (the maximum
    achievable matmul fraction of peak of each design's GPU) are per design; `precision` and `framework`
    (one per evaluation) widen the range when the residual file has no run of them; `moe` (one bool, or one per
    design) takes the q10, q90 of the MoE rows' leave-one-model-out errors instead."""
    x = np.asarray(tokens_per_s, dtype=np.float64)
    res = load_llm_residuals(str(path))
    ids = np.asarray(gpu_ids).astype(str)
    known = np.isin(ids, sorted(res.gpus))
    sample = np.where(known, 0, 1).astype(np.int64)
    q = np.array([quantiles(res.samples[s]) for s in SAMPLES])  # samples x (q10, q90)
    q_lo = np.where(known, q[0, 0], min(q[0, 0], q[1, 0]))
    q_hi = np.where(known, q[0, 1], max(q[0, 1], q[1, 1]))
    is_moe = np.broadcast_to(np.asarray(moe, dtype=bool), x.shape)
    if is_moe.any():
        m_lo, m_hi = quantiles(load_moe_residuals()[0])
        q_lo, q_hi = np.where(is_moe, m_lo, q_lo), np.where(is_moe, m_hi, q_hi)
    n_unseen = (~known).astype(np.float64) + float(len(unseen(res, None, precision, framework, finetune)))
    w = Z80 * res.between_sd * np.sqrt(n_unseen)
    low = x * np.exp(np.minimum(q_lo, 0.0) - w)
    high = x * np.exp(np.maximum(q_hi, 0.0) + w)
    u = np.asarray(mfu, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(u > 0, x * np.asarray(mamf, dtype=np.float64) / u, np.inf)
    high = np.minimum(high, np.maximum(cap, x))
    return LlmRange(low, high, sample)


def range_fields(rec: dict, low: float, high: float, sample: int, path: str | Path = LLM_RESIDUALS_PATH) -> dict:
    """Add a design record's range fields (tokens/s, per GPU, MFU: low and high) and where it comes from."""
    x = rec.get("tokens_per_s")
    if not rec.get("feasible") or x is None or not np.isfinite(x) or x <= 0:
        return rec
    lo_f, hi_f = low / x, high / x
    rec["tokens_per_s_low"] = float(low)
    rec["tokens_per_s_high"] = float(high)
    rec["tokens_per_s_per_gpu_low"] = rec["tokens_per_s_per_gpu"] * lo_f
    rec["tokens_per_s_per_gpu_high"] = rec["tokens_per_s_per_gpu"] * hi_f
    rec["mfu_low"] = rec["mfu"] * lo_f
    rec["mfu_high"] = rec["mfu"] * hi_f
    rec["range_percentiles"] = [int(LOW_Q), int(HIGH_Q)]
    res = load_llm_residuals(str(path))
    rec["range_basis"] = res.basis(SAMPLES[int(sample)])
    if rec.get("active_params") is not None:  # a mixture-of-experts design (evaluate.design_record)
        _, n, models = load_moe_residuals()
        rec["range_basis"] = (f"leave-one-model-out errors of {n} published mixture-of-experts runs of {models} models "
                              "(one source)")
    missing = unseen(res, str(rec.get("gpu", "")), rec.get("precision"), rec.get("framework"), rec.get("finetune"))
    if missing:
        rec["range_basis"] += (f"; widened (x exp(±{Z80:.2f}·{res.between_sd:.3f}·√{len(missing)})) for no published run of "
                               + ", ".join(missing))
    return rec


__all__ = ["bounds", "group_coverage", "load_llm_residuals", "load_moe_residuals", "quantiles", "range_fields", "LlmRange",
           "LLM_RESIDUALS_PATH", "SAMPLES"]
