"""The sections of a report that a committee signs from: the first screen, every assumption in one place,
and how the answer moves when the inputs move. Used by the data-parallel report (report.py) and the
large-model report (llm_report.py), which hand in the numbers as a `Case`.

    summary      the first screen: what to buy, its capex and its TCO over the horizon, what it achieves with
                 its 80% range, the two closest alternatives of another GPU type, the risks in words and what
                 to verify before signing; the costopt version, the date the prices were aged to, the catalogs
    assumptions  every input the answer rests on, its value and where it comes from
    sensitivity  the answer under moved inputs:
                   every price -20% / +20% (the same as the budget +25% / -16.7%: a price factor f admits the
                   designs with cost <= budget / f), re-solved: the pick and its throughput
                   the recommendation's throughput at its 80% range's ends: time to train, cost per unit of
                   throughput, and whether the nearest other GPU type's point estimate then beats it
                   utilisation u of the owned cluster: cost per million units of work
                   = (capex / years + electricity per year) / (throughput x 3,600 x 8,766 x u) x 1e6
                   (electricity at the catalog's average draw whatever the utilisation, as the TCO), against
                   renting the same work when a cloud catalog is given (rent per hour / rented throughput)
                   electricity price x0.5 and x2: TCO + years x electricity per year x (factor - 1)
                   colocation price x0.5 and x2: TCO + the colocation term x (factor - 1)

TCO: the whole cost of owning over the horizon, term by term (hardware/bom.py tco_lines: capex, storage,
financing, colocation, electricity, support, staff, less resale), as `solve --tco-years` prices it; capex plus
electricity where a report cannot get the terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from costopt.core.units import format_usd
from costopt.core.version import __version__
from costopt.purchase.report_parts import Section

HOURS_PER_YEAR = 8766.0


@dataclass
class Case:
    """What a report knows about its recommendation, in the units of its path (samples/s or tokens/s)."""

    model: str
    unit: str  # "samples/s" | "tokens/s"
    best: dict[str, Any]
    others: list[dict[str, Any]]  # the best design of each other GPU type, best first
    throughput: Callable[[dict], tuple[float, float | None, float | None]]  # point, low, high
    describe: Callable[[dict], str]  # "16 x rtx-pro-6000 (8 per node x 2 nodes, pcie5-8gpu, 1x ib-edr, ring)"
    years: float
    as_of: str
    catalogs: list[str]  # "reference-2026 (2026-11-30)"
    site: Any  # catalog.site: electricity_usd_per_kwh, pue, average_draw_fraction, source
    cloud: bool = False
    work: float | None = None  # samples or tokens of the job, when given
    work_label: str = ""  # "90 epochs x 1,281,167 samples"
    risks: list[str] = field(default_factory=list)  # path-specific risks, in words
    verify: list[str] = field(default_factory=list)  # path-specific checks
    assumptions: list[list[str]] = field(default_factory=list)  # [what, value, source]
    repick: Callable[[float], dict | None] | None = None  # the pick at a price factor (None: nothing fits)
    tco_lines: Callable[[dict], list[dict] | None] | None = None  # the whole cost of owning, term by term
    rent: dict[str, float] | None = None  # {"usd_per_hour", "throughput", "name"}: renting the same work


def _m(v: float | None, cents: bool = False) -> str:
    return "-" if v is None else format_usd(v, cents=cents)


def tco(d: dict, years: float, lines: list[dict] | None = None) -> float:
    """The whole cost of owning over `years`: the sum of its TCO lines (hardware/bom.py tco_lines: capex,
    storage, financing, colocation, electricity, support, staff, less resale) when known, else capex plus
    `years` of electricity."""
    lines = lines if lines is not None else d.get("tco")
    if lines:
        return float(sum(float(x["subtotal_usd"]) for x in lines))
    return float(d.get("capex_usd") or d["cost_usd"]) + years * float(d.get("energy_usd_per_year") or 0.0)


def _tco(case: "Case", d: dict) -> float:
    return tco(d, case.years, case.tco_lines(d) if case.tco_lines is not None else None)


def closest_other_gpus(case: Case, k: int = 2) -> list[dict]:
    """The next `k` designs of a GPU type other than the recommendation's, in the report's ranking."""
    return [d for d in case.others if d["gpu"] != case.best["gpu"]][:k]


def _achieves(case: Case, d: dict) -> str:
    t, lo, hi = case.throughput(d)
    text = f"{t:,.0f} {case.unit}" + (f" (80% range {lo:,.0f}-{hi:,.0f})" if lo is not None and hi is not None else "")
    if case.work:
        h = case.work / t / 3600.0
        text += f"; {case.work_label} in {h:,.1f} h"
        if lo and hi:
            text += f" ({case.work / hi / 3600:,.1f}-{case.work / lo / 3600:,.1f} h)"
    return text


def summary(case: Case) -> Section:
    b = case.best
    cost_word = "per hour (rented)" if case.cloud else "capex"
    rec = (f"Buy {case.describe(b)} for {_m(b['cost_usd'], case.cloud)} {cost_word}"
           + ("" if case.cloud else f"; TCO over {case.years:g} years {_m(_tco(case, b))}")
           + f". It achieves {_achieves(case, b)}.")
    sec = Section("summary", "Decision summary", rec, css_class="summary")
    rows = []
    t_best = case.throughput(b)[0]
    for d in [b, *closest_other_gpus(case)]:
        t, lo, hi = case.throughput(d)
        rows.append([d["gpu"], case.describe(d), _m(d["cost_usd"], case.cloud),
                     "-" if case.cloud else _m(_tco(case, d)), f"{t:,.0f}",
                     "-" if lo is None or hi is None else f"{lo:,.0f}-{hi:,.0f}",
                     "recommended" if d is b else f"{t / t_best - 1:+.0%} {case.unit}, "
                     f"{(d['cost_usd'] - b['cost_usd']) / b['cost_usd']:+.0%} cost"])
    sec.tables.append((["GPU", "design", "cost", f"TCO {case.years:g} y", case.unit, "80% range", "vs recommended"],
                       rows))
    sec.lists.append(("Risks", case.risks or ["none flagged beyond the 80% range above"]))
    sec.lists.append(("Verify before signing", case.verify))
    sec.notes.append(f"costopt {__version__}; prices aged to {case.as_of} (the report's date, --as-of); catalogs: "
                     + "; ".join(case.catalogs) + ". Every assumption: the Assumptions section; how the answer moves: "
                     "the Sensitivity section.")
    return sec


def assumptions(case: Case) -> Section:
    s = case.site
    rows = [
        ["report date (prices aged to)", case.as_of, "--as-of (default today)"],
        ["costopt version", __version__, "costopt --version"],
        ["catalogs", "; ".join(case.catalogs), "--catalog / --cloud (docs/sources.md: every figure's origin)"],
        ["horizon", f"{case.years:g} years", "--years: TCO, rent vs buy, cost per unit of work"],
        ["electricity", f"${s.electricity_usd_per_kwh:g}/kWh, PUE {s.pue:g}, average draw "
                        f"{s.average_draw_fraction:g} of nameplate", str(s.source)],
        ["TCO", _tco_terms(case), "hardware/bom.py tco_lines (catalog [site] rates, each with its source)"],
        ["utilisation", "the cluster busy all the time for cost per unit of work (the Sensitivity section varies it)",
         "estimate"],
        *case.assumptions,
    ]
    if case.work:
        rows.append(["job", case.work_label, "--epochs x --dataset-size, or --tokens"])
    return Section("assumptions", "Assumptions", "Every input the recommendation rests on, in one place.",
                   [(["assumption", "value", "from"], rows)])


def _tco_terms(case: Case) -> str:
    lines = case.tco_lines(case.best) if case.tco_lines is not None else None
    if not lines:
        return "capex + horizon x electricity per year"
    signed = lambda v: ("-" + _m(-v)) if v < 0 else _m(v)  # noqa: E731
    return "; ".join(f"{x['item']} {signed(float(x['subtotal_usd']))}" for x in lines) + f" = {_m(_tco(case, case.best))}"


def sensitivity(case: Case) -> Section:
    b = case.best
    t, lo, hi = case.throughput(b)
    rows: list[list[str]] = []
    if case.repick is not None:
        for f in (0.8, 1.2):
            d = case.repick(f)
            if d is None:
                rows.append([f"every price {f - 1:+.0%}", "nothing fits the budget", "-", "-"])
                continue
            same = all(d.get(k) == b.get(k) for k in ("gpu", "gpus_per_node", "nodes", "nic", "strategy"))
            rows.append([f"every price {f - 1:+.0%}", case.describe(d), f"{case.throughput(d)[0]:,.0f} {case.unit}",
                         "same pick" if same else f"changes: {case.throughput(d)[0] / t - 1:+.0%} {case.unit}"])
    runner = next(iter(closest_other_gpus(case, 1)), None)
    for label, v in (("throughput at the 80% range's low end", lo), ("throughput at the 80% range's high end", hi)):
        if v is None:
            continue
        one = case.unit.replace("samples", "sample").replace("tokens", "token")
        what = f"{v:,.0f} {case.unit}; {_m(b['cost_usd'] / v, True)} per {one}"
        if case.work:
            what += f"; {case.work / v / 3600:,.1f} h to train"
        verdict = "-"
        if runner is not None:
            rt = case.throughput(runner)[0]
            verdict = (f"{runner['gpu']} ({rt:,.0f} {case.unit} at its point estimate) would be faster" if rt > v
                       else f"still faster than {runner['gpu']} ({rt:,.0f})")
        rows.append([label, case.describe(b), what, verdict])
    if not case.cloud:
        whole = _tco(case, b)
        per_year = whole / case.years
        for u in (0.25, 0.5, 0.75, 1.0):
            own = per_year / (t * 3600.0 * HOURS_PER_YEAR * u) * 1e6
            what = f"owned {_m(own, True)} per 1e6 {case.unit.split('/')[0]}"
            verdict = "-"
            if case.rent:
                rent = case.rent["usd_per_hour"] / (case.rent["throughput"] * 3600.0) * 1e6
                what += f"; rented ({case.rent['name']}) {_m(rent, True)}"
                verdict = "buy" if own < rent else "rent"
            rows.append([f"utilisation {u:.0%}", case.describe(b), what, verdict])
        e = float(b.get("energy_usd_per_year") or 0.0)
        for f in (0.5, 2.0):
            total = whole + case.years * e * (f - 1.0)
            rows.append([f"electricity price x{f:g} (${case.site.electricity_usd_per_kwh * f:.3f}/kWh)",
                         case.describe(b), f"TCO {case.years:g} y {_m(total)}",
                         f"{total / whole - 1:+.1%} TCO"])
        lines = case.tco_lines(b) if case.tco_lines is not None else None
        colo = sum(float(x["subtotal_usd"]) for x in (lines or []) if x.get("part_id") == "colocation")
        for f in ((0.5, 2.0) if colo else ()):
            total = whole + colo * (f - 1.0)
            rows.append([f"colocation price x{f:g}", case.describe(b), f"TCO {case.years:g} y {_m(total)}",
                         f"{total / whole - 1:+.1%} TCO"])
    intro = ("How the recommendation moves when an input moves: prices re-solved at x0.8 and x1.2 (the same as the "
             "budget / 0.8 and / 1.2), throughput at its range's ends, the owned cluster's cost per unit of work by "
             "utilisation" + (" against renting the same work" if case.rent else "") + ", and the electricity and colocation "
             "prices.")
    return Section("sensitivity", "Sensitivity", intro, [(["input moved", "design", "result", "verdict"], rows)])


__all__ = ["__version__", "Case", "summary", "assumptions", "sensitivity", "tco", "closest_other_gpus"]
