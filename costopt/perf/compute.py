"""Compute time of one training iteration of a zoo model on any catalog GPU: host time + GPU time.

Per phase (forward, backward), at batch b (costopt/perf/host_gpu.py):

    t(b) = smax(H, k + b g)        smax(x, y) = (x^p + y^p)^(1/p)

H the host time of the phase (Python, kernel launches, per-tensor loops: the software stack and the CPU,
never scaled by a GPU ratio), k the kernel floor (the phase's weight traffic, weight bytes / W, moved once
whatever the batch), g the GPU time per sample. The optimizer step runs once per optimizer step,
independent of the batch: t_step = smax(H_s, G_s).

Evidence (the estimate's `source` and `basis` say which one was used):

(a) measured: the model was profiled on this GPU (zoo file or `--profile`). H, g per phase are fitted to the
    measured batch sweep (host_gpu.fit_phase); where the sweep does not tell g (host-bound at every measured
    batch, host_gpu.identified false) a weak prior holds g at the roofline below instead of leaving it free; the estimate at any batch is the fitted
    curve (source `measured` at a measured batch, `interpolated` inside the sweep, `extrapolated` outside).
(c) roofline: any other GPU X. The reference GPU's fitted H is kept; its GPU time is moved by the ratio of
    the two GPUs' rooflines for this model:

        g_X = g_ref * r_X / r_ref,   r = F_gemm / (P e_mm) + F_conv / (P e_conv) + B / (W e_bw)   per sample
        k_X = weight bytes / W_X;    G_s,X = G_s,ref * (W_ref e_bw,ref) / (W_X e_bw,X)

    F = training matmul FLOPs (F_conv of them in convolutions, run as implicit GEMMs at their own fraction
    e_conv; F_gemm = F - F_conv in dense GEMMs) and B = bytes moved by every other op per sample (zoo `flops`,
    tools/zoo_flops.py), P the dense peak at precision p at the clock the GPU sustains (P_rated x sustained /
    rated boost clock, where the catalog gives both clocks: GeForce GPU Boost runs above the rated boost
    clock), W the memory bandwidth, e the achieved fractions of the GPU's generation and memory type.
    Published single-GPU figures (Lambda, TensorFlow 2017) are data for the fractions only, never a
    multiplier on a measurement: the same silicon gets the same prediction up to its spec differences.

Achieved fractions are fitted, per precision class (fp32 | amp) and jointly over groups g = (generation,
memory type: HBM | GDDR, data/compute_defaults.toml), by least squares on u = 1/e with u >= 1 (never above
peak) and u_mm, u_conv >= 1 / MAMF (the best measured matmul fraction of the generation's GPUs, mamf-finder,
data/llm_defaults.toml [compute.mamf_fraction]), with one host term h >= 0 per benchmark model (seconds
per sample no GPU removes: data loading; Lambda's ResNet-50 stops near 3,000 images/s on H200 and B200):
  - the reference GPU's GPU time per sample g_ref (forward + backward, host removed by the sweep fit) of
    every zoo model whose sweep identifies it (host_gpu.identified):
        F/P u_mm + B/W u_bw = g_ref                                     (weight 1/g_ref)
  - every published single-GPU cell of GPU k against its table's reference GPU j, ratio
    rho = X_k / X_j of a Lambda model l with a zoo equivalent m (its F and B):
        rho * smax(r_k(m), h_l) - smax(r_j(m), h_l) = 0                 (weight 1/(F/P_j + B/W_j))
    (the host works beside the GPU: the phase's smooth max and exponent, `host_in_fit`; solved from the
    additive solution, rho (r_k + h) = r_j + h, by damped Gauss-Newton steps, `_solve`)
  - every single-GPU figure of TensorFlow's 2017 benchmark page (K80, P100 SXM2; fp32, synthetic data;
    data/published/tf_bench_2017_single_gpu.json) as an absolute time per sample (no host term):
        F/P u_mm + B/W u_bw = 1 / X                                     (weight X)
  - shrinkage: each group's u toward the pooled fit u_pool of its precision class (all groups but the
    TensorFlow 2017 ones as one): w (u - u_pool) / u_pool = 0, w = `shrink_weight` (a group on 3 equations
    is not pinned at a bound).
A group without data takes the fractions of the nearest generation of its memory type that has some
(GENERATION_ORDER; ties go to the older one; AMD CDNA3 sits with Hopper), else of any memory type, and says
so; Kepler/Pascal fractions (TensorFlow 2017 only) are lent to no other group.

Physical floor (applied to every estimate): t_fwd + t_bwd >= b * max(F / P_gpu,p, B_p / W_gpu), P the RATED
peak; a violating estimate is raised to the floor and labelled `floored`.
Gradient accumulation (K micro-batches per synchronisation, one optimizer step) is applied by the caller
(api.py).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import Catalog, Gpu, load_catalog
from costopt.core.errors import InputError
from costopt.core.units import ms_to_s
from costopt.perf.bounded_lsq import solve_equations as _solve
from costopt.perf.host_gpu import (PhaseSplit, defaults, fit_phase, identified, smax, smooth_p,
                                    step_split)

from costopt.core.paths import DATA_DIR  # noqa: E402  (re-exported: callers read compute.DATA_DIR)
ZOO_DIR = DATA_DIR / "zoo"
PUBLISHED_PATH = DATA_DIR / "published" / "lambda_single_gpu.json"
ABSOLUTE_PATH = DATA_DIR / "published" / "tf_bench_2017_single_gpu.json"
PRECISIONS = ("fp32", "amp_bf16", "amp_fp16")
# Profiles are recorded as fp32 or amp_bf16; fp16 autocast runs on the same tensor cores at the same
# rate on the measured GPU, so amp_fp16 reads the amp_bf16 profile.
PROFILE_PRECISION = {"fp32": "fp32", "amp_bf16": "amp_bf16", "amp_fp16": "amp_bf16"}
PRECISION_CLASS = {"fp32": "fp32", "amp_bf16": "amp", "amp_fp16": "amp"}
GENERATION_ORDER = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
_GENERATION_SLOT = {**{g: i for i, g in enumerate(GENERATION_ORDER)},
                    "cdna2": GENERATION_ORDER.index("ampere"), "cdna3": GENERATION_ORDER.index("hopper"),
                    "other": GENERATION_ORDER.index("hopper")}
# the Lambda model each zoo model stands for in the fit (the zoo model with the same network)
_FIT_ZOO_MODEL = {"resnet50": "resnet50", "bert_base_squad": "bert_base", "bert_large_squad": "bert_large"}
# the GPU each published table's cells are fitted against when the measured reference is not in it
_TABLE_FIT_REFERENCE = {"lambda-v2": "h200-sxm", "lambda-v1": "h100-sxm"}


def host_p() -> float:
    """Exponent of the host term in the published-ratio equations: the phase's smooth-max exponent, or 1
    (additive) where data/compute_defaults.toml [fractions] host_in_fit = "additive"."""
    return smooth_p() if defaults()["fractions"]["host_in_fit"] == "smooth-max" else 1.0


def memory_type(gpu_id: str) -> tuple[str, bool]:
    """('hbm' | 'gddr', listed) of a catalog GPU id (data/compute_defaults.toml [memory_type]); unlisted: hbm."""
    mt = defaults()["memory_type"]
    if gpu_id in mt["gddr"]:
        return "gddr", True
    return "hbm", gpu_id in mt["hbm"]


@lru_cache(maxsize=1)
def _mamf_by_generation() -> dict:
    """Best measured matmul fraction (MAMF / dense peak) per generation, from data/llm_defaults.toml."""
    data = tomllib.loads((DATA_DIR / "llm_defaults.toml").read_text(encoding="utf-8"))
    cat = load_catalog()
    out: dict = {}
    for gid, f in data["compute"]["mamf_fraction"].items():
        g = cat.gpus.get(gid)
        if g is not None and g.architecture:
            out[g.architecture] = max(out.get(g.architecture, 0.0), float(f))
    return out


@dataclass(frozen=True)
class ProfilePoint:
    gpu: str
    precision: str
    batch: int
    forward_ms: float
    backward_ms: float
    step_ms: float
    peak_mem_bytes: float
    source: str
    date: str


@dataclass(frozen=True)
class ComputeEstimate:
    """One GPU's iteration at one batch and precision."""

    forward_s: float
    backward_s: float
    step_s: float
    peak_mem_bytes: float
    source: str  # measured | interpolated | extrapolated | published | roofline (+ "-floored")
    basis: str  # one line: where the numbers come from

    @property
    def iteration_s(self) -> float:
        return self.forward_s + self.backward_s + self.step_s


