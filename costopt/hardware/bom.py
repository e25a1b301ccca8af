"""Bill of materials: the line items of one design's capex, each with unit price, quantity and source.

The quantities are the ones cost.py priced (same arrays, same formulas), so for an owned design

    Σ subtotal_usd = capex_usd                      (to the cent; tests check it)

    GPUs             M·G  × GPU price
    chassis          M    × chassis price (the node without GPUs and NICs)
    NIC adapters     M·k  × adapter price            (none for one node)
    switches         whole boxes × (radix × price per port)   (cost.py: none for one node or two direct-
                                                       attached; one switch; or leaf-spine)
    cables / optics  links × price per link           (k direct; M·k one switch; M·k + leaf uplinks two tiers)
    rack-scale system  R_sys racks (GB200/GB300 NVL72), at 0: their price is in the GPU and tray lines
    racks            R    × rack price
    PDUs             R·p  × PDU price                  (p PDUs per rack)
    support          years × (hardware × % per year)  (only with --support-years)

A rented design (cloud catalog) has no capex: its bill lists the instances at their hourly price,
summing to the cluster's USD per hour.

`tco_lines` lists the whole cost of owning (cost.tco_terms) the same way, one line per term, summing to
the TCO: capex, storage, financing, colocation, electricity, support, staff, less resale.

Computed only for the designs a command shows (a handful), never for the whole design space.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from costopt.hardware.cost import Costs
from costopt.search.design_space import NO_NIC, DesignSpace
from costopt.hardware.catalog import Catalog
from costopt.hardware.rack_scale import is_rack_system, rack_phrase

BOM_FIELDS = ("item", "part_id", "unit_price_usd", "quantity", "subtotal_usd", "source", "price_date")
PRICE_AGE_WARN_DAYS = 365


@dataclass(frozen=True)
class BomLine:
    item: str
    part_id: str
    unit_price_usd: float
    quantity: float
    subtotal_usd: float
    source: str
    price_date: str

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in BOM_FIELDS}  # flat: asdict's deep copy is not needed
        q = d["quantity"]
        d["quantity"] = int(q) if float(q).is_integer() else q
        return d


def _line(item: str, part_id: str, unit: float, qty: float, source: str, price_date: str) -> BomLine:
    return BomLine(item, part_id, float(unit), float(qty), round(float(unit) * float(qty), 2), source, price_date)


def bill_of_materials(catalog: Catalog, space: DesignSpace, costs: Costs, i: int) -> list[BomLine]:
    """Line items of design `i` (an index into `space` / `costs`)."""
    g = space.gpus[int(space.gpu_idx[i])]
    ch = space.chassis[int(space.chassis_idx[i])]
    M = int(space.nodes[i])
    G = int(ch.gpu_slots)
    ni = int(space.nic_idx[i])
    nic = space.nics[ni] if ni != NO_NIC else None
    k = int(space.nics_per_node[i]) if nic is not None else 0
    if costs.rented is not None and bool(costs.rented[i]):
        return [_line(f"rented instance ({G} x {g.id}), per hour", ch.id, float(ch.usd_per_hour or 0.0), M,
                      ch.price_source, ch.price_date)]
    src = lambda e: f"{e.price_source}" + (" (estimate)" if "price_usd" in e.estimates else "")  # noqa: E731
    lines = [
        _line(f"GPU: {g.name}", g.id, g.price_usd, M * G, src(g), g.price_date),
        _line(f"chassis: {ch.name} (without GPUs and NICs)", ch.id, ch.price_usd, M, src(ch), ch.price_date),
    ]
    if is_rack_system(ch):  # the rack the trays make up (rack_scale.py): priced in the GPU and tray lines
        racks_sys = float(costs.system_racks[i]) if costs.system_racks is not None else 0.0
        lines.append(_line(f"rack-scale system: {rack_phrase(ch, g.id, int(racks_sys))}; priced in the GPU and "
                           "compute-tray lines", f"{ch.id}-rack", 0.0, racks_sys, src(ch), ch.price_date))
    if nic is not None and k > 0:
        lines.append(_line(f"NIC adapter: {nic.name}", nic.id, nic.price_usd, M * k, src(nic), nic.price_date))
        switches = float(costs.switches[i]) if costs.switches is not None else 0.0
        if switches > 0:
            est = " (estimate)" if "switch_port_price_usd" in nic.estimates else ""
            tier = "one switch" if switches == 1 else "leaf-spine"
            lines.append(_line(f"switch: {nic.switch_ports}-port {nic.id} ({tier}; a box = {nic.switch_ports} ports x "
                               f"${nic.switch_port_price_usd:,.0f})", f"{nic.id}-switch",
                               nic.switch_ports * nic.switch_port_price_usd, switches, nic.price_source + est,
                               nic.price_date))
        links = float(costs.links[i]) if costs.links is not None else 0.0
        if links > 0:
            est = " (estimate)" if "cable_price_usd" in nic.estimates else ""
            how = "direct-attached, node to node" if switches == 0 else "per link"
            lines.append(_line(f"cable / optics {how} for {nic.id}", nic.id, nic.cable_price_usd, links,
                               nic.cable_source + est, nic.cable_price_date))
    fac = catalog.facility
    if costs.node_kw is not None and costs.rack_kw is not None and costs.node_kw[i] > costs.rack_kw[i]:
        lines.append(_line(f"REFUSED: one node draws {float(costs.node_kw[i]):,.4g} kW, over the "
                           f"{float(costs.rack_kw[i]):g} kW rack rating (facility rack_power_kw / rack_power_kw_liquid)",
                           "rack-rating", 0.0, 0.0, fac.network_source, fac.price_date))
    racks = float(costs.racks[i]) if costs.racks is not None else 0.0
    if racks > 0:
        est = lambda f: " (estimate)" if f in fac.estimates else ""  # noqa: E731
        rkw = float(costs.rack_kw[i]) if costs.rack_kw is not None else fac.rack_power_kw
        kind = "liquid-cooled" if rkw != fac.rack_power_kw else "air-cooled"
        what = (f"rack for the scale-out switches ({fac.rack_units_per_rack} U)" if is_rack_system(ch) else
                f"rack ({fac.rack_units_per_rack} U, {kind}, {rkw:g} kW per rack)")
        lines.append(_line(what, "rack",
                           fac.rack_price_usd, racks, fac.price_source + est("rack_price_usd"), fac.price_date))
        if fac.pdus_per_rack:
            lines.append(_line("power distribution unit (PDU)", "pdu", fac.pdu_price_usd, racks * fac.pdus_per_rack,
                               fac.price_source + est("pdu_price_usd"), fac.price_date))
    if costs.support_years and costs.support_usd_per_year is not None:
        per_year = float(costs.support_usd_per_year[i])
        if per_year > 0:
            lines.append(_line(f"hardware support, {fac.support_pct_per_year:g}% of hardware per year", "support",
                               per_year, costs.support_years, fac.price_source, fac.price_date))
    return lines


_TCO_SOURCES = {
    "storage": "storage $ per usable TB: Pure Storage FlashBlade//E $0.20/GB (2023); TB per GPU an estimate",
    "financing": "cost of capital: estimate inside the 5.5-7.5% data-centre capitalisation rates (CBRE H2 2018)",
    "colocation": "colocation $/kW-month: CBRE North America Data Center Trends H2 2025 ($194.95)",
    "electricity": "electricity: EIA 2025 US industrial $/kWh x PUE x average draw (docs/sources.md §6)",
    "support": "hardware support % per year: estimate inside 5-7% maintenance (datastoragereport.com, 2026)",
    "staff": "operations staff: estimate, 1 FTE per 250 processors (CTWatch 2006) at $200,000 a year",
    "resale": "resale: 25-35% after 36 months (GPU TCO analysis, v2-pseo-ai.pages.dev, 2026), straight line",
}


# the [site] fields behind each whole-cost line (a line whose field a run's option set says so: site_terms.py)
_TCO_FIELDS = {
    "storage": ("storage_usd_per_tb", "storage_tb"), "financing": ("cost_of_capital_pct",),
    "colocation": ("colocation_usd_per_kw_month",), "electricity": ("electricity_usd_per_kwh", "pue", "liquid_pue"),
    "support": ("support_pct_per_year",), "staff": ("staff_usd_per_gpu_year",), "resale": ("residual_pct_at_3_years",),
}


def _tco_source(site, term: str, date: str) -> tuple[str, str]:
    """(source, date) of a whole-cost line: the catalog's, or the options given on the command line."""
    given = [f for f in _TCO_FIELDS[term] if f in (getattr(site, "given_on_command_line", None) or [])]
    if not given:
        return _TCO_SOURCES[term], date
    from costopt.hardware.site_terms import flag

    opts = ", ".join(f"{flag(f)} {getattr(site, f):g}" for f in given)
    return f"given on the command line ({opts}); the catalog's figure: {_TCO_SOURCES[term]}", ""


