"""Node counts of a large-model search: every whole number the budget and limits allow, in two passes.

The hardware space of a large-model solve has every node count M = 1, 2, 3, ... up to what the budget
buys (design_space.py trims counts whose node hardware alone is over the budget). Timing every one of
them with every layout costs about 5x the search of a 1-2-significant-bit grid; most of them cannot
win, and a bound says which without timing them.

Upper bound on tokens/s (step.py's model; symbols there). A GPU's share of a step is m·b·s/(t·p)
tokens and the step takes at least its compute, T_step ≥ m·T_mb, so

    tokens/s per GPU ≤ b·s / (t·p·T_mb) = 1 / ( A/peak + c_bw·h·L·(F_hw/F_model)/(B_mem·e_mem) )
    A = (F_hw − F_att)·S(h, t)/e_mm + F_att/e_att

Every term of A and of the element-wise part is smallest with no activation checkpointing
(F_hw = F_model, F_att = 12·L·h·s) and t = 1 (the GEMM shape slowdown S = 1 + c·(1 + t/3)/h grows
with t), and 1/e_att ≤ 1/max(e_att, e_mm) covers designs without FlashAttention (their attention runs
at e_mm). So, per design,

    U = G·M / ( (F_model − F_att)·S(h, 1)·(q/(peak_lp·e_lp) + (1 − q)/(peak·e_mm)) + c·F_att/(peak·max(e_att, e_mm))
                + [c_bw + k_cast·n_cast·(1 − β)]·h·L/(B_mem·e_mem) )

with a low precision's (fp8, mxfp8, nvfp4) share q = (1 − β)·(1 − P_emb/P) of the weight GEMMs at its
peak and fraction and its cast bytes k_cast = 2 + 2w + k_amax per element (bf16 designs: q = 0, no cast),
as step.py has them, and c = min(c_causal, 1) (a causal FlashAttention kernel runs c_causal·F_att, an
unfused one all of F_att at e_mm); none depends on the layout or the node count. The loss's cross-entropy
term k_ce·V/t is left out: it only adds time, and t can be as large as the NVLink domain. It bounds the tokens/s of every layout of that design (tests/test_llm_nodes.py checks U ≥ tokens/s on
every design x layout of a space, and the search re-checks it on every design it times).

Two passes (a design's group is its GPU type and whether the part filter offers it, so the pick, the
best design of every other GPU type and the best left-out design are all exact):

1. time, per (GPU, chassis, NIC, NICs per node) family, its two largest node counts that the limits
   admit (`admissible`: budget, buildable fabric, and any other limit known before timing; a family with
   none, its counts on the grid 1, 2, 3, 4, 6, 8, 12, ...: NODE_GRID); each group's incumbent v* is its
   best objective value (solver.py's v: −τ, c/τ or c) among its admissible designs that fit;
2. every other design j is timed unless its group has an incumbent and even at its bound it cannot
   reach a tie: v(c_j, U_j) > v* + tol·|v*| (tol = solver.TIE_REL_TOL; v is non-increasing in τ, so
   v(c_j, U_j) ≤ v(c_j, τ_j)), or U_j is below the throughput floor. A design the limits do not admit is
   timed only in a group without an incumbent (where the nearest-feasible answer needs it); a design
   whose GPU has no tensor-core path for the precision (U = 0) runs nowhere and is not timed.

Nothing skipped can win or tie (the pick over the kept designs is the pick over all of them): the
final best v** ≤ v*, so v(c_j, U_j) > v* + tol·|v*| ≥ v** + tol·|v**|. If a timed design ever beats its
bound (a change to step.py the bound does not cover), the bound is not trusted and every skipped
design is timed too (`NodeSearch.bound_held` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from costopt.core.arrays import row_codes
from costopt.perf.llm.arch import ArchArrays, TransformerConfig
from costopt.perf.llm.evaluate import (DEFAULT_FRAMEWORK, NODE_GRID, Layout, LlmEvaluation, all_layouts, best_layout_per_design,
                                       bf16_peak_flops, default_llm_params, evaluate_layouts, gpu_generation,
                                       low_precision_of, matmul_fraction, params_for_framework, peak_flops)
from costopt.perf.llm.layouts import concat_layouts, layout_take
from costopt.perf.llm.step import LlmParams, gemm_shape_slowdown
from costopt.search.design_space import DesignSpace
from costopt.search.solver import TIE_REL_TOL, objective_values

def tokens_per_s_bound(cfg: TransformerConfig, space: DesignSpace, precision: str,
                       params: LlmParams | None = None, framework: str = DEFAULT_FRAMEWORK) -> np.ndarray:
    """U per design (module docstring): no layout of the design exceeds it; 0 where the GPU has no
    tensor-core path for `precision` (nothing runs there). `framework`'s fitted values apply, as in
    evaluate.py (params_for_framework)."""
    params = params_for_framework(params or default_llm_params(), framework)
    by_id = {g.id: g for g in space.gpus}
    peak_lp = np.array([peak_flops(g, precision) or np.nan for g in space.gpus])  # nan: no path, runs nowhere
    peak = np.array([bf16_peak_flops(g, precision) or np.nan for g in space.gpus])
    peak = np.where(np.isfinite(peak), peak, peak_lp)
    e_mm = np.array([matmul_fraction(g, params, by_id) for g in space.gpus])
    e_lp = np.array([matmul_fraction(g, params, by_id, precision) for g in space.gpus])
    e_att = np.array([params.attention_fraction.get(gpu_generation(g), params.attention_fraction_default)
                      for g in space.gpus])
    e_bw = np.array([g.memory_bandwidth_gbs * 1e9 for g in space.gpus]) * params.memory_bandwidth_fraction
    arch = ArchArrays.of(cfg, 1)
    f_model, f_att = float(arch.model_flops_per_token[0]), float(arch.attention_flops_per_token[0])
    h, L = float(arch.hidden[0]), float(arch.layers[0])
    shape = float(gemm_shape_slowdown(h, 1.0, params.gemm_shape_dims))
    lp = low_precision_of(precision, params)
    if lp is None:
        q, cast, w_time = 0.0, 0.0, 1.0 / (peak * e_mm)
    else:
        emb = 0.0 if arch.embedding_params is None else float(arch.embedding_params[0])
        q = lp.share * (1.0 - emb / float(arch.params[0]))
        cast = (2.0 + 2.0 * lp.bytes_per_element + lp.amax_bytes) * params.cast_elements_per_token_per_hidden * lp.share
        w_time = q / (peak_lp * e_lp) + (1.0 - q) / (peak * e_mm)
    causal = min(params.causal_attention_flop_share, 1.0)  # a causal kernel's share of F_att; unfused: all of it
    per_gpu = 1.0 / ((f_model - f_att) * shape * w_time + causal * f_att / (peak * np.maximum(e_att, e_mm))
                     + (params.elementwise_bytes_per_token_per_hidden + cast) * h * L / e_bw)
    per_gpu = np.where(np.isfinite(per_gpu), per_gpu, 0.0)
    return per_gpu[space.gpu_idx] * space.total_gpus


def _families(space: DesignSpace) -> np.ndarray:
    """One code per (GPU, chassis, NIC, NICs per node) family."""
    return row_codes(space.gpu_idx, space.chassis_idx, space.nic_idx, space.nics_per_node)[0]


def first_pass(space: DesignSpace, admissible: np.ndarray, top: int = 2) -> np.ndarray:
    """Pass 1 (module docstring): each family's `top` largest admissible node counts (throughput grows
    with the node count, so these are the likely incumbents); a family with none admissible, its grid
    counts (NODE_GRID)."""
    fam = _families(space)
    seed = np.zeros(len(space), dtype=bool)
    idx = np.flatnonzero(admissible)
    if len(idx):
        order = idx[np.lexsort((-space.nodes[idx], fam[idx]))]  # per family, largest count first
        f = fam[order]
        start = np.r_[0, np.flatnonzero(f[1:] != f[:-1]) + 1]
        rank_in = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
        seed[order[rank_in < top]] = True
    none = ~np.isin(fam, fam[idx])
    seed |= none & np.isin(space.nodes, NODE_GRID)
    return seed


@dataclass
class NodeSearch:
    """What the two passes kept, each kept design's fastest layout, and what the bound skipped."""

    keep: np.ndarray  # indices into the space searched, ascending
    ev: LlmEvaluation  # over space.take(keep)
    skipped: int  # designs never timed (their bound cannot beat their group's incumbent)
    timed_first: int  # designs of pass 1
    bound_held: bool  # False: a timed design beat its bound, so nothing was skipped


