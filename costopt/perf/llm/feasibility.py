"""Which parallel layouts fit at which GPU memory size: the data of the report's memory plot.

A layout family is (strategy, tensor degree t, pipeline degree p); its members differ by micro-batch
and activation checkpointing. For each GPU memory size in the search (80 GB: H100, A100 80 GB, ...)
and each family, over the hardware designs the search offers within the budget (every GPU of that
memory size, every node count, chassis and NIC):

    fits     some design of that memory size runs some member of the family in memory
             (memory.py: states + activations + logits <= usable = memory·(1 − reserve_fraction) − reserve_gb);
    best     then the design and member with the most tokens/s per dollar (tokens/s ÷ cost_usd, the
             solve's cost basis: capex, or USD per hour on a cloud catalog), ties to the earlier design
             in the solve's design order;
    binding  else the member and design that need the least memory, and which of its two terms is the
             larger: "model states" (weights, gradients, Adam: 16 bytes per parameter unsharded) or
             "activations and logits". A family no design of that size can run at all (t above the
             GPUs of a node, t·p not dividing the GPUs, hybrid sharding on one node) names the reason of
             the design that passed the most checks (WHY_NOT's order).

Example (tests/test_llm_report.py): llama3_8b, 8.03e9 parameters. A plain data-parallel replica
(ddp, t = p = 1) holds 16 × 8.03e9 = 128.5 GB of model states: more than any 80 GB GPU, whatever the
cluster, so the cell reads "model states". FSDP over 8 GPUs holds 16 GB of states plus two gathered
layers, so it fits an 80 GB GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costopt.hardware.cost import within_budget
from costopt.hardware.part_filter import KEPT, REASONS
from costopt.search.llm_search import LlmSearch
from costopt.perf.llm.arch import CHECKPOINTING
from costopt.perf.llm.evaluate import WHY_NOT, Layout, fastest_fitting, size_triples
from costopt.perf.llm.memory import LLM_STRATEGIES

_NO_FIT = WHY_NOT.index("does not fit in GPU memory")


def memory_grid(found: LlmSearch) -> dict[str, Any]:
    """The cells (memory size × layout family) described in the module docstring, as plain data."""
    costs, space, layouts, cfg = found.costs, found.space, found.layouts, found.cfg
    cand = np.flatnonzero(costs.buildable & found.offered & within_budget(costs, found.budget))
    cloud = found.catalog.is_cloud
    unit = ("tokens/s per USD per hour of rent" if cloud else "tokens/s per USD 1,000 of cost")
    scale = 1.0 if cloud else 1000.0
    out: dict[str, Any] = {"model": cfg.name, "params": cfg.params, "seq_len": cfg.seq_len,
                           "designs": int(len(cand)), "value_unit": unit, "memory_sizes_gb": [], "gpus_by_memory_gb": {},
                           "cells": []}
    out["left_out_by_memory_gb"] = _left_out(found, cand)
    if len(cand) == 0:
        return out
    sub = space.take(cand)
    cost = costs.cost_usd[cand]
    order = np.empty(len(space), dtype=np.int64)
    order[space.sort_key()] = np.arange(len(space))
    order = order[cand]
    fam_key = np.stack([layouts.strategy, layouts.tp, layouts.pp], axis=1)
    families, fam_of = np.unique(fam_key, axis=0, return_inverse=True)
    fam_of = fam_of.reshape(-1)
    sized = size_triples(cfg, sub, layouts, precision=found.precision, global_batch=found.global_batch,
                         keep_sizes=True, framework=found.framework)
    thr, best_k, _ = fastest_fitting(cfg, sub, layouts, sized, precision=found.precision,
                                  global_batch=found.global_batch, group_of_layout=fam_of, framework=found.framework)
    mem_of_gpu = np.array([g.memory_gb for g in sub.gpus])
    mem = mem_of_gpu[sub.gpu_idx]
    tri_mem = mem[sized.first]
    sizes = sorted(set(mem.tolist()))
    out["memory_sizes_gb"] = sizes
    out["gpus_by_memory_gb"] = {f"{m:g}": sorted({sub.gpus[i].id for i in set(sub.gpu_idx[mem == m].tolist())})
                                for m in sizes}
    value = np.where(thr > 0, thr / cost[None, :] * scale, -1.0)  # (families, designs)
    for f, (s, t, p) in enumerate(families.tolist()):
        lay_f = np.flatnonzero(fam_of == f)
        for m in sizes:
            cell: dict[str, Any] = {"memory_gb": m, "strategy": LLM_STRATEGIES[s], "tp": t, "pp": p}
            ds = np.flatnonzero(mem == m)
            v = value[f, ds]
            if v.max() > 0:
                top = ds[np.lexsort((order[ds], -v))[0]]
                k = int(best_k[f, top])
                cell.update(fits=True, best={
                    "gpu": sub.gpus[sub.gpu_idx[top]].id, "gpus_per_node": int(sub.gpus_per_node[top]),
                    "nodes": int(sub.nodes[top]), "total_gpus": int(sub.gpus_per_node[top] * sub.nodes[top]),
                    "micro_batch": int(layouts.micro_batch[k]),
                    "activation_checkpointing": CHECKPOINTING[layouts.ckpt[k]],
                    "tokens_per_s": float(thr[f, top]), "cost_usd": float(cost[top]), "value": float(value[f, top])})
            else:
                cell.update(fits=False, binding=_binding(sized, np.flatnonzero(tri_mem == m), lay_f, layouts, sub))
            out["cells"].append(cell)
    return out


def _left_out(found: LlmSearch, cand: np.ndarray) -> dict[str, list[dict[str, str]]]:
    """Catalog GPUs with no design in the grid, by memory size, each with why: the part filter's reason
    (its most common one over the GPU's designs), no design buildable within the budget, or no
    design at all (no chassis takes it, or a node costs more than the budget)."""
    space = found.space
    in_grid = set(space.gpu_idx[cand].tolist())
    reasons = found.parts.design_reasons(space)
    within = found.costs.buildable & within_budget(found.costs, found.budget)
    by_id = {g.id: i for i, g in enumerate(space.gpus)}
    out: dict[str, list[dict[str, str]]] = {}
    for g in found.catalog.gpu:
        gi = by_id.get(g.id)
        if gi is not None and gi in in_grid:
            continue
        mine = np.zeros(len(space), dtype=bool) if gi is None else space.gpu_idx == gi
        if found.parts.named_gpus and g.id not in found.parts.named_gpus:
            why = "not among the GPUs asked for"
        elif not mine.any():
            why = "no design: no chassis takes it, or one node costs more than the budget"
        elif (reasons[mine] != KEPT).all():
            codes, counts = np.unique(reasons[mine], return_counts=True)
            word = REASONS[int(codes[np.argmax(counts)])]
            why = ("left out by --exclude-gpu" if word == "excluded_gpu" else
                   f"left out by the part filter ({word.replace('_', '-')} parts; --include "
                   f"{'eol' if word == 'end_of_life' else word} offers them)")
        elif not within[mine].any():
            why = "no design buildable within the budget"
        else:
            why = "its designs are left out by the part filter (chassis or NIC)"
        out.setdefault(f"{g.memory_gb:g}", []).append({"gpu": g.id, "why": why})
    return dict(sorted(out.items(), key=lambda kv: float(kv[0])))


def _binding(sized, tris: np.ndarray, lay_f: np.ndarray, layouts: Layout, sub) -> dict[str, Any]:
    why = sized.why[np.ix_(tris, lay_f)]
    valid = (why == 0) | (why == _NO_FIT)
    if not valid.any():
        code = int(why.max())  # the reason of the design that passed the most checks
        return {"term": "layout", "reason": WHY_NOT[code].format(precision="this precision")}
    used = np.where(valid, sized.used_bytes[np.ix_(tris, lay_f)], np.inf)
    i, j = np.unravel_index(int(np.argmin(used)), used.shape)
    tri, k = int(tris[i]), int(lay_f[j])
    states = float(sized.states_bytes[tri, k])
    total = float(sized.used_bytes[tri, k])
    d = int(sized.first[tri])
    return {"term": "model states" if states >= total - states else "activations and logits",
            "needed_gb": total / 1e9, "model_states_gb": states / 1e9, "activations_gb": (total - states) / 1e9,
            "usable_gb": float(sized.limit_bytes[tri]) / 1e9,
            "at": {"gpu": sub.gpus[sub.gpu_idx[d]].id,
                   "total_gpus": int(sub.gpus_per_node[d] * sub.nodes[d]), "micro_batch": int(layouts.micro_batch[k]),
                   "activation_checkpointing": CHECKPOINTING[layouts.ckpt[k]]}}
