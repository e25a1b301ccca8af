"""Cost, power and space of every design, vectorized.

    node price   = chassis (non-GPU part) + G × GPU + k × NIC adapter    (k NICs per node; none for one node)
    node ports   n = M·k; P ports per switch (radix); a switch box costs P × the per-port price
    fabric       2 nodes (facility.direct_attach_two_nodes): cabled port to port, k links, no switch
                 n ≤ P: one switch; links n
                 n > P: two-tier leaf-spine at oversubscription o (down:up): a leaf gives d = ⌊P·o/(1+o)⌋ ports
                   to nodes and u = P − d up; leaves L = ⌈n / d⌉, spines S = ⌈L·u / P⌉, switches L + S,
                   links n + L·u; buildable while L ≤ P (a spine reaches every leaf)
    switch ports = switches × P     (whole boxes; the ports a design leaves free are bought too)
    power_w      = M × (G × TDP + chassis overhead + k × NIC) + switches × P × watts per port
    rack rating  = facility.rack_power_kw (air), or rack_power_kw_liquid for nodes whose GPUs need liquid
                   cooling (TDP > site.liquid_above_tdp_w); a node over its rack's rating is refused
                   (buildable False, said in the BOM)
    nodes/rack   = max(1, min(⌊RU per rack / node RU⌋, ⌊rack kW / node kW⌋))
    racks        = max(⌈M / nodes per rack⌉, ⌈rack units / RU per rack⌉, ⌈power_kW / rack kW⌉)
    rack-scale   a GB200/GB300 NVL72 system (hardware/rack_scale.py): ⌈M / u⌉ racks of its own (u trays each),
                 node kW = rack kW / u, rack units = its racks × their height, no facility rack or PDU for them
                 (in the tray price) and no rack rating to pass; racks = ⌈switch RU / RU per rack⌉ for the
                 switches only; liquid PUE (liquid cooling required)
    hardware     = M × node price + switches × box price + links × price per link (cable or fibre +
                   transceivers) + racks × (rack + PDUs per rack × PDU)
    support      = support years × round(hardware × support % per year / 100, cents)
    capex        = hardware + support          (costopt/hardware/bom.py lists the same items, summing to capex)
    electricity  = power_kW × average draw × PUE_d × $/kWh × 8766 h per year at full use; PUE_d = the site's
                   PUE, or its liquid PUE for nodes whose GPUs need liquid cooling (TDP > liquid_above_tdp_w)

The whole cost of owning over Y years (`tco_terms`; each rate a catalog [site] field with its source),
the owned cluster busy a fraction u of the time:

    storage      S = usable TB × $/TB                     (TB: site.storage_tb, else TB per GPU × GPUs)
    financing    F = Y·(C+S)·r / (1 − (1+r)^−Y) − (C+S)   (the purchase paid by a loan over Y years at rate r;
                                                           F = 0 when r = 0)
    colocation   L = Y × 12 × $/kW-month × power_kW       (contracted IT power; 0 for an own facility)
    electricity  P = Y × u × electricity per year
    support      H = max(0, Y − support years in capex) × hardware × support % / 100
    staff        W = Y × GPUs × $ per GPU-year
    resale       R = hardware × max(0, 1 − Y·(1 − ρ₃)/3)  (straight line through ρ₃ = residual % at 3 years)
    TCO(Y, u)    = C + S + F + L + P + H + W − R

Rented nodes (cloud catalogs: a chassis with `usd_per_hour`, see catalog.py) are not bought:

    usd_per_hour = M × instance price per hour         (GPUs, network, power all inside it)
    capex = 0, electricity = 0, switch ports = 0, rack units = 0; power_kW stays (nameplate, for reference)

`evaluate_costs` leaves a rented design's cost at its USD per hour; `price_on_basis` then puts every
design on one stated basis (`CostBasis`, below). This module is the one place that says what a cost
means; every command (solve, compare, export, report, rent-vs-buy, multi-job) goes through it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from costopt.hardware.catalog import Facility, Site
from costopt.hardware.rack_scale import rack_arrays
from costopt.core.checks import non_negative, positive
from costopt.search.design_space import NO_NIC, DesignSpace
from costopt.core.errors import InputError
from costopt.core.units import HOURS_PER_YEAR


@dataclass
class Costs:
    capex_usd: np.ndarray
    energy_usd_per_year: np.ndarray
    cost_usd: np.ndarray  # capex, or TCO over `years` when years > 0
    power_kw: np.ndarray
    rack_units: np.ndarray
    switch_ports: np.ndarray
    buildable: np.ndarray  # False when the node count exceeds a two-tier fabric, or a node its rack's rating
    usd_per_hour: np.ndarray | None = None  # rented designs: price per hour of the whole cluster; 0 when owned
    rented: np.ndarray | None = None  # bool: the design's nodes are rented cloud instances
    spend_usd: np.ndarray | None = None  # what a budget limits when not cost_usd (owned designs on a horizon: capex)
    links: np.ndarray | None = None  # network links (cables / fibre + transceivers)
    racks: np.ndarray | None = None  # racks, each with its PDUs
    support_usd_per_year: np.ndarray | None = None  # support contract per year (whole cents)
    support_years: float = 0.0
    hardware_usd: np.ndarray | None = None  # capex without the support bought up front
    gpus: np.ndarray | None = None  # GPUs per design (M·G)
    colocation_usd_per_year: np.ndarray | None = None  # whole cost of owning, per year (0 when rented)
    support_tco_usd_per_year: np.ndarray | None = None
    staff_usd_per_year: np.ndarray | None = None
    storage_usd: np.ndarray | None = None  # one-off, bought with the cluster
    storage_tb: np.ndarray | None = None
    capital_rate: float = 0.0  # cost of capital per year (fraction)
    residual_at_3_years: float = 0.0  # fraction of the hardware price
    min_rental_hours: np.ndarray | None = None  # rented designs: the shortest rental billed (0: none)
    rental_increment_hours: np.ndarray | None = None  # rented designs: rentals billed in steps of this (0: continuous)
    switches: np.ndarray | None = None  # whole switch boxes (0: one node, or two nodes direct-attached)
    rack_kw: np.ndarray | None = None  # the rating of the design's racks (air or liquid)
    node_kw: np.ndarray | None = None  # one node's nameplate power
    system_racks: np.ndarray | None = None  # racks of a rack-scale system (priced in its trays; rack_scale.py)


def evaluate_costs(space: DesignSpace, site: Site, facility: Facility | None = None,
                   support_years: float = 0.0) -> Costs:
    """Capex, electricity, power, space of every design; cost = capex (owned) or USD per hour (rented).
    Every other basis (TCO over years, per job, per hour amortised) is `price_on_basis`, the one place
    that rule lives. `facility` (racks,
    PDUs, support; default: catalog.Facility's stated defaults) and `support_years` complete capex."""
    non_negative("support years", support_years)
    fac = facility if facility is not None else Facility()
    gpu_price = np.array([g.price_usd for g in space.gpus])
    gpu_tdp = np.array([g.tdp_w for g in space.gpus])
    ch_price = np.array([c.price_usd for c in space.chassis])
    ch_power = np.array([c.power_overhead_w for c in space.chassis])
    ch_ru = np.array([c.rack_units for c in space.chassis], dtype=np.float64)
    # trailing entry = "no NIC" for single-node designs
    nic_price = np.array([n.price_usd for n in space.nics] + [0.0])
    nic_power = np.array([n.power_w for n in space.nics] + [0.0])
    port_price = np.array([n.switch_port_price_usd for n in space.nics] + [0.0])
    ports_per_switch = np.array([n.switch_ports for n in space.nics] + [1], dtype=np.float64)
    link_price = np.array([n.cable_price_usd for n in space.nics] + [0.0])

    ni = np.where(space.nic_idx == NO_NIC, len(space.nics), space.nic_idx)
    G = space.gpus_per_node.astype(np.float64)
    M = space.nodes.astype(np.float64)
    P = ports_per_switch[ni]
    k = space.nics_per_node.astype(np.float64)
    n = M * k  # node ports

    node_price = ch_price[space.chassis_idx] + G * gpu_price[space.gpu_idx] + k * nic_price[ni]
    multi = M > 1
    direct = multi & (M == 2) & bool(fac.direct_attach_two_nodes)
    one = multi & ~direct & (n <= P)
    two = multi & ~direct & (n > P)
    o = float(fac.oversubscription)
    down = np.maximum(1.0, np.floor(P * o / (1.0 + o)))
    up = P - down
    leaves = np.where(two, np.ceil(n / down), 0.0)
    spines = np.where(two, np.ceil(leaves * up / P), 0.0)
    switches = np.where(one, 1.0, leaves + spines)
    links = np.where(direct, k, np.where(one, n, np.where(two, n + leaves * up, 0.0)))
    ports = switches * P
    node_kw = (G * gpu_tdp[space.gpu_idx] + ch_power[space.chassis_idx] + k * nic_power[ni]) / 1000.0
    # a rack-scale system (rack_scale.py): ⌈M/u⌉ racks of its own, each P_rack kW (NICs inside) and U_rack units,
    # priced in its trays; facility racks only for the switches
    rs = rack_arrays(space)
    sys_racks = np.where(rs["rack"], np.ceil(M / rs["nodes_per_rack"]), 0.0)
    node_kw = np.where(rs["rack"], rs["rack_kw"] / rs["nodes_per_rack"], node_kw)
    power_kw = M * node_kw + switches * P * fac.switch_watts_per_port / 1000.0
    rack_units = M * ch_ru[space.chassis_idx] + switches * fac.switch_rack_units
    rack_units = np.where(rs["rack"], sys_racks * rs["rack_units"] + switches * fac.switch_rack_units, rack_units)
    liquid = (gpu_tdp[space.gpu_idx] > site.liquid_above_tdp_w) | rs["liquid"]  # parts that need liquid cooling
    rack_kw = np.where(rs["rack"], rs["rack_kw"], np.where(liquid, fac.rack_power_kw_liquid, fac.rack_power_kw))
    fits_rack = rs["rack"] | (node_kw <= rack_kw)
    per_rack = np.maximum(1.0, np.minimum(np.floor(fac.rack_units_per_rack / ch_ru[space.chassis_idx]),
                                          np.floor(rack_kw / node_kw)))
    racks = np.maximum(np.maximum(np.ceil(M / per_rack), np.ceil(rack_units / fac.rack_units_per_rack)),
                       np.ceil(power_kw / rack_kw - 1e-9))
    switch_racks = np.ceil(switches * fac.switch_rack_units / fac.rack_units_per_rack - 1e-9)
    racks = np.where(rs["rack"], switch_racks, racks)
    hardware = (M * node_price + switches * P * port_price[ni] + links * link_price[ni]
                + racks * (fac.rack_price_usd + fac.pdus_per_rack * fac.pdu_price_usd))
    support = np.round(hardware * fac.support_pct_per_year / 100.0, 2)
    capex = hardware + support_years * support
    pue = np.where(liquid, site.liquid_pue, site.pue)
    energy = power_kw * site.average_draw_fraction * pue * site.electricity_usd_per_kwh * HOURS_PER_YEAR
    gpus = M * G
    colo = (power_kw * site.colocation_usd_per_kw_month * 12.0 if site.facility == "colocation"
            else np.zeros_like(power_kw))
    support_tco = hardware * site.support_pct_per_year / 100.0
    staff = gpus * site.staff_usd_per_gpu_year
    storage_tb = np.full_like(gpus, float(site.storage_tb)) if site.storage_tb else gpus * site.storage_tb_per_gpu
    storage = storage_tb * site.storage_usd_per_tb
    cost = capex
    buildable = ((M <= 1) | direct | one | (leaves <= P)) & fits_rack
    hourly = np.array([c.usd_per_hour or 0.0 for c in space.chassis])[space.chassis_idx]
    rented = hourly > 0
    min_rent = np.array([c.min_rental_hours if c.usd_per_hour else 0.0 for c in space.chassis])[space.chassis_idx]
    rent_step = np.array([c.rental_increment_hours if c.usd_per_hour else 0.0 for c in space.chassis])[space.chassis_idx]
    usd_per_hour = M * hourly
    if rented.any():
        zero = np.zeros_like(capex)
        capex = np.where(rented, zero, capex)
        energy = np.where(rented, zero, energy)
        cost = np.where(rented, usd_per_hour, cost)
        ports = np.where(rented, zero, ports)
        rack_units = np.where(rented, zero, rack_units)
        links = np.where(rented, zero, links)
        racks = np.where(rented, zero, racks)
        support = np.where(rented, zero, support)
        colo, support_tco, staff = (np.where(rented, zero, a) for a in (colo, support_tco, staff))
        storage, storage_tb, hardware = (np.where(rented, zero, a) for a in (storage, storage_tb, hardware))
        switches = np.where(rented, zero, switches)
        buildable = buildable | rented
    return Costs(capex, energy, cost, power_kw, rack_units, ports, buildable, usd_per_hour, rented, None, links, racks,
                 support, float(support_years), hardware, gpus, colo, support_tco, staff, storage, storage_tb,
                 site.cost_of_capital_pct / 100.0, site.residual_pct_at_3_years / 100.0, min_rent, rent_step,
                 switches, rack_kw, node_kw, sys_racks)


TCO_TERMS = ("capex", "storage", "financing", "colocation", "electricity", "support", "staff", "resale")


def resale_share(years: float, residual_at_3_years: float) -> float:
    """The share of the hardware price resold after `years` (module docstring, R): a straight line through
    `residual_at_3_years` (a fraction) at 3 years, never below 0."""
    return max(0.0, 1.0 - float(years) * (1.0 - residual_at_3_years) / 3.0)


def tco_terms(costs: Costs, years: float, utilization: float = 1.0) -> dict[str, np.ndarray]:
    """The whole cost of owning each design over `years` at `utilization` (module docstring: C, S, F, L,
    P, H, W, R), term by term, and their `total` (resale counted negative). Rented designs: all 0."""
    n = len(costs.capex_usd)
    zero = np.zeros(n)
    get = lambda a: zero if a is None else a  # noqa: E731
    Y = float(years)
    C, S = costs.capex_usd, get(costs.storage_usd)
    r = costs.capital_rate
    if r > 0 and Y > 0:
        financing = Y * (C + S) * r / (1.0 - (1.0 + r) ** -Y) - (C + S)
    else:
        financing = zero
    bought = costs.support_years if costs.support_usd_per_year is not None else 0.0
    hw = get(costs.hardware_usd)
    out = {
        "capex": C, "storage": S, "financing": financing,
        "colocation": Y * get(costs.colocation_usd_per_year),
        "electricity": Y * utilization * costs.energy_usd_per_year,
        "support": max(0.0, Y - bought) * get(costs.support_tco_usd_per_year),
        "staff": Y * get(costs.staff_usd_per_year),
        "resale": -hw * resale_share(Y, costs.residual_at_3_years),
    }
    out["total"] = sum(out[k] for k in TCO_TERMS)
    return out


# ------------------------------------------------------------------------------------------------
# What a cost means: one basis for every command
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostBasis:
    """The stated basis of `cost_usd`, the same for solve, compare, export, report and multi-job.

    Horizon h (hours of use): `hours`, or per job the design's own time to train,
    h_d = samples / τ_d / 3600 (τ_d its throughput in samples/s); no horizon when neither is given.

        rented d:  cost = usd_per_hour_d × billed(h)    (no horizon: USD per hour; billed(h) = `billed_hours`,
                   at least the provider's minimum term, in its billing steps)
        owned d:   cost = capex_d                        (a purchase)
                   cost = TCO_d(tco_years, 1)            (with `tco_years`: the whole cost of owning, `tco_terms`)
        owned d, amortised on the horizon (`amortize_years` Y and `utilization` u, used when owned and
        rented designs are compared):
                   cost = h × (TCO_d(Y, 0) / (Y × 8766 × u) + E_d / 8766)
        i.e. the share of the whole cost of owning (without electricity) one hour of work uses when the
        cluster is busy a fraction u of Y years, plus that hour's electricity (E_d per year at full use).
        A budget then still limits the purchase: spend = capex_d.
    """

    tco_years: float = 0.0
    hours: float | None = None
    samples: float | None = None
    amortize_years: float | None = None
    utilization: float = 1.0

    def __post_init__(self) -> None:
        non_negative("TCO years", self.tco_years)
        positive("hours", self.hours)
        positive("samples to train (epochs x dataset size)", self.samples)
        positive("years (amortisation)", self.amortize_years)
        if not (0 < self.utilization <= 1):
            raise InputError(f"utilization must be in (0, 1], got {self.utilization}", field="utilization")
        if self.amortize_years is not None and self.horizon is None:
            raise InputError("amortising a purchase needs a horizon: --hours, or --epochs with --dataset-size", field="hours")
        if self.amortize_years is not None and self.tco_years:
            raise InputError("--tco-years does not apply on a horizon: owned designs are amortised over --years "
                             "at --utilization there", field="tco_years")

    @property
    def horizon(self) -> str | None:
        """'hours', 'job' or None."""
        if self.hours is not None:
            return "hours"
        if self.samples is not None:
            return "job"
        return None

    def label(self, rented: bool) -> str:
        """What `cost_usd` means for a rented or an owned design under this basis."""
        h = self.horizon
        if rented:
            if h == "hours":
                return f"USD for {self.hours:g} h of rent"
            if h == "job":
                return "USD per training job (rent x time to train)"
            return "USD per hour of rent"
        if self.amortize_years is not None:
            share = f"whole cost of owning over {self.amortize_years:g} years at {self.utilization:.0%} use"
            if h == "hours":
                return f"USD for {self.hours:g} h of use ({share})"
            return f"USD per training job ({share})"
        if self.tco_years:
            return (f"USD whole cost of owning over {self.tco_years:g} years (capex, storage, financing, "
                    f"colocation, electricity, support, staff, less resale)")
        return "USD capex (one-off purchase)"

    def short(self, rented: bool) -> str:
        """A short code of `label` for table cells and CSV columns."""
        h = self.horizon
        if rented:
            if h == "hours":
                return f"rent_{self.hours:g}h"
            return "rent_per_job" if h == "job" else "rent_per_hour"
        if self.amortize_years is not None:
            return f"own_{self.hours:g}h" if h == "hours" else "own_per_job"
        return f"tco_{self.tco_years:g}y" if self.tco_years else "capex"


def horizon_hours(basis: CostBasis, throughput: np.ndarray) -> np.ndarray | None:
    """Hours of use each design is priced for (None: no horizon)."""
    if basis.hours is not None:
        return np.full(len(throughput), float(basis.hours))
    if basis.samples is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            return basis.samples / throughput / 3600.0
    return None


def billed_hours(hours: np.ndarray, min_hours: np.ndarray | None, step_hours: np.ndarray | None) -> np.ndarray:
    """Hours a rental of `hours` is billed for, by the provider's terms (per design):

        billed = max(min_hours, ⌈hours / step⌉ · step)      (step > 0: e.g. Capacity Blocks, whole days)
        billed = max(min_hours, hours)                       (step = 0: billed by the second)

    A rental is never billed for less than its minimum term: 69 seconds of a 24-hour Capacity Block
    cost 24 hours. (1e-9 keeps an exact multiple of the step from rounding up by float noise.)"""
    h = np.asarray(hours, dtype=np.float64)
    if step_hours is None and min_hours is None:
        return h
    step = np.zeros_like(h) if step_hours is None else np.asarray(step_hours, dtype=np.float64)
    lo = np.zeros_like(h) if min_hours is None else np.asarray(min_hours, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        stepped = np.where(step > 0, np.ceil(h / np.where(step > 0, step, 1.0) - 1e-9) * step, h)
    return np.maximum(stepped, lo)


def tco_breakdown(costs: Costs, i: int, years: float, utilization: float = 1.0) -> dict[str, float]:
    """`tco_terms` of one design (index `i`) as floats, with `total` and `storage_tb`."""
    t = tco_terms(costs, years, utilization)
    out = {k: float(v[i]) for k, v in t.items()}
    out["storage_tb"] = float(costs.storage_tb[i]) if costs.storage_tb is not None else 0.0
    return out


def price_on_basis(costs: Costs, throughput: np.ndarray, basis: CostBasis) -> Costs:
    """`costs` (from `evaluate_costs`) with `cost_usd` (and `spend_usd`) on `basis`; see `CostBasis`."""
    h = horizon_hours(basis, throughput)
    owned_cost = tco_terms(costs, basis.tco_years)["total"] if basis.tco_years else costs.capex_usd
    spend = None
    if basis.amortize_years is not None and h is not None:
        busy_hours = basis.amortize_years * HOURS_PER_YEAR * basis.utilization
        fixed = tco_terms(costs, basis.amortize_years, 0.0)["total"]  # every term but the electricity of use
        owned_cost = h * (fixed / busy_hours + costs.energy_usd_per_year / HOURS_PER_YEAR)
        spend = costs.capex_usd.copy()
    rented = costs.rented if costs.rented is not None else np.zeros(len(owned_cost), dtype=bool)
    hourly = costs.usd_per_hour if costs.usd_per_hour is not None else np.zeros(len(owned_cost))
    # rent over a horizon: billed by the provider's terms (never less than the minimum term); per hour: the rate
    rent = hourly * (billed_hours(h, costs.min_rental_hours, costs.rental_increment_hours) if h is not None else 1.0)
    cost = np.where(rented, rent, owned_cost)
    if spend is not None:
        spend = np.where(rented, rent, spend)
    return replace(costs, cost_usd=cost, spend_usd=spend)


def within_budget(costs: Costs, budget: float | None) -> np.ndarray:
    """Designs a budget allows: cost_usd ≤ budget, or the purchase ≤ budget for owned designs priced
    on a horizon (the budget buys the cluster; the horizon cost is what it is compared on)."""
    n = len(costs.cost_usd)
    if budget is None:
        return np.ones(n, dtype=bool)
    spend = costs.spend_usd if costs.spend_usd is not None else costs.cost_usd
    return spend <= budget


def take_costs(costs: Costs, idx: np.ndarray) -> Costs:
    """The costs of the designs `idx` (a subset of the space `costs` was evaluated on, in that order):
    every per-design array field taken, the scalars kept."""
    n = len(costs.cost_usd)
    return replace(costs, **{f.name: getattr(costs, f.name)[idx] for f in fields(costs)
                             if isinstance(getattr(costs, f.name), np.ndarray) and getattr(costs, f.name).shape[:1] == (n,)})
