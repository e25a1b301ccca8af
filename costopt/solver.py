"""Choosing one design: Pareto pruning, then a 0-1 integer program (PuLP + CBC).

Given candidates d with cost c_d and throughput τ_d, all already filtered by the per-design
constraints (memory, power, rack units, node count, buildable fabric):

1. Pareto prune. Keep d unless some d' has c_d' ≤ c_d and τ_d' ≥ τ_d (one strict). Every objective
   below is monotone (cheaper and faster is never worse), so the optimum is always on the front F.
   Equal (c, τ) pairs keep one representative: the first in the deterministic design order.

2. Integer program over F, x_d ∈ {0, 1}:

       Σ_d x_d = 1                         (pick one design)
       Σ_d c_d x_d ≤ budget                (when a budget is given)
       Σ_d τ_d x_d ≥ τ_min                 (objective `cost` only)

   objective `throughput`:          max Σ τ_d x_d
   objective `cost-per-throughput`: min Σ (c_d / τ_d) x_d
   objective `cost`:                min Σ c_d x_d

3. Ties on the optimal objective value are broken deterministically (throughput: cheaper first;
   the others: faster first; then the design order), so the same input always gives the same answer.

`brute_force` applies the same rules to every candidate without pruning or the solver; tests check
that both agree.
"""

from __future__ import annotations

import numpy as np
import pulp

OBJECTIVES = ("throughput", "cost-per-throughput", "cost")
_REL_TOL = 1e-9


def pareto_front(cost: np.ndarray, throughput: np.ndarray, order_rank: np.ndarray) -> np.ndarray:
    """Indices of the (min cost, max throughput) front, sorted by increasing cost."""
    if len(cost) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((order_rank, -throughput, cost))
    thr_sorted = throughput[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(thr_sorted)[:-1]])
    return order[thr_sorted > best_before]


def objective_values(objective: str, cost: np.ndarray, throughput: np.ndarray) -> np.ndarray:
    """Value to minimise."""
    if objective == "throughput":
        return -throughput
    if objective == "cost-per-throughput":
        return cost / throughput
    if objective == "cost":
        return cost
    raise ValueError(f"unknown objective {objective}")


def _feasible(cost, throughput, budget, min_throughput):
    ok = np.ones(len(cost), dtype=bool)
    if budget is not None:
        ok &= cost <= budget
    if min_throughput is not None:
        ok &= throughput >= min_throughput
    return ok


def _break_ties(objective, idx, cost, throughput, order_rank, values):
    best = values[idx].min()
    tol = _REL_TOL * max(abs(best), 1e-300)
    tied = idx[values[idx] <= best + tol]
    if objective == "throughput":
        keys = (order_rank[tied], cost[tied])
    else:
        keys = (order_rank[tied], -throughput[tied])
    return int(tied[np.lexsort(keys)[0]])


def brute_force(objective, cost, throughput, order_rank, budget=None, min_throughput=None) -> int | None:
    """Best candidate index by exhaustive comparison, or None if nothing is feasible."""
    ok = np.flatnonzero(_feasible(cost, throughput, budget, min_throughput if objective == "cost" else None))
    if len(ok) == 0:
        return None
    values = objective_values(objective, cost, throughput)
    return _break_ties(objective, ok, cost, throughput, order_rank, values)


def solve_ilp(objective, cost, throughput, order_rank, budget=None, min_throughput=None) -> tuple[int | None, dict]:
    """Best candidate index via Pareto front + CBC; also returns solver facts for the report."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective}")
    front = pareto_front(cost, throughput, order_rank)
    info = {"pareto_front_size": int(len(front)), "solver": "CBC (PuLP)", "status": "Not Solved"}
    if objective != "cost":
        min_throughput = None
    feas = front[_feasible(cost[front], throughput[front], budget, min_throughput)]
    if len(feas) == 0:
        info["status"] = "Infeasible"
        return None, info
    values = objective_values(objective, cost, throughput)
    # Scale the objective to O(1) so CBC's absolute tolerances do not blur close designs.
    scale = float(np.max(np.abs(values[front]))) or 1.0
    prob = pulp.LpProblem("costopt_design", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(front))]
    prob += pulp.lpSum(float(values[d] / scale) * x[i] for i, d in enumerate(front))
    prob += pulp.lpSum(x) == 1
    if budget is not None:
        prob += pulp.lpSum(float(cost[d]) * x[i] for i, d in enumerate(front)) <= float(budget)
    if min_throughput is not None:
        prob += pulp.lpSum(float(throughput[d]) * x[i] for i, d in enumerate(front)) >= float(min_throughput)
    status = prob.solve(pulp.PULP_CBC_CMD(msg=False))
    info["status"] = pulp.LpStatus[status]
    if info["status"] != "Optimal":
        return None, info
    chosen = [d for i, d in enumerate(front) if (x[i].value() or 0) > 0.5]
    if not chosen:
        return None, info
    # The solver's pick, then the deterministic tie-break among equally good front points.
    pick = chosen[0]
    tol = 1e-7 * max(abs(values[pick]), 1e-300)
    near = feas[values[feas] <= values[pick] + tol]
    return _break_ties(objective, near, cost, throughput, order_rank, values), info