def search_node_counts(cfg: TransformerConfig, space: DesignSpace, cost: np.ndarray, admissible: np.ndarray,
                       group: np.ndarray, *, objective: str, precision: str, global_batch: int,
                       layouts: Layout | None = None, min_tokens_per_s: float | None = None,
                       qualifies: Callable[[LlmEvaluation], np.ndarray] | None = None,
                       params: LlmParams | None = None, hold_batch: bool = False,
                       framework: str = DEFAULT_FRAMEWORK, search_vp: bool = False) -> NodeSearch:
    """The two passes of the module docstring over `space` (every integer node count).

    `cost` is each design's cost on the solve's basis, `admissible` marks the designs every limit known
    before timing allows (budget, buildable fabric, power, rack units ...), `group` one code per design
    whose incumbent it is judged against (GPU type x offered by the part filter). With a throughput
    floor `min_tokens_per_s`, `qualifies(ev)` says which timed designs meet it as the choice will judge
    them (e.g. at a confidence level: limits.py); an incumbent must, and a design whose bound is below
    the floor is skipped (a confidence of 0.5 or more never credits a design above its point estimate).

    Only the choice this was pruned for is exact: a caller that reprices the designs or applies other
    limits afterwards must time every node count (`llm_search.search_llm(prune=False)`)."""
    params = params_for_framework(params or default_llm_params(), framework)
    layouts = layouts or all_layouts()
    bound = tokens_per_s_bound(cfg, space, precision, params, framework)
    run = lambda sub: best_layout_per_design(cfg, space.take(sub), precision=precision,  # noqa: E731
                                             global_batch=global_batch, params=params, layouts=layouts,
                                             hold_batch=hold_batch, framework=framework, search_vp=search_vp)
    first = np.flatnonzero(first_pass(space, admissible))
    ev1 = run(first)
    n_grp = int(group.max()) + 1 if len(group) else 1
    best_v = np.full(n_grp, np.inf)
    pos = np.flatnonzero(ev1.fits & admissible[first])  # positions in pass 1 of its admissible fitting designs
    if min_tokens_per_s is not None:
        pos = pos[ev1.timing.tokens_per_s[pos] >= min_tokens_per_s]
        if qualifies is not None:
            pos = pos[np.asarray(qualifies(ev1), dtype=bool)[pos]]
    if len(pos):
        np.minimum.at(best_v, group[first[pos]],
                      objective_values(objective, cost[first[pos]], ev1.timing.tokens_per_s[pos]))
    rest = np.ones(len(space), dtype=bool)
    rest[first] = False
    has = np.isfinite(best_v)[group]
    with np.errstate(divide="ignore", invalid="ignore"):
        v_ub = objective_values(objective, cost, bound)
    cutoff = best_v + TIE_REL_TOL * np.abs(np.where(np.isfinite(best_v), best_v, 0.0))
    can = admissible & (v_ub <= cutoff[group])
    if min_tokens_per_s is not None:
        can &= bound >= min_tokens_per_s
    second = np.flatnonzero(rest & (bound > 0) & (~has | can))
    ev2 = run(second) if len(second) else None
    timed = [(first, ev1)] + ([(second, ev2)] if ev2 is not None else [])
    held = all(bool(np.all(~e.fits | (e.timing.tokens_per_s <= bound[i] * (1 + 1e-12)))) for i, e in timed)
    if not held:  # the bound did not cover the model: time the skipped designs too
        third = np.flatnonzero(rest & ~np.isin(np.arange(len(space)), second))
        if len(third):
            timed.append((third, run(third)))
    keep = np.concatenate([i for i, _ in timed])
    order = np.argsort(keep, kind="stable")
    keep = keep[order]
    lay = layout_take(concat_layouts([e.layout for _, e in timed]), order)
    ev = evaluate_layouts(cfg, space.take(keep), lay, precision=precision, global_batch=global_batch, params=params,
                          hold_batch=hold_batch, framework=framework)
    return NodeSearch(keep, ev, int(len(space) - len(keep)), int(len(first)), held)
