"""Predict and solve for large transformer models (the entry points `costopt predict` / `solve` use
when the model is a transformer described by its architecture and the strategy is a sharded one).

Strategy names: `ddp` (replicas with an all-reduce; `ring` and `hierarchical` mean the same here),
`zero1`, `zero2`, `fsdp`, `hsdp`; with tensor degree `tp` inside a node and pipeline degree `pp`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.cloud_facts import capacity_summary
from costopt.core import checks
from costopt.core.checks import count, non_negative, positive
from costopt.hardware.bom import bom_dicts, oldest_price, tco_lines
from costopt.hardware.cost import CostBasis, Costs, evaluate_costs, price_on_basis, take_costs, within_budget
from costopt.search.design_space import DesignSpace, enumerate_designs, single_design
from costopt.core.errors import InfeasibleError, InputError
from costopt.hardware.part_filter import KEPT, PartFilter
from costopt.search.llm_experts import with_expert_parallel
from costopt.search.llm_nodes import search_node_counts
from costopt.search.robustness import near_ties
from costopt.search.solver import OBJECTIVES, SOLVER_NAME, best_on_front, objective_values
from costopt.search.evaluation import DesignResults
from costopt.search.limits import Request, at_confidence, check_cost_options, infeasible as limits_infeasible, masks as limits_masks, \
    pick as limits_pick
from costopt.core.units import HOURS_PER_YEAR
from costopt.perf.intervals import range_phrase
from costopt.purchase.why import estimated_price_clause, estimated_price_parts
from costopt.perf.llm.arch import CHECKPOINTING, TransformerConfig, load_config_file, load_llm_model
from costopt.perf.llm.evaluate import (Layout, LlmEvaluation, all_layouts, best_layout_per_design, default_global_batch,
                       default_llm_params, design_record, evaluate_layouts, lacks_precision, mamf_fraction,
                       require_precision_somewhere, DEFAULT_FRAMEWORK, params_for_framework)
from costopt.perf.llm.layouts import search_layouts
from costopt.perf.llm.finetune import FineTune, lacks_finetune, resolve as resolve_finetune, split_strategies
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


def _with_finetune(cfg: TransformerConfig, ft: FineTune | None) -> TransformerConfig:
    """The model with the fine-tune it trains (finetune.py); a mixture-of-experts fine-tune is not modelled."""
    if ft is not None and cfg.is_moe:
        raise InputError(f"--strategy {ft.method}: fine-tuning a mixture-of-experts model ({cfg.name}) is not modelled "
                         "(dense transformers only)", field="strategy")
    return cfg.with_finetune(ft)


def _strategy(strategy: str) -> str:
    s = STRATEGY_ALIASES.get(strategy, strategy)
    if s not in LLM_STRATEGIES:
        raise InputError(f"unknown strategy '{strategy}' for a transformer (choose from "
                         f"{', '.join(LLM_STRATEGIES)}; ring/hierarchical = ddp)", field="strategy")
    return s


def _catalog(catalog: str | Path | Catalog | None) -> Catalog:
    return catalog if isinstance(catalog, Catalog) else load_catalog(catalog)


OWNED_YEARS = 3.0  # an owned cluster's capex is spread over this many years in its USD per 1e9 tokens


def usd_per_hour_of_use(costs, idx, years: float = OWNED_YEARS) -> tuple[np.ndarray, np.ndarray]:
    """What an hour of training costs on designs `idx`, and which of them are rented: a rented
    cluster's rent per hour; an owned one's capex spread over `years` of continuous use plus its
    electricity (cost.py's energy per year):

        USD per hour = (capex / years + energy USD per year) / 8,766 h

    an estimate that assumes the cluster is always busy. USD per 1e9 tokens = this x hours per 1e9 tokens."""
    idx = np.asarray(idx)
    rented = (costs.usd_per_hour[idx] > 0) if costs.usd_per_hour is not None else np.zeros(idx.shape, dtype=bool)
    hourly = costs.usd_per_hour[idx] if costs.usd_per_hour is not None else np.zeros(idx.shape)
    owned = (costs.capex_usd[idx] / years + costs.energy_usd_per_year[idx]) / HOURS_PER_YEAR
    return np.where(rented, hourly, owned), rented


def _add_costs(rec: dict, costs, i: int, tokens: float | None, years: float = OWNED_YEARS) -> dict:
    """Costs of design i; USD per 1e9 tokens by `usd_per_hour_of_use` (`usd_per_1e9_tokens_basis` says
    which rule)."""
    rec["cost_usd"] = float(costs.cost_usd[i])
    rec["capex_usd"] = float(costs.capex_usd[i])
    rec["power_kw"] = float(costs.power_kw[i])
    rec["rack_units"] = float(costs.rack_units[i])
    thr = rec["tokens_per_s"]
    ok = rec["feasible"] and thr and math.isfinite(thr)
    rec["hours_per_1e9_tokens"] = 1e9 / thr / 3600.0 if ok else None
    per_hour, rented_arr = usd_per_hour_of_use(costs, [i], years)
    rented = bool(rented_arr[0])
    rec["usd_per_1e9_tokens"] = float(per_hour[0]) * rec["hours_per_1e9_tokens"] if ok else None
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
    ft = getattr(ev.cfg, "finetune", None)
    return bounds(tm.tokens_per_s, tm.mfu, ids[s.gpu_idx], mamf[s.gpu_idx], precision=ev.precision, moe=ev.cfg.is_moe,
                  framework=ev.framework, finetune=None if ft is None else ft.method)


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
                model_config: str | Path | None = None, tokens: float | None = None, vp: int = 1, cp: int = 1, framework: str = DEFAULT_FRAMEWORK,
                ep: int = 1, lora_rank: int | None = None, lora_targets: str | None = None,
                shard_group: int = 0, tco_years: float = 0.0, support_years: float = 0.0,
                today: date | str | None = None) -> dict[str, Any]:
    """One named design; `checkpointing=None` takes the fastest of none/selective/full that fits.
    Priced as solve prices it (`tco_years`: the whole cost of owning, hardware/cost.py `CostBasis`;
    `support_years` bought up front), with its bill of materials, its TCO lines and the age of its oldest
    price counted to `today` (--as-of).
    `strategy` is one layout name, or a fine-tune (sft, lora, qlora; finetune.py) with at most one layout
    name (a list or 'lora,fsdp'); without a layout named (None, '' or [] for pre-training) the fastest layout
    strategy that fits. `shard_group` > 0: zero1/zero2/hsdp shard over groups of that many replicas (step.py).
    Raises InfeasibleError (exit 1) naming why when the design cannot run (memory, degrees), InputError
    (exit 2) when the GPU lacks the precision's format or the fine-tune cannot run so."""
    for name, v in (("tp", tp), ("pp", pp), ("micro-batch", micro_batch), ("nodes", nodes),
                    ("GPUs per node", gpus_per_node), ("NICs per node", nics_per_node), ("vp", vp), ("cp", cp), ("ep", ep)):
        count(name, v)
    positive("tokens", tokens)
    if global_batch is not None:
        count("global batch", global_batch)
    method, named = split_strategies([x for x in strategy.split(",") if x] if isinstance(strategy, str) else strategy)
    ft = resolve_finetune(method, lora_rank, lora_targets)
    if shard_group:
        count("shard group", shard_group)
    if len(named) > 1:
        raise InputError(f"--strategy: predict takes one layout ({', '.join(LLM_STRATEGIES)}), optionally with a "
                         f"fine-tune (sft, lora, qlora); got {', '.join(named) or 'none'}", field="strategy")
    lacking = lacks_finetune(ft, precision, tp, pp, cp)
    if lacking:
        raise InputError(f"--strategy {ft.method}: {lacking}", field="strategy")
    cfg = _with_finetune(resolve_model(model, model_config, seq_len), ft)
    if ep > 1 and not cfg.is_moe:
        raise InputError(f"--ep {ep}: expert parallel splits the experts of a mixture-of-experts model; {cfg.name} is "
                         "dense (no experts)", field="ep")
    tried = [_strategy(named[0])] if named else [x for x in LLM_STRATEGIES if x != "hsdp" or nodes > 1]
    if shard_group and not named:  # a shard group applies to zero1, zero2 and hsdp only
        tried = [x for x in tried if x in ("zero1", "zero2", "hsdp")]
    if shard_group and tried[0] not in ("zero1", "zero2", "hsdp"):
        raise InputError(f"--shard-group {shard_group}: applies to zero1, zero2 and hsdp (fsdp shards over every "
                         f"data-parallel rank, ddp over none); got --strategy {tried[0]}", field="shard_group")
    s = tried[0]
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
        evaluate_layouts(cfg, space, Layout(one(LLM_STRATEGIES.index(x)), one(tp), one(pp), one(micro_batch),
                                            one(CHECKPOINTING.index(c)), vp=one(vp), cp=one(cp), ep=one(ep),
                                            shard=one(shard_group)),
                         precision=precision,
                         global_batch=gb,
                         framework=framework,
                         hold_batch=global_batch is not None)
        for x in tried for c in ckpts]
    fitting = [e for e in evs if e.fits[0]]
    ev = max(fitting, key=lambda e: e.timing.tokens_per_s[0]) if fitting else evs[-1]
    s = LLM_STRATEGIES[int(ev.layout.strategy[0])]
    rec = _ranged(design_record(ev, 0), design_ranges(ev), 0)
    rec["model"] = cfg.name
    rec["params"] = cfg.params
    rec["flops_per_token"] = cfg.model_flops_per_token
    if named and named[0] != s:
        rec["strategy_requested"] = named[0]
    if not named:
        rec["strategy_rule"] = f"no layout named: the fastest of {', '.join(tried)} that fits"
    check_cost_options(cat, support_years)
    day = checks.as_of(today) or date.today()  # the day price ages are counted to (--as-of)
    basis = CostBasis(tco_years=tco_years)
    costs = price_on_basis(evaluate_costs(space, cat.site, facility=cat.facility, support_years=support_years),
                           np.ones(1), basis)
    rec = _add_costs(rec, costs, 0, tokens)
    if not rec["feasible"]:
        reason = rec["infeasible_reason"]
        if reason == "does not fit in GPU memory":
            hint = {"ddp": "every GPU holds a whole replica with its Adam states (16 bytes per parameter): "
                           "try --strategy fsdp, zero2 or hsdp, or a larger --tp/--pp"}.get(s, "try a larger --tp or --pp, "
                                                                                         "a smaller --micro-batch or --checkpointing full")
            msg = (f"{cfg.name} ({cfg.params / 1e9:.1f} B parameters) does not fit with {s} on {gpu}: "
                   f"{_memory_phrase(rec)}; {hint}")
        elif reason.startswith("the global batch"):
            msg = (f"{cfg.name} cannot hold --global-batch {gb:,} on {rec['total_gpus']} x {gpu}: data-parallel degree "
                   f"{rec['dp']} x micro-batch {rec['micro_batch']} = {rec['dp'] * rec['micro_batch']:,} sequences "
                   f"does not divide it; choose a global batch that is a multiple of it, or other --tp/--pp/--micro-batch")
        else:
            msg = f"{cfg.name} cannot run as asked on {gpu}: {reason}"
        raise InfeasibleError(msg, nearest=None, reason="memory" if "memory" in reason else "layout")
    rented = bool(costs.rented[0]) if costs.rented is not None else False
    rec["cost_basis"] = basis.label(rented) + (f", with {support_years:g} years of support bought up front"
                                               if support_years else "")
    rec["bom"] = bom_dicts(cat, space, costs, 0)
    if tco_years and not rented:
        rec["tco"] = tco_lines(cat, costs, 0, tco_years)
    age = oldest_price(rec["bom"], day)
    rec["oldest_price_date"], rec["price_warning"], rec["as_of"] = (age["oldest_price_date"], age["warning"],
                                                                    day.isoformat())
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
    basis: CostBasis = field(default_factory=CostBasis)  # what cost_usd means (hardware/cost.py)
    support_years: float = 0.0
    exact_batch: bool = False  # every design holds global_batch exactly (--global-batch given)
    skipped_by_bound: int = 0  # node counts never timed: their bound cannot beat their GPU type's best (llm_nodes.py)
    framework: str = DEFAULT_FRAMEWORK  # the training software the designs are timed for (evaluate.FRAMEWORKS)

    @property
    def ok(self) -> np.ndarray:
        return self.ev.fits & self.costs.buildable & self.offered

    def results(self, tokens: float | None = None, years: float = OWNED_YEARS) -> DesignResults:
        """This search as the one result interface (search/evaluation.py): tokens/s per design with its
        80% range, feasibility and reason, memory, the step breakdown and the compute basis."""
        ev, rng = self.ev, self.ranges
        tm = ev.timing
        ix = lambda idx: np.asarray(idx, dtype=np.int64)  # noqa: E731

        def rows(idx) -> list[dict[str, Any]]:
            return [{**_add_costs(_ranged(design_record(ev, i), rng, i), self.costs, i, tokens, years),
                     "model": self.cfg.name} for i in ix(idx).tolist()]

        return DesignResults(
            "tokens/s", self.space, self.costs, tm.tokens_per_s, ev.fits,
            lambda idx: (rng.low[ix(idx)], rng.high[ix(idx)]),
            lambda idx: ev.why_not[ix(idx)].astype(object),
            lambda idx: ev.memory_per_gpu_bytes[ix(idx)] / 1e9,
            lambda idx: {"t_step_s": tm.t_step_s[ix(idx)], "t_compute_s": tm.t_compute_s[ix(idx)],
                         "t_pipeline_bubble_s": tm.t_bubble_s[ix(idx)],
                         "t_data_parallel_exposed_s": tm.t_dp_exposed_s[ix(idx)],
                         "t_tensor_parallel_s": tm.t_tp_s[ix(idx)], "t_pipeline_p2p_s": tm.t_pp_s[ix(idx)],
                         "t_optimizer_s": tm.t_opt_s[ix(idx)]},
            lambda idx: np.array([r["compute_basis"] for r in (design_record(ev, i) for i in ix(idx).tolist())],
                                 dtype=object),
            rows)


