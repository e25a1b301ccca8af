"""How sure a decision is: near-ties and the share of resampled systems under which the pick stays best.

Near-tie. Design d is a near-tie of the best design b when their 80% throughput ranges overlap
(costopt/perf/intervals.py): low_d ≤ high_b and low_b ≤ high_d. The buyer should read such designs as
equally good on today's evidence.

Decision robustness (`solver.robustness`). The shipped defaults are a fit; its uncertainty is one
standard deviation σ_j per fitted parameter (`system_defaults.toml` [uncertainty]). Draw K = RESAMPLES
parameter sets, independently per parameter:

    rate-like parameters (log-scale bounds in system.FIT_BOUNDS):  θ_j,k = θ_j · exp(σ_j/θ_j · z)
    fractions and zero-default terms (linear bounds):                     θ_j,k = clip(θ_j + σ_j · z, lo_j, hi_j)

with z ~ N(0, 1) from a fixed seed (same inputs, same bytes). Compute is resampled with them (issue 24): per
resample k and GPU type g, every phase time of g is scaled by

    c_k,g = exp(s_kind(g) · z'_k,g)

s_kind the standard deviation of the out-of-sample log residuals of g's compute evidence kind in
costopt/data/residuals.json (`measured` profiles, `roofline` estimates; 0 for compute calibrated to a
measured 1-GPU figure). One factor per GPU type and resample: every design on that GPU moves together, as a
wrong fraction or host term would move it. The shortlist is the best design plus the
SHORTLIST designs that score best under the request's constraints (a design far down the ranking cannot
overtake under parameter noise of this size; the count is reported). Its timing is evaluated for all K
systems at once: the shortlist is tiled K times into one design space whose parameters are arrays, one
value per (resample, design), and `timing.evaluate` runs once over K × m designs. Per resample the
design with the best objective value wins (costs are the point costs: only throughput is resampled;
ties are broken as the solver breaks them, costopt/search/solver.py rule 4, with the resample's
throughput: under `cost` two designs of one price are told apart by which is faster); robustness = the
share of resamples whose winner is the chosen design. Under a throughput target (`--deadline-hours`,
`--min-throughput`) a design whose resampled throughput misses the target cannot win that resample.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from costopt.search.evaluation import Evaluation

RESAMPLES = 200
SHORTLIST = 64
SEED = 20261201


def near_ties(low: np.ndarray, high: np.ndarray, best_pos: int) -> np.ndarray:
    """Bool per design: its [low, high] overlaps the design at `best_pos`'s (that design itself: False)."""
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    out = (low <= high[best_pos]) & (low[best_pos] <= high)
    out[best_pos] = False
    return out


def resample_params(params, n: int, seed: int = SEED, uncertainty: dict[str, float] | None = None):
    """`n` parameter sets as one SystemParams whose resampled fields are arrays of length n."""
    from costopt.perf.system import FIT_BOUNDS as BOUNDS, fit_record

    sig = fit_record()["uncertainty"] if uncertainty is None else uncertainty
    rng = np.random.default_rng(seed)
    updates: dict[str, np.ndarray] = {}
    for name in sorted(sig):
        if name not in BOUNDS or not hasattr(params, name):
            continue
        sd = float(sig[name])
        theta = float(getattr(params, name))
        lo, hi, kind = BOUNDS[name]
        z = rng.standard_normal(n)
        if kind == "log" and theta > 0:
            updates[name] = theta * np.exp(sd / theta * z)
        else:
            updates[name] = np.clip(theta + sd * z, lo, hi)
    return params.with_updates(**updates), sorted(updates)


def compute_sigma(sources: list[str]) -> np.ndarray:
    """Per GPU type: the log-sd of its compute evidence kind's out-of-sample residuals (0: calibrated)."""
    from costopt.perf.intervals import compute_kind, load_residuals

    res = load_residuals()
    sd = {k: float(np.std(np.asarray(v, dtype=np.float64))) for k, v in res.compute.items() if len(v)}
    return np.array([sd.get(compute_kind(s), 0.0) if compute_kind(s) != "calibrated" else 0.0 for s in sources])