@dataclass(frozen=True)
class SampleCost:
    """Per-sample training work of a model (zoo `flops`)."""

    matmul_flops: float  # forward + backward matmul FLOPs per sample
    other_bytes: dict  # precision class ('fp32' | 'amp') -> bytes per sample moved by non-matmul ops
    param_count: float = 0.0  # parameters (zoo `flops.param_count`): the weight traffic of the kernel floor
    conv_flops: float = 0.0  # the part of matmul_flops run as convolutions (zoo `flops`; implicit GEMM in cuDNN)

    def bytes_for(self, precision: str) -> float:
        return self.other_bytes[PRECISION_CLASS[precision]]

    def roofline_s(self, gpu: Gpu, precision: str, u_mm: float = 1.0, u_bw: float = 1.0,
                   u_conv: float | None = None) -> float:
        """Seconds per sample at fractions 1/u of the sustained-clock peak FLOP/s (GEMM and convolution
        FLOPs each at their own; u_conv None: the GEMM u) and of the memory bandwidth (no peak -> inf)."""
        peak = gpu.sustained_flops(precision)
        if peak is None:
            return math.inf
        uc = u_mm if u_conv is None else u_conv
        return ((self.matmul_flops - self.conv_flops) / peak * u_mm + self.conv_flops / peak * uc
                + self.bytes_for(precision) / gpu.memory_bandwidth_bytes_per_s * u_bw)

    def floor_s(self, gpu: Gpu, precision: str) -> float:
        """Fastest physically possible time per sample: peak FLOP/s or memory bandwidth, whichever binds."""
        peak = gpu.peak_flops(precision)
        if peak is None:
            return 0.0
        return max(self.matmul_flops / peak, self.bytes_for(precision) / gpu.memory_bandwidth_bytes_per_s)