def search_llm(budget: float | None, model: str | None, *, objective: str = "throughput",
               catalog: str | Path | Catalog | None = None, precision: str = "amp_bf16", seq_len: int | None = None,
               global_batch: int | None = None, gpus: list[str] | None = None, nics: list[str] | None = None,
               gpus_per_node: list[int] | None = None, max_nodes: int | None = None,
               model_config: str | Path | None = None, strategies: list[str] | None = None,
               include: list[str] | None = None, exclude_gpus: list[str] | None = None,
               max_instances: int | None = None, tco_years: float = 0.0, support_years: float = 0.0,
               hours: float | None = None, request: Request | None = None, prune: bool = True,
               framework: str = DEFAULT_FRAMEWORK, lora_rank: int | None = None,
               lora_targets: str | None = None) -> LlmSearch:
    """The design space of a large-model solve, each design with its fastest layout that fits, and costs
    on the data-parallel path's basis (hardware/cost.py: capex with `support_years` of support, plus
    `tco_years` of electricity; a rented design per hour, or for `hours` hours).

    Node counts: every whole number the budget buys. With `prune` (default) the node counts that cannot
    beat or tie their GPU type's best under the budget, the objective and `request`'s limits (power,
    rack units, throughput target) are never timed (search/llm_nodes.py): the choice `choose_llm` makes
    with that request is exact. A caller that reprices the designs (another cost basis, a price cut)
    or chooses under other limits passes `prune=False`: every node count is timed."""
    if objective not in OBJECTIVES:
        raise InputError(f"--objective must be one of {', '.join(OBJECTIVES)}, got '{objective}'", field="objective")
    non_negative("TCO years", tco_years)
    non_negative("support years", support_years)
    positive("hours", hours)
    if budget is None or not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise InputError(f"--budget must be a positive number of USD, got {budget}", field="budget")
    if max_nodes is not None:
        count("max nodes", max_nodes)
    method, strategies = split_strategies(strategies)  # a fine-tune named among them (finetune.py)
    ft = resolve_finetune(method, lora_rank, lora_targets)
    lacking = lacks_finetune(ft, precision)
    if lacking:
        raise InputError(f"--strategy {ft.method}: {lacking}", field="strategy")
    cfg = _with_finetune(resolve_model(model, model_config, seq_len), ft)
    cat = _catalog(catalog)
    if max_instances is not None:  # a cloud catalog: at most this many instances of a type (cloud_facts.py)
        count("max instances", max_instances)
        cat = with_max_instances(cat, max_instances)
    check_cost_options(cat, support_years, hours)
    parts = PartFilter.from_options(include, exclude_gpus, gpus, cat)
    gb = global_batch or default_global_batch(cfg)
    space = enumerate_designs(cat, max_nodes=max_nodes or DEFAULT_MAX_NODES, strategies=("ring",), gpu_ids=gpus,
                              nic_ids=nics, gpus_per_node=gpus_per_node, node_budget_usd=budget)
    require_precision_somewhere([space.gpus[i] for i in sorted(set(space.gpu_idx.tolist()))], precision)
    qlora = ft is not None and ft.method == "qlora"  # its NF4 weights are split by neither cp nor shard groups
    layouts = search_layouts(strategy_layouts(strategies, ft), cfg.seq_len,  # + cp, shard groups (layouts.py)
                             **(dict(cp_choices=(1,), shard_choices=()) if qlora else {}))
    layouts = with_expert_parallel(layouts, cfg)  # a MoE model: each layout at every ep
    params = params_for_framework(default_llm_params(), framework)  # the framework's fitted values
    hold = global_batch is not None  # a global batch asked for is held exactly by every design
    basis = CostBasis(tco_years=tco_years, hours=hours)
    # no per-job horizon on this basis, so no cost depends on throughput: priced before any timing
    costs = price_on_basis(evaluate_costs(space, cat.site, facility=cat.facility, support_years=support_years),
                           np.ones(len(space)), basis)
    offered = parts.design_reasons(space) == KEPT
    skipped = 0
    if prune:
        nodes = search_node_counts(cfg, space, costs.cost_usd, _admissible(costs, budget, request),
                                   space.gpu_idx * 2 + offered, objective=objective, precision=precision,
                                   global_batch=gb, layouts=layouts,
                                   min_tokens_per_s=request.target if request is not None else None,
                                   qualifies=_qualifies(request), hold_batch=hold, params=params,
                                   framework=framework, search_vp=True)
        space, ev, skipped = nodes.ev.space, nodes.ev, nodes.skipped
        costs, offered = take_costs(costs, nodes.keep), offered[nodes.keep]
    else:
        ev = best_layout_per_design(cfg, space, precision=precision, global_batch=gb, layouts=layouts, hold_batch=hold,
                                    params=params, search_vp=True)
    ev.framework = framework
    return LlmSearch(cfg, cat, float(budget), objective, precision, gb, space, layouts, ev, costs, offered, parts,
                     design_ranges(ev), basis, float(support_years), hold, skipped, framework)


