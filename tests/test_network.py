"""A network you can order: switches bought whole, a fabric per design (direct-attached, one switch,
leaf-spine at an oversubscription), racks with power ratings (air, liquid) that refuse a node over them.
Numbers by hand from the mini catalog (tests/fixtures/mini.toml) and the reference catalog's quoted prices."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import costopt
from costopt.hardware.catalog import parse_catalog

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def mini(facility: dict | None = None, site: dict | None = None, max_nics: int = 8) -> costopt.Catalog:
    data = tomllib.loads(MINI.read_text())
    for c in data["chassis"]:
        if c["id"] == "sxm8":
            c["max_nics"] = max_nics
    data["facility"].update(facility or {})
    data["site"].update(site or {})
    return parse_catalog(data, "mini network test")


def _line(d, part_id):
    return next(ln for ln in d["bom"] if ln["part_id"] == part_id)


def test_issue_example_switch_is_a_whole_box():
    # three 8 x H100 nodes on 400 GbE RoCE: one 64-port switch at 64 x $560 = $35,840 (FS.com's $36,000 box,
    # docs/sources.md §4c), not 3 ports x $560 = $1,680
    d = costopt.predict("resnet50", "h100-sxm", 8, 3, "400gbe-roce", "ring")
    sw = _line(d, "400gbe-roce-switch")
    assert sw["quantity"] == 1 and sw["unit_price_usd"] == pytest.approx(64 * 560) == 35_840
    assert round(sum(ln["subtotal_usd"] for ln in d["bom"]), 2) == round(d["capex_usd"], 2)
    # and its 64 x 15 W = 0.96 kW is in the design's power: 3 x (node + adapter) + 0.96
    from costopt.hardware.catalog import load_catalog

    one = costopt.predict("resnet50", "h100-sxm", 8, 1, None, "ring")
    nic_kw = load_catalog(None).nics["400gbe-roce"].power_w / 1000
    assert d["power_kw"] == pytest.approx(3 * (one["power_kw"] + nic_kw) + 0.96)


def test_two_nodes_direct_attached():
    # 2 nodes x 1 ib100: one cable, no switch
    d = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini())
    assert not [ln for ln in d["bom"] if ln["part_id"] == "ib100-switch"]
    cables = [ln for ln in d["bom"] if ln["item"].startswith("cable")]
    assert len(cables) == 1 and cables[0]["quantity"] == 1 and "direct-attached" in cables[0]["item"]
    # switched instead when direct attach is off: one 4-port switch (2,000) and 2 cables
    s = costopt.predict("resnet50", "h200-sxm", 8, 2, "ib100", "ring", catalog=mini({"direct_attach_two_nodes": False}))
    assert s["capex_usd"] - d["capex_usd"] == pytest.approx(2_000 + 100)


def test_oversubscription_sets_leaves_and_spines():
    # 3 nodes x 2 ib100 = 6 ports on 4-port switches at 3:1: a leaf gives floor(4 x 3 / 4) = 3 ports down, 1 up;
    #   leaves 6 / 3 = 2, spines 2 x 1 / 4 -> 1: 3 switches (vs 5 at 1:1); links 6 + 2 x 1 = 8 (vs 12)
    #   capex 3 x 292,000 + 3 x 2,000 + 8 x 100 + racks 2 x 2,000 = 886,800
    d = costopt.predict("resnet50", "h200-sxm", 8, 3, "ib100", "ring", catalog=mini({"oversubscription": 3.0}),
                        nics_per_node=2)
    assert _line(d, "ib100-switch")["quantity"] == 3
    assert next(ln for ln in d["bom"] if ln["item"].startswith("cable"))["quantity"] == 8
    assert d["capex_usd"] == pytest.approx(3 * 292_000 + 3 * 2_000 + 800 + 4_000)


def test_node_over_the_rack_rating_is_refused_and_said():
    # a 9.6 kW H200 node in 5 kW air racks: refused, and the BOM says why
    d = costopt.predict("resnet50", "h200-sxm", 8, 1, None, "ring", catalog=mini({"rack_power_kw": 5.0}))
    assert d["feasible"] is False
    refused = _line(d, "rack-rating")
    assert refused["subtotal_usd"] == 0 and "over the 5 kW rack rating" in refused["item"]
    # the same GPU taken as liquid-cooled (TDP 700 W above a 600 W threshold) goes in 80 kW liquid racks
    liq = costopt.predict("resnet50", "h200-sxm", 8, 1, None, "ring",
                          catalog=mini({"rack_power_kw": 5.0}, {"liquid_above_tdp_w": 600.0}))
    assert liq["feasible"] is True and "liquid-cooled, 80 kW" in _line(liq, "rack")["item"]


def test_racks_follow_power_when_the_rating_binds():
    # 4 nodes of 9.6 kW in 20 kW racks: 2 per rack by power -> 2 racks; in 40 kW racks 4 per rack -> 1
    four = costopt.predict("resnet50", "h200-sxm", 8, 4, "ib100", "ring", catalog=mini())
    assert _line(four, "rack")["quantity"] == 2
    big = costopt.predict("resnet50", "h200-sxm", 8, 4, "ib100", "ring", catalog=mini({"rack_power_kw": 40.0}))
    assert _line(big, "rack")["quantity"] == 1


def test_headline_bom_lists_switches_as_boxes_and_sums_to_capex():
    res = costopt.solve(2_000_000, "vgg16", top=1)
    b = res.best
    assert round(sum(ln["subtotal_usd"] for ln in b["bom"]), 2) == round(b["capex_usd"], 2)
    if b["nodes"] > 2:  # a switched fabric: its switches are whole boxes
        sw = [ln for ln in b["bom"] if ln["part_id"].endswith("-switch")]
        assert sw and all(float(ln["quantity"]).is_integer() for ln in sw)
