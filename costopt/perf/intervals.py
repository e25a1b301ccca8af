"""80% ranges on predicted throughput: communication error and compute error, both out of sample.

Data: `costopt/data/residuals.json`, written by `tools/build_residuals.py`, holds log residuals
r = ln(observed / predicted) of predictions made without the observation's own source or GPU:

- r_c (communication): every shipped measurement row predicted by the leave-one-source-out fit
  (`costopt.measure.calibrate.loso`), with x, the exposed share of the iteration in that prediction
  (below). The rows are calibrated to their own 1-GPU figure, so r_c is the error of everything beyond
  one GPU's compute, read below as ρ, the error of the time beyond compute.
- r_k (compute, per evidence kind k of costopt/perf/compute.py, the design's `compute_source`):
  `measured` (the phase sum of a measured profile against the iteration timed whole), `published`
  (a published same-model or same-class ratio standing in for another table's or model's ratio),
  `roofline` (leave-one-GPU-out cells of tools/compute_loo.py). Kind `calibrated` (a validation row
  with its own 1-GPU figure) has r_k = 0: that figure's error is inside r_c already.

Two parts of the iteration, each with its own error. A design's iteration is its compute t_c plus the
time beyond it, t_x = t_iter − t_c (exposed communication and per-step synchronisation: what the
communication model predicts); its compute share is w = t_c / t_iter and its exposed share x = 1 − w.
If the true compute is t_c e^(−r_k) and the true time beyond compute is ρ t_x, then

    ln(X_true / X_pred) = −ln(w e^(−r_k) + (1 − w) ρ)

(w = 1: r_k alone; w = 0: −ln ρ alone), so the communication error weighs in proportion to the exposed
share: none where nothing is communicated, all of it where the iteration is all communication. (The
rule until 2026-12-01 added one communication error r_c, the same for every design.)

ρ from the rows: a shipped row's compute is calibrated to its own 1-GPU figure (r_k = 0), and its leave-
one-source-out prediction has exposed share x_i (recorded in the residuals file) and residual r_i; with
the predicted iteration as the unit, t_c = 1 − x_i and the measured iteration is e^(−r_i), so

    ρ_i = (e^(−r_i) − (1 − x_i)) / x_i          (measured / predicted time beyond compute)

A row measured faster than its predicted compute alone (e^(−r_i) ≤ 1 − x_i: its 1-GPU baseline, not the
communication, is off; 2 shipped rows) has ρ_i floored at RHO_FLOOR; rows with x_i below SHARE_MIN say
nothing about t_x (ρ_i would be mostly noise / x_i) and are left out. Per communication stack s with at
least MIN_ROWS usable rows from at least MIN_SOURCES sources the stack's own ρ, else all rows' (fewer
sources measure a few labs' set-ups, not the stack: with one of grpc's three sources left out, the other
two alone held 69% of its rows in their range out of sample, all rows' 76%). On the shipped rows (2026-12-01) the error
indeed grows with x: median |r| 1.9% below x = 0.05, 8.3% at 0.1-0.3, 25% at 0.3-0.5 (docs/accuracy.md).

Combination. ρ and r_k are independent (different data, different mechanisms), so the predictive sample
of ln(X_true / X_pred) is every pair (i, j) of the two residual sets: n_c x n_k values. Its 10th and 90th
percentiles q10(s, k, w), q90(s, k, w) are computed on a grid of shares w (SHARE_GRID, 21 points, steps
of 0.05) for each (stack, kind) that the designs use, in one numpy pass per pair (at most 4 x 4 pairs,
never per design), and interpolated linearly in w per design. Kind `calibrated` (r_k = 0) needs no grid:
ln(X_true / X_pred) = −ln(w + (1 − w) ρ) falls as ρ grows, so its percentiles are exactly
q10 = −ln(w + (1 − w) ρ90), q90 = −ln(w + (1 − w) ρ10), with ρ10, ρ90 the stack's percentiles of ρ.

    low  = X · exp(min(q10, 0))
    high = min(X · exp(max(q90, 0)),  max(X_perfect · exp(max(q90_k, 0)), X))

X_perfect = N · b / t_c (perfect scaling of the design's own GPU) widened by the compute kind's own
q90_k (the GPU itself is known only within its compute range). min/max with 0 keep low ≤ X ≤ high.

Percentiles are the Weibull plotting positions (numpy method "weibull": the j-th smallest of n values
sits at j / (n + 1)): for exchangeable draws the interval between the order statistics at 0.1 (n + 1)
and 0.9 (n + 1) holds a new draw with probability 0.8, which is what a prediction range claims. The
default "linear" rule (j - 1)/(n - 1) is narrower for small n (with 23 rows, 0.4 rows in from each end).

Coverage (`coverage`, `coverage_by_group`): each source's (or GPU's) range is built from the OTHER
sources' (GPUs') residuals only, so the share of rows inside their range is out of sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from costopt.perf.stacks import STACKS
from costopt.core.paths import DATA_DIR

RESIDUALS_PATH = DATA_DIR / "residuals.json"
MIN_ROWS = 20  # fewer residuals than this for a stack: its range comes from all stacks' rows
MIN_SOURCES = 3  # nor from fewer sources than this
LOW_Q, HIGH_Q = 10.0, 90.0
METHOD = "weibull"
COMPUTE_KINDS = ("calibrated", "measured", "published", "roofline")
SHARE_GRID = np.linspace(0.0, 1.0, 21)
SHARE_MIN = 0.01  # rows with a smaller predicted exposed share say nothing on the time beyond compute: not in the rho sample
RHO_FLOOR = 0.01  # a row measured faster than its predicted compute alone: its time beyond compute counts as 1/100 of the prediction
# compute_source (costopt/perf/compute.py, "-floored" removed) -> evidence kind
_KIND_OF_SOURCE = {"measured": "measured", "interpolated": "measured", "extrapolated": "measured",
                   "published": "published", "roofline": "roofline", "calibrated": "calibrated"}


# 0-based position v of the p-th quantile among n sorted values, per rule (Hyndman & Fan 1996), written
# as numpy computes it: weibull puts the j-th smallest (j from 1) at p = j / (n + 1), linear at
# (j - 1) / (n - 1).
_POSITION = {
    "weibull": lambda n, p: n * p + p - 1,
    "linear": lambda n, p: (n - 1) * p,
}


def percentiles(x: Any, qs: tuple[float, ...] = (LOW_Q, HIGH_Q), axis: int | None = None,
                method: str = METHOD) -> np.ndarray:
    """The qs-th percentiles of `x` along `axis` (all values when None), one row per q.

    With p = q / 100, the percentile sits at the rule's 0-based position v among the n sorted values
    (weibull: v = (n + 1)·p − 1, linear: v = (n − 1)·p); it is the linear interpolation between the
    values at ⌊v⌋ and ⌊v⌋ + 1 with weight γ = v − ⌊v⌋ (a + (b − a)·γ, or b − (b − a)·(1 − γ) when
    γ ≥ 0.5), v below 0 taking the smallest value and v at or past n − 1 the largest; NaN where the
    values hold a NaN.

    These are np.percentile(x, qs, axis=axis, method=method)'s values, the same floating-point
    operations in the same order (tests/test_intervals.py checks equality on many random arrays).
    Written out because np.percentile loads numpy.ma (through np.unique), about 10 ms of every
    command's start-up; np.partition places only the values needed."""
    a = np.asarray(x, dtype=np.float64)
    if axis is None:
        a, axis = a.reshape(-1), 0
    a = np.moveaxis(a, axis, 0)
    n = a.shape[0]
    if n == 0:
        raise ValueError("percentiles of no values")
    p = np.asarray(qs, dtype=np.float64) / 100
    v = _POSITION[method](n, p)
    prev = np.floor(v)
    above, below = v >= n - 1, v < 0
    prev[above], prev[below] = -1, 0  # (numpy's weights at the ends; the two neighbours are one value there)
    nxt = prev + 1
    nxt[above], nxt[below] = -1, 0
    gamma = (v - prev).reshape((-1,) + (1,) * (a.ndim - 1))
    lo_i, hi_i = prev.astype(np.intp), nxt.astype(np.intp)
    part = np.partition(a, sorted({0, n - 1, *(lo_i % n).tolist(), *(hi_i % n).tolist()}), axis=0)
    lo, hi = part[lo_i], part[hi_i]
    diff = hi - lo
    out = np.where(gamma >= 0.5, hi - diff * (1 - gamma), lo + diff * gamma)
    has_nan = np.isnan(part[-1])  # a NaN sorts last
    if has_nan.any():
        out[..., has_nan] = np.nan
    return out


