"""Hardware catalog: GPUs, node chassis and NICs with prices, validated strictly at load time.

A catalog is a TOML file with four kinds of entry (see `catalogs/reference-2026.toml`):

    [catalog]   name, description, date
    [site]      electricity_usd_per_kwh, pue, average_draw_fraction (optional; defaults below)
    [[gpu]]     one per GPU model
    [[chassis]] one per node chassis (its GPU slot count fixes GPUs per node)
    [[nic]]     one per network adapter + switch family

Every entry carries `source` and `date` (where its specs come from), and `price_source` /
`price_date` for its price; `estimates` lists the fields that are judgement rather than a quoted
figure. Unknown keys, wrong types, missing fields, non-positive prices, duplicate ids and NICs that a
chassis cannot take are all errors, reported as one message naming the file, the entry and the field.
Nothing downstream re-checks these: a `Catalog` object is valid by construction.

Two other kinds of catalog file build on a base catalog (`[catalog] base = "reference-2026"`, a
built-in name, or a path relative to the file):

- an OVERLAY (a vendor's quote): `[[gpu]]` / `[[chassis]]` / `[[nic]]` entries name an existing `id`
  and override only the fields they give (a new `price_usd` must come with its own `price_source`
  and `price_date`); `[availability]` keeps only the parts the vendor sells (`gpu = [...]`, ...)
  and/or drops some (`exclude_gpu = [...]`, ...). An id the base does not know is an error.
- a CLOUD catalog: `[[instance]]` entries, each a rented node with a fixed GPU type and count, a
  network line rate and a price per hour. GPU specs come from the base; each instance becomes one
  chassis (with `usd_per_hour`) and one NIC of its own, so the design space and timing model treat
  it like any node. Only the hourly price is a cost (see cost.py); the `price_usd` of the parts of a
  cloud catalog merely split that price (GPU: the cheapest USD per GPU-hour of that GPU).

Schema and records. The rules above live in `catalog_schema.py` (pydantic models); the objects the rest
of costopt reads are the frozen records below, built from the validated data, with the same fields in
the same order and the same defaults (tests/test_catalog_cache.py holds the two together).

Validated-catalog cache. Validating means importing pydantic and building its models, which costs
more CPU than a whole headline solve. `load_catalog` keeps the validated data of each catalog it loads
in the user cache of `validated_cache.py` (JSON, keyed by a SHA-256 of the file's bytes, its path, the
costopt version and the source of the modules that validate; every base file is checked too), so a
catalog loads without pydantic from its second use on. The cache never changes what a catalog holds
or which error a bad file gets: a bad file is never cached, and a miss validates as above.
"""

from __future__ import annotations

import copy
from pathlib import Path

from costopt.hardware import validated_cache
from costopt.hardware.cloud_facts import FACTS_FILE, PROVIDERS, provider_facts
from costopt.core.errors import InputError
from costopt.core.files import read_toml
from costopt.core.units import PCIE_X16_GB_PER_S, pcie_x16_gbps
from costopt.core.paths import BUILTIN_CATALOG_DIR  # noqa: F401  (re-exported)
from costopt.hardware.records import (  # noqa: F401  (re-exported: the catalog's record types)
    _Record, LifeCycled, Sourced, ReferenceThroughput, Gpu, Chassis, Nic, Site, Facility, CatalogInfo, Instance, Catalog,
)

REFERENCE_CATALOG = BUILTIN_CATALOG_DIR / "reference-2026.toml"


def with_max_instances(cat: Catalog, n: int, source: str = "--max-instances") -> Catalog:
    """The same catalog with every rented instance type capped at `n` instances (InputError on an
    owned catalog: it rents nothing)."""
    if not cat.is_cloud:
        raise InputError(f"--max-instances {n}: {cat.path or cat.catalog.name} is not a cloud catalog "
                         "(use --max-nodes for owned clusters)", field="max_instances")
    data = cat.model_dump(mode="python")
    for ch in data["chassis"]:
        if ch.get("usd_per_hour") is not None:
            ch["max_nodes"], ch["max_nodes_source"] = int(n), f"{source} {int(n)}"
            ch["estimates"] = [e for e in ch["estimates"] if e != "max_nodes"]
    from costopt.hardware.catalog_schema import Catalog as CatalogSchema

    return Catalog.from_data(CatalogSchema.model_validate(data).model_dump())



