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
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from . import validated_cache
from .cloud_facts import FACTS_FILE, PROVIDERS, provider_facts
from .errors import InputError
from .files import read_toml
from .units import PCIE_X16_GB_PER_S, pcie_x16_gbps

BUILTIN_CATALOG_DIR = Path(__file__).parent / "catalogs"
REFERENCE_CATALOG = BUILTIN_CATALOG_DIR / "reference-2026.toml"


class _Record:
    """A validated catalog entry: read-only attributes, given by keyword (a field left out takes its
    default). `model_copy` and `model_dump` behave as the pydantic methods of the same name (a copy with
    some fields replaced, not validated again; every field as plain data).

    The records are dataclasses for their fields, `repr`, `==` and read-only attributes; `__init__` is
    this one, shared, rather than one generated per class (generating them costs ~10 ms at start-up).
    """

    def __init__(self, **values: Any) -> None:
        spec = type(self)._spec
        unknown = values.keys() - spec.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown field(s) {sorted(unknown)}")
        d = self.__dict__
        for name, (default, factory) in spec.items():
            if name in values:
                d[name] = values[name]
            elif factory is not MISSING:
                d[name] = factory()
            elif default is not MISSING:
                d[name] = default
            else:
                raise TypeError(f"{type(self).__name__}: missing field '{name}'")

    def model_copy(self, *, update: dict[str, Any] | None = None):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        if update:
            new.__dict__.update(update)
        return new

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(v: Any) -> Any:
    if isinstance(v, _Record):
        return v.model_dump()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


_RECORD = dict(frozen=True, kw_only=True, init=False)


@dataclass(**_RECORD)
class LifeCycled(_Record):
    """Where a part stands in its vendor's line-up, with the source that says so.

    `current`: on sale as a new part; `legacy`: superseded, still sold or supported but not what a
    vendor quotes for a new cluster; `end_of_life`: discontinued (`end_of_life_date` says since when).
    Part filters (costopt/part_filter.py) leave legacy and end-of-life parts out of default searches.
    """

    lifecycle: str = "current"  # current | legacy | end_of_life
    end_of_life_date: str | None = None
    lifecycle_source: str = ""


@dataclass(**_RECORD)
class Sourced(_Record):
    """Provenance shared by every catalog entry."""

    source: str
    date: str
    price_source: str
    price_date: str
    estimates: list[str] = field(default_factory=list)
    notes: str = ""


@dataclass(**_RECORD)
class ReferenceThroughput(_Record):
    """Published single-GPU training throughput used to scale measured compute times to this GPU.

    `model` is the zoo model it was measured on (ResNet-50 in the reference catalog). A precision
    left out means the GPU has no published figure for it.
    """

    model: str = "resnet50"
    fp32_samples_per_s: float | None = None
    amp_samples_per_s: float | None = None
    source: str
    date: str
    estimate: bool = False


