"""The multi-job problem's data: candidates per job, the parts market, the limits, and exact totals.

Several jobs, one purchase: a mixed-integer program over every job's candidate designs.

Each job j (model, precision, batch per GPU) runs on its own partition of the cluster, i.e. on one
design d of its own design space C_j. A design d has, from the timing model and `cost.py`:
throughput τ_d, cost c_d (capex, or TCO), power P_d (kW), rack units R_d, nodes M_d, and uses parts:
u_{d,p} units of part p, where a part is a GPU type (u = total GPUs), a chassis type (u = nodes) or
a NIC type (u = nodes × NICs per node, multi-node designs only). Prices π_p are the catalog's list prices.

Parts split in two. A *shared* part S is one that the mix names in [inventory] (owned units o_p,
free of charge), [stock] (at most s_p units can be bought) or [[discount]] (volume tiers). Its cost
depends on the units all jobs together need, so it is taken out of each design's own cost:

    own cost  a_d = c_d − Σ_{p∈S} π_p u_{d,p}          (≥ 0: node hardware bought at list price,
                                                        switch ports, energy under TCO)

Every other part stays inside a_d at list price.

Volume tiers are all-units discounts: band k = [l_k, h_k] (h_k = l_{k+1} − 1, the last band open)
prices every unit at ρ_k when the quantity bought lies in the band. Units below the first tier's
`from_units` form an implicit band at the list price. Buying more than needed is allowed (spare
units, when the next band makes that cheaper), so the cost of needing n units,

    f_p(n) = min over bands k, b ≥ max(0, n − o_p), b ∈ [l_k, h_k], b ≤ s_p  of  ρ_k · b,

never decreases with n. (Monotone part costs are what keep the pruning below valid.)

`evaluate_picks` computes the exact totals of given selections (one design per job), `brute_force`
enumerates every combination with them: the reference the program is tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from costopt.core.errors import InputError
from costopt.search.mix import PARTS

if TYPE_CHECKING:
    import pandas as pd

MIX_OBJECTIVES = ("throughput", "fair", "cost")
_INF = math.inf
_TIE_TOL = 1e-7
Progress = Callable[[str], None]  # receives one line of progress at a time (the CLI writes them to stderr)


def _say(progress: Progress | None, line: str) -> None:
    if progress is not None:
        progress(line)


@dataclass
class JobCandidates:
    """One job's candidate designs as arrays (one element per design)."""

    name: str
    cost_usd: np.ndarray
    throughput: np.ndarray
    power_kw: np.ndarray
    rack_units: np.ndarray
    nodes: np.ndarray
    gpus: np.ndarray  # total GPUs
    gpu: np.ndarray  # GPU id per design (object array)
    chassis: np.ndarray  # chassis id
    nic: np.ndarray  # NIC id, "none" for a single node
    weight: float = 1.0
    target: float | None = None
    index: np.ndarray | None = None  # position in the job's evaluated design space
    model: str = ""  # zoo model id
    designs: pd.DataFrame | None = None  # DESIGN rows (at least of these candidates) indexed by `index`, for the report
    counts: dict[str, int] = field(default_factory=dict)
    nics_per_node: np.ndarray | None = None  # NIC adapters per node; None: one per multi-node design

    def __post_init__(self) -> None:
        if self.nics_per_node is None:
            self.nics_per_node = np.where(self.nic == "none", 0, 1)

    def __len__(self) -> int:
        return int(len(self.cost_usd))

    @property
    def unit(self) -> str:
        """The unit of `throughput` and `target`: tokens/s for a large-model job (its design rows carry
        tokens_per_s), else samples/s."""
        return "tokens/s" if self.designs is not None and "tokens_per_s" in self.designs.columns else "samples/s"

    def take(self, idx: np.ndarray) -> "JobCandidates":
        idx = np.asarray(idx, dtype=np.int64)
        arrays = {k: getattr(self, k)[idx] for k in ("cost_usd", "throughput", "power_kw", "rack_units", "nodes",
                                                     "gpus", "gpu", "chassis", "nic", "nics_per_node")}
        index = self.index[idx] if self.index is not None else idx
        return JobCandidates(self.name, **arrays, weight=self.weight, target=self.target, index=index,
                             model=self.model, designs=self.designs, counts=dict(self.counts))

    def usage(self, part: tuple[str, str]) -> np.ndarray:
        """Units of `part` ((kind, id), kind in PARTS) each design uses."""
        kind, pid = part
        if kind == "gpus":
            return np.where(self.gpu == pid, self.gpus, 0)
        if kind == "chassis":
            return np.where(self.chassis == pid, self.nodes, 0)
        return np.where(self.nic == pid, self.nodes * self.nics_per_node, 0)