def _check_cross_references(cat: Catalog, where: str) -> None:
    for kind, entries in (("gpu", cat.gpu), ("chassis", cat.chassis), ("nic", cat.nic)):
        seen: set[str] = set()
        for idx, e in enumerate(entries):
            if e.id in seen:
                raise InputError(f"{where}: {kind}[{idx}]: duplicate id '{e.id}'")
            seen.add(e.id)
    for idx, ch in enumerate(cat.chassis):
        label = f"{where}: chassis[{idx}] (id '{ch.id}')"
        if ch.usd_per_hour is not None and not cat.is_cloud:
            raise InputError(f"{label}, field 'usd_per_hour': only cloud catalogs ([[instance]]) price nodes per hour")
        for gid in ch.accepts_gpus:
            if any(g.id == gid for g in cat.unavailable_gpu) and not any(g.id == gid for g in cat.gpu):
                raise InputError(f"{label}, field 'accepts_gpus': gpu '{gid}' is not available in this catalog")
            if gid not in cat.gpus:
                raise InputError(f"{label}, field 'accepts_gpus': unknown gpu '{gid}'")
            if cat.gpus[gid].form_factor != ch.form_factor:
                raise InputError(
                    f"{label}, field 'accepts_gpus': gpu '{gid}' is {cat.gpus[gid].form_factor}, "
                    f"chassis is {ch.form_factor}"
                )
        cap = pcie_x16_gbps(ch.pcie_gen)
        for nid in ch.nics:
            if nid not in cat.nics:
                raise InputError(f"{label}, field 'nics': unknown nic '{nid}'")
            rate = cat.nics[nid].line_rate_gbps
            if rate > cap and ch.usd_per_hour is None:  # a cloud instance's bandwidth is several adapters
                raise InputError(
                    f"{label}, field 'nics': nic '{nid}' ({rate:g} Gb/s) cannot be fed by a PCIe Gen"
                    f"{ch.pcie_gen} x16 slot ({cap:g} Gb/s)"
                )
        if not cat.nics_for(ch):
            raise InputError(f"{label}: no NIC in the catalog fits its PCIe Gen{ch.pcie_gen} x16 slot")
        if not any(cat.gpu_fits(g, ch) for g in cat.gpu):
            raise InputError(f"{label}: no GPU in the catalog fits it (form factor '{ch.form_factor}')")


def parse_catalog(data: dict, where: str) -> Catalog:
    """Validate a catalog already read from TOML; `where` names it in messages."""
    from costopt.hardware.catalog_schema import validate_catalog

    cat = Catalog.from_data(validate_catalog(data, where))
    _check_cross_references(cat, where)
    return cat


def builtin_catalogs() -> dict[str, Path]:
    """Built-in catalogs by name (the file stem)."""
    return {p.stem: p for p in sorted(BUILTIN_CATALOG_DIR.glob("*.toml"))}


def _resolve_base(base: object, where: Path) -> Path:
    if not isinstance(base, str) or not base:
        raise InputError(f"{where}: [catalog], field 'base': must be a catalog name or path")
    known = builtin_catalogs()
    if base in known:
        return known[base]
    p = Path(base)
    if not p.is_absolute():
        p = where.parent / p
    if not p.exists():
        raise InputError(
            f"{where}: [catalog], field 'base': no built-in catalog or file '{base}' "
            f"(built-in: {', '.join(known)})"
        )
    return p


_KINDS = {"gpu": Gpu, "chassis": Chassis, "nic": Nic}
_AVAILABILITY_KEYS = {f"{pre}{k}" for k in _KINDS for pre in ("", "exclude_")}


