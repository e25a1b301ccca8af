"""Host time and GPU time of one training phase, separated from a measured batch sweep.

A phase (forward or backward) of an eager framework is issued by the host (Python, kernel launches,
per-tensor loops) and run by the GPU, asynchronously; it takes whichever is longer, with a smooth turn:

    t(b) = smax(H, k + b g),      smax(x, y) = (x^p + y^p)^(1/p)

    H   host seconds per phase: the software stack and the CPU, the same on any GPU;
    k   kernel floor: the phase's weight traffic, moved once whatever the batch (bytes / (W e_bw));
    g   GPU seconds per sample (FLOPs and bytes of the model at the GPU's achieved fractions).

t is non-decreasing in b for H, k, g >= 0 (both arguments are), and t >= k + b g: no smooth-max estimate
runs faster than its GPU time. p: data/compute_defaults.toml.

Fit (one GPU's measured points (b_i, t_i) of one phase, k given): minimise over H >= 0, g >= g_min

    sum_i (ln t(b_i) - ln t_i)^2 + ((ln g - ln g0) / sigma)^2

where the second term is present only with a prior g0 (the roofline at the fitted fractions): a sweep
that is host-bound at every measured batch (BERT-large AMP: 34.7 ms at 32 and 64) does not tell g, and
the prior keeps it at the roofline instead of anywhere below the host line. The minimum is found on a
grid in (H, ln g), refined twice around the best point (deterministic; about 10^5 evaluations).

Optimizer step, once per optimizer step (independent of the batch):

    t_step = smax(H_s, G_s)

G_s the GPU time (the smallest measured step: the host was ahead, only the kernels showed), H_s the host
time, set so that smax(H_s, G_s) is the largest measured step (the host was behind: its per-tensor loop
showed, e.g. ResNet-50 AMP 2.06 ms for 161 tensors at batch 32, 0.29 ms at 128).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from costopt.core.paths import DATA_DIR

DEFAULTS_PATH = DATA_DIR / "compute_defaults.toml"


@lru_cache(maxsize=1)
def defaults() -> dict:
    return tomllib.loads(DEFAULTS_PATH.read_text(encoding="utf-8"))


def smooth_p() -> float:
    return float(defaults()["phase"]["smooth_max_exponent"])


def smax(x, y, p: float):
    """(x^p + y^p)^(1/p), scaled to avoid overflow; arrays or floats, x, y >= 0."""
    m = np.maximum(x, y)
    safe = np.where(m > 0, m, 1.0)
    return np.where(m > 0, safe * ((x / safe) ** p + (y / safe) ** p) ** (1.0 / p), 0.0)


@dataclass(frozen=True)
class PhaseSplit:
    host_s: float
    floor_s: float
    gpu_per_sample_s: float
    fit_log_rms: float = 0.0  # rms of ln(t_fit / t_measured) over the fitted points

    def time(self, batch: float, p: float) -> float:
        return float(smax(self.host_s, self.floor_s + batch * self.gpu_per_sample_s, p))


def _objective(H: np.ndarray, g: np.ndarray, b: np.ndarray, t: np.ndarray, k: float, p: float,
               g0: float | None, sigma: float) -> np.ndarray:
    # H, g broadcast against each other; points along a new last axis
    model = smax(H[..., None], k + g[..., None] * b, p)
    err = ((np.log(np.maximum(model, 1e-300)) - np.log(t)) ** 2).sum(axis=-1)
    if g0 is not None:
        err = err + ((np.log(g) - math.log(g0)) / sigma) ** 2
    return err


def fit_phase(batches, times, floor_s: float, p: float, g_prior: float | None = None, g_min: float = 0.0,
              sigma: float = 1.0) -> PhaseSplit:
    """H, g of t(b) = smax(H, k + b g) on measured (batch, seconds) points; see the module docstring."""
    b = np.asarray(batches, dtype=float)
    t = np.asarray(times, dtype=float)
    if len(b) == 0 or np.any(t <= 0) or np.any(b <= 0):
        raise ValueError("fit_phase needs positive batches and times")
    g_hi = 4.0 * float((t / b).max())
    g_lo = max(g_min, 1e-4 * float(t.min()) / float(b.max()), 1e-15)
    if g_prior is not None:
        g_hi = max(g_hi, 4.0 * g_prior)
        g_lo = max(min(g_lo, 0.05 * g_prior), g_min, 1e-15)
    if g_lo >= g_hi:
        g_hi = 2.0 * g_lo
    H_hi = 1.5 * float(t.max())
    lg = np.linspace(math.log(g_lo), math.log(g_hi), 241)
    Hs = np.linspace(0.0, H_hi, 241)
    dH, dlg = Hs[1] - Hs[0], lg[1] - lg[0]
    for _ in range(3):
        HH, GG = np.meshgrid(Hs, np.exp(lg), indexing="ij")
        err = _objective(HH, GG, b, t, floor_s, p, g_prior, sigma)
        i, j = np.unravel_index(int(np.argmin(err)), err.shape)
        H_best, lg_best = float(Hs[i]), float(lg[j])
        Hs = np.linspace(max(H_best - 2 * dH, 0.0), H_best + 2 * dH, 41)
        lg = np.linspace(max(lg_best - 2 * dlg, math.log(g_lo)), min(lg_best + 2 * dlg, math.log(g_hi)), 41)
        dH, dlg = Hs[1] - Hs[0], lg[1] - lg[0]
    g_best = math.exp(lg_best)
    model = smax(H_best, floor_s + g_best * b, p)
    rms = float(np.sqrt(np.mean((np.log(model) - np.log(t)) ** 2)))
    return PhaseSplit(H_best, float(floor_s), g_best, rms)


def identified(batches, times, growth: float | None = None) -> bool:
    """True when the sweep's largest batch is at least `growth` GPU-bound: t(b_max)/t(b_min) >= growth x
    b_max/b_min (data/compute_defaults.toml `identify_growth`); a single point never is."""
    g = float(defaults()["phase"]["identify_growth"]) if growth is None else growth
    b = np.asarray(batches, dtype=float)
    t = np.asarray(times, dtype=float)
    if len(b) < 2:
        return False
    i, j = int(np.argmin(b)), int(np.argmax(b))
    return bool(t[j] / t[i] >= g * b[j] / b[i])


def step_split(steps, p: float) -> tuple[float, float]:
    """(H_s, G_s) of the optimizer step from its measured values at every batch (module docstring)."""
    s = np.asarray(steps, dtype=float)
    lo, hi = float(s.min()), float(s.max())
    host = (hi ** p - lo ** p) ** (1.0 / p) if hi > lo else 0.0
    return host, lo
