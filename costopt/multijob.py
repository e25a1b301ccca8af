"""Several jobs, one purchase: a mixed-integer program over every job's candidate designs.

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

Variables: x_{j,d} ∈ {0,1} (job j runs design d); per shared part p and band k, z_{p,k} ∈ {0,1}
(band chosen) and q_{p,k} ≥ 0 (units bought in that band); with one NIC type for the fabric,
y_n ∈ {0,1} per NIC type n; for the fair-share objective, t (free).

    Σ_{d∈C_j} x_{j,d} = 1                                   ∀ j        (one design per job)
    N_p = Σ_j Σ_d u_{d,p} x_{j,d}                            ∀ p ∈ S    (units needed)
    Σ_k q_{p,k} ≥ N_p − o_p                                 ∀ p ∈ S    (owned units are free)
    l_k z_{p,k} ≤ q_{p,k} ≤ h_k z_{p,k},  Σ_k z_{p,k} ≤ 1     ∀ p ∈ S    (one price band)
    Σ_k q_{p,k} ≤ s_p                                       stock limits
    C = Σ_j Σ_d a_d x_{j,d} + Σ_{p∈S} Σ_k ρ_{p,k} q_{p,k}               (total cost)
    C ≤ budget;  Σ P_d x ≤ max_power_kw;  Σ R_d x ≤ max_rack_units;  Σ M_d x ≤ max_nodes
    Σ_{d∈C_j: nic(d)=n} x_{j,d} ≤ y_n  ∀ j, n;   Σ_n y_n ≤ 1             (one NIC type; off with
                                                                         --mixed-nics)
    τ_j = Σ_d τ_d x_{j,d};   τ_j ≥ T_j for jobs with a target T_j       (objectives 1 and 3)

A single-node design has no NIC and is compatible with any fabric. Switch ports stay per design
(each partition has its own switches).

Objectives:
  1. `throughput`: max Σ_j w_j τ_j                                    (weights from the mix)
  2. `fair`:       max t  s.t.  τ_j / T_j ≥ t  ∀ j                    (every job needs a target)
  3. `cost`:       min C  s.t.  τ_j ≥ T_j  ∀ j                        (every job needs a target)
Objective 2 is solved by bisection over the candidates' ratios τ_d / T_j (the optimum is one of
them): each step asks whether some selection over the designs with ratio ≥ the level meets every
limit, over those designs pruned again without the throughput column; the level above the answer is
proven infeasible. Levels whose lower bounds (Σ_j of each job's least own cost, resource use and part
units at that level, parts priced by f_p) already break a limit are ruled out for all levels at once,
and a step is decided without a solver by enumerating selections job by job, partial selections
thinned by those bounds and by dominance (`_FairLevels`); only when that grows too large does CBC
solve the program above without objective. Ties on the optimum v1 (within 1e-7 relative) are then
broken: 1 → least cost; 2 → most Σ_j w_j τ_j / T_j (the leftover budget speeds up the other jobs);
3 → most Σ_j w_j τ_j, over the designs that pass necessary conditions for being within the tie band
(`_tie_candidates`): by enumeration when few combinations remain (for 2, also the job-by-job
enumeration with bounds), else by a second solve. The reported gap is the first stage's (CBC's
relative gap between best solution and best bound; 0 = proven optimal).

Pruning, per job, before the program is built. A design d is dropped when another design e of the
same job is no worse in every quantity a constraint or objective reads:

    a_e ≤ a_d,  τ_e ≥ τ_d,  u_{e,p} ≤ u_{d,p} for every shared part p,
    and P_e ≤ P_d, R_e ≤ R_d, M_e ≤ M_d for each of power, rack units, nodes that is limited,

with e using the same NIC type as d, or no NIC (single node), when one NIC type is enforced (ties:
the earlier design in the deterministic design order stays). Swapping d for e in any solution keeps
every constraint satisfied (each is a sum of these quantities, f_p is monotone, the fabric keeps its
NIC type) and makes no objective worse, so the optimum survives. Three passes: the fastest strategy
per (gpu, chassis, nic, nodes) (identical resources); a sweep over node counts per (gpu, chassis,
nic); a sort-filter skyline per NIC type. Before it, per-design limits (own cost over the budget, power,
rack units, nodes, stock + inventory, a target the design misses) and a joint test (a design plus the
other jobs' smallest own cost / power / rack units / nodes must fit) drop designs no feasible answer
can use (`reduce_jobs` says why the order changes nothing).

Objectives 1 and 3 are solved in two CBC runs (`_solve_first`): over a pool of designs from a
heuristic, then, once that answer's value L is known, over the designs that can still reach L
(`_tie_candidates`' necessary conditions), with a MIP start.

When nothing is feasible, `diagnose` says which limit binds and by how much: for each limit on its
own it solves the program with only that limit elastic (min slack), and, when no single limit
explains it, one program with every limit elastic (min Σ slack / limit).
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pulp

from .api import DEFAULT_MAX_NODES, Evaluation, design_dict, resolve_inputs, evaluate_space
from .catalog import Catalog, load_catalog
from .design_space import STRATEGIES, enumerate_designs
from .errors import InfeasibleError, InputError
from .mix import PARTS, Mix, load_mix

MIX_OBJECTIVES = ("throughput", "fair", "cost")
_INF = math.inf
_TIE_TOL = 1e-7


# --------------------------------------------------------------------------------------------------
# Inputs: candidates per job, the parts market, the limits
# --------------------------------------------------------------------------------------------------

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
    index: np.ndarray | None = None  # position in `evaluation`'s design space
    evaluation: Evaluation | None = None
    counts: dict[str, int] = field(default_factory=dict)
    nics_per_node: np.ndarray | None = None  # NIC adapters per node; None: one per multi-node design

    def __post_init__(self) -> None:
        if self.nics_per_node is None:
            self.nics_per_node = np.where(self.nic == "none", 0, 1)

    def __len__(self) -> int:
        return int(len(self.cost_usd))

    def take(self, idx: np.ndarray) -> "JobCandidates":
        idx = np.asarray(idx, dtype=np.int64)
        arrays = {k: getattr(self, k)[idx] for k in ("cost_usd", "throughput", "power_kw", "rack_units", "nodes",
                                                     "gpus", "gpu", "chassis", "nic", "nics_per_node")}
        index = self.index[idx] if self.index is not None else idx
        return JobCandidates(self.name, **arrays, weight=self.weight, target=self.target, index=index,
                             evaluation=self.evaluation, counts=dict(self.counts))

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

    def as_dict(self) -> dict[str, Any]:
        return {"budget_usd": self.budget_usd, "max_power_kw": self.max_power_kw,
                "max_rack_units": self.max_rack_units, "max_nodes": self.max_nodes,
                "one_nic_type": self.one_nic_type}


# resource columns the shared limits use: (limit attribute, JobCandidates attribute, label, unit)
_RESOURCES = (("max_power_kw", "power_kw", "power", "kW"), ("max_rack_units", "rack_units", "rack units", "RU"),
              ("max_nodes", "nodes", "nodes", "nodes"))


def own_cost(job: JobCandidates, market: Market) -> np.ndarray:
    """a_d: the design's cost less the list price of its shared parts."""
    a = job.cost_usd.astype(np.float64).copy()
    for p in market.shared:
        a -= market.price[p] * job.usage(p)
    return np.maximum(a, 0.0)  # guards rounding; never negative by construction


# --------------------------------------------------------------------------------------------------
# Pruning
# --------------------------------------------------------------------------------------------------

def _group_codes(*cols: np.ndarray) -> np.ndarray:
    """One integer code per distinct row of the given columns (hash-based, fast on string columns)."""
    code = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        f, uniq = pd.factorize(c)
        code = code * (len(uniq) + 1) + f
    return pd.factorize(code)[0]


def _prune_dims(job: JobCandidates, market: Market, lim: MixLimits) -> np.ndarray:
    """Columns (smaller is better) that a swap of designs must not worsen: own cost, −throughput, each
    limited resource, and the units of every shared part."""
    cols = [own_cost(job, market), -job.throughput.astype(np.float64)]
    cols += [getattr(job, col) for lim_attr, col, _, _ in _RESOURCES if getattr(lim, lim_attr) is not None]
    cols += [job.usage(p) for p in market.shared]
    return np.stack(cols, axis=1).astype(np.float64)


_LATER: dict[int, np.ndarray] = {}


def _later(block: int) -> np.ndarray:
    """The strict upper triangle of a block × block matrix (cached: the skyline asks for it often)."""
    if block not in _LATER:
        _LATER[block] = np.triu(np.ones((block, block), bool), 1)
    return _LATER[block]


def _skyline(dims: np.ndarray, cand: np.ndarray, seed: np.ndarray | None = None, block: int = 256) -> np.ndarray:
    """Rows of `cand` (indices into dims) that no other row of `cand` or `seed` dominates.

    e dominates d when e is no larger in every column and smaller in one, or equal everywhere and
    earlier in the design order (smaller index). Rows are sorted lexicographically (then by index) and
    identical rows collapse onto the first, which dominates the rest; among distinct rows in that order
    every dominator comes first, and e ≤ d in every column is then enough. Two columns: one sweep with
    a running minimum. More: sort-filter-skyline, each block checked against the front found so far
    (the seed rows take part as dominators only), then against itself."""
    if len(cand) == 0:
        return cand
    seed = np.zeros(0, np.int64) if seed is None else np.asarray(seed, np.int64)
    rows = np.concatenate([cand, seed])
    is_seed = np.arange(len(rows)) >= len(cand)
    D = dims[rows]
    o = np.lexsort((rows,) + tuple(D.T[::-1]))
    rows, D, is_seed = rows[o], D[o], is_seed[o]
    distinct = np.ones(len(rows), bool)
    distinct[1:] = np.any(D[1:] != D[:-1], axis=1)
    rows, D, is_seed = rows[distinct], D[distinct], is_seed[distinct]
    n, k = D.shape
    if k == 1:
        alive = np.zeros(n, bool)
        alive[0] = True
    elif k == 2:
        prev = np.concatenate([[np.inf], np.minimum.accumulate(D[:, 1])[:-1]])
        alive = D[:, 1] < prev
    else:
        C = np.ascontiguousarray(D.T)  # one contiguous row per column
        F = np.empty_like(C)  # the front so far, column-major
        nf = 0
        alive = np.ones(n, bool)
        later = _later(block)  # row i may dominate row j of a block only if i < j
        for b0 in range(0, n, block):
            b1 = min(n, b0 + block)
            X = C[:, b0:b1]
            ok = alive[b0:b1]
            if nf:
                xmax = X.max(axis=1)
                m = F[0, :nf] <= xmax[0]
                for c in range(1, k):
                    m &= F[c, :nf] <= xmax[c]
                P = F[:, :nf][:, m]
                for c0 in range(0, P.shape[1], 1024):
                    Pc = P[:, c0:c0 + 1024]
                    le = Pc[0][:, None] <= X[0][None, :]
                    for c in range(1, k):
                        le &= Pc[c][:, None] <= X[c][None, :]
                    ok &= ~le.any(axis=0)
            le = X[0][:, None] <= X[0][None, :]
            for c in range(1, k):
                le &= X[c][:, None] <= X[c][None, :]
            le &= later[:b1 - b0, :b1 - b0]
            ok &= ~le.any(axis=0)
            cnt = int(ok.sum())
            F[:, nf:nf + cnt] = X[:, ok]
            nf += cnt
    keep = rows[alive & ~is_seed]
    return np.sort(keep)


