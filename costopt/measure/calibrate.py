"""Fit the timing model's system parameters to measured rows (`costopt calibrate`).

Objective: maximum a posteriori (MAP) on log error. With r_i = ln(predicted_i / measured_i) over the
rows of a measurement file (format in `costopt.measure.validate`), u_j = ln θ_j (u_j = θ_j for parameters
whose default is 0, e.g. `process_step_us_per_gpu`) and u_j⁰ the starting value (the shipped defaults unless
`--system` is given), the fit minimises

    Σ_i ρ_k(r_i / σ_row)  +  Σ_j ((u_j − u_j⁰) / w_j)²

- ρ_k is Huber's loss, e² for |e| ≤ k and 2k|e| − k² beyond, k = HUBER_K = 1.345 (the textbook
  constant): a row the model cannot explain pulls on the parameters linearly, not quadratically, so one
  outlying report (e.g. TFB_ISSUE29_M40's 2 × 4 M40 row, 38% off) cannot move the TCP efficiency of
  every other cluster. `robust=None` gives the squared loss. The least-squares solver below works on
  residuals e' = sign(e)·sqrt(ρ_k(e)), whose squares are the loss.

- σ_row = ROW_SIGMA = 0.10: the spread of one row's log error that the model is expected to have
  (the thesis claims ±10% from one GPU's profile plus the links; docs/sources.md §12c). It is fixed and
  documented, not tuned: it sets how strongly the data may pull a parameter away from its prior.
- w_j = PRIOR[name] (one standard deviation of ln θ, with the reason next to each value): a parameter
  the rows do not pin stays near its default instead of running to a bound, which is what made the
  unregularised leave-one-source-out fit worse than the defaults.
- `row_sigma=None` gives the plain (unregularised) bounded least squares, Σ r_i².

Each free parameter θ_j has bounds [lo_j, hi_j] and is searched in a unit coordinate z_j ∈ [0, 1]
(logarithmic between the bounds for rates and latencies, linear for fractions). The solver is a small
projected Levenberg–Marquardt written with numpy (no scipy at run time), on the stacked residual
vector e (data rows, then prior rows):

    J = ∂e/∂z by forward differences;  solve (JᵀJ + μ·diag(JᵀJ)) δ = −Jᵀe;  z ← clip(z + δ, 0, 1)
    accept when the sum of squares falls (μ ← μ/3), else μ ← 4μ and retry.

Parameters the rows do not constrain (a zero column of the data part of J, e.g. RDMA efficiency when
no row uses RDMA) stay at their starting values and are reported as "not identifiable".

Uncertainty: at the optimum, cov(z) = s²·(JᵀJ)⁻¹ over the free parameters. Unregularised: J of the
data rows, s² = RSS/(n − p). MAP: J of the stacked vector (the posterior's curvature), s² = max(1,
χ²/(n − p)) with χ² = Σ (r_i/σ_row)², so rows noisier than σ_row widen the interval. One standard
deviation in θ is |dθ/dz|·σ_z (a linearisation; a parameter sitting on a bound is flagged).
Leave-one-source-out (LOSO): for every source, fit on the other sources' rows only and predict that
source's rows, so no row is ever predicted with parameters fitted on its own source.

Rows whose optional `nic_basis` column says `assumed` (the link speed appears nowhere in the source,
e.g. Piz Daint's Aries for TCP) are predicted and reported but not fitted on by default: an unknown line
rate and the transport efficiency are confounded, so such rows would move the TCP efficiency of every
other cluster to absorb one guess (`fit_assumed_network=True` fits on them too). For the same reason rows
whose optional `measured_basis` column says `efficiency` (the source states only a scaling efficiency, and
the row's 1-GPU calibration figure is borrowed from another measurement: its compute speed is an estimate,
confounded with every per-step cost) are predicted but not fitted (`fit_efficiency_rows=True` fits on them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:  # pandas only where a DataFrame is made (validate.frame_for): `solve` imports this module
    import pandas as pd

from costopt.core.errors import InputError
from costopt.perf.system import FIELD_TO_KEY, FIT_BOUNDS, SystemParams, load_system, prior_system, system_to_toml
from costopt.measure.validate import VALIDATION_DIR, Prepared, error_stats, frame_for, prepare, read_measurements, summarize

Progress = Callable[[int, int, str], None]  # (fits done, fits in all, what was just fitted)

BOUNDS = FIT_BOUNDS  # name -> (lower, upper, scale): the fittable parameters (system.FIT_BOUNDS)

ROW_SIGMA = 0.10  # per-row log-error spread the model claims (thesis: ±10%); fixed, see the module docstring
# Huber threshold on the standardised row residual r_i/σ_row: the textbook constant (95% efficiency under
# normal errors; Huber 1964, Holland & Welsch 1977). Beyond it a row's pull on the fit grows linearly, not
# quadratically, so one row the model cannot explain (e.g. one user report) cannot drag every parameter.
HUBER_K = 1.345

# Prior widths: name -> (scale, one standard deviation). "log": of ln θ (0.3 ≈ a factor 1.35);
# "lin": of θ itself (parameters whose default is 0, where a log scale has no centre).
PRIOR: dict[str, tuple[str, float]] = {
    # DESIGN.md: TCP reaches 0.6-0.8 of line rate; 2017 gRPC may be lower: wider than that range
    "tcp_efficiency": ("log", 0.30),
    # docs/sources.md §4a: EFA 85%; RDMA 0.8-0.9 in DESIGN.md
    "rdma_efficiency": ("log", 0.10),
    # docs/sources.md §4d gives 30-40 us for MPI; gRPC stacks can be several times that
    "tcp_message_overhead_us": ("log", 1.0),
    "rdma_message_overhead_us": ("log", 1.0),
    # an estimate with no source (docs/sources.md §12c (thesis §7) lists it as unknown): a factor ~4.5 either way
    "ps_tensor_overhead_us": ("log", 1.5),
    # prior 0.87 from TF's parameter_server dataflow (tools/ps_pull_overlap_prior.py: pulls issued at step start,
    # sharing the rate); pulls in forward order give about 1, one at a time in a random order (TicTac, MLSys 2019:
    # TF fixes no transfer order) far less: ± 0.3
    "ps_pull_overlap": ("lin", 0.30),
    # default 1 (no contention); measured contention on NVLink/PCIe systems is tens of percent at most
    "overlap_efficiency": ("log", 0.20),
    # estimate (CPU summation speed); a factor 2 either way
    "host_reduce_gb_per_s": ("log", 0.70),
    # estimate; DESIGN.md only says "a fraction of the NIC's line rate"
    "cpu_network_efficiency": ("log", 0.50),
    # docs/sources.md §3b: 0.88 measured on H200 hosts; older PCIe Gen3 hosts somewhat lower
    "pcie_efficiency": ("log", 0.15),
    # docs/sources.md §3b: 0.80-0.88 measured across A100/H200/B200
    "nvlink_efficiency": ("log", 0.10),
    # prior 0.0365, the H200 step-to-step spread (tools/straggler_prior.py); ± 0.03 spans its quartiles 0.0025-0.076
    "straggler_cv": ("lin", 0.03),
    # default 0 (no source states it). One sd of 1 ms per GPU per step: the order of the fixed per-step excess
    # the DGX-1 table shows for 2017 replicated/NCCL (about 58 ms above compute at 8 GPUs for AlexNet and
    # VGG16 alike); judgement, not fitted to any row
    "sync_us_per_gpu": ("lin", 1000.0),
    # same judgement for the per-worker (PS) step cost: a barrier token is one RPC of tens to hundreds of us,
    # and 1 ms per worker would already be a slow 2017 gRPC stack
    "sync_us_per_worker": ("lin", 1000.0),
    # default 0 (no public figure states the per-GPU cost of one process driving several GPUs). Wide: one sd of
    # 30 ms per extra GPU per step; the one public figure of the kind, PaddlePaddle v2 DeepSpeech2 in one process
    # (PaddlePaddle/Paddle#3137), rose about 0.2 s per extra card, and DLPerf's Paddle 1.8 BERT about 0.03 s
    "process_step_us_per_gpu": ("lin", 30000.0),
    # per stack (system_priors.toml names each prior's source). Link fraction: a public stack benchmark
    # on other hardware, a factor ~1.6 either way
    **{f"{st}_link_fraction": ("log", 0.50) for st in ("nccl", "mpi", "grpc", "gloo")},
    # per-step synchronisation: micro-benchmark latencies (tens of us) are a floor; frameworks add their
    # own launch and bookkeeping per step, so a factor ~4.5 either way
    **{f"{st}_sync_us": ("log", 1.50) for st in ("nccl", "mpi", "grpc", "gloo")},
    # compute slowdown: an SM / memory-bandwidth share, ±0.10
    **{f"{st}_compute_slowdown": ("lin", 0.10) for st in ("nccl", "mpi", "grpc", "gloo")},
    # per-byte serialisation and copy cost of an RPC stack: TF's own RecvTensor benchmarks range from 100-200
    # to 800 MB/s on one stream (tensorflow/tensorflow#6116, 2016-12 to 2017-08): a factor ~2 either way
    **{f"{st}_copy_ns_per_byte": ("log", 0.70) for st in ("nccl", "mpi", "grpc", "gloo")},
    # one RPC stream (one tensor): the same single-tensor benchmarks, 100-200 to 800 MB/s: a factor ~2 either way
    **{f"{st}_stream_ns_per_byte": ("log", 0.70) for st in ("nccl", "mpi", "grpc", "gloo")},
    # NCCL socket-transport ceiling: the two public figures behind the prior (2.4 and 5 GB/s, NVIDIA/nccl#209 and
    # #450) are a factor ~2 apart, and channel/thread settings move it: a factor ~1.65 either way
    "nccl_socket_gb_per_s": ("log", 0.50),
    # MPI host-memory ring over TCP, one progress thread per rank: one public figure behind the prior (pytorch/gloo#248,
    # a one-thread host ring on 40 GbE); core speed and kernel settings move it: a factor ~1.65 either way
    "mpi_host_gb_per_s": ("log", 0.50),
    # the same over RDMA: one public figure (osu_allreduce on LLNL Lassen, one rank per node, 2.67-2.74 GB/s per rank
    # at 4-8 nodes); 16-128 nodes of the same run reached 4.75-7.64 GB/s with a faster algorithm: a factor ~2 either way
    "mpi_host_rdma_gb_per_s": ("log", 0.70),
}
# fitted by default: the knobs the shipped rows inform. TCP and RDMA efficiencies stay at their priors
# (wire and kernel properties from link benchmarks); most multi-node shipped rows are gRPC PS rows, and
# what they see beyond the wire is the gRPC stack's per-byte serialisation and copy cost
# (grpc_copy_ns_per_byte, which does not scale with the link). The gRPC link fraction (the wire share its
# TCP streams reach) stays at its prior: fitting both leaves them confounded on rows of one link speed. The per-step
# synchronisation and the compute slowdown are fitted per stack where rows of that stack exist (nccl: single-node
# all-reduce rows; grpc: PS rows); mpi and gloo keep their priors (no shipped row uses them). The legacy
# per-GPU / per-worker sync terms are not fitted by default: one per-GPU term charged (N - 1) times to
# all-reduce but per worker to PS made the PS vs ring order an artefact of the fit. The global
# `overlap_efficiency` is not fitted either: the per-stack compute slowdown models the same contention
# during overlap, and fitting both leaves them confounded (it stays at its prior, 1). The per-process host cost
# (process_step_us_per_gpu) is fitted on the rows whose scripts show one process driving several GPUs
# (`gpus_per_process` column): TF_BENCH_2017 (tf_cnn_benchmarks towers) and DLPerf's PaddlePaddle BERT, OneFlow and
# TensorFlow 2.3 runs, two sources, so each informs it when the other is left out.
DEFAULT_FIT = ("ps_tensor_overhead_us", "ps_pull_overlap", "pcie_efficiency",
               "nvlink_efficiency", "host_reduce_gb_per_s", "grpc_copy_ns_per_byte", "nccl_sync_us", "grpc_sync_us",
               "nccl_compute_slowdown", "grpc_compute_slowdown", "nccl_socket_gb_per_s", "straggler_cv",
               "process_step_us_per_gpu")


def _prior_u(name: str, v: float) -> float:
    kind, _ = PRIOR[name]
    return math.log(max(v, 1e-12)) if kind == "log" else v


def _to_z(name: str, v: float) -> float:
    lo, hi, kind = BOUNDS[name]
    v = min(max(v, lo), hi)
    if kind == "log":
        return (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return (v - lo) / (hi - lo)


def _from_z(name: str, z: float) -> float:
    lo, hi, kind = BOUNDS[name]
    z = min(max(z, 0.0), 1.0)
    if kind == "log":
        return math.exp(math.log(lo) + z * (math.log(hi) - math.log(lo)))
    return lo + z * (hi - lo)


def _dtheta_dz(name: str, z: float) -> float:
    lo, hi, kind = BOUNDS[name]
    if kind == "log":
        return _from_z(name, z) * (math.log(hi) - math.log(lo))
    return hi - lo


@dataclass
class FitResult:
    params: SystemParams
    start: SystemParams
    fitted: list[str]  # parameters that were free and identifiable
    fixed: list[str]  # asked for but not identifiable from these rows (kept at the start value)
    sigma: dict[str, float]  # one standard deviation, parameter units
    at_bound: list[str]
    rms_log_error: float
    iterations: int
    n_rows: int
    row_sigma: float | None = None  # None: unregularised least squares

    def table(self) -> list[dict[str, Any]]:
        out = []
        for name in self.fitted + self.fixed:
            out.append({
                "parameter": name, "start": getattr(self.start, name), "fitted": getattr(self.params, name),
                "sigma": self.sigma.get(name), "note": "at bound" if name in self.at_bound
                else ("no sensitivity at the optimum (not identified by these rows)" if name in self.fixed else ""),
            })
        return out


def _huber(e: np.ndarray, k: float | None) -> np.ndarray:
    """Residuals whose squares are Huber's loss: e where |e| <= k, sign(e)·sqrt(2k|e| − k²) beyond."""
    if k is None:
        return e
    a = np.abs(e)
    return np.where(a <= k, e, np.sign(e) * np.sqrt(np.maximum(2.0 * k * a - k * k, 0.0)))


