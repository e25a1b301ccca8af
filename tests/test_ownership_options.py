"""The whole-cost options on the command line (issue 25 item 1: cli/ownership.py, hardware/site_terms.py), one
at a time, against numbers worked out by hand.

Design: one node of 8 x H200 on the mini catalog's sxm8 board (tests/fixtures/mini.toml, round made-up prices):
    capex = 50,000 chassis + 8 x 30,000 GPUs + one rack 1,000 + 2 PDUs x 500 = 292,000 (hardware = capex)
    power = 8 x 700 W + 4,000 W = 9.6 kW; electricity = 9.6 x 0.8 draw x 1.5 PUE x $0.10 x 8766 h = 10,098.432 / year
Every run passes OFF (each whole-cost rate 0 by its option) and then one option, so a term is seen alone and
the test shows the option, not the catalog file, set it. Base over 3 years: 292,000 + 3 x 10,098.432 = 322,295.296.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costopt
from costopt.cli.main import app

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
AWS = Path(__file__).parent.parent / "catalogs" / "aws-on-demand-2026.toml"
OFF = ["--colocation-usd-per-kw-month", "0", "--support-pct-per-year", "0", "--staff-usd-per-gpu-year", "0",
       "--storage-usd-per-tb", "0", "--cost-of-capital-pct", "0", "--residual-pct-at-3-years", "0"]
PREDICT = ["predict", "--model", "resnet50", "--gpu", "h200-sxm", "--gpus-per-node", "8", "--nodes", "1",
           "--strategy", "ring", "--catalog", str(MINI), "--format", "json"]
BASE_3Y = 292_000 + 3 * 10_098.432
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def whole_cost(*options: str, years: str = "3") -> dict:
    r = run(*PREDICT, "--tco-years", years, *OFF, *options)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_all_rates_off_leaves_capex_and_electricity():
    d = whole_cost()
    assert d["capex_usd"] == pytest.approx(292_000.0)
    assert d["cost_usd"] == pytest.approx(BASE_3Y, abs=0.01)  # 322,295.30


@pytest.mark.parametrize("option, value, extra_usd", [
    # $100 per kW-month x 9.6 kW x 12 months x 3 years = 34,560
    ("--colocation-usd-per-kw-month", "100", 34_560.0),
    # 10% of the 292,000 hardware a year x 3 years = 87,600
    ("--support-pct-per-year", "10", 87_600.0),
    # $1,000 per GPU-year x 8 GPUs x 3 years = 24,000
    ("--staff-usd-per-gpu-year", "1000", 24_000.0),
    # storage sized to the job: the catalog's 1 TB per GPU x 8 GPUs = 8 TB x $100 = 800, bought once
    ("--storage-usd-per-tb", "100", 800.0),
    # 292,000 at 10% repaid over 3 years: 292,000 x (3 x 0.1 / (1 - 1.1^-3) - 1) = 292,000 x 0.2063444 = 60,252.57
    ("--cost-of-capital-pct", "10", 60_252.57),
    # resale 30% of the 292,000 hardware after 36 months = -87,600
    ("--residual-pct-at-3-years", "30", -87_600.0),
])
def test_one_term_by_its_option(option, value, extra_usd):
    d = whole_cost(option, value)
    assert d["cost_usd"] - BASE_3Y == pytest.approx(extra_usd, abs=0.01)
    # the whole-cost lines say where the rate came from
    assert any(f"given on the command line ({option} {value})" in ln["source"] for ln in d["tco"]), d["tco"]
    assert sum(ln["subtotal_usd"] for ln in d["tco"]) == pytest.approx(d["cost_usd"], abs=0.05)


def test_stated_storage_and_an_own_facility():
    # 50 TB stated x $100 = 5,000
    d = whole_cost("--storage-usd-per-tb", "100", "--storage-tb", "50")
    assert d["cost_usd"] - BASE_3Y == pytest.approx(5_000.0, abs=0.01)
    # an own building pays no colocation whatever its rate (PUE only)
    own = whole_cost("--colocation-usd-per-kw-month", "100", "--facility", "own")
    assert own["cost_usd"] == pytest.approx(BASE_3Y, abs=0.01)


def test_electricity_and_pue_options():
    # $0.20/kWh: 9.6 x 0.8 x 1.5 x 0.20 x 8766 = 20,196.864 a year
    d = whole_cost("--electricity-usd-per-kwh", "0.2")
    assert d["energy_usd_per_year"] == pytest.approx(20_196.864, abs=1e-6)
    assert d["cost_usd"] == pytest.approx(292_000 + 3 * 20_196.864, abs=0.01)
    # PUE 1.2: 9.6 x 0.8 x 1.2 x 0.10 x 8766 = 8,078.7456 a year
    d = whole_cost("--pue", "1.2")
    assert d["energy_usd_per_year"] == pytest.approx(8_078.7456, abs=1e-6)
    # a 700 W H200 is below the 1,000 W liquid-cooling threshold: the liquid PUE does not touch it
    d = whole_cost("--liquid-pue", "1.05")
    assert d["energy_usd_per_year"] == pytest.approx(10_098.432, abs=1e-6)


def test_the_api_takes_the_same_names():
    cli = whole_cost("--staff-usd-per-gpu-year", "1000")
    rates = {"colocation_usd_per_kw_month": 0.0, "support_pct_per_year": 0.0, "staff_usd_per_gpu_year": 1000.0,
             "storage_usd_per_tb": 0.0, "cost_of_capital_pct": 0.0, "residual_pct_at_3_years": 0.0}
    api = costopt.predict("resnet50", "h200-sxm", 8, 1, None, "ring", catalog=MINI, tco_years=3, **rates)
    assert api["cost_usd"] == pytest.approx(cli["cost_usd"], abs=1e-6) == pytest.approx(BASE_3Y + 24_000, abs=0.01)


@pytest.mark.parametrize("args, named", [
    # a purchase priced by capex alone cannot use a whole-cost term: refused, never ignored
    (PREDICT + ["--colocation-usd-per-kw-month", "100"], "--colocation-usd-per-kw-month 100"),
    # out of the catalog's own ranges
    (PREDICT + ["--tco-years", "3", "--pue", "0.5"], "--pue 0.5"),
    (PREDICT + ["--tco-years", "3", "--support-pct-per-year", "150"], "--support-pct-per-year 150"),
    (PREDICT + ["--tco-years", "3", "--storage-tb", "-4"], "--storage-tb -4"),
    (PREDICT + ["--tco-years", "3", "--facility", "cave"], "--facility cave"),
    # a cloud catalog rents every node: nothing of it is owned
    (["solve", "--budget", "200000", "--model", "resnet50", "--catalog", str(AWS), "--tco-years", "3",
      "--staff-usd-per-gpu-year", "1000"], "--staff-usd-per-gpu-year"),
    (["report", "--budget", "200000", "--model", "resnet50", "--catalog", str(AWS), "--out", "never.md",
      "--pue", "1.3"], "--pue"),
])
def test_refused_with_the_option_named(args, named):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert named in r.output and "Traceback" not in r.output
    assert not Path("never.md").exists()


def test_report_prices_the_purchase_with_the_options(tmp_path):
    # the report's cost basis lists the whole cost of owning over --years (3) at the rates given: staff at
    # $1,000 per GPU-year is 1,000 x GPUs x 3 for whatever design it recommends
    out = tmp_path / "r.md"
    r = run("report", "--model", "resnet50", "--budget", "400000", "--catalog", MINI, "--out", out, "--no-progress",
            "--staff-usd-per-gpu-year", "1000")
    assert r.exit_code == 0, r.output
    line = next(ln for ln in out.read_text().splitlines() if ln.startswith("| TCO |"))
    staff = line.split("operations staff, per GPU-year (")[1]
    gpus = int(staff.split(" GPUs")[0])
    assert f"x 3 years) ${1000 * gpus * 3:,}" in staff


def test_report_hours_on_an_owned_catalog_is_refused(tmp_path):
    # --hours prices rent; without --cloud an owned catalog's report has nothing to spend it on
    r = run("report", "--model", "resnet50", "--budget", "400000", "--catalog", MINI, "--out", tmp_path / "r.md",
            "--hours", "100")
    assert r.exit_code == 2 and "--hours" in r.output and "owned catalog" in r.output, r.output
