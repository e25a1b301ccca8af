"""The catalog's records: typed, frozen dataclasses (GPU, chassis, NIC, site, facility, instance and
the catalog that holds them), built only from data that `catalog_schema` has validated. Loading,
overlays and caching live in `catalog.py`; this module imports neither, so the schema can read the
records' defaults without a circle."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from typing import Any

from costopt.core.units import pcie_x16_gbps


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
    Part filters (costopt/hardware/part_filter.py) leave legacy and end-of-life parts out of default searches.
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
    # dense fp8 (fp8, mxfp8) and fp4 (nvfp4, mxfp4) tensor-core peaks and the formats the GPU trains in
    # at them (catalog_schema.Gpu); read by the large-model path only (perf/llm/evaluate.py)
    tflops_fp8: float | None = None
    tflops_fp4: float | None = None
    low_precision_formats: list[str] = field(default_factory=list)
    low_precision_source: str | None = None
    low_precision_date: str | None = None
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
    # a rented node: how it is sold (cost.py `billed_hours`): pricing tier, the shortest rental billed
    # and the step rentals are billed in (0: none / continuous), and the source of those terms
    rental_pricing: str = ""
    min_rental_hours: float = 0.0
    rental_increment_hours: float = 0.0
    rental_terms_source: str = ""
    interruption_note: str = ""
    # rack-scale systems (catalog_schema.Chassis; hardware/rack_scale.py): GPUs of one NVLink domain (None:
    # gpu_slots), the nodes of one rack sold whole, its nameplate power and height, liquid cooling required
    nvlink_domain_gpus: int | None = None
    rack_system_nodes: int | None = None
    rack_system_power_kw: float | None = None
    rack_system_units: int | None = None
    liquid_cooling_required: bool = False


@dataclass(**_RECORD)
class Nic(Sourced, LifeCycled):
    """A network adapter and its switch family: line rate, transport, latency, prices of adapter, switch
    port and cable."""

    id: str
    name: str
    segment: str = "datacenter"  # datacenter | workstation | consumer (catalog_schema.Nic)
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
        "draw 0.75 of server TDP (Epoch energy.py) — docs/sources.md §6, §7e"
    )
    date: str = "2025-06-20"
    # -- the whole cost of owning (cost.py `tco_terms`); each default with its source in `tco_source` --
    facility: str = "colocation"  # colocation (rent space and power per kW-month) | own (your building: PUE only)
    colocation_usd_per_kw_month: float = 194.95
    liquid_pue: float = 1.2  # PUE of the nodes whose GPUs need liquid cooling (TDP above liquid_above_tdp_w)
    liquid_above_tdp_w: float = 1000.0
    support_pct_per_year: float = 6.0  # hardware support contract, % of the hardware price per year
    staff_usd_per_gpu_year: float = 800.0  # operations staff, per GPU and year
    storage_usd_per_tb: float = 200.0  # usable TB of shared all-flash storage, bought once
    storage_tb: float = 0.0  # usable TB bought; 0: sized to the cluster, storage_tb_per_gpu per GPU
    storage_tb_per_gpu: float = 1.0
    cost_of_capital_pct: float = 7.0  # % per year: the purchase financed by a loan repaid over the horizon
    residual_pct_at_3_years: float = 30.0  # resale value after 36 months, % of the hardware price (straight line)
    tco_source: str = (
        "colocation $194.95 per kW-month: CBRE North America Data Center Trends H2 2025, average asking rate of "
        "primary markets (+6.5% year on year; H2 2024: $184.06, cbre.com 2025-02-26); liquid PUE 1.2: cold-plate "
        "direct liquid cooling achieves 1.15-1.25 (scaled2c.com DLC guide); support 6%/year: ESTIMATE inside the "
        "5-7% of hardware cost per year quoted for storage-array maintenance (datastoragereport.com, 2026); staff "
        "$800 per GPU-year: ESTIMATE, one FTE per 250 processors (CTWatch Quarterly 2006, Roskies & Zacharia) at a "
        "loaded $200,000 a year (2010 figure: '$100k/year or more', beowulf list); storage $200 per usable TB: "
        "Pure Storage FlashBlade//E '$0.20 per GB' (2023-03); 1 TB per GPU: ESTIMATE; cost of capital 7%: "
        "ESTIMATE inside the 5.5-7.5% capitalisation rates of data-centre assets (CBRE H2 2018); residual 30% "
        "after 36 months: '25-35% after 36 months' (GPU TCO analysis, v2-pseo-ai.pages.dev, 2026) — "
        "docs/sources.md §11"
    )
    tco_date: str = "2026-02-01"
    tco_estimates: list[str] = field(default_factory=lambda: [
        "support_pct_per_year", "staff_usd_per_gpu_year", "storage_tb_per_gpu", "cost_of_capital_pct",
        "liquid_above_tdp_w"])
    # fields a run's options set (hardware/site_terms.py: --colocation-usd-per-kw-month ...); a file leaves it empty
    given_on_command_line: list[str] = field(default_factory=list)


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
    # network: switches are bought whole (cost.py); a leaf gives ports·o/(1+o) to nodes, the rest up
    oversubscription: float = 1.0  # leaf down:up ratio of a two-tier fabric (1: non-blocking)
    switch_watts_per_port: float = 15.0  # switch power, per port of the box
    switch_rack_units: int = 1
    direct_attach_two_nodes: bool = True  # two nodes cabled port to port, no switch
    rack_power_kw_liquid: float = 80.0  # a liquid-cooled rack (nodes whose GPUs need liquid cooling)
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
    estimates: list[str] = field(default_factory=lambda: ["rack_price_usd", "pdu_price_usd", "support_pct_per_year",
                                                          "switch_watts_per_port", "rack_power_kw_liquid"])
    notes: str = ""
    network_source: str = (
        "switch power 15 W per port: ESTIMATE (a 64-port 400G switch such as the NVIDIA QM9700 draws roughly 750 W "
        "without optics, public knowledge); liquid rack 80 kW: ESTIMATE between 'predictable headroom at 30-50+ kW/"
        "rack' for liquid and hybrid AI racks (coolnetsystem.com, 2026-05-20) and a 135 kW GB300 NVL72 rack (ML-ENG, "
        "docs/sources.md §3c); a switch box costs its ports x the per-port price, i.e. the box price the per-port "
        "figure was derived from (e.g. 64-port 400G: 64 x $560 = $35,840, FS.com $36,000, docs/sources.md §4c)")


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
    # how the price is sold: on-demand | spot | capacity-block | reserved (savings plan / commitment)
    pricing: str = "on-demand"
    min_rental_hours: float = 0.0  # the shortest rental billed (capacity block 24; 1-yr plan 8766)
    rental_increment_hours: float = 0.0  # rentals are billed in whole steps of this (0: continuous)
    rental_terms_source: str = ""
    interruption_note: str = ""  # spot / preemptible: what an interruption means


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
