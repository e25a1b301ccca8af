"""Compute time of one training iteration of a zoo model on any catalog GPU.

Evidence, best first (the estimate's `source` and `basis` say which one was used):

(a) measured: the model was profiled on this GPU (zoo file or `--profile`): forward, backward and
    optimizer-step times at the measured batches, interpolated between them.
(b) published ratio: a published training throughput of the same model (or one of the same class, see
    data/published/lambda_single_gpu.json `model_map`) on this GPU and on the measured reference GPU,
    from ONE harness (Lambda's PyTorch tables; else the catalog's `throughput` figures of both GPUs):

        t_gpu(b) = t_ref(b) * X_ref / X_gpu

    When the two GPUs are in different Lambda tables the ratio is bridged through a GPU that is in
    both (H100 SXM: v1 and v2): X_ref/X_gpu = (X_ref/X_bridge)_v2 * (X_bridge/X_gpu)_v1.
(c) roofline: per sample, F = training matmul FLOPs (forward + backward) and B = bytes moved by every
    other op (zoo `flops`, counted per layer by tools/zoo_flops.py); a GPU of generation g at
    precision p spends

        r_gpu = F / (P_gpu,p * e_mm[g,p]) + B_p / (W_gpu * e_bw[g,p])

    with P the dense peak FLOP/s at p (catalog) at the clock the GPU sustains (P_rated x sustained /
    rated boost clock, where the catalog gives both clocks: GeForce GPU Boost runs above the rated
    boost clock), W the memory bandwidth, e the achieved fractions.
    The measured reference's time beyond its own roofline, o = max(t_ref(b) - b r_ref, 0) (kernel
    launches, host work: the same on any GPU), is kept and only the rest is scaled:

        t_gpu(b) = (t_ref(b) - o) * r_gpu / r_ref + o

    which is the additive form the fit itself uses (time = roofline + host). A plain ratio would
    multiply the H200's launch-bound share by the speed ratio: on a K80 or P100 (10-20x slower)
    Inception-v3, whose H200 time is twice its roofline, came out 30-50% slow against TensorFlow's
    2017 figures.

    Achieved fractions are fitted, per precision class (fp32 | amp) and jointly over generations, by
    least squares on u = 1/e with u >= 1 (never above peak), with one host term h >= 0 per benchmark
    model (seconds per sample no GPU removes: data loading, launches; Lambda's ResNet-50 stops near
    3,000 images/s on H200 and B200 alike):
      - the reference GPU's measured time per sample at its largest batch, per zoo model:
            F/P u_mm + B/W u_bw + h_zoo = t_meas                        (weight 1/t_meas)
      - every published single-GPU cell of GPU k against its table's reference GPU j, ratio
        rho = X_k / X_j of a Lambda model l with a zoo equivalent m (its F and B):
            rho * (r_k(m) + h_l) - (r_j(m) + h_l) = 0                   (weight 1/(F/P_j + B/W_j))
      - every single-GPU figure of TensorFlow's 2017 benchmark page (K80, P100 SXM2; fp32, synthetic
        data; data/published/tf_bench_2017_single_gpu.json), the only Kepler and Pascal evidence, as
        an absolute time per sample of zoo model m (no host term: 2017 GPUs at 20-220 images/s leave
        the host a negligible share):
            F/P u_mm + B/W u_bw = 1 / X                                 (weight X)
    The host terms belong to the benchmark harness, not to the GPU: predictions for a zoo model use
    r_gpu / r_ref alone (the reference measurement already carries its own overheads).
    A generation without data takes the fractions of the nearest generation that has some
    (GENERATION_ORDER; ties go to the older one; AMD CDNA3 sits with Hopper), and says so.

Physical floors and batch scaling (applied to every estimate):
    - beyond the largest measured batch, time grows in proportion to the batch (FLOPs follow the
      batch): t(b) = t(b_max) * b / b_max, so time per sample never drops below the largest-batch
      value; below the smallest measured batch, time is held at the smallest batch (launch-bound);
    - t_fwd + t_bwd >= b * max(F / P_gpu,p, B_p / W_gpu), P the RATED peak (not the sustained-clock
      one): never more FLOP/s than the catalog peak nor more
      bytes/s than the memory; a violating estimate is raised to the floor and labelled `floored`;
    - optimizer step on another GPU: with (b) the published ratio (a whole-iteration figure), with
      (c) memory-bound, t_step * W_ref / W_gpu.
Gradient accumulation (K micro-batches per synchronisation) is applied by the caller (api.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import Catalog, Gpu, load_catalog
from costopt.core.errors import InputError
from costopt.core.units import ms_to_s

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

    def bytes_for(self, precision: str) -> float:
        return self.other_bytes[PRECISION_CLASS[precision]]

    def roofline_s(self, gpu: Gpu, precision: str, u_mm: float = 1.0, u_bw: float = 1.0) -> float:
        """Seconds per sample at fractions 1/u of the sustained-clock peak FLOP/s and of the memory
        bandwidth (no peak -> inf)."""
        peak = gpu.sustained_flops(precision)
        if peak is None:
            return math.inf
        return self.matmul_flops / peak * u_mm + self.bytes_for(precision) / gpu.memory_bandwidth_bytes_per_s * u_bw

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
                      {"fp32": float(other["fp32"]), "amp": float(other["amp_bf16"])})


# ---------------------------------------------------------------------------------------------------
# batch interpolation on one GPU's measured points


def _interp(batches: np.ndarray, values: np.ndarray, batch: float, time: bool) -> tuple[float, str]:
    if batch in batches:
        return float(values[list(batches).index(batch)]), "measured"
    if batch < batches[0]:
        if time or len(batches) == 1:
            return float(values[0]), "extrapolated"  # launch-bound: held at the smallest batch
        slope = (values[1] - values[0]) / (batches[1] - batches[0])
        return float(max(values[0] - slope * (batches[0] - batch), 0.1 * values[0])), "extrapolated"
    if batch > batches[-1]:
        if time or len(batches) == 1:
            return float(values[-1] * batch / batches[-1]), "extrapolated"  # work follows the batch
        slope = max((values[-1] - values[-2]) / (batches[-1] - batches[-2]), 0.0)
        return float(values[-1] + slope * (batch - batches[-1])), "extrapolated"
    return float(np.interp(batch, batches, values)), "interpolated"


def from_points(points: list[ProfilePoint], batch: int) -> tuple[dict, float, str]:
    """Phase times (s) and peak memory at `batch` from one GPU's points sorted by batch."""
    b = np.array([p.batch for p in points], dtype=np.float64)
    phases, how = {}, "measured"
    for name in ("forward_ms", "backward_ms", "step_ms"):
        value, kind = _interp(b, np.array([getattr(p, name) for p in points]), batch, time=True)
        phases[name] = ms_to_s(value)
        how = kind if kind != "measured" else how
    mem, kind = _interp(b, np.array([p.peak_mem_bytes for p in points]), batch, time=False)
    how = kind if kind != "measured" else how
    return phases, mem, how


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