@dataclass(**_RECORD)
class Gpu(Sourced, LifeCycled):
    """A GPU model: peak rates, memory, GPU link, PCIe generation and price (units in the field names;
    the allowed values of each field: catalog_schema.Gpu)."""

    id: str
    name: str
    segment: str  # datacenter | workstation | consumer (GeForce / Radeon: driver licence excludes data centres)
    vendor: str = "nvidia"
    form_factor: str  # pcie | sxm | oam
    memory_gb: float
    memory_bandwidth_gbs: float
    tflops_fp32: float
    tflops_tf32: float | None = None
    tflops_fp16: float | None = None
    tflops_bf16: float | None = None
    tdp_w: float
    gpu_link: str  # none | nvlink1..nvlink5 | infinity-fabric
    gpu_link_gbs: float  # per GPU, per direction, GB/s; 0 when the only path is PCIe
    pcie_gen: int
    price_usd: float
    launch_year: int | None = None
    # GPU generation: selects the achieved fractions of peak the compute roofline uses (compute.py)
    architecture: str | None = None
    # provenance of the peak fields (tflops_*, memory_bandwidth_gbs): where they are read and when
    peak_source: str | None = None
    peak_date: str | None = None
    # Clock under sustained load vs the rated boost clock the peaks are quoted at (compute.py's
    # roofline scales the peaks by sustained / boost; the physical floor keeps the rated peaks).
    # GeForce GPU Boost runs above the rated boost clock when power and temperature allow.
    boost_clock_mhz: float | None = None
    sustained_clock_mhz: float | None = None
    clock_source: str | None = None
    clock_date: str | None = None
    # a published single-GPU ResNet-50 training figure (one same-model evidence point, see compute.py)
    throughput: ReferenceThroughput | None = None

    @property
    def clock_factor(self) -> float:
        """Sustained / rated boost clock (1 when the catalog gives no clocks)."""
        if self.boost_clock_mhz is None or self.sustained_clock_mhz is None:
            return 1.0
        return self.sustained_clock_mhz / self.boost_clock_mhz

    def sustained_flops(self, precision: str) -> float | None:
        """Peak FLOP/s at the clock the GPU holds under sustained load: peak_flops x clock_factor."""
        peak = self.peak_flops(precision)
        return None if peak is None else peak * self.clock_factor

    def peak_flops(self, precision: str) -> float | None:
        """Dense peak FLOP/s the GPU's fastest unit reaches at this training precision (None: no path).

        fp32 training may run convolutions (cuDNN's default) and, in NGC containers, matmuls on TF32
        tensor cores, so its ceiling is the larger of the FP32 and TF32 peaks.
        """
        if precision == "fp32":
            return 1e12 * max(self.tflops_fp32, self.tflops_tf32 or 0.0)
        if precision == "amp_bf16":
            return None if self.tflops_bf16 is None else 1e12 * self.tflops_bf16
        if precision == "amp_fp16":
            return None if self.tflops_fp16 is None else 1e12 * self.tflops_fp16
        return None

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbs * 1e9

    def best_training_precision(self) -> str:
        """The precision a 2026 buyer trains in on this GPU: bf16 AMP where the GPU has BF16 (Ampere
        and later, MI300X), fp16 AMP where FP16 runs on tensor cores (Volta, Turing: >= 4x the FP32
        rate), fp32 otherwise (Kepler, Pascal's FP16 is only 2x FP32 on the CUDA cores)."""
        if self.tflops_bf16 is not None:
            return "amp_bf16"
        if self.tflops_fp16 is not None and self.tflops_fp16 >= 4 * self.tflops_fp32:
            return "amp_fp16"
        return "fp32"

    def training_precisions(self) -> list[str]:
        """Every precision the GPU trains in, best first: `best_training_precision`, then the other
        paths it has (bf16 AMP, fp16 AMP, fp32 in that order). `precision auto` takes the first one a
        model has a compute profile for."""
        best = self.best_training_precision()
        return [best] + [p for p in ("amp_bf16", "amp_fp16", "fp32") if p != best and self.supports(p)]

    def supports(self, precision: str) -> bool:
        """Whether the GPU has a fast path for this training precision."""
        if precision == "fp32":
            return True
        if precision == "amp_bf16":
            return self.tflops_bf16 is not None
        if precision == "amp_fp16":
            return self.tflops_fp16 is not None
        return False


@dataclass(**_RECORD)
class Chassis(Sourced, LifeCycled):
    """A node chassis: GPU slots (GPUs per node), the GPUs and NICs it takes, price, power, rack units."""

    id: str
    name: str
    form_factor: str  # pcie | sxm | oam
    gpu_slots: int  # 1, 2, 4, 8 or 16
    accepts_gpus: list[str] = field(default_factory=list)  # empty: any GPU of the same form factor
    intra_fabric: str  # pcie | nvswitch | nvlink-bridge | infinity-fabric
    pcie_gen: int
    gpus_per_pcie_switch: int = 1
    price_usd: float
    power_overhead_w: float
    rack_units: int
    nics: list[str] = field(default_factory=list)  # empty: every NIC whose line rate fits one PCIe x16 slot
    # NIC adapters a node can carry: >1 lets designs put one adapter per GPU rail (DGX/HGX style)
    max_nics: int = 1
    usd_per_hour: float | None = None  # set only on a rented cloud node (built from [[instance]])
    # a rented node: the most instances of this type one cluster can rent (cloud_facts.py), and why
    max_nodes: int | None = None
    max_nodes_source: str = ""


@dataclass(**_RECORD)
class Nic(Sourced, LifeCycled):
    """A network adapter and its switch family: line rate, transport, latency, prices of adapter, switch
    port and cable."""

    id: str
    name: str
    line_rate_gbps: float
    transport: str  # tcp | rdma
    latency_us: float
    price_usd: float
    switch_port_price_usd: float
    switch_ports: int
    # one link (cable, or fibre with its two transceivers) from a port to a switch port; see cost.py
    cable_price_usd: float
    cable_source: str = ""
    cable_price_date: str | None = None
    power_w: float = 25.0


