"""From a mix file to an answer: candidates per job from the timing model, reduce, solve, collect.

The result (`MixResult`) is data only; `render.py` turns it into tables.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from costopt.search.api import DEFAULT_MAX_NODES, Evaluation, design_dict, evaluate_space, resolve_inputs
from costopt.hardware.part_filter import KEPT, REASONS, PartFilter, caution
from costopt.search.solver import pareto_front
from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.cost import resale_share
from costopt.search.design_space import STRATEGIES, enumerate_designs
from costopt.core.errors import InfeasibleError, InputError
from costopt.search.mix import PARTS, Mix, load_mix
from costopt.search.multijob.diagnose import _limit_names, diagnose
from costopt.search.multijob.explain import explain
from costopt.search.multijob.problem import (MIX_OBJECTIVES, JobCandidates, Market, MixLimits, Progress, _check_objective, _say,
                      evaluate_picks)
from costopt.search.multijob.program import ProgramResult, solve_program
from costopt.search.multijob.pruning import _within_limits, prune, reduce_jobs


NO_NODE_BUDGET = 1e15  # a large-model job without a budget to bound its node counts (objective cost)
DEFAULT_TIME_LIMIT_S = 60.0  # seconds for a whole mix solve unless told otherwise (a 40-job mix: docs/several-jobs.md)
REPORT_RESERVE = 0.03  # share of the time limit (at least 2 s) kept back for the report
BUILD_SHARE = 0.75  # building the candidates stops past this share of the time limit
def market_from(catalog: Catalog, mix: Mix | None = None) -> Market:
    price = {("gpus", g.id): g.price_usd for g in catalog.gpu}
    price.update({("chassis", c.id): c.price_usd for c in catalog.chassis})
    price.update({("nics", n.id): n.price_usd for n in catalog.nic})
    if mix is None:
        return Market(price)
    owned = {(k, pid): n for k in PARTS for pid, n in getattr(mix.spec.inventory, k).items() if n > 0}
    stock = {(k, pid): n for k in PARTS for pid, n in getattr(mix.spec.stock, k).items()}
    tiers = {d.part: [(t.from_units, t.unit_price_usd) for t in d.tiers] for d in mix.spec.discount}
    return Market(price, owned, stock, tiers)


def job_candidates(name: str, ev: Evaluation, weight: float = 1.0, target: float | None = None,
                   keep: np.ndarray | None = None) -> JobCandidates:
    """Candidates of one job from an evaluated design space (memory-feasible, buildable designs only, and
    of those only `keep` when given: the part filter's); `designs` is left empty (`build_jobs` fills it
    for the designs it keeps)."""
    return space_candidates(name, ev.space, ev.costs, ev.timing.throughput_samples_per_s, ev.timing.feasible,
                            str(ev.model), weight, target, keep)


def space_candidates(name: str, s, c, throughput: np.ndarray, feasible: np.ndarray, model: str, weight: float = 1.0,
                     target: float | None = None, keep: np.ndarray | None = None) -> JobCandidates:
    """`job_candidates` from a design space `s`, its costs `c`, throughput per design (samples/s, or tokens/s
    for a large-model job) and feasibility: what a data-parallel evaluation and a large-model search share."""
    ok = np.flatnonzero(feasible & c.buildable & (True if keep is None else keep))
    ids = lambda items: np.array([x.id for x in items], dtype=object)  # noqa: E731
    nic_ids = np.array([n.id for n in s.nics] + ["none"], dtype=object)
    ni = np.where(s.nic_idx < 0, len(s.nics), s.nic_idx)
    # candidates follow the deterministic design order, so ties resolve the same way every run
    ok = ok[np.argsort(np.argsort(s.sort_key())[ok], kind="stable")]
    return JobCandidates(
        name, c.cost_usd[ok], throughput[ok], c.power_kw[ok], c.rack_units[ok],
        s.nodes[ok], s.total_gpus[ok], ids(s.gpus)[s.gpu_idx[ok]], ids(s.chassis)[s.chassis_idx[ok]], nic_ids[ni[ok]],
        nics_per_node=np.where(s.nic_idx[ok] < 0, 0, s.nics_per_node[ok]), weight=weight, target=target, index=ok,
        model=model, counts={"enumerated": len(s), "feasible": int(len(ok))},
    )


@dataclass
class MixResult:
    name: str
    objective: str
    status: str
    objective_value: float | None
    gap: float | None
    solve_time_s: float
    total_time_s: float
    limits: dict[str, Any]
    totals: dict[str, Any]
    jobs: list[dict[str, Any]]
    parts: list[dict[str, Any]]
    solver: dict[str, Any]
    binding: list[dict[str, Any]] = field(default_factory=list)  # the limits at the answer (`explain.py`)
    excluded: dict[str, Any] = field(default_factory=dict)  # what the part filter left out (`excluded_report`)
    bound: float | None = None  # the best bound proven on the objective (ProgramResult.bound)
    time_limit_s: float | None = None  # the limit the solve ran under (None: none)

    @property
    def note(self) -> str:
        """"stopped at the time limit N s; best found X, bound Y, gap Z%" when the time limit cut the solve
        short (status "Feasible (time limit)"), else ""."""
        return time_limit_note(self.status, self.time_limit_s, self.objective_value, self.bound, self.gap)

    def to_json_dict(self, timings: bool = False) -> dict[str, Any]:
        """The result as JSON. Wall-clock times differ run to run, so they are left out unless asked
        for (`--timings`): the same inputs then print the same bytes."""
        out = {"mix": self.name, "objective": self.objective, "status": self.status,
               "objective_value": self.objective_value, "bound": self.bound, "gap": self.gap,
               "time_limit_s": self.time_limit_s, "note": self.note, "solve_time_s": self.solve_time_s,
               "total_time_s": self.total_time_s, "limits": self.limits, "totals": self.totals,
               "limits_at_answer": self.binding, "jobs": self.jobs, "parts": self.parts, "solver": self.solver,
               "excluded": self.excluded}
        return out if timings else _drop_timings(out)


def time_limit_note(status: str, time_limit: float | None, value: float | None, bound: float | None,
                    gap: float | None) -> str:
    """The line an answer cut short by the time limit carries: the limit, the best selection's objective
    value, the best bound proven and the relative gap between them; "" for any other status."""
    if status != "Feasible (time limit)" or value is None:
        return ""
    limit = "the time limit" if time_limit is None else f"the time limit {time_limit:g} s"
    b = "none proven" if bound is None else f"{bound:,.6g}"
    g = "n/a" if gap is None else f"{gap:.2%}"
    return f"stopped at {limit}; best found {value:,.6g}, bound {b}, gap {g}"


def _drop_timings(value: Any) -> Any:
    """A copy without the wall-clock keys (`*time_s`)."""
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if not k.endswith("time_s")}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value


def large_model_job(mix: Mix, name: str, spec) -> dict[str, Any] | None:
    """The large-model search settings of a job (None: a data-parallel job): a job with large-model keys
    (tokens, model_config, ...) or a zoo transformer (perf/llm.is_llm_request). Its model_config path is
    read relative to the mix file."""
    from costopt.perf.llm import is_llm_request
    from costopt.perf.workload import list_models
    from costopt.search.mix import DP_FIELDS

    if not spec.large_model_fields and not is_llm_request(spec.model, None, None, None, list_models()):
        return None
    dp = [k for k in DP_FIELDS if getattr(spec, k) is not None]
    if dp:
        raise InputError(f"{mix.where}: job '{name}': {', '.join(dp)}: not for a large-model job (its work is "
                         "tokens; its layout and micro-batch are searched)")
    cfg = None if spec.model_config_file is None else str(Path(mix.where).parent / spec.model_config_file)
    return {"model": spec.model if cfg is None else None, "model_config": cfg, "tokens": spec.tokens,
            "seq_len": spec.seq_len, "global_batch": spec.global_batch, "strategies": tuple(spec.strategies),
            "gpus": tuple(spec.gpus),
            "precision": spec.precision if "precision" in spec.model_fields_set else "amp_bf16"}


def _check_large_model_options(mix: Mix, llm: dict[str, Any], strategies, reduce_on, overlap: str, system) -> None:
    """Options of a mix solve that a large-model job cannot use: --strategy and --reduce-on (a large-model
    job's strategies are set in the mix file); --overlap and --system apply to data-parallel jobs only, so
    a mix with none of them refuses them."""
    big = [n for n, v in llm.items() if v is not None]
    if not big:
        return
    named = [k for k, v in (("--strategy", strategies), ("--reduce-on", reduce_on)) if v]
    if named:
        raise InputError(f"{', '.join(named)}: the mix {mix.where} has a large-model job ('{big[0]}'); set its "
                         "strategies in the mix file (strategies = [\"fsdp\", ...]), a data-parallel job's with the option "
                         "only when the mix has no large-model job")
    if len(big) == len(llm):
        named = [k for k, v in (("--overlap", None if overlap == "wfbp" else overlap), ("--system", system)) if v]
        if named:
            raise InputError(f"{', '.join(named)}: only for data-parallel jobs, and every job of {mix.where} is a "
                             "large-model one")


def _llm_candidates(mix: Mix, name: str, spec, job: dict[str, Any], catalog: Catalog, market: Market, lim: MixLimits,
                    node_budget: float | None, tco_years: float, pf: PartFilter, trim: bool,
                    want_front: bool) -> tuple[JobCandidates, dict[str, Any] | None]:
    """A large-model job's candidates: the hardware designs of the large-model search (search/llm_search.py),
    each at its fastest layout that fits, throughput in tokens/s, cost on the mix's basis (capex, plus
    electricity over `tco_years`); reduced like a data-parallel job's (per-design limits, `prune`)."""
    from costopt.hardware.cost import CostBasis, price_on_basis
    from costopt.search.llm_search import search_llm
    from costopt.search.llm_table import llm_frame

    # a solve's mix chooses among every node count (shared limits, its own objective): none pruned; the
    # diagnosis of an infeasible mix (trim False: 4x the budget) asks only what each job can reach, which the
    # one-job pruned search keeps exactly (its fastest designs)
    try:
        found = search_llm(node_budget or NO_NODE_BUDGET, job["model"], catalog=catalog, precision=job["precision"],
                           seq_len=job["seq_len"], global_batch=job["global_batch"], gpus=list(job["gpus"]) or None,
                           max_nodes=min(lim.max_nodes or DEFAULT_MAX_NODES, DEFAULT_MAX_NODES),
                           model_config=job["model_config"], strategies=list(job["strategies"]) or None,
                           include=["all"], prune=not trim)
    except InputError as exc:
        raise InputError(f"{mix.where}: job '{name}': {exc}") from None
    basis = CostBasis(tco_years=tco_years)
    thr = found.ev.timing.tokens_per_s
    costs = price_on_basis(found.costs, thr, basis)
    jpf = replace(pf, named_gpus=tuple(dict.fromkeys([*pf.named_gpus, *spec.gpus])))
    reasons = jpf.design_reasons(found.space)
    model = found.cfg.name
    full = space_candidates(name, found.space, costs, thr, found.ev.fits, model, keep=reasons == KEPT)
    front = None
    if want_front:
        out_c = space_candidates(name, found.space, costs, thr, found.ev.fits, model, keep=reasons != KEPT)
        out_c = out_c.take(np.flatnonzero(_within_limits(out_c, market, lim, None)))
        idx = out_c.index[pareto_front(out_c.cost_usd, out_c.throughput, found.space.order_rank()[out_c.index])]
        rows = [_row_dict(r) for _, r in llm_frame(found, idx, basis, job["tokens"]).iterrows()]
        for r, i in zip(rows, idx):
            r["excluded_reason"] = REASONS[int(reasons[i])]
        front = {"counts": {r: int((reasons == i).sum()) for i, r in enumerate(REASONS) if (reasons == i).any()},
                 "front": rows}
    base = full.take(np.flatnonzero(_within_limits(full, market, lim, None))) if trim else full
    base.counts["within_limits"] = len(base)
    base = base.take(prune(base, market, lim))
    base.designs = llm_frame(found, base.index, basis, job["tokens"])
    base.designs.index = base.index
    base.counts["after_pruning"] = len(base)
    return base, front