def published_ratio(model: str, gpu: Gpu, ref: Gpu, precision: str, catalog: Catalog | None = None,
                    withhold: frozenset = frozenset()) -> tuple[float, str] | None:
    """X_ref / X_gpu for `model` from one harness, with a note; None when no such pair exists.

    `withhold`: GPU ids whose published figures may not be used (leave-one-GPU-out).
    """
    if gpu.id in withhold:
        return None
    pub = load_published()
    pc = PRECISION_CLASS[precision]
    entry = pub.model_map.get(model)
    if entry is not None:
        lm = entry["lambda_model"]
        rel = entry["relation"]
        tables = sorted(pub.tables, reverse=True)  # lambda-v2 before lambda-v1
        for t in tables:
            x_ref, x_gpu = pub.value(t, pc, ref.id, lm), pub.value(t, pc, gpu.id, lm)
            if x_ref and x_gpu:
                src = pub.tables[t]
                return x_ref / x_gpu, (f"published ratio {ref.id}/{gpu.id} = {x_ref:g}/{x_gpu:g} ({lm}, {pc}; "
                                       f"{src['source']}, {src['date']}; {rel})")
        # bridge: ref and a bridge GPU in one table, the bridge and gpu in another; geometric mean
        # over every bridge GPU the two tables share
        for t_ref in tables:
            for t_gpu in tables:
                x_ref, x_gpu = pub.value(t_ref, pc, ref.id, lm), pub.value(t_gpu, pc, gpu.id, lm)
                if t_ref == t_gpu or not x_ref or not x_gpu:
                    continue
                logs, via = [], []
                for c in pub.cells:
                    if ((c.table, c.precision, c.lambda_model) != (t_gpu, pc, lm) or c.gpu in (gpu.id, ref.id)
                            or c.gpu in withhold):
                        continue
                    x_b1 = pub.value(t_ref, pc, c.gpu, lm)
                    if x_b1:
                        logs.append(math.log((x_ref / x_b1) * (c.samples_per_s / x_gpu)))
                        via.append(c.gpu)
                if logs:
                    r = math.exp(sum(logs) / len(logs))
                    return r, (f"published ratio {ref.id}/{gpu.id} = {r:.4g}: {lm} {pc}, {ref.id} in {t_ref} "
                               f"({pub.tables[t_ref]['date']}), {gpu.id} in {t_gpu} ({pub.tables[t_gpu]['date']}), "
                               f"bridged through {', '.join(sorted(via))} (geometric mean); Lambda "
                               f"deeplearning-benchmark; {rel}")
    # the catalog's own published figure (one model, e.g. ResNet-50) on both GPUs
    tg, tr = gpu.throughput, ref.throughput
    # (figures marked `estimate` are judgement, not a publication: not evidence)
    if (tg is not None and tr is not None and tg.model == tr.model and not tg.estimate and not tr.estimate
            and _same_class(model, tg.model, pub)):
        xg = tg.fp32_samples_per_s if pc == "fp32" else tg.amp_samples_per_s
        xr = tr.fp32_samples_per_s if pc == "fp32" else tr.amp_samples_per_s
        if xg and xr:
            return xr / xg, (f"published ratio {ref.id}/{gpu.id} = {xr:g}/{xg:g} ({tg.model} figures in the catalog, "
                             f"{pc}; {tg.source}, {tg.date})")
    return None


