"""Bounded least squares of the achieved-fraction fit (costopt/perf/compute.py `_fit_class`).

Linear equations sum_k a_ik x_k = b_i with weights w_i and lower bounds x >= l:

    min_x  sum_i w_i^2 (a_i . x - b_i)^2     subject to x >= l

solved by Lawson-Hanson non-negative least squares on x - l (`nnls_shifted`). Some equations may instead be
published throughput ratios with a host time h working beside the GPU (compute.py module docstring):

    rho smax(r_k, h) - smax(r_j, h) = 0,   r = c . x linear in x,   smax(x, y) = (x^p + y^p)^(1/p)

Those are solved from the additive (p = 1) solution by damped Gauss-Newton (Levenberg-Marquardt) steps, each
a bounded linear least squares on the residuals linearised at the current x, with damping scaled by the
Jacobian's column norms; a step is kept only when it lowers the sum of squares. Deterministic.
"""

from __future__ import annotations

import math

import numpy as np

from costopt.perf.host_gpu import smax


def nnls_shifted(A: np.ndarray, b: np.ndarray, lower: np.ndarray) -> np.ndarray:
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






def solve_equations(eqs: list, group_of, lower_of, ratios: dict | None = None, p: float = 1.0) -> dict:
    """Bounded least squares over the equations `eqs` ((coefficients, rhs, weight), linear in x).

    `ratios` {equation index: (r_k coefficients, r_j coefficients, host key, rho)} replaces those
    equations by the smooth-max form rho smax(r_k, h) - smax(r_j, h) = 0 (exponent p; module docstring):
    solved from the additive (p = 1) solution by damped Gauss-Newton steps, each a bounded linear least
    squares on the linearised residuals (Levenberg-Marquardt, column-scaled damping); deterministic.
    """
    keys = sorted({(group_of(k[0]), k[1]) for coeff, _, _ in eqs for k in coeff})
    index = {k: i for i, k in enumerate(keys)}
    A = np.zeros((len(eqs), len(keys)))
    rhs = np.zeros(len(eqs))
    for i, (coeff, r, w) in enumerate(eqs):
        for (g, term), v in coeff.items():
            A[i, index[(group_of(g), term)]] += v * w
        rhs[i] = r * w
    lower = np.array([lower_of(k) for k in keys])
    x = nnls_shifted(A, rhs, lower)
    if ratios and p != 1.0:
        x = _smooth_ratio_fit(A, rhs, lower, x, eqs, ratios, group_of, index, p)
    return dict(zip(keys, x))


def _smooth_ratio_fit(A, rhs, lower, x, eqs, ratios, group_of, index, p: float) -> np.ndarray:
    """Damped Gauss-Newton from x on the residuals of `_solve` with its smooth-max ratio equations."""
    n = len(index)
    rows = []
    for i, (ck, cj, hk, rho) in sorted(ratios.items()):
        vk, vj = np.zeros(n), np.zeros(n)
        for (g, term), v in ck.items():
            vk[index[(group_of(g), term)]] += v
        for (g, term), v in cj.items():
            vj[index[(group_of(g), term)]] += v
        rows.append((i, vk, vj, index[(group_of(hk[0]), hk[1])], rho, eqs[i][2]))

    def residual(x):
        f, J = A @ x - rhs, A.copy()
        for i, vk, vj, ih, rho, w in rows:
            rk, rj, h = float(vk @ x), float(vj @ x), float(x[ih])
            sk, sj = float(smax(rk, h, p)), float(smax(rj, h, p))
            f[i] = w * (rho * sk - sj)
            J[i] = w * (rho * (rk / sk) ** (p - 1) * vk - (rj / sj) ** (p - 1) * vj)
            J[i, ih] += w * (rho * (h / sk) ** (p - 1) - (h / sj) ** (p - 1))
        return f, J

    f, J = residual(x)
    cost, mu = float(f @ f), 1e-3
    for _ in range(200):
        d = np.maximum(np.linalg.norm(J, axis=0), 1e-12)
        aug = np.vstack([J, math.sqrt(mu) * np.diag(d)])
        x_new = nnls_shifted(aug, np.concatenate([J @ x - f, math.sqrt(mu) * d * x]), lower)
        f_new, J_new = residual(x_new)
        c_new = float(f_new @ f_new)
        if c_new < cost:
            done = cost - c_new <= 1e-12 * cost
            x, f, J, cost, mu = x_new, f_new, J_new, c_new, max(mu / 3.0, 1e-9)
            if done:
                break
        else:
            mu *= 4.0
            if mu > 1e8:
                break
    return x
