"""Why the answer is what it is: which limits bind, and why owned parts stay unused (data, not text).

Both read one-job changes of the answer: with every other job's design as chosen, job j runs
design d instead. For each change the exact totals are computed (cost with shared parts re-priced,
power, rack units, nodes, stocked units, NIC types, GPU models; vectorised over d), and with them
which limits the change breaks and whether it improves the objective (more Σ w τ; a higher least
τ / T; a lower cost). A change that misses its job's target (objectives `throughput` and `cost`) is
not considered.

* A limit **binds** when some improving change breaks that limit and no other (relaxing it alone by
  `over_by` would allow the change); the change that needs the least more of the limit is reported,
  with its objective change. `at_limit`: no slack left.
  A limit with slack and no such change is reported with its slack; it may still take part in
  changes of several jobs at once, which this one-job reading does not see.
* An owned part with unused units: every change that uses more of it either breaks a limit (the one
  broken least, relatively, is named) or lowers the objective (the best such change is named); when
  no candidate of any job uses more of it, the candidates with it were dropped before the program
  (per-design limits, memory/precision, or beaten in cost, speed and every limited resource).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costopt.search.multijob.problem import _RESOURCES, JobCandidates, Market, MixLimits, own_cost

_REL = 1e-9


def _label(job: JobCandidates, d: int) -> str:
    nic = str(job.nic[d])
    nodes = int(job.nodes[d])
    where = f"{nodes} node" + ("s" if nodes != 1 else "") + ("" if nic == "none" else f", {nic}")
    return f"{int(job.gpus[d])} x {job.gpu[d]} ({where})"


class _Changes:
    """Totals of every one-job change of the selection `picks`."""

    def __init__(self, jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str, picks: np.ndarray):
        self.jobs, self.market, self.lim, self.objective, self.picks = jobs, market, lim, objective, picks
        self.shared = market.shared
        self.own = [own_cost(j, market) for j in jobs]
        self.res = {col: [getattr(j, col).astype(np.float64) for j in jobs] for _, col, _, _ in _RESOURCES}
        self.use = {p: [j.usage(p).astype(np.float64) for j in jobs] for p in self.shared}
        self.unstocked = Market(market.price, market.owned, {}, market.tiers)

    def change(self, j: int) -> dict[str, np.ndarray]:
        """Arrays over job j's designs: cost, each resource, each shared part's need, NIC types, GPU
        models, throughputs, objective value, and whether the job's target is met."""
        others = [i for i in range(len(self.jobs)) if i != j]
        pk = self.picks
        out: dict[str, Any] = {}
        cost = self.own[j] + sum(self.own[i][pk[i]] for i in others)
        cost_no_stock = cost  # the budget's reading: units beyond a stock priced as if they could be bought
        for p in self.shared:
            need = self.use[p][j] + sum(self.use[p][i][pk[i]] for i in others)
            out[("need", p)] = need
            cost = cost + self.market.part_cost(p, need)[0]
            cost_no_stock = cost_no_stock + self.unstocked.part_cost(p, need)[0]
        out["cost"], out["cost_no_stock"] = cost, cost_no_stock
        for _, col, _, _ in _RESOURCES:
            out[col] = self.res[col][j] + sum(self.res[col][i][pk[i]] for i in others)
        job = self.jobs[j]
        nics = sorted({str(self.jobs[i].nic[pk[i]]) for i in others} - {"none"})
        out["nic_types"] = len(nics) + ((job.nic != "none") & ~np.isin(job.nic, nics)).astype(np.int64)
        models = sorted({str(self.jobs[i].gpu[pk[i]]) for i in others})
        out["gpu_types"] = len(models) + (~np.isin(job.gpu, models)).astype(np.int64)
        w = np.array([jb.weight for jb in self.jobs])
        thr_others = {i: float(self.jobs[i].throughput[pk[i]]) for i in others}
        thr = job.throughput.astype(np.float64)
        if self.objective == "throughput":
            out["value"] = job.weight * thr + sum(w[i] * t for i, t in thr_others.items())
        elif self.objective == "fair":
            low = min((t / self.jobs[i].target for i, t in thr_others.items()), default=np.inf)
            out["value"] = np.minimum(thr / job.target, low)
        else:
            out["value"] = cost
        out["target_ok"] = (np.ones(len(job), bool) if self.objective == "fair" or job.target is None
                            else thr >= job.target * (1 - _REL))
        return out


def _limits(jobs: list[JobCandidates], market: Market, lim: MixLimits) -> list[tuple[str, str, float, Any]]:
    """(name, unit, allowed, key into a change's totals) for every limit in play."""
    out = []
    if lim.budget_usd is not None:
        out.append(("budget", "USD", float(lim.budget_usd), "cost_no_stock"))
    for attr, col, label, unit in _RESOURCES:
        if getattr(lim, attr) is not None:
            out.append((label, unit, float(getattr(lim, attr)), col))
    for p in market.shared:
        if p in market.stock:
            out.append((f"stock {p[1]}", "units", float(market.stock[p] + market.owned.get(p, 0)), ("need", p)))
    if lim.one_nic_type and any(np.any(j.nic != "none") for j in jobs):
        out.append(("NIC types", "types", 1.0, "nic_types"))
    if lim.max_gpu_types is not None:
        out.append(("GPU types", "types", float(lim.max_gpu_types), "gpu_types"))
    return out