def fit(prep: Prepared, rows: np.ndarray | None = None, *, start: SystemParams, names: tuple[str, ...] = DEFAULT_FIT,
        max_iter: int = 15, tol: float = 1e-7, row_sigma: float | None = ROW_SIGMA,
        robust: float | None = HUBER_K) -> FitResult:
    """MAP fit on log error over `rows` (indices into prep.rows; default all), prior centred on `start`.

    `row_sigma=None`: no prior (plain bounded least squares on log error, no Huber loss).
    `robust`: Huber threshold on r_i/σ_row (None: squared loss for every row).
    """
    rows = np.arange(len(prep.rows)) if rows is None else np.asarray(rows, dtype=np.int64)
    unknown = [n for n in names if n not in BOUNDS]
    if unknown:
        raise InputError(f"cannot fit {unknown} (fittable: {', '.join(BOUNDS)})")
    names = tuple(names)
    z = np.array([_to_z(n, getattr(start, n)) for n in names])

    def params_of(zz: np.ndarray) -> SystemParams:
        return start.with_updates(**{n: _from_z(n, float(v)) for n, v in zip(names, zz)})

    sig = 1.0 if row_sigma is None else float(row_sigma)
    u0 = np.array([_prior_u(n, getattr(start, n)) for n in names])
    w = np.array([PRIOR[n][1] for n in names])
    n_data = len(rows)
    groups = prep.groups_for(rows)  # only the groups holding fitted rows are evaluated
    row_design, measured = prep.design_of_row[rows], prep.measured[rows]  # each distinct design evaluated once

    hk = None if row_sigma is None else robust

    def resid(zz: np.ndarray) -> np.ndarray:
        pred = prep.predict_designs(params_of(zz), groups)[row_design]
        data = _huber(np.log(pred / measured) / sig, hk)
        if row_sigma is None:
            return data
        u = np.array([_prior_u(n, _from_z(n, float(v))) for n, v in zip(names, zz)])
        return np.concatenate([data, (u - u0) / w])

    def jac(zz: np.ndarray, r0: np.ndarray) -> np.ndarray:
        J = np.zeros((len(r0), len(zz)))
        for j in range(len(zz)):
            h = 1e-4 if zz[j] < 1 - 1e-4 else -1e-4
            zp = zz.copy()
            zp[j] += h
            J[:, j] = (resid(zp) - r0) / h
        return J

    r = resid(z)
    cost = float(r @ r)
    J = jac(z, r)
    active = np.abs(J[:n_data]).max(axis=0) > 1e-9
    mu = 1e-2
    it = 0
    for it in range(1, max_iter + 1):
        A = J[:, active]
        g = A.T @ r
        H = A.T @ A
        improved = False
        for _ in range(12):
            step = np.linalg.solve(H + mu * np.diag(np.diag(H) + 1e-12), -g)
            zn = z.copy()
            zn[active] = np.clip(z[active] + step, 0.0, 1.0)
            rn = resid(zn)
            cn = float(rn @ rn)
            if cn < cost:
                improved = True
                rel = (cost - cn) / max(cost, 1e-30)
                z, r, cost = zn, rn, cn
                mu = max(mu / 3.0, 1e-9)
                break
            mu *= 4.0
        if not improved or rel < tol:
            break
        J = jac(z, r)
        active = np.abs(J[:n_data]).max(axis=0) > 1e-9
    # uncertainty at the optimum (free, identifiable, not pinned at a bound)
    J = jac(z, r)
    ident = np.abs(J[:n_data]).max(axis=0) > 1e-9
    at_bound = [n for n, v, a in zip(names, z, ident) if a and (v <= 1e-6 or v >= 1 - 1e-6)]
    sigma: dict[str, float] = {}
    free = np.array([a and n not in at_bound for n, a in zip(names, ident)])
    n, p = n_data, int(free.sum())
    chi2 = float(r[:n_data] @ r[:n_data])
    if p and n > p:
        if row_sigma is None:
            A = J[:n_data][:, free]
            s2 = chi2 / (n - p)
        else:
            A = J[:, free]
            s2 = max(1.0, chi2 / (n - p))
        try:
            cov = np.linalg.pinv(A.T @ A) * s2
            for k, j in enumerate(np.flatnonzero(free)):
                sigma[names[j]] = float(abs(_dtheta_dz(names[j], z[j])) * math.sqrt(max(cov[k, k], 0.0)))
        except np.linalg.LinAlgError:
            pass
    return FitResult(
        params=params_of(z), start=start, fitted=[nm for nm, a in zip(names, ident) if a],
        fixed=[nm for nm, a in zip(names, ident) if not a], sigma=sigma, at_bound=at_bound,
        rms_log_error=sig * math.sqrt(chi2 / max(n, 1)), iterations=it, n_rows=n, row_sigma=row_sigma,
    )


