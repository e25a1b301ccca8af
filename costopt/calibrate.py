"""Fit the timing model's system parameters to measured rows (`costopt calibrate`).

Objective: least squares on log error, r_i = ln(predicted_i / measured_i), over the rows of a
measurement file (format in `costopt.validate`). Each free parameter θ_j has bounds [lo_j, hi_j]
and is searched in a unit coordinate z_j ∈ [0, 1] (logarithmic between the bounds for rates and
latencies, linear for fractions). The solver is a small projected Levenberg–Marquardt written with
numpy (no scipy at run time):

    J = ∂r/∂z by forward differences;  solve (JᵀJ + μ·diag(JᵀJ)) δ = −Jᵀr;  z ← clip(z + δ, 0, 1)
    accept when the sum of squares falls (μ ← μ/3), else μ ← 4μ and retry.

Parameters the rows do not constrain (a column of J that is zero, e.g. RDMA efficiency when no row
uses RDMA) stay at their starting values and are reported as "not identifiable".

Uncertainty: at the optimum, cov(z) = s²·(JᵀJ)⁻¹ over the free parameters with s² = RSS/(n − p);
one standard deviation in θ is |dθ/dz|·σ_z (a linearisation; a parameter sitting on a bound is
flagged). Leave-one-source-out (LOSO): for every source, fit on the other sources' rows only and
predict that source's rows, so no row is ever predicted with parameters fitted on its own source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .system import FIELD_TO_KEY, SystemParams, load_system, system_to_toml
from .validate import Prepared, error_stats, frame_for, prepare, read_measurements, summarize

# name -> (lower, upper, scale). "log": searched on a log scale between the bounds.
BOUNDS: dict[str, tuple[float, float, str]] = {
    "tcp_efficiency": (0.05, 1.0, "lin"),
    "rdma_efficiency": (0.2, 1.0, "lin"),
    "tcp_message_overhead_us": (1.0, 2000.0, "log"),
    "rdma_message_overhead_us": (0.1, 200.0, "log"),
    "ps_tensor_overhead_us": (1.0, 5000.0, "log"),
    "ps_pull_overlap": (0.0, 1.0, "lin"),
    "overlap_efficiency": (0.3, 1.0, "lin"),
    "host_reduce_gb_per_s": (0.5, 100.0, "log"),
    "cpu_network_efficiency": (0.05, 1.0, "lin"),
    "pcie_efficiency": (0.2, 1.0, "lin"),
    "nvlink_efficiency": (0.2, 1.0, "lin"),
}
# fitted by default: the knobs 2017-2021 TCP/NVLink/PCIe measurements can inform (RDMA and host-reduce
# parameters need rows that exercise them; name them with --fit when such rows exist)
DEFAULT_FIT = ("tcp_efficiency", "ps_tensor_overhead_us", "ps_pull_overlap", "overlap_efficiency", "pcie_efficiency",
               "nvlink_efficiency", "host_reduce_gb_per_s")


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

    def table(self) -> list[dict[str, Any]]:
        out = []
        for name in self.fitted + self.fixed:
            out.append({
                "parameter": name, "start": getattr(self.start, name), "fitted": getattr(self.params, name),
                "sigma": self.sigma.get(name), "note": "at bound" if name in self.at_bound
                else ("no sensitivity at the optimum (not identified by these rows)" if name in self.fixed else ""),
            })
        return out


def _residuals(prep: Prepared, rows: np.ndarray, params: SystemParams) -> np.ndarray:
    pred = prep.predict(params)[rows]
    return np.log(pred / prep.measured[rows])


def fit(prep: Prepared, rows: np.ndarray | None = None, *, start: SystemParams, names: tuple[str, ...] = DEFAULT_FIT,
        max_iter: int = 15, tol: float = 1e-7) -> FitResult:
    """Bounded least squares on log error over `rows` (indices into prep.rows; default all)."""
    rows = np.arange(len(prep.rows)) if rows is None else np.asarray(rows, dtype=np.int64)
    unknown = [n for n in names if n not in BOUNDS]
    if unknown:
        raise InputError(f"cannot fit {unknown} (fittable: {', '.join(BOUNDS)})")
    names = tuple(names)
    z = np.array([_to_z(n, getattr(start, n)) for n in names])

    def params_of(zz: np.ndarray) -> SystemParams:
        return start.with_updates(**{n: _from_z(n, float(v)) for n, v in zip(names, zz)})

    def resid(zz: np.ndarray) -> np.ndarray:
        return _residuals(prep, rows, params_of(zz))

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
    active = np.abs(J).max(axis=0) > 1e-9
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
        active = np.abs(J).max(axis=0) > 1e-9
    # uncertainty at the optimum (free, identifiable, not pinned at a bound)
    J = jac(z, r)
    ident = np.abs(J).max(axis=0) > 1e-9
    at_bound = [n for n, v, a in zip(names, z, ident) if a and (v <= 1e-6 or v >= 1 - 1e-6)]
    sigma: dict[str, float] = {}
    free = np.array([a and n not in at_bound for n, a in zip(names, ident)])
    n, p = len(r), int(free.sum())
    if p and n > p:
        A = J[:, free]
        s2 = cost / (n - p)
        try:
            cov = np.linalg.pinv(A.T @ A) * s2
            for k, j in enumerate(np.flatnonzero(free)):
                sigma[names[j]] = float(abs(_dtheta_dz(names[j], z[j])) * math.sqrt(max(cov[k, k], 0.0)))
        except np.linalg.LinAlgError:
            pass
    return FitResult(
        params=params_of(z), start=start, fitted=[nm for nm, a in zip(names, ident) if a],
        fixed=[nm for nm, a in zip(names, ident) if not a], sigma=sigma, at_bound=at_bound,
        rms_log_error=math.sqrt(cost / max(n, 1)), iterations=it, n_rows=n,
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
        header = "# System parameters fitted by `costopt calibrate` (log-error least squares).\n"
        return header + system_to_toml(f.params, "\n".join(lines) + "\n")


def loso(prep: Prepared, start: SystemParams, names: tuple[str, ...] = DEFAULT_FIT,
         max_iter: int = 15) -> tuple[np.ndarray, dict[str, SystemParams]]:
    """Leave-one-source-out predictions: each source's rows predicted by a fit on the others."""
    sources = np.array([r.source for r in prep.rows])
    out = np.full(len(prep.rows), np.nan)
    per: dict[str, SystemParams] = {}
    for s in sorted({str(x) for x in sources}):
        train = np.flatnonzero(sources != s)
        test = np.flatnonzero(sources == s)
        if len(train) == 0:
            continue
        res = fit(prep, train, start=start, names=names, max_iter=max_iter)
        per[s] = res.params
        out[test] = prep.predict(res.params)[test]
    return out, per