def _round(v: float) -> float:
    """9 significant digits (the JSON of a design does the same): no float noise in the output."""
    return float(f"{v:.9g}")


def _improves(objective: str, value: np.ndarray, current: float) -> np.ndarray:
    tol = _REL * max(abs(current), 1e-12)
    return value < current - tol if objective == "cost" else value > current + tol


def _relative(objective: str, value: float, current: float) -> float:
    return (value - current) / max(abs(current), 1e-12)


def explain(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str,
            picks: np.ndarray, value: float) -> tuple[list[dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """(one row per limit in play: used, allowed, slack, binds and the best blocked change; per owned part
    with unused units, why). `value`: the answer's objective value."""
    ch = _Changes(jobs, market, lim, objective, picks)
    changes = [ch.change(j) for j in range(len(jobs))]
    limits = _limits(jobs, market, lim)
    now = {k: v[int(picks[0])] for k, v in changes[0].items()}  # the answer itself: job 0 left as it is
    rows = []
    for name, unit, allowed, key in limits:
        used = float(now[key])
        slack = allowed - used
        best = None
        for j, c in enumerate(changes):
            breaks_this = c[key] > allowed * (1 + _REL)
            others_ok = c["target_ok"].copy()
            for n2, _, a2, k2 in limits:
                if n2 != name:
                    others_ok &= ~(c[k2] > a2 * (1 + _REL))
            cand = np.flatnonzero(breaks_this & others_ok & _improves(objective, c["value"], value))
            if len(cand):  # the change that needs the least more of the limit (then the largest gain)
                o = np.lexsort((-np.abs(c["value"][cand] - value), c[key][cand]))
                d = int(cand[o[0]])
                key_d = (float(c[key][d]), -abs(float(c["value"][d]) - value))
                if best is None or key_d < best[0]:
                    v = float(c["value"][d])
                    best = (key_d, {"job": jobs[j].name, "design": _label(jobs[j], d),
                                    "objective_change": _round(_relative(objective, v, value)),
                                    "over_by": _round(float(c[key][d] - allowed))})
        rows.append({"limit": name, "unit": unit, "allowed": allowed, "used": _round(used), "slack": _round(slack),
                     "binds": best is not None, "at_limit": abs(slack) <= _REL * max(abs(allowed), 1.0),
                     "blocked_change": None if best is None else best[1]})
    unused: dict[tuple[str, str], dict[str, Any]] = {}
    for p, owned in market.owned.items():
        if p not in market.shared:
            continue
        need = float(now[("need", p)])
        if need >= owned:
            continue
        more = [(j, np.flatnonzero((ch.use[p][j] > ch.use[p][j][int(picks[j])]) & c["target_ok"]))
                for j, c in enumerate(changes)]
        if not any(len(k) for _, k in more):
            unused[p] = {"units": int(owned - need), "reason": "no_candidate"}
            continue
        feasible_best, broken_least = None, None  # (value, job, design); ((relative over, limit, over by), job, design)
        for j, ds in more:
            if not len(ds):
                continue
            c = changes[j]
            rel = np.stack([np.where(c[k][ds] > a * (1 + _REL), (c[k][ds] - a) / max(a, 1e-12), -np.inf)
                            for _, _, a, k in limits], axis=1) if limits else np.full((len(ds), 1), -np.inf)
            worst = rel.max(axis=1)
            ok = ~np.isfinite(worst) & (worst < 0)  # no limit broken
            if ok.any():
                v = c["value"][ds][ok]
                i = int(np.argmin(v) if objective == "cost" else np.argmax(v))
                if feasible_best is None or (v[i] < feasible_best[0] if objective == "cost" else v[i] > feasible_best[0]):
                    feasible_best = (float(v[i]), j, int(ds[ok][i]))
            if (~ok).any():
                i = int(np.argmin(np.where(ok, np.inf, worst)))
                k = int(np.argmax(rel[i]))
                name, _, a, key = limits[k]
                cand = ((float(worst[i]), name, float(c[key][ds[i]] - a)), j, int(ds[i]))
                if broken_least is None or cand[0][0] < broken_least[0][0]:
                    broken_least = cand
        if feasible_best is not None:
            v, j, d = feasible_best
            unused[p] = {"units": int(owned - need), "reason": "worse", "job": jobs[j].name,
                         "design": _label(jobs[j], d), "objective_change": _round(_relative(objective, v, value))}
        else:
            (_, lname, over_by), j, d = broken_least
            unused[p] = {"units": int(owned - need), "reason": "limit", "limit": lname, "over_by": _round(over_by),
                         "job": jobs[j].name, "design": _label(jobs[j], d)}
    return rows, unused
