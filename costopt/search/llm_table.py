"""A large-model search as a table: the rows of chosen designs as columns built from the search's arrays
(no loop per design), for the ranked export (purchase/llm_purchasing.py) and the candidates of a
large-model job in a mix (search/multijob/pipeline.py).

USD per 1e9 tokens is the rule of `llm_search.usd_per_hour_of_use` (its docstring), on arrays: rented, rent per
hour x hours; owned, (capex / years + electricity per year) / 8,766 h x hours.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from costopt.hardware.cost import CostBasis
from costopt.hardware.rack_scale import domain_gpus_of
from costopt.perf.llm.arch import CHECKPOINTING
from costopt.perf.llm.memory import LLM_STRATEGIES
from costopt.search.design_space import NO_NIC
from costopt.search.llm_search import OWNED_YEARS, LlmSearch, usd_per_hour_of_use


def llm_frame(found: LlmSearch, idx: np.ndarray, basis: CostBasis, tokens: float | None,
              years: float = OWNED_YEARS) -> pd.DataFrame:
    """The rows `idx` of a large-model table, built from the search's arrays (the fields of
    `choose_llm`'s records that a spreadsheet holds, with their units in the names)."""
    s, ev, c, rng = found.space, found.ev, found.costs, found.ranges
    lay, tm = ev.layout, ev.timing
    ids = lambda items: np.array([x.id for x in items], dtype=object)  # noqa: E731
    G, M = s.gpus_per_node[idx], s.nodes[idx]
    tp, pp = lay.tp[idx], lay.pp[idx]
    one = np.ones(len(idx), dtype=np.int64)
    vp, cp = (one if lay.vp is None else lay.vp[idx]), (one if lay.cp is None else lay.cp[idx])
    dp = (G * M) // (tp * pp * cp)
    mb, ga = lay.micro_batch[idx], ev.grad_accum[idx]
    has_nic = s.nic_idx[idx] != NO_NIC
    per_hour, rented = usd_per_hour_of_use(c, idx, years)
    hourly = np.where(rented, per_hour, 0.0)  # the rent column: 0 on an owned design
    x, lo, hi = tm.tokens_per_s[idx], rng.low[idx], rng.high[idx]
    h9 = 1e9 / x / 3600.0
    usd9 = per_hour * h9
    ckpt = np.array(CHECKPOINTING, dtype=object)[lay.ckpt[idx]]
    gflop = {k: ev.cfg.hardware_flops_per_token(k) / 1e9 for k in CHECKPOINTING}
    df = pd.DataFrame({
        "gpu": ids(s.gpus)[s.gpu_idx[idx]], "chassis": ids(s.chassis)[s.chassis_idx[idx]],
        "gpus_per_node": G, "nodes": M, "total_gpus": G * M,
        "nic": np.array([n.id for n in s.nics] + [None], dtype=object)[np.where(has_nic, s.nic_idx[idx], len(s.nics))],
        "nics_per_node": np.where(has_nic, s.nics_per_node[idx], 0),
        "strategy": np.array(LLM_STRATEGIES, dtype=object)[lay.strategy[idx]], "tp": tp, "pp": pp, "vp": vp, "cp": cp,
        "shard_group": _shard_group(found, idx), "dp": dp,
        "micro_batch": mb, "grad_accum": ga, "global_batch_sequences": ga * mb * np.maximum(dp, 1),
        "seq_len": np.full(len(idx), ev.cfg.seq_len), "activation_checkpointing": ckpt,
        "precision": np.full(len(idx), ev.precision, dtype=object),
        "cost_usd": c.cost_usd[idx], "usd_per_hour": hourly,
        "cost_basis": np.where(rented, basis.label(True), basis.label(False)),
        "capex_usd": c.capex_usd[idx], "energy_usd_per_year": c.energy_usd_per_year[idx],
        "power_kw": c.power_kw[idx], "rack_units": c.rack_units[idx],
        "tokens_per_s": x, "tokens_per_s_low": lo, "tokens_per_s_high": hi,
        "tokens_per_s_per_gpu": tm.tokens_per_s_per_gpu[idx], "mfu": tm.mfu[idx],
        "mfu_low": tm.mfu[idx] * lo / x, "mfu_high": tm.mfu[idx] * hi / x,
        "memory_per_gpu_gb": ev.memory_per_gpu_bytes[idx] / 1e9, "memory_model_states_gb": ev.memory_states_bytes[idx] / 1e9,
        "memory_activations_gb": (ev.memory_per_gpu_bytes[idx] - ev.memory_states_bytes[idx]) / 1e9,
        "memory_limit_gb": ev.memory_limit_bytes[idx] / 1e9,
        "gpu_memory_gb": np.array([g.memory_gb for g in s.gpus], dtype=np.float64)[s.gpu_idx[idx]],
        "t_step_s": tm.t_step_s[idx], "t_compute_s": tm.t_compute_s[idx], "t_pipeline_bubble_s": tm.t_bubble_s[idx],
        "t_data_parallel_exposed_s": tm.t_dp_exposed_s[idx], "t_tensor_parallel_s": tm.t_tp_s[idx],
        "t_pipeline_p2p_s": tm.t_pp_s[idx], "t_optimizer_s": tm.t_opt_s[idx],
        "bottleneck": tm.bound[idx].astype(str).astype(object),
        "hours_per_1e9_tokens": h9, "usd_per_1e9_tokens": usd9,
    })
    if tokens is not None:
        hours = tokens / x / 3600.0
        df["hours_to_train"] = hours
        df["hours_to_train_low"], df["hours_to_train_high"] = hours * x / hi, hours * x / lo
        df["cost_to_train_usd"] = np.where(rented, hourly * hours, c.cost_usd[idx])
    df["compute_source"] = "roofline"
    df["compute_basis"] = [f"roofline: {gflop[k]:.1f} GFLOP/token (checkpointing {k}); an estimate, not a "
                           "measurement on this GPU" for k in ckpt]
    return df


def _shard_group(found: LlmSearch, idx: np.ndarray) -> np.ndarray:
    """The replicas each design's states are sharded over (step.py's S, as layouts.shard_fields gives it)."""
    s, lay = found.space, found.ev.layout
    strat, t = lay.strategy[idx], lay.tp[idx]
    reps = (s.gpus_per_node[idx] * s.nodes[idx]) // (t * lay.pp[idx])
    D = np.maximum(domain_gpus_of(s)[idx].astype(np.int64), s.gpus_per_node[idx])
    chosen = np.zeros(len(idx), dtype=np.int64) if lay.shard is None else lay.shard[idx]
    own = np.where(strat == LLM_STRATEGIES.index("hsdp"), np.minimum(reps, np.maximum(D // t, 1)), reps)
    S = np.where(chosen > 0, chosen, own)
    return np.where(strat == LLM_STRATEGIES.index("ddp"), 1, np.where(strat == LLM_STRATEGIES.index("fsdp"), reps, S))


__all__ = ["llm_frame"]
