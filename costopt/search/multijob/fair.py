"""The `fair` objective: max min_j τ_j / T_j by bisection over the candidates' ratio levels.

Objective 2 is solved by bisection over the candidates' ratios τ_d / T_j (the optimum is one of
them): each step asks whether some selection over the designs with ratio ≥ the level meets every
limit, over those designs pruned again without the throughput column; the level above the answer is
proven infeasible. Levels whose lower bounds (Σ_j of each job's least own cost, resource use and part
units at that level, parts priced by f_p) already break a limit are ruled out for all levels at once,
and a step is decided without a solver by enumerating selections job by job, partial selections
thinned by those bounds and by dominance (`_FairLevels`); only when that grows too large does CBC
solve the program above without objective.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pulp

from costopt.search.multijob.formulation import _build, _picks, _run_cbc
from costopt.search.multijob.problem import _INF, _RESOURCES, JobCandidates, Market, MixLimits, Progress, _say, own_cost
from costopt.search.multijob.pruning import _skyline, prune


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
      grow past `max_rows` (default `_FAIR_ROWS`).
    * `best_score`: the same enumeration for the tie-break of `fair` (most Σ_j w_j τ_j / T_j among the
      tied candidates); partial rows also carry their score, which joins the dominance test, and a
      row whose score plus the other jobs' best cannot reach a known feasible selection's is dropped."""

    def __init__(self, jobs: list[JobCandidates], market: Market, lim: MixLimits, max_rows: int = _FAIR_ROWS):
        self.jobs, self.market, self.lim = jobs, market, lim
        self.max_rows = max_rows  # most partial selections one check may build (else CBC decides)
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
        if self.lim.max_gpu_types is not None:  # the enumeration does not track GPU models: CBC decides
            enumerate_ = False
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
        partial rows grow past `max_rows`. With `score` (per job, a value per design of `idx`, summed
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
            if work > (max_rows or self.max_rows):
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
        if self.lim.max_gpu_types is not None:  # the enumeration does not track GPU models
            return None
        best, best_v = None, -_INF
        for opt in self.options:
            sub = [k[self._allowed(j, opt)[k]] for j, k in enumerate(idx)]
            if any(len(k) == 0 for k in sub):
                continue
            found = self._enumerate(sub, [score[j][k] for j, k in enumerate(sub)], floor, 4 * self.max_rows)
            if found is None:
                return None
            if len(found):
                v = np.sum([score[j][found[:, j]] for j in range(len(sub))], axis=0)
                o = np.lexsort(tuple(found[:, j] for j in range(len(sub) - 1, -1, -1)) + (-v,))
                if v[o[0]] > best_v:
                    best, best_v = found[o[0]], float(v[o[0]])
        return best


def _solve_fair(jobs: list[JobCandidates], market: Market, lim: MixLimits, time_limit: float | None,
                max_rows: int = _FAIR_ROWS,
                progress: Progress | None = None) -> tuple[dict[str, Any], np.ndarray | None]:
    """max min_j τ_j / T_j by bisection over the candidates' ratios, each step a feasibility test.

    The optimum is one of the ratios τ_d / T_j. The lower bounds of `_FairLevels.bound` give, for all
    levels at once, the highest level they cannot rule out: the upper end. For a level t, keep the designs
    with ratio ≥ t; which of them is fastest no longer matters, so they are pruned again without the
    throughput column; `_FairLevels.check` then enumerates what is left, or, when that is too large, CBC
    solves the feasibility program over it. A feasible selection proves t reachable, and its own smallest
    ratio is the new lower end. The search ends when the level just above the best found is proven
    infeasible, so the answer is optimal."""
    t0 = time.perf_counter()
    fl = _FairLevels(jobs, market, lim, max_rows)
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
            r = _run_cbc(m.prob, None if left is None else max(1.0, 0.85 * left - 1.0), progress=progress,
                         label=f"CBC on level {levels[mid]:.4g}")
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
        _say(progress, f"fair: level {levels[mid]:.4g} {'reachable' if verdict else 'out of reach'}; "
                       f"optimum in [{levels[lo] if lo >= 0 else 0:.4g}, {levels[hi - 1] if hi > 0 else 0:.4g}], "
                       f"{time.perf_counter() - t0:.0f} s")
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