def _admissible(costs: Costs, budget: float, request: Request | None) -> np.ndarray:
    """Designs every limit known before timing allows (limits.py's hw_ok and in_budget, less memory)."""
    adm = costs.buildable & within_budget(costs, budget)
    if request is not None and request.max_power_kw is not None:
        adm &= costs.power_kw <= request.max_power_kw
    if request is not None and request.max_rack_units is not None:
        adm &= costs.rack_units <= request.max_rack_units
    return adm


def _qualifies(request: Request | None):
    """Which timed designs meet the request's throughput target as limits.masks judges it (at its confidence)."""
    if request is None or request.target is None:
        return None

    def meets(ev: LlmEvaluation) -> np.ndarray:
        rng = design_ranges(ev)
        thr = np.where(ev.fits, ev.timing.tokens_per_s, 0.0)
        return at_confidence(thr, rng.low, rng.high, request.level) >= request.target
    return meets


def strategy_layouts(strategies: list[str] | None, ft: FineTune | None = None) -> Layout:
    """Every layout, or those of the named strategies; QLoRA's without tensor or pipeline parallel
    (finetune.lacks_finetune)."""
    layouts = all_layouts()
    if not strategies and (ft is None or ft.method != "qlora"):
        return layouts
    keep = [LLM_STRATEGIES.index(_strategy(s)) for s in strategies] if strategies else list(range(len(LLM_STRATEGIES)))
    sel = np.isin(layouts.strategy, keep)
    if ft is not None and ft.method == "qlora":
        sel &= (layouts.tp == 1) & (layouts.pp == 1) & (True if layouts.cp is None else layouts.cp == 1)
    return Layout(*(getattr(layouts, f)[sel] for f in ("strategy", "tp", "pp", "micro_batch", "ckpt")))


