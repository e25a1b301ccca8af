"""One cost basis for every command: solve, export and compare price the same inputs the same way, and an
owned catalog beside a cloud one is compared on the same horizon. References are written here."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import costopt
from costopt.purchase import purchasing as P
from costopt.hardware.catalog import load_catalog
from costopt.hardware.cost import CostBasis
from costopt.core.errors import InputError
from hand_tco import whole_cost_without_power

ROOT = Path(__file__).resolve().parents[1]
VENDOR_A = ROOT / "catalogs" / "vendor-a-datacenter-2026.toml"
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"
MINI = Path(__file__).parent / "fixtures" / "mini.toml"
HOURS_IN_A_YEAR = 365.25 * 24  # written out here, not imported



def run_cli(*args):
    from typer.testing import CliRunner

    from costopt.cli import app

    r = CliRunner().invoke(app, [*map(str, args)])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def test_cloud_catalog_with_epochs_is_priced_per_job_by_solve_export_and_compare():
    """The bug: `solve` priced a cloud catalog per hour with --epochs while export/compare priced it per job."""
    samples = 2 * 1_000_000
    res = costopt.solve(300, "resnet50", catalog=AWS, epochs=2, dataset_size=1_000_000, top=3)
    b = res.best
    # per job: the cluster's hourly price times its own time to train
    job_hours = samples / b["throughput_samples_per_s"] / 3600
    instance_usd_per_hour = load_catalog(AWS).chassis_by_id[b["chassis"]].usd_per_hour  # the catalog's price
    assert b["cost_basis"] == "USD per training job (rent x time to train)"
    assert b["time_to_train_h"] == pytest.approx(job_hours)
    assert b["cost_usd"] == pytest.approx(b["nodes"] * instance_usd_per_hour * job_hours)
    ev = P.evaluate_catalog(AWS, "resnet50", 300, P.Options(epochs=2, dataset_size=1_000_000))
    table = P.ranked_table(ev, 300)
    top = table.iloc[0]
    assert top["throughput_samples_per_s"] == pytest.approx(b["throughput_samples_per_s"])
    assert top["cost_usd"] == pytest.approx(b["cost_usd"])
    assert top["cost_usd"] == pytest.approx(top["usd_per_hour"] * job_hours)
    cmp = P.compare([AWS, AWS], "resnet50", 300, P.Options(epochs=2, dataset_size=1_000_000), price_cuts=False)
    assert cmp.answers[0].best["cost_usd"] == pytest.approx(b["cost_usd"])
    assert cmp.answers[0].best["gpu"] == b["gpu"] and cmp.answers[0].best["total_gpus"] == b["total_gpus"]
    assert cmp.answers[0].cost_basis == b["cost_basis"]


def test_cloud_solve_with_hours():
    res = costopt.solve(5000, "resnet50", catalog=AWS, hours=10, top=2)
    b = res.best
    assert b["cost_basis"] == "USD for 10 h of rent"
    ev = P.evaluate_catalog(AWS, "resnet50", 5000, P.Options(hours=10))
    top = P.ranked_table(ev, 5000).iloc[0]
    assert top["cost_usd"] == pytest.approx(10 * top["usd_per_hour"]) == pytest.approx(b["cost_usd"])


def test_export_tco_is_labelled_and_priced_as_tco(tmp_path):
    """The bug: `export --tco-years 4` labelled capex + electricity as 'USD capex (one-off purchase)'."""
    out = tmp_path / "t.json"
    rc, _, err = run_cli("export", "--model", "resnet50", "--budget", "150000", "--catalog", MINI, "--tco-years", "4",
                         "--format", "json", "-o", out)
    assert rc == 0, err
    df = pd.read_json(out)
    tco = ("USD whole cost of owning over 4 years (capex, storage, financing, colocation, electricity, support, "
           "staff, less resale)")
    assert set(df["cost_basis"]) == {tco}
    expected = [whole_cost_without_power(c, p, g, 4) + 4 * e
                for c, p, g, e in zip(df["capex_usd"], df["power_kw"], df["total_gpus"], df["energy_usd_per_year"])]
    assert np.allclose(df["cost_usd"], expected, rtol=1e-7)
    res = costopt.solve(150_000, "resnet50", catalog=MINI, tco_years=4)
    assert res.best["cost_basis"] == tco
    assert df.iloc[0]["cost_usd"] == pytest.approx(res.best["cost_usd"])


def test_owned_solve_export_compare_agree():
    opts = P.Options(epochs=90, dataset_size=1_281_167)
    res = costopt.solve(200_000, "resnet50", catalog=VENDOR_A, epochs=90, dataset_size=1_281_167, top=5)
    top = P.ranked_table(P.evaluate_catalog(VENDOR_A, "resnet50", 200_000, opts), 200_000).iloc[0]
    cmp = P.compare([VENDOR_A, MINI], "resnet50", 200_000, opts, price_cuts=False)
    assert cmp.answers[0].best == res.best
    assert top["cost_usd"] == pytest.approx(res.best["cost_usd"]) and top["gpu"] == res.best["gpu"]
    assert res.best["cost_basis"] == cmp.answers[0].cost_basis == "USD capex (one-off purchase)"


def test_compare_owned_and_cloud_per_job_like_with_like():
    """Owned beside rented with --epochs: both per job; the purchase amortised over 3 years at 50% use."""
    samples = 90 * 1_281_167
    opts = P.Options(precision="amp_bf16", epochs=90, dataset_size=1_281_167, years=3, utilization=0.5)
    cmp = P.compare([VENDOR_A, AWS], "vgg16", 300_000, opts, price_cuts=False)
    own, rent = cmp.answers[0].best, cmp.answers[1].best
    assert cmp.answers[0].cost_basis == "USD per training job (whole cost of owning over 3 years at 50% use)"
    assert cmp.answers[1].cost_basis == "USD per training job (rent x time to train)"
    # owned: one job takes h hours; the cluster is busy 0.5 x 3 years, so an hour of work carries
    # the whole cost of owning but electricity / (3 x 8766 x 0.5), plus an hour of electricity
    h = samples / own["throughput_samples_per_s"] / 3600
    fixed = whole_cost_without_power(own["capex_usd"], own["power_kw"], own["total_gpus"], 3)
    expected = h * (fixed / (3 * HOURS_IN_A_YEAR * 0.5) + own["energy_usd_per_year"] / HOURS_IN_A_YEAR)
    assert own["cost_usd"] == pytest.approx(expected, rel=2e-8)  # DESIGN dicts carry 9 significant digits (api.design_dict): the inputs above are rounded too
    assert own["capex_usd"] <= 300_000  # the budget still limits the purchase
    assert own["cost_usd"] < 1000  # a job's share, not the $-hundred-thousand purchase
    # rented: instances x $/h x its own time to train
    hr = samples / rent["throughput_samples_per_s"] / 3600
    assert rent["time_to_train_h"] == pytest.approx(hr)
    assert rent["cost_usd"] <= 300_000 and rent["capex_usd"] == 0


def test_amortised_cost_hand_computed():
    """A worked number: $240,000 over 2 years at 25% use, 5,000 USD of electricity a year, a 3 h job.
    Busy hours = 2 x 8766 x 0.25 = 4383; per hour 240000/4383 + 5000/8766 = 54.7570 + 0.5704;
    a 3 h job = 165.98 USD."""
    from costopt.hardware.cost import Costs, price_on_basis

    one = lambda v: np.array([float(v)])  # noqa: E731
    costs = Costs(one(240_000), one(5000), one(240_000), one(10), one(4), one(0), np.array([True]), one(0),
                  np.array([False]))
    thr = 1000.0  # samples/s
    basis = CostBasis(samples=3 * 3600 * thr, amortize_years=2, utilization=0.25)
    out = price_on_basis(costs, np.array([thr]), basis)
    assert out.cost_usd[0] == pytest.approx(3 * (240_000 / 4383 + 5000 / 8766), rel=1e-12)
    assert out.cost_usd[0] == pytest.approx(165.98, abs=0.01)
    assert out.spend_usd[0] == 240_000


def test_compare_owned_and_cloud_hours():
    opts = P.Options(hours=2000, years=4, utilization=1.0)
    cmp = P.compare([VENDOR_A, AWS], "resnet50", 100_000, opts, price_cuts=False)
    own, rent = cmp.answers[0].best, cmp.answers[1].best
    fixed = whole_cost_without_power(own["capex_usd"], own["power_kw"], own["total_gpus"], 4)
    assert own["cost_usd"] == pytest.approx(2000 * (fixed / (4 * HOURS_IN_A_YEAR)
                                                    + own["energy_usd_per_year"] / HOURS_IN_A_YEAR), rel=2e-8)
    assert rent["cost_usd"] <= 100_000 and cmp.answers[1].cost_basis == "USD for 2000 h of rent"


def test_horizon_basis_rejects_tco():
    with pytest.raises(InputError, match="tco-years"):
        P.compare([VENDOR_A, AWS], "resnet50", 100_000, P.Options(hours=100, tco_years=3))


def test_compare_cli_states_horizon():
    rc, out, err = run_cli("compare", VENDOR_A, AWS, "--model", "resnet50", "--budget", "100000", "--epochs", "1",
                           "--dataset-size", "1281167", "--utilization", "0.4", "--years", "5", "--no-price-cut")
    assert rc == 0, err
    assert "whole cost of owning over 5 years at 40% use" in out and "rent x time to train" in out
