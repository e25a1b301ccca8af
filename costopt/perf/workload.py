"""Workload zoo: each model's gradient tensors, when they become ready, and what a step costs.

A zoo entry (`costopt/data/zoo/<model>.json`, built by `tools/build_zoo.py` from the H200
measurements of docs/sources.md §12a) holds:

- tensor sets: parameter tensors in the order their gradients become ready in backward, with the
  ready time as a fraction of backward (`pytorch`: torchvision/transformers definitions, measured;
  `tensorflow`: tf_cnn_benchmarks definitions for the 2017 CNN benchmarks, with batch-norm moving
  statistics as load-only entries for PS placement);
- compute profiles: forward, backward and optimizer-step time and peak memory per
  (gpu, precision, batch), measured;
- `flops`: matmul FLOPs and other memory traffic per training sample (tools/zoo_flops.py).

Compute on any GPU, measured or not, is predicted by costopt/perf/compute.py (measured > published
same-model ratio > roofline, never faster than the GPU's peak). Gradients are fp32 in every precision
(AMP keeps fp32 master weights), so gradient bytes = 4 x parameters.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import Catalog, Gpu
from costopt.perf.compute import (DEFAULT_FRAMEWORK, PRECISIONS, PROFILE_PRECISION, ZOO_DIR, ComputeEstimate,
                                  ProfilePoint, estimate, framework_note)
from costopt.core.errors import InputError
from costopt.core.files import read_json
from costopt.core.units import gb_to_bytes

GRADIENT_BYTES_PER_PARAM = 4  # fp32 gradients (AMP keeps fp32 master weights and gradients)
_PROFILE_PRECISION = PROFILE_PRECISION


@dataclass(frozen=True)
class TensorSet:
    """Parameter tensors in backward (gradient-ready) order."""

    name: str
    source: str
    names: tuple[str, ...]
    numel: np.ndarray  # int64
    ready_fraction: np.ndarray  # float64 in [0, 1], non-decreasing
    trainable: np.ndarray  # bool; False = load-only (BN moving statistics)

    @property
    def gradient_bytes(self) -> np.ndarray:
        return np.where(self.trainable, self.numel * GRADIENT_BYTES_PER_PARAM, 0).astype(np.float64)

    @property
    def total_gradient_bytes(self) -> float:
        return float(self.gradient_bytes.sum())

    @property
    def n_trainable(self) -> int:
        return int(self.trainable.sum())

    @property
    def largest_gradient_bytes(self) -> float:
        """Bytes of the largest trainable tensor (0 for an empty set): what one request stream must carry whole."""
        return float(self.gradient_bytes.max()) if len(self.numel) else 0.0

    def creation_order_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """All variables' bytes (load-only included) and trainable flags, in creation order."""
        return (self.numel[::-1] * GRADIENT_BYTES_PER_PARAM).astype(np.float64), self.trainable[::-1]

    def buckets(self, bucket_bytes: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group trainable tensors, in ready order, into buckets of at least `bucket_bytes`.

        Returns (bytes per bucket, ready fraction of the bucket's last tensor, tensors per bucket).
        A bucket closes as soon as it reaches the size, as in DDP/Horovod fusion.
        """
        sizes = self.gradient_bytes[self.trainable]
        ready = self.ready_fraction[self.trainable]
        out_bytes, out_ready, out_count = [], [], []
        acc, count = 0.0, 0
        for size, r in zip(sizes, ready):  # loop over tensors of one model, not over designs
            acc += size
            count += 1
            if acc >= bucket_bytes:
                out_bytes.append(acc)
                out_ready.append(r)
                out_count.append(count)
                acc, count = 0.0, 0
        if count:
            out_bytes.append(acc)
            out_ready.append(ready[-1])
            out_count.append(count)
        return np.array(out_bytes), np.array(out_ready), np.array(out_count, dtype=np.float64)


@dataclass(frozen=True)
class Workload:
    model: str
    description: str
    sample_unit: str
    optimizer: str
    default_batch: int
    tensor_sets: dict[str, TensorSet]
    profiles: tuple[ProfilePoint, ...]
    path: str
    flops: dict | None = None  # zoo `flops` (tools/zoo_flops.py); None for a profile file without it
    framework: str = DEFAULT_FRAMEWORK  # software stack whose host time the compute carries (compute.py)

    def tensors(self, tensor_set: str = "pytorch") -> TensorSet:
        if tensor_set not in self.tensor_sets:
            raise InputError(
                f"model '{self.model}' has no '{tensor_set}' tensor set (has: {', '.join(sorted(self.tensor_sets))})"
            )
        return self.tensor_sets[tensor_set]

    def precisions(self) -> list[str]:
        have = {p.precision for p in self.profiles}
        return [p for p in PRECISIONS if _PROFILE_PRECISION[p] in have]

    def compute(self, gpu: Gpu, precision: str, batch: int, catalog: Catalog,
                withhold: frozenset = frozenset()) -> ComputeEstimate:
        """Forward/backward/step time and peak memory of one `gpu` at `batch` and `precision` (compute.py)."""
        return estimate(self.model, self.profiles, self.flops, gpu, precision, batch, catalog, withhold=withhold,
                        framework=self.framework)

    def with_framework(self, framework: str) -> "Workload":
        """The same workload under another software stack (compute.py `framework_note` checks the name)."""
        framework_note(framework)
        return dataclasses.replace(self, framework=framework)


# Largest values a profile may hold: a step of about 3 hours, a petabyte of memory, 10^13 parameters in
# one tensor; past these a number is a typo, and the products the model forms stay finite.
_MAX_MS = 1e7
_MAX_BYTES = 1e15
_MAX_NUMEL = 10**13


def _number(v, where: str, *, minimum: float, maximum: float, strict_min: bool = True) -> float:
    """A JSON number (not a string, not a bool, not null) in range; `where` names the field."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        shown = "null" if v is None else repr(v)
        raise InputError(f"{where}: must be a number, got {shown}", field=where.rsplit(" ", 1)[-1])
    x = float(v)
    if not math.isfinite(x) or (x <= minimum if strict_min else x < minimum) or x > maximum:
        rel = ">" if strict_min else ">="
        raise InputError(f"{where}: must be a finite number {rel} {minimum:g} and at most {maximum:g}, got {v!r}",
                         field=where.rsplit(" ", 1)[-1])
    return x


def _whole(v, where: str, *, minimum: int, maximum: int) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        shown = "null" if v is None else repr(v)
        raise InputError(f"{where}: must be a whole number in [{minimum}, {maximum:g}], got {shown}",
                         field=where.rsplit(" ", 1)[-1])
    return v


def _text(v, where: str) -> str:
    if not isinstance(v, str):
        raise InputError(f"{where}: must be a string, got {'null' if v is None else repr(v)}",
                         field=where.rsplit(" ", 1)[-1])
    return v


def _table(v, where: str, kind: type = dict):
    if not isinstance(v, kind):
        name = "an object" if kind is dict else "a list"
        raise InputError(f"{where}: must be {name}, got {type(v).__name__}", field=where.rsplit(" ", 1)[-1])
    return v


def _parse_profile(p: dict, at: str, where: str) -> ProfilePoint:
    _table(p, f"{where}: {at}")
    for key in ("gpu", "precision", "batch", "forward_ms", "backward_ms", "step_ms", "peak_mem_bytes"):
        if key not in p:
            raise InputError(f"{where}: {at}: missing field '{key}'", field=key)
    precision = _text(p["precision"], f"{where}: {at}, field precision")
    if precision not in ("fp32", "amp_bf16", "amp_fp16"):
        raise InputError(f"{where}: {at}: profile precision {precision!r} unknown (fp32, amp_bf16, amp_fp16)",
                         field="precision")
    f = f"{where}: {at}, field"
    return ProfilePoint(
        gpu=_text(p["gpu"], f"{f} gpu"), precision=precision,
        batch=_whole(p["batch"], f"{f} batch", minimum=1, maximum=10**9),
        forward_ms=_number(p["forward_ms"], f"{f} forward_ms", minimum=0, maximum=_MAX_MS),
        backward_ms=_number(p["backward_ms"], f"{f} backward_ms", minimum=0, maximum=_MAX_MS),
        step_ms=_number(p["step_ms"], f"{f} step_ms", minimum=0, maximum=_MAX_MS, strict_min=False),
        peak_mem_bytes=_number(p["peak_mem_bytes"], f"{f} peak_mem_bytes", minimum=0, maximum=_MAX_BYTES),
        source=_text(p.get("source", where), f"{f} source"), date=_text(p.get("date", ""), f"{f} date"),
    )


def _parse_workload(data: dict, where: str) -> Workload:
    """Validate a zoo-format workload field by field; every error names the entry and the field."""
    try:
        for key in ("model", "default_batch", "tensor_sets", "profiles"):
            if key not in data:
                raise InputError(f"{where}: missing field '{key}'", field=key)
        sets = {}
        for set_name, body in _table(data["tensor_sets"], f"{where}: field tensor_sets").items():
            at = f"{where}: tensor set '{set_name}'"
            _table(body, at)
            if "tensors" not in body:
                raise InputError(f"{at}: missing field 'tensors'", field="tensors")
            tensors = _table(body["tensors"], f"{at}, field tensors", list)
            if not tensors:
                raise InputError(f"{at} is empty", field="tensors")
            names, numel, ready, train = [], [], [], []
            for i, t in enumerate(tensors):
                tat = f"{at}, tensors[{i}]"
                _table(t, tat)
                for key in ("name", "numel", "ready_fraction"):
                    if key not in t:
                        raise InputError(f"{tat}: missing field '{key}'", field=key)
                names.append(str(t["name"]))
                numel.append(_whole(t["numel"], f"{tat}, field numel", minimum=0, maximum=_MAX_NUMEL))
                ready.append(_number(t["ready_fraction"], f"{tat}, field ready_fraction", minimum=0, maximum=1,
                                     strict_min=False))
                tr = t.get("trainable", True)
                if not isinstance(tr, bool):
                    raise InputError(f"{tat}, field trainable: must be true or false, got {tr!r}", field="trainable")
                train.append(tr)
            r = np.array(ready)
            if np.any(np.diff(r) < -1e-12):
                raise InputError(f"{at}: ready_fraction must be in [0,1] and non-decreasing", field="ready_fraction")
            sets[set_name] = TensorSet(
                name=set_name, source=str(body.get("source", "")), names=tuple(names),
                numel=np.array(numel, dtype=np.int64), ready_fraction=r, trainable=np.array(train, dtype=bool),
            )
        raw_profiles = _table(data["profiles"], f"{where}: field profiles", list)
        if not raw_profiles:
            raise InputError(f"{where}: field profiles: empty (a profile file needs at least one measured "
                             f"(gpu, precision, batch) entry)", field="profiles")
        profiles = tuple(_parse_profile(p, f"profiles[{i}]", where) for i, p in enumerate(raw_profiles))
        default_batch = _whole(data["default_batch"], f"{where}: field default_batch", minimum=1, maximum=10**9)
        return Workload(
            model=_text(data["model"], f"{where}: field model"), description=str(data.get("description", "")),
            sample_unit=str(data.get("sample_unit", "sample")), optimizer=str(data.get("optimizer", "")),
            default_batch=default_batch, tensor_sets=sets, profiles=profiles, path=where,
            flops=_parse_flops(data.get("flops"), where),
        )
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"{where}: malformed workload: {exc}", field="profile") from None


def _parse_flops(flops, where: str) -> dict | None:
    if flops is None:
        return None
    if not isinstance(flops, dict):
        raise InputError(f"{where}: field 'flops' must be an object", field="flops")
    f = flops.get("train_matmul_flops_per_sample")
    other = flops.get("train_other_bytes_per_sample")
    if not isinstance(other, dict) or not all(isinstance(other.get(k), (int, float)) and other[k] >= 0
                                              for k in ("fp32", "amp_bf16")):
        raise InputError(f"{where}: field 'flops.train_other_bytes_per_sample' needs fp32 and amp_bf16 byte counts >= 0",
                         field="flops")
    if not isinstance(f, (int, float)) or isinstance(f, bool) or not (f > 0 and math.isfinite(f)):
        raise InputError(f"{where}: field 'flops.train_matmul_flops_per_sample' must be a positive number",
                         field="flops")
    return flops


def list_models() -> list[str]:
    return sorted(p.stem for p in ZOO_DIR.glob("*.json"))


def _load_path(path: str) -> Workload:
    """A workload file, cached by (path, modification time, size): an edited file is read again."""
    try:
        st = Path(path).stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    return _load_path_cached(path, stamp)


@lru_cache(maxsize=64)
def _load_path_cached(path: str, stamp: tuple[int, int]) -> Workload:
    p = Path(path)
    data = read_json(p, "profile file", field="profile")  # regular, bounded, UTF-8, nesting bounded
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object", field="profile")
    return _parse_workload(data, str(p))


def load_workload(model: str) -> Workload:
    """A zoo model by its id (see `list_models`); never a path: a user's own model comes in through
    `load_profile` (the `--profile FILE` option)."""
    known = list_models()
    if not isinstance(model, str) or model not in known:
        shown = repr(model) if isinstance(model, str) else f"{type(model).__name__} {model!r}"[:60]
        raise InputError(f"unknown model {shown} (known: {', '.join(known)}; a model of your own: --profile FILE)",
                         field="model")
    return _load_path(str(ZOO_DIR / f"{model}.json"))


def load_profile(path: str | Path, base: Workload | None = None) -> Workload:
    """A user's profile file (zoo format, e.g. from `costopt profile`).

    When `base` is given, the file's compute profiles are added in front of the base model's, so a
    profile measured on one GPU overrides the built-in numbers for that GPU only; tensors come from
    the file if it has them, else from the base.
    """
    if isinstance(path, bool) or not isinstance(path, (str, Path)) or (isinstance(path, str) and not path):
        raise InputError(f"profile must be a file path, got {type(path).__name__} {path!r}"[:120], field="profile")
    if base is not None and not isinstance(base, Workload):
        raise InputError(f"base must be a Workload, got {type(base).__name__}", field="base")
    p = Path(path)
    if not p.exists():
        raise InputError(f"profile file not found: {p}", field="profile")
    w = _load_path(str(p.resolve()))
    if base is None:
        return w
    own = {(q.gpu, q.precision) for q in w.profiles}
    merged = w.profiles + tuple(q for q in base.profiles if (q.gpu, q.precision) not in own)
    return Workload(
        model=w.model, description=w.description or base.description, sample_unit=w.sample_unit,
        optimizer=w.optimizer, default_batch=w.default_batch,
        tensor_sets=w.tensor_sets or base.tensor_sets, profiles=merged, path=w.path,
        flops=w.flops or base.flops,
    )


def memory_fits(estimate: ComputeEstimate, gpu: Gpu, reserved_gb: float) -> bool:
    return estimate.peak_mem_bytes + gb_to_bytes(reserved_gb) <= gb_to_bytes(gpu.memory_gb)