def prune(job: JobCandidates, market: Market, lim: MixLimits | None = None) -> np.ndarray:
    """Indices (into job) of the designs that survive dominance pruning, in their original order.

    A design is dropped only when another design of the same job is no worse in every column of
    `_prune_dims` and uses the same NIC type or no NIC (when one NIC type is enforced), so the
    program's optimum is unchanged (module docstring)."""
    lim = lim or MixLimits()
    n = len(job)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    dims = _prune_dims(job, market, lim)
    if dims.shape[1] == 2 and not lim.one_nic_type:  # own cost and throughput only: one sweep
        return _skyline(dims, np.arange(n))
    order = np.arange(n)

    # pass 1: per (gpu, chassis, nic, nodes) every design has the same resources: keep the fastest
    g1 = _group_codes(job.gpu, job.chassis, job.nic, job.nics_per_node, job.nodes)
    o = np.lexsort((order, -job.throughput, g1))
    first = np.ones(n, bool)
    first[1:] = g1[o][1:] != g1[o][:-1]
    rep = o[first][np.searchsorted(g1[o][first], g1)]  # each design's group representative
    same = np.all(dims[rep, :1] == dims[:, :1], axis=1) & np.all(dims[rep, 2:] == dims[:, 2:], axis=1)
    keep = np.flatnonzero((rep == order) | ~same)

    # pass 2: sweep node counts per (gpu, chassis, nic); drop d when the fastest design with fewer nodes
    # (the running record holder) is no larger than d in every dimension
    g2 = _group_codes(job.gpu[keep], job.chassis[keep], job.nic[keep], job.nics_per_node[keep])
    s2 = np.lexsort((order[keep], job.nodes[keep], g2))
    o, g2 = keep[s2], g2[s2]
    pos = np.arange(len(o))
    start = np.ones(len(o), bool)
    start[1:] = g2[1:] != g2[:-1]
    thr_rank = np.unique(job.throughput[o], return_inverse=True)[1].ravel()
    run = np.maximum.accumulate(g2 * (len(o) + 1) + thr_rank)  # running max within the group (groups ascend)
    prev = np.concatenate([[-1], run[:-1]])
    record = start | (g2 * (len(o) + 1) + thr_rank > prev)
    holder = np.maximum.accumulate(np.where(record, pos, -1))  # last record at or before pos
    e = np.concatenate([[0], holder[:-1]])  # record holder strictly before pos (same group unless start)
    drop = ~start & np.all(dims[o[e]] <= dims[o], axis=1)
    keep = np.sort(o[~drop])

    # pass 3: skyline per NIC type; a single-node design (no NIC) may replace any design
    if not lim.one_nic_type:
        return _skyline(dims, keep)
    nic = job.nic[keep]
    single = _skyline(dims, keep[nic == "none"])
    out = [single] + [_skyline(dims, keep[nic == n_id], seed=single) for n_id in np.unique(nic) if n_id != "none"]
    return np.sort(np.concatenate(out))


def _within_limits(job: JobCandidates, market: Market, lim: MixLimits, objective: str) -> np.ndarray:
    """Designs that could be part of a feasible answer on their own (per-design limits)."""
    ok = np.ones(len(job), bool)
    if lim.budget_usd is not None:
        ok &= own_cost(job, market) <= lim.budget_usd
    for lim_attr, col, _, _ in _RESOURCES:
        v = getattr(lim, lim_attr)
        if v is not None:
            ok &= getattr(job, col) <= v
    for p in market.shared:
        if p in market.stock:
            ok &= job.usage(p) <= market.stock[p] + market.owned.get(p, 0)
    if objective != "fair" and job.target is not None:
        ok &= job.throughput >= job.target
    return ok


# --------------------------------------------------------------------------------------------------
# Exact evaluation of selections (used for reports and for brute force)
# --------------------------------------------------------------------------------------------------

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


@dataclass
class _Model:
    prob: pulp.LpProblem
    x: list[list[pulp.LpVariable]]
    primary: Any  # expression of the first objective (unscaled, natural units)
    secondary: Any
    cost: Any
    thr: list[Any]
    slack: dict[str, tuple[pulp.LpVariable, float, str]]  # name -> (variable, limit, unit)


def _lin(pairs, constant: float = 0.0) -> pulp.LpAffineExpression:
    """An expression from (variable, coefficient) pairs, each variable at most once (no operator overhead)."""
    return pulp.LpAffineExpression(pairs, constant=constant)


def _add(prob: pulp.LpProblem, pairs, sense: int, rhs: float, name: str) -> None:
    prob.addConstraint(pulp.LpConstraint(_lin(pairs), sense, name, rhs))


def _build(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
           elastic: frozenset[str] = frozenset(), start: np.ndarray | None = None) -> _Model:
    """The program of the module docstring; constraints named in `elastic` get a slack variable ≥ 0.

    `start` (one design index per job, a feasible selection) sets every variable's initial value, for
    CBC's MIP start. Expressions are built from (variable, coefficient) pairs: PuLP's operators cost
    more than CBC on programs of a few thousand columns."""
    LE, GE, EQ = pulp.LpConstraintLE, pulp.LpConstraintGE, pulp.LpConstraintEQ
    sense = pulp.LpMinimize if objective == "cost" or elastic else pulp.LpMaximize
    prob = pulp.LpProblem("costopt_mix", sense)
    x = [[pulp.LpVariable(f"x_{j}_{i}", cat="Binary") for i in range(len(job))] for j, job in enumerate(jobs)]
    slack: dict[str, tuple[pulp.LpVariable, float, str]] = {}

    def relax(name: str, limit: float, unit: str) -> list:
        if name not in elastic:
            return []
        s = pulp.LpVariable(f"s_{re.sub(r'[^A-Za-z0-9]', '_', name)}", lowBound=0)
        slack[name] = (s, limit, unit)
        return [(s, -1.0)]

    def dot(coef_per_job) -> list:
        return [(x[j][i], float(c[i])) for j, c in enumerate(coef_per_job) for i in np.flatnonzero(c)]

    for j in range(len(jobs)):
        _add(prob, [(v, 1.0) for v in x[j]], EQ, 1.0, f"one_design_{j}")
    thr_pairs = [[(x[j][i], float(t)) for i, t in enumerate(job.throughput)] for j, job in enumerate(jobs)]
    thr = [_lin(tp) for tp in thr_pairs]
    cost_pairs = dot([own_cost(job, market) for job in jobs])
    part_vars: dict[tuple[str, str], list[tuple[int, Any, Any]]] = {}  # part -> [(band, z or None, q)]
    for pi, p in enumerate(market.shared):
        use = [job.usage(p) for job in jobs]
        owned = market.owned.get(p, 0)
        max_short = max(0.0, sum(float(u.max(initial=0)) for u in use) - owned)
        stock = market.stock.get(p) if f"stock {p[1]}" not in elastic else None
        if stock is not None:
            max_short = min(max_short, float(stock))
        bands = _useful_bands(market, p, max_short, stock)
        q_pairs = []
        part_vars[p] = []
        if len(bands) == 1:
            k, (lo, hi, usd) = bands[0]
            q = pulp.LpVariable(f"q_{pi}", lowBound=0)
            q_pairs.append((q, 1.0))
            cost_pairs.append((q, usd))
            part_vars[p].append((k, None, q))
        elif bands:
            zs = []
            for k, (lo, hi, usd) in bands:
                z = pulp.LpVariable(f"z_{pi}_{k}", cat="Binary")
                q = pulp.LpVariable(f"q_{pi}_{k}", lowBound=0)
                _add(prob, [(q, 1.0), (z, -float(lo))], GE, 0.0, f"band_lo_{pi}_{k}")
                _add(prob, [(q, 1.0), (z, -float(hi))], LE, 0.0, f"band_hi_{pi}_{k}")
                zs.append(z)
                q_pairs.append((q, 1.0))
                cost_pairs.append((q, usd))
                part_vars[p].append((k, z, q))
            _add(prob, [(z, 1.0) for z in zs], LE, 1.0, f"one_band_{pi}")
        need = dot(use)
        if q_pairs or need:
            _add(prob, q_pairs + [(v, -c) for v, c in need], GE, -float(owned), f"buy_{pi}")
        if p in market.stock:
            name = f"stock {p[1]}"
            pairs = q_pairs + relax(name, market.stock[p], "units")
            if pairs:
                _add(prob, pairs, LE, float(market.stock[p]), f"stock_{pi}")
    cost = _lin(cost_pairs)
    if lim.budget_usd is not None:
        _add(prob, cost_pairs + relax("budget", lim.budget_usd, "USD"), LE, float(lim.budget_usd), "budget")
    for lim_attr, col, label, unit in _RESOURCES:
        v = getattr(lim, lim_attr)
        if v is not None:
            _add(prob, dot([getattr(job, col) for job in jobs]) + relax(label, v, unit), LE, float(v), lim_attr)
    y: dict[str, pulp.LpVariable] = {}
    if lim.one_nic_type:
        nic_ids = sorted({n for job in jobs for n in job.nic if n != "none"})
        if len(nic_ids) > 1:
            y = {n: pulp.LpVariable(f"y_{k}", cat="Binary") for k, n in enumerate(nic_ids)}
            _add(prob, [(v, 1.0) for v in y.values()], LE, 1.0, "one_nic_type")
            for j, job in enumerate(jobs):
                for k, n in enumerate(nic_ids):
                    on = np.flatnonzero(job.nic == n)
                    if len(on):
                        _add(prob, [(x[j][i], 1.0) for i in on] + [(y[n], -1.0)], LE, 0.0, f"nic_{j}_{k}")
    weights = [job.weight for job in jobs]
    if objective == "fair":
        t = pulp.LpVariable("t")
        for j, job in enumerate(jobs):
            _add(prob, [(v, c / job.target) for v, c in thr_pairs[j]] + [(t, -1.0)], GE, 0.0, f"fair_{j}")
        primary = _lin([(t, 1.0)])
        secondary = _lin([(v, c * w / job.target) for tp, w, job in zip(thr_pairs, weights, jobs) for v, c in tp])
    else:
        for j, job in enumerate(jobs):
            if job.target is not None:
                _add(prob, thr_pairs[j] + [(s, -c) for s, c in relax(f"target {job.name}", job.target, "samples/s")],
                     GE, float(job.target), f"target_{j}")
        weighted = _lin([(v, c * w) for tp, w in zip(thr_pairs, weights) for v, c in tp])
        primary, secondary = (weighted, cost) if objective == "throughput" else (cost, weighted)
    if elastic:
        prob.setObjective(_lin([(s, 1.0 / max(limit, 1e-9)) for s, limit, _ in slack.values()]))
    else:
        scale = 1.0 / _scale(objective, jobs, lim, market)
        prob.setObjective(_lin([(v, c * scale) for v, c in primary.items()]))
    if start is not None:
        _set_start(jobs, market, x, y, part_vars, start)
    return _Model(prob, x, primary, secondary, cost, thr, slack)