@dataclass(**_RECORD)
class Site(_Record):
    """Running-cost assumptions for total cost of ownership."""

    electricity_usd_per_kwh: float = 0.0826
    pue: float = 1.5
    average_draw_fraction: float = 0.75
    source: str = (
        "electricity: EIA 2025 US industrial average via epoch-research/training-cost-trends energy.py "
        "(2025-06-20); PUE 1.5: enterprise colocation range 1.5-1.6 (SemiAnalysis via Epoch); average "
        "draw 0.75 of server TDP (Epoch energy.py) — shared/research/hardware_facts.md §6, §7e"
    )
    date: str = "2025-06-20"


@dataclass(**_RECORD)
class Facility(_Record):
    """Racks, power distribution and hardware support: what a cluster needs besides nodes and network.

    Racks are counted in cost.py: as many as the nodes need by space (`rack_units_per_rack`) or by
    power (`rack_power_kw`, what one feed carries when each rack has A and B feeds), whichever is more.
    Each rack gets `pdus_per_rack` power distribution units. Support is a share of the hardware price
    per year, bought up front for the years asked (`--support-years`; none by default).
    """

    rack_price_usd: float = 1500.0
    rack_units_per_rack: int = 42
    rack_power_kw: float = 17.3
    pdu_price_usd: float = 1500.0
    pdus_per_rack: int = 2
    support_pct_per_year: float = 0.0
    source: str = (
        "built-in defaults, all estimates: 42U cabinet $1,500; rack power 17.3 kW = one 208 V 3-phase 60 A PDU at the "
        "NEC 80% continuous rating, two PDUs per rack on A/B feeds (aiinfrasource.com 'How to choose rack PDU for GPU "
        "servers', 2026-06-11); PDU $1,500 inside the switched-PDU range $700-1,800 (ipsecuritydepot.com rack PDU "
        "buyer's guide, 2026); no support contract"
    )
    date: str = "2026-06-11"
    price_source: str = ("rack $1,500: estimate, no rack price in a stored source; PDU $1,500: inside the $700-1,800 "
                         "range of switched rack PDUs (ipsecuritydepot.com rack PDU buyer's guide, 2026)")
    price_date: str = "2026-06-11"
    estimates: list[str] = field(default_factory=lambda: ["rack_price_usd", "pdu_price_usd", "support_pct_per_year"])
    notes: str = ""


@dataclass(**_RECORD)
class CatalogInfo(_Record):
    name: str
    description: str = ""
    date: str
    base: str = ""  # overlay / cloud catalog: the catalog it builds on (built-in name or path)
    kind: str = "owned"  # owned | cloud (cloud: nodes are rented [[instance]]s priced per hour)
    # cloud: whose instances these are; "aws" takes network and capacity caps from data/cloud_instances.toml
    provider: str = ""


@dataclass(**_RECORD)
class Instance(Sourced):
    """A cloud instance: one rented node with a fixed GPU type and count, network and hourly price."""

    id: str
    name: str = ""
    gpu: str  # a GPU id of the base catalog (specs come from there)
    gpu_count: int  # 1, 2, 4, 8 or 16
    # the instance's sustained network bandwidth, all its adapters together; None: from the provider's
    # facts (data/cloud_instances.toml), the one source shared with `catalog import`
    network_gbps: float | None = None
    transport: str | None = None  # tcp | rdma (EFA / InfiniBand / RoCE); None: the facts', else tcp
    # the most instances of this type one cluster can rent; None: the provider's default (cloud_facts.py)
    max_instances: int | None = None
    max_instances_source: str = ""
    intra_fabric: str | None = None
    usd_per_hour: float  # on-demand price of one instance, per hour
    spot_usd_per_hour: float | None = None
    vcpus: float | None = None
    memory_gib: float | None = None
    region: str = ""


