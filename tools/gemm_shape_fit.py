"""How GEMM efficiency falls with the matrix dimensions, from measured H100 bf16 GEMMs; prints the
shape constant `gemm_shape_dims` of costopt/data/llm_defaults.toml (copied there by hand).

Data: costopt/data/published/gemm_shapes_h100.json (XLA's sm_90 matmul table: 4 GEMMs of 4096 x k
times k x n, n and k from 256 to 4096). Model of one GEMM call, fitted by least squares weighted by
1/time on the points with n, k >= 512 (the sizes of transformer layers per GPU; smaller ones are
dominated by the launch):

    time = 2·b·m·n·k / P · (1 + k0/k + n0/n) + t0

k0 and n0 are the extra inner / output columns a tile pays for (prologue, epilogue, partial waves); t0
the fixed cost of one call. A layer's weight GEMMs run forward (inner k = K, output n = N), as a data
gradient (inner N, output K) and as a weight gradient (inner = tokens, large), so averaged over the
three passes the time per FLOP grows by

    1 + c·(1/K + 1/N),   c = (k0 + n0)/3        (n0/(3N) of the weight gradient folded in)

    python tools/gemm_shape_fit.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "costopt" / "data" / "published" / "gemm_shapes_h100.json"


def fit_shape(path: Path = DATA, min_dim: int = 512) -> dict[str, float]:
    d = json.loads(path.read_text(encoding="utf-8"))
    b, m = d["batch"], d["m"]
    pts = [x for x in d["points"] if x["n"] >= min_dim and x["k"] >= min_dim]
    n = np.array([x["n"] for x in pts], dtype=float)
    k = np.array([x["k"] for x in pts], dtype=float)
    flop = 2.0 * b * m * n * k
    t = flop / np.array([x["flops_per_s"] for x in pts], dtype=float)
    a = np.stack([flop, flop / k, flop / n, np.ones_like(t)], axis=1)
    w = 1.0 / t
    x, *_ = np.linalg.lstsq(a * w[:, None], t * w, rcond=None)
    peak = 1.0 / x[0]
    k0, n0, t0 = x[1] * peak, x[2] * peak, x[3]
    rel = a @ x / t - 1.0
    return {"points": len(pts), "P_tflops": peak / 1e12, "k0": k0, "n0": n0, "t0_us": t0 * 1e6,
            "max_rel_err": float(np.max(np.abs(rel))), "c": (k0 + n0) / 3.0}


def main() -> None:
    f = fit_shape()
    print(f"{f['points']} GEMMs (n, k >= 512): P = {f['P_tflops']:.0f} TFLOP/s, k0 = {f['k0']:.1f}, "
          f"n0 = {f['n0']:.1f}, t0 = {f['t0_us']:.2f} us, largest misfit {100 * f['max_rel_err']:.1f}%")
    print(f"gemm_shape_dims = {f['c']:.1f}   (c in 1 + c·(1/K + 1/N))")


if __name__ == "__main__":
    sys.exit(main())
