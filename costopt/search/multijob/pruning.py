"""Pruning: the designs of each job no optimal answer needs, dropped before the program is built.

Pruning, per job, before the program is built. A design d is dropped when another design e of the
same job is no worse in every quantity a constraint or objective reads:

    a_e ≤ a_d,  τ_e ≥ τ_d,  u_{e,p} ≤ u_{d,p} for every shared part p,
    and P_e ≤ P_d, R_e ≤ R_d, M_e ≤ M_d for each of power, rack units, nodes that is limited,

with e using the same NIC type as d, or no NIC (single node), when one NIC type is enforced, and
the same GPU model as d when the number of GPU models is limited (ties: the earlier design in the
deterministic design order stays). Swapping d for e in any solution keeps every constraint satisfied
(each is a sum of these quantities, f_p is monotone, the fabric keeps its NIC type, the cluster its
GPU models) and makes no objective worse, so the optimum survives. Three passes: the fastest strategy
per (gpu, chassis, nic, nodes) (identical resources); a sweep over node counts per (gpu, chassis,
nic); a sort-filter skyline per NIC type (and GPU model when limited). Before it, per-design limits (own cost over the budget, power,
rack units, nodes, stock + inventory, a target the design misses) and a joint test (a design plus the
other jobs' smallest own cost / power / rack units / nodes must fit) drop designs no feasible answer
can use (`reduce_jobs` says why the order changes nothing).

`_lagrange_keep` and `_tie_candidates` apply necessary conditions of reaching a known objective value (used by the
solve and its tie-break).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from costopt.search.multijob.problem import _INF, _RESOURCES, JobCandidates, Market, MixLimits, own_cost


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
    `_prune_dims` and uses the same NIC type or no NIC (when one NIC type is enforced) and the same GPU
    model (when the number of GPU models is limited), so the program's optimum is unchanged (module
    docstring)."""
    lim = lim or MixLimits()
    n = len(job)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    dims = _prune_dims(job, market, lim)
    if dims.shape[1] == 2 and not lim.one_nic_type and lim.max_gpu_types is None:  # own cost, throughput: one sweep
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

    # pass 3: skyline per NIC type (a single-node design, no NIC, may replace any design), and per GPU
    # model when their number is limited
    groups = [keep] if lim.max_gpu_types is None else [keep[job.gpu[keep] == g] for g in np.unique(job.gpu[keep])]
    out = []
    for grp in groups:
        if not lim.one_nic_type:
            out.append(_skyline(dims, grp))
            continue
        nic = job.nic[grp]
        single = _skyline(dims, grp[nic == "none"])
        out += [single] + [_skyline(dims, grp[nic == n_id], seed=single) for n_id in np.unique(nic) if n_id != "none"]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def _within_limits(job: JobCandidates, market: Market, lim: MixLimits, objective: str | None) -> np.ndarray:
    """Designs that could be part of a feasible answer on their own (per-design limits; the job's target
    too unless the objective is `fair` or None)."""
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


def _relaxation(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str, own: list[np.ndarray]):
    """A relaxation of the program: maximise Σ_j val_j(d_j) subject to Σ_j use_j(d_j) ≤ 1 in each summed
    limit of `_caps` (each a necessary condition, normalised by its limit; the NIC-type rule dropped).
    Returns (val per job, use per job, shift):

        throughput: val = w τ, the objective is Σ val, shift = 0;
        cost:       val = −(a + Σ_p ρ_p u_p), ρ_p part p's lowest unit price; f_p(N) ≥ ρ_p (N − o_p), so
                    cost ≥ −Σ val − shift with shift = Σ_p ρ_p o_p, and cost ≤ C implies Σ val ≥ −C − shift."""
    caps = _caps(jobs, market, lim, own)
    uses = [np.stack([v[j] / limit for v, limit in caps], axis=1) if caps else np.zeros((len(job), 0))
            for j, job in enumerate(jobs)]
    if objective == "throughput":
        return [job.weight * job.throughput.astype(np.float64) for job in jobs], uses, 0.0
    low = {p: min(b[2] for b in market.bands(p)) for p in market.shared}
    vals = [-(a + sum((low[p] * job.usage(p) for p in low), np.zeros(len(job)))) for a, job in zip(own, jobs)]
    return vals, uses, float(sum(low[p] * market.owned.get(p, 0) for p in low))


