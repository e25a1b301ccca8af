"""Workload mix files: several training jobs sharing one cluster purchase, and the limits on it.

A mix file is TOML. Every table and key is optional except at least one job; unknown keys are
errors. Layout (see `examples/mix.toml`):

    [mix]        name, description                      (labels only)
    [jobs.NAME]  model, precision, batch_per_gpu, weight, min_throughput,
                 deadline_hours + epochs + dataset_size, gpus (only these GPU ids)
                 a large-model job (a transformer: a zoo one such as llama3_70b, or model_config = "FILE.toml"
                 relative to the mix file): tokens (to train), seq_len, global_batch (sequences),
                 strategies (fsdp, zero1, ...), deadline_hours (with tokens); its throughput is tokens/s
    [limits]     budget_usd, max_power_kw, max_rack_units, max_nodes, max_gpu_types, one_nic_type
    [inventory]  gpus / chassis / nics = { id = units already owned }
    [stock]      gpus / chassis / nics = { id = most units that can be bought }
    [[discount]] gpu | chassis | nic = id, tiers = [{ from_units, unit_price_usd }, ...]

A job's target throughput (samples/s; tokens/s for a large-model job) is the larger of `min_throughput`
and epochs × dataset_size / (deadline_hours × 3600) (tokens / (deadline_hours × 3600) for a large-model
job). `weight` (default 1) scales the job in the
weighted-throughput objective. Validation names the file, the job or table, and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from costopt.hardware.catalog import Catalog
from costopt.hardware.catalog_schema import error_location
from costopt.core.errors import InputError
from costopt.core.files import read_toml

PositiveFloat = Annotated[float, Field(gt=0, le=1e15)]  # finite (allow_inf_nan=False) and far from overflow
Units = Annotated[int, Field(ge=0, le=10**9)]
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
PARTS = ("gpus", "chassis", "nics")  # part kinds, as spelt in [inventory] / [stock]
_DISCOUNT_KIND = {"gpu": "gpus", "chassis": "chassis", "nic": "nics"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class _Float(_Strict):
    # TOML integers are fine where a float is expected (budget_usd = 500000); booleans are not numbers
    # (lax mode would read `budget_usd = true` as 1.0)
    model_config = ConfigDict(extra="forbid", strict=False, frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, v, info):
        if isinstance(v, bool) and cls.model_fields[info.field_name].annotation is not bool:
            raise ValueError(f"must be a number, not {str(v).lower()}")
        return v


class MixInfo(_Strict):
    name: str = ""
    description: str = ""


LLM_FIELDS = ("tokens", "model_config", "seq_len", "global_batch", "strategies")  # a large-model job's own keys
DP_FIELDS = ("batch_per_gpu", "epochs", "dataset_size")  # a data-parallel job's own keys


class JobSpec(_Float):
    model: Annotated[str, Field(min_length=1)] | None  # required unless model_config names the architecture
    precision: Literal["fp32", "amp_bf16", "amp_fp16"] = "fp32"  # a large-model job: amp_bf16 unless given
    batch_per_gpu: Annotated[int, Field(ge=1, strict=True)] | None = None
    weight: PositiveFloat = 1.0
    min_throughput: PositiveFloat | None = None
    deadline_hours: PositiveFloat | None = None
    epochs: PositiveFloat | None = None
    dataset_size: PositiveFloat | None = None
    gpus: list[str] = []
    tokens: PositiveFloat | None = None
    model_config_file: Annotated[str, Field(min_length=1)] | None = Field(None, alias="model_config")
    seq_len: Annotated[int, Field(ge=1, le=10**7, strict=True)] | None = None
    global_batch: Annotated[int, Field(ge=1, le=10**9, strict=True)] | None = None
    strategies: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _model_or_config(cls, data):
        if isinstance(data, dict) and "model_config" in data and "model" not in data:
            return {**data, "model": None}  # a transformer described by its architecture file
        return data

    @model_validator(mode="after")
    def _deadline_complete(self):
        if self.tokens is not None:  # a large-model job: its work is tokens, its deadline tokens / hours
            dp = [k for k in DP_FIELDS if getattr(self, k) is not None]
            if dp:
                raise ValueError(f"{', '.join(dp)}: not for a large-model job (its work is tokens; its layout and "
                                 "micro-batch are searched)")
            return self
        given = [k for k in ("deadline_hours", "epochs", "dataset_size") if getattr(self, k) is not None]
        if given and len(given) != 3:
            missing = [k for k in ("deadline_hours", "epochs", "dataset_size") if k not in given]
            raise ValueError(f"a deadline needs deadline_hours, epochs and dataset_size (or, for a large-model "
                             f"job, deadline_hours and tokens); missing {', '.join(missing)}")
        return self

    @property
    def large_model_fields(self) -> list[str]:
        """The large-model keys this job gives (empty: none)."""
        return [k for k in LLM_FIELDS
                if getattr(self, "model_config_file" if k == "model_config" else k) not in (None, [])]

    @property
    def target(self) -> float | None:
        """Samples/s (tokens/s for a large-model job) this job must reach (None: no target)."""
        need = None
        if self.deadline_hours is not None and self.tokens is not None:
            need = self.tokens / (self.deadline_hours * 3600.0)
        elif self.deadline_hours is not None:
            need = self.epochs * self.dataset_size / (self.deadline_hours * 3600.0)
        if self.min_throughput is not None:
            need = max(need or 0.0, self.min_throughput)
        return need


class Limits(_Float):
    budget_usd: PositiveFloat | None = None
    max_power_kw: PositiveFloat | None = None
    max_rack_units: PositiveFloat | None = None
    max_nodes: Annotated[int, Field(ge=1, strict=True)] | None = None
    max_gpu_types: Annotated[int, Field(ge=1, strict=True)] | None = None  # distinct GPU models in the cluster
    one_nic_type: Annotated[bool, Field(strict=True)] = True


class PartCounts(_Strict):
    gpus: dict[str, Units] = {}
    chassis: dict[str, Units] = {}
    nics: dict[str, Units] = {}


class Tier(_Float):
    from_units: Annotated[int, Field(ge=1, strict=True)]
    unit_price_usd: PositiveFloat


class Discount(_Strict):
    gpu: str | None = None
    chassis: str | None = None
    nic: str | None = None
    tiers: Annotated[list[Tier], Field(min_length=1)]

    @model_validator(mode="after")
    def _one_part(self):
        named = [k for k in ("gpu", "chassis", "nic") if getattr(self, k) is not None]
        if len(named) != 1:
            raise ValueError("name exactly one of gpu, chassis, nic")
        starts = [t.from_units for t in self.tiers]
        if any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError(f"tiers must have strictly increasing from_units, got {starts}")
        return self

    @property
    def part(self) -> tuple[str, str]:
        """(kind, id) with kind one of PARTS."""
        for k in ("gpu", "chassis", "nic"):
            v = getattr(self, k)
            if v is not None:
                return _DISCOUNT_KIND[k], v
        raise AssertionError("validated")


class MixFile(_Strict):
    mix: MixInfo = MixInfo()
    jobs: Annotated[dict[Name, JobSpec], Field(min_length=1)]
    limits: Limits = Limits()
    inventory: PartCounts = PartCounts()
    stock: PartCounts = PartCounts()
    discount: list[Discount] = []


@dataclass(frozen=True)
class Mix:
    """A validated mix file; `where` names it in messages."""

    spec: MixFile
    where: str

    @property
    def jobs(self) -> dict[str, JobSpec]:
        return dict(self.spec.jobs)

    def check_catalog(self, catalog: Catalog) -> None:
        """Every part the file names exists in the catalog; a job's GPU list too."""
        known = {"gpus": catalog.gpus, "chassis": catalog.chassis_by_id, "nics": catalog.nics}
        for table in ("inventory", "stock"):
            counts: PartCounts = getattr(self.spec, table)
            for kind in PARTS:
                for pid in getattr(counts, kind):
                    if pid not in known[kind]:
                        raise InputError(f"{self.where}: [{table}], field '{kind}': unknown {kind} id '{pid}' "
                                         f"in catalog {catalog.catalog.name} (known: {', '.join(known[kind])})")
        seen: set[tuple[str, str]] = set()
        for i, d in enumerate(self.spec.discount):
            kind, pid = d.part
            if pid not in known[kind]:
                raise InputError(f"{self.where}: discount[{i}]: unknown {kind} id '{pid}' in catalog "
                                 f"{catalog.catalog.name}")
            if (kind, pid) in seen:
                raise InputError(f"{self.where}: discount[{i}]: a second discount for '{pid}'")
            seen.add((kind, pid))
        for name, job in self.spec.jobs.items():
            bad = [g for g in job.gpus if g not in catalog.gpus]
            if bad:
                raise InputError(f"{self.where}: job '{name}', field 'gpus': unknown gpu {', '.join(map(repr, bad))}")


def parse_mix(data: dict, where: str) -> Mix:
    """Validate a mix already read from TOML."""
    try:
        spec = MixFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        if len(loc) >= 2 and loc[0] == "jobs" and isinstance(loc[1], str):
            rest = error_location(data.get("jobs", {}).get(loc[1], {}), loc[2:]) if len(loc) > 2 else ""
            label = f"job '{loc[1]}'" + (f", {rest}" if rest and rest != "top level" else "")
        else:
            label = error_location(data, loc)
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "missing required field"
        elif err["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise InputError(f"{where}: {label}: {msg}{more}") from None
    return Mix(spec, where)


def load_mix(path: str | Path) -> Mix:
    """Read and validate a mix file (TOML)."""
    p = Path(path)
    return parse_mix(read_toml(p, "workload mix file"), str(p))
