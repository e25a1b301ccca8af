"""Infeasible mixes: which limit binds, and by how much.

When nothing is feasible, `diagnose` says which limit binds and by how much: for each limit on its
own it solves the program with only that limit elastic (min slack), and, when no single limit
explains it, one program with every limit elastic (min Σ slack / limit).
"""

from __future__ import annotations

from typing import Any

from costopt.search.multijob.formulation import _build, _run_cbc
from costopt.search.multijob.problem import _RESOURCES, JobCandidates, Market, MixLimits


def _limit_names(jobs: list[JobCandidates], market: Market, lim: MixLimits, objective: str) -> list[str]:
    names = []
    if lim.budget_usd is not None:
        names.append("budget")
    names += [label for lim_attr, _, label, _ in _RESOURCES if getattr(lim, lim_attr) is not None]
    names += [f"stock {p[1]}" for p in market.shared if p in market.stock]
    if lim.max_gpu_types is not None:
        names.append("gpu types")
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
                row = {"limit": f"target {job.name}", "value": job.target, "unit": job.unit, "alone": True,
                       "short_by": job.target - float(job.throughput.max()),
                       "relative": 1.0 - float(job.throughput.max()) / job.target}
                return (f"job '{job.name}': no design reaches its target of {job.target:,.1f} {job.unit} "
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
