"""Solving the program: the first solve (optimum and its proof), then the tie-break.

Objectives 1 and 3 are solved in two CBC runs (`_solve_first`): over a pool of designs from a
heuristic, then, once that answer's value L is known, over the designs that can still reach L
(`_tie_candidates`' necessary conditions), with a MIP start.

Objective `fair` is solved by bisection (`fair.py`). Ties on the optimum v1 (within 1e-7 relative) are then
broken: 1 → least cost; 2 → most Σ_j w_j τ_j / T_j (the leftover budget speeds up the other jobs);
3 → most Σ_j w_j τ_j, over the designs that pass necessary conditions for being within the tie band
(`_tie_candidates`): by enumeration when few combinations remain (for 2, also the job-by-job
enumeration with bounds), else by a second solve. The reported gap is the first stage's (CBC's
relative gap between best solution and best bound; 0 = proven optimal).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pulp

from costopt.search.multijob.fair import _FAIR_ROWS, _FairLevels, _solve_fair
from costopt.search.multijob.formulation import _build, _picks, _run_cbc, _scale
from costopt.search.multijob.problem import (_INF, _RESOURCES, _TIE_TOL, JobCandidates, Market, MixLimits, _check_objective, _feasible,
                      _objective, _say, evaluate_picks, own_cost, Progress)
from costopt.search.multijob.pruning import _caps, _tie_candidates, dual_bound


@dataclass
class ProgramResult:
    status: str
    picks: np.ndarray | None  # design index per job (into each job's candidates)
    objective_value: float | None
    gap: float | None
    solve_time_s: float
    stages: list[dict[str, Any]]
    # the best bound proven on the objective (an upper bound for `throughput` and `fair`, a lower bound for
    # `cost`): the one the gap is measured against, |bound - value| = gap·|value| (`proven_bound`)
    bound: float | None = None


def proven_bound(objective: str, value: float | None, gap: float | None) -> float | None:
    """The bound the relative gap of an answer of `value` is measured against: CBC's best possible (its
    log's gap is relative to its best solution; when the answer kept is a better one found before, the
    bound this gives is weaker than CBC's, still valid) or the Lagrangian bound (`dual_bound`).
    value·(1 + gap) for the maximised objectives, value·(1 − gap) for `cost`; equal to value when proven."""
    if value is None or gap is None:
        return None
    return value - gap * abs(value) if objective == "cost" else value + gap * abs(value)

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
        models = {m: k for k, m in enumerate(sorted({str(m) for j in jobs for m in j.gpu}))}
        self.gpu = [np.array([models[str(m)] for m in j.gpu], dtype=np.int64) for j in jobs]
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
        if self.lim.max_gpu_types is not None:
            models = {int(self.gpu[i][base[i]]) for i in others}
            if len(models) > self.lim.max_gpu_types:
                ok &= False
            elif len(models) == self.lim.max_gpu_types:
                ok &= np.isin(self.gpu[j], list(models))
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
        if self.lim.max_gpu_types is not None and len({int(self.gpu[j][sel[j]]) for j in n}) > self.lim.max_gpu_types:
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
    improved by local search (`_Moves.ascend`); with a limit on GPU models, over the models the most
    frugal selection uses most. Also a pool of designs per job: those met on the way
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

        if lim.max_gpu_types is not None:  # keep the GPU models the frugal pick uses most (a heuristic)
            models, counts = np.unique([mv.gpu[j][d] for j, d in enumerate(pick(10 ** 6.0))], return_counts=True)
            top = models[np.argsort(-counts, kind="stable")[:lim.max_gpu_types]]
            narrowed = [a & np.isin(mv.gpu[j], top) for j, a in enumerate(allowed)]
            if all(a.any() for a in narrowed):
                allowed = narrowed

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


def _cbc_seconds(left: float | None) -> float | None:
    """CBC's own time limit out of `left` seconds (a share kept back for CBC's start and PuLP's reading
    of the answer)."""
    return None if left is None else max(1.0, 0.9 * left - 1.0)


def _solve_first(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
                 time_limit: float | None,
                 progress: Progress | None = None) -> tuple[dict[str, Any], np.ndarray | None]:
    """The first solve (objectives `throughput` and `cost`), in two CBC runs. A heuristic
    (`_incumbent`) gives a selection and a pool of a few hundred designs; CBC solves the program over
    the pool (MIP start: the heuristic's selection). Its answer, of value L, is feasible for the whole
    program, so the optimum is at least L: every design that cannot be part of a selection within the
    tie tolerance of L or better is dropped (`_tie_candidates`, necessary conditions only; the optimum
    and every selection tied with it stay), and CBC solves the program over the rest, started from
    the pool's answer, which proves optimality.

    Under a time limit the answer is the best selection found (CBC's, or the pool's when CBC finds none
    better in time), with CBC's gap, or, when CBC proved no bound, the gap to `dual_bound`."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    inc, pool = _incumbent(jobs, market, lim, objective)
    idx, start, pre = [np.arange(len(j)) for j in jobs], None, ""
    sense = -1.0 if objective == "cost" else 1.0
    value, per_candidate = None, 0.0
    if inc is not None:
        _say(progress, f"heuristic answer in {time.perf_counter() - t0:.1f} s; CBC over a pool of "
                       f"{sum(len(k) for k in pool):,} designs")
        starts = [int(np.searchsorted(k, d)) for k, d in zip(pool, inc)]
        tb = time.perf_counter()
        m0 = _build([j.take(k) for j, k in zip(jobs, pool)], market, lim, objective, start=np.array(starts))
        per_candidate = (time.perf_counter() - tb) / max(1, sum(len(k) for k in pool))  # s to build one column
        if deadline is None or deadline - time.perf_counter() > 4.0:
            r0 = _run_cbc(m0.prob, None if deadline is None else _cbc_seconds((deadline - time.perf_counter()) / 4),
                          warm_start=True, progress=progress, label="CBC over the pool")
            if r0["status"] in ("Optimal", "Feasible (time limit)"):
                cand = np.array([k[d] for k, d in zip(pool, _picks(m0))], dtype=np.int64)
                v_c = float(_objective(objective, jobs, evaluate_picks(jobs, market, cand[None, :]))[0])
                v_i = float(_objective(objective, jobs, evaluate_picks(jobs, market, inc[None, :]))[0])
                if sense * v_c >= sense * v_i:
                    inc = cand
        value = float(_objective(objective, jobs, evaluate_picks(jobs, market, inc[None, :]))[0])
        red = _tie_candidates(jobs, market, lim, objective, value, _TIE_TOL * max(abs(value), 1e-9))
        if all(d in k for d, k in zip(inc, red)):  # always, unless rounding
            idx, start = red, np.array([int(np.searchsorted(k, d)) for k, d in zip(red, inc)])
        pre = f" (started from a CBC solve over a pool of {sum(len(k) for k in pool):,})"
    n_idx = sum(len(k) for k in idx)
    method = f"CBC over {n_idx:,} of {sum(len(j) for j in jobs):,} candidates" + pre
    # building, writing and reading the program take about 3x the pool's build time per column
    overhead = 3.0 * per_candidate * n_idx
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and inc is not None and left - overhead < 5.0:  # no time left to prove anything
        gap = abs(dual_bound(jobs, market, lim, objective, value) - value) / max(abs(value), 1e-12)
        _say(progress, f"no time left for CBC over {n_idx:,} candidates (about {overhead:.0f} s to set up); "
                       f"answer from the pool, gap {gap:.2%} to the Lagrangian bound")
        return {"status": "Feasible (time limit)", "gap": gap, "time_s": time.perf_counter() - t0,
                "method": f"heuristic and CBC over a pool (no time left for CBC over {n_idx:,} candidates); "
                          "gap to the Lagrangian bound"}, inc
    _say(progress, f"{method}" + ("" if left is None else f", {left:.0f} s left"))
    model = _build([j.take(k) for j, k in zip(jobs, idx)], market, lim, objective, start=start)
    left = None if deadline is None else deadline - time.perf_counter() - 2.0 * per_candidate * n_idx
    first = _run_cbc(model.prob, _cbc_seconds(left), warm_start=start is not None, progress=progress,
                     label="CBC over the candidates")
    first["time_s"] = time.perf_counter() - t0
    first["method"] = method
    picks = None
    if first["status"] in ("Optimal", "Feasible (time limit)"):
        picks = np.array([k[d] for k, d in zip(idx, _picks(model))], dtype=np.int64)
    if first["status"] == "Optimal" or inc is None:
        return first, picks
    # stopped on time (or CBC failed): keep the better of CBC's answer and the pool's
    if picks is not None:
        v = float(_objective(objective, jobs, evaluate_picks(jobs, market, picks[None, :]))[0])
        if sense * v >= sense * value:
            return first, picks
    if first["status"] == "Infeasible":  # cannot be: the pool's answer is feasible; trust the pool's answer
        first["gap"] = None
    if first["gap"] is None:
        first["gap"] = abs(dual_bound(jobs, market, lim, objective, value) - value) / max(abs(value), 1e-12)
        first["method"] += "; gap to the Lagrangian bound"
    first["status"] = "Feasible (time limit)"
    first["method"] += "; answer: the pool's"
    return first, inc


_ENUM_MAX = 20_000  # tie-break by enumeration up to this many selections of the remaining candidates


def solve_program(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str = "throughput",
                  time_limit: float | None = None, tie_break: bool = True, *, tie_enumeration_max: int = _ENUM_MAX,
                  fair_enumeration_rows: int = _FAIR_ROWS,
                  progress: Progress | None = None) -> ProgramResult:
    """Solve the program over the given (already pruned) candidates.

    The first solve finds the optimum and proves it. The tie-break then looks only at designs that
    can still be part of a selection within the tolerance of that optimum (`_tie_candidates`): by
    enumeration when at most `tie_enumeration_max` selections remain, else by a second solve over
    those designs. `fair_enumeration_rows`: the most partial selections one level of the `fair`
    bisection may enumerate before CBC decides it. Both are sizes where one exact method hands over
    to another, not settings of the answer."""
    _check_objective(objective, jobs)
    if any(len(j) == 0 for j in jobs):
        return ProgramResult("Infeasible", None, None, None, 0.0, [])
    t0 = time.perf_counter()
    if objective == "fair":
        first, picks = _solve_fair(jobs, market, lim, time_limit, fair_enumeration_rows, progress)
    else:
        first, picks = _solve_first(jobs, market, lim, objective, time_limit, progress)
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
            if combos <= tie_enumeration_max:
                best = _enumerate_ties(sub, market, lim, objective, v1, tol)
                stages.append({"status": "Optimal", "gap": 0.0, "time_s": time.perf_counter() - t1,
                               "method": f"enumeration of {combos:,.0f} tied candidates"})
                if best is not None:
                    picks = np.array([k[b] for k, b in zip(idx, best)], dtype=np.int64)
            elif objective == "fair":  # most Σ w τ / T over the tied candidates, by enumeration when it fits
                fl = _FairLevels(jobs, market, lim, fair_enumeration_rows)
                score = [j.weight * r for j, r in zip(jobs, fl.ratio)]
                found = fl.best_score(idx, score, float(sum(s[d] for s, d in zip(score, picks))))
                if found is not None:
                    stages.append({"status": "Optimal", "gap": 0.0, "time_s": time.perf_counter() - t1,
                                   "method": f"enumeration with bounds over {int(sum(len(k) for k in idx)):,} "
                                             "tied candidates"})
                    picks = found
            if combos > tie_enumeration_max and found is None:  # else a second solve
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
    return ProgramResult(first["status"], picks, value, first["gap"], time.perf_counter() - t0, stages,
                         proven_bound(objective, value, first["gap"]))
