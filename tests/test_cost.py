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
    # 2 nodes x 8 H200 on the sxm8 board, 4 ib100 adapters per node. Two nodes are cabled port to port
    # (facility.direct_attach_two_nodes, the default): no switch, 4 cables at $100 = 400.
    #   node = 50,000 chassis + 8 x 30,000 GPU + 4 x 1,000 NIC = 294,000
    #   racks: 9.68 kW per node, 20 kW per rack -> 2 nodes per rack, 1 rack: $1,000 + 2 PDUs x $500 = 2,000
    #   capex 2 x 294,000 + 400 + 2,000 = 590,400 (with a 4-port switch fabric it was 603,600)
    #   power 2 x (8 x 700 + 4,000 + 4 x 20) W = 19.36 kW      (the NIC term counts all 4 adapters; no switch)
    #   rack units 2 x 8 = 16
    #   electricity 19.36 kW x 0.8 draw x 1.5 PUE x $0.10/kWh x 8766 h = $20,365.17 per year (mini [site])
    d = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=4,
                        tco_years=3)
    assert d["capex_usd"] == pytest.approx(590_400.0)
    assert d["power_kw"] == pytest.approx(19.36)
    assert d["rack_units"] == pytest.approx(16.0)
    assert d["energy_usd_per_year"] == pytest.approx(19.36 * 0.8 * 1.5 * 0.10 * 8766, rel=1e-9)
    assert d["energy_usd_per_year"] == pytest.approx(20_365.17, abs=0.01)
    # --tco-years 3 is the whole cost of owning (cost.tco_terms) with the default [site] rates (mini sets none):
    #   storage 16 GPUs x 1 TB x $200 = 3,200; financing of 593,600 at 7% over 3 years:
    #   3 x 593,600 x 0.07 / (1 - 1.07^-3) - 593,600 = 84,976.81; colocation 3 x 12 x $194.95 x 19.36 kW = 135,872.35;
    #   electricity 3 x 20,365.17 = 61,095.51; support 3 x 6% x 590,400 = 106,272; staff 3 x 16 x $800 = 38,400;
    #   resale 30% of 590,400 after 3 years = -177,120; total 843,096.67
    assert d["cost_usd"] == pytest.approx(590_400 + 3_200 + 84_976.81 + 135_872.35 + 61_095.51 + 106_272 + 38_400
                                          - 177_120, abs=0.05)


def test_switches_round_up_and_count_in_rack_units():
    # 3 nodes x 2 ib100 adapters: 6 node ports > 4: leaf-spine at 1:1, a leaf gives 2 ports down and 2 up:
    #   leaves 6 / 2 = 3, spines 3 x 2 / 4 = 1.5 -> 2: 5 whole 4-port switches at 4 x $500 = $2,000 = 10,000
    #   links 6 node-leaf + 3 x 2 leaf-spine = 12 cables x 100 = 1,200
    #   power 3 x (5,600 + 4,000 + 2 x 20) W + 5 switches x 4 ports x 15 W = 28.92 + 0.30 = 29.22 kW
    #   racks: 9.64 kW per node -> 2 per 20 kW rack -> 2 racks (29.22 kW needs 2 too) = 4,000
    #   capex 3 x (50,000 + 240,000 + 2 x 1,000) + 10,000 + 1,200 + 4,000 = 891,200; rack units 3 x 8 + 5 = 29
    d = costopt.predict("resnet50", "h200-sxm", 8, 3, "ib100", "ring", catalog=mini_with_rails(), nics_per_node=2)
    assert d["capex_usd"] == pytest.approx(891_200.0)
    assert d["power_kw"] == pytest.approx(29.22)
    assert d["rack_units"] == pytest.approx(29.0)
    # two nodes x 1 adapter: direct-attached, one cable, no switch: 2 x 8 = 16 rack units
    one = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini_with_rails())
    assert one["rack_units"] == pytest.approx(16.0)
    assert one["power_kw"] == pytest.approx(2 * (5_600 + 4_000 + 20) / 1000)
    assert one["capex_usd"] == pytest.approx(2 * 291_000 + 100 + 2_000)  # 1 cable, 1 rack


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