def _same_class(model: str, figure_model: str, pub: Published) -> bool:
    if model == figure_model:
        return True
    a, b = pub.model_map.get(model), pub.model_map.get(figure_model)
    return a is not None and b is not None and a["lambda_model"] == b["lambda_model"]


# ---------------------------------------------------------------------------------------------------
# roofline fractions


def _nnls_shifted(A: np.ndarray, b: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """min ||A x - b|| subject to x >= lower (Lawson-Hanson active set on x - lower)."""
    rhs = b - A @ lower
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(3 * n + 10):
        w = A.T @ (rhs - A @ x)
        if passive.all() or w[~passive].max(initial=-np.inf) <= 1e-12 * (1 + np.abs(w).max()):
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], rhs, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = float(np.min(x[neg] / np.maximum(x[neg] - z[neg], 1e-300)))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
            x[~passive] = 0.0
    return x + lower


@dataclass(frozen=True)
class Fractions:
    """Fitted u = 1/achieved fraction per (generation, precision class), with the data behind each."""

    u: dict  # (generation, pc) -> (u_mm, u_bw)
    cells: dict  # (generation, pc) -> number of equations that involve it
    host: dict  # pc -> {Lambda model (or 'zoo' for the reference anchors): host seconds per sample >= 0}
    # (generation, pc) fitted on TensorFlow 2017 figures only: used for that generation, never lent to
    # another one (a 2017 TensorFlow/cuDNN 5 harness, not the one the other fractions describe)
    absolute_only: frozenset = frozenset()

    def for_gpu(self, gpu: Gpu, precision: str) -> tuple[float, float, str]:
        pc = PRECISION_CLASS[precision]
        gen = gpu.architecture or "other"
        if (gen, pc) in self.u:
            um, ub = self.u[(gen, pc)]
            what = ("TensorFlow 2017 single-GPU figures (estimate)" if (gen, pc) in self.absolute_only
                    else "equations")
            return um, ub, f"{gen} fractions fitted on {self.cells[(gen, pc)]} {what}"
        slot = _GENERATION_SLOT.get(gen, _GENERATION_SLOT["other"])
        have = sorted((abs(_GENERATION_SLOT[g] - slot), _GENERATION_SLOT[g], g) for g, p in self.u
                      if p == pc and (g, p) not in self.absolute_only)
        if not have:
            raise InputError(f"no achieved fractions for {pc} on any GPU generation")
        _, _, near = have[0]
        um, ub = self.u[(near, pc)]
        return um, ub, f"no {gen} data: {near} fractions used (estimate)"


@lru_cache(maxsize=1)
def _zoo_files() -> tuple[tuple[str, dict], ...]:
    """(model id, data) of every zoo file, in name order, read once (the fit reads them all)."""
    return tuple((path.stem, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(ZOO_DIR.glob("*.json")))


def _reference_anchors(ref_id: str, pc: str) -> list[tuple[SampleCost, float]]:
    """(cost, measured seconds per sample at the largest batch) of every zoo model measured on ref."""
    out = []
    want = "fp32" if pc == "fp32" else "amp_bf16"
    for _, data in _zoo_files():
        cost = sample_cost(data.get("flops"))
        pts = [p for p in data.get("profiles", []) if p["gpu"] == ref_id and p["precision"] == want]
        if cost is None or not pts:
            continue
        p = max(pts, key=lambda p: p["batch"])
        out.append((cost, ms_to_s(p["forward_ms"] + p["backward_ms"]) / p["batch"]))
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
                  withhold: frozenset = frozenset()) -> Fractions:
    """Achieved fractions per (generation, precision class); see the module docstring.

    `withhold`: GPU ids whose figures are left out of the fit; an entry 'gpu/model' leaves out one
    absolute (TensorFlow 2017) figure only (leave-one-model-out checks).

    The fit reads the specs of the GPUs its data name (published cells use the reference catalog's
    ids) from `catalog`, by default the built-in reference catalog, so the fractions do not change
    with the catalog a design is priced from.
    """
    return _fit_cached(_reference_gpu_key() if catalog is None else _gpu_key(catalog), ref_id, withhold)