def _q(x: np.ndarray, axis: int | None = None) -> tuple[Any, Any]:
    lo, hi = percentiles(x, (LOW_Q, HIGH_Q), axis=axis)
    return lo, hi


def compute_kind(source: str) -> str:
    """Evidence kind of a `compute_source` label; unknown labels count as the least sure (roofline)."""
    return _KIND_OF_SOURCE.get(str(source).removesuffix("-floored"), "roofline")


def exposed_ratio(log_ratio: Any, share: Any) -> np.ndarray:
    """ρ = measured / predicted time beyond compute per row, (e^(−r) − (1 − x)) / x for r = ln(measured /
    predicted) and x the prediction's exposed share (module docstring); at least RHO_FLOOR; NaN where
    x < SHARE_MIN or r is not finite."""
    r = np.asarray(log_ratio, dtype=np.float64)
    x = np.asarray(share, dtype=np.float64)
    ok = np.isfinite(r) & np.isfinite(x) & (x >= SHARE_MIN)
    xs = np.where(ok, x, 1.0)
    rho = np.maximum((np.exp(-np.where(ok, r, 0.0)) - (1.0 - xs)) / xs, RHO_FLOOR)
    return np.where(ok, rho, np.nan)


def log_error(share: Any, rho: Any) -> np.ndarray:
    """ln(X_true / X_pred) of a design with exposed share x whose time beyond compute is ρ times the
    prediction (compute right): −ln(1 − x + x ρ)."""
    x = np.asarray(share, dtype=np.float64)
    return -np.log(1.0 - x + x * np.asarray(rho, dtype=np.float64))