def solve_llm(budget: float | None, model: str | None, *, tokens: float | None = None, objective: str = "throughput",
              catalog: str | Path | Catalog | None = None, precision: str = "amp_bf16", seq_len: int | None = None,
              global_batch: int | None = None, gpus: list[str] | None = None, nics: list[str] | None = None,
              gpus_per_node: list[int] | None = None, max_nodes: int | None = None, top: int = 10,
              model_config: str | Path | None = None, strategies: list[str] | None = None,
              include: list[str] | None = None, exclude_gpus: list[str] | None = None,
              max_instances: int | None = None, max_power_kw: float | None = None,
              max_rack_units: float | None = None, min_throughput: float | None = None,
              deadline_hours: float | None = None, confidence: float | None = None, tco_years: float = 0.0,
              support_years: float = 0.0, hours: float | None = None,
              today: date | str | None = None, framework: str = DEFAULT_FRAMEWORK, lora_rank: int | None = None,
              lora_targets: str | None = None) -> dict[str, Any]:
    """Best hardware for the money with its best layout (strategy, tp, pp, micro-batch, checkpointing),
    under the limits and objective of search/limits.py (the same rules as data-parallel solves): power,
    rack units, a tokens/s target (`min_throughput`, or `tokens` within `deadline_hours`, met at
    `confidence`; default p10 with a deadline). The same part filter as data-parallel solves: current
    data-centre and workstation parts unless `include` opens consumer, legacy or end-of-life ones."""
    if budget is None or not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
        raise InputError(f"--budget must be a positive number of USD, got {budget}", field="budget")
    positive("tokens", tokens)
    count("top", top)
    req = _request(budget, objective, tokens, max_power_kw, max_rack_units, min_throughput, deadline_hours, confidence)
    found = search_llm(budget, model, objective=objective, catalog=catalog, precision=precision, seq_len=seq_len,
                       global_batch=global_batch, gpus=gpus, nics=nics, gpus_per_node=gpus_per_node,
                       max_nodes=max_nodes, model_config=model_config, strategies=strategies, include=include,
                       exclude_gpus=exclude_gpus, max_instances=max_instances, tco_years=tco_years,
                       support_years=support_years, hours=hours, request=req, framework=framework,
                       lora_rank=lora_rank, lora_targets=lora_targets)
    return choose_llm(found, tokens=tokens, top=top, request=req, today=today)


