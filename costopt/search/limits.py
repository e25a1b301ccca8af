"""Limits and objectives of a request, applied to any workload's result (evaluation.py's interface).

One definition for the data-parallel path (search/api.py::choose) and the large-model path
(search/llm_search.py::choose_llm): both hand over per-design arrays (feasible, costs, throughput in
the workload's unit, its 80% range) and never say which kind of model produced them.

A request (`Request`) asks for the best design under

    budget B            spend_d ≤ B                (spend = cost_usd, or the purchase for owned designs
                                                    priced on a horizon: cost.within_budget)
    power  P            power_kW_d ≤ P             (nameplate)
    rack units R        RU_d ≤ R
    target τ*           τ_d(c) ≥ τ*                τ* = max(min throughput, W / (3600 · H)) for W samples
                                                    or tokens to train by a deadline of H hours

with objective throughput (max τ_d), cost (min cost_d) or cost per throughput (min cost_d / τ_d),
exactly as search/solver.py's rules on the Pareto front of the designs that meet every limit.

Confidence. τ_d(c) is the design's throughput that it reaches with probability c, read off its 80%
range [lo_d, hi_d] (lo = p10, hi = p90, the point estimate x_d = p50) as a log-normal:

    z = Φ⁻¹(c),  z₉₀ = Φ⁻¹(0.9) = 1.2816
    τ_d(c) = x_d · (lo_d / x_d)^(z / z₉₀)      c ≥ 0.5   (c = 0.5: x_d; c = 0.9: lo_d)
    τ_d(c) = x_d · (hi_d / x_d)^(−z / z₉₀)     c < 0.5

Default c: 0.9 when a deadline is given (the design meets it at its p10 throughput), else 0.5 (a
`--min-throughput` target alone is met by the point estimate, as it always was). `--confidence`
sets c in [0.5, 0.99]. Time to train at that confidence is W / τ_d(c).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from costopt.core.checks import positive
from costopt.core.errors import InfeasibleError, InputError
from costopt.hardware.cost import within_budget
from costopt.search.evaluation import DesignResults
from costopt.search.solver import OBJECTIVES, best_on_front

DEADLINE_CONFIDENCE = 0.9  # a deadline is met at the design's p10 throughput unless --confidence says otherwise
_Z90 = NormalDist().inv_cdf(0.9)

@dataclass(frozen=True)
class Request:
    """The limits and objective of one solve, in the workload's unit (`unit`: samples/s or tokens/s)."""

    budget: float | None = None
    objective: str = "throughput"
    max_power_kw: float | None = None
    max_rack_units: float | None = None
    min_throughput: float | None = None
    work: float | None = None  # samples or tokens to train
    deadline_hours: float | None = None
    confidence: float | None = None  # None: DEADLINE_CONFIDENCE with a deadline, else 0.5
    unit: str = "samples/s"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}, got '{self.objective}'",
                             field="objective")
        for name, v in (("max power", self.max_power_kw), ("max rack units", self.max_rack_units),
                        ("min throughput", self.min_throughput), ("deadline hours", self.deadline_hours)):
            positive(name, v)
        if self.confidence is not None and not (isinstance(self.confidence, (int, float))
                                                and 0.5 <= self.confidence <= 0.99):
            raise InputError(f"--confidence must be in [0.5, 0.99] (0.5: the point estimate, 0.9: the low end of "
                             f"the 80% range), got {self.confidence}", field="confidence")

    @property
    def target(self) -> float | None:
        """τ* (the workload's unit), or None when the request sets no throughput target."""
        need = None
        if self.deadline_hours is not None and self.work is not None:
            need = self.work / (self.deadline_hours * 3600.0)
        if self.min_throughput is not None:
            need = max(need or 0.0, self.min_throughput)
        return need

    @property
    def level(self) -> float:
        """c, the confidence a target is met at."""
        if self.confidence is not None:
            return float(self.confidence)
        return DEADLINE_CONFIDENCE if self.deadline_hours is not None else 0.5

    def describe_level(self) -> str:
        c = self.level
        if c == 0.5:
            return "at the point estimate (confidence 0.5)"
        if abs(c - 0.9) < 1e-12:
            return "at the low end of its 80% range (p10; confidence 0.9)"
        return f"at confidence {c:g} (the throughput reached with probability {c:g}, from its 80% range)"

    def target_phrase(self) -> str:
        parts = []
        if self.deadline_hours is not None and self.work is not None:
            parts.append(f"{self.work:,.4g} {self.unit.split('/')[0]} within {self.deadline_hours:g} hours")
        if self.min_throughput is not None:
            parts.append(f"at least {self.min_throughput:,.1f} {self.unit}")
        return " and ".join(parts) + f" (needs {self.target:,.1f} {self.unit} {self.describe_level()})"