def tco_lines(catalog: Catalog, costs: Costs, i: int, years: float, utilization: float = 1.0) -> list[dict[str, Any]]:
    """The whole cost of owning design `i` over `years` (cost.tco_terms), one line per term, in BOM_FIELDS;
    the lines sum to the whole cost (to the cent, but for rounding each line to cents). Sources: docs/sources.md §11 (and §6 for electricity)."""
    from costopt.hardware.cost import tco_breakdown

    site = catalog.site
    t = tco_breakdown(costs, i, years, utilization)
    kw = float(costs.power_kw[i])
    gpus = float(costs.gpus[i]) if costs.gpus is not None else 0.0
    hw = float(costs.hardware_usd[i]) if costs.hardware_usd is not None else t["capex"]
    d = site.tco_date
    lines = [_line("capex (the bill of materials)", "capex", t["capex"], 1, "bill of materials above", "")]
    if t["storage"]:
        lines.append(_line(f"storage, {t['storage_tb']:,.4g} usable TB", "storage", site.storage_usd_per_tb,
                           t["storage_tb"], *_tco_source(site, "storage", d)))
    if t["financing"]:
        lines.append(_line(f"financing: capex + storage at {site.cost_of_capital_pct:g}% a year over {years:g} years",
                           "financing", t["financing"], 1, *_tco_source(site, "financing", d)))
    if t["colocation"]:
        lines.append(_line(f"colocation, {kw:,.4g} kW x 12 months x {years:g} years", "colocation",
                           site.colocation_usd_per_kw_month, kw * 12 * years, *_tco_source(site, "colocation", d)))
    lines.append(_line(f"electricity at {utilization:.0%} use, per year x {years:g} years", "electricity",
                       float(costs.energy_usd_per_year[i]) * utilization, years, *_tco_source(site, "electricity", site.date)))
    if t["support"]:
        lines.append(_line(f"hardware support, {site.support_pct_per_year:g}% of hardware per year", "support",
                           t["support"] / max(years, 1e-12), years, *_tco_source(site, "support", d)))
    if t["staff"]:
        lines.append(_line(f"operations staff, per GPU-year ({gpus:,.0f} GPUs x {years:g} years)", "staff",
                           site.staff_usd_per_gpu_year, gpus * years, *_tco_source(site, "staff", d)))
    if t["resale"]:
        frac = -t["resale"] / hw if hw else 0.0
        lines.append(_line(f"resale after {years:g} years ({frac:.0%} of the hardware)", "resale", -hw * frac, 1,
                           *_tco_source(site, "resale", d)))
    return [ln.to_dict() for ln in lines]


