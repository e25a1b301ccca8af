"""Rack-scale systems (GB200 / GB300 NVL72): an NVLink domain larger than a node, sold as whole racks.

A node is what one operating system runs: for an NVL72 system one compute tray of G = 4 GPUs. The catalog's
chassis says what differs from an 8-GPU HGX server (catalog_schema.Chassis):

    D = nvlink_domain_gpus      GPUs that reach each other over NVLink through the NVLink switch trays, at the
                                GPU's own NVLink rate (gpu_link_gbs per direction), across trays: 72
                                (None: D = G, the node, as every HGX/DGX server)
    u = rack_system_nodes       nodes (trays) per rack; the rack is the unit of purchase, so a design has
                                M = u·r nodes for r = 1, 2, 3 ... racks (design_space.py)
    P_rack, U_rack              the rack's nameplate power and height (rack_system_power_kw, _units)

What the rest of the tool does with them:

- step time (perf/llm/step.py): a parallel group whose ranks lie inside one domain uses the NVLink bandwidth
  even across trays; only traffic leaving the domain uses the NICs. With the designs' GPUs filling domains
  in rank order, the domain of a design is D_eff = min(D, N) GPUs (N = G·M).
- cost (hardware/cost.py): a design of M nodes of a rack system fills R = ⌈M / u⌉ racks, each drawing
  P_rack / u per node (its trays, switch trays and power shelves; the NICs inside), U_rack rack units, its
  rack and power distribution inside the tray price (no facility rack, no PDU, no facility rack rating:
  the rack is its own). Only the scale-out switches need facility racks. Liquid cooling is required: the
  site's liquid PUE applies whatever the GPU's TDP.
- bill of materials (hardware/bom.py): one line names the racks (what they hold, their power), priced in
  the GPU and tray lines.
"""

from __future__ import annotations

import numpy as np


def domain_gpus(chassis) -> int:
    """D: the GPUs of one NVLink domain (the node's slots when the chassis does not say more)."""
    d = getattr(chassis, "nvlink_domain_gpus", None)
    return int(d) if d else int(chassis.gpu_slots)


def purchase_nodes(chassis) -> int:
    """u: nodes per unit of purchase (a rack-scale system's whole rack; 1 for every other chassis)."""
    return int(getattr(chassis, "rack_system_nodes", None) or 1)


def is_rack_system(chassis) -> bool:
    return getattr(chassis, "rack_system_nodes", None) is not None


def domain_gpus_of(space) -> np.ndarray:
    """D per design of a DesignSpace, as float64 (the chassis's domain; at most the design's GPUs is applied
    where a model needs it)."""
    per = np.array([domain_gpus(c) for c in space.chassis], dtype=np.float64)
    return per[space.chassis_idx]


def rack_arrays(space) -> dict[str, np.ndarray]:
    """Per design: whether its chassis is a rack system, its nodes per rack u, rack kW and rack units
    (0 where it is not a rack system), and whether it needs liquid cooling."""
    ch = space.chassis
    rack = np.array([is_rack_system(c) for c in ch], dtype=bool)
    u = np.array([purchase_nodes(c) for c in ch], dtype=np.float64)
    kw = np.array([float(getattr(c, "rack_system_power_kw", None) or 0.0) for c in ch])
    ru = np.array([float(getattr(c, "rack_system_units", None) or 0.0) for c in ch])
    liquid = np.array([bool(getattr(c, "liquid_cooling_required", False)) for c in ch], dtype=bool)
    i = space.chassis_idx
    return {"rack": rack[i], "nodes_per_rack": u[i], "rack_kw": kw[i], "rack_units": ru[i], "liquid": liquid[i]}


def rack_phrase(chassis, gpu_id: str, racks: int) -> str:
    """'2 x GB200 NVL72 rack (18 compute trays x 4 gb200 = 72 GPUs in one NVLink domain, 132 kW, 48U, liquid-cooled)'."""
    u, g = purchase_nodes(chassis), int(chassis.gpu_slots)
    cool = ", liquid-cooled" if getattr(chassis, "liquid_cooling_required", False) else ""
    return (f"{racks} x {chassis.id} rack ({u} compute trays x {g} {gpu_id} = {u * g} GPUs, NVLink domain of "
            f"{domain_gpus(chassis)} GPUs, {chassis.rack_system_power_kw:g} kW, {chassis.rack_system_units}U{cool})")