@dataclass(**_RECORD)
class Catalog(_Record):
    catalog: CatalogInfo
    site: Site = field(default_factory=Site)
    facility: Facility = field(default_factory=Facility)
    gpu: list[Gpu]
    chassis: list[Chassis]
    nic: list[Nic]
    instance: list[Instance] = field(default_factory=list)
    # GPUs an overlay's [availability] took off the offer: never in a design, but their specs stay
    # known so compute can still be scaled from a measured GPU (e.g. the H200 profiles).
    unavailable_gpu: list[Gpu] = field(default_factory=list)
    path: str = ""

    @classmethod
    def from_data(cls, d: dict) -> "Catalog":
        """The records of validated catalog data (`catalog_schema.validate_catalog`, or the cache)."""

        def gpu(g: dict) -> Gpu:
            t = g.get("throughput")
            return Gpu(**{**g, "throughput": ReferenceThroughput(**t) if t is not None else None})

        return cls(catalog=CatalogInfo(**d["catalog"]), site=Site(**d["site"]), facility=Facility(**d["facility"]),
                   gpu=[gpu(g) for g in d["gpu"]], chassis=[Chassis(**c) for c in d["chassis"]],
                   nic=[Nic(**n) for n in d["nic"]], instance=[Instance(**i) for i in d["instance"]],
                   unavailable_gpu=[gpu(g) for g in d["unavailable_gpu"]], path=d["path"])

    @cached_property
    def gpus(self) -> dict[str, Gpu]:
        """GPUs by id: those on offer first (in catalog order), then any unavailable ones (specs only)."""
        out = {g.id: g for g in self.gpu}
        for g in self.unavailable_gpu:
            out.setdefault(g.id, g)
        return out

    @cached_property
    def chassis_by_id(self) -> dict[str, Chassis]:
        return {c.id: c for c in self.chassis}

    @cached_property
    def nics(self) -> dict[str, Nic]:
        return {n.id: n for n in self.nic}

    @property
    def is_cloud(self) -> bool:
        """True when the nodes are rented instances priced per hour."""
        return self.catalog.kind == "cloud"

    @cached_property
    def instances(self) -> dict[str, Instance]:
        return {i.id: i for i in self.instance}

    def with_max_instances(self, n: int, source: str = "--max-instances") -> "Catalog":
        """The same catalog with every rented instance type capped at `n` instances (InputError on an
        owned catalog: it rents nothing)."""
        if not self.is_cloud:
            raise InputError(f"--max-instances {n}: {self.path or self.catalog.name} is not a cloud catalog "
                             "(use --max-nodes for owned clusters)", field="max_instances")
        data = self.model_dump(mode="python")
        for ch in data["chassis"]:
            if ch.get("usd_per_hour") is not None:
                ch["max_nodes"], ch["max_nodes_source"] = int(n), f"{source} {int(n)}"
                ch["estimates"] = [e for e in ch["estimates"] if e != "max_nodes"]
        from .catalog_schema import Catalog as CatalogSchema

        return Catalog.from_data(CatalogSchema.model_validate(data).model_dump())

    def nics_for(self, chassis: Chassis) -> list[Nic]:
        """NICs this chassis can take, in catalog order."""
        if chassis.nics:
            return [self.nics[i] for i in chassis.nics]
        cap = pcie_x16_gbps(chassis.pcie_gen)
        return [n for n in self.nic if n.line_rate_gbps <= cap]

    def gpu_fits(self, gpu: Gpu, chassis: Chassis) -> bool:
        if chassis.accepts_gpus:
            return gpu.id in chassis.accepts_gpus
        return gpu.form_factor == chassis.form_factor


for _cls in (LifeCycled, Sourced, ReferenceThroughput, Gpu, Chassis, Nic, Site, Facility, CatalogInfo, Instance, Catalog):
    _cls.model_fields = {f.name: f for f in fields(_cls)}  # field name -> dataclasses.Field, in order
    _cls._spec = {f.name: (f.default, f.default_factory) for f in fields(_cls)}
del _cls


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
    from .catalog_schema import validate_catalog

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
    from .catalog_schema import validate_overlay_entry

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
    from .catalog_schema import validate_instances

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
            id=nic_id, name=f"{inst.id} network ({inst.network_gbps:g} Gb/s {inst.transport})",
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
            estimates=[e for e in inst.estimates if e in Chassis.model_fields]
            + (["max_nodes"] if inst.id in caps_estimated else []),
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
    cached = validated_cache.get(key)
    if cached is not None:
        try:
            return Catalog.from_data(cached)
        except (KeyError, TypeError, AttributeError):  # an entry of another layout: validate again
            pass
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
_VALIDATING_MODULES = ("catalog.py", "catalog_schema.py", "checks.py", "files.py", "units.py")


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
