"""Cloud instance facts (`data/cloud_instances.toml`): network bandwidth and a capacity cap per instance type.

One table, read by the catalog loader (a cloud catalog with `[catalog] provider = "aws"` takes an
instance's `network_gbps`, `transport` and `max_instances` from it unless the entry states its own)
and by `costopt catalog import` (which writes no network figure for a type the table knows), so the
shipped catalog and an imported one cannot disagree.

The capacity cap bounds the node count of a rented design:

    nodes <= max_instances(type)          (design_space.py: the node range of that instance's chassis)

and a solve says when its pick sits on the cap (`capacity_summary`): a larger cluster of that type was
not offered, so the cap, not the budget or the scaling, stopped it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from costopt.core.errors import InputError
from costopt.core.paths import PACKAGE_DIR

FACTS_FILE = "data/cloud_instances.toml"
PROVIDERS = ("aws",)


@dataclass(frozen=True)
class InstanceFacts:
    id: str
    network_gbps: float
    transport: str
    source: str
    date: str
    estimate: bool = False  # the network figure is our estimate
    burst_gbps: float | None = None
    capacity_block: bool = False  # sold as EC2 Capacity Blocks: the cap is the documented block maximum


@dataclass(frozen=True)
class CapacityDefault:
    max_instances: int
    source: str
    date: str
    estimate_note: str


@dataclass(frozen=True)
class ProviderFacts:
    name: str
    capacity: CapacityDefault
    instances: dict[str, InstanceFacts]

    def cap_for(self, instance_id: str) -> tuple[int, str, bool]:
        """(max instances, source sentence, is an estimate) for one instance type."""
        c = self.capacity
        f = self.instances.get(instance_id)
        if f is not None and f.capacity_block:
            return c.max_instances, f"{c.source} (read {c.date})", False
        return c.max_instances, f"{c.estimate_note}; {c.source} (read {c.date})", True


_INSTANCE_KEYS = {"id", "network_gbps", "transport", "source", "date", "estimate", "burst_gbps", "capacity_block"}


@lru_cache(maxsize=1)
def _load() -> dict[str, ProviderFacts]:
    raw = tomllib.loads((PACKAGE_DIR / FACTS_FILE).read_text(encoding="utf-8"))
    out: dict[str, ProviderFacts] = {}
    for name, body in raw.items():
        cap = body.get("capacity", {})
        if not (isinstance(cap.get("max_instances"), int) and cap["max_instances"] >= 1 and cap.get("source")):
            raise InputError(f"{FACTS_FILE}: [{name}.capacity] needs max_instances >= 1 and source")
        inst: dict[str, InstanceFacts] = {}
        for i, e in enumerate(body.get("instance", [])):
            unknown = set(e) - _INSTANCE_KEYS
            if unknown or not all(k in e for k in ("id", "network_gbps", "transport", "source", "date")):
                raise InputError(f"{FACTS_FILE}: {name}.instance[{i}]: unknown key(s) {sorted(unknown)} or missing "
                                 "id/network_gbps/transport/source/date")
            if not (e["network_gbps"] > 0 and e["transport"] in ("tcp", "rdma")):
                raise InputError(f"{FACTS_FILE}: {name}.instance[{i}] ({e['id']}): network_gbps > 0, transport tcp|rdma")
            inst[e["id"]] = InstanceFacts(e["id"], float(e["network_gbps"]), e["transport"], e["source"], str(e["date"]),
                                          bool(e.get("estimate", False)), e.get("burst_gbps"),
                                          bool(e.get("capacity_block", False)))
        out[name] = ProviderFacts(name, CapacityDefault(cap["max_instances"], cap["source"], str(cap["date"]),
                                                        cap.get("estimate_note", "")), inst)
    return out


def provider_facts(provider: str) -> ProviderFacts | None:
    """The facts of one provider ("aws"); None for a provider the table does not cover."""
    return _load().get(provider)


def capacity_summary(chassis: Any, nodes: int) -> dict[str, Any] | None:
    """JSON `capacity` for a rented design on a capped instance type, else None.

    `bound` is True when the design rents as many instances as the cap allows: nodes == max_instances."""
    cap = getattr(chassis, "max_nodes", None)
    if cap is None or getattr(chassis, "usd_per_hour", None) is None:
        return None
    estimate = "max_nodes" in chassis.estimates
    bound = int(nodes) >= int(cap)
    why = chassis.max_nodes_source
    label = "estimate" if estimate else ("your limit" if why.startswith("--max-instances") else "documented")
    if bound:
        sentence = (f"Capacity: the pick rents {int(nodes)} x {chassis.id}, the most this catalog allows of that type "
                    f"({int(cap)}, {label}: {why}); the cap bound, so a larger cluster of it was not considered "
                    f"(--max-instances N, or max_instances in the catalog, if your account can rent more).")
    else:
        sentence = f"Capacity: {int(nodes)} of at most {int(cap)} x {chassis.id} ({label}: {why}); the cap did not bind."
    return {"instance": chassis.id, "nodes": int(nodes), "max_instances": int(cap), "bound": bool(bound),
            "estimate": estimate, "label": label, "source": why, "sentence": sentence}


__all__ = ["InstanceFacts", "ProviderFacts", "provider_facts", "capacity_summary", "PROVIDERS"]