def _useful_bands(market: Market, p: tuple[str, str], max_short: float,
                  stock: float | None) -> list[tuple[int, tuple[float, float, float]]]:
    """(band index, (lowest, highest units, unit price)) of the bands of part p that the program needs,
    when at most `max_short` units are ever short (all jobs' largest use less the owned units, at most
    the stock). The open last band is closed at max(lowest, max_short): the fewest units to buy in band
    k are max(short, l_k). (Capping the closed bands the same way is valid too, but made CBC's
    infeasibility proofs in `fair` twice as slow.) A band that starts above max_short is bought only as spare units,
    exactly l_k of them, and is kept only when ρ_k l_k is below the cost of max_short units in the
    lower bands (else those are never dearer, f_p being monotone)."""
    bands = market.bands(p)
    low = [b[2] * max(b[0], max_short) for b in bands if b[0] <= max_short]
    floor = min(low) if low else 0.0
    out = []
    for k, (lo, hi, usd) in enumerate(bands):
        if lo > max_short and (usd * lo >= floor or (stock is not None and lo > stock)):
            continue
        out.append((k, (float(lo), float(max(lo, max_short)) if hi == _INF else float(hi), float(usd))))
    return out


def _set_start(jobs: list[JobCandidates], market: Market, x, y, part_vars, start: np.ndarray) -> None:
    """Initial values of every variable for the selection `start` (x, y, each part's band and units)."""
    for xs, d in zip(x, start):
        for i, v in enumerate(xs):
            v.setInitialValue(1 if i == d else 0)
    nics = {str(job.nic[d]) for job, d in zip(jobs, start)} - {"none"}
    for n, v in y.items():
        v.setInitialValue(1 if n in nics else 0)
    for p, vars_ in part_vars.items():
        need = sum(int(job.usage(p)[d]) for job, d in zip(jobs, start))
        _, bought = market.part_cost(p, np.array([need]))
        b = float(bought[0])
        bands = market.bands(p)
        chosen = None
        if b > 0:  # the band part_cost chose: the cheapest one holding b
            fits = [k for k, _, _ in vars_ if bands[k][0] <= b <= bands[k][1]]
            chosen = min(fits, key=lambda k: bands[k][2]) if fits else None
        for k, z, q in vars_:
            on = k == chosen
            if z is not None:
                z.setInitialValue(1 if on else 0)
            q.setInitialValue(b if on else 0.0)


def _scale(objective: str, jobs: list[JobCandidates], lim: MixLimits, market: Market) -> float:
    """Bring the objective to O(1) so CBC's absolute tolerances do not blur close answers."""
    if objective == "throughput":
        return sum(j.weight * float(j.throughput.max(initial=0)) for j in jobs) or 1.0
    if objective == "fair":
        return 1.0
    if lim.budget_usd is not None:
        return lim.budget_usd
    return sum(float(j.cost_usd.max(initial=0)) for j in jobs) or 1.0


_GAP_RE = re.compile(r"^Gap:\s+([-\d.eE+]+)", re.M)
_BOUND_RE = re.compile(r"best possible\s+([-\d.eE+]+)")
_OBJ_RE = re.compile(r"^Objective value:\s+([-\d.eE+]+)", re.M)


def _run_cbc(prob: pulp.LpProblem, time_limit: float | None, warm_start: bool = False) -> dict[str, Any]:
    """Solve with CBC; status, gap (relative, from CBC's log) and wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "cbc.log"
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=0.0, logPath=str(log), warmStart=warm_start,
                                   keepFiles=False)
        t0 = time.perf_counter()
        prob.solve(solver)
        wall = time.perf_counter() - t0
        text = log.read_text(errors="replace") if log.exists() else ""
    stopped = "Stopped on time" in text or "Stopped on iterations" in text
    has_solution = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if prob.status == pulp.LpStatusInfeasible or prob.sol_status == pulp.LpSolutionInfeasible:
        status = "Infeasible"
    elif has_solution and not stopped and prob.sol_status == pulp.LpSolutionOptimal:
        status = "Optimal"
    elif has_solution:
        status = "Feasible (time limit)"
    elif stopped:
        status = "No solution (time limit)"
    else:
        status = pulp.LpStatus.get(prob.status, "Undefined")
    gap = 0.0 if status == "Optimal" else None
    if status.startswith("Feasible"):
        m = _GAP_RE.search(text)
        if m:
            gap = abs(float(m.group(1)))
        else:
            b, o = _BOUND_RE.findall(text), _OBJ_RE.search(text)
            if b and o:
                bound, obj = float(b[-1]), float(o.group(1))
                gap = abs(obj - (-bound if prob.sense == pulp.LpMaximize else bound)) / max(abs(obj), 1e-12)
    return {"status": status, "gap": gap, "time_s": wall}


def _picks(model: _Model) -> np.ndarray:
    out = []
    for xs in model.x:
        vals = np.array([v.value() or 0.0 for v in xs])
        out.append(int(np.argmax(vals)))
    return np.array(out, dtype=np.int64)


@dataclass
class ProgramResult:
    status: str
    picks: np.ndarray | None  # design index per job (into each job's candidates)
    objective_value: float | None
    gap: float | None
    solve_time_s: float
    stages: list[dict[str, Any]]


def _best_alone(cost: np.ndarray, value: np.ndarray):
    """g(c) = max value over designs with cost ≤ c, as (sorted costs, running max of value)."""
    o = np.argsort(cost, kind="stable")
    return cost[o], np.maximum.accumulate(value[o])


def _lookup(table, cap: np.ndarray) -> np.ndarray:
    c, v = table
    i = np.searchsorted(c, cap, side="right") - 1
    return np.where(i >= 0, v[np.maximum(i, 0)], -_INF)


def _caps(jobs: list[JobCandidates], market: Market, lim: MixLimits, own: list[np.ndarray]):
    """Summed necessary limits, as (per-job columns, limit): own cost under the budget; own cost plus
    every shared part at its lowest unit price ρ_p under the budget plus the owned units at ρ_p (since
    f_p(N) ≥ ρ_p (N − o_p)); power, rack units, nodes; each stocked part's units under stock + owned."""
    caps = []
    if lim.budget_usd is not None:
        caps.append((own, lim.budget_usd))
        low = {p: min(b[2] for b in market.bands(p)) for p in market.shared}
        if low:
            caps.append(([a + sum(low[p] * j.usage(p) for p in low) for a, j in zip(own, jobs)],
                         lim.budget_usd + sum(low[p] * market.owned.get(p, 0) for p in low)))
    caps += [([getattr(j, col).astype(np.float64) for j in jobs], getattr(lim, lim_attr))
             for lim_attr, col, _, _ in _RESOURCES if getattr(lim, lim_attr) is not None]
    caps += [([j.usage(p).astype(np.float64) for j in jobs], market.stock[p] + market.owned.get(p, 0))
             for p in market.shared if p in market.stock]
    return [(v, limit * (1 + 1e-9) + 1e-6) for v, limit in caps]


def _tie_candidates(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
                    v1: float, tol: float) -> list[np.ndarray]:
    """Per job, the designs that can be part of a feasible selection whose objective is within `tol` of
    the optimum `v1` (necessary conditions only, so every tied optimum survives).

    Own costs a_d sum to at most the budget (shared parts cost ≥ 0), and power, rack units and nodes
    to at most their limits, so job j's design d leaves the others at most limit − (d's share) of
    each. Every objective: d's share plus the other jobs' least shares fits each limit. throughput:
    w_j τ_d plus, for each other job i, the most w_i τ it reaches within what d and the remaining
    jobs' least shares leave of every limit, must reach v1 − tol; fair: τ_d / T_j ≥ v1 − tol; cost:
    a_d plus the other jobs' least own costs ≤ v1 + tol."""
    own = [own_cost(j, market) for j in jobs]
    keep = [np.ones(len(j), bool) for j in jobs]
    # summed limits: own cost under the budget, power, rack units, nodes
    caps = _caps(jobs, market, lim, own)
    n = len(jobs)
    for _ in range(2):
        if objective == "fair":
            for j, job in enumerate(jobs):
                keep[j] &= job.throughput / job.target >= v1 - tol
        if objective == "cost":
            amin = np.array([a[k].min(initial=_INF) for a, k in zip(own, keep)])
            for j in range(n):
                keep[j] &= own[j] + (amin.sum() - amin[j]) <= v1 + tol
        mins = []
        for v, limit in caps:
            m = np.array([x[k].min(initial=_INF) for x, k in zip(v, keep)])
            if not np.isfinite(m).all():
                return [np.flatnonzero(k) for k in keep]
            mins.append(m)
            for j in range(n):
                keep[j] &= v[j] + (m.sum() - m[j]) <= limit
        if objective == "throughput" and n > 1:
            # job j's design d leaves job i at most limit − v_d − the remaining jobs' least v, in each
            # summed limit: job i reaches at most the least of its best values under those caps
            w = [job.weight * job.throughput.astype(np.float64) for job in jobs]
            for j in range(n):
                ub = w[j].copy()
                for i in range(n):
                    if i == j:
                        continue
                    best = np.full(len(jobs[j]), _INF)
                    for (v, limit), m in zip(caps, mins):
                        table = _best_alone(v[i][keep[i]], w[i][keep[i]])
                        best = np.minimum(best, _lookup(table, limit - v[j] - (m.sum() - m[i] - m[j])))
                    ub += best
                keep[j] &= ub >= v1 - tol
    return [np.flatnonzero(k) for k in keep]