def bom_dicts(catalog: Catalog, space: DesignSpace, costs: Costs, i: int) -> list[dict[str, Any]]:
    return [line.to_dict() for line in bill_of_materials(catalog, space, costs, i)]


def parse_price_date(text: str) -> date | None:
    """'2025', '2025-03', '2025-03-03' -> the first day of that period; None when unreadable."""
    parts = text.strip()[:10].split("-")
    try:
        y = int(parts[0])
        m = int(parts[1]) if len(parts) > 1 else 1
        d = int(parts[2]) if len(parts) > 2 else 1
        return date(y, m, d)
    except (ValueError, IndexError):
        return None


def oldest_price(lines: list[dict[str, Any]], today: date) -> dict[str, Any]:
    """The oldest price date among a bill's lines, its age in days and a warning when over a year."""
    dated = [(parse_price_date(str(ln["price_date"])), ln) for ln in lines]
    dated = [(d, ln) for d, ln in dated if d is not None]
    if not dated:
        return {"oldest_price_date": None, "oldest_price_item": None, "price_age_days": None, "warning": ""}
    d, ln = min(dated, key=lambda t: (t[0], t[1]["part_id"]))
    age = (today - d).days
    warn = ""
    if age > PRICE_AGE_WARN_DAYS:
        warn = (f"the oldest price in this design ({ln['part_id']}: {ln['price_date']}) is {age / 365.25:.1f} years "
                f"old; ask a vendor for a current quote")
    return {"oldest_price_date": ln["price_date"], "oldest_price_item": ln["part_id"], "price_age_days": age,
            "warning": warn}


__all__ = ["BomLine", "BOM_FIELDS", "bill_of_materials", "bom_dicts", "oldest_price", "parse_price_date", "tco_lines"]