def _request(budget, objective, tokens, max_power_kw=None, max_rack_units=None, min_throughput=None,
             deadline_hours=None, confidence=None) -> Request:
    """The shared request (search/limits.py) of a large-model solve, with its own input checks."""
    if deadline_hours is not None and tokens is None:
        raise InputError("--deadline-hours needs --tokens (the tokens to train by then)", field="deadline_hours")
    if objective == "cost" and min_throughput is None and deadline_hours is None:
        raise InputError("objective 'cost' needs --min-throughput (tokens/s) or --deadline-hours with --tokens",
                         field="objective")
    if confidence is not None and min_throughput is None and deadline_hours is None:
        raise InputError("--confidence applies to a throughput target: give --deadline-hours or --min-throughput",
                         field="confidence")
    return Request(budget=budget, objective=objective, max_power_kw=max_power_kw, max_rack_units=max_rack_units,
                   min_throughput=min_throughput, work=tokens, deadline_hours=deadline_hours, confidence=confidence,
                   unit="tokens/s")


def choose_llm(found: LlmSearch, *, tokens: float | None = None, top: int = 10,
               years: float = OWNED_YEARS, request: Request | None = None,
               today: date | str | None = None) -> dict[str, Any]:
    """The pick on the Pareto front of a search under `request`'s limits (search/limits.py; None: the
    budget and objective of the search only), the best design of each other GPU type, and the Why."""
    cfg, space, costs, budget = found.cfg, found.space, found.costs, found.budget
    layouts, parts, gb, offered = found.layouts, found.parts, found.global_batch, found.offered
    req = request or _request(budget, found.objective, tokens)
    today = checks.as_of(today) or date.today()  # the day price ages are counted to (--as-of)
    objective = req.objective
    res = found.results(tokens, years)
    m = limits_masks(res, req, offered=offered)
    if not m["ok"].any():
        raise InfeasibleError(f"no design in the catalog can train {cfg.name} ({cfg.params / 1e9:.1f} B parameters) "
                              f"at sequence length {cfg.seq_len}"
                              + (f" holding a global batch of {gb:,} sequences" if found.exact_batch else "")
                              + ": none fits in GPU memory with any layout", reason="memory")
    order = space.order_rank()
    thr = res.throughput
    best, info = limits_pick(res, req, order, m)
    if best is None:
        if req.target is None and not req.max_power_kw and not req.max_rack_units:
            cand = np.flatnonzero(m["ok"])
            cheapest = int(cand[np.lexsort((order[cand], costs.cost_usd[cand]))[0]])
            nearest = res.rows([cheapest])[0]
            raise InfeasibleError(f"no design that can train {cfg.name} fits a budget of ${budget:,.0f}; the nearest "
                                  f"feasible design is the cheapest that can: {_design_phrase(nearest)} for "
                                  f"${nearest['cost_usd']:,.0f} (raise --budget to at least that)",
                                  nearest=nearest, reason="budget")
        raise limits_infeasible(res, req, order, m, cfg.name)
    # alternatives: the best design of each other GPU type among the designs that meet every limit
    alts = []
    within = np.flatnonzero(m["within"])
    for gi in sorted(set(space.gpu_idx[within].tolist())):
        if gi == space.gpu_idx[best]:
            continue
        mine = within[space.gpu_idx[within] == gi]
        j, _ = best_on_front(objective, costs.cost_usd[mine], thr[mine], order[mine], None)
        if j is not None:
            alts.append(int(mine[j]))
    score = objective_values(objective, costs.cost_usd, thr)
    alts.sort(key=lambda i: (score[i], costs.cost_usd[i], order[i]))
    rng = found.ranges
    best_rec = res.rows([best])[0]
    shown = alts[: max(top - 1, 0)]
    alt_recs = res.rows(shown)
    # near-ties: the best design of another GPU type whose 80% range overlaps the pick's (robustness.py's rule)
    both = np.array([best, *shown], dtype=np.int64)
    best_rec["near_tie"] = False
    # the pick's bill of materials (hardware/bom.py, the same line items as data-parallel designs) and price age
    best_rec["bom"] = bom_dicts(found.catalog, space, costs, best)
    if found.basis.tco_years and not (costs.rented is not None and costs.rented[best]):
        best_rec["tco"] = tco_lines(found.catalog, costs, best, found.basis.tco_years)  # every term, summing to cost
    age = oldest_price(best_rec["bom"], today)
    best_rec["oldest_price_date"], best_rec["price_warning"] = age["oldest_price_date"], age["warning"]
    for r, flag in zip(alt_recs, near_ties(rng.low[both], rng.high[both], 0)[1:]):
        r["near_tie"] = bool(flag)
    solver = {**info, "solver": SOLVER_NAME, "feasible_hardware_designs": int(m["ok"].sum()),
              "designs_skipped_by_bound": found.skipped_by_bound,
              "candidates_after_constraints": int(m["cand"].sum()),
              "near_ties": sum(1 for r in alt_recs if r["near_tie"])}
    if req.target is not None:
        solver.update({"target_tokens_per_s": float(req.target), "confidence": req.level,
                       "target_rule": f"every design shown meets {req.target_phrase()}"})
        lo, hi = res.ranges(both)
        for r, c in zip([best_rec, *alt_recs], at_confidence(thr[both], lo, hi, req.level).tolist()):
            r["tokens_per_s_at_confidence"] = float(c)
            if tokens is not None and c > 0:
                r["hours_to_train_at_confidence"] = tokens / c / 3600.0
    limits = {k: v for k, v in (("max_power_kw", req.max_power_kw), ("max_rack_units", req.max_rack_units),
                                ("min_throughput_tokens_per_s", req.min_throughput),
                                ("deadline_hours", req.deadline_hours)) if v is not None}
    ft_fields = {} if cfg.finetune is None else {"finetune": cfg.finetune.method,
                                                 "finetune_basis": cfg.finetune.describe()}
    return {"model": cfg.name, "params": cfg.params, "seq_len": cfg.seq_len, **ft_fields, "budget_usd": budget,
            "objective": objective, "global_batch_sequences": gb,
            "global_batch_rule": (f"held exactly: dp x micro-batch x gradient accumulation = {gb:,} sequences in "
                                  "every design" if found.exact_batch else
                                  f"about {gb:,} sequences ({gb * cfg.seq_len / 1e6:.1f} M tokens): each design "
                                  "the smallest multiple of dp x micro-batch at or above it (--global-batch holds "
                                  "one exactly)"),
            "tokens_to_train": tokens, "limits": limits, "as_of": today.isoformat(), "cost_basis": _cost_basis(found),
            "candidates_evaluated": int(len(space)), "layouts_per_design": int(len(layouts.tp)),
            "best": best_rec, "best_per_gpu": alt_recs,
            "solver": solver,
            "parts_offered": parts.describe(), "designs_left_out_by_part_filter": int((~offered).sum()),
            "why": _why(best_rec, alt_recs[:1] or res.rows(alts[:1]), estimated_price_parts(space, best),
                        vendor=space.gpus[int(space.gpu_idx[best])].vendor),
            # a rented pick: its instance type's capacity cap and whether it bound (cloud_facts.py)
            "capacity": capacity_summary(space.chassis[int(space.chassis_idx[best])], int(space.nodes[best]))}