def _enumerate_ties(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str, v1: float,
                    tol: float, chunk: int = 100_000) -> np.ndarray | None:
    """The tie-break by enumeration: among feasible selections within `tol` of `v1`, the best secondary
    objective (least cost for `throughput`; most Σ w τ / T for `fair`; most Σ w τ for `cost`); ties
    go to the first selection in index order. None when no selection is within the band."""
    sizes = [len(j) for j in jobs]
    total = int(np.prod(sizes, dtype=np.float64))
    weights = np.array([j.weight for j in jobs])
    best_key, best = None, None
    for start in range(0, total, chunk):
        flat = np.arange(start, min(start + chunk, total))
        picks = np.stack(np.unravel_index(flat, sizes), axis=1)
        tot = evaluate_picks(jobs, market, picks)
        ok = _feasible(jobs, lim, objective, tot)
        prim = _objective(objective, jobs, tot)
        ok &= (prim <= v1 + tol) if objective == "cost" else (prim >= v1 - tol)
        idx = np.flatnonzero(ok)
        if len(idx) == 0:
            continue
        if objective == "throughput":
            key = tot["cost_usd"][idx]
        elif objective == "fair":
            key = -(tot["throughput"][idx] / np.array([j.target for j in jobs])) @ weights
        else:
            key = -(tot["throughput"][idx] @ weights)
        i = int(np.argmin(key))
        if best_key is None or key[i] < best_key:
            best_key, best = float(key[i]), picks[idx[i]]
    return best


_FAIR_ROWS = 250_000  # most partial selections the exact check of one level may build in all (else CBC decides)
_FAIR_SKY = 5_000  # partial rows thinned by dominance only up to this many (the skyline grows ~quadratically)
_FAIR_CHUNK = 200_000  # rows per block of the exact check
_FAIR_GIVE_UP = 2  # after this many levels too large to enumerate, the bisection asks CBC only


