"""Workload zoo: each model's gradient tensors, when they become ready, and what a step costs.

A zoo entry (`costopt/data/zoo/<model>.json`, built by `tools/build_zoo.py` from the H200
measurements in shared/data/h200/) holds:

- tensor sets: parameter tensors in the order their gradients become ready in backward, with the
  ready time as a fraction of backward (`pytorch`: torchvision/transformers definitions, measured;
  `tensorflow`: tf_cnn_benchmarks definitions for the 2017 CNN benchmarks, with batch-norm moving
  statistics as load-only entries for PS placement);
- compute profiles: forward, backward and optimizer-step time and peak memory per
  (gpu, precision, batch), measured;
- `flops`: matmul FLOPs and other memory traffic per training sample (tools/zoo_flops.py).

Compute on any GPU, measured or not, is predicted by costopt/compute.py (measured > published
same-model ratio > roofline, never faster than the GPU's peak). Gradients are fp32 in every precision
(AMP keeps fp32 master weights), so gradient bytes = 4 x parameters.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .catalog import Catalog, Gpu
from .compute import PRECISIONS, PROFILE_PRECISION, ZOO_DIR, ComputeEstimate, ProfilePoint, estimate
from .errors import InputError
from .units import gb_to_bytes

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
        return estimate(self.model, self.profiles, self.flops, gpu, precision, batch, catalog, withhold=withhold)


def _parse_workload(data: dict, where: str) -> Workload:
    try:
        sets = {}
        for set_name, body in data["tensor_sets"].items():
            tensors = body["tensors"]
            if not tensors:
                raise InputError(f"{where}: tensor set '{set_name}' is empty")
            ready = np.array([float(t["ready_fraction"]) for t in tensors])
            if not np.all((ready >= 0) & (ready <= 1)) or np.any(np.diff(ready) < -1e-12):
                raise InputError(f"{where}: tensor set '{set_name}': ready_fraction must be in [0,1] and non-decreasing")
            sets[set_name] = TensorSet(
                name=set_name,
                source=str(body.get("source", "")),
                names=tuple(str(t["name"]) for t in tensors),
                numel=np.array([int(t["numel"]) for t in tensors], dtype=np.int64),
                ready_fraction=ready,
                trainable=np.array([bool(t.get("trainable", True)) for t in tensors]),
            )
            if np.any(sets[set_name].numel < 0):
                raise InputError(f"{where}: tensor set '{set_name}': numel must be >= 0")
        profiles = tuple(
            ProfilePoint(
                gpu=str(p["gpu"]), precision=str(p["precision"]), batch=int(p["batch"]),
                forward_ms=float(p["forward_ms"]), backward_ms=float(p["backward_ms"]),
                step_ms=float(p["step_ms"]), peak_mem_bytes=float(p["peak_mem_bytes"]),
                source=str(p.get("source", where)), date=str(p.get("date", "")),
            )
            for p in data["profiles"]
        )
        for p in profiles:
            if p.precision not in ("fp32", "amp_bf16", "amp_fp16"):
                raise InputError(f"{where}: profile precision '{p.precision}' unknown")
            if (not all(math.isfinite(x) for x in (p.forward_ms, p.backward_ms, p.step_ms, p.peak_mem_bytes))
                    or not min(p.forward_ms, p.backward_ms, p.peak_mem_bytes) > 0 or not p.step_ms >= 0 or p.batch < 1):
                raise InputError(f"{where}: profile {p.gpu} {p.precision} batch {p.batch}: times and memory must be positive")
        if int(data["default_batch"]) < 1:
            raise InputError(f"{where}: default_batch must be >= 1, got {data['default_batch']}")
        return Workload(
            model=str(data["model"]), description=str(data.get("description", "")),
            sample_unit=str(data.get("sample_unit", "sample")), optimizer=str(data.get("optimizer", "")),
            default_batch=int(data["default_batch"]), tensor_sets=sets, profiles=profiles, path=where,
            flops=_parse_flops(data.get("flops"), where),
        )
    except KeyError as exc:
        raise InputError(f"{where}: missing field {exc}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"{where}: malformed workload: {exc}") from None


def _parse_flops(flops, where: str) -> dict | None:
    if flops is None:
        return None
    if not isinstance(flops, dict):
        raise InputError(f"{where}: field 'flops' must be an object")
    f = flops.get("train_matmul_flops_per_sample")
    other = flops.get("train_other_bytes_per_sample")
    if not isinstance(other, dict) or not all(isinstance(other.get(k), (int, float)) and other[k] >= 0
                                              for k in ("fp32", "amp_bf16")):
        raise InputError(f"{where}: field 'flops.train_other_bytes_per_sample' needs fp32 and amp_bf16 byte counts >= 0")
    if not isinstance(f, (int, float)) or isinstance(f, bool) or not (f > 0 and math.isfinite(f)):
        raise InputError(f"{where}: field 'flops.train_matmul_flops_per_sample' must be a positive number")
    return flops


def list_models() -> list[str]:
    return sorted(p.stem for p in ZOO_DIR.glob("*.json"))


@lru_cache(maxsize=64)
def _load_path(path: str) -> Workload:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object")
    return _parse_workload(data, str(p))


def load_workload(model: str) -> Workload:
    """A zoo model by name."""
    path = ZOO_DIR / f"{model}.json"
    if not path.exists():
        raise InputError(f"unknown model '{model}' (known: {', '.join(list_models())})")
    return _load_path(str(path))


def load_profile(path: str | Path, base: Workload | None = None) -> Workload:
    """A user's profile file (zoo format, e.g. from `costopt profile`).

    When `base` is given, the file's compute profiles are added in front of the base model's, so a
    profile measured on one GPU overrides the built-in numbers for that GPU only; tensors come from
    the file if it has them, else from the base.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"profile file not found: {p}")
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