def calibrate(file: str | Path, *, system: str | Path | SystemParams | None = None, catalog: str | Path | None = None,
              names: tuple[str, ...] = DEFAULT_FIT, with_loso: bool = True, max_iter: int = 15) -> CalibrationResult:
    path, rows, header = read_measurements(file)
    start = system if isinstance(system, SystemParams) else load_system(system)
    prep = prepare(rows, catalog, path, header)
    res = fit(prep, start=start, names=names, max_iter=max_iter)
    base_pred = prep.predict(start)
    fit_pred = prep.predict(res.params)
    df = frame_for(prep, base_pred).rename(columns={"predicted_samples_per_s": "predicted_uncalibrated",
                                                   "error_pct": "error_uncalibrated_pct"})
    df["predicted_fitted"] = fit_pred
    df["error_fitted_pct"] = (fit_pred - prep.measured) / prep.measured * 100.0
    summaries = {"uncalibrated": summarize(df, "error_uncalibrated_pct"), "fitted": summarize(df, "error_fitted_pct")}
    per: dict[str, SystemParams] = {}
    if with_loso:
        lp, per = loso(prep, start, names, max_iter)
        df["predicted_loso"] = lp
        df["error_loso_pct"] = (lp - prep.measured) / prep.measured * 100.0
        if np.isfinite(lp).any():
            summaries["loso"] = summarize(df[np.isfinite(lp)], "error_loso_pct")
    return CalibrationResult(path, res, df, summaries, per)


def param_names() -> list[str]:
    return [f.name for f in fields(SystemParams) if f.name in BOUNDS]


__all__ = ["BOUNDS", "fit", "loso", "calibrate", "FitResult", "CalibrationResult", "error_stats"]