class _FairLevels:
    """Exact feasibility of one level of the `fair` bisection without a solver, where it is small enough.

    At a level t each job j must run a design with ratio τ_d / T_j ≥ t; which one no longer matters
    beyond the columns the limits read: own cost a_d, power, rack units, nodes (when limited) and the
    units u_{d,p} of every shared part. A selection is feasible when Σ a + Σ_p f_p(Σ u_p) ≤ budget
    (f_p(N) finite: the stock holds), each resource sum is within its limit, and (one NIC type) at most
    one NIC type is used; the same test as `brute_force`'s. Two checks:

    * `bound`: Σ_j min a_j + Σ_p f_p(Σ_j min u_{j,p}) and Σ_j min of each resource, the minima over each
      job's designs at the level (per NIC type of the fabric), are lower bounds of the totals of every
      selection (f_p never decreases), so a level whose bounds break a limit for every NIC type is
      infeasible. The minima at every level come from running minima over the designs sorted by ratio,
      so the bound is read for all levels at once, and it never gets looser as t grows.
    * `check`: each job's designs at the level on a fabric the bound leaves open, less those that break
      a limit together with the other jobs' minima, are pruned (dominance without the throughput
      column, within a NIC type or by a single node, as `prune` does), then, per NIC type of the
      fabric, the selections are enumerated job by job (smallest job first): partial selections of
      the first k jobs, of which a row is dropped when its sums plus the remaining jobs' minima break a
      limit (the bound above), or when another partial row is no larger in every column (any
      completion of it is a completion of the other, which is then no dearer in anything), then
      extended by the next job's designs. What survives the last job is feasible. It proves
      infeasibility exactly, like a solver, and answers None (ask CBC) only when the partial rows would
      grow past `_FAIR_ROWS`.
    * `best_score`: the same enumeration for the tie-break of `fair` (most Σ_j w_j τ_j / T_j among the
      tied candidates); partial rows also carry their score, which joins the dominance test, and a
      row whose score plus the other jobs' best cannot reach a known feasible selection's is dropped."""

    def __init__(self, jobs: list[JobCandidates], market: Market, lim: MixLimits):
        self.jobs, self.market, self.lim = jobs, market, lim
        self.shared = market.shared
        self.n_res = sum(getattr(lim, a) is not None for a, _, _, _ in _RESOURCES)
        self.cap = np.array([getattr(lim, a) * (1 + 1e-9) for a, _, _, _ in _RESOURCES if getattr(lim, a) is not None])
        self.budget = _INF if lim.budget_usd is None else lim.budget_usd * (1 + 1e-9)
        self.cols = []  # per job: (designs, 1 + resources + shared parts) = own cost, limited resources, units
        for job in jobs:
            c = [own_cost(job, market)] + [getattr(job, col).astype(np.float64) for a, col, _, _ in _RESOURCES
                                           if getattr(lim, a) is not None]
            c += [job.usage(p).astype(np.float64) for p in self.shared]
            self.cols.append(np.stack(c, axis=1))
        self.ratio = [j.throughput / j.target for j in jobs]
        nic_ids = sorted({n for j in jobs for n in j.nic if n != "none"})
        self.options = [None] if not lim.one_nic_type or len(nic_ids) <= 1 else nic_ids
        self._masks: dict[tuple[int, str | None], np.ndarray] = {}
        self._order: dict[int, np.ndarray] = {}
        self._runs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def _allowed(self, j: int, opt: str | None) -> np.ndarray:
        """Job j's designs that can run on a fabric of NIC type `opt` (None: any)."""
        if (j, opt) not in self._masks:
            job = self.jobs[j]
            self._masks[j, opt] = np.ones(len(job), bool) if opt is None else (job.nic == "none") | (job.nic == opt)
        return self._masks[j, opt]

    def _breaks(self, rows: np.ndarray, rest: np.ndarray, slack: float = 1.0) -> np.ndarray:
        """Rows (sums of some jobs' columns) that break a limit once `rest` (a lower bound of the other
        jobs' sums) is added; `slack` > 1 loosens the limits (bounds drop only what surely breaks)."""
        tot = rows + rest
        r = self.n_res
        bad = np.zeros(len(rows), bool)
        if r:
            bad |= np.any(tot[:, 1:1 + r] > self.cap * slack, axis=1)
        cost = tot[:, 0].copy()
        for k, p in enumerate(self.shared):
            cost += self.market.part_cost(p, tot[:, 1 + r + k])[0]
        return bad | ~np.isfinite(cost) | (cost > self.budget * slack)

    def _minima(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job j's designs on fabric option i sorted by falling ratio: (−ratio, running minima of the columns)."""
        key = (i, j)
        if key not in self._runs:
            if j not in self._order:
                self._order[j] = np.argsort(-self.ratio[j], kind="stable")
            o = self._order[j]
            o = o[self._allowed(j, self.options[i])[o]]
            c = self.cols[j]
            self._runs[key] = (-self.ratio[j][o], np.minimum.accumulate(c[o], axis=0) if len(o)
                               else np.zeros((0, c.shape[1])))
        return self._runs[key]

    def bound(self, levels: np.ndarray) -> np.ndarray:
        """For every level (rows) and NIC type of the fabric (columns): False when the lower bounds prove
        that no selection on that fabric reaches the level."""
        levels = np.atleast_1d(np.asarray(levels, np.float64))
        ok = np.zeros((len(levels), len(self.options)), bool)
        for i in range(len(self.options)):
            rest = np.zeros((len(levels), self.cols[0].shape[1]))
            for j in range(len(self.jobs)):
                neg, run = self._minima(i, j)
                cnt = np.searchsorted(neg, -levels, side="right")  # designs with ratio ≥ level
                rest += np.where((cnt > 0)[:, None], run[np.maximum(cnt - 1, 0)] if len(neg) else 0.0, _INF)
            fin = np.all(np.isfinite(rest), axis=1)
            ok[fin, i] = ~self._breaks(np.zeros((int(fin.sum()), rest.shape[1])), rest[fin], 1 + 1e-12)
        return ok

    def highest(self, levels: np.ndarray) -> int:
        """How many of the (rising) levels pass the bound: it only tightens as the level rises, so
        bisection finds the first that fails."""
        lo, hi = -1, len(levels)  # levels[lo] passes (or lo = -1), levels[hi] fails (or hi = len)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.bound(levels[mid:mid + 1]).any():
                lo = mid
            else:
                hi = mid
        return hi

    def check(self, level: float, options: np.ndarray,
              enumerate_: bool = True) -> tuple[bool | None, np.ndarray | None, list[np.ndarray] | None]:
        """(True, selection, None) when the level is feasible, (False, None, None) when not, (None, None,
        designs per job) when the enumeration would be too large (or `enumerate_` is off): the designs
        CBC must look at, those of the fabrics not settled here. `options`: which NIC types of the
        fabric the bound leaves open at this level."""
        best, best_v = None, -_INF
        # designs at the level on an open fabric, less those that break a limit even with the other
        # jobs' least use (minima over the same sets: lower bounds for every selection left)
        on = []
        for j in range(len(self.jobs)):
            m = self.ratio[j] >= level
            if self.options != [None]:
                m &= np.logical_or.reduce([self._allowed(j, o) for o, o_ok in zip(self.options, options) if o_ok]
                                          + [self.jobs[j].nic == "none"])
            on.append(np.flatnonzero(m))
        if any(len(k) == 0 for k in on):
            return False, None, None
        mins = np.array([self.cols[j][k].min(axis=0) for j, k in enumerate(on)])
        pruned = []
        for j, job in enumerate(self.jobs):
            k = on[j][~self._breaks(self.cols[j][on[j]], mins.sum(axis=0) - mins[j], 1 + 1e-12)]
            # pruned once with the NIC rule: a design of NIC type n is dropped only for one of type n or
            # a single node, so each fabric's designs are still pruned correctly
            flat = job.take(k)
            flat.throughput = np.zeros(len(k))  # the throughput column drops out of the pruning
            pruned.append(k[prune(flat, self.market, self.lim)])
        unsettled = []
        for opt, open_ in zip(self.options, options):
            if not open_:
                continue
            idx = [k[self._allowed(j, opt)[k]] for j, k in enumerate(pruned)]
            if any(len(k) == 0 for k in idx):
                continue
            found = self._enumerate(idx) if enumerate_ else None
            if found is None:  # too large: CBC settles this fabric and the rest
                unsettled.append(opt)
                enumerate_ = False
            elif len(found):
                v = np.min([self.ratio[j][found[:, j]] for j in range(len(idx))], axis=0)
                i = int(np.argmax(v))
                if v[i] > best_v:
                    best, best_v = found[i], float(v[i])
        if best is not None:
            return True, best, None
        if not unsettled:
            return False, None, None
        keep = [np.logical_or.reduce([self._allowed(j, o)[k] for o in unsettled]) for j, k in enumerate(pruned)]
        return None, None, [k[m] for k, m in zip(pruned, keep)]

    def _enumerate(self, idx: list[np.ndarray], score: list[np.ndarray] | None = None,
                   floor: float = -_INF, max_rows: int | None = None) -> np.ndarray | None:
        """Feasible selections (rows of design indices, one column per job) over the designs `idx` per
        job, partial rows thinned as the class docstring says (jobs taken smallest first); None when the
        partial rows grow past `_FAIR_ROWS`. With `score` (per job, a value per design of `idx`, summed
        over the jobs): only the selections of the highest score, and partial rows whose score plus the
        other jobs' highest cannot reach `floor` (the score of a known feasible selection) are dropped;
        the dominance test then also compares the score."""
        n = len(idx)
        order = sorted(range(n), key=lambda j: len(idx[j]))
        cols = [self.cols[j][idx[j]] for j in order]
        sc = None if score is None else [np.asarray(score[j], np.float64) for j in order]
        rest = [np.zeros(cols[0].shape[1]) for _ in range(n + 1)]  # rest[k]: Σ of minima of jobs k..n-1
        top = [0.0] * (n + 1)  # top[k]: Σ of the highest scores of jobs k..n-1
        for k in range(n - 1, -1, -1):
            rest[k] = rest[k + 1] + cols[k].min(axis=0)
            top[k] = top[k + 1] + (float(sc[k].max()) if sc is not None else 0.0)
        floor_eff = floor - 1e-12 * abs(floor) if math.isfinite(floor) else -_INF
        rows, sel, s = np.zeros((1, cols[0].shape[1])), np.zeros((1, 0), np.int64), np.zeros(1)
        work = 0
        for k in range(n):
            m = len(cols[k])
            work += len(rows) * m
            if work > (max_rows or _FAIR_ROWS):
                return None
            new_rows, new_sel, new_s = [], [], []
            per = max(1, _FAIR_CHUNK // m)
            for b in range(0, len(rows), per):
                nb = min(per, len(rows) - b)
                R = (rows[b:b + per, None, :] + cols[k][None, :, :]).reshape(-1, rows.shape[1])
                S = np.concatenate([np.repeat(sel[b:b + per], m, axis=0), np.tile(np.arange(m), nb)[:, None]], axis=1)
                keep = ~self._breaks(R, rest[k + 1], 1.0 if k == n - 1 else 1 + 1e-12)
                if sc is not None:
                    V = (s[b:b + per, None] + sc[k][None, :]).ravel()
                    keep &= V + top[k + 1] >= floor_eff
                    new_s.append(V[keep])
                new_rows.append(R[keep])
                new_sel.append(S[keep])
            rows, sel = np.concatenate(new_rows), np.concatenate(new_sel)
            s = np.concatenate(new_s) if sc is not None else np.zeros(len(rows))
            if len(rows) == 0:
                return np.zeros((0, n), np.int64)
            if k < n - 1 and 1 < len(rows) <= _FAIR_SKY:
                keep = _skyline(rows if sc is None else np.column_stack([rows, -s]), np.arange(len(rows)))
                rows, sel, s = rows[keep], sel[keep], s[keep]
        if sc is not None and len(sel):
            sel = sel[s >= s.max()]
        out = np.empty((len(sel), n), np.int64)
        for pos, j in enumerate(order):
            out[:, j] = idx[j][sel[:, pos]]
        return out

    def best_score(self, idx: list[np.ndarray], score: list[np.ndarray], floor: float) -> np.ndarray | None:
        """The feasible selection over the designs `idx` per job of the highest Σ_j score[j][d] (at least
        `floor`, which a known feasible selection reaches; ties: the first in index order); None when
        too large to enumerate."""
        best, best_v = None, -_INF
        for opt in self.options:
            sub = [k[self._allowed(j, opt)[k]] for j, k in enumerate(idx)]
            if any(len(k) == 0 for k in sub):
                continue
            found = self._enumerate(sub, [score[j][k] for j, k in enumerate(sub)], floor, 4 * _FAIR_ROWS)
            if found is None:
                return None
            if len(found):
                v = np.sum([score[j][found[:, j]] for j in range(len(sub))], axis=0)
                o = np.lexsort(tuple(found[:, j] for j in range(len(sub) - 1, -1, -1)) + (-v,))
                if v[o[0]] > best_v:
                    best, best_v = found[o[0]], float(v[o[0]])
        return best


def _solve_fair(jobs: list[JobCandidates], market: Market, lim: MixLimits,
                time_limit: float | None) -> tuple[dict[str, Any], np.ndarray | None]:
    """max min_j τ_j / T_j by bisection over the candidates' ratios, each step a feasibility test.

    The optimum is one of the ratios τ_d / T_j. The lower bounds of `_FairLevels.bound` give, for all
    levels at once, the highest level they cannot rule out: the upper end. For a level t, keep the designs
    with ratio ≥ t; which of them is fastest no longer matters, so they are pruned again without the
    throughput column; `_FairLevels.check` then enumerates what is left, or, when that is too large, CBC
    solves the feasibility program over it. A feasible selection proves t reachable, and its own smallest
    ratio is the new lower end. The search ends when the level just above the best found is proven
    infeasible, so the answer is optimal."""
    t0 = time.perf_counter()
    fl = _FairLevels(jobs, market, lim)
    ratios = fl.ratio
    levels = np.unique(np.concatenate(ratios))
    levels = levels[levels <= min(float(r.max()) for r in ratios)]
    n_ok = fl.highest(levels)  # levels from n_ok up are ruled out by the lower bounds
    lo, hi, best, checks, exact, gave_up = -1, n_ok, None, 0, 0, 0
    status = "Optimal"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            status = "Feasible (time limit)" if best is not None else "No solution (time limit)"
            break
        checks += 1
        verdict, p, idx = fl.check(float(levels[mid]), fl.bound(levels[mid:mid + 1])[0], gave_up < _FAIR_GIVE_UP)
        if verdict is None:  # too many partial selections: CBC decides, over the designs left
            gave_up += 1
            m = _build([j.take(k) for j, k in zip(jobs, idx)], market, lim, "fair")
            m.prob.setObjective(pulp.lpSum(0.0 * xs[0] for xs in m.x))  # feasibility only
            r = _run_cbc(m.prob, left)
            if r["status"] == "Optimal":
                verdict, p = True, np.array([k[d] for k, d in zip(idx, _picks(m))], dtype=np.int64)
            elif r["status"] == "Infeasible":
                verdict = False
            else:
                status = "Feasible (time limit)" if best is not None else "No solution (time limit)"
                break
        else:
            exact += 1
        if verdict:
            value = min(float(rt[d]) for rt, d in zip(ratios, p))
            lo, best = int(np.searchsorted(levels, value, side="right")) - 1, p
        else:
            hi = mid
    if best is None and status == "Optimal":
        status = "Infeasible"
    gap = 0.0 if status == "Optimal" else None
    if status.startswith("Feasible"):
        top = float(levels[hi - 1])
        found = float(levels[lo])
        gap = (top - found) / max(abs(found), 1e-12)
    return {"status": status, "gap": gap, "time_s": time.perf_counter() - t0,
            "method": f"bisection over {n_ok:,} of {len(levels):,} ratio levels (the rest ruled out by lower "
                      f"bounds), {checks} feasibility tests ({exact} by enumeration, {checks - exact} by CBC)"}, best


class _Moves:
    """Exact totals of the selections that differ from a base selection in one job only (vectorized over
    that job's designs): the local search of `_incumbent` reads every constraint and objective from here."""

    def __init__(self, jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str):
        self.jobs, self.market, self.lim, self.objective = jobs, market, lim, objective
        self.shared = market.shared
        self.own = [own_cost(j, market) for j in jobs]
        self.res = [np.stack([getattr(j, col).astype(np.float64) for _, col, _, _ in _RESOURCES], axis=1) for j in jobs]
        self.cap = np.array([_INF if getattr(lim, a) is None else getattr(lim, a) * (1 + 1e-9) for a, _, _, _ in _RESOURCES])
        self.use = [np.stack([j.usage(p) for p in self.shared], axis=1).astype(np.float64) if self.shared
                    else np.zeros((len(j), 0)) for j in jobs]
        ids = {n: k for k, n in enumerate(sorted({n for j in jobs for n in j.nic if n != "none"}))}
        self.nic = [np.array([ids.get(n, -1) for n in j.nic], dtype=np.int64) for j in jobs]
        self.n_nics = len(ids)
        self.wt = [j.weight * j.throughput.astype(np.float64) for j in jobs]
        self.ratio = [j.throughput / j.target if j.target else np.zeros(len(j)) for j in jobs]
        self.ok_target = [np.ones(len(j), bool) if objective == "fair" or j.target is None
                          else j.throughput >= j.target * (1 - 1e-9) for j in jobs]

    def move(self, base: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every design of job j with the other jobs as in `base`: feasible, objective, tie-break key
        (the secondary objective, as something to maximise)."""
        others = [i for i in range(len(self.jobs)) if i != j]
        own = self.own[j] + sum(self.own[i][base[i]] for i in others)
        res = self.res[j] + sum(self.res[i][base[i]] for i in others)
        use = self.use[j] + sum(self.use[i][base[i]] for i in others)
        cost = own.copy()
        for k, p in enumerate(self.shared):
            cost += self.market.part_cost(p, use[:, k])[0]
        ok = np.isfinite(cost) & np.all(res <= self.cap, axis=1) & self.ok_target[j]
        ok &= all(self.ok_target[i][base[i]] for i in others)
        if self.lim.budget_usd is not None:
            ok &= cost <= self.lim.budget_usd * (1 + 1e-9)
        if self.lim.one_nic_type:
            fabric = {int(self.nic[i][base[i]]) for i in others} - {-1}
            if len(fabric) > 1:
                ok &= False
            elif fabric:
                ok &= (self.nic[j] < 0) | (self.nic[j] == fabric.pop())
        wt = self.wt[j] + sum(self.wt[i][base[i]] for i in others)
        if self.objective == "throughput":
            return ok, wt, -cost
        w_ratio = sum(self.jobs[i].weight * self.ratio[i][base[i]] for i in others) + self.jobs[j].weight * self.ratio[j]
        if self.objective == "fair":
            low = min((self.ratio[i][base[i]] for i in others), default=_INF)
            return ok, np.minimum(self.ratio[j], low), w_ratio
        return ok, -cost, wt

    def feasible(self, sel: np.ndarray) -> bool:
        """Whether one selection meets every limit (and every target, but for `fair`)."""
        n = range(len(self.jobs))
        if not all(self.ok_target[j][sel[j]] for j in n):
            return False
        if np.any(sum(self.res[j][sel[j]] for j in n) > self.cap):
            return False
        if self.lim.one_nic_type and len({int(self.nic[j][sel[j]]) for j in n} - {-1}) > 1:
            return False
        use = sum(self.use[j][sel[j]] for j in n)
        cost = sum(float(self.own[j][sel[j]]) for j in n)
        for k, p in enumerate(self.shared):
            cost += float(self.market.part_cost(p, use[k:k + 1])[0][0])
        return math.isfinite(cost) and (self.lim.budget_usd is None or cost <= self.lim.budget_usd * (1 + 1e-9))

    def ascend(self, base: np.ndarray, rounds: int = 20) -> tuple[np.ndarray, tuple[float, float]] | None:
        """Best-improvement moves, one job at a time, until none improves (objective, then tie-break key)."""
        base = base.copy()
        best = None
        for _ in range(rounds):
            changed = False
            for j in range(len(self.jobs)):
                ok, prim, sec = self.move(base, j)
                if not ok.any():
                    continue
                cand = np.flatnonzero(ok)
                top = prim[cand].max()
                near = cand[prim[cand] >= top - 1e-12 * max(abs(top), 1.0)]
                d = int(near[np.argmax(sec[near])])
                key = (float(prim[d]), float(sec[d]))
                if ok[base[j]]:
                    cur = (float(prim[base[j]]), float(sec[base[j]]))
                    if not (key[0] > cur[0] + 1e-12 * max(abs(cur[0]), 1.0)
                            or (key[0] >= cur[0] - 1e-12 * max(abs(cur[0]), 1.0)
                                 and key[1] > cur[1] + 1e-12 * max(abs(cur[1]), 1.0))):
                        best = cur
                        continue
                base[j], best, changed = d, key, True
            if not changed:
                break
        if best is None:
            return None
        ok, prim, sec = self.move(base, 0)
        return (base, (float(prim[base[0]]), float(sec[base[0]]))) if ok[base[0]] else None


def _incumbent(jobs: list[JobCandidates], market: Market, lim: MixLimits,
               objective: str) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """A good feasible selection, or None: for each NIC type of the fabric, the selection that maximises
    value − θ · (normalised use of every summed limit), θ the least found feasible by bisection, then
    improved by local search (`_Moves.ascend`). Also a pool of designs per job: those met on the way
    plus each job's cheapest by own cost, by own cost with shared parts at their lowest price, and by
    normalised use of the limits, per NIC type. A heuristic: it only speeds up the exact solve."""
    mv = _Moves(jobs, market, lim, objective)
    caps = _caps(jobs, market, lim, mv.own)
    use = [sum((v[j] / max(limit, 1e-12) for v, limit in caps), np.zeros(len(job))) for j, job in enumerate(jobs)]
    if objective == "cost":
        value = [np.zeros(len(job)) for job in jobs]
    else:
        value = [(mv.wt[j] if objective == "throughput" else mv.ratio[j]) for j in range(len(jobs))]
        value = [v / max(float(v.max(initial=0)), 1e-12) for v in value]
    options = [None] if not lim.one_nic_type or mv.n_nics <= 1 else range(mv.n_nics)
    best, best_key = None, None
    pool = [set() for _ in jobs]
    ranks = [mv.own, caps[1][0] if len(caps) > 1 and lim.budget_usd is not None else mv.own, use]
    for opt in options:
        allowed = [np.ones(len(job), bool) if opt is None else (mv.nic[j] < 0) | (mv.nic[j] == opt)
                   for j, job in enumerate(jobs)]
        if not all(a.any() for a in allowed):
            continue

        def pick(theta: float) -> np.ndarray:
            return np.array([int(np.argmax(np.where(a, v - theta * u, -_INF))) for a, v, u in zip(allowed, value, use)])

        feasible = mv.feasible
        for j, a in enumerate(allowed):
            on = np.flatnonzero(a)
            for r in ranks:
                pool[j].update(on[np.argsort(r[j][on], kind="stable")[:8]].tolist())

        lo, hi = -6.0, 6.0  # log10 θ
        if not feasible(pick(10 ** hi)):
            continue
        sel = pick(10 ** hi)
        if objective != "cost":
            for _ in range(16):
                mid = (lo + hi) / 2
                s = pick(10 ** mid)
                for j, d in enumerate(s):
                    pool[j].add(int(d))
                if feasible(s):
                    hi, sel = mid, s
                else:
                    lo = mid
        found = mv.ascend(sel)
        if found is not None:
            for j, d in enumerate(found[0]):
                pool[j].add(int(d))
            if best_key is None or found[1] > best_key:
                best, best_key = found
    return best, [np.array(sorted(p), dtype=np.int64) for p in pool]


def _solve_first(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
                 time_limit: float | None) -> tuple[dict[str, Any], np.ndarray | None]:
    """The first solve (objectives `throughput` and `cost`), in two CBC runs. A heuristic
    (`_incumbent`) gives a selection and a pool of a few hundred designs; CBC solves the program over
    the pool (MIP start: the heuristic's selection). Its answer, of value L, is feasible for the whole
    program, so the optimum is at least L: every design that cannot be part of a selection within the
    tie tolerance of L or better is dropped (`_tie_candidates`, necessary conditions only; the optimum
    and every selection tied with it stay), and CBC solves the program over the rest, started from
    the pool's answer, which proves optimality."""
    t0 = time.perf_counter()
    inc, pool = _incumbent(jobs, market, lim, objective)
    idx, start, pre = [np.arange(len(j)) for j in jobs], None, ""
    if inc is not None:
        starts = [int(np.searchsorted(k, d)) for k, d in zip(pool, inc)]
        m0 = _build([j.take(k) for j, k in zip(jobs, pool)], market, lim, objective, start=np.array(starts))
        r0 = _run_cbc(m0.prob, None if time_limit is None else time_limit / 4, warm_start=True)
        if r0["status"] in ("Optimal", "Feasible (time limit)"):
            inc = np.array([k[d] for k, d in zip(pool, _picks(m0))], dtype=np.int64)
        value = float(_objective(objective, jobs, evaluate_picks(jobs, market, inc[None, :]))[0])
        red = _tie_candidates(jobs, market, lim, objective, value, _TIE_TOL * max(abs(value), 1e-9))
        if all(d in k for d, k in zip(inc, red)):  # always, unless rounding
            idx, start = red, np.array([int(np.searchsorted(k, d)) for k, d in zip(red, inc)])
        pre = f" (started from a CBC solve over a pool of {sum(len(k) for k in pool):,})"
    left = None if time_limit is None else max(1.0, time_limit - (time.perf_counter() - t0))
    model = _build([j.take(k) for j, k in zip(jobs, idx)], market, lim, objective, start=start)
    first = _run_cbc(model.prob, left, warm_start=start is not None)
    first["time_s"] = time.perf_counter() - t0
    first["method"] = f"CBC over {sum(len(k) for k in idx):,} of {sum(len(j) for j in jobs):,} candidates" + pre
    if first["status"] not in ("Optimal", "Feasible (time limit)"):
        return first, None
    return first, np.array([k[d] for k, d in zip(idx, _picks(model))], dtype=np.int64)


_ENUM_MAX = 20_000  # tie-break by enumeration up to this many selections of the remaining candidates


def solve_program(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str = "throughput",
                  time_limit: float | None = None, tie_break: bool = True) -> ProgramResult:
    """Solve the program over the given (already pruned) candidates.

    The first solve finds the optimum and proves it. The tie-break then looks only at designs that
    can still be part of a selection within the tolerance of that optimum (`_tie_candidates`): by
    enumeration when few selections remain, else by a second solve over those designs."""
    _check_objective(objective, jobs)
    if any(len(j) == 0 for j in jobs):
        return ProgramResult("Infeasible", None, None, None, 0.0, [])
    t0 = time.perf_counter()
    if objective == "fair":
        first, picks = _solve_fair(jobs, market, lim, time_limit)
    else:
        first, picks = _solve_first(jobs, market, lim, objective, time_limit)
    stages = [first]
    if first["status"] not in ("Optimal", "Feasible (time limit)"):
        return ProgramResult(first["status"], None, None, None, time.perf_counter() - t0, stages)
    if tie_break and first["status"] == "Optimal":
        v1 = float(_objective(objective, jobs, evaluate_picks(jobs, market, picks[None, :]))[0])
        tol = _TIE_TOL * max(abs(v1), 1e-9)
        t1 = time.perf_counter()
        idx = _tie_candidates(jobs, market, lim, objective, v1, tol)
        if all(i in k for i, k in zip(picks, idx)):  # always, unless rounding: then keep the first answer
            sub = [j.take(k) for j, k in zip(jobs, idx)]
            combos = float(np.prod([len(k) for k in idx], dtype=np.float64))
            found = None
            if combos <= _ENUM_MAX:
                best = _enumerate_ties(sub, market, lim, objective, v1, tol)
                stages.append({"status": "Optimal", "gap": 0.0, "time_s": time.perf_counter() - t1,
                               "method": f"enumeration of {combos:,.0f} tied candidates"})
                if best is not None:
                    picks = np.array([k[b] for k, b in zip(idx, best)], dtype=np.int64)
            elif objective == "fair":  # most Σ w τ / T over the tied candidates, by enumeration when it fits
                fl = _FairLevels(jobs, market, lim)
                score = [j.weight * r for j, r in zip(jobs, fl.ratio)]
                found = fl.best_score(idx, score, float(sum(s[d] for s, d in zip(score, picks))))
                if found is not None:
                    stages.append({"status": "Optimal", "gap": 0.0, "time_s": time.perf_counter() - t1,
                                   "method": f"enumeration with bounds over {int(sum(len(k) for k in idx)):,} "
                                             "tied candidates"})
                    picks = found
            if combos > _ENUM_MAX and found is None:  # else a second solve
                warm = objective != "fair"  # the first answer is in the band: CBC starts from it
                m2 = _build(sub, market, lim, objective,
                            start=np.array([int(np.searchsorted(k, d)) for k, d in zip(idx, picks)]) if warm else None)
                if objective == "cost":
                    m2.prob += m2.primary <= v1 + tol, "tie_primary"
                    m2.prob.sense = pulp.LpMaximize
                else:
                    m2.prob += m2.primary >= v1 - tol, "tie_primary"
                    m2.prob.sense = pulp.LpMinimize if objective == "throughput" else pulp.LpMaximize
                # secondary brought to O(1) by its value at the first answer, so close values stay apart
                tot1 = evaluate_picks(jobs, market, picks[None, :])
                w = np.array([j.weight for j in jobs])
                sec1 = float(tot1["cost_usd"][0] if objective == "throughput" else
                             (tot1["throughput"][0] / np.array([j.target for j in jobs])) @ w if objective == "fair"
                             else tot1["throughput"][0] @ w)
                sec_scale = abs(sec1) if abs(sec1) > 0 else _scale("cost" if objective == "throughput" else "throughput",
                                                                   sub, lim, market)
                m2.prob.setObjective(m2.secondary * (1.0 / sec_scale))
                left = None if time_limit is None else max(1.0, time_limit - (time.perf_counter() - t0))
                second = _run_cbc(m2.prob, left, warm_start=warm)
                second["method"] = f"second solve over {int(sum(len(k) for k in idx)):,} tied candidates"
                stages.append(second)
                if second["status"] in ("Optimal", "Feasible (time limit)"):
                    picks = np.array([k[b] for k, b in zip(idx, _picks(m2))], dtype=np.int64)
    tot = evaluate_picks(jobs, market, picks[None, :])
    value = float(_objective(objective, jobs, tot)[0])
    return ProgramResult(first["status"], picks, value, first["gap"], time.perf_counter() - t0, stages)


# --------------------------------------------------------------------------------------------------
# Infeasibility: which limit binds, by how much
# --------------------------------------------------------------------------------------------------

def _limit_names(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str) -> list[str]:
    names = []
    if lim.budget_usd is not None:
        names.append("budget")
    names += [label for lim_attr, _, label, _ in _RESOURCES if getattr(lim, lim_attr) is not None]
    names += [f"stock {p[1]}" for p in market.shared if p in market.stock]
    if objective != "fair":
        names += [f"target {j.name}" for j in jobs if j.target is not None]
    return names


def _fmt_amount(v: float, unit: str) -> str:
    if unit == "USD":
        return f"${v:,.0f}"
    return f"{v:,.4g} {unit}"


def diagnose(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
             time_limit: float | None = 10.0) -> tuple[str, list[dict[str, Any]]]:
    """Explain an infeasible mix: a message and one row per binding limit (limit, needed, short by)."""
    for job in jobs:
        if len(job) == 0:
            return f"job '{job.name}': no design in the catalog can run it (memory or precision)", []
    if objective != "fair":
        for job in jobs:
            if job.target is not None and job.throughput.max() < job.target:
                row = {"limit": f"target {job.name}", "value": job.target, "unit": "samples/s", "alone": True,
                       "short_by": job.target - float(job.throughput.max()),
                       "relative": 1.0 - float(job.throughput.max()) / job.target}
                return (f"job '{job.name}': no design reaches its target of {job.target:,.1f} samples/s "
                        f"(the fastest design considered reaches {job.throughput.max():,.1f})"), [row]
    names = _limit_names(jobs, market, lim, objective)
    rows: list[dict[str, Any]] = []
    for name in names:
        m = _build(jobs, market, lim, objective, elastic=frozenset([name]))
        r = _run_cbc(m.prob, time_limit)
        if r["status"] in ("Optimal", "Feasible (time limit)"):
            s, limit, unit = m.slack[name]
            amount = float(s.value() or 0.0)
            if amount > 1e-9 * max(limit, 1.0):
                rows.append({"limit": name, "value": limit, "unit": unit, "short_by": amount, "alone": True,
                             "relative": amount / limit})
    if not rows and names:
        m = _build(jobs, market, lim, objective, elastic=frozenset(names))
        r = _run_cbc(m.prob, time_limit)
        if r["status"] in ("Optimal", "Feasible (time limit)"):
            for name, (s, limit, unit) in m.slack.items():
                amount = float(s.value() or 0.0)
                if amount > 1e-9 * max(limit, 1.0):
                    rows.append({"limit": name, "value": limit, "unit": unit, "short_by": amount, "alone": False,
                                 "relative": amount / limit})
    rows.sort(key=lambda r: r["relative"])
    parts = []
    for r in rows:
        verb = "at least" if r["limit"].startswith(("target", "stock")) else "at most"
        if r["limit"].startswith("target"):
            desc = (f"{r['limit']}: the fastest reachable is {_fmt_amount(r['value'] - r['short_by'], r['unit'])}, "
                    f"short of {_fmt_amount(r['value'], r['unit'])} by {_fmt_amount(r['short_by'], r['unit'])}")
        else:
            desc = (f"{r['limit']}: needs {_fmt_amount(r['value'] + r['short_by'], r['unit'])} "
                    f"({verb} {_fmt_amount(r['value'], r['unit'])} allowed), over by "
                    f"{_fmt_amount(r['short_by'], r['unit'])} (+{r['relative']:.1%})")
        parts.append(desc)
    if rows and rows[0]["alone"]:
        msg = "infeasible mix; relaxing any one of these alone would make it feasible: " + "; ".join(parts)
    elif rows:
        msg = "infeasible mix; no single limit explains it; the smallest joint relaxation: " + "; ".join(parts)
    else:
        msg = "infeasible mix"
    if lim.one_nic_type:
        m = _build(jobs, market, MixLimits(**{**lim.as_dict(), "one_nic_type": False}), objective)
        if _run_cbc(m.prob, time_limit)["status"] in ("Optimal", "Feasible (time limit)"):
            msg += "; it becomes feasible with mixed NIC types (--mixed-nics)"
            rows.append({"limit": "one_nic_type", "value": 1, "unit": "NIC types", "short_by": 1, "alone": True,
                         "relative": 1.0})
    return msg, rows


# --------------------------------------------------------------------------------------------------
# From a mix file to an answer
# --------------------------------------------------------------------------------------------------

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


def job_candidates(name: str, ev: Evaluation, weight: float = 1.0, target: float | None = None) -> JobCandidates:
    """Candidates of one job from an evaluated design space (memory-feasible, buildable designs only)."""
    s, c = ev.space, ev.costs
    ok = np.flatnonzero(ev.timing.feasible & c.buildable)
    ids = lambda items: np.array([x.id for x in items], dtype=object)  # noqa: E731
    nic_ids = np.array([n.id for n in s.nics] + ["none"], dtype=object)
    ni = np.where(s.nic_idx < 0, len(s.nics), s.nic_idx)
    # candidates follow the deterministic design order, so ties resolve the same way every run
    ok = ok[np.argsort(np.argsort(s.sort_key())[ok], kind="stable")]
    return JobCandidates(
        name, c.cost_usd[ok], ev.timing.throughput_samples_per_s[ok], c.power_kw[ok], c.rack_units[ok],
        s.nodes[ok], s.total_gpus[ok], ids(s.gpus)[s.gpu_idx[ok]], ids(s.chassis)[s.chassis_idx[ok]], nic_ids[ni[ok]],
        nics_per_node=np.where(s.nic_idx[ok] < 0, 0, s.nics_per_node[ok]), weight=weight, target=target, index=ok, evaluation=ev,
        counts={"enumerated": len(s), "feasible": int(len(ok))},
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

    def to_json_dict(self, timings: bool = False) -> dict[str, Any]:
        """The result as JSON. Wall-clock times differ run to run, so they are left out unless asked
        for (`--timings`): the same inputs then print the same bytes."""
        out = {"mix": self.name, "objective": self.objective, "status": self.status,
               "objective_value": self.objective_value, "gap": self.gap, "solve_time_s": self.solve_time_s,
               "total_time_s": self.total_time_s, "limits": self.limits, "totals": self.totals,
               "jobs": self.jobs, "parts": self.parts, "solver": self.solver}
        return out if timings else _drop_timings(out)


def _drop_timings(value: Any) -> Any:
    """A copy without the wall-clock keys (`*time_s`)."""
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if not k.endswith("time_s")}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value


def build_jobs(mix: Mix, catalog: Catalog, market: Market, lim: MixLimits, *, tco_years: float = 0.0,
               overlap: str = "wfbp", system=None, strategies: list[str] | None = None,
               reduce_on: list[str] | None = None, tensor_set: str = "pytorch", trim: bool = True) -> list[JobCandidates]:
    """Enumerate, evaluate and collect every job's candidates (not yet pruned)."""
    owned_value = sum(market.price[p] * n for p, n in market.owned.items())
    # node hardware beyond budget + owned parts can never fit; `trim=False` (diagnosis) looks up to 4x further
    node_budget = (lim.budget_usd + owned_value) * (1 if trim else 4) \
        if lim.budget_usd is not None and tco_years == 0 else None
    jobs = []
    for name, spec in mix.jobs.items():
        try:
            cat, params, workload, batch, tensors = resolve_inputs(spec.model, catalog, spec.precision,
                                                                    spec.batch_per_gpu, system, None, tensor_set, overlap)
            space = enumerate_designs(
                cat, max_nodes=min(lim.max_nodes or DEFAULT_MAX_NODES, DEFAULT_MAX_NODES),
                strategies=tuple(strategies or STRATEGIES), reduce_on=tuple(reduce_on or ("gpu",)),
                gpu_ids=spec.gpus or None, node_budget_usd=node_budget)
        except InputError as exc:
            raise InputError(f"{mix.where}: job '{name}': {exc}") from None
        samples = spec.epochs * spec.dataset_size if spec.epochs and spec.dataset_size else None
        ev = evaluate_space(space, catalog=cat, workload=workload, tensors=tensors, params=params,
                            precision=spec.precision, batch_per_gpu=batch, overlap=overlap, tco_years=tco_years,
                            samples_to_train=samples)
        jobs.append(job_candidates(name, ev, spec.weight, spec.target))
    return jobs


def _joint_filter(jobs: list[JobCandidates], market: Market, lim: MixLimits) -> list[np.ndarray]:
    """Per job, designs that leave room for the other jobs' smallest designs under every summed limit
    (own cost under the budget, power, rack units, nodes): a necessary condition, so it drops nothing
    feasible. Two rounds, since each round shrinks the others' options."""
    cols = [("budget_usd", None)] + [(lim_attr, col) for lim_attr, col, _, _ in _RESOURCES]
    vals = {lim_attr: [own_cost(j, market) if col is None else getattr(j, col).astype(np.float64) for j in jobs]
            for lim_attr, col in cols if getattr(lim, lim_attr) is not None}
    keep = [np.ones(len(j), bool) for j in jobs]
    for _ in range(2):
        for lim_attr, v in vals.items():
            limit = getattr(lim, lim_attr) * (1 + 1e-9)
            mins = np.array([x[k].min(initial=np.inf) for x, k in zip(v, keep)])
            if not np.isfinite(mins).all():  # some job has nothing left: the program is infeasible anyway
                return keep
            for j in range(len(jobs)):
                keep[j] &= v[j] + (mins.sum() - mins[j]) <= limit
    return keep


def reduce_jobs(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
                filter_limits: bool = True) -> list[JobCandidates]:
    """Drop designs that break a per-design or joint limit, then prune (dominance); counts go into `counts`.

    The limits go first since they are cheap and halve the designs the pruning compares. The order
    does not change what survives: each limit test is closed upwards under dominance (a design
    dominated by one that breaks a limit breaks it too, every tested quantity being a dominance
    column), and the smallest value of a column over a job, which the joint test reads, is reached on
    that job's skyline."""
    kept = list(jobs)
    if filter_limits:
        kept = [j.take(np.flatnonzero(_within_limits(j, market, lim, objective))) for j in kept]
        if len(jobs) > 1:
            kept = [j.take(np.flatnonzero(k)) for j, k in zip(kept, _joint_filter(kept, market, lim))]
    out = []
    for j in kept:
        j.counts["within_limits"] = len(j)
        p = j.take(prune(j, market, lim))
        p.counts["after_pruning"] = p.counts["after_limits"] = len(p)
        out.append(p)
    return out


def solve_mix(
    workload: str | Path | Mix, *, catalog: str | Path | Catalog | None = None, objective: str = "throughput",
    budget: float | None = None, max_power_kw: float | None = None, max_rack_units: float | None = None,
    max_nodes: int | None = None, mixed_nics: bool | None = None, time_limit: float | None = None,
    tco_years: float = 0.0, overlap: str = "wfbp", system=None, strategies: list[str] | None = None,
    reduce_on: list[str] | None = None, tensor_set: str = "pytorch",
) -> MixResult:
    """Best designs for every job of a mix under the shared limits; raises InfeasibleError with the binding limit."""
    t_start = time.perf_counter()
    mix = workload if isinstance(workload, Mix) else load_mix(workload)
    if objective not in MIX_OBJECTIVES:
        raise InputError(f"unknown objective '{objective}' for a workload mix (choose from {', '.join(MIX_OBJECTIVES)})")
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time limit must be > 0 seconds, got {time_limit}")
    for label, v in (("budget", budget), ("max power", max_power_kw), ("max rack units", max_rack_units)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{label} must be a positive number, got {v}")
    if max_nodes is not None and max_nodes < 1:
        raise InputError(f"max nodes must be >= 1, got {max_nodes}")
    cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    mix.check_catalog(cat)
    fl = mix.spec.limits
    lim = MixLimits(
        budget_usd=budget if budget is not None else fl.budget_usd,
        max_power_kw=max_power_kw if max_power_kw is not None else fl.max_power_kw,
        max_rack_units=max_rack_units if max_rack_units is not None else fl.max_rack_units,
        max_nodes=max_nodes if max_nodes is not None else fl.max_nodes,
        one_nic_type=(not mixed_nics) if mixed_nics is not None else fl.one_nic_type,
    )
    if lim.budget_usd is None and objective != "cost":
        raise InputError(f"objective '{objective}' needs a budget (--budget or [limits] budget_usd in {mix.where})")
    market = market_from(cat, mix)
    opts = dict(tco_years=tco_years, overlap=overlap, system=system, strategies=strategies, reduce_on=reduce_on,
                tensor_set=tensor_set)
    raw = build_jobs(mix, cat, market, lim, **opts)
    _check_objective(objective, raw)
    jobs = reduce_jobs(raw, market, lim, objective)
    res = solve_program(jobs, market, lim, objective, time_limit)
    if res.picks is None:
        if res.status.startswith("No solution"):
            raise InfeasibleError(f"no feasible answer found within the time limit of {time_limit:g} s; "
                                  "raise --time-limit", reason="time-limit")
        full = reduce_jobs(build_jobs(mix, cat, market, lim, trim=False, **opts), market, lim, objective,
                           filter_limits=False)
        msg, rows = diagnose(full, market, lim, objective)
        raise InfeasibleError(msg, nearest=rows or None, reason="mix-limits")
    return _report(mix, cat, objective, lim, market, jobs, res, time.perf_counter() - t_start)


def _report(mix: Mix, cat: Catalog, objective: str, lim: MixLimits, market: Market, jobs: list[JobCandidates],
            res: ProgramResult, total_time: float) -> MixResult:
    picks = res.picks
    tot = evaluate_picks(jobs, market, picks[None, :])
    job_rows = []
    for j, (job, d) in enumerate(zip(jobs, picks)):
        design = design_dict(job.evaluation.frame([job.index[d]]).iloc[0])
        design["model"] = job.evaluation.model
        thr = float(job.throughput[d])
        job_rows.append({
            "name": job.name, "model": job.evaluation.model, "weight": job.weight, "target_samples_per_s": job.target,
            "throughput_samples_per_s": thr, "target_ratio": (thr / job.target) if job.target else None,
            "candidates": dict(job.counts), "design": design,
        })
    parts = []
    for p in market.shared:
        need = int(sum(job.usage(p)[d] for job, d in zip(jobs, picks)))
        c, bought = market.part_cost(p, np.array([need]))
        owned = market.owned.get(p, 0)
        parts.append({"kind": p[0], "id": p[1], "used": need, "owned": owned, "owned_used": min(owned, need),
                      "bought": int(bought[0]), "spare": int(bought[0]) - max(0, need - owned),
                      "stock": market.stock.get(p), "list_price_usd": market.price[p],
                      "unit_price_usd": (float(c[0]) / bought[0]) if bought[0] else None, "cost_usd": float(c[0])})
    totals = {"cost_usd": float(tot["cost_usd"][0]), "power_kw": float(tot["power_kw"][0]),
              "rack_units": float(tot["rack_units"][0]), "nodes": int(tot["nodes"][0]),
              "gpus": int(sum(job.gpus[d] for job, d in zip(jobs, picks))),
              "nic_types": sorted({str(job.nic[d]) for job, d in zip(jobs, picks)} - {"none"}),
              "list_price_usd": float(sum(job.cost_usd[d] for job, d in zip(jobs, picks)))}
    solver = {"solver": "CBC (PuLP)", "stages": res.stages, "binaries": int(sum(len(j) for j in jobs)),
              "candidates_after_limits": [len(j) for j in jobs]}
    return MixResult(mix.spec.mix.name or Path(mix.where).stem, objective, res.status, res.objective_value, res.gap,
                     res.solve_time_s, total_time, lim.as_dict(), totals, job_rows, parts, solver)


__all__ = ["solve_mix", "solve_program", "brute_force", "prune", "diagnose", "JobCandidates", "Market", "MixLimits",
           "MixResult", "MIX_OBJECTIVES", "evaluate_picks", "build_jobs", "reduce_jobs", "market_from"]


# --------------------------------------------------------------------------------------------------
# Text report (the CLI prints these)
# --------------------------------------------------------------------------------------------------

def render(res: MixResult, console, timings: bool = False) -> None:
    """Print a mix result as rich tables on `console` (solve times only with `timings`, so the same
    inputs print the same bytes)."""
    from rich.table import Table

    lim = res.limits
    shown = ", ".join(f"{k} {v:,.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in lim.items() if v is not None)
    gap = "n/a" if res.gap is None else f"{res.gap:.2%}"
    console.print(f"costopt solve --workload: mix '{res.name}', objective {res.objective}, {shown}")
    took = f", solve {res.solve_time_s:.2f} s (total {res.total_time_s:.2f} s)" if timings else ""
    console.print(f"solver CBC: {res.status}, gap {gap}{took}, objective value {res.objective_value:,.6g}")
    t = Table(title="One design per job", title_justify="left")
    for col, just in (("job", "left"), ("model", "left"), ("gpu", "left"), ("gpus", "right"), ("nic", "left"),
                      ("strategy", "left"), ("list cost", "right"), ("samples/s", "right"), ("target", "right"),
                      ("ratio", "right"), ("power kW", "right"), ("RU", "right"), ("candidates", "right")):
        t.add_column(col, justify=just)
    for j in res.jobs:
        d = j["design"]
        c = j["candidates"]
        t.add_row(j["name"], j["model"], d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}={d['total_gpus']}", d["nic"],
                  d["strategy"] + ("" if d["reduce_on"] == "gpu" else "/cpu"), f"${d['cost_usd']:,.0f}",
                  f"{j['throughput_samples_per_s']:,.1f}",
                  "-" if j["target_samples_per_s"] is None else f"{j['target_samples_per_s']:,.1f}",
                  "-" if j["target_ratio"] is None else f"{j['target_ratio']:.2f}", f"{d['power_kw']:,.1f}",
                  f"{d['rack_units']:g}",
                  f"{c.get('feasible', 0):,} -> {c.get('within_limits', 0):,} -> {c.get('after_pruning', 0):,}")
    console.print(t)
    if res.parts:
        t = Table(title="Shared parts (inventory, stock, volume tiers)", title_justify="left")
        for col in ("part", "used", "owned", "bought", "spare", "stock", "unit price", "cost"):
            t.add_column(col, justify="left" if col == "part" else "right")
        for p in res.parts:
            t.add_row(f"{p['kind']} {p['id']}", str(p["used"]), str(p["owned"]), str(p["bought"]), str(p["spare"]),
                      "-" if p["stock"] is None else str(p["stock"]),
                      "-" if p["unit_price_usd"] is None else f"${p['unit_price_usd']:,.0f}", f"${p['cost_usd']:,.0f}")
        console.print(t)
    tot = res.totals
    console.print(f"Total: ${tot['cost_usd']:,.0f} (list price of the designs ${tot['list_price_usd']:,.0f}), "
                  f"{tot['power_kw']:,.1f} kW, {tot['rack_units']:g} RU, {tot['nodes']} nodes, {tot['gpus']} GPUs, "
                  f"NIC types: {', '.join(tot['nic_types']) or 'none (single nodes)'}")
