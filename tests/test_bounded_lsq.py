"""The fraction fit's bounded least squares (costopt/perf/bounded_lsq.py), against hand-solved systems."""

import pytest

from costopt.perf.bounded_lsq import nnls_shifted, solve_equations


def test_bounds_hold_and_free_values_are_the_least_squares_ones():
    # min (x0 - 0.5)^2 + (x1 - 2)^2 with x >= 1: x0 sits at its bound 1, x1 = 2 is free
    import numpy as np

    x = nnls_shifted(np.eye(2), np.array([0.5, 2.0]), np.array([1.0, 1.0]))
    assert x == pytest.approx([1.0, 2.0], abs=1e-12)


def _system():
    # unknowns a (r_k), b (r_j), h (host); equations: b = 1, h = 0.8 (linear, weight 1), and the published
    # ratio rho = X_k / X_j = 0.5 of throughputs: 0.5 smax(a, h) = smax(b, h)
    eqs = [({("j", "b"): 1.0}, 1.0, 1.0), ({("*m", "host"): 1.0}, 0.8, 1.0),
           ({("k", "a"): 0.5, ("j", "b"): -1.0, ("*m", "host"): 0.5 - 1.0}, 0.0, 1.0)]
    ratios = {2: ({("k", "a"): 1.0}, {("j", "b"): 1.0}, ("*m", "host"), 0.5)}
    return eqs, ratios


def test_additive_ratio_equation():
    # p = 1 (additive): 0.5 (a + 0.8) = 1 + 0.8  ->  a = 3.6 - 0.8 = 2.8
    eqs, ratios = _system()
    x = solve_equations(eqs, lambda g: g, lambda k: 0.0, ratios, 1.0)
    assert x[("k", "a")] == pytest.approx(2.8, rel=1e-9)


def test_smooth_max_ratio_equation():
    # p = 3: smax(1, 0.8) = (1 + 0.512)^(1/3) = 1.147759; smax(a, 0.8) = 1.147759 / 0.5 = 2.295517;
    # a = (2.295517^3 - 0.512)^(1/3) = (12.09599 - 0.512)^(1/3) = 2.262661 (the host cap slows the fast GPU j
    # more than the slow GPU k, so a is below the additive 2.8 and above 2 x 1 = 2)
    eqs, ratios = _system()
    x = solve_equations(eqs, lambda g: g, lambda k: 0.0, ratios, 3.0)
    assert x[("k", "a")] == pytest.approx(2.262661, rel=1e-5)
    assert x[("j", "b")] == pytest.approx(1.0, rel=1e-6) and x[("*m", "host")] == pytest.approx(0.8, rel=1e-6)