def _row_dict(row) -> dict[str, Any]:
    """A large-model table row as JSON-ready values (floats to 9 significant digits, NaN as None), as
    `design_dict` writes a data-parallel one."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, np.integer):
            v = int(v)
        elif isinstance(v, (np.floating, float)):
            v = None if math.isnan(float(v)) else float(f"{float(v):.9g}")
        elif isinstance(v, np.bool_):
            v = bool(v)
        out[k] = v
    return out


def build_jobs(mix: Mix, catalog: Catalog, market: Market, lim: MixLimits, *, tco_years: float = 0.0,
               overlap: str = "wfbp", system=None, strategies: list[str] | None = None,
               reduce_on: list[str] | None = None, tensor_set: str = "pytorch", trim: bool = True,
               progress: Progress | None = None, deadline: float | None = None,
               part_filter: PartFilter | None = None, left_out: dict[str, Any] | None = None) -> list[JobCandidates]:
    """Enumerate and evaluate every job's design space and keep its candidates, one job at a time.

    Each design space is reduced as soon as it is evaluated: designs that break a per-design limit
    (when `trim`; the diagnosis of an infeasible mix keeps them) and dominated designs (`prune`) go,
    both valid whatever the other jobs run (`pruning.py`), and only the survivors' DESIGN rows are
    kept. Memory then holds one job's evaluated design space at a time, not every job's. Jobs with the
    same model, precision, batch, GPU list and samples to train share one evaluation. Past `deadline`
    (a `time.perf_counter()` value) it stops with InfeasibleError (reason "time-limit").

    `part_filter` (None: the default, as in a single solve; part_filter.py) leaves designs out of every
    job's candidates, a job's own `gpus` being named GPUs. `left_out`, when given, receives per job the
    filter's counts by reason and the cost-throughput Pareto front of the left-out designs that meet the
    per-design limits (DESIGN rows), for the report (`excluded_report`)."""
    pf = part_filter if part_filter is not None else PartFilter()
    fronts: dict[tuple, dict[str, Any]] = {}
    owned_value = sum(market.price[p] * n for p, n in market.owned.items())
    # node hardware beyond budget + owned parts can never fit; `trim=False` (diagnosis) looks up to 4x further.
    # Under --tco-years the budget limits the whole cost, which is at least capex less its resale:
    # TCO >= C - R >= C (1 - r_Y), r_Y the resale share after Y years (cost.resale_share), so node hardware over
    # budget / (1 - r_Y) can never fit either
    node_budget = None
    if lim.budget_usd is not None:
        node_budget = (lim.budget_usd + owned_value) * (1 if trim else 4)
        if tco_years:
            node_budget /= max(1.0 - resale_share(tco_years, catalog.site.residual_pct_at_3_years / 100.0), 1e-3)
    jobs: list[JobCandidates] = []
    shared: dict[tuple, JobCandidates] = {}
    llm = {name: large_model_job(mix, name, spec) for name, spec in mix.jobs.items()}
    _check_large_model_options(mix, llm, strategies, reduce_on, overlap, system)
    for k, (name, spec) in enumerate(mix.jobs.items(), 1):
        t0 = time.perf_counter()
        samples = spec.epochs * spec.dataset_size if spec.epochs and spec.dataset_size else None
        key = (spec.model, spec.precision, spec.batch_per_gpu, tuple(spec.gpus), samples)
        if llm[name] is not None:
            key = ("large-model", *sorted(llm[name].items(), key=lambda kv: kv[0]))
        base = shared.get(key)
        if base is None and llm[name] is not None:
            base, front = _llm_candidates(mix, name, spec, llm[name], catalog, market, lim, node_budget, tco_years,
                                          pf, trim, left_out is not None)
            shared[key] = base
            if front is not None:
                fronts[key] = front
            how = (f"{base.counts['enumerated']:,} hardware designs (large-model search), "
                   f"{base.counts['feasible']:,} fit, {len(base):,} kept")
        elif base is None:
            try:
                cat, params, workload, batch, tensors = resolve_inputs(
                    spec.model, catalog, spec.precision, spec.batch_per_gpu, system, None, tensor_set, overlap)
                space = enumerate_designs(
                    cat, max_nodes=min(lim.max_nodes or DEFAULT_MAX_NODES, DEFAULT_MAX_NODES),
                    strategies=tuple(strategies or STRATEGIES), reduce_on=tuple(reduce_on or ("gpu",)),
                    gpu_ids=spec.gpus or None, node_budget_usd=node_budget)
            except InputError as exc:
                raise InputError(f"{mix.where}: job '{name}': {exc}") from None
            ev = evaluate_space(space, catalog=cat, workload=workload, tensors=tensors, params=params,
                                precision=spec.precision, batch_per_gpu=batch, overlap=overlap, tco_years=tco_years,
                                samples_to_train=samples)
            jpf = replace(pf, named_gpus=tuple(dict.fromkeys([*pf.named_gpus, *spec.gpus])))
            reasons = jpf.design_reasons(ev.space)
            full = job_candidates(name, ev, keep=reasons == KEPT)
            if left_out is not None:
                out_c = job_candidates(name, ev, keep=reasons != KEPT)
                out_c = out_c.take(np.flatnonzero(_within_limits(out_c, market, lim, None)))
                front = out_c.index[pareto_front(out_c.cost_usd, out_c.throughput, ev.space.order_rank()[out_c.index])]
                rows = ev.rows(front)
                for r, i in zip(rows, front):
                    r["excluded_reason"] = REASONS[int(reasons[i])]
                fronts[key] = {"counts": {r: int((reasons == i).sum()) for i, r in enumerate(REASONS)
                                          if (reasons == i).any()}, "front": rows}
            base = full.take(np.flatnonzero(_within_limits(full, market, lim, None))) if trim else full
            base.counts["within_limits"] = len(base)
            base = base.take(prune(base, market, lim))
            base.designs = ev.frame(base.index)
            base.designs.index = base.index
            base.counts["after_pruning"] = len(base)
            shared[key] = base
            del ev, full, space
            how = (f"{base.counts['enumerated']:,} designs, {base.counts['feasible']:,} feasible, "
                   f"{len(base):,} kept")
        else:
            how = f"same designs as an earlier job ({len(base):,} kept)"
        jobs.append(replace(base, name=name, weight=spec.weight, target=spec.target, counts=dict(base.counts)))
        if left_out is not None:
            left_out[name] = fronts[key]
        _say(progress, f"job {k}/{len(mix.jobs)} '{name}' ({spec.model}): {how}, {time.perf_counter() - t0:.1f} s")
        if deadline is not None and time.perf_counter() > deadline and k < len(mix.jobs):
            raise InfeasibleError(f"building the candidates took the time allowed for it ({k} of {len(mix.jobs)} "
                                  "jobs done); raise --time-limit", reason="time-limit")
    return jobs


def solve_mix(
    workload: str | Path | Mix, *, catalog: str | Path | Catalog | None = None, objective: str = "throughput",
    budget: float | None = None, max_power_kw: float | None = None, max_rack_units: float | None = None,
    max_nodes: int | None = None, mixed_nics: bool | None = None, max_gpu_types: int | None = None,
    time_limit: float | None = DEFAULT_TIME_LIMIT_S,
    tco_years: float = 0.0, overlap: str = "wfbp", system=None, strategies: list[str] | None = None,
    reduce_on: list[str] | None = None, tensor_set: str = "pytorch", progress: Progress | None = None,
    include: list[str] | str | None = None, exclude_gpus: list[str] | None = None,
) -> MixResult:
    """Best designs for every job of a mix under the shared limits; raises InfeasibleError with the binding limit.

    `time_limit` (seconds, default `DEFAULT_TIME_LIMIT_S`; None: none) bounds the whole call: building the
    candidates, pruning and the program, which gets what is left. When it runs out the best selection
    found so far comes back with status "Feasible (time limit)" and its gap (relative distance to the
    best bound proven). Building the candidates may take `BUILD_SHARE` of the limit (past it: an
    InfeasibleError with reason "time-limit"); the diagnosis of an infeasible mix shares the same limit. `progress`, when given, receives one line per step (jobs evaluated, pruning,
    solver stages and, during long CBC runs, the best value and bound so far).

    The part filter of a single solve applies to every job (`include`, `exclude_gpus`; part_filter.py):
    by default current data-centre and workstation parts, plus every part the mix names (owned, in
    stock, discounted, or in a job's `gpus`). The result's `excluded` says what it left out and, per
    job, what the best left-out design costing no more than the job's pick would give."""
    t_start = time.perf_counter()
    mix = workload if isinstance(workload, Mix) else load_mix(workload)
    if objective not in MIX_OBJECTIVES:
        raise InputError(f"unknown objective '{objective}' for a workload mix (choose from {', '.join(MIX_OBJECTIVES)})")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and 0 < time_limit < math.inf):
        raise InputError(f"time limit must be a positive number of seconds, got {time_limit}", field="time_limit")
    for label, v in (("budget", budget), ("max power", max_power_kw), ("max rack units", max_rack_units)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{label} must be a positive number, got {v}")
    if max_nodes is not None and max_nodes < 1:
        raise InputError(f"max nodes must be >= 1, got {max_nodes}")
    if max_gpu_types is not None and not (isinstance(max_gpu_types, int) and max_gpu_types >= 1):
        raise InputError(f"max GPU types must be an integer >= 1, got {max_gpu_types!r}", field="max_gpu_types")
    cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    mix.check_catalog(cat)
    fl = mix.spec.limits
    lim = MixLimits(
        budget_usd=budget if budget is not None else fl.budget_usd,
        max_power_kw=max_power_kw if max_power_kw is not None else fl.max_power_kw,
        max_rack_units=max_rack_units if max_rack_units is not None else fl.max_rack_units,
        max_nodes=max_nodes if max_nodes is not None else fl.max_nodes,
        one_nic_type=(not mixed_nics) if mixed_nics is not None else fl.one_nic_type,
        max_gpu_types=max_gpu_types if max_gpu_types is not None else fl.max_gpu_types,
    )
    if lim.budget_usd is None and objective != "cost":
        raise InputError(f"objective '{objective}' needs a budget (--budget or [limits] budget_usd in {mix.where})")
    market = market_from(cat, mix)
    named = frozenset({*market.owned, *market.stock, *market.tiers})
    pf = replace(PartFilter.from_options(include, exclude_gpus, None, cat), named_parts=named)
    clash = [g for g in pf.exclude_gpus if ("gpus", g) in named or any(g in j.gpus for j in mix.jobs.values())]
    if clash:
        raise InputError(f"--exclude-gpu {', '.join(clash)}: the mix {mix.where} names it (inventory, stock, "
                         "discount or a job's gpus)", field="exclude_gpu")
    opts = dict(tco_years=tco_years, overlap=overlap, system=system, strategies=strategies, reduce_on=reduce_on,
                tensor_set=tensor_set, part_filter=pf)
    left_out: dict[str, Any] = {}
    # the candidates may take BUILD_SHARE of the time: what is left gets a heuristic answer at least
    build_deadline = None if time_limit is None else t_start + BUILD_SHARE * time_limit
    raw = build_jobs(mix, cat, market, lim, progress=progress, deadline=build_deadline, left_out=left_out, **opts)
    _check_objective(objective, raw)
    t0 = time.perf_counter()
    jobs = reduce_jobs(raw, market, lim, objective)
    _say(progress, f"joint limits and pruning: {sum(len(j) for j in jobs):,} candidates in all, "
                   f"{time.perf_counter() - t0:.1f} s")
    # the program gets what is left, less a reserve for the report (explain reads every one-job change)
    left = None if time_limit is None else max(1.0, time_limit - (time.perf_counter() - t_start)
                                               - max(2.0, REPORT_RESERVE * time_limit))
    res = solve_program(jobs, market, lim, objective, left, progress=progress)
    if res.picks is None:
        if res.status.startswith("No solution"):
            raise InfeasibleError(f"no feasible answer found within the time limit of {time_limit:g} s; "
                                  "raise --time-limit", reason="time-limit")
        left = None if time_limit is None else time_limit - (time.perf_counter() - t_start)
        if left is not None and left < 5.0:
            raise InfeasibleError("infeasible mix (no time left to find which limit binds; raise --time-limit)",
                                  reason="mix-limits")
        _say(progress, "infeasible: finding which limit binds")
        full = reduce_jobs(build_jobs(mix, cat, market, lim, trim=False, progress=progress,
                                      deadline=None if left is None else t_start + time_limit, **opts),
                           market, lim, objective, filter_limits=False)
        left = None if time_limit is None else time_limit - (time.perf_counter() - t_start)
        per_solve = 10.0 if left is None else min(10.0, max(1.0, left / (len(_limit_names(full, market, lim,
                                                                                            objective)) + 2)))
        msg, rows = diagnose(full, market, lim, objective, time_limit=per_solve)
        raise InfeasibleError(msg, nearest=rows or None, reason="mix-limits")
    t0 = time.perf_counter()
    out = _report(mix, cat, objective, lim, market, jobs, res, time.perf_counter() - t_start)
    out.excluded = excluded_report(pf, left_out, out.jobs, cat)
    out.bound, out.time_limit_s = res.bound, time_limit
    _say(progress, f"{out.note or res.status + ', gap ' + ('n/a' if res.gap is None else f'{res.gap:.2%}')}; report in "
                   f"{time.perf_counter() - t0:.1f} s, {time.perf_counter() - t_start:.1f} s in all")
    return out


def _report(mix: Mix, cat: Catalog, objective: str, lim: MixLimits, market: Market, jobs: list[JobCandidates],
            res: ProgramResult, total_time: float) -> MixResult:
    picks = res.picks
    tot = evaluate_picks(jobs, market, picks[None, :])
    job_rows = []
    for j, (job, d) in enumerate(zip(jobs, picks)):
        big = "tokens_per_s" in job.designs.columns  # a large-model job: tokens/s
        row = job.designs.loc[job.index[d]]
        design = _row_dict(row) if big else design_dict(row)
        design["model"] = job.model
        thr = float(job.throughput[d])
        unit = "tokens_per_s" if big else "samples_per_s"
        job_rows.append({
            "name": job.name, "model": job.model, "weight": job.weight, f"target_{unit}": job.target,
            f"throughput_{unit}": thr, "throughput": thr, "target": job.target,
            "throughput_unit": unit.replace("_per_", "/"), "kind": "large-model" if big else "data-parallel",
            "target_ratio": (thr / job.target) if job.target else None,
            "candidates": dict(job.counts), "design": design,
        })
    binding, unused = explain(jobs, market, lim, objective, picks, float(res.objective_value))
    parts = []
    for p in market.shared:
        need = int(sum(job.usage(p)[d] for job, d in zip(jobs, picks)))
        c, bought = market.part_cost(p, np.array([need]))
        owned = market.owned.get(p, 0)
        parts.append({"kind": p[0], "id": p[1], "used": need, "owned": owned, "owned_used": min(owned, need),
                      "bought": int(bought[0]), "spare": int(bought[0]) - max(0, need - owned),
                      "stock": market.stock.get(p), "list_price_usd": market.price[p],
                      "unit_price_usd": (float(c[0]) / bought[0]) if bought[0] else None, "cost_usd": float(c[0]),
                      "owned_unused": unused.get(p)})
    totals = {"cost_usd": float(tot["cost_usd"][0]), "power_kw": float(tot["power_kw"][0]),
              "rack_units": float(tot["rack_units"][0]), "nodes": int(tot["nodes"][0]),
              "gpus": int(sum(job.gpus[d] for job, d in zip(jobs, picks))),
              "nic_types": sorted({str(job.nic[d]) for job, d in zip(jobs, picks)} - {"none"}),
              "gpu_types": sorted({str(job.gpu[d]) for job, d in zip(jobs, picks)}),
              "list_price_usd": float(sum(job.cost_usd[d] for job, d in zip(jobs, picks)))}
    solver = {"solver": "CBC (PuLP)", "stages": res.stages, "binaries": int(sum(len(j) for j in jobs)),
              "candidates_after_limits": [len(j) for j in jobs]}
    return MixResult(mix.spec.mix.name or Path(mix.where).stem, objective, res.status, res.objective_value, res.gap,
                     res.solve_time_s, total_time, lim.as_dict(), totals, job_rows, parts, solver, binding)


def excluded_report(pf: PartFilter, left_out: dict[str, Any], jobs: list[dict[str, Any]],
                    catalog: Catalog) -> dict[str, Any]:
    """JSON `excluded` of a mix: {offered, counts by reason (summed over jobs), jobs: {name: {counts, best,
    throughput_ratio, sentence}}, sentence}.

    A job's `best` is the fastest left-out design (meeting the per-design limits) whose list cost is no
    more than the list cost of the job's pick, and `throughput_ratio` = its throughput / the pick's: a
    like-for-like statement that needs no second joint solve (the other jobs keep their picks only if
    the shared limits allow; a ratio above 1 says the filter cost that job throughput at equal money)."""
    total: dict[str, int] = {}
    per_job: dict[str, Any] = {}
    for j in jobs:
        info = left_out.get(j["name"], {"counts": {}, "front": []})
        for r, n in info["counts"].items():
            total[r] = total.get(r, 0) + n
        pick = j["design"]
        key = "tokens_per_s" if j.get("kind") == "large-model" else "throughput_samples_per_s"
        cheaper = [d for d in info["front"] if d["cost_usd"] <= pick["cost_usd"] * (1 + 1e-9)]
        best = max(cheaper, key=lambda d: d[key], default=None)
        ratio = None if best is None else best[key] / j["throughput"]
        sentence = ""
        if best is not None and ratio > 1.0 + 1e-9:
            g = catalog.gpus[best["gpu"]]
            life = g.lifecycle.replace("_", "-") + (f" since {g.end_of_life_date}" if g.end_of_life_date else "")
            sentence = (f"job '{j['name']}': the best left-out design at no more than its pick's list cost, "
                        f"{best['total_gpus']} x {best['gpu']} ({g.segment}, {life}) for ${best['cost_usd']:,.0f}, "
                        f"gives {ratio:.2f}x its throughput; {caution(best['excluded_reason'])}")
        per_job[j["name"]] = {"counts": dict(info["counts"]), "best": best, "throughput_ratio": ratio,
                              "sentence": sentence}
    n = sum(total.values())
    if n:
        by = ", ".join(f"{k.replace('_', '-')} {v:,}" for k, v in total.items())
        head = (f"Part filter: {pf.describe()}; left out {n:,} designs over the jobs ({by}); "
                "--include consumer,legacy,eol considers them.")
    else:
        head = f"Part filter: {pf.describe()}; nothing was left out."
    return {"offered": pf.describe(), "counts": total, "jobs": per_job, "sentence": head}