@dataclass
class CalibrationResult:
    path: Path
    fit: FitResult
    frame: pd.DataFrame  # rows + default, fitted and LOSO predictions and errors
    summaries: dict[str, Any] = field(default_factory=dict)
    loso_params: dict[str, SystemParams] = field(default_factory=dict)

    def toml(self) -> str:
        f = self.fit
        lines = ["", "[fit]", f'file = "{self.path}"', f"rows = {f.n_rows}",
                 f"rms_log_error = {f.rms_log_error:.6g}"]
        for key in ("uncalibrated", "fitted", "loso"):
            s = self.summaries.get(key, {}).get("summary", {})
            if s.get("median_abs_error_pct") is not None:
                lines.append(f"{key}_median_abs_error_pct = {s['median_abs_error_pct']:.6g}")
                lines.append(f"{key}_max_abs_error_pct = {s['max_abs_error_pct']:.6g}")
        for name in f.fitted:
            section, key = FIELD_TO_KEY[name]
            sd = f.sigma.get(name)
            lines.append(f'"{section}.{key}" = {{ value = {getattr(f.params, name):.6g}, '
                         f'sigma = {sd if sd is not None else -1:.6g}, at_bound = {"true" if name in f.at_bound else "false"} }}')
        if f.fixed:
            lines.append("not_identifiable = [" + ", ".join(f'"{n}"' for n in f.fixed) + "]")
        how = ("log-error least squares" if f.row_sigma is None
               else f"MAP on log error, row sigma {f.row_sigma:g}, prior centred on the starting values")
        lines.insert(4, f'method = "{how}"')
        header = f"# System parameters fitted by `costopt calibrate` ({how}).\n"
        return header + system_to_toml(f.params, "\n".join(lines) + "\n")