def sample_cost(flops: dict | None) -> SampleCost | None:
    """SampleCost from a zoo file's `flops` entry (None when the file has none)."""
    if not flops:
        return None
    other = flops["train_other_bytes_per_sample"]
    return SampleCost(float(flops["train_matmul_flops_per_sample"]),
                      {"fp32": float(other["fp32"]), "amp": float(other["amp_bf16"])},
                      float(flops.get("param_count", 0.0)), float(flops.get("train_conv_flops_per_sample", 0.0)))


def weight_bytes(cost: SampleCost | None, precision: str) -> tuple[float, float]:
    """(forward, backward) weight bytes moved once per iteration (data/compute_defaults.toml)."""
    if cost is None:
        return 0.0, 0.0
    w = defaults()["phase"]["weight_bytes_per_param"]
    pc = PRECISION_CLASS[precision]
    return cost.param_count * w[f"{pc}_forward"], cost.param_count * w[f"{pc}_backward"]


# ---------------------------------------------------------------------------------------------------
# batch interpolation of the measured peak memory


def _interp_memory(batches: np.ndarray, values: np.ndarray, batch: float) -> float:
    if len(batches) == 1:
        return float(values[0])
    if batch < batches[0]:
        slope = (values[1] - values[0]) / (batches[1] - batches[0])
        return float(max(values[0] - slope * (batches[0] - batch), 0.1 * values[0]))
    if batch > batches[-1]:
        slope = max((values[-1] - values[-2]) / (batches[-1] - batches[-2]), 0.0)
        return float(values[-1] + slope * (batch - batches[-1]))
    return float(np.interp(batch, batches, values))


def _how(batches: list[int], batch: int) -> str:
    if batch in batches:
        return "measured"
    return "interpolated" if batches[0] < batch < batches[-1] else "extrapolated"


# ---------------------------------------------------------------------------------------------------
# published per-model figures


@dataclass(frozen=True)
class PublishedCell:
    table: str
    precision: str  # 'amp' | 'fp32'
    gpu: str
    lambda_model: str
    samples_per_s: float


@dataclass(frozen=True)
class Published:
    cells: tuple[PublishedCell, ...]
    model_map: dict  # zoo model -> {"lambda_model", "relation"}
    tables: dict  # table -> {"source", "date"}

    def value(self, table: str, pc: str, gpu: str, lambda_model: str) -> float | None:
        for c in self.cells:
            if (c.table, c.precision, c.gpu, c.lambda_model) == (table, pc, gpu, lambda_model):
                return c.samples_per_s
        return None


@lru_cache(maxsize=4)
def load_published(path: str = str(PUBLISHED_PATH)) -> Published:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = tuple(PublishedCell(c["table"], c["precision"], c["gpu"], c["lambda_model"], float(c["samples_per_s"]))
                  for c in data["cells"])
    return Published(cells, data["model_map"], data["tables"])


@lru_cache(maxsize=1)
def load_absolute(path: str = str(ABSOLUTE_PATH)) -> tuple[dict, ...]:
    """Single-GPU figures used as absolute times per sample in the fit (TensorFlow 2017: K80, P100)."""
    return tuple(json.loads(Path(path).read_text(encoding="utf-8"))["cells"])


# ---------------------------------------------------------------------------------------------------
# roofline fractions


@dataclass(frozen=True)
class Fractions:
    """Fitted u = 1/achieved fraction per (generation, precision class), with the data behind each."""

    u: dict  # (generation, pc) -> (u_mm, u_bw)
    cells: dict  # (generation, pc) -> number of equations that involve it
    host: dict  # pc -> {Lambda model: host seconds per sample >= 0}
    # (generation, pc) fitted on TensorFlow 2017 figures only: used for that generation, never lent to
    # another one (a 2017 TensorFlow/cuDNN 5 harness, not the one the other fractions describe)
    absolute_only: frozenset = frozenset()
    pooled: dict | None = None  # pc -> (u_mm, u_bw) of the pooled fit the generations are shrunk toward
    memory: dict | None = None  # (generation, pc) -> memory types ('hbm', 'gddr') of the GPUs behind it
    conv: dict | None = None  # (generation, pc) -> u_conv, convolution FLOPs (matmul u where absent)

    def for_gpu(self, gpu: Gpu, precision: str) -> tuple[float, float, str]:
        """(u_mm, u_bw, words) of the group whose fractions this GPU uses."""
        key, words = self.group_for(gpu, precision)
        um, ub = self.u[key]
        return um, ub, words

    def u_conv(self, gpu: Gpu, precision: str) -> float:
        """u of convolution FLOPs on this GPU (its group's; the matmul u where the group has none)."""
        key, _ = self.group_for(gpu, precision)
        return (self.conv or {}).get(key, self.u[key][0])

    def roofline_s(self, cost: "SampleCost", gpu: Gpu, precision: str) -> float:
        """Seconds per sample of `cost` on `gpu` at this GPU's fitted fractions (all three op classes)."""
        um, ub, _ = self.for_gpu(gpu, precision)
        return cost.roofline_s(gpu, precision, um, ub, self.u_conv(gpu, precision))

    def group_for(self, gpu: Gpu, precision: str) -> tuple[tuple[str, str], str]:
        pc = PRECISION_CLASS[precision]
        gen = gpu.architecture or "other"
        mem, listed = memory_type(gpu.id)
        unlisted = "" if listed else f" (memory type of {gpu.id} not listed: HBM assumed)"
        mems = self.memory or {}
        if (gen, pc) in self.u and mem in mems.get((gen, pc), {mem}):
            what = ("TensorFlow 2017 single-GPU figures (estimate)" if (gen, pc) in self.absolute_only
                    else "equations")
            return (gen, pc), f"{gen} fractions fitted on {self.cells[(gen, pc)]} {what}{unlisted}"
        slot = _GENERATION_SLOT.get(gen, _GENERATION_SLOT["other"])

        def near(same_memory: bool):
            have = sorted((abs(_GENERATION_SLOT[g] - slot), _GENERATION_SLOT[g], g) for g, p in self.u
                          if p == pc and (g, p) not in self.absolute_only
                          and (not same_memory or mem in mems.get((g, p), {mem})))
            return have[0][2] if have else None

        g2, how = near(True), f"nearest generation measured on {mem.upper()}; estimate"
        if g2 is None:
            g2, how = near(False), "estimate"
            if g2 is None:
                raise InputError(f"no achieved fractions for {pc} on any GPU generation")
        what = f"no {mem.upper()} {gen} data" if (gen, pc) in self.u else f"no {gen} data"
        return (g2, pc), f"{what}: {g2} fractions used ({how}){unlisted}"


