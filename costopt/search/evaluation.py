"""The one result every workload's performance model returns, and the data-parallel result behind it.

A reader's map (docs/model.md, "One engine"):

    catalog ─► design space (search/design_space.py: GPU, chassis, G per node, M nodes, NIC × k, strategy)
      │
      ├─ data-parallel zoo model:  search/api.py::evaluate_space  (perf/compute.py, perf/timing.py)  ─► Evaluation
      └─ transformer by architecture: search/llm_search.py::search_llm  (perf/llm/: best layout per design) ─► LlmSearch
      │                                 both priced by hardware/cost.py on one CostBasis
      ▼
    DesignResults  (this module; `Evaluation.results()`, `LlmSearch.results()`)
      ▼
    search/limits.py: Request (budget, power, rack units, throughput target from --min-throughput or
      work / deadline, at a confidence; objective) ─► masks ─► pick (solver.py's Pareto front) or
      infeasible (the nearest feasible design, exit 1)
      ▼
    rows(idx) (the row format of tables, JSON, exports, reports; DESIGN_FIELDS for data-parallel
      models, perf/llm/evaluate.py::design_record for transformers) ─► BOM (hardware/bom.py), Why, CLI

`DesignResults`, per design of the space (numpy arrays of one element per design unless said):

    unit            "samples/s" (data-parallel models) or "tokens/s" (transformers): the unit of every
                    throughput below, of `--min-throughput`, and of the work a deadline divides
    space, costs    the hardware (DesignSpace) and its costs on the request's basis (Costs: cost_usd,
                    capex_usd, power_kw, rack_units, buildable, spend_usd, ...)
    throughput      point estimate (the median of its error distribution)
    feasible        bool: runs (fits in GPU memory, precision supported, layout/degrees valid, global
                    batch held); the fabric's `costs.buildable` is the other half
    ranges(idx)     (low, high): the 80% range (p10, p90) of the designs `idx`
    reason(idx)     str per design: '' or the first reason it cannot run
    memory_gb(idx)  GB per GPU the design needs (NaN where the model does not size it)
    breakdown(idx)  dict of arrays: the iteration (step) time and its terms, in seconds
    evidence(idx)   str per design: where its compute time comes from (measured, published ratio,
                    roofline estimate, with the figures)
    rows(idx)       the designs as output rows (dicts)

Functions of `idx` are evaluated only for the designs a command shows or tests, never the whole space,
so a million-design solve pays for arrays only. Downstream code (limits, objectives, near-ties, BOM,
the CLI) reads only this interface.

`Evaluation` (below) is the data-parallel result: the space, its compute, timing, costs and
feasibility as arrays; `DESIGN_FIELDS` and `design_dict` are its row format; `throughput_range` is each
design's 80% range. Split from `search/api.py` so the modules that read a result (why, robustness,
reports) import the result type without importing the engine that makes it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from costopt.hardware.bom import bom_dicts, oldest_price, tco_lines
from costopt.hardware.cost import CostBasis
from costopt.hardware.part_filter import segment_lifecycle
from costopt.perf.intervals import COMPUTE_KINDS, compute_kind
from costopt.perf.intervals import bounds as _interval_bounds
from costopt.perf.stacks import STACKS
from costopt.perf.timing import BOTTLENECKS
from costopt.search.design_space import REDUCE_ON, STRATEGIES

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is returned (Evaluation.frame)
    import pandas as pd

    from costopt.hardware.catalog import Catalog
    from costopt.hardware.cost import Costs
    from costopt.perf.system import SystemParams
    from costopt.perf.timing import GpuCompute, Timing
    from costopt.perf.workload import TensorSet, Workload
    from costopt.search.design_space import DesignSpace

# Columns of a DESIGN (JSON object / table row), in output order.
DESIGN_FIELDS = (
    "gpu", "segment", "lifecycle", "chassis", "gpus_per_node", "nodes", "total_gpus", "nic", "nics_per_node", "transport", "strategy", "reduce_on",
    "stack", "batch_per_gpu", "grad_accum", "precision", "overlap", "cost_usd", "cost_basis", "capex_usd",
    "energy_usd_per_year", "power_kw", "rack_units", "throughput_samples_per_s", "throughput_low_samples_per_s",
    "throughput_high_samples_per_s", "usd_per_sample_per_s", "scaling_efficiency", "t_iter_s",
    "t_compute_s", "t_comm_s", "t_exposed_comm_s", "bottleneck", "busiest_nic_bytes_per_iter",
    "time_to_train_h", "compute_source", "compute_basis", "feasible",
)


Idx = np.ndarray  # design indices (int64)


@dataclass
class DesignResults:
    """The result interface of the module docstring."""

    unit: str
    space: DesignSpace
    costs: Costs
    throughput: np.ndarray
    feasible: np.ndarray
    ranges: Callable[[Idx], tuple[np.ndarray, np.ndarray]]
    reason: Callable[[Idx], np.ndarray]
    memory_gb: Callable[[Idx], np.ndarray]
    breakdown: Callable[[Idx], dict[str, np.ndarray]]
    evidence: Callable[[Idx], np.ndarray]
    rows: Callable[[Idx], list[dict[str, Any]]]

    def __len__(self) -> int:
        return len(self.throughput)


@dataclass
class Evaluation:
    """A design space with its timing and costs: one numpy element per design."""

    model: str
    precision: str
    batch_per_gpu: int
    overlap: str
    catalog: Catalog
    workload: Workload
    tensors: TensorSet
    params: SystemParams
    space: DesignSpace
    compute: GpuCompute
    timing: Timing
    costs: Costs
    basis: CostBasis = field(default_factory=CostBasis)
    grad_accum: int = 1  # micro-batches of batch_per_gpu per synchronisation
    gpu_precision: list[str] | None = None  # per catalog GPU (space.gpus order): the precision it runs
    gpu_memory_gb: np.ndarray | None = None  # per catalog GPU: GB its compute estimate needs (NaN: none)

    def __len__(self) -> int:
        return len(self.space)

    def results(self) -> DesignResults:
        """This evaluation as the one result interface (module docstring)."""
        t, s = self.timing, self.space

        def reason(idx: Idx) -> np.ndarray:
            idx = np.asarray(idx, dtype=np.int64)
            bott = np.array(BOTTLENECKS, dtype=object)[t.bottleneck[idx]]
            basis = np.array(self.compute.basis, dtype=object)[s.gpu_idx[idx]]
            why = np.where(bott == "memory", "does not fit in GPU memory: " + basis,
                           np.where(bott == "precision", basis, "the fabric cannot be built with that switch family"))
            return np.where(t.feasible[idx] & self.costs.buildable[idx], "", why).astype(object)

        def memory(idx: Idx) -> np.ndarray:
            gm = self.gpu_memory_gb if self.gpu_memory_gb is not None else np.full(len(s.gpus), np.nan)
            return gm[s.gpu_idx[np.asarray(idx, dtype=np.int64)]]

        def breakdown(idx: Idx) -> dict[str, np.ndarray]:
            idx = np.asarray(idx, dtype=np.int64)
            return {"t_iter_s": t.t_iter_s[idx], "t_compute_s": t.t_compute_s[idx], "t_comm_s": t.t_comm_s[idx],
                    "t_exposed_comm_s": t.t_exposed_comm_s[idx]}

        return DesignResults(
            "samples/s", s, self.costs, t.throughput_samples_per_s, t.feasible,
            lambda idx: throughput_range(self, idx), reason, memory, breakdown,
            lambda idx: np.array(self.compute.basis, dtype=object)[s.gpu_idx[np.asarray(idx, dtype=np.int64)]],
            self.rows)

    @property
    def samples_to_train(self) -> float | None:
        return self.basis.samples

    @property
    def tco_years(self) -> float:
        return self.basis.tco_years

    def cost_basis(self, idx: np.ndarray) -> np.ndarray:
        """What `cost_usd` means for each design (`CostBasis.label`): a purchase, a TCO, a rent, or an
        owned cluster's use over the stated horizon."""
        rented = self.costs.rented[idx] if self.costs.rented is not None else np.zeros(len(idx), dtype=bool)
        return np.where(rented, self.basis.label(True), self.basis.label(False)).astype(object)

    def columns(self, idx: np.ndarray | list[int] | None = None) -> dict[str, np.ndarray]:
        """DESIGN columns (one numpy array per field, in DESIGN_FIELDS order) for the given design
        indices (all when None)."""
        idx = np.arange(len(self.space)) if idx is None else np.asarray(idx, dtype=np.int64)
        s, t, c = self.space, self.timing, self.costs
        gi = s.gpu_idx[idx]
        nic_ids = np.array([n.id for n in s.nics] + ["none"], dtype=object)
        transports = np.array([n.transport for n in s.nics] + ["none"], dtype=object)
        ni = np.where(s.nic_idx[idx] < 0, len(s.nics), s.nic_idx[idx])
        thr = t.throughput_samples_per_s[idx]
        low, high = throughput_range(self, idx)
        ttt = (self.samples_to_train / thr / 3600.0) if self.samples_to_train else np.full(len(idx), np.nan)
        segment, lifecycle = segment_lifecycle(s, idx)
        return {
                "gpu": np.array([g.id for g in s.gpus], dtype=object)[gi],
                "segment": segment,
                "lifecycle": lifecycle,
                "chassis": np.array([ch.id for ch in s.chassis], dtype=object)[s.chassis_idx[idx]],
                "gpus_per_node": s.gpus_per_node[idx],
                "nodes": s.nodes[idx],
                "total_gpus": s.total_gpus[idx],
                "nic": nic_ids[ni],
                "nics_per_node": np.where(s.nic_idx[idx] < 0, 0, s.nics_per_node[idx]),
                "transport": transports[ni],
                "strategy": np.array(STRATEGIES, dtype=object)[s.strategy[idx]],
                "reduce_on": np.array(REDUCE_ON, dtype=object)[s.reduce_on[idx]],
                "stack": np.array(STACKS, dtype=object)[s.stack[idx]],
                "batch_per_gpu": np.full(len(idx), self.batch_per_gpu),
                "grad_accum": np.full(len(idx), self.grad_accum),
                "precision": (np.array(self.gpu_precision, dtype=object)[gi] if self.gpu_precision is not None
                              else np.full(len(idx), self.precision, dtype=object)),
                "overlap": np.full(len(idx), self.overlap, dtype=object),
                "cost_usd": c.cost_usd[idx],
                "cost_basis": self.cost_basis(idx),
                "capex_usd": c.capex_usd[idx],
                "energy_usd_per_year": c.energy_usd_per_year[idx],
                "power_kw": c.power_kw[idx],
                "rack_units": c.rack_units[idx],
                "throughput_samples_per_s": thr,
                "throughput_low_samples_per_s": low,
                "throughput_high_samples_per_s": high,
                "usd_per_sample_per_s": c.cost_usd[idx] / thr,
                "scaling_efficiency": t.scaling_efficiency[idx],
                "t_iter_s": t.t_iter_s[idx],
                "t_compute_s": t.t_compute_s[idx],
                "t_comm_s": t.t_comm_s[idx],
                "t_exposed_comm_s": t.t_exposed_comm_s[idx],
                "bottleneck": np.array(BOTTLENECKS, dtype=object)[t.bottleneck[idx]],
                "busiest_nic_bytes_per_iter": t.busiest_nic_bytes[idx],
                "time_to_train_h": ttt,
                "compute_source": np.array(self.compute.source, dtype=object)[gi],
                "compute_basis": np.array(self.compute.basis, dtype=object)[gi],
                "feasible": t.feasible[idx] & c.buildable[idx],
        }

    def frame(self, idx: np.ndarray | list[int] | None = None) -> pd.DataFrame:
        """DESIGN rows for the given design indices (all when None), as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.columns(idx), columns=list(DESIGN_FIELDS))

    def raw_rows(self, idx: np.ndarray | list[int]) -> list[dict[str, Any]]:
        """DESIGN rows as dicts of Python values, unrounded."""
        cols = {k: v.tolist() for k, v in self.columns(idx).items()}
        return [{k: cols[k][i] for k in DESIGN_FIELDS} for i in range(len(idx))]

    def rows(self, idx: np.ndarray | list[int]) -> list[dict[str, Any]]:
        """DESIGN dicts (as `design_dict` makes them) for the given design indices, without pandas."""
        return [design_dict(r) for r in self.raw_rows(idx)]

    def priced_rows(self, idx: np.ndarray | list[int], today: date | None = None) -> list[dict[str, Any]]:
        """DESIGN dicts with each design's bill of materials (`bom`, bom.py), its oldest price date and a
        warning when that price is over a year old on `today` (None: the clock's date; `--as-of` fixes
        it so a rerun prints the same bytes). For the few designs a command shows, never the space."""
        out = self.rows(idx)
        for d, i in zip(out, np.asarray(idx, dtype=np.int64).tolist()):
            d["bom"] = bom_dicts(self.catalog, self.space, self.costs, int(i))
            rented = self.costs.rented is not None and bool(self.costs.rented[int(i)])
            if self.basis.tco_years and not rented:  # the whole cost of owning, term by term (bom.tco_lines)
                d["tco"] = tco_lines(self.catalog, self.costs, int(i), self.basis.tco_years)
            age = oldest_price(d["bom"], today or date.today())
            d["oldest_price_date"] = age["oldest_price_date"]
            d["price_warning"] = age["warning"]
        return out


def throughput_range(ev: Evaluation, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """80% range of each design's throughput (costopt/perf/intervals.py): the stack's leave-one-source-out
    residuals read as the error of the time beyond compute, weighed by the design's exposed share
    1 − t_compute / t_iter, combined with the compute residuals of the GPU's evidence kind (measured,
    published ratio, roofline) at the design's compute share t_compute / t_iter, capped at perfect
    scaling of the design's own GPU (widened by that GPU's compute range)."""
    t, s = ev.timing, ev.space
    idx = np.asarray(idx, dtype=np.int64)
    kind_of_gpu = np.array([COMPUTE_KINDS.index(compute_kind(src)) for src in ev.compute.source], dtype=np.int64)
    share = t.t_compute_s[idx] / t.t_iter_s[idx]
    perfect = s.total_gpus[idx] * ev.batch_per_gpu * ev.grad_accum / t.t_compute_s[idx]
    return _interval_bounds(t.throughput_samples_per_s[idx], s.stack[idx], kind_of_gpu[s.gpu_idx[idx]], share, perfect)



def design_dict(row: pd.Series | dict[str, Any]) -> dict[str, Any]:
    """One DESIGN as JSON-ready Python values: floats to 9 significant digits, NaN as None."""
    out: dict[str, Any] = {}
    for k in DESIGN_FIELDS:
        v = row[k]
        if isinstance(v, (np.integer,)):
            v = int(v)
        elif isinstance(v, (np.floating, float)):
            v = None if math.isnan(float(v)) else float(f"{float(v):.9g}")  # 9 significant digits
        elif isinstance(v, np.bool_):
            v = bool(v)
        out[k] = v
    return out