def loso(prep: Prepared, start: SystemParams, names: tuple[str, ...] = DEFAULT_FIT,
         max_iter: int = 15, row_sigma: float | None = ROW_SIGMA,
         fit_mask: np.ndarray | None = None, robust: float | None = HUBER_K,
         progress: Progress | None = None) -> tuple[np.ndarray, dict[str, SystemParams]]:
    """Leave-one-source-out predictions: each source's rows predicted by a fit on the others.

    `fit_mask` (bool per row): rows allowed in a training set (default all). `progress(done, total, label)`
    is called after each source's fold.
    """
    sources = np.array([r.source for r in prep.rows])
    usable = np.ones(len(prep.rows), bool) if fit_mask is None else np.asarray(fit_mask, bool)
    out = np.full(len(prep.rows), np.nan)
    per: dict[str, SystemParams] = {}
    names_left = sorted({str(x) for x in sources})
    for done, s in enumerate(names_left, 1):
        train = np.flatnonzero((sources != s) & usable)
        test = np.flatnonzero(sources == s)
        if len(train):
            res = fit(prep, train, start=start, names=names, max_iter=max_iter, row_sigma=row_sigma, robust=robust)
            per[s] = res.params
            out[test] = prep.predict(res.params)[test]
        if progress is not None:
            progress(done, len(names_left), f"left out {s}")
    return out, per