@lru_cache(maxsize=1)
def _zoo_files() -> tuple[tuple[str, dict], ...]:
    """(model id, data) of every zoo file, in name order, read once (the fit reads them all)."""
    return tuple((path.stem, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(ZOO_DIR.glob("*.json")))


def _reference_anchors(ref_id: str, pc: str, ref_bw: float) -> list[tuple[SampleCost, float]]:
    """(cost, fitted GPU seconds per sample, forward + backward) of every zoo model measured on ref whose
    sweep identifies its GPU time (host_gpu.identified), fitted without a prior."""
    out = []
    want = "fp32" if pc == "fp32" else "amp_bf16"
    p = smooth_p()
    for _, data in _zoo_files():
        cost = sample_cost(data.get("flops"))
        pts = sorted((q for q in data.get("profiles", []) if q["gpu"] == ref_id and q["precision"] == want),
                     key=lambda q: q["batch"])
        if cost is None or len(pts) < 2:
            continue
        b = [q["batch"] for q in pts]
        t = [ms_to_s(q["forward_ms"] + q["backward_ms"]) for q in pts]
        if not identified(b, t):
            continue
        k = sum(weight_bytes(cost, want)) / ref_bw
        out.append((cost, fit_phase(b, t, k, p).gpu_per_sample_s))
    return out


@lru_cache(maxsize=1)
def _zoo_costs() -> dict:
    out = {}
    for model, data in _zoo_files():
        c = sample_cost(data.get("flops"))
        if c is not None:
            out[model] = c
    return out


def fit_fractions(catalog: Catalog | None = None, ref_id: str = "h200-sxm",
                  withhold: frozenset = frozenset(), classes: tuple[str, ...] = ("fp32", "amp")) -> Fractions:
    """Achieved fractions per (group, precision class); see the module docstring.

    `withhold`: GPU ids whose figures are left out of the fit; an entry 'gpu/model' leaves out one
    absolute (TensorFlow 2017) figure only (leave-one-model-out checks).

    The fit reads the specs of the GPUs its data name (published cells use the reference catalog's
    ids) from `catalog`, by default the built-in reference catalog, so the fractions do not change
    with the catalog a design is priced from.

    `classes`: the precision classes to fit (fp32, amp). The two fits share no equation and no unknown,
    so fitting one alone gives the same numbers as fitting both; a solve in one precision fits one
    (about half of a command's start-up CPU otherwise, benchmarks/bench_startup.py).
    """
    return _fit_cached(_reference_gpu_key() if catalog is None else _gpu_key(catalog), ref_id, withhold,
                       tuple(sorted(set(classes))))


@lru_cache(maxsize=1)
def _reference_gpu_key() -> tuple:
    return _gpu_key(load_catalog())


def _gpu_key(catalog: Catalog) -> tuple:
    return tuple((g.id, g.architecture or "other", g.sustained_flops("fp32"), _amp_peak(g), memory_type(g.id)[0],
                  g.memory_bandwidth_gbs) for g in catalog.gpus.values())


def _amp_peak(g: Gpu) -> float | None:
    """The sustained-clock peak of the GPU's best AMP path (bf16, else fp16): what a published 'amp'
    figure ran on."""
    return g.sustained_flops("amp_bf16") or g.sustained_flops("amp_fp16")


@lru_cache(maxsize=64)
def _fit_cached(gpu_key: tuple, ref_id: str, withhold: frozenset, classes: tuple[str, ...]) -> Fractions:
    """The fractions of every class in `classes`, each fitted on its own (`_fit_class`)."""
    u_all, n_all, host, absolute, pooled, memory, conv = {}, {}, {}, set(), {}, {}, {}
    for pc in classes:
        u, n, h, a, pl, m, cv = _fit_class(gpu_key, ref_id, withhold, pc)
        conv.update(cv)
        u_all.update(u)
        n_all.update(n)
        host.update(h)
        absolute |= a
        pooled.update(pl)
        memory.update(m)
    return Fractions(u_all, n_all, host, frozenset(absolute), pooled, memory, conv)


@lru_cache(maxsize=64)
def _fit_class(gpu_key: tuple, ref_id: str, withhold: frozenset, pc: str) -> tuple:
    """(u, cells, host, absolute_only, pooled, memory, conv) of `Fractions` for one precision class `pc`:
    fitted by `_fit_class_now`, kept across runs by perf/fit_cache.py."""
    from costopt.perf.fit_cache import cached

    def dump(r: tuple) -> dict:
        u, n, host, absolute, pooled, memory, conv = r
        return {"u": [[g, c, *v] for (g, c), v in u.items()], "cells": [[g, c, v] for (g, c), v in n.items()],
                "host": host, "absolute": sorted(map(list, absolute)), "pooled": {c: list(v) for c, v in pooled.items()},
                "memory": [[g, c, sorted(v)] for (g, c), v in memory.items()],
                "conv": [[g, c, v] for (g, c), v in conv.items()]}

    def load(d: dict) -> tuple:
        return ({(g, c): (float(um), float(ub)) for g, c, um, ub in d["u"]}, {(g, c): int(v) for g, c, v in d["cells"]},
                {c: {m: float(v) for m, v in h.items()} for c, h in d["host"].items()},
                {(g, c) for g, c in d["absolute"]}, {c: (float(a), float(b)) for c, (a, b) in d["pooled"].items()},
                {(g, c): frozenset(v) for g, c, v in d["memory"]}, {(g, c): float(v) for g, c, v in d["conv"]})

    return cached("fractions", repr((gpu_key, ref_id, sorted(withhold), pc)),
                  lambda: _fit_class_now(gpu_key, ref_id, withhold, pc), dump, load)


def _fit_class_now(gpu_key: tuple, ref_id: str, withhold: frozenset, pc: str) -> tuple:
    """`_fit_class`, computed."""
    gpus = {k[0]: k for k in gpu_key}
    costs = _zoo_costs()
    pub = load_published()
    mamf = _mamf_by_generation()
    shrink = float(defaults()["fractions"]["shrink_weight"])
    u_all, n_all, host, absolute, pooled, memory, conv = {}, {}, {}, set(), {}, {}, {}

    def peak(gid, pc):
        return gpus[gid][2] if pc == "fp32" else gpus[gid][3]

    def bw(gid):
        return gpus[gid][5] * 1e9

    def group(gid):
        return gpus[gid][1]

    def terms(gid, pc, cost, sign, model):
        b = cost.other_bytes[pc]
        out = {(group(gid), "mm"): sign * (cost.matmul_flops - cost.conv_flops) / peak(gid, pc),
               (group(gid), "bw"): sign * b / bw(gid), ("*" + model, "host"): sign}
        if cost.conv_flops:
            out[(group(gid), "conv")] = sign * cost.conv_flops / peak(gid, pc)
        return out

    def lower(key):
        g, term = key
        if term == "host":
            return 0.0
        if term in ("mm", "conv"):  # a convolution (implicit GEMM) runs no faster than the best GEMM
            e = mamf.get(g) if g != "pool" else max(mamf.values(), default=None)
            return 1.0 / e if e else 1.0
        return 1.0

    eqs = []  # (coefficients {(group, term): value}, right-hand side, weight)
    ratios: dict = {}  # index in eqs -> smooth-max form of a published ratio (`_solve`)
    p = host_p()
    tf_groups, used_gpus = set(), set()
    if ref_id in gpus:
        for cost, g in _reference_anchors(ref_id, pc, bw(ref_id)):
            coeff = {k: v for k, v in terms(ref_id, pc, cost, 1.0, "").items() if k[1] != "host"}
            eqs.append((coeff, g, 1.0 / g))
            used_gpus.add(ref_id)
    if pc == "fp32":
        for c in load_absolute():
            cost = costs.get(c["model"])
            if (not c["in_fit"] or c["gpu"] in withhold or f"{c['gpu']}/{c['model']}" in withhold
                    or c["gpu"] not in gpus or cost is None):
                continue
            coeff = {k: v for k, v in terms(c["gpu"], pc, cost, 1.0, "").items() if k[1] != "host"}
            eqs.append((coeff, 1.0 / c["samples_per_s"], c["samples_per_s"]))
            tf_groups.add(group(c["gpu"]))
            used_gpus.add(c["gpu"])
    for c in pub.cells:
        if c.precision != pc or c.lambda_model not in _FIT_ZOO_MODEL:
            continue
        j = _TABLE_FIT_REFERENCE.get(c.table)
        if j is None or c.gpu == j or c.gpu in withhold or j in withhold or c.gpu not in gpus or j not in gpus:
            continue
        xj = pub.value(c.table, pc, j, c.lambda_model)
        cost = costs.get(_FIT_ZOO_MODEL[c.lambda_model])
        if not xj or cost is None or peak(c.gpu, pc) is None or peak(j, pc) is None:
            continue
        rho = c.samples_per_s / xj
        coeff = terms(c.gpu, pc, cost, rho, c.lambda_model)
        for key, v in terms(j, pc, cost, -1.0, c.lambda_model).items():
            coeff[key] = coeff.get(key, 0.0) + v
        scale = cost.matmul_flops / peak(j, pc) + cost.other_bytes[pc] / bw(j)
        ratios[len(eqs)] = ({k: v for k, v in terms(c.gpu, pc, cost, 1.0, "").items() if k[1] != "host"},
                            {k: v for k, v in terms(j, pc, cost, 1.0, "").items() if k[1] != "host"},
                            ("*" + c.lambda_model, "host"), rho)
        eqs.append((coeff, 0.0, 1.0 / scale))
        used_gpus.update((c.gpu, j))
    if not eqs:
        return u_all, n_all, host, absolute, pooled, memory, conv
    # groups seen only in TensorFlow 2017 equations keep their own fractions, unshrunk, lent to none
    in_modern = {k[0] for coeff, _, _ in eqs for k in coeff
                 if not k[0].startswith("*") and any(kk[0].startswith("*") or kk[0] == group(ref_id)
                                                     for kk in coeff)}
    own = {k[0] for coeff, _, _ in eqs for k in coeff if not k[0].startswith("*")}
    tf_only = {g for g in own if g in tf_groups and g not in in_modern}

    def one_flop_class(coeff):  # TensorFlow-2017-only groups (all CNN figures): one u for GEMM and convolution
        out: dict = {}
        for (g, term), v in coeff.items():
            key = (g, "mm") if term == "conv" and g in tf_only else (g, term)
            out[key] = out.get(key, 0.0) + v
        return out

    eqs = [(one_flop_class(coeff), r, w) for coeff, r, w in eqs]
    ratios = {i: (one_flop_class(ck), one_flop_class(cj), hk, rho) for i, (ck, cj, hk, rho) in ratios.items()}
    # 1. pooled fit: every modern group as one
    pool = _solve(eqs, lambda g: g if g.startswith("*") or g in tf_only else "pool",
                  lower, ratios, p)
    pm, pb = float(pool[("pool", "mm")]), float(pool[("pool", "bw")])
    pooled[pc] = (pm, pb)
    # 2. per group, shrunk toward the pooled values
    prior = []
    for g in sorted(own - tf_only):
        prior.append(({(g, "mm"): 1.0 / pm}, 1.0, shrink))
        prior.append(({(g, "bw"): 1.0 / pb}, 1.0, shrink))
        if ("pool", "conv") in pool and any((g, "conv") in coeff for coeff, _, _ in eqs):
            prior.append(({(g, "conv"): 1.0 / float(pool[("pool", "conv")])}, 1.0, shrink))
    x = _solve(eqs + prior, lambda g: g, lower, ratios, p)
    host[pc] = {k[0][1:]: float(v) for k, v in x.items() if k[1] == "host" and k[0] != "*"}
    for g in sorted(own):
        u_all[(g, pc)] = (float(x[(g, "mm")]), float(x[(g, "bw")]))
        if (g, "conv") in x:
            conv[(g, pc)] = float(x[(g, "conv")])
        n_all[(g, pc)] = sum(1 for coeff, _, _ in eqs if (g, "mm") in coeff)
        memory[(g, pc)] = frozenset(gpus[gid][4] for gid in used_gpus if gpus[gid][1] == g)
        if g in tf_only:
            absolute.add((g, pc))
    return u_all, n_all, host, absolute, pooled, memory, conv


# ---------------------------------------------------------------------------------------------------
# the predictor


@dataclass(frozen=True)
class Split:
    """A measured GPU's host/GPU split of one model at one precision (host_gpu.py)."""

    forward: PhaseSplit
    backward: PhaseSplit
    step_host_s: float
    step_gpu_s: float
    batches: tuple[int, ...]


_SPLITS: dict = {}


def reference_split(model: str, pts: tuple[ProfilePoint, ...], cost: SampleCost | None, ref: Gpu,
                    precision: str, withhold: frozenset = frozenset()) -> Split:
    """Fit H, g per phase and (H_s, G_s) of the step to one GPU's measured points (sorted by batch)."""
    key = (model, pts, cost and (cost.matmul_flops, tuple(sorted(cost.other_bytes.items())), cost.param_count),
           ref.id, ref.architecture, ref.memory_bandwidth_gbs, ref.sustained_flops(precision), precision, withhold)
    if key in _SPLITS:
        return _SPLITS[key]
    from costopt.perf.fit_cache import cached

    def dump(sp: Split) -> dict:
        f, b = sp.forward, sp.backward
        return {"forward": [f.host_s, f.floor_s, f.gpu_per_sample_s, f.fit_log_rms],
                "backward": [b.host_s, b.floor_s, b.gpu_per_sample_s, b.fit_log_rms],
                "step": [sp.step_host_s, sp.step_gpu_s], "batches": list(sp.batches)}

    def load(d: dict) -> Split:
        return Split(PhaseSplit(*map(float, d["forward"])), PhaseSplit(*map(float, d["backward"])),
                     float(d["step"][0]), float(d["step"][1]), tuple(int(x) for x in d["batches"]))

    text = repr((*key[:-1], sorted(withhold)))
    out = _SPLITS[key] = cached("split", text, lambda: _split_now(pts, cost, ref, precision, withhold), dump, load)
    return out


def _split_now(pts: tuple[ProfilePoint, ...], cost: SampleCost | None, ref: Gpu, precision: str,
               withhold: frozenset) -> Split:
    """`reference_split`, computed."""
    p = smooth_p()
    sigma = float(defaults()["phase"]["gpu_prior_log_sigma"])
    b = [q.batch for q in pts]
    kf, kb = (w / ref.memory_bandwidth_bytes_per_s for w in weight_bytes(cost, precision))
    g0 = g_min = None
    if cost is not None and ref.sustained_flops(precision) is not None:
        fr = fit_fractions(None, "h200-sxm", withhold, (PRECISION_CLASS[precision],))
        g0 = fr.roofline_s(cost, ref, precision)
        g_min = cost.floor_s(ref, precision)
    phases = []
    for name, share, k in (("forward_ms", 1.0 / 3.0, kf), ("backward_ms", 2.0 / 3.0, kb)):
        t = [ms_to_s(getattr(q, name)) for q in pts]
        if g0 is None:
            if len(pts) == 1:  # no roofline and one point: GPU-bound (the conservative reading at larger batches)
                phases.append(PhaseSplit(0.0, 0.0, t[0] / b[0]))
                continue
            phases.append(fit_phase(b, t, 0.0, p))
        else:  # the roofline prior only where the sweep does not tell g (host-bound at every batch)
            prior = g0 * share
            phases.append(fit_phase(b, t, k, p, g_prior=prior, g_min=g_min * share, sigma=sigma))
    hs, gs = step_split([ms_to_s(q.step_ms) for q in pts], p)
    return Split(phases[0], phases[1], hs, gs, tuple(b))


DEFAULT_FRAMEWORK = "eager"


def frameworks() -> dict:
    """Software stacks (data/compute_defaults.toml [framework.*]): host time multiples with their sources."""
    return defaults()["framework"]


def framework_note(name: str) -> tuple[float, float, str]:
    """(host scale per phase, host scale of the optimizer step, words for the basis) of a software stack."""
    fw = frameworks()
    if name not in fw:
        raise InputError(f"unknown framework '{name}' (choose from {', '.join(sorted(fw))})", field="framework")
    f = fw[name]
    default = " (the default)" if name == DEFAULT_FRAMEWORK else ""
    if f["host_scale"] == 1.0 and f["step_host_scale"] == 1.0:
        words = f"software stack {name}{default}: host time as measured"
    else:
        words = (f"software stack {name}{default}: host time x{f['host_scale']:g} per phase, x{f['step_host_scale']:g} "
                 f"per optimizer step{' (estimate)' if f['estimate'] else ''}")
    return float(f["host_scale"]), float(f["step_host_scale"]), words


def estimate(model: str, profiles: tuple[ProfilePoint, ...], flops: dict | None, gpu: Gpu, precision: str,
             batch: int, catalog: Catalog, *, withhold: frozenset = frozenset(),
             framework: str = DEFAULT_FRAMEWORK) -> ComputeEstimate:
    """Forward/backward/step time and peak memory of `model` on `gpu` at `batch` and `precision`.

    `withhold`: GPU ids whose measurements and published figures are not used (leave-one-GPU-out).
    `framework`: the software stack (data/compute_defaults.toml [framework.*]); its host time is the
    measured (eager) host time times the stack's scale, the GPU time is the same.
    """
    hscale, sscale, fw_words = framework_note(framework)
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision '{precision}' (choose from {', '.join(PRECISIONS)})")
    if batch < 1:
        raise InputError(f"batch per GPU must be >= 1, got {batch}")
    want = PROFILE_PRECISION[precision]
    by_gpu: dict[str, list[ProfilePoint]] = {}
    for q in profiles:
        if q.precision == want:
            by_gpu.setdefault(q.gpu, []).append(q)
    cost = sample_cost(flops)
    ref_prec, cross = precision, ""
    if not by_gpu:
        # no profile in this precision class: with a FLOP count, the other class's measurement moved by the
        # roofline (fp32 = max(FP32, TF32) peak), labelled as an estimate
        other = "amp_bf16" if want == "fp32" else "fp32"
        for q in profiles:
            if q.precision == other and cost is not None:
                by_gpu.setdefault(q.gpu, []).append(q)
        if not by_gpu:
            have = sorted({q.precision for q in profiles})
            raise InputError(f"model '{model}' has no {want} compute profile (has: {', '.join(have) or 'none'})")
        ref_prec = other
        cross = (f"no {want} profile: {precision} estimated from the {other} measurement by the roofline "
                 f"({'fp32 at max(FP32, TF32) peak, ' if want == 'fp32' else ''}peak memory x"
                 f"{cost.bytes_for(precision) / cost.bytes_for(other):.2g} with the activations; estimate); ")
    if gpu.peak_flops(precision) is None:
        raise InputError(f"gpu '{gpu.id}' has no {precision} path (no peak FLOP/s for it in the catalog)")
    here = gpu.id in by_gpu and gpu.id not in withhold and not cross
    if cross and gpu.id in by_gpu and gpu.id not in withhold:
        ref = gpu
    elif here:
        ref = gpu
    else:
        refs = [g for g in sorted(by_gpu) if g in catalog.gpus and g not in withhold]
        if not refs:
            raise InputError(f"cannot estimate {model} compute on gpu '{gpu.id}' ({precision}): its measured "
                             f"GPU(s) {', '.join(sorted(by_gpu))} are not in the catalog")
        if cost is None:
            raise InputError(f"cannot estimate {model} compute on gpu '{gpu.id}' ({precision}): it was not "
                             f"measured there and the model has no FLOP count (zoo `flops`) for the roofline")
        ref = catalog.gpus["h200-sxm" if "h200-sxm" in refs else refs[0]]
    pts = tuple(sorted(by_gpu[ref.id], key=lambda q: q.batch))
    sp = reference_split(model, pts, cost, ref, ref_prec, withhold)
    if hscale != 1.0 or sscale != 1.0:
        sp = Split(replace(sp.forward, host_s=sp.forward.host_s * hscale),
                   replace(sp.backward, host_s=sp.backward.host_s * hscale),
                   sp.step_host_s * sscale, sp.step_gpu_s, sp.batches)
    p = smooth_p()
    bm = np.array([q.batch for q in pts], dtype=np.float64)
    mem = _interp_memory(bm, np.array([q.peak_mem_bytes for q in pts]), batch)
    if cross:
        mem *= cost.bytes_for(precision) / cost.bytes_for(ref_prec)
    how = _how(list(sp.batches), batch)
    host_ms = (sp.forward.host_s + sp.backward.host_s) * 1e3
    gpu_us = (sp.forward.gpu_per_sample_s + sp.backward.gpu_per_sample_s) * 1e6
    if here:
        fwd, bwd = sp.forward.time(batch, p), sp.backward.time(batch, p)
        step = float(smax(sp.step_host_s, sp.step_gpu_s, p))
        rms = max(sp.forward.fit_log_rms, sp.backward.fit_log_rms)
        basis = (f"{how} at batch {batch} ({gpu.id}, {pts[0].source}, {pts[0].date}): host + GPU fit of the "
                 f"measured batches {', '.join(map(str, sp.batches))} (host {host_ms:.3g} ms per forward + backward, "
                 f"GPU {gpu_us:.3g} us per sample; fit within {math.expm1(rms):.0%} rms); {fw_words}")
        return _floored(fwd, bwd, step, mem, how, basis, cost, gpu, precision, batch)
    fr = fit_fractions(None, ref.id, withhold, (PRECISION_CLASS[precision], PRECISION_CLASS[ref_prec]))
    um, ub, fnote = fr.for_gpu(gpu, precision)
    uc = fr.u_conv(gpu, precision)
    _, rb, _ = fr.for_gpu(ref, ref_prec)
    ratio = fr.roofline_s(cost, gpu, precision) / fr.roofline_s(cost, ref, ref_prec)
    kf, kb = (w / gpu.memory_bandwidth_bytes_per_s for w in weight_bytes(cost, precision))
    fwd = float(smax(sp.forward.host_s, kf + batch * sp.forward.gpu_per_sample_s * ratio, p))
    bwd = float(smax(sp.backward.host_s, kb + batch * sp.backward.gpu_per_sample_s * ratio, p))
    step_gpu = sp.step_gpu_s * (ref.memory_bandwidth_gbs / gpu.memory_bandwidth_gbs) * (ub / rb)
    step = float(smax(sp.step_host_s, step_gpu, p))
    clock = (f", peaks at its sustained clock x{gpu.clock_factor:.3g} ({gpu.sustained_clock_mhz:g} of "
             f"{gpu.boost_clock_mhz:g} MHz)" if gpu.clock_factor != 1.0 else "")
    # a fraction the fit pushed to its bound (u = 1: the full peak bandwidth) is a warning, not a measurement
    at_bound = " (fitted at its bound, the peak: a warning, not a measured rate)" if ub <= 1.0 + 1e-9 else ""
    basis = (f"estimate: {cross}{ref.id} measurement ({pts[0].source}; host {host_ms:.3g} ms per forward + backward kept, "
             f"the software stack's) with its GPU time x{ratio:.3g}, the roofline ratio ({gpu.id} at {1 / um:.0%} "
             f"of peak FLOP/s on GEMMs{f', {1 / uc:.0%} on convolutions' if cost.conv_flops else ''} and {1 / ub:.0%} "
             f"of memory bandwidth{at_bound}{clock}; {fnote}), at batch {batch}; {fw_words}")
    return _floored(fwd, bwd, step, mem, "roofline", basis, cost, gpu, precision, batch)


def _floored(fwd: float, bwd: float, step: float, mem: float, source: str, basis: str, cost: SampleCost | None,
             gpu: Gpu, precision: str, batch: int) -> ComputeEstimate:
    if cost is not None:
        floor = batch * cost.floor_s(gpu, precision)
        if fwd + bwd < floor:
            k = floor / (fwd + bwd)
            fwd, bwd = fwd * k, bwd * k
            source += "-floored"
            basis += (f"; raised x{k:.3g} to the physical floor ({cost.matmul_flops * batch / 1e12:.3g} TFLOP at "
                      f"{gpu.peak_flops(precision) / 1e12:g} TFLOP/s peak)")
    return ComputeEstimate(fwd, bwd, step, mem, source, basis)