def exposed_share(predicted: Any, perfect: Any) -> np.ndarray:
    """x = 1 − X / X_perfect = (t_iter − t_c) / t_iter per design (X = N b / t_iter, X_perfect = N b / t_c),
    clipped to [0, 1]; 0 where either is not a positive finite number."""
    X = np.asarray(predicted, dtype=np.float64)
    P = np.asarray(perfect, dtype=np.float64)
    ok = np.isfinite(X) & np.isfinite(P) & (P > 0) & (X > 0)
    return np.where(ok, np.clip(1.0 - X / np.where(ok, P, 1.0), 0.0, 1.0), 0.0)


def _own_rows(usable: np.ndarray, stack: np.ndarray, source: np.ndarray, name: str,
              min_rows: int, min_sources: int) -> np.ndarray | None:
    """Mask of stack `name`'s usable rows when there are at least min_rows of them from at least min_sources
    sources (the stack's own sample), else None (the range comes from all rows)."""
    mine = usable & (stack == name)
    if int(mine.sum()) >= min_rows and len(set(source[mine].tolist())) >= min_sources:
        return mine
    return None


@dataclass(frozen=True)
class Residuals:
    comm: np.ndarray  # log residuals of the shipped rows (leave-one-source-out)
    comm_share: np.ndarray  # exposed share x of each row's leave-one-source-out prediction
    comm_stack: np.ndarray
    comm_source: np.ndarray
    compute: dict  # kind -> log residuals (kind 'calibrated': [0.0])
    date: str

    @cached_property
    def comm_rho(self) -> np.ndarray:
        return exposed_ratio(self.comm, self.comm_share)

    def _own(self, stack: str, min_rows: int, min_sources: int) -> np.ndarray | None:
        return _own_rows(np.isfinite(self.comm_rho), self.comm_stack, self.comm_source, stack, min_rows, min_sources)

    def stack_sample(self, stack: str, min_rows: int = MIN_ROWS, min_sources: int = MIN_SOURCES) -> np.ndarray:
        """ρ of the stack's rows (all rows' when the stack has fewer than min_rows usable ones or they come
        from fewer than min_sources sources)."""
        rho = self.comm_rho
        own = self._own(stack, min_rows, min_sources)
        return rho[own] if own is not None else rho[np.isfinite(rho)]

    def stack_basis(self, stack: str, min_rows: int = MIN_ROWS, min_sources: int = MIN_SOURCES) -> str:
        return "stack" if self._own(stack, min_rows, min_sources) is not None else "all rows"