def _apply_overlay(base: dict, over: dict, where: str, base_name: str) -> dict:
    """Merge an overlay's partial entries and availability lists into a copy of the base data."""
    from costopt.hardware.catalog_schema import validate_overlay_entry

    out = copy.deepcopy(base)
    info = over.get("catalog")
    if not isinstance(info, dict):
        raise InputError(f"{where}: [catalog]: missing table")
    out["catalog"] = {**{k: v for k, v in out.get("catalog", {}).items() if k not in ("base", "kind")}, **info}
    if "site" in over:
        if not isinstance(over["site"], dict):
            raise InputError(f"{where}: [site]: must be a table")
        out["site"] = {**out.get("site", {}), **over["site"]}
    if "facility" in over:
        if not isinstance(over["facility"], dict):
            raise InputError(f"{where}: [facility]: must be a table")
        out["facility"] = {**out.get("facility", {}), **over["facility"]}
    for kind, model in _KINDS.items():
        entries = over.get(kind, [])
        if not isinstance(entries, list):
            raise InputError(f"{where}: '{kind}' must be an array of tables ([[{kind}]])")
        by_id = {e.get("id"): e for e in out.get(kind, [])}
        for idx, e in enumerate(entries):
            if not isinstance(e, dict) or "id" not in e:
                raise InputError(f"{where}: {kind}[{idx}], field 'id': missing required field")
            label = f"{where}: {kind}[{idx}] (id '{e['id']}')"
            if e["id"] not in by_id:
                raise InputError(
                    f"{label}: unknown {kind} in base catalog '{base_name}' (an overlay only changes existing "
                    f"parts; known: {', '.join(str(k) for k in by_id)})"
                )
            for key in e:
                if key not in model.model_fields:
                    raise InputError(f"{label}, field '{key}': unknown key")
            if "price_usd" in e:
                for need in ("price_source", "price_date"):
                    if need not in e:
                        raise InputError(f"{label}, field '{need}': a new price_usd needs its own {need}")
            merged = {**by_id[e["id"]], **copy.deepcopy(e)}
            validate_overlay_entry(kind, merged, label)
            by_id[e["id"]].update(merged)
    avail = over.get("availability", {})
    if not isinstance(avail, dict):
        raise InputError(f"{where}: [availability]: must be a table")
    for key, ids in avail.items():
        if key not in _AVAILABILITY_KEYS:
            raise InputError(f"{where}: [availability], field '{key}': unknown key (use {', '.join(sorted(_AVAILABILITY_KEYS))})")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InputError(f"{where}: [availability], field '{key}': must be a list of ids")
        kind = key.removeprefix("exclude_")
        known = [e.get("id") for e in out.get(kind, [])] + [e.get("id") for e in out.get(f"unavailable_{kind}", [])]
        for i in ids:
            if i not in known:
                raise InputError(f"{where}: [availability], field '{key}': unknown {kind} '{i}' in base catalog '{base_name}'")
        keep = (lambda e: e.get("id") not in ids) if key.startswith("exclude_") else (lambda e: e.get("id") in ids)
        dropped = [e for e in out.get(kind, []) if not keep(e)]
        out[kind] = [e for e in out.get(kind, []) if keep(e)]
        if kind == "gpu" and dropped:
            out["unavailable_gpu"] = out.get("unavailable_gpu", []) + dropped
    # drop references to parts the vendor does not offer, so the quote stays self-consistent
    nic_ids = {e.get("id") for e in out.get("nic", [])}
    gpu_ids = {e.get("id") for e in out.get("gpu", [])}
    for ch in out.get("chassis", []):
        if not ch.get("accepts_gpus") and out.get("unavailable_gpu"):  # spell out "any GPU of the form factor"
            ch["accepts_gpus"] = [g.get("id") for g in out.get("gpu", []) if g.get("form_factor") == ch.get("form_factor")]
            if not ch["accepts_gpus"]:
                ch["_drop"] = True
        if ch.get("nics"):
            ch["nics"] = [n for n in ch["nics"] if n in nic_ids]
            if not ch["nics"]:
                ch["_drop"] = True
        if ch.get("accepts_gpus"):
            ch["accepts_gpus"] = [g for g in ch["accepts_gpus"] if g in gpu_ids]
            if not ch["accepts_gpus"]:
                ch["_drop"] = True
    out["chassis"] = [c for c in out.get("chassis", []) if not c.pop("_drop", False)]
    out["chassis"] = [c for c in out["chassis"] if _chassis_has_gpu(c, out.get("gpu", []))]
    if "instance" in over:
        out["instance"] = over["instance"]
    return out