def calibrate(file: str | Path, *, system: str | Path | SystemParams | None = None, catalog: str | Path | None = None,
              names: tuple[str, ...] = DEFAULT_FIT, with_loso: bool = True, max_iter: int = 15,
              row_sigma: float | None = ROW_SIGMA, fit_assumed_network: bool = False, fit_efficiency_rows: bool = False,
              robust: float | None = HUBER_K, progress: Progress | None = None) -> CalibrationResult:
    """Fit the system parameters to a measurement file (see the module docstring); `progress(done, total,
    label)` is called as each fit ends (the fit on all rows, then each leave-one-source-out fold)."""
    path, rows, header = read_measurements(file)
    # A shipped dataset: the shipped defaults are fitted on its rows, so the fit (and each leave-one-source-out
    # fold) starts from the public-measurement priors instead, or a left-out source would leak back in.
    # A user's own file: the shipped defaults are the natural start.
    shipped = system is None and path.resolve().parent == VALIDATION_DIR.resolve()
    return calibrate_rows(rows, path=path, header=header, system=system, catalog=catalog, names=names,
                          with_loso=with_loso, max_iter=max_iter, row_sigma=row_sigma,
                          fit_assumed_network=fit_assumed_network, fit_efficiency_rows=fit_efficiency_rows,
                          robust=robust, start=prior_system() if shipped else None, progress=progress)


