"""The catalog's schema: what `catalog.load_catalog` checks before it builds a `Catalog`.

Pydantic models, one per kind of entry, strict (unknown keys, wrong types, missing fields, numbers out
of range are errors), each with the same fields, in the same order and with the same defaults as the
record of the same name in `costopt.hardware.catalog` (a test holds the two together). This module is imported
only when a catalog file is validated: a catalog validated before with the same bytes, the same code
and the same costopt version is read from the validated-catalog cache (`catalog.load_catalog`) without it.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from costopt.hardware import records as _records
from costopt.core.checks import is_date
from costopt.core.errors import InputError

# Every number is finite (allow_inf_nan=False below) and at most 1e12: far above any real price, speed or
# size, so a typo such as 1e308 is refused here instead of overflowing to $inf downstream.
MAX_VALUE = 1e12
PositiveFloat = Annotated[float, Field(gt=0, le=MAX_VALUE)]
NonNegativeFloat = Annotated[float, Field(ge=0, le=MAX_VALUE)]


def _calendar_date(v: str) -> str:
    if not is_date(v):
        raise ValueError(f"must be a date YYYY-MM-DD (or YYYY-MM, YYYY), got {v!r}")
    return v


Date = Annotated[str, Field(min_length=4), AfterValidator(_calendar_date)]
Id = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
PcieGen = Literal[3, 4, 5, 6]
Segment = Literal["datacenter", "workstation", "consumer"]
Lifecycle = Literal["current", "legacy", "end_of_life"]
Architecture = Literal["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell",
                       "cdna2", "cdna3", "other"]



def _record_default(record, name: str):
    """A default the hot-path record (catalog.py) holds: one copy of the long source texts."""
    return next(f.default for f in dataclasses.fields(record) if f.name == name)

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class Sourced(_Strict):
    """Provenance shared by every catalog entry."""

    source: Annotated[str, Field(min_length=1)]
    date: Date
    price_source: Annotated[str, Field(min_length=1)]
    price_date: Date
    estimates: list[str] = []
    notes: str = ""

    @model_validator(mode="after")
    def _estimates_name_fields(self):
        fields = set(type(self).model_fields)
        unknown = [f for f in self.estimates if f not in fields]
        if unknown:
            raise ValueError(f"estimates names unknown field(s) {unknown}")
        return self


class LifeCycled(_Strict):
    """Where a part stands in its vendor's line-up, with the source that says so.

    `current`: on sale as a new part; `legacy`: superseded, still sold or supported but not what a
    vendor quotes for a new cluster; `end_of_life`: discontinued (`end_of_life_date` says since when).
    Part filters (costopt/hardware/part_filter.py) leave legacy and end-of-life parts out of default searches.
    """

    lifecycle: Lifecycle = "current"
    end_of_life_date: Date | None = None
    lifecycle_source: str = ""

    @model_validator(mode="after")
    def _lifecycle_sourced(self):
        if self.lifecycle == "end_of_life" and not self.end_of_life_date:
            raise ValueError("lifecycle 'end_of_life' needs end_of_life_date")
        if self.lifecycle != "current" and not self.lifecycle_source.strip():
            raise ValueError(f"lifecycle '{self.lifecycle}' needs lifecycle_source")
        return self


class ReferenceThroughput(_Strict):
    """Published single-GPU training throughput used to scale measured compute times to this GPU.

    `model` is the zoo model it was measured on (ResNet-50 in the reference catalog). A precision
    left out means the GPU has no published figure for it.
    """

    model: str = "resnet50"
    fp32_samples_per_s: PositiveFloat | None = None
    amp_samples_per_s: PositiveFloat | None = None
    source: Annotated[str, Field(min_length=1)]
    date: Date
    estimate: bool = False


class Gpu(Sourced, LifeCycled):
    id: Id
    name: str
    # datacenter: sold and licensed for servers; workstation: pro cards (RTX PRO / RTX Ada) sold for
    # desks and servers; consumer: GeForce / Radeon gaming cards, whose driver licence excludes data-centre use
    segment: Segment
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    form_factor: Literal["pcie", "sxm", "oam"]
    memory_gb: PositiveFloat
    memory_bandwidth_gbs: PositiveFloat
    tflops_fp32: PositiveFloat
    tflops_tf32: PositiveFloat | None = None
    tflops_fp16: PositiveFloat | None = None
    tflops_bf16: PositiveFloat | None = None
    # dense low-precision tensor-core peaks (no sparsity) and the training formats the GPU runs at them:
    # fp8 (E4M3/E5M2, per-tensor scaling as Transformer Engine does it), mxfp8 (OCP block-scaled, 32
    # elements per scale), nvfp4 (NVIDIA 4-bit, 16 per scale), mxfp4 (OCP 4-bit block-scaled);
    # tflops_fp8 is the rate of fp8 and mxfp8, tflops_fp4 that of nvfp4 and mxfp4
    tflops_fp8: PositiveFloat | None = None
    tflops_fp4: PositiveFloat | None = None
    low_precision_formats: list[Literal["fp8", "mxfp8", "nvfp4", "mxfp4"]] = []
    low_precision_source: Annotated[str, Field(min_length=1)] | None = None
    low_precision_date: Date | None = None
    tdp_w: PositiveFloat
    gpu_link: Literal["none", "nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "infinity-fabric"]
    gpu_link_gbs: NonNegativeFloat  # per GPU, per direction, GB/s; 0 when the only path is PCIe
    pcie_gen: PcieGen
    price_usd: PositiveFloat
    launch_year: Annotated[int, Field(ge=1970, le=2100)] | None = None
    # GPU generation: selects the achieved fractions of peak the compute roofline uses (compute.py)
    architecture: Architecture | None = None
    # provenance of the peak fields (tflops_*, memory_bandwidth_gbs): where they are read and when
    peak_source: Annotated[str, Field(min_length=1)] | None = None
    peak_date: Date | None = None
    # Clock under sustained load vs the rated boost clock the peaks are quoted at (compute.py's
    # roofline scales the peaks by sustained / boost; the physical floor keeps the rated peaks).
    # GeForce GPU Boost runs above the rated boost clock when power and temperature allow.
    boost_clock_mhz: PositiveFloat | None = None
    sustained_clock_mhz: PositiveFloat | None = None
    clock_source: Annotated[str, Field(min_length=1)] | None = None
    clock_date: Date | None = None
    # a published single-GPU ResNet-50 training figure (one same-model evidence point, see compute.py)
    throughput: ReferenceThroughput | None = None

    @model_validator(mode="after")
    def _link_consistent(self):
        if self.gpu_link == "none" and self.gpu_link_gbs != 0:
            raise ValueError("gpu_link_gbs must be 0 when gpu_link is 'none'")
        if self.gpu_link != "none" and self.gpu_link_gbs <= 0:
            raise ValueError(f"gpu_link_gbs must be > 0 for gpu_link '{self.gpu_link}'")
        return self

    @model_validator(mode="after")
    def _low_precision_consistent(self):
        f = set(self.low_precision_formats)
        if (self.tflops_fp8 is not None) != bool(f & {"fp8", "mxfp8"}):
            raise ValueError("tflops_fp8 and an fp8/mxfp8 entry in low_precision_formats go together")
        if (self.tflops_fp4 is not None) != bool(f & {"nvfp4", "mxfp4"}):
            raise ValueError("tflops_fp4 and an nvfp4/mxfp4 entry in low_precision_formats go together")
        if bool(f) != (self.low_precision_source is not None) or bool(f) != (self.low_precision_date is not None):
            raise ValueError("low_precision_formats, low_precision_source and low_precision_date go together")
        return self

    @model_validator(mode="after")
    def _peak_provenance(self):
        if (self.peak_source is None) != (self.peak_date is None):
            raise ValueError("peak_source and peak_date go together")
        return self

    @model_validator(mode="after")
    def _clock_provenance(self):
        clock = (self.boost_clock_mhz, self.sustained_clock_mhz, self.clock_source, self.clock_date)
        if any(v is not None for v in clock) and any(v is None for v in clock):
            raise ValueError("boost_clock_mhz, sustained_clock_mhz, clock_source and clock_date go together")
        return self


class Chassis(Sourced, LifeCycled):
    id: Id
    name: str
    form_factor: Literal["pcie", "sxm", "oam"]
    gpu_slots: Literal[1, 2, 4, 8, 16]
    accepts_gpus: list[str] = []  # empty: any GPU of the same form factor
    intra_fabric: Literal["pcie", "nvswitch", "nvlink-bridge", "infinity-fabric"]
    pcie_gen: PcieGen
    gpus_per_pcie_switch: Annotated[int, Field(ge=1, le=16)] = 1
    price_usd: PositiveFloat
    power_overhead_w: NonNegativeFloat
    rack_units: Annotated[int, Field(ge=1, le=48)]
    nics: list[str] = []  # empty: every NIC whose line rate fits one PCIe x16 slot of this chassis
    # NIC adapters a node can carry: >1 lets designs put one adapter per GPU rail (DGX/HGX style)
    max_nics: Annotated[int, Field(ge=1, le=16)] = 1
    usd_per_hour: PositiveFloat | None = None  # set only on a rented cloud node (built from [[instance]])
    # a rented node: the most instances of this type one cluster can rent (cloud_facts.py), and why
    max_nodes: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_nodes_source: str = ""
    rental_pricing: str = ""
    min_rental_hours: NonNegativeFloat = 0.0
    rental_increment_hours: NonNegativeFloat = 0.0
    rental_terms_source: str = ""
    interruption_note: str = ""
    # rack-scale systems (GB200 / GB300 NVL72; costopt/hardware/rack_scale.py): the GPUs that share one
    # NVLink (scale-up) domain through NVLink switch trays, at the GPU's own gpu_link_gbs per direction, even
    # across nodes (None: the node's gpu_slots); the system is sold as whole racks of rack_system_nodes nodes
    # (compute trays), each rack with its own power (rack_system_power_kw, nameplate) and height
    nvlink_domain_gpus: Annotated[int, Field(ge=1, le=100_000)] | None = None
    rack_system_nodes: Annotated[int, Field(ge=2, le=1024)] | None = None
    rack_system_power_kw: PositiveFloat | None = None
    rack_system_units: Annotated[int, Field(ge=1, le=60)] | None = None
    liquid_cooling_required: bool = False

    @model_validator(mode="after")
    def _rack_system_consistent(self):
        rack = (self.rack_system_nodes, self.rack_system_power_kw, self.rack_system_units)
        if any(v is not None for v in rack) and any(v is None for v in rack):
            raise ValueError("rack_system_nodes, rack_system_power_kw and rack_system_units go together")
        d = self.nvlink_domain_gpus
        if d is not None and (d < self.gpu_slots or d % self.gpu_slots):
            raise ValueError(f"nvlink_domain_gpus ({d}) must be a whole multiple of gpu_slots ({self.gpu_slots})")
        if d is not None and d > self.gpu_slots and self.rack_system_nodes is None:
            raise ValueError("an NVLink domain larger than a node needs a rack system (rack_system_nodes ...)")
        if d is not None and self.rack_system_nodes is not None and d > self.rack_system_nodes * self.gpu_slots:
            raise ValueError("nvlink_domain_gpus is larger than one rack system (rack_system_nodes x gpu_slots)")
        return self


class Nic(Sourced, LifeCycled):
    id: Id
    name: str
    # as for GPUs: datacenter adapters (ConnectX, InfiniBand, server Ethernet); consumer: desktop cards, left
    # out of default searches (part_filter.py). Unset in an overlay or a fixture: datacenter.
    segment: Segment = "datacenter"
    line_rate_gbps: PositiveFloat
    transport: Literal["tcp", "rdma"]
    latency_us: PositiveFloat
    price_usd: PositiveFloat
    switch_port_price_usd: PositiveFloat
    switch_ports: Annotated[int, Field(ge=4, le=1024)]
    # one link (cable, or fibre with its two transceivers) from a port to a switch port; see cost.py
    cable_price_usd: NonNegativeFloat
    cable_source: str = ""
    cable_price_date: Date | None = None
    power_w: NonNegativeFloat = 25.0

    @model_validator(mode="after")
    def _cable_sourced(self):
        if self.cable_price_usd > 0 and not (self.cable_source.strip() and self.cable_price_date):
            raise ValueError("cable_price_usd needs cable_source and cable_price_date")
        return self


class Site(_Strict):
    """Running-cost assumptions for total cost of ownership."""

    electricity_usd_per_kwh: PositiveFloat = 0.0826
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = 1.5
    average_draw_fraction: Annotated[float, Field(gt=0, le=1.0)] = 0.75
    source: str = _record_default(_records.Site, "source")
    date: Date = _record_default(_records.Site, "date")
    facility: Literal["colocation", "own"] = "colocation"
    colocation_usd_per_kw_month: NonNegativeFloat = _record_default(_records.Site, "colocation_usd_per_kw_month")
    liquid_pue: Annotated[float, Field(ge=1.0, le=3.0)] = _record_default(_records.Site, "liquid_pue")
    liquid_above_tdp_w: PositiveFloat = _record_default(_records.Site, "liquid_above_tdp_w")
    support_pct_per_year: Annotated[float, Field(ge=0, le=100)] = _record_default(_records.Site, "support_pct_per_year")
    staff_usd_per_gpu_year: NonNegativeFloat = _record_default(_records.Site, "staff_usd_per_gpu_year")
    storage_usd_per_tb: NonNegativeFloat = _record_default(_records.Site, "storage_usd_per_tb")
    storage_tb: NonNegativeFloat = 0.0
    storage_tb_per_gpu: NonNegativeFloat = _record_default(_records.Site, "storage_tb_per_gpu")
    cost_of_capital_pct: Annotated[float, Field(ge=0, le=100)] = _record_default(_records.Site, "cost_of_capital_pct")
    residual_pct_at_3_years: Annotated[float, Field(ge=0, le=100)] = _record_default(_records.Site,
                                                                                    "residual_pct_at_3_years")
    tco_source: str = _record_default(_records.Site, "tco_source")
    tco_date: Date = _record_default(_records.Site, "tco_date")
    tco_estimates: list[str] = ["support_pct_per_year", "staff_usd_per_gpu_year", "storage_tb_per_gpu",
                                "cost_of_capital_pct", "liquid_above_tdp_w"]
    given_on_command_line: list[str] = []  # fields a run's options set (hardware/site_terms.py); a file leaves it empty


class Facility(_Strict):
    """The allowed values of `catalog.Facility` (its docstring says how racks, PDUs and support are counted)."""

    rack_price_usd: NonNegativeFloat = 1500.0
    rack_units_per_rack: Annotated[int, Field(ge=4, le=60)] = 42
    rack_power_kw: PositiveFloat = 17.3
    pdu_price_usd: NonNegativeFloat = 1500.0
    pdus_per_rack: Annotated[int, Field(ge=0, le=8)] = 2
    support_pct_per_year: Annotated[float, Field(ge=0, le=100)] = 0.0
    oversubscription: Annotated[float, Field(ge=1.0, le=16.0)] = 1.0
    switch_watts_per_port: NonNegativeFloat = 15.0
    switch_rack_units: Annotated[int, Field(ge=1, le=8)] = 1
    direct_attach_two_nodes: bool = True
    rack_power_kw_liquid: PositiveFloat = 80.0
    source: str = _record_default(_records.Facility, "source")
    date: str = _record_default(_records.Facility, "date")
    price_source: str = ("rack $1,500: estimate, no rack price in a stored source; PDU $1,500: inside the $700-1,800 "
                         "range of switched rack PDUs (ipsecuritydepot.com rack PDU buyer's guide, 2026)")
    price_date: str = "2026-06-11"
    estimates: list[str] = ["rack_price_usd", "pdu_price_usd", "support_pct_per_year", "switch_watts_per_port",
                            "rack_power_kw_liquid"]
    notes: str = ""
    network_source: str = _record_default(_records.Facility, "network_source")


class CatalogInfo(_Strict):
    name: str
    description: str = ""
    date: Date
    base: str = ""  # overlay / cloud catalog: the catalog it builds on (built-in name or path)
    kind: Literal["owned", "cloud"] = "owned"  # cloud: nodes are rented [[instance]]s priced per hour
    # cloud: whose instances these are; "aws" takes network and capacity caps from data/cloud_instances.toml
    provider: str = ""


class Instance(Sourced):
    """A cloud instance: one rented node with a fixed GPU type and count, network and hourly price."""

    id: Id
    name: str = ""
    gpu: Id  # a GPU id of the base catalog (specs come from there)
    gpu_count: Literal[1, 2, 4, 8, 16]
    # the instance's sustained network bandwidth, all its adapters together; None: from the provider's
    # facts (data/cloud_instances.toml), the one source shared with `catalog import`
    network_gbps: PositiveFloat | None = None
    transport: Literal["tcp", "rdma"] | None = None  # rdma: EFA / InfiniBand / RoCE (None: facts, else tcp)
    # the most instances of this type one cluster can rent; None: the provider's default (cloud_facts.py)
    max_instances: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_instances_source: str = ""
    intra_fabric: Literal["pcie", "nvswitch", "nvlink-bridge", "infinity-fabric"] | None = None
    usd_per_hour: PositiveFloat  # on-demand price of one instance, per hour
    spot_usd_per_hour: PositiveFloat | None = None
    vcpus: PositiveFloat | None = None
    memory_gib: PositiveFloat | None = None
    region: str = ""
    pricing: Literal["on-demand", "spot", "capacity-block", "reserved"] = "on-demand"
    min_rental_hours: Annotated[float, Field(ge=0, le=100_000)] = 0.0
    rental_increment_hours: Annotated[float, Field(ge=0, le=100_000)] = 0.0
    rental_terms_source: str = ""
    interruption_note: str = ""

    @model_validator(mode="after")
    def _cap_sourced(self):
        if self.max_instances is not None and not self.max_instances_source.strip():
            raise ValueError("max_instances needs max_instances_source (where the cap comes from)")
        if (self.min_rental_hours or self.rental_increment_hours) and not self.rental_terms_source.strip():
            raise ValueError("min_rental_hours / rental_increment_hours need rental_terms_source (where the terms come from)")
        if self.pricing == "spot" and not self.interruption_note.strip():
            raise ValueError("a spot price needs interruption_note (what an interruption costs the job)")
        return self


class Catalog(_Strict):
    catalog: CatalogInfo
    site: Site = Site()
    facility: Facility = Facility()
    gpu: list[Gpu]
    chassis: list[Chassis]
    nic: list[Nic]
    instance: list[Instance] = []
    # GPUs an overlay's [availability] took off the offer: never in a design, but their specs stay
    # known so compute can still be scaled from a measured GPU (e.g. the H200 profiles).
    unavailable_gpu: list[Gpu] = []
    path: str = ""

    @field_validator("gpu", "chassis", "nic")
    @classmethod
    def _not_empty(cls, v):
        if not v:
            raise ValueError("needs at least one entry")
        return v


def error_location(data: dict, loc: tuple) -> str:
    """Turn a pydantic error location into 'gpu[3] (id 'h100-sxm'), field 'price_usd''."""
    parts: list[str] = []
    node = data
    i = 0
    while i < len(loc):
        key = loc[i]
        if isinstance(key, str) and i + 1 < len(loc) and isinstance(loc[i + 1], int):
            idx = loc[i + 1]
            entry = None
            if isinstance(node, dict) and isinstance(node.get(key), list) and idx < len(node[key]):
                entry = node[key][idx]
            label = f"{key}[{idx}]"
            if isinstance(entry, dict) and "id" in entry:
                label += f" (id '{entry['id']}')"
            parts.append(label)
            node = entry if isinstance(entry, dict) else {}
            i += 2
            continue
        if isinstance(node, dict) and isinstance(node.get(key), dict):
            parts.append(f"[{key}]")
            node = node[key]
        else:
            parts.append(f"field '{key}'")
            node = {}
        i += 1
    return ", ".join(parts) if parts else "top level"


ENTRY_MODELS = {"gpu": Gpu, "chassis": Chassis, "nic": Nic}


def _message(err: dict) -> str:
    return {"extra_forbidden": "unknown key", "missing": "missing required field"}.get(err["type"], err["msg"])


def validate_catalog(data: dict, where: str) -> dict:
    """The catalog `data` (read from TOML, bases and instances resolved) checked against the schema, as
    plain data with every default filled in; a problem is an `InputError` naming `where`, the entry and
    the field."""
    try:
        cat = Catalog.model_validate({**data, "path": where})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = error_location(data, tuple(err["loc"]))
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise InputError(f"{where}: {loc}: {_message(err)}{more}") from None
    return cat.model_dump()


def validate_overlay_entry(kind: str, merged: dict, label: str) -> None:
    """An overlay's entry merged onto its base part must still be a valid `kind` entry."""
    try:
        ENTRY_MODELS[kind].model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        fld = ".".join(str(x) for x in err["loc"] if isinstance(x, str)) or "?"
        raise InputError(f"{label}, field '{fld}': {_message(err)}") from None


def validate_instances(raw: list, where: str) -> list[Instance]:
    """A cloud catalog's [[instance]] entries, validated (the first problem is an `InputError`)."""
    try:
        return [Instance.model_validate(e) for e in raw]
    except ValidationError as exc:
        err = exc.errors()[0]
        idx = next((i for i, e in enumerate(raw) if _fails(Instance, e)), 0)
        entry = raw[idx] if idx < len(raw) else {}
        lab = f"instance[{idx}]" + (f" (id '{entry['id']}')" if isinstance(entry, dict) and "id" in entry else "")
        loc = ", ".join(f"field '{x}'" for x in err["loc"] if isinstance(x, str))
        raise InputError(f"{where}: {lab}{', ' + loc if loc else ''}: {_message(err)}") from None


def _fails(model, entry) -> bool:
    try:
        model.model_validate(entry)
        return False
    except ValidationError:
        return True
