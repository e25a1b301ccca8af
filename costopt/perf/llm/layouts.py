"""Parallel layouts of a large-model design and the degrees a solve searches, vectorised.

A layout is a strategy (ddp | zero1 | zero2 | fsdp | hsdp), tensor degree t, pipeline degree p, micro-batch b,
activation checkpointing, and optionally the virtual pipeline stages v (interleaved 1F1B), the context-parallel
degree c (ring attention), the expert-parallel degree (mixture of experts) and the shard group S (HSDP with a
chosen group, partial ZeRO-1; step.py). `all_layouts` is the grid of the five first; `search_layouts` adds c
and S, and v is chosen per (design, layout) after timing (`best_virtual_stages`).

Degrees a solve searches (step.py and memory.py have every term):

- c ∈ CP_CHOICES where the sequence splits into 2·c equal chunks (s divisible by 2·c: the load-balanced ring of
  Megatron / Transformer Engine gives each rank two chunks, one early and one late in the causal order);
- S ∈ SHARD_CHOICES for hsdp and zero1 (partial ZeRO-1), where S divides the d·c weight replicas and is
  below them (S = d·c is plain zero1 / fsdp), hsdp's default S = g (one NVLink domain's ranks) included;
- v ∈ VP_CHOICES where p > 1 and L divisible by p·v (every chunk the same layers).

v changes only the bubble and the point-to-point time, T_step(v) = T_rest + T_c·(p − 1)/(v·m) + (v·m + p − 1)·u
(step.py, u one boundary crossing), not memory (1F1B sizing), so each timed pair is timed once and its best v
read from that expression (`step.pipeline_step_s`, the same sum step_time makes: bit-identical), the lowest v
among equals. Nothing is lost against timing every v.

Pairs that cannot win are not timed (`first_fitting_in_group`): within a group of layouts that differ only in
checkpointing, and for zero1 / zero2 without a shard group only in that, the step time never decreases along
(checkpointing none, selective, full) and zero1's equals zero2's (the same collectives, optimizer shards and
compute; zero2 only holds less), while memory never grows along the same order. So the first layout of the group
that fits in the order (checkpointing, then zero1 before zero2) is the fastest that fits, and the lowest index
among equals; only it is timed. tests/test_llm_search.py checks the choice against timing every pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costopt.core.arrays import row_codes
from costopt.hardware.rack_scale import domain_gpus_of
from costopt.perf.llm.arch import CHECKPOINTING
from costopt.perf.llm.memory import LLM_STRATEGIES, state_parts
from costopt.perf.llm.step import pipeline_step_s

TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4, 8, 16)
MICRO_BATCH_CHOICES = (1, 2, 4, 8)
CP_CHOICES = (1, 2, 4)
SHARD_CHOICES = (8, 16, 32, 64)  # shard-group sizes searched for hsdp and zero1, in weight replicas (GPUs)
VP_CHOICES = (1, 2, 3, 4, 5, 6, 8, 10)
_ZERO1, _ZERO2, _HSDP = (LLM_STRATEGIES.index(s) for s in ("zero1", "zero2", "hsdp"))


@dataclass
class Layout:
    strategy: np.ndarray  # index into LLM_STRATEGIES
    tp: np.ndarray
    pp: np.ndarray
    micro_batch: np.ndarray
    ckpt: np.ndarray  # index into CHECKPOINTING
    vp: np.ndarray | None = None  # virtual pipeline stages per GPU (interleaved schedule); None: 1
    cp: np.ndarray | None = None  # context-parallel degree (ring attention); None: 1
    ep: np.ndarray | None = None  # expert-parallel degree (mixture of experts, moe.py); None: 1
    shard: np.ndarray | None = None  # shard group S in weight replicas (step.py); 0 or None: the strategy's own


LAYOUT_FIELDS = ("strategy", "tp", "pp", "micro_batch", "ckpt")
OPTIONAL_FIELDS = ("vp", "cp", "ep", "shard")


def all_layouts(max_tp: int = 8) -> Layout:
    combos = [(s, t, p, b, c) for s in range(len(LLM_STRATEGIES)) for t in TP_CHOICES if t <= max_tp
              for p in PP_CHOICES for b in MICRO_BATCH_CHOICES for c in range(len(CHECKPOINTING))]
    a = np.array(combos, dtype=np.int64)
    return Layout(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])


def layout_take(layouts: Layout, k: np.ndarray) -> Layout:
    return Layout(*(getattr(layouts, f)[k] for f in LAYOUT_FIELDS),
                  **{f: None if getattr(layouts, f) is None else getattr(layouts, f)[k] for f in OPTIONAL_FIELDS})


def concat_layouts(parts: list[Layout]) -> Layout:
    """One layout array of several; an optional degree absent from some parts is 1 there (0 for the shard)."""
    def col(f: str, fill: int):
        cols = [getattr(x, f) for x in parts]
        if all(c is None for c in cols):
            return None
        return np.concatenate([np.full(len(x.tp), fill, dtype=np.int64) if c is None else c for x, c in zip(parts, cols)])
    return Layout(*(np.concatenate([getattr(x, f) for x in parts]) for f in LAYOUT_FIELDS),
                  vp=col("vp", 1), cp=col("cp", 1), ep=col("ep", 1), shard=col("shard", 0))


def search_layouts(base: Layout, seq_len: int, cp_choices=CP_CHOICES, shard_choices=SHARD_CHOICES) -> Layout:
    """`base` (all_layouts or a subset) times the context-parallel degrees the sequence allows and, for hsdp and
    zero1, the shard groups (module docstring); the base layouts first (c = 1, S = 0), so their indices and
    ties are as before."""
    cps = [c for c in cp_choices if seq_len % (2 * c) == 0 or c == 1]
    n = len(base.tp)
    parts = []
    for c in cps:
        for S in (0,) + tuple(shard_choices):
            sel = np.ones(n, dtype=bool) if S == 0 else np.isin(base.strategy, (_ZERO1, _HSDP))
            k = np.flatnonzero(sel)
            if len(k) == 0:
                continue
            lay = layout_take(base, k)
            lay.cp = np.full(len(k), c, dtype=np.int64)
            lay.shard = np.full(len(k), S, dtype=np.int64)
            parts.append(lay)
    return concat_layouts(parts)


def dominance_groups(layouts: Layout, within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(group, rank) per layout (module docstring): layouts equal in every field but checkpointing (and zero1 /
    zero2 without a shard group), and in `within` (a caller's own grouping), share a group; rank orders them by
    checkpointing, then strategy, then index."""
    n = len(layouts.tp)
    strat = layouts.strategy.astype(np.int64)
    shard = np.zeros(n, dtype=np.int64) if layouts.shard is None else layouts.shard
    merged = np.where((strat == _ZERO2) & (shard == 0), _ZERO1, strat)
    cols = [merged, layouts.tp, layouts.pp, layouts.micro_batch, shard, np.zeros(n, dtype=np.int64) if within is None
            else np.asarray(within, dtype=np.int64)]
    cols += [np.zeros(n, dtype=np.int64) if getattr(layouts, f) is None else getattr(layouts, f) for f in ("vp", "cp", "ep")]
    group = row_codes(*cols)[0]
    order = np.lexsort((np.arange(n), strat, layouts.ckpt, group))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return group, rank