def resample_compute(compute, n: int, seed: int = SEED + 1):
    """`n` copies of `compute` (GpuCompute, one entry per GPU type), each GPU type's phase times scaled by
    one lognormal factor per copy (module docstring); entry k·n_g + g is copy k of GPU type g."""
    from costopt.perf.timing import GpuCompute

    sig = compute_sigma(list(compute.source))
    z = np.random.default_rng(seed).standard_normal((n, len(sig)))
    c = np.exp(sig[None, :] * z).reshape(-1)
    rep = lambda a: np.tile(np.asarray(a), n)  # noqa: E731
    return GpuCompute(rep(compute.forward_s) * c, rep(compute.backward_s) * c, rep(compute.step_s) * c,
                      rep(compute.memory_ok), rep(compute.supported), list(compute.source) * n,
                      list(compute.basis) * n), sig


def decision_robustness(ev: "Evaluation", best: int, pool: np.ndarray, objective: str,
                        min_throughput: float | None, resamples: int = RESAMPLES,
                        shortlist: int = SHORTLIST) -> dict[str, Any]:
    """Share of `resamples` parameter draws under which `best` stays the best of `pool` (design indices
    that satisfy the request's constraints). Returns robustness, resamples, shortlist size, parameters."""
    from costopt.search.solver import objective_values
    from costopt.perf.timing import evaluate

    pool = np.asarray(pool, dtype=np.int64)
    cost = ev.costs.cost_usd
    thr = ev.timing.throughput_samples_per_s
    rank = ev.space.order_rank()
    score = objective_values(objective, cost[pool], thr[pool])
    order = np.lexsort((rank[pool], cost[pool], score))
    short = pool[order[:shortlist]]
    if best not in short:
        short = np.concatenate([[best], short[: shortlist - 1]])
    m = len(short)
    from costopt.search.design_space import DesignSpace

    tiled = ev.space.take(np.tile(short, resamples))
    n_g = len(ev.space.gpus)
    # copy k of the shortlist runs on copy k of every GPU type (its own compute factor, resample_compute)
    copy = np.repeat(np.arange(resamples, dtype=np.int64), m)
    tiled = DesignSpace(ev.space.gpus * resamples, tiled.chassis, tiled.nics, tiled.gpu_idx + copy * n_g,
                        tiled.chassis_idx, tiled.nic_idx, tiled.nodes, tiled.strategy, tiled.reduce_on,
                        tiled.nics_per_node, tiled.stack)
    compute, sig = resample_compute(ev.compute, resamples)
    params, names = resample_params(ev.params, resamples)
    if names:
        params = params.with_updates(**{k: np.repeat(getattr(params, k), m) for k in names})
    t = evaluate(tiled, compute, ev.tensors, params, ev.batch_per_gpu * ev.grad_accum, ev.overlap)
    thr_k = t.throughput_samples_per_s.reshape(resamples, m)
    cost_k = np.broadcast_to(cost[short], (resamples, m))
    value = objective_values(objective, cost_k, thr_k)
    if objective == "cost" and min_throughput is not None:
        value = np.where(thr_k >= min_throughput, value, np.inf)
    # ties as the solver breaks them (costopt/search/solver.py rule 4), with each resample's own throughput:
    # `throughput` cheaper, then faster, then design order; `cost`, `cost-per-throughput` faster, then cheaper,
    # then design order
    best_value = value.min(axis=1, keepdims=True)
    tied = value <= best_value + np.abs(best_value) * 1e-9
    first, second = (cost_k, -thr_k) if objective == "throughput" else (-thr_k, cost_k)
    row = np.repeat(np.arange(resamples), m)
    order = np.lexsort((np.broadcast_to(rank[short], (resamples, m)).ravel(), second.ravel(), first.ravel(),
                        (~tied).ravel(), row))
    winner = order.reshape(resamples, m)[:, 0] % m
    share = float(np.mean(short[winner] == best))
    used = sorted({int(g) for g in ev.space.gpu_idx[short]})
    return {"robustness": round(share, 4), "robustness_resamples": int(resamples),
            "robustness_shortlist": int(m), "robustness_parameters": names,
            "robustness_compute_log_sd": {ev.space.gpus[g].id: round(float(sig[g]), 4) for g in used}}


__all__ = ["near_ties", "decision_robustness", "resample_compute", "resample_params", "RESAMPLES", "SHORTLIST"]