@lru_cache(maxsize=1)
def _reference_gpu_key() -> tuple:
    return _gpu_key(load_catalog())


def _gpu_key(catalog: Catalog) -> tuple:
    return tuple((g.id, g.architecture, g.sustained_flops("fp32"), _amp_peak(g), None, g.memory_bandwidth_gbs)
                 for g in catalog.gpus.values())


def _amp_peak(g: Gpu) -> float | None:
    """The sustained-clock peak of the GPU's best AMP path (bf16, else fp16): what a published 'amp'
    figure ran on."""
    return g.sustained_flops("amp_bf16") or g.sustained_flops("amp_fp16")


@lru_cache(maxsize=64)
def _fit_cached(gpu_key: tuple, ref_id: str, withhold: frozenset) -> Fractions:
    gpus = {k[0]: k for k in gpu_key}
    costs = _zoo_costs()
    pub = load_published()
    u_all, n_all, host, absolute = {}, {}, {}, set()

    def peak(gid, pc):
        return gpus[gid][2] if pc == "fp32" else gpus[gid][3]

    def bw(gid):
        return gpus[gid][5] * 1e9

    def gen(gid):
        return gpus[gid][1] or "other"

    def terms(gid, pc, cost, sign, model):
        b = cost.other_bytes[pc]
        return {(gen(gid), "mm"): sign * cost.matmul_flops / peak(gid, pc), (gen(gid), "bw"): sign * b / bw(gid),
                ("*" + model, "host"): sign}

    for pc in ("fp32", "amp"):
        eqs = []  # (coefficients {(generation, term): value}, right-hand side, weight)
        if ref_id in gpus:
            for cost, t in _reference_anchors(ref_id, pc):
                eqs.append((terms(ref_id, pc, cost, 1.0, "zoo"), t, 1.0 / t))
        if pc == "fp32":
            for c in load_absolute():
                cost = costs.get(c["model"])
                if (not c["in_fit"] or c["gpu"] in withhold or f"{c['gpu']}/{c['model']}" in withhold
                        or c["gpu"] not in gpus or cost is None):
                    continue
                coeff = {k: v for k, v in terms(c["gpu"], pc, cost, 1.0, "").items() if k[1] != "host"}
                eqs.append((coeff, 1.0 / c["samples_per_s"], c["samples_per_s"]))
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
            coeff = terms(c.gpu, pc, cost, c.samples_per_s / xj, c.lambda_model)
            for key, v in terms(j, pc, cost, -1.0, c.lambda_model).items():
                coeff[key] = coeff.get(key, 0.0) + v
            scale = cost.matmul_flops / peak(j, pc) + cost.other_bytes[pc] / bw(j)
            eqs.append((coeff, 0.0, 1.0 / scale))
        if not eqs:
            continue
        keys = sorted({k for coeff, _, _ in eqs for k in coeff})
        A = np.zeros((len(eqs), len(keys)))
        rhs = np.zeros(len(eqs))
        for i, (coeff, r, w) in enumerate(eqs):
            for k, v in coeff.items():
                A[i, keys.index(k)] = v * w
            rhs[i] = r * w
        lower = np.array([0.0 if k[1] == "host" else 1.0 for k in keys])  # efficiency <= 1; host time >= 0
        x = dict(zip(keys, _nnls_shifted(A, rhs, lower)))
        host[pc] = {k[0][1:]: float(v) for k, v in x.items() if k[1] == "host"}
        for g in sorted({k[0] for k in keys if not k[0].startswith("*")}):
            u_all[(g, pc)] = (float(x[(g, "mm")]), float(x[(g, "bw")]))
            n_all[(g, pc)] = sum(1 for coeff, _, _ in eqs if (g, "mm") in coeff)
            if all(("*", "host") not in coeff and not any(k[0].startswith("*") for k in coeff)
                   for coeff, _, _ in eqs if (g, "mm") in coeff):
                absolute.add((g, pc))
    return Fractions(u_all, n_all, host, frozenset(absolute))