def first_fitting_in_group(fits: np.ndarray, group: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """fits (rows x layouts) -> the fitting layouts with no fitting layout before them in their group's order.
    One step per place in a group (a group has a handful of layouts), each over that place's column of every
    group, instead of a running count over the whole matrix."""
    n = len(group)
    out = np.zeros_like(fits, dtype=bool)
    if n == 0:
        return out
    order = np.argsort(rank, kind="stable")  # columns grouped, each group in its order
    g = group[order]
    start = np.r_[True, g[1:] != g[:-1]]
    run = np.cumsum(start) - 1  # which group (in rank order) each ordered column belongs to
    place = np.arange(n) - np.flatnonzero(start)[run]  # its place in its group
    seen = np.zeros((fits.shape[0], int(run[-1]) + 1), dtype=bool)  # a fitting layout met so far in the group
    for j in range(int(place.max()) + 1):
        at = place == j
        cols, r = order[at], run[at]
        f = fits[:, cols]
        out[:, cols] = f & ~seen[:, r]
        seen[:, r] |= f
    return out


def best_virtual_stages(timing, p: np.ndarray, m: np.ndarray, layers: float,
                        choices=VP_CHOICES) -> tuple[np.ndarray, np.ndarray]:
    """(tokens/s, v) per pair timed at v = 1: the fastest v of `choices` with p > 1 and layers divisible by p·v
    (module docstring), the lowest among equals."""
    best_t = timing.t_step_s.copy()
    best_v = np.ones(len(best_t), dtype=np.int64)
    piped = np.flatnonzero(p > 1)
    if len(piped):
        tm = timing
        args = [np.asarray(a)[piped] for a in (tm.t_compute_s, tm.t_dp_exposed_s, tm.t_tp_s, tm.t_opt_s, tm.t_pp_unit_s)]
        pp, mm = p[piped], m[piped]
        for v in choices:
            if v == 1:
                continue
            ok = np.mod(layers, pp * v) == 0
            if not ok.any():
                continue
            t_v = pipeline_step_s(*args, pp, mm, float(v))[2]
            better = ok & (t_v < best_t[piped])
            best_t[piped[better]] = t_v[better]
            best_v[piped[better]] = v
    return timing.tokens_per_step / best_t, best_v


# Megatron can count the embedding and the loss as one pipeline layer each (account_for_embedding_in_pipeline_split,
# account_for_loss_in_pipeline_split): Megatron-Bridge's GB200 Llama 3.1 405B recipe runs pp 16 x vp 8 = 128 chunks
# over 126 layers + 2 (shared research file, MBRIDGE rows)
PIPELINE_EXTRA_LAYERS = 2


def bad_vp(layout: Layout, p: np.ndarray, layers: np.ndarray) -> np.ndarray:
    """Interleaving needs a pipeline (p > 1) and a layer per chunk (p·vp ≤ L + 2, the embedding and the loss
    counted as layers; Megatron splits unevenly, e.g. Llama 3.1 405B's 126 layers over pp 8 x vp 8, or pp 16 x vp 8
    = 128 chunks on GB200). A named v may split unevenly so; the search takes only even splits (VP_CHOICES)."""
    if layout.vp is None:
        return np.zeros(len(p), dtype=bool)
    v = layout.vp.astype(np.float64)
    return (v > 1) & ((p < 2) | (p * v > layers + PIPELINE_EXTRA_LAYERS))


def dp_and_grad_accum(N: np.ndarray, layout: Layout, global_batch) -> tuple[np.ndarray, np.ndarray]:
    """d = N/(t·p·c) rounded (at least 1) and m = ⌈B/(d·b)⌉ (at least 1): all that timing needs of the sizing."""
    t, p, b = (layout.tp.astype(np.float64), layout.pp.astype(np.float64), layout.micro_batch.astype(np.float64))
    c = np.ones_like(t) if layout.cp is None else layout.cp.astype(np.float64)
    d = np.maximum(np.round(N / (t * p * c)), 1.0)
    return d, np.maximum(np.ceil(np.asarray(global_batch, dtype=np.float64) / (d * b)), 1.0)


def shard_fields(ev, i: int) -> dict:
    """Design i's shard group (step.py's S: the weight replicas its states are sharded over) and how many groups
    repeat them; `ev` an evaluate.LlmEvaluation."""
    s, lay = ev.space, ev.layout
    strat = LLM_STRATEGIES[lay.strategy[i]]
    reps = int(s.gpus_per_node[i] * s.nodes[i]) // int(lay.tp[i] * lay.pp[i])  # d·c weight replicas
    D = max(int(domain_gpus_of(s.take(np.array([i])))[0]), int(s.gpus_per_node[i]))
    chosen = 0 if lay.shard is None else int(lay.shard[i])
    own = min(reps, max(D // int(lay.tp[i]), 1)) if strat == "hsdp" else reps
    S = {"ddp": 1, "fsdp": reps}.get(strat, chosen or own)
    out = {"shard_group": S, "shard_groups": max(reps // max(S, 1), 1)}
    cfg = ev.cfg
    if not cfg.is_moe and getattr(cfg, "finetune", None) is None:  # weights, gradients, optimizer of a dense model
        lp = (ev.params.low_precision or {}).get(ev.precision) if ev.params is not None else None
        share = 0.0 if lp is None else (1.0 - lp["bf16_linear_share"]) * (1.0 - cfg.embedding_params / cfg.params)
        t, p = int(lay.tp[i]), int(lay.pp[i])
        parts = state_parts(cfg.params / (t * p), strat, S if strat in ("zero1", "zero2") else reps, S,
                            cfg.layers / p, share, 2.0 if lp is None else lp["bytes_per_element"],
                            ev.params.low_precision_param_gather if ev.params is not None else True)
        out.update({f"memory_{k}_gb": v / 1e9 for k, v in parts.items()})
        out["memory_optimizer_states_gb"] = out.pop("memory_optimizer_gb")
    return out