@dataclass
class Market:
    """List prices of parts, and what the mix says about the shared ones."""

    price: dict[tuple[str, str], float]
    owned: dict[tuple[str, str], int] = field(default_factory=dict)
    stock: dict[tuple[str, str], int] = field(default_factory=dict)
    tiers: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=dict)  # (from_units, usd)

    @property
    def shared(self) -> list[tuple[str, str]]:
        keys = set(self.owned) | set(self.stock) | set(self.tiers)
        return sorted(keys, key=lambda k: (PARTS.index(k[0]), k[1]))

    def bands(self, part: tuple[str, str]) -> list[tuple[int, float, float]]:
        """(lowest units, highest units, unit price) per band; the last band is open (inf)."""
        tiers = sorted(self.tiers.get(part, []))
        if not tiers or tiers[0][0] > 1:
            tiers = [(1, self.price[part])] + tiers
        out = []
        for k, (lo, usd) in enumerate(tiers):
            hi = tiers[k + 1][0] - 1 if k + 1 < len(tiers) else _INF
            out.append((lo, hi, usd))
        return out

    def part_cost(self, part: tuple[str, str], need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f_p(need) (inf when stock cannot cover it) and the units bought, vectorized over `need`."""
        short = np.maximum(np.asarray(need, dtype=np.float64) - self.owned.get(part, 0), 0.0)
        stock = self.stock.get(part, _INF)
        best = np.where(short > 0, _INF, 0.0)
        bought = np.zeros_like(short)
        for lo, hi, usd in self.bands(part):
            b = np.maximum(short, lo)
            ok = (short > 0) & (short <= hi) & (b <= stock)
            c = np.where(ok, usd * b, _INF)
            better = c < best
            best = np.where(better, c, best)
            bought = np.where(better, b, bought)
        return best, bought


@dataclass
class MixLimits:
    budget_usd: float | None = None
    max_power_kw: float | None = None
    max_rack_units: float | None = None
    max_nodes: int | None = None
    one_nic_type: bool = True
    max_gpu_types: int | None = None  # at most this many GPU models across all jobs

    def as_dict(self) -> dict[str, Any]:
        return {"budget_usd": self.budget_usd, "max_power_kw": self.max_power_kw,
                "max_rack_units": self.max_rack_units, "max_nodes": self.max_nodes,
                "max_gpu_types": self.max_gpu_types, "one_nic_type": self.one_nic_type}


# resource columns the shared limits use: (limit attribute, JobCandidates attribute, label, unit)
_RESOURCES = (("max_power_kw", "power_kw", "power", "kW"), ("max_rack_units", "rack_units", "rack units", "RU"),
              ("max_nodes", "nodes", "nodes", "nodes"))


def own_cost(job: JobCandidates, market: Market) -> np.ndarray:
    """a_d: the design's cost less the list price of its shared parts."""
    a = job.cost_usd.astype(np.float64).copy()
    for p in market.shared:
        a -= market.price[p] * job.usage(p)
    return np.maximum(a, 0.0)  # guards rounding; never negative by construction


def evaluate_picks(jobs: list[JobCandidates], market: Market, picks: np.ndarray) -> dict[str, np.ndarray]:
    """Totals for selections `picks` (shape (P, n_jobs), one design index per job), vectorized over P."""
    picks = np.atleast_2d(np.asarray(picks, dtype=np.int64))
    tot = {k: np.zeros(len(picks)) for k in ("own", "power_kw", "rack_units", "nodes", "parts")}
    for j, job in enumerate(jobs):
        d = picks[:, j]
        tot["own"] += own_cost(job, market)[d]
        for _, col, _, _ in _RESOURCES:
            tot[col] += getattr(job, col)[d]
    for p in market.shared:
        need = sum(job.usage(p)[picks[:, j]] for j, job in enumerate(jobs))
        c, _ = market.part_cost(p, need)
        tot["parts"] += c
    tot["cost_usd"] = tot["own"] + tot["parts"]
    thr = np.stack([job.throughput[picks[:, j]] for j, job in enumerate(jobs)], axis=1)
    tot["throughput"] = thr
    nic_sets = np.stack([job.nic[picks[:, j]] for j, job in enumerate(jobs)], axis=1)
    tot["nic_types"] = np.array([len(set(r) - {"none"}) for r in nic_sets])
    gpu_sets = np.stack([job.gpu[picks[:, j]] for j, job in enumerate(jobs)], axis=1)
    tot["gpu_types"] = np.array([len(set(r)) for r in gpu_sets])
    return tot


def _objective(objective: str, jobs: list[JobCandidates], tot: dict[str, np.ndarray]) -> np.ndarray:
    thr = tot["throughput"]
    if objective == "throughput":
        return thr @ np.array([j.weight for j in jobs])
    if objective == "fair":
        return (thr / np.array([j.target for j in jobs])).min(axis=1)
    return tot["cost_usd"]


def _feasible(jobs, lim: MixLimits, objective: str, tot, rel=1e-9) -> np.ndarray:
    ok = np.isfinite(tot["cost_usd"])
    if lim.budget_usd is not None:
        ok &= tot["cost_usd"] <= lim.budget_usd * (1 + rel)
    for lim_attr, col, _, _ in _RESOURCES:
        v = getattr(lim, lim_attr)
        if v is not None:
            ok &= tot[col] <= v * (1 + rel)
    if lim.one_nic_type:
        ok &= tot["nic_types"] <= 1
    if lim.max_gpu_types is not None:
        ok &= tot["gpu_types"] <= lim.max_gpu_types
    if objective != "fair":
        for j, job in enumerate(jobs):
            if job.target is not None:
                ok &= tot["throughput"][:, j] >= job.target * (1 - rel)
    return ok


def brute_force(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str = "throughput",
                chunk: int = 200_000) -> tuple[float | None, np.ndarray | None]:
    """Best objective value and selection by enumerating every combination (no pruning, no solver)."""
    _check_objective(objective, jobs)
    sizes = [len(j) for j in jobs]
    if min(sizes) == 0:
        return None, None
    sense = -1.0 if objective == "cost" else 1.0
    best_v, best_p = None, None
    total = int(np.prod(sizes, dtype=np.float64))
    for start in range(0, total, chunk):
        flat = np.arange(start, min(start + chunk, total))
        picks = np.stack(np.unravel_index(flat, sizes), axis=1)
        tot = evaluate_picks(jobs, market, picks)
        ok = np.flatnonzero(_feasible(jobs, lim, objective, tot))
        if len(ok) == 0:
            continue
        v = _objective(objective, jobs, tot)[ok] * sense
        i = int(np.argmax(v))
        if best_v is None or v[i] > best_v:
            best_v, best_p = float(v[i]), picks[ok[i]]
    return (None, None) if best_v is None else (best_v * sense, best_p)


# --------------------------------------------------------------------------------------------------
# The program
# --------------------------------------------------------------------------------------------------

def _check_objective(objective: str, jobs: list[JobCandidates]) -> None:
    if objective not in MIX_OBJECTIVES:
        raise InputError(f"unknown objective '{objective}' for a workload mix (choose from {', '.join(MIX_OBJECTIVES)})")
    if objective in ("fair", "cost"):
        missing = [j.name for j in jobs if j.target is None]
        if missing:
            raise InputError(f"objective '{objective}' needs a throughput or deadline target for every job; "
                             f"missing for: {', '.join(missing)}")
