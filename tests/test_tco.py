"""The whole cost of owning (cost.tco_terms), one term at a time, against numbers worked out by hand.

Design: one node of 8 x H200 on the mini catalog's sxm8 board (tests/fixtures/mini.toml, round made-up prices):
    capex = 50,000 chassis + 8 x 30,000 GPUs + one rack 1,000 + 2 PDUs x 500 = 292,000 (hardware = capex)
    power = 8 x 700 W + 4,000 W = 9.6 kW; electricity = 9.6 x 0.8 draw x 1.5 PUE x $0.10 x 8766 h = 10,098.43 / year
Each test switches every TCO rate off but the one it checks ([site] fields), so a term is seen alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import costopt
from costopt.hardware.catalog import parse_catalog

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
OFF = dict(colocation_usd_per_kw_month=0.0, support_pct_per_year=0.0, staff_usd_per_gpu_year=0.0,
           storage_usd_per_tb=0.0, cost_of_capital_pct=0.0, residual_pct_at_3_years=0.0)


def mini(**site) -> costopt.Catalog:
    data = tomllib.loads(MINI.read_text())
    data["site"].update({**OFF, **site})
    return parse_catalog(data, "mini with TCO rates")


def tco(years: float, **site) -> dict:
    return costopt.predict("resnet50", "h200-sxm", 8, 1, None, "ring", catalog=mini(**site), tco_years=years)


def test_base_design_by_hand():
    d = tco(3)
    assert d["capex_usd"] == pytest.approx(292_000.0) and d["power_kw"] == pytest.approx(9.6)
    assert d["energy_usd_per_year"] == pytest.approx(9.6 * 0.8 * 1.5 * 0.10 * 8766)  # 10,098.43
    # every other rate off: capex + 3 years of electricity = 292,000 + 30,295.30
    assert d["cost_usd"] == pytest.approx(292_000 + 3 * 10_098.432, abs=0.01)


def test_colocation_per_kw_month():
    # $100 per kW-month x 9.6 kW x 12 x 3 years = 34,560
    d = tco(3, colocation_usd_per_kw_month=100.0)
    assert d["cost_usd"] - (292_000 + 3 * d["energy_usd_per_year"]) == pytest.approx(34_560.0, abs=0.01)
    # an own facility pays no colocation (PUE only)
    own = tco(3, colocation_usd_per_kw_month=100.0, facility="own")
    assert own["cost_usd"] == pytest.approx(292_000 + 3 * own["energy_usd_per_year"], abs=0.01)


def test_support_per_year():
    # 10% of the 292,000 hardware a year x 3 years = 87,600
    d = tco(3, support_pct_per_year=10.0)
    assert d["cost_usd"] - (292_000 + 3 * d["energy_usd_per_year"]) == pytest.approx(87_600.0, abs=0.01)


def test_staff_per_gpu_year():
    # $1,000 per GPU-year x 8 GPUs x 3 years = 24,000
    d = tco(3, staff_usd_per_gpu_year=1000.0)
    assert d["cost_usd"] - (292_000 + 3 * d["energy_usd_per_year"]) == pytest.approx(24_000.0, abs=0.01)


def test_storage_per_usable_tb():
    # sized to the cluster: 2 TB per GPU x 8 GPUs = 16 TB at $100 = 1,600 (one-off)
    d = tco(3, storage_usd_per_tb=100.0, storage_tb_per_gpu=2.0)
    assert d["cost_usd"] - (292_000 + 3 * d["energy_usd_per_year"]) == pytest.approx(1_600.0, abs=0.01)
    # stated: 50 TB x $100 = 5,000
    d = tco(3, storage_usd_per_tb=100.0, storage_tb=50.0)
    assert d["cost_usd"] - (292_000 + 3 * d["energy_usd_per_year"]) == pytest.approx(5_000.0, abs=0.01)


def test_cost_of_capital_amortising_loan():
    # 292,000 at 10% repaid over 2 years: payment = 292,000 x 0.1 / (1 - 1.1^-2) = 292,000 x 0.5761905
    #   = 168,247.62 a year; 2 payments - 292,000 = 44,495.24 of interest. After 2 years the straight line to
    #   0% at 3 years still leaves 1 - 2/3 of the hardware: 97,333.33 back.
    d = tco(2, cost_of_capital_pct=10.0)
    assert d["cost_usd"] - (292_000 + 2 * d["energy_usd_per_year"]) == pytest.approx(44_495.24 - 97_333.33, abs=0.01)
    d3 = tco(3, cost_of_capital_pct=10.0)  # 3 years: 1 - 1.1^-3 = 0.2486852; 292,000 x (3 x 0.1 / 0.2486852 - 1) = 60,252.57; no resale
    assert d3["cost_usd"] - (292_000 + 3 * d3["energy_usd_per_year"]) == pytest.approx(60_252.57, abs=0.01)


def test_residual_value_straight_line():
    # 40% left after 3 years, straight line: after 1.5 years 1 - 1.5 x 0.6 / 3 = 70% = 204,400 back
    d = tco(1.5, residual_pct_at_3_years=40.0)
    assert d["cost_usd"] - (292_000 + 1.5 * d["energy_usd_per_year"]) == pytest.approx(-204_400.0, abs=0.01)
    # after 6 years nothing is left (never negative)
    d = tco(6, residual_pct_at_3_years=40.0)
    assert d["cost_usd"] == pytest.approx(292_000 + 6 * d["energy_usd_per_year"], abs=0.01)


def test_liquid_cooled_parts_use_the_liquid_pue():
    # H200 (700 W) above a 600 W threshold: liquid cooled at PUE 1.1: 9.6 x 0.8 x 1.1 x 0.10 x 8766 = 7,405.52
    d = tco(3, liquid_above_tdp_w=600.0, liquid_pue=1.1)
    assert d["energy_usd_per_year"] == pytest.approx(9.6 * 0.8 * 1.1 * 0.10 * 8766)
    # below the threshold (the default 1,000 W): the site's PUE 1.5
    assert tco(3)["energy_usd_per_year"] == pytest.approx(9.6 * 0.8 * 1.5 * 0.10 * 8766)


def test_every_term_together_and_the_bom_lines_sum_to_it():
    # colocation 34,560 + support 87,600 + staff 24,000 + storage 1,600 over 3 years, 7% on 293,600:
    #   3 x 293,600 x 0.07 / (1 - 1.07^-3) - 293,600 = 293,600 x 0.1431552 = 42,030.31; resale 30% of 292,000
    #   = -87,600
    site = dict(colocation_usd_per_kw_month=100.0, support_pct_per_year=10.0, staff_usd_per_gpu_year=1000.0,
                storage_usd_per_tb=100.0, storage_tb_per_gpu=2.0, cost_of_capital_pct=7.0, residual_pct_at_3_years=30.0)
    financing = 3 * 293_600 * 0.07 / (1 - 1.07 ** -3) - 293_600
    assert financing == pytest.approx(42_030.31, abs=0.01)
    res = costopt.solve(10_000_000, "resnet50", catalog=mini(**site), tco_years=3, top=1)
    b = res.best
    assert b["gpu"] and "tco" in b
    # the TCO lines (bom.tco_lines) sum to cost_usd, and name every term
    assert sum(ln["subtotal_usd"] for ln in b["tco"]) == pytest.approx(b["cost_usd"], abs=0.05)
    parts = {ln["part_id"] for ln in b["tco"]}
    assert {"capex", "storage", "financing", "colocation", "electricity", "support", "staff", "resale"} <= parts
    d = tco(3, **site)
    want = 292_000 + 1_600 + 42_030.31 + 34_560 + 3 * d["energy_usd_per_year"] + 87_600 + 24_000 - 87_600
    assert d["cost_usd"] == pytest.approx(want, abs=0.05)


def test_capex_alone_stays_available():
    # without --tco-years the cost is the purchase, whatever the TCO rates
    d = costopt.predict("resnet50", "h200-sxm", 8, 1, None, "ring", catalog=mini(colocation_usd_per_kw_month=500.0))
    assert d["cost_usd"] == pytest.approx(292_000.0) == d["capex_usd"]


def test_large_model_predict_prices_the_whole_cost_of_owning():
    # issue 22: a large-model predict honours --tco-years and --as-of as solve does. 8 nodes x 8 B200 (1,000 W:
    # not above the 1,000 W liquid threshold, so the site's PUE 1.5) on the reference catalog; electricity by
    # hand = power x 0.75 average draw x 1.5 PUE x $0.0826/kWh x 8766 h a year; every other term at the default
    # [site] rates (tests/hand_tco.py); 64 GPUs; no support bought up front, so hardware = capex
    from hand_tco import whole_cost_without_power

    args = ("llama3_70b", "b200", 8, 8, "ib-ndr", "fsdp")
    d = costopt.predict(*args, tp=2, tokens=1e12, tco_years=3, today="2031-01-01")
    capex, kw = d["capex_usd"], d["power_kw"]
    electricity = kw * 0.75 * 1.5 * 0.0826 * 8766
    assert d["cost_usd"] == pytest.approx(whole_cost_without_power(capex, kw, 64, 3) + 3 * electricity, rel=1e-9)
    assert sum(ln["subtotal_usd"] for ln in d["tco"]) == pytest.approx(d["cost_usd"], abs=0.05)
    assert sum(ln["subtotal_usd"] for ln in d["bom"]) == pytest.approx(capex, abs=0.05)
    assert "whole cost of owning over 3 years" in d["cost_basis"]
    # capex alone without --tco-years; price ages counted to --as-of (a 2024 price is over a year old in 2031)
    plain = costopt.predict(*args, tp=2, tokens=1e12)
    assert plain["cost_usd"] == pytest.approx(capex) and "tco" not in plain
    assert d["as_of"] == "2031-01-01" and "years old" in d["price_warning"]
