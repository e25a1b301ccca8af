"""Cost, power and rack space of a design, against numbers worked out by hand from the mini catalog
(tests/fixtures/mini.toml: round, made-up prices), one term at a time."""

import tomllib
from pathlib import Path

import pytest

import costopt
from costopt.hardware.catalog import parse_catalog

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def mini_with_rails(max_nics: int = 8) -> costopt.Catalog:
    """The mini catalog with the 8-GPU SXM board taking up to `max_nics` NIC adapters per node."""
    data = tomllib.loads(MINI.read_text())
    for c in data["chassis"]:
        if c["id"] == "sxm8":
            c["max_nics"] = max_nics
    return parse_catalog(data, "mini with NIC rails")


def test_four_nics_per_node_two_tier_fabric_hand_computed():
    # 2 nodes x 8 H200 on the sxm8 board, 4 ib100 adapters per node:
    #   node = 50,000 chassis + 8 x 30,000 GPU + 4 x 1,000 NIC = 294,000
    #   node ports 2 x 4 = 8 > 4 ports per switch: two tiers, 3 x 8 = 24 switch ports at $500 = 12,000;
    #   8 <= 4^2 / 2 = 8, buildable; 24 / 4 = 6 switches, one rack unit each
    #   links two tiers: 2 x 8 = 16 cables at $100 = 1,600 (node-leaf and leaf-spine)
    #   racks: 9.68 kW per node, 20 kW per rack -> 2 nodes per rack, 1 rack: $1,000 + 2 PDUs x $500 = 2,000
    #   capex 2 x 294,000 + 12,000 + 1,600 + 2,000 = 603,600
    #   power 2 x (8 x 700 + 4,000 + 4 x 20) W = 19.36 kW      (the NIC term counts all 4 adapters)
    #   rack units 2 x 8 + 6 = 22
    #   electricity 19.36 kW x 0.8 draw x 1.5 PUE x $0.10/kWh x 8766 h = $20,365.17 per year (mini [site])
    d = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=4,
                        tco_years=3)
    assert d["capex_usd"] == pytest.approx(603_600.0)
    assert d["power_kw"] == pytest.approx(19.36)
    assert d["rack_units"] == pytest.approx(22.0)
    assert d["energy_usd_per_year"] == pytest.approx(19.36 * 0.8 * 1.5 * 0.10 * 8766, rel=1e-9)
    assert d["energy_usd_per_year"] == pytest.approx(20_365.17, abs=0.01)
    # --tco-years 3 is the whole cost of owning (cost.tco_terms) with the default [site] rates (mini sets none):
    #   storage 16 GPUs x 1 TB x $200 = 3,200; financing of 606,800 at 7% over 3 years:
    #   3 x 606,800 x 0.07 / (1 - 1.07^-3) - 606,800 = 86,866.45; colocation 3 x 12 x $194.95 x 19.36 kW = 135,872.35;
    #   electricity 3 x 20,365.17 = 61,095.51; support 3 x 6% x 603,600 = 108,648; staff 3 x 16 x $800 = 38,400;
    #   resale 30% of 603,600 after 3 years = -181,080; total 856,602.31 (was capex + electricity = 664,695.51)
    assert d["cost_usd"] == pytest.approx(603_600 + 3_200 + 86_866.45 + 135_872.35 + 61_095.51 + 108_648 + 38_400
                                          - 181_080, abs=0.05)


def test_switches_round_up_and_count_in_rack_units():
    # 3 nodes x 2 ib100 adapters: 6 node ports > 4, two tiers: 18 switch ports, 18 / 4 = 4.5 -> 5 switches
    #   capex 3 x (50,000 + 240,000 + 2 x 1,000) + 18 x 500 + 12 cables x 100 + 2 racks x 2,000 = 890,200
    #   (9.64 kW per node: 2 nodes per 20 kW rack, so 3 nodes take 2 racks)
    #   power 3 x (5,600 + 4,000 + 2 x 20) W = 28.92 kW; rack units 3 x 8 + 5 = 29
    d = costopt.predict("resnet50", "h200-sxm", 8, 3, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=2)
    assert d["capex_usd"] == pytest.approx(890_200.0)
    assert d["power_kw"] == pytest.approx(28.92)
    assert d["rack_units"] == pytest.approx(29.0)
    # one tier: 2 nodes x 1 adapter = 2 ports on one 4-port switch: 2 x 8 + 1 = 17 rack units
    one = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini_with_rails())
    assert one["rack_units"] == pytest.approx(17.0)
    assert one["power_kw"] == pytest.approx(2 * (5_600 + 4_000 + 20) / 1000)
    assert one["capex_usd"] == pytest.approx(2 * 291_000 + 2 * 500 + 2 * 100 + 2_000)  # 2 cables, 1 rack


def test_fabric_beyond_two_tiers_is_not_buildable():
    # 3 nodes x 3 adapters = 9 node ports > 4^2 / 2 = 8: no two-tier fabric of 4-port switches holds it
    d = costopt.predict("resnet50", "h200-sxm", 8, 3, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=3)
    assert d["feasible"] is False
    ok = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=4)
    assert ok["feasible"] is True  # 8 ports: exactly the two-tier limit


def test_rented_nodes_cost_price_per_hour_times_hours():
    # catalogs/aws-on-demand-2025.toml: p2.8xlarge (8 x K80) at $7.20 per hour on demand (its price_source).
    # Two rented nodes: $14.40 per hour; for a 10-hour job $144; nothing bought: capex 0, rack units 0.
    import numpy as np

    from costopt.hardware.catalog import load_catalog
    from costopt.hardware.cost import CostBasis, evaluate_costs, price_on_basis
    from costopt.search.design_space import single_design

    cat = load_catalog(Path(__file__).parents[1] / "catalogs" / "aws-on-demand-2025.toml")
    node = cat.chassis_by_id["p2.8xlarge"]
    space = single_design(cat, "k80", 8, 2, node.nics[0], "ring", chassis="p2.8xlarge")
    costs = evaluate_costs(space, cat.site)
    assert costs.cost_usd[0] == pytest.approx(14.4)  # no horizon: USD per hour
    assert costs.capex_usd[0] == 0.0 and costs.rack_units[0] == 0.0
    job = price_on_basis(costs, np.array([400.0]), CostBasis(hours=10.0))
    assert job.cost_usd[0] == pytest.approx(144.0)
    # per training job: 1.44e6 samples at 400 samples/s = 1 h -> $14.40
    per_job = price_on_basis(costs, np.array([400.0]), CostBasis(samples=1.44e6))
    assert per_job.cost_usd[0] == pytest.approx(14.4)
