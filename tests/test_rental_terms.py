"""Rentals by the provider's terms: minimum term and billing steps (cost.billed_hours), pricing tiers
(on-demand, capacity block, savings plan, spot), rent-vs-buy on the same job and calendar, price ages.

Every expected number is derived by hand in the comments from a catalog price written in the test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from costopt.core.errors import InputError
from costopt.core.units import HOURS_PER_YEAR
from costopt.hardware.catalog import load_catalog
from costopt.hardware.cost import billed_hours
from costopt.purchase import purchasing as P
from hand_tco import whole_cost_without_power

ROOT = Path(__file__).resolve().parents[1]
VENDOR_A = str(ROOT / "catalogs" / "vendor-a-datacenter-2026.toml")
OD = str(ROOT / "catalogs" / "aws-on-demand-2026.toml")
CB = str(ROOT / "catalogs" / "aws-capacity-blocks-2026.toml")
SP = str(ROOT / "catalogs" / "aws-savings-plan-2026.toml")
SPOT = str(ROOT / "catalogs" / "aws-spot-2026.toml")
NEBIUS = str(ROOT / "catalogs" / "nebius-2026.toml")
LAMBDA = str(ROOT / "catalogs" / "lambda-2026.toml")
JOB = dict(epochs=90, dataset_size=1_281_167)


def test_billed_hours_hand_numbers():
    # Capacity Block: minimum 24 h, steps of 24 h.
    #   0.0256 h -> 24; 1.406 h -> 24; 24 h exactly -> 24 (no float round-up); 25 h -> 48; 49 h -> 72
    h = np.array([0.0256, 1.406, 24.0, 25.0, 49.0])
    got = billed_hours(h, np.full(5, 24.0), np.full(5, 24.0))
    assert got.tolist() == [24.0, 24.0, 24.0, 48.0, 72.0]
    # on-demand: 60-second minimum (1/60 h), billed by the second (no step):
    #   0.005 h (18 s) -> 1/60 h; 2.5 h -> 2.5 h
    got = billed_hours(np.array([0.005, 2.5]), np.full(2, 1 / 60), np.zeros(2))
    assert got == pytest.approx([1 / 60, 2.5])
    # a 1-year plan: minimum 8766 h in steps of 8766: 100 h -> 8766; 8767 h -> 17532
    got = billed_hours(np.array([100.0, 8767.0]), np.full(2, 8766.0), np.full(2, 8766.0))
    assert got.tolist() == [8766.0, 17532.0]
    # owned designs (no terms): unchanged
    assert billed_hours(np.array([3.3]), None, None).tolist() == [3.3]


def test_catalog_terms_loaded_from_the_files():
    cb = load_catalog(CB).chassis_by_id["p5e.48xlarge"]
    assert (cb.rental_pricing, cb.min_rental_hours, cb.rental_increment_hours) == ("capacity-block", 24.0, 24.0)
    assert cb.usd_per_hour == 39.80 and "Capacity Blocks" in cb.rental_terms_source
    sp = load_catalog(SP).chassis_by_id["p5.48xlarge"]
    assert (sp.rental_pricing, sp.min_rental_hours) == ("reserved", 8766.0)
    spot = load_catalog(SPOT).chassis_by_id["p5.48xlarge"]
    assert spot.rental_pricing == "spot" and "two-minute" in spot.interruption_note
    od = load_catalog(OD)
    # the June 2025 cut: p5 $55.04 = 8 x $6.88 (derived from Nebius $2.95 being 57.1% cheaper)
    assert od.chassis_by_id["p5.48xlarge"].usd_per_hour == pytest.approx(8 * round(2.95 / (1 - 0.571), 2))
    assert "p6-b200.48xlarge" in od.chassis_by_id  # AWS Blackwell
    assert od.chassis_by_id["p5.48xlarge"].max_nodes == 8 and "max_nodes" in od.chassis_by_id["p5.48xlarge"].estimates
    lam = load_catalog(LAMBDA).chassis_by_id["gpu_8x_h100_sxm5"]
    assert lam.usd_per_hour == pytest.approx(8 * 3.99) and lam.max_nodes == 1
    neb = load_catalog(NEBIUS).chassis_by_id["nebius-8x-h200"]
    assert neb.usd_per_hour == pytest.approx(8 * 3.50)


def _bad_instance(tmp_path, extra: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text('[catalog]\nname = "x"\nbase = "reference-2026"\nkind = "cloud"\ndate = "2026-01-01"\n\n'
                 '[[instance]]\nid = "a"\ngpu = "h100-sxm"\ngpu_count = 8\nusd_per_hour = 10\nnetwork_gbps = 100\n'
                 'source = "s"\ndate = "2026-01-01"\nprice_source = "p"\nprice_date = "2026-01-01"\n' + extra)
    return p


def test_terms_need_their_source_and_spot_its_interruption(tmp_path):
    with pytest.raises(InputError, match="rental_terms_source"):
        load_catalog(_bad_instance(tmp_path, "min_rental_hours = 24\n"))
    with pytest.raises(InputError, match="interruption_note"):
        load_catalog(_bad_instance(tmp_path, 'pricing = "spot"\n'))
    with pytest.raises(InputError, match="pricing"):
        load_catalog(_bad_instance(tmp_path, 'pricing = "weekly"\n'))


def test_compare_never_rents_for_less_than_a_capacity_block_day():
    # the 2025 tool rented 512 H200s for 69 seconds for $105. From Capacity Blocks a job of T h costs
    # nodes x $39.80 x 24 x ceil(T / 24): 64 x 39.80 x 24 = $61,132.80 for any job under a day.
    cmp = P.compare([VENDOR_A, CB], "vgg16", 300_000, P.Options(precision="amp_bf16", **JOB), price_cuts=False)
    b = cmp.answers[1].best
    assert b["chassis"] in ("p5e.48xlarge", "p5en.48xlarge", "p5.48xlarge", "p4d.24xlarge")
    rate = {"p5e.48xlarge": 39.80, "p5en.48xlarge": 41.61, "p5.48xlarge": 39.33, "p4d.24xlarge": 14.75}[b["chassis"]]
    days = math.ceil(b["time_to_train_h"] / 24)
    assert b["cost_usd"] == pytest.approx(b["nodes"] * rate * 24 * days)
    assert b["time_to_train_h"] < 24 and b["cost_usd"] >= b["nodes"] * rate * 24
    assert "capacity-block, minimum 24 h" in cmp.held_equal and "same job" in cmp.held_equal


CB_PRICES = {"p4d.24xlarge": 14.75, "p5.48xlarge": 39.33, "p5e.48xlarge": 39.80, "p5en.48xlarge": 41.61}  # the file's
SP_PRICES = {"p4d.24xlarge": 13.73, "p5.48xlarge": 34.40, "p5en.48xlarge": 40.00, "p6-b200.48xlarge": 71.20}


def test_rent_vs_buy_capacity_blocks_hand_break_even():
    # vendor A's pick (one 8 x H200 node) against Capacity Blocks: R = nodes x the block price of the match.
    # u* = C / (Y·8766·(R·ratio − E/8766)), ratio = T_own / T_rent.
    r = P.rent_vs_buy("vgg16", 300_000, CB, VENDOR_A, years=3, utilization=0.3,
                      opts=P.Options(precision="amp_bf16", **JOB))
    R = r.rent["nodes"] * CB_PRICES[r.rent["chassis"]]
    assert r.rent_usd_per_hour == pytest.approx(R)
    E, ratio = r.energy_usd_per_year_full_use, r.work_ratio
    # C = the whole cost of owning but electricity over 3 years (hand_tco.py): capex 299,860, 8 GPUs, 10.2 kW ->
    # 299,860 + 1,600 + 43,155.51 + 71,585.64 + 53,974.80 + 19,200 - 89,958 = 399,417.95
    C = whole_cost_without_power(r.capex_usd, r.buy["power_kw"], r.buy["total_gpus"], 3)
    assert C == pytest.approx(399_417.95, abs=0.05)
    assert r.breakeven_utilization == pytest.approx(C / (3 * HOURS_PER_YEAR * (R * ratio - E / HOURS_PER_YEAR)),
                                                    rel=1e-7)
    rows = {w: v for w, v, _ in r.rows}
    # one job alone (under a day) is billed a whole day: 24 x R
    assert 90 * 1_281_167 / r.rent["throughput_samples_per_s"] / 3600 < 24
    assert rows["job: rented hours billed, one job alone"] == 24.0
    assert rows["job: rent"] == pytest.approx(24 * R)
    # 30% of 3 years of work, jobs back to back: 0.3 x 26,298 h x ratio, rounded up to whole days, x R
    work = 0.3 * 3 * HOURS_PER_YEAR * ratio
    assert rows["at your utilisation: rented total"] == pytest.approx(R * 24 * math.ceil(work / 24 - 1e-9))
    assert r.rent_pricing == "capacity-block" and r.rent_min_hours == 24.0
    assert "never less than 24 h per rental" in r.held_equal and "30% of 3 years" in r.held_equal


def test_rent_vs_buy_savings_plan_is_billed_for_the_whole_horizon():
    # a 1-year plan billed every hour: 3 years = R x 3 x 8766 at any use (p5en: 40 x 26,298 = $1,051,920 a node)
    r = P.rent_vs_buy("vgg16", 300_000, SP, VENDOR_A, years=3, utilization=0.3,
                      opts=P.Options(precision="amp_bf16", **JOB))
    R = r.rent["nodes"] * SP_PRICES[r.rent["chassis"]]
    rows = {w: v for w, v, _ in r.rows}
    assert rows["at your utilisation: rented total"] == pytest.approx(R * 3 * 8766)
    assert r.verdict.startswith("buy") and "billed whether used or not" in r.verdict


def test_rent_vs_buy_spot_states_the_interruption_terms():
    r = P.rent_vs_buy("vgg16", 300_000, SPOT, VENDOR_A, years=3, opts=P.Options(precision="amp_bf16", **JOB))
    assert r.rent_pricing == "spot" and "two-minute" in r.rent_interruption and "interruptions:" in r.held_equal


def test_compare_and_rent_vs_buy_warn_on_price_age():
    # vendor A's H200 node is priced 2024-08: on 2026-12-01 that is over a year old
    opts = P.Options(precision="amp_bf16", as_of="2026-12-01", **JOB)
    r = P.rent_vs_buy("vgg16", 300_000, CB, VENDOR_A, years=3, opts=opts)
    assert any("sxm8-h200" in w and "years old" in w for w in r.price_warnings)
    cmp = P.compare([VENDOR_A, CB], "vgg16", 300_000, opts, price_cuts=False)
    assert any(w.startswith("vendor-a-datacenter-2026.toml:") and "years old" in w for w in cmp.price_warnings)
    # and the 2026 capacity-block price of p5e (2026-01-10) is not
    assert not any("p5e.48xlarge" in w for w in cmp.price_warnings)


def test_import_keeps_the_spot_column(tmp_path):
    csv = tmp_path / "vms.csv"
    csv.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
                   "p5.48xlarge,H100,8,192,2048,55.04,23.39,us-east-1\n"
                   "p4d.24xlarge,A100,8,96,1152,21.96,,us-east-1\n")
    text, _ = P.import_vms_csv(csv, date="2026-06-01")
    assert "spot_usd_per_hour = 23.39" in text and "usd_per_hour = 55.04" in text
    spot_text, warnings = P.import_vms_csv(csv, date="2026-06-01", pricing="spot")
    assert "usd_per_hour = 23.39" in spot_text and 'pricing = "spot"' in spot_text and "two-minute" in spot_text
    assert "p4d.24xlarge" not in spot_text and any("no SpotPrice" in w for w in warnings)
    out = tmp_path / "spot.toml"
    out.write_text(spot_text.replace('base = "reference-2026"', 'base = "reference-2026"'))
    cat = load_catalog(out)
    assert cat.chassis_by_id["p5.48xlarge"].rental_pricing == "spot"
