"""Cost, power and space of every design, vectorized.

    node price   = chassis (non-GPU part) + G × GPU + k × NIC adapter    (k NICs per node; none for one node)
    node ports   = M·k
    switch ports = M·k               when M·k ≤ P  (one switch of P ports)
                 = 3·M·k             when P < M·k ≤ P²/2 (two-tier non-blocking leaf-spine: every
                                      node port needs a leaf uplink and a spine port)
                   beyond P²/2 the design is not buildable with that switch family
    links        = M·k (one tier) or 2·M·k (two tiers: node-leaf and leaf-spine); 0 for one node
    power_w      = M × (G × TDP + chassis overhead + k × NIC)
    nodes/rack   = max(1, min(⌊RU per rack / node RU⌋, ⌊rack kW / node kW⌋))
    racks        = max(⌈M / nodes per rack⌉, ⌈rack units / RU per rack⌉)   (each with its PDUs)
    hardware     = M × node price + switch ports × price per port + links × price per link (cable or
                   fibre + transceivers) + racks × (rack + PDUs per rack × PDU)
    support      = support years × round(hardware × support % per year / 100, cents)
    capex        = hardware + support          (costopt/bom.py lists the same items, summing to capex)
    TCO(years)   = capex + years × power_kW × average draw × PUE × $/kWh × 8766 h

Rented nodes (cloud catalogs: a chassis with `usd_per_hour`, see catalog.py) are not bought:

    usd_per_hour = M × instance price per hour         (GPUs, network, power all inside it)
    cost         = usd_per_hour × hours                (hours = None: cost is USD per hour)
    capex = 0, electricity = 0, switch ports = 0, rack units = 0; power_kW stays (nameplate, for reference)

Owned designs are priced exactly as above whatever `hours` is; their `usd_per_hour` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .catalog import Facility, Site
from .checks import non_negative, positive
from .design_space import NO_NIC, DesignSpace
from .units import HOURS_PER_YEAR


@dataclass
class Costs:
    capex_usd: np.ndarray
    energy_usd_per_year: np.ndarray
    cost_usd: np.ndarray  # capex, or TCO over `years` when years > 0
    power_kw: np.ndarray
    rack_units: np.ndarray
    switch_ports: np.ndarray
    buildable: np.ndarray  # False when the node count exceeds a two-tier fabric of that switch
    usd_per_hour: np.ndarray | None = None  # rented designs: price per hour of the whole cluster; 0 when owned
    rented: np.ndarray | None = None  # bool: the design's nodes are rented cloud instances
    links: np.ndarray | None = None  # network links (cables / fibre + transceivers)
    racks: np.ndarray | None = None  # racks, each with its PDUs
    support_usd_per_year: np.ndarray | None = None  # support contract, per year (cents)
    support_years: float = 0.0


def evaluate_costs(space: DesignSpace, site: Site, tco_years: float = 0.0, hours: float | None = None,
                   facility: Facility | None = None, support_years: float = 0.0) -> Costs:
    non_negative("TCO years", tco_years)
    non_negative("support years", support_years)
    positive("hours", hours)
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
    node_ports = M * k

    node_price = ch_price[space.chassis_idx] + G * gpu_price[space.gpu_idx] + k * nic_price[ni]
    one_tier = node_ports <= P
    ports = np.where(M > 1, np.where(one_tier, node_ports, 3.0 * node_ports), 0.0)
    switches = np.where(M > 1, np.where(one_tier, 1.0, np.ceil(ports / P)), 0.0)
    links = np.where(M > 1, np.where(one_tier, node_ports, 2.0 * node_ports), 0.0)
    node_kw = (G * gpu_tdp[space.gpu_idx] + ch_power[space.chassis_idx] + k * nic_power[ni]) / 1000.0
    power_kw = M * node_kw
    rack_units = M * ch_ru[space.chassis_idx] + switches  # one rack unit per switch
    per_rack = np.maximum(1.0, np.minimum(np.floor(fac.rack_units_per_rack / ch_ru[space.chassis_idx]),
                                          np.floor(fac.rack_power_kw / node_kw)))
    racks = np.maximum(np.ceil(M / per_rack), np.ceil(rack_units / fac.rack_units_per_rack))
    hardware = (M * node_price + ports * port_price[ni] + links * link_price[ni]
                + racks * (fac.rack_price_usd + fac.pdus_per_rack * fac.pdu_price_usd))
    support = np.round(hardware * fac.support_pct_per_year / 100.0, 2)
    capex = hardware + support_years * support
    energy = power_kw * site.average_draw_fraction * site.pue * site.electricity_usd_per_kwh * HOURS_PER_YEAR
    cost = capex + tco_years * energy
    buildable = (M <= 1) | (node_ports <= P * P / 2.0)
    hourly = np.array([c.usd_per_hour or 0.0 for c in space.chassis])[space.chassis_idx]
    rented = hourly > 0
    usd_per_hour = M * hourly
    if rented.any():
        zero = np.zeros_like(capex)
        capex = np.where(rented, zero, capex)
        energy = np.where(rented, zero, energy)
        cost = np.where(rented, usd_per_hour * (1.0 if hours is None else float(hours)), cost)
        ports = np.where(rented, zero, ports)
        rack_units = np.where(rented, zero, rack_units)
        links = np.where(rented, zero, links)
        racks = np.where(rented, zero, racks)
        support = np.where(rented, zero, support)
        buildable = buildable | rented
    return Costs(capex, energy, cost, power_kw, rack_units, ports, buildable, usd_per_hour, rented, links, racks,
                 support, float(support_years))