def _chassis_has_gpu(ch: dict, gpus: list[dict]) -> bool:
    if ch.get("accepts_gpus"):
        return True
    return any(g.get("form_factor") == ch.get("form_factor") for g in gpus)


_RENTED_LATENCY_US = {"tcp": 7.5, "rdma": 1.3}  # as the reference catalog's Ethernet / RoCE adapters


def _expand_instances(data: dict, where: str) -> dict:
    """Turn [[instance]] entries into one chassis + one NIC each; keep only the GPUs they use."""
    raw = data.get("instance", [])
    if not isinstance(raw, list):
        raise InputError(f"{where}: 'instance' must be an array of tables ([[instance]])")
    from costopt.hardware.catalog_schema import validate_instances

    insts = validate_instances(raw, where)
    if not insts:
        raise InputError(f"{where}: a cloud catalog needs at least one [[instance]]")
    provider = data["catalog"].get("provider", "") if isinstance(data.get("catalog"), dict) else ""
    facts = provider_facts(provider) if provider else None
    if provider and facts is None:
        raise InputError(f"{where}: [catalog], field 'provider': no instance facts for {provider!r} "
                         f"(known: {', '.join(PROVIDERS)}; leave it out and give network_gbps on every instance)")
    gpus = {g.get("id"): g for g in data.get("gpu", [])}
    seen: set[str] = set()
    per_gpu_hour: dict[str, float] = {}
    filled = [_with_facts(inst, facts, idx, where) for idx, inst in enumerate(insts)]
    insts = [f[0] for f in filled]
    nets_from_facts = {f[0].id for f in filled if f[1]}
    caps_estimated = {f[0].id for f in filled if f[2]}
    for idx, inst in enumerate(insts):
        if inst.id in seen:
            raise InputError(f"{where}: instance[{idx}]: duplicate id '{inst.id}'")
        seen.add(inst.id)
        if inst.gpu not in gpus:
            raise InputError(f"{where}: instance[{idx}] (id '{inst.id}'), field 'gpu': unknown gpu '{inst.gpu}' "
                             f"(known: {', '.join(str(k) for k in gpus)})")
        rate = inst.usd_per_hour / inst.gpu_count
        per_gpu_hour[inst.gpu] = min(per_gpu_hour.get(inst.gpu, rate), rate)
    tiny = 1e-4  # networking is inside the instance price; NIC and switch entries only exist for the model
    out_gpus = []
    for gid, rate in per_gpu_hour.items():
        g = copy.deepcopy(gpus[gid])
        g.update(price_usd=rate, price_source=f"USD per GPU-hour of the cheapest instance with {gid} in this catalog",
                 price_date=data["catalog"].get("date", ""))
        out_gpus.append(g)
    chassis, nics = [], []
    for inst in insts:
        g = gpus[inst.gpu]
        link = g.get("gpu_link", "none") != "none"
        fabric = inst.intra_fabric or ("nvswitch" if (g.get("form_factor") != "pcie" and link) else "pcie")
        nic_id = f"{inst.id}-net"
        prov = dict(source=inst.source, date=inst.date, price_source=inst.price_source, price_date=inst.price_date)
        net_prov = dict(prov)
        fact = facts.instances.get(inst.id) if facts is not None and inst.id in nets_from_facts else None
        if fact is not None:  # the network figure is the facts table's, with its source and date
            net_prov.update(source=f"network: {fact.source} (costopt/data/cloud_instances.toml)", date=fact.date)
        nics.append(dict(
            id=nic_id, name=f"{inst.id} network ({inst.network_gbps:g} Gb/s {inst.transport})", segment="datacenter",
            line_rate_gbps=inst.network_gbps, transport=inst.transport, latency_us=_RENTED_LATENCY_US[inst.transport],
            price_usd=tiny, switch_port_price_usd=tiny, switch_ports=1024, cable_price_usd=0.0, power_w=0.0,
            estimates=["latency_us"] + (["line_rate_gbps"] if "network_gbps" in inst.estimates else []),
            notes="built from the instance; its price is inside the instance's hourly price",
            **net_prov))
        rest = inst.usd_per_hour - inst.gpu_count * per_gpu_hour[inst.gpu] - tiny
        chassis.append(dict(
            id=inst.id, name=inst.name or inst.id, form_factor=g.get("form_factor"), gpu_slots=inst.gpu_count,
            accepts_gpus=[inst.gpu], intra_fabric=fabric, pcie_gen=g.get("pcie_gen"),
            gpus_per_pcie_switch=2 if inst.gpu_count >= 8 else 1, price_usd=max(rest, tiny), power_overhead_w=0.0,
            rack_units=1, nics=[nic_id], usd_per_hour=inst.usd_per_hour,
            max_nodes=inst.max_instances, max_nodes_source=inst.max_instances_source,
            rental_pricing=inst.pricing, min_rental_hours=inst.min_rental_hours,
            rental_increment_hours=inst.rental_increment_hours, rental_terms_source=inst.rental_terms_source,
            interruption_note=inst.interruption_note,
            estimates=[e for e in inst.estimates if e in Chassis.model_fields]
            + (["max_nodes"] if inst.id in caps_estimated or "max_instances" in inst.estimates else []),
            notes=inst.notes, **prov))
    out = {k: v for k, v in data.items() if k not in ("gpu", "chassis", "nic")}
    out["catalog"] = {**data["catalog"], "kind": "cloud"}
    out["instance"] = [i.model_dump(mode="python") for i in insts]  # as used: network and cap filled in
    # GPUs no instance rents keep their specs (compute is scaled from a measured GPU such as the H200)
    spare = [copy.deepcopy(g) for gid, g in gpus.items() if gid not in per_gpu_hour]
    out["unavailable_gpu"] = list(data.get("unavailable_gpu", [])) + spare
    return {**out, "gpu": out_gpus, "chassis": chassis, "nic": nics}