def _lagrange(vals: list[np.ndarray], uses: list[np.ndarray], target: float,
              iters: int = 150) -> tuple[float, list[np.ndarray], np.ndarray]:
    """Lagrangian bound of max Σ_j val_j(d_j) s.t. Σ_j use_j(d_j) ≤ 1 (every column):

        UB(θ) = Σ_j max_d (val_d − θ·use_d) + Σ_c θ_c  ≥  the optimum, for every θ ≥ 0,

    since θ·(1 − Σ use) ≥ 0 for a selection within the limits. θ by projected subgradient steps
    (Polyak's step towards `target`, a value some feasible selection reaches). Returns the least bound
    found, each job's reduced values val − θ·use at that θ, and θ."""
    C = uses[0].shape[1] if uses else 0
    theta = np.zeros(C)
    best = None
    lam = 1.0
    for _ in range(iters + 1):
        red = [v - u @ theta for v, u in zip(vals, uses)]
        arg = [int(np.argmax(r)) for r in red]
        ub = float(sum(r[a] for r, a in zip(red, arg)) + theta.sum())
        if best is None or ub < best[0] - 1e-12 * max(abs(ub), 1.0):
            best = (ub, red, theta.copy())
        else:
            lam /= 1.5
        if C == 0:
            break
        g = 1.0 - sum(u[a] for u, a in zip(uses, arg))  # subgradient of UB is −g
        norm = float(g @ g)
        if norm <= 0 or ub - target <= 1e-12 * max(abs(ub), 1.0) or lam < 1e-6:
            break
        theta = np.maximum(0.0, theta - lam * (ub - target) / norm * g)
    return best


def dual_bound(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str, value: float) -> float:
    """A bound on the optimum of `throughput` (upper) or `cost` (lower) from the Lagrangian of the summed
    limits (`_lagrange`), given the value of a feasible selection; for the gap of a time-limited answer."""
    own = [own_cost(j, market) for j in jobs]
    vals, uses, shift = _relaxation(jobs, market, lim, objective, own)
    target = value if objective == "throughput" else -value - shift
    ub = _lagrange(vals, uses, target)[0]
    return ub if objective == "throughput" else -(ub + shift)  # cost ≥ −Σ val − shift ≥ −UB − shift


def _lagrange_keep(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str, own: list[np.ndarray],
                   v1: float, tol: float) -> list[np.ndarray]:
    """Designs that pass the Lagrangian test of reaching `v1` within `tol` (reduced-cost fixing): a
    selection S that holds design d of job j and reaches the level satisfies, at the θ of `_lagrange`,

        (val_d − θ·use_d) + Σ_{i≠j} max (val_i − θ·use_i) + Σ θ  ≥  Σ_S val  ≥  level,

    the level being v1 − tol for throughput and −(v1 + tol) − shift for cost; d is dropped otherwise."""
    vals, uses, shift = _relaxation(jobs, market, lim, objective, own)
    level = v1 - tol if objective == "throughput" else -(v1 + tol) - shift
    level -= 1e-9 * max(abs(level), 1.0)  # rounding
    ub, red, theta = _lagrange(vals, uses, level)
    tops = np.array([r.max(initial=-_INF) for r in red])
    rest = tops.sum() + theta.sum()
    return [r + (rest - t) >= level for r, t in zip(red, tops)]


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
    if objective in ("throughput", "cost") and len(jobs) > 1:
        keep = _lagrange_keep(jobs, market, lim, objective, own, v1, tol)
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
            # (the tables from this round's sets: a job's set only shrinks, so they stay valid bounds)
            w = [job.weight * job.throughput.astype(np.float64) for job in jobs]
            tables = [[_best_alone(v[i][keep[i]], w[i][keep[i]]) for v, _ in caps] for i in range(n)]
            for j in range(n):
                on = np.flatnonzero(keep[j])
                ub = w[j][on].copy()
                for i in range(n):
                    if i == j:
                        continue
                    best = np.full(len(on), _INF)
                    for c, ((v, limit), m) in enumerate(zip(caps, mins)):
                        best = np.minimum(best, _lookup(tables[i][c], limit - v[j][on] - (m.sum() - m[i] - m[j])))
                    ub += best
                keep[j][on[ub < v1 - tol]] = False
    return [np.flatnonzero(k) for k in keep]



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
        j.counts.setdefault("within_limits", len(j))
        p = j.take(prune(j, market, lim))
        p.counts["after_pruning"] = p.counts["after_limits"] = len(p)
        out.append(p)
    return out
