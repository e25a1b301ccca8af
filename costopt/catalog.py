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
"""

from __future__ import annotations

import tomllib
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import InputError
from .units import PCIE_X16_GB_PER_S, pcie_x16_gbps

BUILTIN_CATALOG_DIR = Path(__file__).parent / "catalogs"
REFERENCE_CATALOG = BUILTIN_CATALOG_DIR / "reference-2026.toml"

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
Id = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
PcieGen = Literal[3, 4, 5, 6]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Sourced(_Strict):
    """Provenance shared by every catalog entry."""

    source: Annotated[str, Field(min_length=1)]
    date: Annotated[str, Field(min_length=4)]
    price_source: Annotated[str, Field(min_length=1)]
    price_date: Annotated[str, Field(min_length=4)]
    estimates: list[str] = []
    notes: str = ""

    @model_validator(mode="after")
    def _estimates_name_fields(self):
        fields = set(type(self).model_fields)
        unknown = [f for f in self.estimates if f not in fields]
        if unknown:
            raise ValueError(f"estimates names unknown field(s) {unknown}")
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
    date: Annotated[str, Field(min_length=4)]
    estimate: bool = False


class Gpu(Sourced):
    id: Id
    name: str
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    form_factor: Literal["pcie", "sxm", "oam"]
    memory_gb: PositiveFloat
    memory_bandwidth_gbs: PositiveFloat
    tflops_fp32: PositiveFloat
    tflops_tf32: PositiveFloat | None = None
    tflops_fp16: PositiveFloat | None = None
    tflops_bf16: PositiveFloat | None = None
    tdp_w: PositiveFloat
    gpu_link: Literal["none", "nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "infinity-fabric"]
    gpu_link_gbs: NonNegativeFloat  # per GPU, per direction, GB/s; 0 when the only path is PCIe
    pcie_gen: PcieGen
    price_usd: PositiveFloat
    launch_year: int | None = None
    throughput: ReferenceThroughput | None = None

    @model_validator(mode="after")
    def _link_consistent(self):
        if self.gpu_link == "none" and self.gpu_link_gbs != 0:
            raise ValueError("gpu_link_gbs must be 0 when gpu_link is 'none'")
        if self.gpu_link != "none" and self.gpu_link_gbs <= 0:
            raise ValueError(f"gpu_link_gbs must be > 0 for gpu_link '{self.gpu_link}'")
        return self

    def supports(self, precision: str) -> bool:
        """Whether the GPU has a fast path for this training precision."""
        if precision == "fp32":
            return True
        if precision == "amp_bf16":
            return self.tflops_bf16 is not None
        if precision == "amp_fp16":
            return self.tflops_fp16 is not None
        return False


class Chassis(Sourced):
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


class Nic(Sourced):
    id: Id
    name: str
    line_rate_gbps: PositiveFloat
    transport: Literal["tcp", "rdma"]
    latency_us: PositiveFloat
    price_usd: PositiveFloat
    switch_port_price_usd: PositiveFloat
    switch_ports: Annotated[int, Field(ge=4, le=1024)]
    power_w: NonNegativeFloat = 25.0


class Site(_Strict):
    """Running-cost assumptions for total cost of ownership."""

    electricity_usd_per_kwh: PositiveFloat = 0.0826
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = 1.5
    average_draw_fraction: Annotated[float, Field(gt=0, le=1.0)] = 0.75
    source: str = (
        "electricity: EIA 2025 US industrial average via epoch-research/training-cost-trends energy.py "
        "(2025-06-20); PUE 1.5: enterprise colocation range 1.5-1.6 (SemiAnalysis via Epoch); average "
        "draw 0.75 of server TDP (Epoch energy.py) — shared/research/hardware_facts.md §6, §7e"
    )
    date: str = "2025-06-20"


class CatalogInfo(_Strict):
    name: str
    description: str = ""
    date: str


class Catalog(_Strict):
    catalog: CatalogInfo
    site: Site = Site()
    gpu: list[Gpu]
    chassis: list[Chassis]
    nic: list[Nic]
    path: str = ""

    @field_validator("gpu", "chassis", "nic")
    @classmethod
    def _not_empty(cls, v):
        if not v:
            raise ValueError("needs at least one entry")
        return v

    @cached_property
    def gpus(self) -> dict[str, Gpu]:
        return {g.id: g for g in self.gpu}

    @cached_property
    def chassis_by_id(self) -> dict[str, Chassis]:
        return {c.id: c for c in self.chassis}

    @cached_property
    def nics(self) -> dict[str, Nic]:
        return {n.id: n for n in self.nic}

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



def _locate(data: dict, loc: tuple) -> str:
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


def _check_cross_references(cat: Catalog, where: str) -> None:
    for kind, entries in (("gpu", cat.gpu), ("chassis", cat.chassis), ("nic", cat.nic)):
        seen: set[str] = set()
        for idx, e in enumerate(entries):
            if e.id in seen:
                raise InputError(f"{where}: {kind}[{idx}]: duplicate id '{e.id}'")
            seen.add(e.id)
    for idx, ch in enumerate(cat.chassis):
        label = f"{where}: chassis[{idx}] (id '{ch.id}')"
        for gid in ch.accepts_gpus:
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
            if rate > cap:
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
    try:
        cat = Catalog.model_validate({**data, "path": where})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _locate(data, tuple(err["loc"]))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "missing required field"
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise InputError(f"{where}: {loc}: {msg}{more}") from None
    _check_cross_references(cat, where)
    return cat


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load and validate a catalog file; None loads the built-in reference catalog."""
    p = Path(path) if path is not None else REFERENCE_CATALOG
    if not p.exists():
        raise InputError(f"catalog file not found: {p}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read: {exc}") from None
    return parse_catalog(data, str(p))


def intra_node_gb_per_s(gpu: Gpu, chassis: Chassis) -> float:
    """Spec per-GPU, per-direction bandwidth of the GPU-to-GPU path inside one node (GB/s)."""
    if chassis.intra_fabric in ("nvswitch", "infinity-fabric", "nvlink-bridge") and gpu.gpu_link_gbs > 0:
        return gpu.gpu_link_gbs
    return host_pcie_gb_per_s(gpu, chassis)


def host_pcie_gb_per_s(gpu: Gpu, chassis: Chassis) -> float:
    """Spec per-direction PCIe bandwidth between one GPU and the host (GB/s)."""
    return PCIE_X16_GB_PER_S[min(gpu.pcie_gen, chassis.pcie_gen)]