def _with_facts(inst: Instance, facts, idx: int, where: str) -> tuple[Instance, bool, bool]:
    """An instance with network, transport and capacity cap filled from the provider's facts
    (cloud_facts.py) where the entry leaves them out; returns (instance, network from the facts, cap is
    an estimate). Without facts an instance must state its network; it then has no cap."""
    fact = facts.instances.get(inst.id) if facts is not None else None
    upd: dict = {}
    from_facts = False
    if inst.network_gbps is None:
        if fact is None:
            known = f" and {FACTS_FILE} has no figure for it" if facts is not None else ""
            raise InputError(f"{where}: instance[{idx}] (id '{inst.id}'), field 'network_gbps': missing required "
                             f"field{known}")
        upd.update(network_gbps=fact.network_gbps, transport=inst.transport or fact.transport)
        if fact.estimate:
            upd["estimates"] = list(dict.fromkeys([*inst.estimates, "network_gbps"]))
        from_facts = True
    elif inst.transport is None:
        upd["transport"] = fact.transport if fact is not None else "tcp"
    estimated = False
    if inst.max_instances is None and facts is not None:
        n, why, estimated = facts.cap_for(inst.id)
        upd.update(max_instances=n, max_instances_source=why)
    return (inst.model_copy(update=upd) if upd else inst), from_facts, estimated


