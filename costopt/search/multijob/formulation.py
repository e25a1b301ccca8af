"""The mixed-integer program over every job's candidate designs, and running CBC on it.

Variables: x_{j,d} ∈ {0,1} (job j runs design d); per shared part p and band k, z_{p,k} ∈ {0,1}
(band chosen) and q_{p,k} ≥ 0 (units bought in that band); with one NIC type for the fabric,
y_n ∈ {0,1} per NIC type n; with a limit on GPU models, g_m ∈ {0,1} per GPU model m; for the
fair-share objective, t (free).

    Σ_{d∈C_j} x_{j,d} = 1                                   ∀ j        (one design per job)
    N_p = Σ_j Σ_d u_{d,p} x_{j,d}                            ∀ p ∈ S    (units needed)
    Σ_k q_{p,k} ≥ N_p − o_p                                 ∀ p ∈ S    (owned units are free)
    l_k z_{p,k} ≤ q_{p,k} ≤ h_k z_{p,k},  Σ_k z_{p,k} ≤ 1     ∀ p ∈ S    (one price band)
    Σ_k q_{p,k} ≤ s_p                                       stock limits
    C = Σ_j Σ_d a_d x_{j,d} + Σ_{p∈S} Σ_k ρ_{p,k} q_{p,k}               (total cost)
    C ≤ budget;  Σ P_d x ≤ max_power_kw;  Σ R_d x ≤ max_rack_units;  Σ M_d x ≤ max_nodes
    Σ_{d∈C_j: nic(d)=n} x_{j,d} ≤ y_n  ∀ j, n;   Σ_n y_n ≤ 1             (one NIC type; off with
                                                                         --mixed-nics)
    Σ_{d∈C_j: gpu(d)=m} x_{j,d} ≤ g_m  ∀ j, m;   Σ_m g_m ≤ max_gpu_types   (GPU models, when limited)
    τ_j = Σ_d τ_d x_{j,d};   τ_j ≥ T_j for jobs with a target T_j       (objectives 1 and 3)

A single-node design has no NIC and is compatible with any fabric. Switch ports stay per design
(each partition has its own switches).

Objectives:
  1. `throughput`: max Σ_j w_j τ_j                                    (weights from the mix)
  2. `fair`:       max t  s.t.  τ_j / T_j ≥ t  ∀ j                    (every job needs a target)
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pulp

from costopt.search.multijob.problem import _INF, _RESOURCES, JobCandidates, Market, MixLimits, Progress, own_cost


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
    g: dict[str, pulp.LpVariable] = {}
    if lim.max_gpu_types is not None:
        gpu_ids = sorted({str(m) for job in jobs for m in job.gpu})
        if len(gpu_ids) > lim.max_gpu_types:
            g = {m: pulp.LpVariable(f"g_{k}", cat="Binary") for k, m in enumerate(gpu_ids)}
            _add(prob, [(v, 1.0) for v in g.values()] + relax("gpu types", lim.max_gpu_types, "GPU types"), LE,
                 float(lim.max_gpu_types), "max_gpu_types")
            for j, job in enumerate(jobs):
                for k, m in enumerate(gpu_ids):
                    on = np.flatnonzero(job.gpu == m)
                    if len(on):
                        _add(prob, [(x[j][i], 1.0) for i in on] + [(g[m], -1.0)], LE, 0.0, f"gpu_{j}_{k}")
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
                _add(prob, thr_pairs[j] + [(s, -c) for s, c in relax(f"target {job.name}", job.target, job.unit)],
                     GE, float(job.target), f"target_{j}")
        weighted = _lin([(v, c * w) for tp, w in zip(thr_pairs, weights) for v, c in tp])
        primary, secondary = (weighted, cost) if objective == "throughput" else (cost, weighted)
    if elastic:
        prob.setObjective(_lin([(s, 1.0 / max(limit, 1e-9)) for s, limit, _ in slack.values()]))
    else:
        scale = 1.0 / _scale(objective, jobs, lim, market)
        prob.setObjective(_lin([(v, c * scale) for v, c in primary.items()]))
    if start is not None:
        _set_start(jobs, market, x, y, part_vars, start, g)
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


def _set_start(jobs: list[JobCandidates], market: Market, x, y, part_vars, start: np.ndarray, g=None) -> None:
    """Initial values of every variable for the selection `start` (x, y, g, each part's band and units)."""
    for xs, d in zip(x, start):
        for i, v in enumerate(xs):
            v.setInitialValue(1 if i == d else 0)
    nics = {str(job.nic[d]) for job, d in zip(jobs, start)} - {"none"}
    for n, v in y.items():
        v.setInitialValue(1 if n in nics else 0)
    models = {str(job.gpu[d]) for job, d in zip(jobs, start)}
    for m, v in (g or {}).items():
        v.setInitialValue(1 if m in models else 0)
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
_NODE_RE = re.compile(r"([-\d.eE+]+) best solution, best possible ([-\d.eE+]+)")
PROGRESS_EVERY_S = 5.0  # seconds between progress lines while CBC runs


def _watch(log: Path, stop: threading.Event, progress: Progress, label: str, t0: float) -> None:
    """Every PROGRESS_EVERY_S seconds until `stop`: one line with the time so far and, once CBC has an
    integer solution, the relative gap between it and the best bound (from CBC's log as it is written)."""
    while not stop.wait(PROGRESS_EVERY_S):
        text = log.read_text(errors="replace") if log.exists() else ""
        nodes = _NODE_RE.findall(text)
        line = f"{label}: {time.perf_counter() - t0:.0f} s"
        if nodes:
            best, bound = (float(v) for v in nodes[-1])
            if abs(best) < 1e49:
                line += f", gap {abs(best - bound) / max(abs(best), 1e-12):.2%} so far"
            else:
                line += ", no solution yet"
        progress(line)


def _run_cbc(prob: pulp.LpProblem, time_limit: float | None, warm_start: bool = False,
             progress: Progress | None = None, label: str = "CBC") -> dict[str, Any]:
    """Solve with CBC; status, gap (relative, from CBC's log) and wall time. `time_limit` is CBC's own
    (PuLP's writing and reading of the program come on top); `progress` gets a line every few seconds."""
    from costopt.core.children import cbc_dies_with_parent

    cbc_dies_with_parent()  # CBC ends with costopt, even when costopt is killed (core/children.py)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "cbc.log"
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=0.0, logPath=str(log), warmStart=warm_start,
                                   keepFiles=False)
        t0 = time.perf_counter()
        stop = threading.Event()
        watcher = None
        if progress is not None:
            watcher = threading.Thread(target=_watch, args=(log, stop, progress, label, t0), daemon=True)
            watcher.start()
        try:
            prob.solve(solver)
        finally:
            stop.set()
            if watcher is not None:
                watcher.join()
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