# ---------------------------------------------------------------------------------------------------
# the predictor


def estimate(model: str, profiles: tuple[ProfilePoint, ...], flops: dict | None, gpu: Gpu, precision: str,
             batch: int, catalog: Catalog, *, withhold: frozenset = frozenset()) -> ComputeEstimate:
    """Forward/backward/step time and peak memory of `model` on `gpu` at `batch` and `precision`.

    `withhold`: GPU ids whose measurements and published figures are not used (leave-one-GPU-out).
    """
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision '{precision}' (choose from {', '.join(PRECISIONS)})")
    if batch < 1:
        raise InputError(f"batch per GPU must be >= 1, got {batch}")
    want = PROFILE_PRECISION[precision]
    by_gpu: dict[str, list[ProfilePoint]] = {}
    for p in profiles:
        if p.precision == want:
            by_gpu.setdefault(p.gpu, []).append(p)
    if not by_gpu:
        have = sorted({p.precision for p in profiles})
        raise InputError(f"model '{model}' has no {want} compute profile (has: {', '.join(have) or 'none'})")
    if gpu.peak_flops(precision) is None:
        raise InputError(f"gpu '{gpu.id}' has no {precision} path (no peak FLOP/s for it in the catalog)")
    cost = sample_cost(flops)
    if gpu.id in by_gpu and gpu.id not in withhold:
        pts = sorted(by_gpu[gpu.id], key=lambda p: p.batch)
        phases, mem, how = from_points(pts, batch)
        basis = f"{how} at batch {batch} ({gpu.id}, {pts[0].source}, {pts[0].date})"
        return _floored(phases["forward_ms"], phases["backward_ms"], phases["step_ms"], mem, how, basis,
                        cost, gpu, precision, batch)
    refs = [g for g in sorted(by_gpu) if g in catalog.gpus and g not in withhold]
    if not refs:
        raise InputError(f"cannot estimate {model} compute on gpu '{gpu.id}' ({precision}): its measured "
                         f"GPU(s) {', '.join(sorted(by_gpu))} are not in the catalog")
    ref = catalog.gpus["h200-sxm" if "h200-sxm" in refs else refs[0]]
    pts = sorted(by_gpu[ref.id], key=lambda p: p.batch)
    phases, mem, how = from_points(pts, batch)
    pub = published_ratio(model, gpu, ref, precision, catalog, withhold)
    if pub is not None:
        ratio, note = pub
        source = "published"
    elif cost is not None:
        fr = fit_fractions(None, ref.id, withhold)
        um, ub, fnote = fr.for_gpu(gpu, precision)
        rm, rb, _ = fr.for_gpu(ref, precision)
        r_gpu, r_ref = cost.roofline_s(gpu, precision, um, ub), cost.roofline_s(ref, precision, rm, rb)
        busy = phases["forward_ms"] + phases["backward_ms"]
        overhead = max(busy - batch * r_ref, 0.0)  # the reference's time beyond its roofline: kept, not scaled
        roof_ratio = r_gpu / r_ref
        ratio = ((busy - overhead) * roof_ratio + overhead) / busy
        clock = (f", peaks at its sustained clock x{gpu.clock_factor:.3g} ({gpu.sustained_clock_mhz:g} of "
                 f"{gpu.boost_clock_mhz:g} MHz)" if gpu.clock_factor != 1.0 else "")
        note = (f"roofline ratio {roof_ratio:.3g} ({gpu.id} at {1 / um:.0%} of peak FLOP/s and {1 / ub:.0%} of memory "
                f"bandwidth{clock}; {fnote}) on the {1 - overhead / busy:.0%} of the {ref.id} time its roofline "
                f"explains, the rest (launches, host) kept: x{ratio:.3g} in all")
        source = "roofline"
    else:
        raise InputError(f"cannot estimate {model} compute on gpu '{gpu.id}' ({precision}): no published figure "
                         f"for it and the model has no FLOP count (zoo `flops`) for the roofline")
    # a published ratio is a whole-iteration ratio; the roofline's optimizer step is memory-bound
    step = phases["step_ms"] * (ratio if source == "published" else ref.memory_bandwidth_gbs / gpu.memory_bandwidth_gbs)
    basis = (f"estimate: {ref.id} measurement ({how} at batch {batch}, {pts[0].source}) x {note}")
    return _floored(phases["forward_ms"] * ratio, phases["backward_ms"] * ratio, step, mem, source, basis,
                    cost, gpu, precision, batch)


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