def _load_data(p: Path, depth: int = 0, read: list[Path] | None = None) -> tuple[dict, str]:
    """Read a catalog file and resolve its base chain; returns (data, name used in messages). Every
    file read is appended to `read` (the cache checks them all)."""
    if depth > 8:
        raise InputError(f"{p}: [catalog], field 'base': chain of base catalogs too deep (a loop?)")
    data = read_toml(p, "catalog file")
    if read is not None:
        read.append(p)
    info = data.get("catalog")
    base = info.get("base") if isinstance(info, dict) else None
    if base:
        bp = _resolve_base(base, p)
        base_data, _ = _load_data(bp, depth + 1, read)
        if base_data.get("catalog", {}).get("kind") == "cloud" or "instance" in base_data:
            raise InputError(f"{p}: [catalog], field 'base': '{base}' is a cloud catalog; build on an owned one")
        data = _apply_overlay(base_data, data, str(p), str(base))
        where = f"{p} (on base '{base}')"
    else:
        where = str(p)
    return data, where


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load and validate a catalog file; None loads the built-in reference catalog.

    A bare name of a built-in catalog (e.g. "reference-2026") is accepted too. Overlays and cloud
    catalogs are resolved against their base first (see the module docstring). A catalog validated
    before (same bytes, same code) comes from the validated-catalog cache (module docstring).
    """
    if path is not None and (isinstance(path, bool) or not isinstance(path, (str, Path)) or path == ""):
        raise InputError(f"catalog must be a file path or a built-in catalog name, got {type(path).__name__} "
                         f"{path!r}"[:160], field="catalog")
    p = Path(path) if path is not None else REFERENCE_CATALOG
    if path is not None and not p.exists() and str(path) in builtin_catalogs():
        p = builtin_catalogs()[str(path)]
    key = validated_cache.key("catalog", p, _VALIDATING_MODULES)
    cached = validated_cache.get(key, Catalog.from_data)  # None: a miss of any kind (validated again below)
    if cached is not None:
        return cached
    read: list[Path] = []
    data, where = _load_data(p, read=read)
    kind = data["catalog"].get("kind", "owned") if isinstance(data.get("catalog"), dict) else "owned"
    if kind not in ("owned", "cloud"):
        raise InputError(f"{where}: [catalog], field 'kind': must be 'owned' or 'cloud', got {kind!r}", field="kind")
    if "instance" in data and kind == "owned" and "kind" in data["catalog"]:
        raise InputError(f"{where}: [catalog], field 'kind': 'owned' but the file rents [[instance]]s (use 'cloud')",
                         field="kind")
    if "instance" in data or kind == "cloud":
        data = _expand_instances(data, where)
    cat = parse_catalog(data, where)
    validated_cache.put(key, read, cat.model_dump())
    return cat


# the modules whose code decides what a valid catalog holds: a change to any of them is a new cache key
_VALIDATING_MODULES = ("hardware/catalog.py", "hardware/catalog_schema.py", "core/checks.py", "core/files.py", "core/units.py")


def gpu_link_used(gpu: Gpu, chassis: Chassis) -> bool:
    """True when GPUs in this chassis talk over their own GPU link (NVLink, Infinity Fabric), not PCIe."""
    return chassis.intra_fabric in ("nvswitch", "infinity-fabric", "nvlink-bridge") and gpu.gpu_link_gbs > 0


def intra_node_gb_per_s(gpu: Gpu, chassis: Chassis) -> float:
    """Spec per-GPU, per-direction bandwidth of the GPU-to-GPU path inside one node (GB/s)."""
    if gpu_link_used(gpu, chassis):
        return gpu.gpu_link_gbs
    return host_pcie_gb_per_s(gpu, chassis)


def host_pcie_gb_per_s(gpu: Gpu, chassis: Chassis) -> float:
    """Spec per-direction PCIe bandwidth between one GPU and the host (GB/s)."""
    return PCIE_X16_GB_PER_S[min(gpu.pcie_gen, chassis.pcie_gen)]
