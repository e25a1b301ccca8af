"""Predict and solve for large transformer models (the entry points `costopt predict` / `solve` use
when the model is a transformer described by its architecture and the strategy is a sharded one).

Strategy names: `ddp` (replicas with an all-reduce; `ring` and `hierarchical` mean the same here),
`zero1`, `zero2`, `fsdp`, `hsdp`; with tensor degree `tp` inside a node and pipeline degree `pp`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.cloud_facts import capacity_summary
from costopt.core.checks import count, positive
from costopt.hardware.cost import Costs, evaluate_costs
from costopt.search.design_space import DesignSpace, enumerate_designs, single_design
from costopt.core.errors import InfeasibleError, InputError
from costopt.hardware.part_filter import KEPT, PartFilter
from costopt.search.robustness import near_ties
from costopt.search.solver import OBJECTIVES, best_on_front
from costopt.core.units import HOURS_PER_YEAR
from costopt.perf.intervals import range_phrase
from costopt.purchase.why import estimated_price_clause, estimated_price_parts
from costopt.perf.llm.arch import CHECKPOINTING, TransformerConfig, load_config_file, load_llm_model
from costopt.perf.llm.evaluate import (NODE_GRID, Layout, LlmEvaluation, all_layouts, best_layout_per_design, default_global_batch,
                       default_llm_params, design_record, evaluate_layouts, lacks_precision, mamf_fraction,
                       require_precision_somewhere, DEFAULT_FRAMEWORK)
from costopt.perf.llm.memory import LLM_STRATEGIES
from costopt.perf.llm.ranges import LlmRange, bounds, range_fields
from costopt.hardware.catalog import with_max_instances

STRATEGY_ALIASES = {"ring": "ddp", "hierarchical": "ddp"}
DEFAULT_MAX_NODES = 256


def resolve_model(model: str | None, model_config: str | Path | None, seq_len: int | None) -> TransformerConfig:
    if model_config is not None:
        cfg = load_config_file(model_config)
    elif model is not None:
        cfg = load_llm_model(model)
    else:
        raise InputError("give --model (a zoo transformer) or --model-config FILE.toml", field="model")
    return cfg.with_seq_len(seq_len) if seq_len is not None else cfg


def _strategy(strategy: str) -> str:
    s = STRATEGY_ALIASES.get(strategy, strategy)
    if s not in LLM_STRATEGIES:
        raise InputError(f"unknown strategy '{strategy}' for a transformer (choose from "
                         f"{', '.join(LLM_STRATEGIES)}; ring/hierarchical = ddp)", field="strategy")
    return s


def _catalog(catalog: str | Path | Catalog | None) -> Catalog:
    return catalog if isinstance(catalog, Catalog) else load_catalog(catalog)


OWNED_YEARS = 3.0  # an owned cluster's capex is spread over this many years in its USD per 1e9 tokens


def _add_costs(rec: dict, costs, i: int, tokens: float | None, years: float = OWNED_YEARS) -> dict:
    """Costs of design i. USD per 1e9 tokens: a rented cluster's rent per hour x hours; an owned one's
    capex spread over `years` of continuous use plus its electricity (cost.py's energy per year):

        USD/1e9 tokens = hours per 1e9 tokens x (capex / years + energy USD per year) / 8,766 h

    an estimate that assumes the cluster is always busy (`usd_per_1e9_tokens_basis` says which)."""
    rec["cost_usd"] = float(costs.cost_usd[i])
    rec["capex_usd"] = float(costs.capex_usd[i])
    rec["power_kw"] = float(costs.power_kw[i])
    rec["rack_units"] = float(costs.rack_units[i])
    thr = rec["tokens_per_s"]
    ok = rec["feasible"] and thr and math.isfinite(thr)
    rec["hours_per_1e9_tokens"] = 1e9 / thr / 3600.0 if ok else None
    rented = costs.usd_per_hour is not None and costs.usd_per_hour[i] > 0
    if not ok:
        rec["usd_per_1e9_tokens"] = None
    elif rented:
        rec["usd_per_1e9_tokens"] = float(costs.usd_per_hour[i]) * rec["hours_per_1e9_tokens"]
    else:
        owned_per_hour = (float(costs.capex_usd[i]) / years + float(costs.energy_usd_per_year[i])) / HOURS_PER_YEAR
        rec["usd_per_1e9_tokens"] = owned_per_hour * rec["hours_per_1e9_tokens"]
    rec["usd_per_1e9_tokens_basis"] = ("rent per hour x hours" if rented else
                                       f"capex over {years:g} years of continuous use plus electricity (an estimate: "
                                       "the cluster always busy)")
    if tokens is not None:
        rec["tokens_to_train"] = float(tokens)
        rec["hours_to_train"] = tokens / thr / 3600.0 if ok else None
        rec["cost_to_train_usd"] = (float(costs.usd_per_hour[i]) * rec["hours_to_train"] if ok and rented
                                    else rec["cost_usd"])
    if ok and rec.get("tokens_per_s_low") is not None:
        # time runs against throughput: the low end of tokens/s is the high end of hours (ranges.py)
        slow, fast = thr / rec["tokens_per_s_low"], thr / rec["tokens_per_s_high"]
        for key in ("hours_per_1e9_tokens", "usd_per_1e9_tokens") + (("hours_to_train",) if tokens is not None else ()):
            rec[f"{key}_low"], rec[f"{key}_high"] = rec[key] * fast, rec[key] * slow
        if tokens is not None:  # an owned cluster's cost to train is its purchase: no range
            rec["cost_to_train_usd_low"], rec["cost_to_train_usd_high"] = (
                (rec["cost_to_train_usd"] * fast, rec["cost_to_train_usd"] * slow) if rented
                else (rec["cost_to_train_usd"], rec["cost_to_train_usd"]))
    return rec


def design_ranges(ev: LlmEvaluation) -> LlmRange:
    """The 80% range of every design of an evaluation in one pass (ranges.py); the MAMF cap per GPU type."""
    s = ev.space
    params = default_llm_params()
    by_id = {g.id: g for g in s.gpus}
    mamf = np.array([mamf_fraction(g, params, by_id, ev.precision)[0] for g in s.gpus], dtype=np.float64)
    ids = np.array([g.id for g in s.gpus])
    tm = ev.timing
    return bounds(tm.tokens_per_s, tm.mfu, ids[s.gpu_idx], mamf[s.gpu_idx])


def _ranged(rec: dict, rng: LlmRange, i: int) -> dict:
    return range_fields(rec, float(rng.low[i]), float(rng.high[i]), int(rng.sample[i]))


def _memory_phrase(rec: dict) -> str:
    return (f"{rec['memory_per_gpu_gb']:.1f} GB per GPU needed (weights, gradients and Adam states "
            f"{rec['memory_model_states_gb']:.1f} GB, activations and logits {rec['memory_activations_gb']:.1f} GB), "
            f"{rec['memory_limit_gb']:.1f} GB usable of {rec['gpu_memory_gb']:g} GB")


def predict_llm(model: str | None, gpu: str, gpus_per_node: int, nodes: int, nic: str | None, strategy: str, *,
                tp: int = 1, pp: int = 1, micro_batch: int = 1, checkpointing: str | None = None,
                seq_len: int | None = None, global_batch: int | None = None, precision: str = "amp_bf16",
                nics_per_node: int = 1, chassis: str | None = None, catalog: str | Path | Catalog | None = None,
                model_config: str | Path | None = None, tokens: float | None = None, vp: int = 1,
                framework: str = DEFAULT_FRAMEWORK) -> dict[str, Any]:
    """One named design; `checkpointing=None` takes the fastest of none/selective/full that fits.
    Raises InfeasibleError (exit 1) naming why when the design cannot run (memory, degrees), InputError
    (exit 2) when the GPU lacks the precision's format."""
    for name, v in (("tp", tp), ("pp", pp), ("micro-batch", micro_batch), ("nodes", nodes),
                    ("GPUs per node", gpus_per_node), ("NICs per node", nics_per_node), ("vp", vp)):
        count(name, v)
    positive("tokens", tokens)
    if global_batch is not None:
        count("global batch", global_batch)
    cfg = resolve_model(model, model_config, seq_len)
    s = _strategy(strategy)
    cat = _catalog(catalog)
    space = single_design(cat, gpu, gpus_per_node, nodes, nic, "ring", "gpu", chassis, nics_per_node)
    lacking = lacks_precision(space.gpus[int(space.gpu_idx[0])], precision)
    if lacking:
        raise InputError(f"--precision {precision}: {lacking}", field="precision")
    gb = global_batch or default_global_batch(cfg)
    ckpts = CHECKPOINTING if checkpointing is None else (checkpointing,)
    for c in ckpts:
        if c not in CHECKPOINTING:
            raise InputError(f"unknown checkpointing '{c}' (choose from {', '.join(CHECKPOINTING)})", field="checkpointing")
    one = lambda v: np.array([v])  # noqa: E731
    evs: list[LlmEvaluation] = [
        evaluate_layouts(cfg, space, Layout(one(LLM_STRATEGIES.index(s)), one(tp), one(pp), one(micro_batch),
                                            one(CHECKPOINTING.index(c)), vp=one(vp)), precision=precision, global_batch=gb,
                         framework=framework)
        for c in ckpts]
    fitting = [e for e in evs if e.fits[0]]
    ev = max(fitting, key=lambda e: e.timing.tokens_per_s[0]) if fitting else evs[-1]
    rec = _ranged(design_record(ev, 0), design_ranges(ev), 0)
    rec["model"] = cfg.name
    rec["params"] = cfg.params
    rec["flops_per_token"] = cfg.model_flops_per_token
    if strategy != s:
        rec["strategy_requested"] = strategy
    costs = evaluate_costs(space, cat.site, facility=cat.facility)
    rec = _add_costs(rec, costs, 0, tokens)
    if not rec["feasible"]:
        reason = rec["infeasible_reason"]
        if reason == "does not fit in GPU memory":
            hint = {"ddp": "every GPU holds a whole replica with its Adam states (16 bytes per parameter): "
                           "try --strategy fsdp, zero2 or hsdp, or a larger --tp/--pp"}.get(s, "try a larger --tp or --pp, "
                                                                                         "a smaller --micro-batch or --checkpointing full")
            msg = (f"{cfg.name} ({cfg.params / 1e9:.1f} B parameters) does not fit with {s} on {gpu}: "
                   f"{_memory_phrase(rec)}; {hint}")
        else:
            msg = f"{cfg.name} cannot run as asked on {gpu}: {reason}"
        raise InfeasibleError(msg, nearest=None, reason="memory" if "memory" in reason else "layout")
    return rec


@dataclass
class LlmSearch:
    """A large-model solve up to the choice: every hardware design with its fastest fitting layout,
    priced; what `solve_llm` picks from and what the report plots."""

    cfg: TransformerConfig
    catalog: Catalog
    budget: float
    objective: str
    precision: str
    global_batch: int
    space: DesignSpace
    layouts: Layout
    ev: LlmEvaluation
    costs: Costs
    offered: np.ndarray  # bool: kept by the part filter
    parts: PartFilter
    ranges: LlmRange  # 80% range of every design's tokens/s (ranges.py)
    framework: str = DEFAULT_FRAMEWORK

    @property
    def ok(self) -> np.ndarray:
        return self.ev.fits & self.costs.buildable & self.offered


def search_llm(budget: float | None, model: str | None, *, objective: str = "throughput",
               catalog: str | Path | Catalog | None = None, precision: str = "amp_bf16", seq_len: int | None = None,
               global_batch: int | None = None, gpus: list[str] | None = None, nics: list[str] | None = None,
               gpus_per_node: list[int] | None = None, max_nodes: int | None = None,
               model_config: str | Path | None = None, strategies: list[str] | None = None,
               include: list[str] | None = None, exclude_gpus: list[str] | None = None,
               max_instances: int | None = None, framework: str = DEFAULT_FRAMEWORK) -> LlmSearch:
    """The design space of a large-model solve, each design with its fastest layout that fits, and costs."""
    if objective not in OBJECTIVES or objective == "cost":
        raise InputError("large-model solves take --objective throughput or cost-per-throughput", field="objective")
    if budget is None or not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise InputError(f"--budget must be a positive number of USD, got {budget}", field="budget")
    if max_nodes is not None:
        count("max nodes", max_nodes)
    cfg = resolve_model(model, model_config, seq_len)
    cat = _catalog(catalog)
    if max_instances is not None:  # a cloud catalog: at most this many instances of a type (cloud_facts.py)
        count("max instances", max_instances)
        cat = with_max_instances(cat, max_instances)
    parts = PartFilter.from_options(include, exclude_gpus, gpus, cat)
    gb = global_batch or default_global_batch(cfg)
    space = enumerate_designs(cat, max_nodes=max_nodes or DEFAULT_MAX_NODES, strategies=("ring",), gpu_ids=gpus,
                              nic_ids=nics, gpus_per_node=gpus_per_node, node_budget_usd=budget)
    space = space.take(np.flatnonzero(np.isin(space.nodes, NODE_GRID)))
    require_precision_somewhere([space.gpus[i] for i in sorted(set(space.gpu_idx.tolist()))], precision)
    layouts = strategy_layouts(strategies)
    ev = best_layout_per_design(cfg, space, precision=precision, global_batch=gb, layouts=layouts, framework=framework)
    costs = evaluate_costs(space, cat.site, facility=cat.facility)
    offered = parts.design_reasons(space) == KEPT
    return LlmSearch(cfg, cat, float(budget), objective, precision, gb, space, layouts, ev, costs, offered, parts,
                     design_ranges(ev), framework)


def strategy_layouts(strategies: list[str] | None) -> Layout:
    """Every layout, or those of the named strategies."""
    layouts = all_layouts()
    if not strategies:
        return layouts
    keep = [LLM_STRATEGIES.index(_strategy(s)) for s in strategies]
    sel = np.isin(layouts.strategy, keep)
    return Layout(*(getattr(layouts, f)[sel] for f in ("strategy", "tp", "pp", "micro_batch", "ckpt")))


def solve_llm(budget: float | None, model: str | None, *, tokens: float | None = None, objective: str = "throughput",
              catalog: str | Path | Catalog | None = None, precision: str = "amp_bf16", seq_len: int | None = None,
              global_batch: int | None = None, gpus: list[str] | None = None, nics: list[str] | None = None,
              gpus_per_node: list[int] | None = None, max_nodes: int | None = None, top: int = 10,
              model_config: str | Path | None = None, strategies: list[str] | None = None,
              include: list[str] | None = None, exclude_gpus: list[str] | None = None,
              max_instances: int | None = None, framework: str = DEFAULT_FRAMEWORK) -> dict[str, Any]:
    """Best hardware for the money with its best layout (strategy, tp, pp, micro-batch, checkpointing).
    The same part filter as data-parallel solves: current data-centre and workstation parts unless
    `include` opens consumer, legacy or end-of-life ones (part_filter.py)."""
    if objective not in OBJECTIVES or objective == "cost":
        raise InputError("large-model solves take --objective throughput or cost-per-throughput", field="objective")
    if budget is None or not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise InputError(f"--budget must be a positive number of USD, got {budget}", field="budget")
    positive("tokens", tokens)
    count("top", top)
    found = search_llm(budget, model, objective=objective, catalog=catalog, precision=precision, seq_len=seq_len,
                       global_batch=global_batch, gpus=gpus, nics=nics, gpus_per_node=gpus_per_node,
                       max_nodes=max_nodes, model_config=model_config, strategies=strategies, include=include,
                       exclude_gpus=exclude_gpus, max_instances=max_instances, framework=framework)
    return choose_llm(found, tokens=tokens, top=top)


def choose_llm(found: LlmSearch, *, tokens: float | None = None, top: int = 10,
               years: float = OWNED_YEARS) -> dict[str, Any]:
    """The pick on the Pareto front of a search, the best design of each other GPU type, and the Why."""
    cfg, space, ev, costs, budget, objective = (found.cfg, found.space, found.ev, found.costs, found.budget,
                                                found.objective)
    layouts, parts, gb, offered = found.layouts, found.parts, found.global_batch, found.offered
    ok = found.ok
    if not ok.any():
        raise InfeasibleError(f"no design in the catalog can train {cfg.name} ({cfg.params / 1e9:.1f} B parameters) "
                              f"at sequence length {cfg.seq_len}: none fits in GPU memory with any layout",
                              reason="memory")
    cand = np.flatnonzero(ok)
    order = np.empty(len(space), dtype=np.int64)
    order[space.sort_key()] = np.arange(len(space))
    thr = ev.timing.tokens_per_s
    best_local, info = best_on_front(objective, costs.cost_usd[cand], thr[cand], order[cand], budget)
    if best_local is None:
        cheapest = int(cand[np.lexsort((order[cand], costs.cost_usd[cand]))[0]])
        nearest = {**_add_costs(_ranged(design_record(ev, cheapest), found.ranges, cheapest), costs, cheapest, tokens,
                                years), "model": cfg.name}
        raise InfeasibleError(f"no design that can train {cfg.name} fits a budget of ${budget:,.0f}; the nearest "
                              f"feasible design is the cheapest that can: {_design_phrase(nearest)} for "
                              f"${nearest['cost_usd']:,.0f} (raise --budget to at least that)",
                              nearest=nearest, reason="budget")
    best = int(cand[best_local])
    # alternatives: the best design of each other GPU type within the budget
    alts = []
    within = cand[costs.cost_usd[cand] <= budget]
    for gi in sorted(set(space.gpu_idx[within].tolist())):
        if gi == space.gpu_idx[best]:
            continue
        mine = within[space.gpu_idx[within] == gi]
        j, _ = best_on_front(objective, costs.cost_usd[mine], thr[mine], order[mine], budget)
        if j is not None:
            alts.append(int(mine[j]))
    alts.sort(key=lambda i: (-thr[i], costs.cost_usd[i], order[i]))
    rng = found.ranges
    rec = lambda i: {**_add_costs(_ranged(design_record(ev, i), rng, i), costs, i, tokens, years),  # noqa: E731
                     "model": cfg.name}
    best_rec = rec(best)
    shown = alts[: max(top - 1, 0)]
    alt_recs = [rec(i) for i in shown]
    # near-ties: the best design of another GPU type whose 80% range overlaps the pick's (robustness.py's rule)
    both = np.array([best, *shown], dtype=np.int64)
    best_rec["near_tie"] = False
    for r, flag in zip(alt_recs, near_ties(rng.low[both], rng.high[both], 0)[1:]):
        r["near_tie"] = bool(flag)
    return {"model": cfg.name, "params": cfg.params, "seq_len": cfg.seq_len, "budget_usd": budget,
            "objective": objective, "global_batch_sequences": gb, "tokens_to_train": tokens,
            "candidates_evaluated": int(len(space)), "layouts_per_design": int(len(layouts.tp)),
            "best": best_rec, "best_per_gpu": alt_recs,
            "solver": {**info, "feasible_hardware_designs": int(ok.sum()),
                       "near_ties": sum(1 for r in alt_recs if r["near_tie"])},
            "parts_offered": parts.describe(), "designs_left_out_by_part_filter": int((~offered).sum()),
            "why": _why(best_rec, alt_recs[:1] or [rec(i) for i in alts[:1]], estimated_price_parts(space, best),
                        vendor=space.gpus[int(space.gpu_idx[best])].vendor),
            # a rented pick: its instance type's capacity cap and whether it bound (cloud_facts.py)
            "capacity": capacity_summary(space.chassis[int(space.chassis_idx[best])], int(space.nodes[best]))}


def _design_phrase(d: dict, joiner: str = ", ") -> str:
    """'8 x mi325x (zero1, tp 2, pp 1, micro-batch 1, checkpointing none), 75,110 tokens/s (80% range ...)'."""
    thr = range_phrase(d["tokens_per_s"], d.get("tokens_per_s_low"), d.get("tokens_per_s_high"),
                       f"from the {d.get('range_basis')}", unit="tokens/s")
    return (f"{d['total_gpus']} x {d['gpu']} ({d['strategy']}, tp {d['tp']}, pp {d['pp']}, micro-batch "
            f"{d['micro_batch']}, checkpointing {d['activation_checkpointing']}){joiner}{thr}")


def _why(best: dict, others: list[dict], estimated_prices: list[str] = (), vendor: str = "nvidia") -> str:
    parts = [f"{_design_phrase(best, ' gives ')} at MFU {100 * best['mfu']:.0f}% for ${best['cost_usd']:,.0f}, "
             f"using {best['memory_per_gpu_gb']:.0f} of {best['gpu_memory_gb']:g} GB per GPU"]
    if others:
        o = others[0]
        parts.append(f"the best {o['gpu']} design gives {o['tokens_per_s']:,.0f} tokens/s for ${o['cost_usd']:,.0f}"
                     + (" (a near tie: the two ranges overlap)" if o.get("near_tie") else ""))
    # the matmul fraction is eta x the GPU's measured MAMF (its own, or its generation's: an estimate),
    # eta fitted on published runs; compute_basis names which for this GPU
    parts.append(f"its compute is a roofline estimate, not a measurement on this GPU "
                 f"({best['compute_basis'].split('; an estimate')[0]})")
    if vendor != "nvidia":
        parts.append(f"no published {vendor.upper()} training figure was found, so {best['gpu']}'s efficiency is "
                     f"NVIDIA's (an estimate, less sure)")
    if estimated_prices:
        parts.append(estimated_price_clause(list(estimated_prices)))
    return "; ".join(parts) + "."