def _cost_basis(found: LlmSearch) -> str:
    b = found.basis
    parts = ["capex (one-off purchase" + (f" with {found.support_years:g} years of support" if found.support_years
                                          else "") + ")"]
    if b.tco_years:
        parts = [f"the whole cost of owning over {b.tco_years:g} years (capex" + (
            f" with {found.support_years:g} years of support" if found.support_years else "")
            + ", storage, financing, colocation, electricity, support, staff, less resale)"]
    if b.hours:
        parts.append(f"rented designs for {b.hours:g} hours")
    return " ".join(parts)


def _design_phrase(d: dict, joiner: str = ", ") -> str:
    """'8 x mi325x (zero1, tp 2, pp 1, micro-batch 1, checkpointing none), 75,110 tokens/s (80% range ...)'."""
    thr = range_phrase(d["tokens_per_s"], d.get("tokens_per_s_low"), d.get("tokens_per_s_high"),
                       f"from the {d.get('range_basis')}", unit="tokens/s")
    extra = "".join(f", {name} {d[k]}" for k, name in (("vp", "vp"), ("cp", "cp"), ("ep", "ep")) if d.get(k, 1) > 1)
    if d.get("shard_groups", 1) > 1 and d["strategy"] != "ddp":  # states sharded over part of the replicas
        extra += f", shard group {d['shard_group']} x {d['shard_groups']}"
    return (f"{d['total_gpus']} x {d['gpu']} ({d['strategy']}, tp {d['tp']}, pp {d['pp']}{extra}, micro-batch "
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
        parts.append(f"no published {vendor.upper()} run is in the efficiency fit, so {best['gpu']}'s efficiency is "
                     f"NVIDIA's (an estimate, less sure)" + (
                         "; checked against AMD's MLPerf Training v5.0/v5.1 Llama 2 70B LoRA results as ratios "
                         "(docs/accuracy.md)" if vendor == "amd" else ""))
    if estimated_prices:
        parts.append(estimated_price_clause(list(estimated_prices)))
    return "; ".join(parts) + "."