def at_confidence(point: np.ndarray, low: np.ndarray, high: np.ndarray, c: float) -> np.ndarray:
    """τ(c) of the module docstring, element-wise."""
    point = np.asarray(point, dtype=np.float64)
    if c == 0.5:
        return point
    z = NormalDist().inv_cdf(c) / _Z90
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (np.asarray(low, dtype=np.float64) / point) if c > 0.5 else (np.asarray(high, dtype=np.float64) / point)
        out = point * ratio ** (abs(z))
    return np.where(np.isfinite(out), out, point)


def masks(res: DesignResults, req: Request, offered: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-design masks of a request:

    ok       runs (memory, precision, fabric) and is offered by the part filter (`offered`, None: all)
    hw_ok    ok, within the power and rack-unit limits
    in_budget  spend ≤ budget
    meets    reaches the target at the request's confidence (all True without a target)
    cand     what the Pareto front is built on: hw_ok & meets (& in_budget when spend is not cost_usd)
    within   hw_ok & in_budget & meets: the designs a result may rank
    """
    costs, ranges = res.costs, res.ranges
    ok = np.asarray(res.feasible, dtype=bool) & costs.buildable
    if offered is not None:
        ok = ok & offered
    hw_ok = ok.copy()
    if req.max_power_kw is not None:
        hw_ok &= costs.power_kw <= req.max_power_kw
    if req.max_rack_units is not None:
        hw_ok &= costs.rack_units <= req.max_rack_units
    in_budget = within_budget(costs, req.budget)
    meets = np.ones(len(ok), dtype=bool)
    need = req.target
    if need is not None:
        thr = np.asarray(res.throughput, dtype=np.float64)
        if req.level == 0.5:
            meets = thr >= need
        else:
            meets = np.zeros(len(ok), dtype=bool)
            idx = np.flatnonzero(hw_ok & (thr >= need))  # τ(c) ≤ x for c ≥ 0.5
            if len(idx):
                low, high = ranges(idx)
                meets[idx] = at_confidence(thr[idx], low, high, req.level) >= need
    cand = hw_ok & meets
    if costs.spend_usd is not None:
        cand &= in_budget
    return {"ok": ok, "hw_ok": hw_ok, "in_budget": in_budget, "meets": meets, "cand": cand,
            "within": hw_ok & in_budget & meets}


def pick(res: DesignResults, req: Request, rank: np.ndarray, m: dict[str, np.ndarray]) -> tuple[int | None, dict[str, Any]]:
    """The chosen design (an index into the space) on the Pareto front of `m['cand']`, or None."""
    costs, throughput = res.costs, res.throughput
    cand = np.flatnonzero(m["cand"])
    budget = None if costs.spend_usd is not None else req.budget
    info: dict[str, Any] = {"status": "Infeasible", "pareto_front_size": 0}
    if len(cand) == 0:
        return None, info
    j, info = best_on_front(req.objective, costs.cost_usd[cand], throughput[cand], rank[cand], budget)
    return (None if j is None else int(cand[j])), info


def infeasible(res: DesignResults, req: Request, rank: np.ndarray, m: dict[str, np.ndarray],
               what: str) -> InfeasibleError:
    """Why nothing meets the request, with the nearest feasible design (`row(i)`: its DESIGN dict).

    Order of the checks: the power / rack limits (nearest: the fastest design within the budget, whatever
    its power); the target (nearest: the fastest design within every other limit, with what it reaches);
    the budget (nearest: the cheapest design within every other limit)."""
    costs, throughput, ranges = res.costs, res.throughput, res.ranges
    row = lambda i: res.rows(np.array([i]))[0]  # noqa: E731
    cost, thr = costs.cost_usd, np.asarray(throughput, dtype=np.float64)
    spend = costs.spend_usd if costs.spend_usd is not None else cost
    ok, hw_ok, in_budget, meets = m["ok"], m["hw_ok"], m["in_budget"], m["meets"]
    limits = ([f"power <= {req.max_power_kw:g} kW"] if req.max_power_kw is not None else []) + \
             ([f"rack units <= {req.max_rack_units:g}"] if req.max_rack_units is not None else [])
    unit = req.unit

    def fastest(pool: np.ndarray) -> int:
        j = np.flatnonzero(pool)
        return int(j[np.lexsort((rank[j], cost[j], -thr[j]))[0]])

    def cheapest(pool: np.ndarray) -> int:
        j = np.flatnonzero(pool)
        return int(j[np.lexsort((rank[j], -thr[j], spend[j]))[0]])

    if not hw_ok.any():
        pool = ok & in_budget if (ok & in_budget).any() else ok
        i = fastest(pool)
        return InfeasibleError(f"no design that can train {what} satisfies {' and '.join(limits)}; the nearest is "
                               f"the fastest{' within budget' if (ok & in_budget).any() else ''}, which needs "
                               f"{float(costs.power_kw[i]):,.1f} kW and {float(costs.rack_units[i]):,.0f} RU",
                               nearest=row(i), reason="constraints")
    if req.target is not None and not (hw_ok & meets & in_budget).any():
        pool = hw_ok & in_budget if (hw_ok & in_budget).any() else hw_ok
        i = fastest(pool)
        reach = f"{thr[i]:,.1f} {unit}"
        if req.level != 0.5:
            low, high = ranges(np.array([i]))
            reach += f" ({float(at_confidence(thr[[i]], low, high, req.level)[0]):,.1f} {req.describe_level()})"
        scope = " and ".join((["budget"] if (hw_ok & in_budget).any() and req.budget else []) + limits)
        hours = ""
        if req.work is not None and thr[i] > 0:
            hours = f", {req.work / thr[i] / 3600.0:,.0f} hours to train"
        return InfeasibleError(f"no design{' within ' + scope if scope else ''} meets {req.target_phrase()}; the "
                               f"nearest is the fastest{' within ' + scope if scope else ''}: {reach}{hours}",
                               nearest=row(i), reason="min-throughput" if req.deadline_hours is None else "deadline")
    pool = hw_ok & meets
    i = cheapest(pool)
    return InfeasibleError(f"budget ${req.budget:,.0f} is below the cheapest feasible design "
                           f"(${float(spend[i]):,.0f})", nearest=row(i), reason="budget")


def check_cost_options(catalog, support_years: float = 0.0, hours: float | None = None) -> None:
    """Cost options a catalog cannot honour are refused (exit 2), never ignored: `--support-years` on a
    catalog with no support price ([facility] support_pct_per_year = 0), `--hours` on a catalog that rents
    nothing (hours price rented designs only)."""
    name = str(getattr(catalog, "path", None) or catalog.catalog.name)
    fac = catalog.facility
    if support_years and (fac is None or not fac.support_pct_per_year):
        raise InputError(f"--support-years {support_years:g}: catalog {name} has no support price ([facility] "
                         "support_pct_per_year is 0); set it in an overlay to price support", field="support_years")
    if hours is not None and not catalog.is_cloud:
        raise InputError(f"--hours {hours:g}: prices rented designs, and catalog {name} rents none (a cloud catalog "
                         "has instances with usd_per_hour)", field="hours")


__all__ = ["check_cost_options", "Request", "at_confidence", "masks", "pick", "infeasible", "DEADLINE_CONFIDENCE"]
