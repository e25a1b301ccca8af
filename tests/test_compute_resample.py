"""Robustness resamples compute with communication (costopt/search/robustness.py, issue 24)."""

import numpy as np
import pytest

import costopt
from costopt.perf.timing import GpuCompute
from costopt.search.robustness import compute_sigma, resample_compute


def _gc(sources):
    n = len(sources)
    return GpuCompute(np.full(n, 0.1), np.full(n, 0.2), np.full(n, 0.01), np.ones(n, bool), np.ones(n, bool),
                      list(sources), [""] * n)


def test_one_factor_per_gpu_type_and_copy():
    # copy k of GPU type g: every phase scaled by the same factor c_k,g; a calibrated GPU is not resampled
    gc = _gc(["measured", "roofline", "calibrated"])
    out, sig = resample_compute(gc, 50)
    assert sig[2] == 0.0 and 0 < sig[0] < sig[1]  # measured profiles spread less than roofline estimates
    f = out.forward_s.reshape(50, 3) / 0.1
    b = out.backward_s.reshape(50, 3) / 0.2
    s = out.step_s.reshape(50, 3) / 0.01
    assert np.allclose(f, b) and np.allclose(f, s)
    assert np.allclose(f[:, 2], 1.0)
    assert np.std(np.log(f[:, 1])) > np.std(np.log(f[:, 0]))
    again, _ = resample_compute(gc, 50)
    assert np.array_equal(again.forward_s, out.forward_s)  # fixed seed: same inputs, same bytes


def test_sigma_is_the_residual_spread_of_the_kind():
    # costopt/data/residuals.json: the log-sd of the roofline kind's out-of-sample residuals
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[1] / "costopt" / "data" / "residuals.json").read_text())
    r = np.array([c["log_residual"] for c in doc["compute"] if c["kind"] == "roofline"])
    assert compute_sigma(["roofline-floored"])[0] == pytest.approx(np.std(r), rel=1e-12)


def test_headline_solve_reports_compute_resampled():
    res = costopt.solve(200000, "inception_v3")
    sv = res.solver
    assert 0.0 < sv["robustness"] <= 1.0
    assert set(sv["robustness_compute_log_sd"]) >= {res.best["gpu"]}
    assert sv["robustness_compute_log_sd"][res.best["gpu"]] > 0  # the winner's compute is an estimate here