@lru_cache(maxsize=4)
def load_residuals(path: str = str(RESIDUALS_PATH)) -> Residuals:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    comm = data["communication"]
    kinds = {k: np.array([c["log_residual"] for c in data["compute"] if c["kind"] == k], dtype=np.float64)
             for k in COMPUTE_KINDS if k != "calibrated"}
    kinds["calibrated"] = np.zeros(1)
    return Residuals(np.array([c["log_residual"] for c in comm], dtype=np.float64),
                     np.array([c["exposed_share"] for c in comm], dtype=np.float64),
                     np.array([c["stack"] for c in comm]), np.array([c["source"] for c in comm]), kinds,
                     str(data.get("date", "")))


def combined_quantiles(rho: np.ndarray, comp: np.ndarray, shares: np.ndarray = SHARE_GRID) -> tuple[np.ndarray, np.ndarray]:
    """(q10, q90) of −ln(w e^(−r_k) + (1 − w) ρ) over every pair of the two samples, one value per share w."""
    w = np.asarray(shares, dtype=np.float64)[:, None, None]
    t_c = np.exp(-np.asarray(comp, dtype=np.float64))[None, None, :]  # compute, as a multiple of the prediction
    t_x = np.asarray(rho, dtype=np.float64)[None, :, None]  # time beyond compute, likewise
    s = -np.log(w * t_c + (1.0 - w) * t_x)  # shares x n_c x n_k
    lo, hi = _q(s.reshape(s.shape[0], -1), axis=1)
    return lo, hi


@lru_cache(maxsize=64)
def _grid(stack: str, kind: str, path: str) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    res = load_residuals(path)
    rho = res.stack_sample(stack)
    lo, hi = combined_quantiles(rho, res.compute[kind])
    rho10, rho90 = _q(rho)
    return lo, hi, float(_q(res.compute[kind])[1]), float(rho10), float(rho90)


