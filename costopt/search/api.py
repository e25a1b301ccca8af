"""Python API: `predict` one design, `solve` for the best design under a budget.

Data flows one way: catalog + workload -> design space -> timing model -> cost -> solver -> result
table. The CLI is a thin layer over these two functions and `evaluate_space`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is returned (Evaluation.frame, SolveResult.table)
    import pandas as pd

from costopt.perf.batch_limits import batch_warning
from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.cloud_facts import capacity_summary
from costopt.core import checks
from costopt.core.checks import count, non_negative, positive
from costopt.hardware.cost import CostBasis, Costs, evaluate_costs, price_on_basis
from costopt.search.design_space import REDUCE_ON, STRATEGIES, DesignSpace, enumerate_designs, iter_design_chunks, single_design
from costopt.core.errors import InfeasibleError, InputError
from costopt.hardware.part_filter import KEPT, REASONS, PartFilter, excluded_summary
from costopt.search.solver import OBJECTIVES, SOLVER_NAME, objective_values, pareto_front
from costopt.search.limits import Request, check_cost_options, infeasible as limits_infeasible, masks as limits_masks, pick as limits_pick
from costopt.perf.stacks import AUTO, check_stack, stack_codes
from costopt.perf.system import SystemParams, load_system
from costopt.perf.timing import OVERLAP_MODES, GpuCompute, Timing, evaluate
from costopt.purchase.why import explain
from costopt.perf.compute import DEFAULT_FRAMEWORK
from costopt.perf.workload import ComputeEstimate, TensorSet, Workload, load_profile, load_workload, memory_fits
from costopt.hardware.catalog import with_max_instances

DEFAULT_PRECISION = "auto"  # per GPU: the best training precision it runs (Gpu.best_training_precision)
DEFAULT_MAX_NODES = 1024

from costopt.search.evaluation import DESIGN_FIELDS, Evaluation, design_dict, throughput_range  # noqa: F401  (re-exported)


def gpu_precisions(workload: Workload, gpus: list, precision: str) -> list[str]:
    """The precision each GPU runs: the one asked for, or with `auto` the best training precision the
    GPU has (Gpu.best_training_precision: bf16 AMP on Ampere and later, fp16 AMP on Volta/Turing, fp32
    before) among those the model has a compute profile for (Gpu.training_precisions, best first): a
    profile measured in fp32 only runs fp32 on an H200. A GPU with none of the model's precisions
    keeps its best one (and gets no compute, with the reason)."""
    if precision != "auto":
        return [precision for _ in gpus]
    have = set(workload.precisions())
    return [next((p for p in g.training_precisions() if p in have), g.best_training_precision()) for g in gpus]


def _gpu_compute(workload: Workload, catalog: Catalog, space: DesignSpace, precision: str, batch: int,
                 params: SystemParams, grad_accum: int = 1) -> tuple[GpuCompute, list[str], np.ndarray]:
    """Compute estimate per GPU type (a loop over catalog GPUs, not designs), at each GPU's precision.

    With K = grad_accum micro-batches per synchronisation, K forwards and K-1 backwards run before
    the last backward (whose gradients overlap communication), then one optimizer step:
        T_f' = K T_f + (K-1) T_b,   T_b' = T_b,   T_step' = T_step      (samples per GPU: K b)
    """
    n = len(space.gpus)
    f, b, st = np.ones(n), np.ones(n), np.zeros(n)
    mem_ok, supported = np.zeros(n, bool), np.zeros(n, bool)
    source, basis = ["none"] * n, [""] * n
    memory_gb = np.full(n, np.nan)
    precisions = gpu_precisions(workload, space.gpus, precision)
    have = workload.precisions()
    used = set(np.flatnonzero(np.bincount(space.gpu_idx, minlength=n)).tolist())  # (np.unique would load numpy.ma)
    for i, g in enumerate(space.gpus):
        if i not in used:
            continue
        p = precisions[i]
        if not g.supports(p):
            basis[i] = f"{g.id} has no {p} path"
            continue
        if p not in have and (precision == "auto" or workload.flops is None):
            basis[i] = (f"{g.id} trains in {p} (precision auto) but model '{workload.model}' has no {p} profile"
                        if precision == "auto" else f"model '{workload.model}' has no {p} profile")
            continue
        try:
            est: ComputeEstimate = workload.compute(g, p, batch, catalog)
        except InputError as exc:
            basis[i] = str(exc)
            continue
        k = grad_accum
        f[i], b[i], st[i] = k * est.forward_s + (k - 1) * est.backward_s, est.backward_s, est.step_s
        mem_ok[i] = memory_fits(est, g, params.memory_reserved_gb)
        memory_gb[i] = est.peak_mem_bytes / 1e9
        supported[i] = True
        source[i], basis[i] = est.source, est.basis + (f"; {k} micro-batches per step" if k > 1 else "")
        if precision == "auto" and p != g.best_training_precision():
            basis[i] += (f"; precision auto: {p}, since model '{workload.model}' has no "
                         f"{g.best_training_precision()} profile (the best {g.id} trains in)")
        if not mem_ok[i]:
            basis[i] += f"; needs {est.peak_mem_bytes / 1e9:.1f} GB + {params.memory_reserved_gb:g} GB reserved > {g.memory_gb:g} GB"
    return GpuCompute(f, b, st, mem_ok, supported, source, basis), precisions, memory_gb


def resolve_inputs(model, catalog, precision, batch_per_gpu, system, profile, tensor_set, overlap):
    """Check and load what every command shares: catalog, system parameters, workload (zoo model and/or
    profile file), batch, tensor set. Raises InputError naming the argument at fault."""
    if model is None and profile is None:
        raise InputError("give --model (a zoo model, see `costopt models`) or --profile FILE", field="model")
    checks.ident("model", model, optional=True)
    checks.choice("precision", precision, ("auto", "fp32", "amp_bf16", "amp_fp16"))
    checks.choice("overlap mode", overlap, OVERLAP_MODES)
    checks.ident("tensor set", tensor_set)
    batch = checks.as_count("batch per GPU", batch_per_gpu)
    if not isinstance(catalog, Catalog):
        checks.path_like("catalog", catalog)
    if not isinstance(system, SystemParams):
        checks.path_like("system", system)
    checks.path_like("profile", profile)
    cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    params = system if isinstance(system, SystemParams) else load_system(system)
    base = load_workload(model) if model else None
    workload = load_profile(profile, base) if profile is not None else base
    if workload is None:
        raise InputError("give --model or --profile", field="model")
    if batch is None:
        batch = workload.default_batch
    tensors = workload.tensors(tensor_set)
    return cat, params, workload, batch, tensors


def resolve_precision(workload: Workload, precision: str) -> str:
    """Check the model has a compute profile; `auto` stays `auto` (resolved per GPU, gpu_precisions)."""
    if not workload.precisions():
        raise InputError(f"model '{workload.model}' has no compute profile", field="model")
    return precision


def evaluate_space(
    space: DesignSpace, *, catalog: Catalog, workload: Workload, tensors: TensorSet, params: SystemParams,
    precision: str, batch_per_gpu: int, overlap: str = "wfbp", tco_years: float = 0.0,
    samples_to_train: float | None = None, basis: CostBasis | None = None, grad_accum: int = 1,
    stack: str | None = None, support_years: float = 0.0,
) -> Evaluation:
    """Timing and costs of every design in `space` (from `enumerate_designs` or `single_design`).

    Per GPU type of the catalog, the workload's compute estimate at `batch_per_gpu` and `precision`
    (measured, published ratio or roofline: see compute.py; `auto` = each GPU's best training precision)
    and whether it fits in memory; then the timing
    model (timing.py: iteration time, throughput, bottleneck) and the costs (cost.py: capex, power,
    rack units) of all designs as numpy arrays, one element per design. Costs are on `basis` (default:
    a purchase with `tco_years` of electricity, rented designs per job when `samples_to_train` is given,
    else per hour). `stack`: the communication stack of every design (None or auto: inferred per design,
    costopt/perf/stacks.py). Raises InputError when an argument has the wrong type or value.
    """
    for name, value, kind in (("space", space, DesignSpace), ("catalog", catalog, Catalog), ("workload", workload, Workload),
                              ("tensors", tensors, TensorSet), ("params", params, SystemParams)):
        if not isinstance(value, kind):
            raise InputError(f"evaluate_space: {name} must be a {kind.__name__}, got {type(value).__name__}", field=name)
    checks.choice("precision", precision, ("auto", "fp32", "amp_bf16", "amp_fp16"))
    checks.choice("overlap mode", overlap, OVERLAP_MODES)
    count("batch per GPU", batch_per_gpu)
    non_negative("TCO years", tco_years)
    positive("samples to train", samples_to_train, maximum=1e18)
    batch_per_gpu = int(batch_per_gpu)
    if basis is None:
        basis = CostBasis(tco_years=tco_years, samples=samples_to_train)
    elif not isinstance(basis, CostBasis):
        raise InputError(f"evaluate_space: basis must be a CostBasis, got {type(basis).__name__}", field="basis")
    elif tco_years or samples_to_train is not None:
        raise ValueError("give the cost basis or tco_years/samples_to_train, not both")
    if stack is not None and stack != AUTO:
        space.stack = stack_codes(stack, space.strategy, space.reduce_on)
    count("gradient accumulation steps", grad_accum)
    compute, precisions, memory_gb = _gpu_compute(workload, catalog, space, precision, batch_per_gpu, params, grad_accum)
    timing = evaluate(space, compute, tensors, params, batch_per_gpu * grad_accum, overlap)
    costs = price_on_basis(evaluate_costs(space, catalog.site, facility=catalog.facility,
                                          support_years=support_years), timing.throughput_samples_per_s, basis)
    return Evaluation(workload.model, precision, batch_per_gpu, overlap, catalog, workload, tensors, params,
                      space, compute, timing, costs, basis, grad_accum, precisions, memory_gb)


def _space_kwargs(cat: Catalog, budget: float | None, basis: CostBasis, *, max_nodes: int | None = None,
                  strategies: list[str] | None = None, reduce_on: list[str] | None = None,
                  gpu_ids: list[str] | None = None, nic_ids: list[str] | None = None,
                  gpus_per_node: list[int] | None = None, chassis_ids: list[str] | None = None,
                  node_budget: float | None | str = "auto") -> dict[str, Any]:
    """The `enumerate_designs` arguments of `enumerate_for_budget`."""
    if node_budget == "auto":
        node_budget = budget
        if cat.is_cloud and budget is not None:
            node_budget = {"hours": budget / basis.hours if basis.hours else None, "job": None}.get(basis.horizon or "",
                                                                                                     budget)
    top = max_nodes or (256 if cat.is_cloud and node_budget is None else DEFAULT_MAX_NODES)
    return dict(max_nodes=top, strategies=tuple(strategies or STRATEGIES), reduce_on=tuple(reduce_on or ("gpu",)),
                gpu_ids=gpu_ids, nic_ids=nic_ids, gpus_per_node=gpus_per_node, chassis_ids=chassis_ids,
                node_budget_usd=node_budget)


def enumerate_for_budget(cat: Catalog, budget: float | None, basis: CostBasis, *, max_nodes: int | None = None,
                         strategies: list[str] | None = None, reduce_on: list[str] | None = None,
                         gpu_ids: list[str] | None = None, nic_ids: list[str] | None = None,
                         gpus_per_node: list[int] | None = None, chassis_ids: list[str] | None = None,
                         node_budget: float | None | str = "auto") -> DesignSpace:
    """The design space `solve`, `compare`, `export` and `report` search: node counts bounded by what
    the budget buys on `basis` (owned: node price; rented per hour: hourly price; for `hours` hours:
    budget / hours; per job the time to train varies, so no bound and at most 256 nodes by default)."""
    return enumerate_designs(cat, **_space_kwargs(cat, budget, basis, max_nodes=max_nodes, strategies=strategies,
                                                  reduce_on=reduce_on, gpu_ids=gpu_ids, nic_ids=nic_ids,
                                                  gpus_per_node=gpus_per_node, chassis_ids=chassis_ids,
                                                  node_budget=node_budget))


def predict(
    model: str | None, gpu: str, gpus_per_node: int, nodes: int, nic: str | None, strategy: str, *,
    batch_per_gpu: int | None = None, precision: str = DEFAULT_PRECISION, reduce_on: str = "gpu",
    overlap: str = "wfbp", catalog: str | Path | Catalog | None = None, system: str | Path | SystemParams | None = None,
    profile: str | Path | None = None, tensor_set: str = "pytorch", chassis: str | None = None,
    tco_years: float = 0.0, nics_per_node: int = 1, grad_accum: int = 1, stack: str = AUTO,
    support_years: float = 0.0, today: date | None = None, framework: str = DEFAULT_FRAMEWORK,
) -> dict[str, Any]:
    """Predict one named design; returns a DESIGN dict (see README).

    A design that cannot run (the batch does not fit in the GPU's memory, the GPU lacks the precision, the
    fabric cannot be built) comes back with `feasible` False; `infeasible_reason` says why. The CLI
    exits 1 on it with that reason and prints no throughput. `stack`: nccl | mpi | grpc | gloo, or auto
    (ps -> grpc, all-reduce on the CPU -> mpi, else nccl; costopt/perf/stacks.py).
    """
    stack = check_stack(stack)
    checks.ident("gpu", gpu)
    checks.ident("nic", nic, optional=True)
    checks.ident("chassis", chassis, optional=True)
    checks.choice("strategy", strategy, STRATEGIES)
    checks.choice("reduce_on", reduce_on, REDUCE_ON)
    count("nodes", nodes)
    count("GPUs per node", gpus_per_node)
    count("NICs per node", nics_per_node)
    count("gradient accumulation steps", grad_accum)
    non_negative("TCO years", tco_years)
    today = checks.as_of(today) or date.today()
    cat, params, workload, batch, tensors = resolve_inputs(model, catalog, precision, batch_per_gpu, system,
                                                            profile, tensor_set, overlap)
    workload = workload.with_framework(framework)  # the software stack's host time (compute.py)
    precision = resolve_precision(workload, precision)
    space = single_design(cat, gpu, gpus_per_node, nodes, nic, strategy, reduce_on, chassis, nics_per_node)
    ev = evaluate_space(space, catalog=cat, workload=workload, tensors=tensors, params=params,
                        precision=precision, batch_per_gpu=batch, overlap=overlap, tco_years=tco_years,
                        grad_accum=grad_accum, stack=stack, support_years=support_years)
    d = ev.priced_rows([0], today)[0]
    d["model"] = workload.model
    d["as_of"] = today.isoformat()  # the day the price age was counted to (--as-of)
    return d


def infeasible_reason(design: dict[str, Any]) -> tuple[str, str] | None:
    """(reason code, one-line explanation) for a DESIGN dict that cannot run, else None.

    Codes: `memory` (the batch does not fit in the GPU's memory), `precision` (the GPU has no path for
    the precision), `fabric` (more node ports than a two-tier fabric of that switch family offers).
    """
    if design.get("feasible", True):
        return None
    what = (f"{design['total_gpus']} x {design['gpu']} ({design['gpus_per_node']} per node x {design['nodes']}) "
            f"at batch {design['batch_per_gpu']} ({design['precision']})")
    if design.get("bottleneck") == "precision":
        return "precision", f"{what}: {design['compute_basis']}"
    if design.get("bottleneck") == "memory":
        return "memory", f"{what} does not fit in GPU memory: {design['compute_basis']}"
    return "fabric", (f"{what}: {design['nodes']} nodes x {design['nics_per_node']} NIC(s) exceed a two-tier fabric "
                      f"of {design['nic']} switches")


@dataclass
class SolveResult:
    model: str
    budget_usd: float | None
    objective: str
    candidates_evaluated: int
    best: dict[str, Any]
    alternatives: list[dict[str, Any]]
    why: str
    solver: dict[str, Any]
    best_per_gpu: list[dict[str, Any]] = field(default_factory=list)
    evaluation: Evaluation | None = field(default=None, repr=False)  # where the ranked rows come from
    ranked: np.ndarray | None = field(default=None, repr=False)  # their design indices, best first
    why_strategy: str = ""  # the strategy comparison, apart from the buyer's reasons
    why_facts: dict[str, Any] = field(default_factory=dict)  # the designs and figures the reasons quote
    warnings: list[str] = field(default_factory=list)  # e.g. a global batch above what the model is known to train at
    excluded: dict[str, Any] = field(default_factory=dict)  # what the part filter left out (part_filter.py)
    as_of: str = ""  # the day price ages were counted to (YYYY-MM-DD; --as-of, default the clock's date)
    capacity: dict[str, Any] | None = None  # a rented pick: its instance type's cap and whether it bound

    @property
    def table(self) -> pd.DataFrame:
        """The ranked designs (best first) as a DataFrame with a `rank` column (pandas imported here)."""
        table = self.evaluation.frame(self.ranked)
        table.insert(0, "rank", np.arange(1, len(self.ranked) + 1))
        return table

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "budget_usd": self.budget_usd,
            "objective": self.objective,
            "candidates_evaluated": self.candidates_evaluated,
            "best": self.best,
            "alternatives": self.alternatives,
            "why": self.why,
            "why_strategy": self.why_strategy,
            "why_facts": self.why_facts,
            "warnings": self.warnings,
            "solver": self.solver,
            "best_per_gpu": self.best_per_gpu,
            "excluded": self.excluded,
            "as_of": self.as_of,
            "capacity": self.capacity,
        }


def solve(
    budget: float | None, model: str | None, *, objective: str = "throughput", catalog: str | Path | Catalog | None = None,
    precision: str = DEFAULT_PRECISION, batch_per_gpu: int | None = None, strategies: list[str] | None = None,
    reduce_on: list[str] | None = None, top: int = 10, max_power_kw: float | None = None,
    max_nodes: int | None = None, max_rack_units: float | None = None, min_throughput: float | None = None,
    deadline_hours: float | None = None, epochs: float | None = None, dataset_size: float | None = None,
    tco_years: float = 0.0, overlap: str = "wfbp", system: str | Path | SystemParams | None = None,
    profile: str | Path | None = None, tensor_set: str = "pytorch", gpus: list[str] | None = None,
    nics: list[str] | None = None, gpus_per_node: list[int] | None = None, hours: float | None = None,
    grad_accum: int = 1, stack: str = AUTO, include: list[str] | str | None = None,
    exclude_gpus: list[str] | None = None, support_years: float = 0.0, today: date | None = None,
    max_instances: int | None = None, confidence: float | None = None, framework: str = DEFAULT_FRAMEWORK,
) -> SolveResult:
    """Best design for the money; raises InfeasibleError (with the nearest design) when none fits.
    `stack`: the communication stack of every design (auto: from each design's strategy, costopt/perf/stacks.py)."""
    stack = check_stack(stack)
    checks.choice("objective", objective, OBJECTIVES)
    checks.budget(budget)
    today = checks.as_of(today)
    strategies = checks.ident_list("strategy", strategies)
    reduce_on = checks.ident_list("reduce_on", reduce_on)
    gpus = checks.ident_list("gpu", gpus)
    nics = checks.ident_list("nic", nics)
    if gpus_per_node is not None and (isinstance(gpus_per_node, (str, bytes)) or not isinstance(gpus_per_node, (list, tuple))):
        raise InputError(f"GPUs per node must be a list of whole numbers, got {checks.shown(gpus_per_node)}",
                         field="gpus_per_node")
    if budget is None and objective != "cost":
        raise InputError("--budget is required for objectives 'throughput' and 'cost-per-throughput'", field="budget")
    for name, v in (("max power", max_power_kw), ("max rack units", max_rack_units), ("min throughput", min_throughput),
                    ("deadline hours", deadline_hours), ("epochs", epochs), ("dataset size", dataset_size),
                    ("hours", hours)):
        positive(name, v)
    non_negative("TCO years", tco_years)
    count("max nodes", max_nodes)
    count("max instances", max_instances)
    count("top", top)
    count("gradient accumulation steps", grad_accum)
    for k in gpus_per_node or []:
        count("GPUs per node", k)
    samples = checks.samples_to_train(epochs, dataset_size)
    if deadline_hours is not None and samples is None:
        raise InputError("--deadline-hours needs --epochs and --dataset-size", field="deadline_hours")
    if confidence is not None and deadline_hours is None and min_throughput is None:
        raise InputError("--confidence applies to a throughput target: give --deadline-hours or --min-throughput",
                         field="confidence")
    if objective == "cost" and min_throughput is None and deadline_hours is None:
        raise InputError("objective 'cost' needs --min-throughput or --deadline-hours (with --epochs and --dataset-size)", field="objective")

    cat, params, workload, batch, tensors = resolve_inputs(model, catalog, precision, batch_per_gpu, system,
                                                            profile, "pytorch" if tensor_set is None else tensor_set, overlap)
    workload = workload.with_framework(framework)  # the software stack's host time (compute.py)
    precision = resolve_precision(workload, precision)
    check_cost_options(cat, support_years, hours)
    if max_instances is not None:
        cat = with_max_instances(cat, max_instances)
    part_filter = PartFilter.from_options(include, exclude_gpus, gpus, cat)
    basis = CostBasis(tco_years=tco_years, hours=hours, samples=samples)
    kw = _space_kwargs(cat, budget, basis, max_nodes=max_nodes, strategies=strategies, reduce_on=reduce_on,
                       gpu_ids=gpus, nic_ids=nics, gpus_per_node=gpus_per_node)
    limits = dict(budget=budget, objective=objective, max_power_kw=max_power_kw, max_rack_units=max_rack_units,
                  min_throughput=min_throughput, deadline_hours=deadline_hours, confidence=confidence,
                  part_filter=part_filter)
    ev, counts = evaluate_bounded(cat, kw, limits, workload=workload, tensors=tensors, params=params,
                                  precision=precision, batch_per_gpu=batch, overlap=overlap, basis=basis,
                                  grad_accum=grad_accum, stack=stack, support_years=support_years)
    return choose(ev, top=top, counts=counts, today=today, **limits)


# Designs evaluated at once (about 0.5 GB of arrays); a larger space is evaluated in pieces of this size
# and only the designs `choose` can pick or name are kept from each (see `_survivors`).
CHUNK_DESIGNS = 1_000_000

Keep = Callable[[Evaluation], np.ndarray]  # designs of one piece a caller needs besides `_survivors` (indices)


def evaluate_bounded(cat: Catalog, space_kw: dict[str, Any], limits: dict[str, Any], *, keep: Keep | None = None,
                     workload: Workload, tensors: TensorSet, params: SystemParams, precision: str, batch_per_gpu: int,
                     overlap: str, basis: CostBasis, grad_accum: int = 1, stack: str | None = None,
                     support_years: float = 0.0, chunk_designs: int | None = None,
                     ) -> tuple[Evaluation, tuple[int, int, tuple[int, ...]] | None]:
    """The design space `enumerate_designs(cat, **space_kw)` evaluated in bounded memory: the one mechanism
    of `solve`, `compare`, `report` and `export`.

    A space of at most CHUNK_DESIGNS designs is evaluated whole: (its Evaluation, None). A larger one is
    evaluated piece by piece (`iter_design_chunks`), keeping from each piece only what `choose` with
    `limits` may pick or name (`_survivors`: the piece's Pareto front merged as the pieces go, family
    bests, ...) plus `keep(piece)` (e.g. every row of an export table): (the survivors' Evaluation,
    `counts` for `choose`). Peak memory is one piece plus what is kept, whatever the catalog size.
    `chunk_designs`: designs per piece (None: CHUNK_DESIGNS)."""
    chunks = iter_design_chunks(cat, max_designs=chunk_designs or CHUNK_DESIGNS, **space_kw)
    first = next(chunks)
    second = next(chunks, None)
    if second is None:  # the whole space at once
        ev = evaluate_space(first, catalog=cat, workload=workload, tensors=tensors, params=params, precision=precision,
                            batch_per_gpu=batch_per_gpu, overlap=overlap, basis=basis, grad_accum=grad_accum,
                            stack=stack, support_years=support_years)
        return ev, None
    return _evaluate_in_chunks(itertools.chain([first, second], chunks), limits, catalog=cat, workload=workload,
                               tensors=tensors, params=params, precision=precision, batch_per_gpu=batch_per_gpu,
                               overlap=overlap, basis=basis, grad_accum=grad_accum, stack=stack,
                               support_years=support_years, keep=keep)


def request_of(ev: Evaluation, budget=None, objective="throughput", max_power_kw=None, max_rack_units=None,
               min_throughput=None, deadline_hours=None, confidence=None, part_filter=None) -> Request:
    """The shared request (search/limits.py) of `choose`'s keyword limits; the work to train is the
    evaluation's samples to train (epochs x dataset size)."""
    return Request(budget=budget, objective=objective, max_power_kw=max_power_kw, max_rack_units=max_rack_units,
                   min_throughput=min_throughput, work=ev.samples_to_train if deadline_hours is not None else None,
                   deadline_hours=deadline_hours, confidence=confidence, unit="samples/s")


def _masks(ev: Evaluation, **limits) -> dict[str, np.ndarray]:
    """The per-design masks `choose` works with (search/limits.py: one definition for both workload kinds,
    for the whole space and for its pieces)."""
    return limits_masks(ev.results(), request_of(ev, **limits))


def _family(s: DesignSpace, idx: np.ndarray) -> np.ndarray:
    """One integer per (gpu, chassis, nic, strategy, reduce_on, NICs per node) family, collision-free.

    Mixed radix, each digit below its radix (the number of values it can take in this space):

        key = ((((g·C + c)·(N+1) + (n+1))·S + s)·R + r)·K + k

    with C chassis, N NICs (n = -1: none), S strategies, R reduce_on values and K = 1 + the largest
    NICs-per-node count, so two families share a key only when all six digits are equal, and ascending
    keys order families by the tuple (g, c, n, s, r, k). When the product of the radices would not fit
    in an int64, the families are numbered by `np.unique` over the six columns instead (same order).
    """
    cols = (s.gpu_idx[idx], s.chassis_idx[idx], s.nic_idx[idx] + 1, s.strategy[idx], s.reduce_on[idx],
            s.nics_per_node[idx])
    kmax = int(s.nics_per_node[idx].max()) + 1 if len(idx) else 1
    radices = (len(s.gpus), len(s.chassis), len(s.nics) + 1, len(STRATEGIES), len(REDUCE_ON), kmax)
    if math.prod(radices) < 2**62:
        key = np.zeros(len(idx), dtype=np.int64)
        for col, radix in zip(cols, radices):
            key = key * radix + col
        return key
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].reshape(-1)


def _survivors(ev: Evaluation, limits: dict[str, Any]) -> tuple[np.ndarray, int]:
    """Designs of one piece of the space that `choose` over the whole space may pick or name, and the
    piece's count of candidates after constraints.

    Kept: the piece's Pareto front (the whole space's front lies in the union of the pieces' fronts, and
    the front of that union is the whole front); each family's best; for `explain`, the fastest design
    within budget of each strategy kind (PS or all-reduce) and of each GPU type (first in design order on
    ties); for an infeasible request, each pool's nearest design by every ordering `_infeasible` uses.
    """
    m_all = _masks(ev, **limits)
    t, c, s = ev.timing, ev.costs, ev.space
    cost, thr = c.cost_usd, t.throughput_samples_per_s
    rank = s.order_rank()
    objective, budget = limits["objective"], limits["budget"]
    offered = (limits.get("part_filter") or PartFilter()).design_reasons(s) == KEPT
    keep = []
    cand_all = np.flatnonzero(m_all["cand"])
    keep.append(cand_all[pareto_front(cost[cand_all], thr[cand_all], rank[cand_all])])
    # the same selections among the designs the part filter offers (the choice), among those it leaves
    # out (the best left-out design) and among all: families never mix the two, as a filter decides by
    # GPU, chassis and NIC
    for sel in (offered, ~offered, None):
        m = m_all if sel is None else {k: v & sel for k, v in m_all.items()}
        _keep_for_choose(m, ev, objective, budget, rank, keep)
    kept = np.zeros(len(s), dtype=bool)
    kept[np.concatenate(keep)] = True
    return np.flatnonzero(kept), int((m_all["cand"] & offered).sum())


def _keep_for_choose(m: dict[str, np.ndarray], ev: Evaluation, objective: str, budget: float | None,
                     rank: np.ndarray, keep: list) -> None:
    """Append to `keep` the designs of the masks `m` that `choose` may pick or name (see `_survivors`)."""
    t, c, s = ev.timing, ev.costs, ev.space
    cost, thr = c.cost_usd, t.throughput_samples_per_s
    cand = np.flatnonzero(m["cand"])
    keep.append(cand[pareto_front(cost[cand], thr[cand], rank[cand])])
    idx = np.flatnonzero(m["within"])
    if len(idx):
        score = -objective_values(objective, cost[idx], thr[idx])
        keep.append(idx[best_per_group(_family(s, idx), score, cost[idx], rank[idx])])
        # the robustness shortlist (robustness.decision_robustness): the SHORTLIST best by (score, cost, rank);
        # the whole space's are among the pieces' own
        from costopt.search.robustness import SHORTLIST

        keep.append(idx[_best_k(-score, cost[idx], rank[idx], SHORTLIST)])
    shown = m["hw_ok"] & ((cost <= budget) if budget is not None else True)
    is_ps = s.strategy == STRATEGIES.index("ps")
    for group in (is_ps.astype(np.int64), s.gpu_idx):
        j = np.flatnonzero(shown)
        if len(j):  # fastest of each group, first in index order on ties
            keep.append(j[best_per_group(group[j], thr[j], np.zeros(len(j)), j)])
    spend = c.spend_usd if c.spend_usd is not None else cost
    for pool in (m["hw_ok"], m["ok"]):
        for sub in (pool, pool & (spend <= budget) if budget is not None else pool):
            j = np.flatnonzero(sub)
            if len(j) == 0:
                continue
            zero = np.zeros(len(j), dtype=np.int64)
            for score, second in ((-cost[j], -thr[j]), (thr[j], cost[j]), (thr[j], spend[j])):
                keep.append(j[best_per_group(zero, score, second, rank[j])])


def _best_k(value: np.ndarray, cost: np.ndarray, rank: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k first by (value, cost, rank) ascending: `np.lexsort` on the few whose value is
    at most the k-th smallest, not on all."""
    if len(value) <= k:
        return np.arange(len(value))
    kth = np.partition(value, k - 1)[k - 1]
    cand = np.flatnonzero(value <= kth) if not np.isnan(kth) else np.arange(len(value))
    return cand[np.lexsort((rank[cand], cost[cand], value[cand]))[:k]]


def _concat(parts: list, kind):
    """Concatenate dataclasses of per-design arrays field by field (None stays None; a scalar field, the
    same for every piece, is kept)."""
    from dataclasses import fields as dc_fields

    out = {}
    for f in dc_fields(kind):
        values = [getattr(p, f.name) for p in parts]
        if values[0] is None or not isinstance(values[0], np.ndarray):
            out[f.name] = values[0]
        else:
            out[f.name] = np.concatenate(values)
    return kind(**out)


def _evaluate_in_chunks(chunks, limits: dict[str, Any], *, catalog: Catalog, workload: Workload, tensors: TensorSet,
                        params: SystemParams, precision: str, batch_per_gpu: int, overlap: str,
                        basis: CostBasis, grad_accum: int = 1, stack: str | None = None,
                        support_years: float = 0.0,
                        keep: Keep | None = None) -> tuple[Evaluation, tuple[int, int, tuple[int, ...]]]:
    """Evaluate a large design space piece by piece, keeping only each piece's `_survivors` (and
    `keep(piece)`): memory is bounded by one piece and what is kept, whatever the catalog size. Returns the
    survivors as one Evaluation and
    (designs evaluated, candidates after constraints, designs left out per part-filter reason) over the
    whole space."""
    spaces, timings, costs = [], [], []
    compute: GpuCompute | None = None
    memory_gb = None
    n_designs = n_cand = 0
    part_filter = limits.get("part_filter") or PartFilter()
    n_left = np.zeros(len(REASONS), dtype=np.int64)
    for space in chunks:
        r = part_filter.design_reasons(space)
        n_left += np.bincount(r[r != KEPT], minlength=len(REASONS))
        ev = evaluate_space(space, catalog=catalog, workload=workload, tensors=tensors, params=params,
                            precision=precision, batch_per_gpu=batch_per_gpu, overlap=overlap, basis=basis,
                            grad_accum=grad_accum, stack=stack, support_years=support_years)
        gpu_precision = ev.gpu_precision  # per catalog GPU: the same in every piece
        memory_gb = ev.gpu_memory_gb if memory_gb is None else np.where(np.isnan(ev.gpu_memory_gb), memory_gb,
                                                                          ev.gpu_memory_gb)
        kept, k = _survivors(ev, limits)
        if keep is not None:
            kept = np.union1d(kept, np.asarray(keep(ev), dtype=np.int64))
        n_designs += len(space)
        n_cand += k
        spaces.append(space.take(kept))
        timings.append(_take(ev.timing, kept))
        costs.append(_take(ev.costs, kept))
        compute = ev.compute if compute is None else _merge_compute(compute, ev.compute, space)
        del ev
    first = spaces[0]
    space = DesignSpace(first.gpus, first.chassis, first.nics, *(np.concatenate([getattr(p, f) for p in spaces]) for f in
                        ("gpu_idx", "chassis_idx", "nic_idx", "nodes", "strategy", "reduce_on", "nics_per_node",
                          "stack")))
    ev = Evaluation(workload.model, precision, batch_per_gpu, overlap, catalog, workload, tensors, params, space, compute,
                    _concat(timings, Timing), _concat(costs, Costs), basis, grad_accum, gpu_precision, memory_gb)
    return ev, (n_designs, n_cand, tuple(int(x) for x in n_left))


def _take(arrays, idx: np.ndarray):
    """A dataclass of per-design arrays, restricted to `idx` (None fields stay None)."""
    from dataclasses import fields as dc_fields

    return type(arrays)(**{f.name: (getattr(arrays, f.name) if not isinstance(getattr(arrays, f.name), np.ndarray)
                                    else getattr(arrays, f.name)[idx])
                           for f in dc_fields(arrays)})


def _merge_compute(a: GpuCompute, b: GpuCompute, space: DesignSpace) -> GpuCompute:
    """Per-GPU compute of two pieces: `b`'s values for the GPUs the piece `space` uses, `a`'s elsewhere."""
    used = np.bincount(space.gpu_idx, minlength=len(a.forward_s)) > 0
    pick = lambda x, y: np.where(used, y, x)  # noqa: E731
    return GpuCompute(pick(a.forward_s, b.forward_s), pick(a.backward_s, b.backward_s), pick(a.step_s, b.step_s),
                      pick(a.memory_ok, b.memory_ok), pick(a.supported, b.supported),
                      [y if u else x for x, y, u in zip(a.source, b.source, used)],
                      [y if u else x for x, y, u in zip(a.basis, b.basis, used)])


def choose(ev: Evaluation, *, budget: float | None, objective: str, top: int = 10, max_power_kw: float | None = None,
           max_rack_units: float | None = None, min_throughput: float | None = None,
           counts: tuple | None = None, part_filter: PartFilter | None = None,
           today: date | None = None, deadline_hours: float | None = None,
           confidence: float | None = None) -> SolveResult:
    """Apply constraints to an evaluated space, pick the best design, rank the alternatives.

    The limits and the objective are search/limits.py's (shared with the large-model path): budget,
    power, rack units, and a throughput target (`min_throughput`, or the evaluation's samples to train
    within `deadline_hours`) met at `confidence` (default: p10 with a deadline, the point estimate
    otherwise). `counts` (designs evaluated, candidates after constraints) replaces the counts of `ev` when `ev`
    holds only the survivors of a space evaluated in pieces (`_evaluate_in_chunks`; the left-out counts
    in `excluded` then count survivors only). `part_filter` (None: the default one, current data-centre
    and workstation parts) leaves designs out of the choice; the result's `excluded` says what the best
    of them would have given (part_filter.py)."""
    if not isinstance(ev, Evaluation):
        raise InputError(f"choose: ev must be an Evaluation (from evaluate_space), got {type(ev).__name__}", field="ev")
    checks.choice("objective", objective, OBJECTIVES)
    checks.budget(budget)
    count("top", top)
    positive("max power", max_power_kw)
    positive("max rack units", max_rack_units)
    positive("min throughput", min_throughput)
    if deadline_hours is not None and ev.samples_to_train is None:
        raise InputError("--deadline-hours needs --epochs and --dataset-size", field="deadline_hours")
    today = checks.as_of(today) or date.today()  # one date for every price age this result prints
    t, c, s = ev.timing, ev.costs, ev.space
    cost, thr = c.cost_usd, t.throughput_samples_per_s
    part_filter = part_filter if part_filter is not None else PartFilter()
    reasons = part_filter.design_reasons(s)
    req = request_of(ev, budget, objective, max_power_kw, max_rack_units, min_throughput, deadline_hours, confidence)
    target = req.target
    res = ev.results()
    m_all = limits_masks(res, req)
    m = limits_masks(res, req, offered=reasons == KEPT)
    ok_all, ok = m_all["ok"], m["ok"]
    if not ok.any():
        if ok_all.any():
            raise InfeasibleError(f"no design the part filter offers ({part_filter.describe()}) can run {ev.model} at "
                                  f"batch {ev.batch_per_gpu} ({ev.precision}); --include consumer,legacy,eol considers "
                                  f"the rest", reason="part-filter")
        bases = sorted({b for b, f in zip(ev.compute.basis, ev.compute.supported) if b})
        raise InfeasibleError(
            f"no design can run {ev.model} at batch {ev.batch_per_gpu} ({ev.precision}): "
            + "; ".join(bases[:4]), reason="memory/precision")
    hw_all, hw_ok, in_budget = m_all["hw_ok"], m["hw_ok"], m["in_budget"]
    order_rank = s.order_rank()
    best, info = limits_pick(res, req, order_rank, m)
    info = {**info, "solver": SOLVER_NAME}
    if best is None:
        exc = limits_infeasible(res, req, order_rank, m, ev.model)
        if ((reasons != KEPT) & hw_all).any():
            exc.args = (f"{exc.args[0]} (the part filter left runnable designs out: {part_filter.describe()}; "
                        f"--include consumer,legacy,eol considers them)",)
        raise exc
    front_budget = None if c.spend_usd is not None else budget

    # alternatives: the best design of each (gpu, chassis, nic, strategy, reduce_on) family
    within = m["within"]
    idx = np.flatnonzero(within)
    score = -objective_values(objective, cost[idx], thr[idx])
    fam = _family(s, idx)
    fam_best = idx[best_per_group(fam, score, cost[idx], order_rank[idx])]
    fam_score = -objective_values(objective, cost[fam_best], thr[fam_best])
    ranked = fam_best[np.lexsort((order_rank[fam_best], cost[fam_best], -fam_score))]
    # best design of each GPU type, for the buyer who wants to see every option's best shot
    _, first_pos = np.unique(s.gpu_idx[ranked], return_index=True)
    per_gpu = ranked[np.sort(first_pos)]
    per_gpu = np.concatenate([[best], per_gpu[s.gpu_idx[per_gpu] != s.gpu_idx[best]]])
    ranked = np.concatenate([[best], ranked[ranked != best]])[: max(top, 1)]
    rows = ev.priced_rows(ranked, today)  # bills of materials only for the designs shown
    expl = explain(ev, best, hw_ok & in_budget & m["meets"], objective, order_rank, target)
    info = {**info, "candidates_after_constraints": int(m["cand"].sum()) if counts is None else counts[1]}
    if target is not None:
        info["target_throughput"] = float(target)
        info["confidence"] = req.level
        info["target_rule"] = f"every design shown meets {req.target_phrase()}"
    per_gpu_rows = ev.priced_rows(per_gpu, today)
    # how sure: near-ties (80% ranges overlapping the best's) and decision robustness (costopt/search/robustness.py)
    from costopt.search.robustness import decision_robustness, near_ties

    for picked, out in ((ranked, rows), (per_gpu, per_gpu_rows)):
        both = np.concatenate([[best], picked])
        low, high = throughput_range(ev, both)
        for r, flag in zip(out, near_ties(low, high, 0)[1:] & (picked != best)):
            r["near_tie"] = bool(flag)
    if ev.samples_to_train:
        for r, i in zip(rows, ranked.tolist()):
            _time_range(r, ev.samples_to_train)
        for r in per_gpu_rows:
            _time_range(r, ev.samples_to_train)
    pool = idx if len(idx) else np.array([best])
    info.update(decision_robustness(ev, best, pool, objective, target))
    excluded = excluded_summary(
        reasons=reasons, pool=hw_all & in_budget & m_all["meets"], cost=cost, throughput=thr, order_rank=order_rank,
        budget=front_budget, min_throughput=target, objective=objective,
        chosen=rows[0], to_design=lambda i: ev.rows([i])[0], catalog=ev.catalog, part_filter=part_filter,
        reason_counts=counts[2] if counts is not None and len(counts) > 2 else None)
    warnings = [w for w in [batch_warning(ev.model, ev.workload.optimizer, ev.batch_per_gpu * ev.grad_accum,
                                          rows[0]["total_gpus"])] if w]
    capacity = capacity_summary(s.chassis[int(s.chassis_idx[best])], int(s.nodes[best]))
    return SolveResult(ev.model, budget, objective, len(s) if counts is None else counts[0], rows[0], rows[1:],
                       expl.why, info, per_gpu_rows, ev, ranked, why_strategy=expl.strategy,
                       why_facts=expl.facts, warnings=warnings, excluded=excluded, as_of=today.isoformat(),
                       capacity=capacity)


def _time_range(row: dict[str, Any], work: float) -> None:
    """Time to train's 80% range: time runs against throughput, so its low end is work / the high end of
    throughput and its high end work / the low end."""
    lo, hi = row.get("throughput_low_samples_per_s"), row.get("throughput_high_samples_per_s")
    if lo and hi:
        row["time_to_train_low_h"] = float(f"{work / hi / 3600.0:.9g}")
        row["time_to_train_high_h"] = float(f"{work / lo / 3600.0:.9g}")


def best_per_group(group: np.ndarray, score: np.ndarray, cost: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Positions of each group's best element, groups in ascending code order: the highest score, then
    the lowest cost, then the lowest rank, then the first. One sort by group, then `reduceat` per group
    (the same picks as a 4-key lexsort, far cheaper on millions of designs)."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(group, kind="stable")
    g = group[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    sc = score[order]
    ok = sc == np.maximum.reduceat(sc, starts)[seg]
    c = np.where(ok, cost[order], np.inf)
    ok &= c == np.minimum.reduceat(c, starts)[seg]
    r = np.where(ok, rank[order], np.iinfo(np.int64).max)
    ok &= r == np.minimum.reduceat(r, starts)[seg]
    pos = np.flatnonzero(ok)
    first = np.concatenate(([True], seg[pos][1:] != seg[pos][:-1]))
    return order[pos[first]]


__all__ = ["predict", "solve", "choose", "evaluate_space", "infeasible_reason", "Evaluation", "SolveResult", "DESIGN_FIELDS"]