def calibrate_rows(rows: list, *, path: Path, header: list[str] | None = None,
                   system: str | Path | SystemParams | None = None, catalog: str | Path | None = None,
                   names: tuple[str, ...] = DEFAULT_FIT, with_loso: bool = True, max_iter: int = 15,
                   row_sigma: float | None = ROW_SIGMA, fit_assumed_network: bool = False,
                   fit_efficiency_rows: bool = False, robust: float | None = HUBER_K,
                   start: SystemParams | None = None, progress: Progress | None = None) -> CalibrationResult:
    """`calibrate` on rows already read (several files at once: `tools/fit_defaults.py`).

    `system`: the parameters reported as "uncalibrated" (default: the shipped defaults); `start`: where the
    fit starts and its prior is centred (default: `system`)."""
    current = system if isinstance(system, SystemParams) else load_system(system)
    start = current if start is None else start
    prep = prepare(rows, catalog, path, header)
    n_folds = len({r.source for r in rows}) if with_loso else 0
    if progress is not None:
        progress(0, 1 + n_folds, "fit on all rows")
    mask = np.array([(fit_assumed_network or r.raw.get("nic_basis", "") != "assumed")
                     and (fit_efficiency_rows or r.raw.get("measured_basis", "") != "efficiency") for r in rows])
    res = fit(prep, np.flatnonzero(mask), start=start, names=names, max_iter=max_iter, row_sigma=row_sigma,
              robust=robust)
    if progress is not None:
        progress(1, 1 + n_folds, "fit on all rows")
    base_pred = prep.predict(current)
    fit_pred = prep.predict(res.params)
    df = frame_for(prep, base_pred).rename(columns={"predicted_samples_per_s": "predicted_uncalibrated",
                                                   "error_pct": "error_uncalibrated_pct"})
    df["predicted_fitted"] = fit_pred
    df["error_fitted_pct"] = (fit_pred - prep.measured) / prep.measured * 100.0
    summaries = {"uncalibrated": summarize(df, "error_uncalibrated_pct"), "fitted": summarize(df, "error_fitted_pct")}
    per: dict[str, SystemParams] = {}
    if with_loso:
        fold_done = None if progress is None else (lambda k, _n, label: progress(1 + k, 1 + n_folds, label))
        lp, per = loso(prep, start, names, max_iter, row_sigma, mask, robust, fold_done)
        df["predicted_loso"] = lp
        df["error_loso_pct"] = (lp - prep.measured) / prep.measured * 100.0
        if np.isfinite(lp).any():
            summaries["loso"] = summarize(df[np.isfinite(lp)], "error_loso_pct")
    return CalibrationResult(path, res, df, summaries, per)


def param_names() -> list[str]:
    return [f.name for f in fields(SystemParams) if f.name in BOUNDS]


__all__ = ["BOUNDS", "PRIOR", "ROW_SIGMA", "fit", "loso", "calibrate", "calibrate_rows", "FitResult", "CalibrationResult", "error_stats"]
