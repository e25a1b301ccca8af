"""Rentals by the provider's terms, for `rent-vs-buy` and `compare` (purchasing.py calls these).

A rented node carries its pricing tier (on-demand, spot, capacity-block, reserved), the shortest rental
billed and the billing step (`cost.billed_hours`). `_rent_versus_own` prices the owned cluster's work
on the same calendar; its docstring has the maths. `_held_equal` / `_compare_held_equal` say in one
sentence what both sides share; `_price_warnings` collects the price-age warnings `solve` prints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costopt.core.units import HOURS_PER_YEAR
from costopt.hardware.cost import billed_hours

HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0

SPOT_INTERRUPTION = {
    "aws": ("AWS can reclaim a Spot Instance at any time with a two-minute interruption notice (AWS EC2 User Guide, "
            "'Spot Instance interruptions'); the job must checkpoint and restart, and costopt does not price the lost "
            "work or the wait for capacity"),
    "": "a spot / preemptible instance can be stopped by the provider; the job must checkpoint and restart "
        "(costopt does not price the lost work)",
}



def rental_terms(chassis: Any) -> dict[str, Any]:
    """How a rented node is sold: pricing tier, minimum term and billing step (hours), their source, and
    whether it is a commitment (billed for its whole term whether used or not: a reserved / savings plan)."""
    pricing = getattr(chassis, "rental_pricing", "") or "on-demand"
    lo = float(getattr(chassis, "min_rental_hours", 0.0) or 0.0)
    step = float(getattr(chassis, "rental_increment_hours", 0.0) or 0.0)
    if step > 0:
        step_text = f"billed in steps of {_hours_text(step)}"
    else:
        step_text = "billed by the second"
    return {"pricing": pricing, "min_hours": lo, "step_hours": step, "step_text": step_text,
            "source": getattr(chassis, "rental_terms_source", "") or "no terms stated in the catalog",
            "interruption": getattr(chassis, "interruption_note", "") or "",
            "commitment": pricing == "reserved"}


def _hours_text(h: float) -> str:
    """2 h, 24 h, 8,766 h; under an hour in minutes (1 min), under a minute in seconds."""
    if h >= 1:
        return f"{h:,.4g} h"
    if h * 60 >= 1 - 1e-3:
        return f"{h * 60:.3g} min"
    return f"{h * 3600:.3g} s"


def _billed(h: float, terms: dict[str, Any]) -> float:
    return float(billed_hours(np.array([h]), np.array([terms["min_hours"]]), np.array([terms["step_hours"]]))[0])


def _rent_versus_own(rate: float, ratio: float, capex: float, energy: float, years: float,
                     terms: dict[str, Any]) -> dict[str, Any]:
    """Rented cost of the owned cluster's work on the same calendar, and the break-even.

    The owned cluster is busy a fraction u of Y years: W(u) = Y·u·8766 hours of work. Renting that work
    (ratio = T_own / T_rent rented hours per owned hour; jobs run back to back, packed into the billing
    steps, so a 1.4-hour job does not cost a whole Capacity-Block day when the year holds thousands):

        use-priced (on-demand, spot, blocks): rent(u) = R · billed(W(u) · ratio),
                                              billed(h) = max(min term, ⌈h / step⌉·step)  (cost.billed_hours)
        commitment (reserved / plan):         billed for every hour of the horizon, used or not:
                                              rent(u) = R · billed(Y·8766)   (constant in u)

    One job alone (`rent_vs_buy`'s "job" rows, and `compare` per job) is billed(rent_h): at least the
    minimum term.
    owned(u) = C + Y·u·E, C the whole cost of owning but electricity (cost.tco_terms at u = 0: capex,
    storage, financing, colocation, support, staff, less resale; `capex` here). For a use-priced rental, rent(u) = u·S with S = rent(1) (billing steps aside),
    so the break-even is u* = C / (S − Y·E) (None when S ≤ Y·E: renting costs less than the electricity).
    For a commitment owned(u) = rent at u* = (R·billed(Y·8766) − C) / (Y·E): owning is cheaper below it.
    m* = months of full use to break even = C / ((S/(Y·8766) − E/8766) · 8766/12)."""
    full = years * HOURS_PER_YEAR
    if terms["commitment"]:
        flat = rate * _billed(full, terms)

        def rent_total(u: float) -> float:
            return flat
        u_star = (flat - capex) / (years * energy) if energy > 0 and flat > capex else None
        per_hour = flat / full
        return {"rent_total": rent_total, "u_star": u_star, "m_star": None, "rent_per_work_hour": per_hour,
                "commitment": True, "flat": flat, "capex": capex}
    def rent_total(u: float) -> float:
        return rate * _billed(years * u * HOURS_PER_YEAR * ratio, terms) if u > 0 else 0.0
    per_hour = rate * ratio
    gap = per_hour - energy / HOURS_PER_YEAR  # what renting costs more than running, per hour of work
    u_star = capex / (full * gap) if gap > 0 else None
    m_star = capex / (HOURS_PER_MONTH * gap) if gap > 0 else None
    return {"rent_total": rent_total, "u_star": u_star, "m_star": m_star, "rent_per_work_hour": per_hour,
            "commitment": False, "capex": capex}


def _rent_verdict(rv: dict[str, Any], years: float, utilization: float | None, terms: dict[str, Any]) -> str:
    u_star, m_star = rv["u_star"], rv["m_star"]
    if rv["commitment"]:
        flat = rv["flat"]
        if flat <= rv["capex"]:
            return (f"rent: the {terms['pricing']} rental for all {years:g} years (${flat:,.0f}, billed whether used or "
                    f"not) costs less than owning without electricity")
        if u_star is None or u_star >= 1:
            return (f"buy: owning costs less than the {terms['pricing']} rental for {years:g} years (${flat:,.0f}, "
                    f"billed whether used or not) at any utilisation")
        return (f"buy below {u_star:.0%} utilisation, rent ({terms['pricing']}, ${flat:,.0f} for {years:g} years) above "
                f"it: a commitment costs the same at any use")
    if u_star is None:
        return "rent: renting the same work costs less than the owned cluster's electricity alone"
    if u_star > 1:
        return (f"rent: buying pays off only above {u_star:.0%} utilisation over {years:g} years, i.e. never; "
                f"at full use it takes {m_star:.1f} months")
    if utilization is not None:
        return (f"{'buy' if utilization >= u_star else 'rent'}: break-even at {u_star:.0%} utilisation over "
                f"{years:g} years ({m_star:.1f} months at full use); yours is {utilization:.0%}")
    return (f"buy if the cluster will be busy more than {u_star:.0%} of {years:g} years "
            f"(break-even after {m_star:.1f} months at full use); rent otherwise")


def _held_equal(model: str, opts: Any, years: float, utilization: float | None, samples: float | None,
                ratio: float, terms: dict[str, Any]) -> str:
    """One sentence: what the owned and rented sides share, so the comparison is like for like."""
    work = (f"the same job ({samples:,.0f} samples; {ratio:.3f} rented hours per owned hour, jobs back to back)"
            if samples is not None else f"the same work ({ratio:.3f} rented hours per owned hour, one continuous rental)")
    use = f"{utilization:.0%} of {years:g} years" if utilization is not None else f"any utilisation of {years:g} years"
    term = (f"never less than {_hours_text(terms['min_hours'])} per rental, {terms['step_text']}" if terms["min_hours"] or
            terms["step_hours"] else terms["step_text"])
    extra = f"; interruptions: {terms['interruption']}" if terms["interruption"] else ""
    return (f"Held equal: model {model}, precision {opts.precision}, {work}, the owned cluster's calendar ({use}); "
            f"rent {terms['pricing']}, {term}{extra}")


def _compare_held_equal(answers: list[Any], model: str, opts: Any) -> str:
    """What `compare` holds equal across its catalogs, and each rented pick's terms (minimum term, steps)."""
    any_rent = any(a.best is not None and a.catalog.is_cloud for a in answers)
    billed = ", each rental billed for its own time to train, never less than the provider's minimum term"
    if opts.samples is not None:
        use = f"the same job ({opts.samples:,.0f} samples)" + (billed if any_rent else "")
    elif opts.hours is not None:
        use = f"the same {opts.hours:g} hours of use" + (
            ", each rental never billed for less than its minimum term" if any_rent else "")
    else:
        use = "the same budget (owned: capex)"
    rented = []
    for a in answers:
        if a.best is not None and a.catalog.is_cloud:
            t = rental_terms(a.catalog.chassis_by_id[a.best["chassis"]])
            rented.append(f"{a.label}: {t['pricing']}, minimum {_hours_text(t['min_hours']) if t['min_hours'] else 'none'}, "
                          f"{t['step_text']}")
    owned = any(a.best is not None and not a.catalog.is_cloud for a in answers)
    cal = (f"; owned designs: the whole cost of owning over {opts.years:g} years at {opts.utilization:.0%} use"
           if owned and rented else "")
    return (f"Held equal: model {model}, precision {opts.precision}, {use}{cal}"
            + (f"; rentals: {'; '.join(rented)}" if rented else ""))


def _price_warnings(designs: list[dict[str, Any]]) -> list[str]:
    """The price-age warnings of the designs compared (as `solve` prints them), each once."""
    out: list[str] = []
    for d in designs:
        w = d.get("price_warning") or ""
        if w and w not in out:
            out.append(w)
    return out