def bounds(throughput: np.ndarray, stack_idx: np.ndarray, kind_idx: np.ndarray | None,
           compute_share: np.ndarray, perfect: np.ndarray | None = None,
           path: str | Path = RESIDUALS_PATH) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per design: the 80% range of the stack's error of the time beyond compute and the
    compute error of the design's evidence kind (index into COMPUTE_KINDS; None: `calibrated`), each
    weighed by its share of the iteration (compute share w = t_c / t_iter; NaN: 1), capped at perfect
    scaling widened by the compute range."""
    thr = np.asarray(throughput, dtype=np.float64)
    n = len(thr)
    if n == 0:
        return thr.copy(), thr.copy()
    st = np.broadcast_to(np.asarray(stack_idx, dtype=np.int64), (n,))
    kd = np.zeros(n, dtype=np.int64) if kind_idx is None else np.broadcast_to(np.asarray(kind_idx, dtype=np.int64), (n,))
    w = np.clip(np.nan_to_num(np.broadcast_to(np.asarray(compute_share, dtype=np.float64), (n,)), nan=1.0), 0.0, 1.0)
    combo = st * len(COMPUTE_KINDS) + kd
    used, inv = np.unique(combo, return_inverse=True)
    grids = [_grid(STACKS[c // len(COMPUTE_KINDS)], COMPUTE_KINDS[c % len(COMPUTE_KINDS)], str(path)) for c in used.tolist()]
    lo_tab = np.array([g[0] for g in grids]).reshape(len(used), -1)
    hi_tab = np.array([g[1] for g in grids]).reshape(len(used), -1)
    kind_hi = np.array([g[2] for g in grids])[inv]
    pos = w * (len(SHARE_GRID) - 1)
    i0 = np.minimum(np.floor(pos).astype(np.int64), len(SHARE_GRID) - 2)
    frac = pos - i0
    q10 = lo_tab[inv, i0] * (1.0 - frac) + lo_tab[inv, i0 + 1] * frac
    q90 = hi_tab[inv, i0] * (1.0 - frac) + hi_tab[inv, i0 + 1] * frac
    exact = kd == COMPUTE_KINDS.index("calibrated")  # no compute sample: the stack's rho percentiles, mapped
    if exact.any():
        rho10, rho90 = np.array([g[3] for g in grids])[inv], np.array([g[4] for g in grids])[inv]
        x = 1.0 - w
        q10 = np.where(exact, log_error(x, rho90), q10)
        q90 = np.where(exact, log_error(x, rho10), q90)
    low = thr * np.exp(np.minimum(q10, 0.0))
    high = thr * np.exp(np.maximum(q90, 0.0))
    if perfect is not None:
        cap = np.asarray(perfect, dtype=np.float64) * np.exp(np.maximum(kind_hi, 0.0))
        high = np.minimum(high, np.maximum(cap, thr))
    return low, high


# ---------------------------------------------------------------------------------------------------
# communication-only quantiles and out-of-sample coverage (tools/fit_defaults.py, tools/build_residuals.py)


def quantile_table(log_ratio: np.ndarray, share: np.ndarray, stack: np.ndarray, source: np.ndarray,
                   min_rows: int = MIN_ROWS, min_sources: int = MIN_SOURCES) -> dict[str, dict[str, Any]]:
    """Per stack name: p10_exposed_ratio, p90_exposed_ratio (10th / 90th percentile of ρ, measured / predicted
    time beyond compute), rows and sources (usable residuals of that stack) and basis ("stack", or "all
    rows" below min_rows rows or min_sources sources). A calibrated design with exposed share x gets
    measured / predicted throughput between 1 / (1 − x + x max(p90, 1)) and 1 / (1 − x + x min(p10, 1))."""
    rho = exposed_ratio(log_ratio, share)
    st = np.asarray(stack)
    src = np.asarray(source)
    ok = np.isfinite(rho)
    pooled = tuple(float(v) for v in _q(rho[ok])) if ok.any() else (1.0, 1.0)
    out: dict[str, dict[str, Any]] = {}
    for name in STACKS:
        mine = ok & (st == name)
        n, n_src = int(mine.sum()), len(set(src[mine].tolist()))
        if _own_rows(ok, st, src, name, min_rows, min_sources) is not None:
            lo, hi = (float(v) for v in _q(rho[mine]))
            basis = "stack"
        else:
            lo, hi = pooled
            basis = "all rows"
        out[name] = {"p10_exposed_ratio": lo, "p90_exposed_ratio": hi, "rows": n, "sources": n_src, "basis": basis}
    return out


def coverage(log_ratio: np.ndarray, share: np.ndarray, stack: np.ndarray, source: np.ndarray,
             min_rows: int = MIN_ROWS, min_sources: int = MIN_SOURCES) -> np.ndarray:
    """Per row: True when measured lies inside the range built from the other sources' residuals:
    ln(measured / predicted) between −ln(1 − x + x max(ρ90, 1)) and −ln(1 − x + x min(ρ10, 1)), ρ10 and ρ90
    the other sources' percentiles of ρ (its stack's, or all rows' when too few rows or sources), x the
    row's exposed share."""
    r = np.asarray(log_ratio, dtype=np.float64)
    x = np.asarray(share, dtype=np.float64)
    src = np.asarray(source)
    st = np.asarray(stack)
    inside = np.zeros(len(r), dtype=bool)
    for s in sorted(set(src.tolist())):  # one pass per source (a handful), vectorised over its rows
        mine = src == s
        table = quantile_table(np.where(mine, np.nan, r), x, st, src, min_rows, min_sources)
        lo = log_error(x[mine], np.array([max(table[k]["p90_exposed_ratio"], 1.0) for k in st[mine]]))
        hi = log_error(x[mine], np.array([min(table[k]["p10_exposed_ratio"], 1.0) for k in st[mine]]))
        rr = r[mine]
        inside[mine] = (rr >= lo) & (rr <= hi)
    return inside


def coverage_by_group(log_ratio: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per residual: True when it lies inside the range built from the other groups' residuals (one
    group = one GPU, or one model for measured profiles)."""
    r = np.asarray(log_ratio, dtype=np.float64)
    grp = np.asarray(group)
    inside = np.zeros(len(r), dtype=bool)
    for gname in sorted(set(grp.tolist())):
        mine = grp == gname
        if (~mine).sum() == 0:
            continue
        lo, hi = _q(r[~mine])
        inside[mine] = (r[mine] >= min(lo, 0.0)) & (r[mine] <= max(hi, 0.0))
    return inside


# ---------------------------------------------------------------------------------------------------
# the words a buyer reads

_PRETTY = {"resnet50": "ResNet-50", "bert_base_squad": "BERT-base", "bert_large_squad": "BERT-large"}


def compute_label(source: str, model: str | None = None, basis: str | None = None, gpu: str | None = None) -> str:
    """Where the compute time behind a prediction comes from, in the words a buyer reads: measured on
    the GPU, or an estimate (a published ratio, a roofline) labelled as one."""
    kind = compute_kind(source)
    src = str(source).removesuffix("-floored")
    on = f" on {gpu}" if gpu else " on this GPU"
    if kind == "measured":
        text = f"compute {src}{on}" if src == "measured" else f"compute {src} from batches measured{on}"
    elif kind == "published":
        lm = None
        if model is not None:
            from costopt.perf.compute import load_published

            entry = load_published().model_map.get(model)
            lm = entry["lambda_model"] if entry else None
        what = f"a published {_PRETTY.get(lm, lm)} ratio" if lm else "a published same-model ratio"
        text = f"compute scaled from {what} to the measured GPU (estimate)"
    elif kind == "roofline":
        stand_in = ("; fractions of another GPU generation" if basis and "no " in basis and " data:" in basis else "")
        text = f"compute a roofline estimate (peak FLOP/s and bandwidth x fitted fractions{stand_in})"
    else:
        text = "compute calibrated to the measured 1-GPU figure"
    return text + ("; raised to the physical floor" if str(source).endswith("-floored") else "")


def range_phrase(point: float, low: float | None, high: float | None, label: str, unit: str = "samples/s") -> str:
    """'1,234 samples/s (80% range 1,050-1,300; <label>)': the point, its range and what it rests on."""
    if low is None or high is None:
        return f"{_num(point)} {unit} ({label})"
    return f"{_num(point)} {unit} (80% range {_num(low)}-{_num(high)}; {label})"


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


__all__ = ["bounds", "combined_quantiles", "compute_kind", "compute_label", "coverage", "coverage_by_group",
           "exposed_ratio", "exposed_share", "load_residuals", "log_error", "quantile_table", "range_phrase", "COMPUTE_KINDS",
           "MIN_ROWS", "MIN_SOURCES", "RESIDUALS_PATH", "RHO_FLOOR", "SHARE_MIN"]
