"""Choosing one design: Pareto pruning, then an exact search over the front (numpy, no solver).

Given candidates d with cost c_d and throughput τ_d, all already filtered by the per-design
constraints (memory, power, rack units, node count, buildable fabric):

1. Pareto prune. Keep d unless some d' has c_d' ≤ c_d and τ_d' ≥ τ_d (one strict). Equal (c, τ)
   pairs keep one representative: the first in the deterministic design order (rank r).

2. Keep the front points that meet the request: c_d ≤ budget (when given), and τ_d ≥ τ_min
   (objective `cost` only).

3. Score each one (smaller is better) and take the best, v* = min v_d:

       objective `throughput`:          v_d = −τ_d
       objective `cost-per-throughput`: v_d = c_d / τ_d
       objective `cost`:                v_d = c_d

4. Ties: every kept point with v_d ≤ v* + 1e-9·|v*| is tied; among them the pick is the smallest key

       `throughput`:                    (c_d, −τ_d, r_d)     cheaper, then faster, then design order
       `cost-per-throughput`, `cost`:   (−τ_d, c_d, r_d)     faster, then cheaper, then design order

   so the same input always gives the same answer.

Why the front is enough, ties included. Let d be the pick of rules 2–4 applied to *all* candidates,
and suppose some d' dominates it (c' ≤ c, τ' ≥ τ, one strict; or equal and earlier in the design
order). Then d' meets the budget and the throughput floor too, v_d' ≤ v_d (every score is
non-decreasing in c and non-increasing in τ), so d' is tied, and its key is smaller than d's in
both key orders: a contradiction. So the pick is non-dominated, i.e. on the front, and the search
over the front returns exactly the pick over all candidates (tests check this against a plain loop
over every candidate, written in the test).

One design and a handful of per-design limits is a selection from a list: step 3 is a min over at
most a few thousand front points, exact and in microseconds. No integer program is needed. A
mixed-integer program (`costopt/search/multijob.py`, PuLP + CBC) is needed only when several jobs share
limits — one budget, power, rack space, node count, one NIC type, owned parts, stock and volume
discounts across jobs — because then the choice for one job changes what the others can have, the
number of combinations grows as the product of the jobs' candidate counts, and part prices depend
on the units all jobs buy together (see the README's "Several jobs").
"""

from __future__ import annotations

import numpy as np

OBJECTIVES = ("throughput", "cost-per-throughput", "cost")
SOLVER_NAME = "exact search over the Pareto front"
TIE_REL_TOL = 1e-9


def pareto_front(cost: np.ndarray, throughput: np.ndarray, order_rank: np.ndarray) -> np.ndarray:
    """Indices of the (min cost, max throughput) front, sorted by increasing cost.

    One sort by cost; then per distinct cost the best throughput (`maximum.reduceat`); a cost level is on
    the front when its best throughput beats every cheaper level's. Its representative is the design
    with that throughput and the smallest `order_rank` (then the smallest index): the same set, in the
    same order, as scanning the designs sorted by (cost, −throughput, order_rank) and keeping each one
    faster than all before it.
    """
    n = len(cost)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(cost, kind="stable")
    c, t = cost[order], throughput[order]
    starts = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
    level_best = np.maximum.reduceat(t, starts)
    before = np.concatenate(([-np.inf], np.maximum.accumulate(level_best)[:-1]))
    on_front = level_best > before
    level = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    cand = np.flatnonzero(on_front[level] & (t == level_best[level]))
    if len(cand) == 0:
        return np.zeros(0, dtype=np.int64)
    r = np.asarray(order_rank)[order[cand]]
    lv = level[cand]
    seg = np.flatnonzero(np.concatenate(([True], lv[1:] != lv[:-1])))
    best_rank = np.minimum.reduceat(r, seg)
    hit = r == np.repeat(best_rank, np.diff(np.append(seg, len(cand))))
    hit_pos = np.flatnonzero(hit)
    first = np.concatenate(([True], lv[hit_pos][1:] != lv[hit_pos][:-1]))
    return order[cand[hit_pos[first]]]


def objective_values(objective: str, cost: np.ndarray, throughput: np.ndarray) -> np.ndarray:
    """Value to minimise (rule 3 of the module docstring)."""
    if objective == "throughput":
        return -throughput
    if objective == "cost-per-throughput":
        return cost / throughput
    if objective == "cost":
        return cost
    raise ValueError(f"unknown objective {objective}")


def best_on_front(objective: str, cost: np.ndarray, throughput: np.ndarray, order_rank: np.ndarray,
                  budget: float | None = None, min_throughput: float | None = None) -> tuple[int | None, dict]:
    """Index of the best candidate (rules 1–4 of the module docstring), or None when nothing meets the
    request; also the facts the report prints (front size, method, status)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective}")
    front = pareto_front(cost, throughput, order_rank)
    info = {"pareto_front_size": int(len(front)), "solver": SOLVER_NAME, "status": "Infeasible"}
    ok = np.ones(len(front), dtype=bool)
    if budget is not None:
        ok &= cost[front] <= budget
    if objective == "cost" and min_throughput is not None:
        ok &= throughput[front] >= min_throughput
    kept = front[ok]
    if len(kept) == 0:
        return None, info
    values = objective_values(objective, cost[kept], throughput[kept])
    best = float(values.min())
    tied = kept[values <= best + TIE_REL_TOL * abs(best)]
    if objective == "throughput":
        keys = (order_rank[tied], -throughput[tied], cost[tied])
    else:
        keys = (order_rank[tied], cost[tied], -throughput[tied])
    info["status"] = "Optimal"
    return int(tied[np.lexsort(keys)[0]]), info
