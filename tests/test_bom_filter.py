"""Bill of materials (costopt/hardware/bom.py), rack / cable / support costs (cost.py) and the part filter
(costopt/hardware/part_filter.py): hand-computed figures on the mini fixture, properties on the reference catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

import costopt
from costopt.hardware.bom import oldest_price, parse_price_date
from costopt.hardware.catalog import load_catalog
from costopt.core.errors import InputError

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
TODAY = date(2026, 12, 1)


def _bom_total(d):
    return round(sum(line["subtotal_usd"] for line in d["bom"]), 2)


def _qty(d, part_id, item_start=""):
    return sum(line["quantity"] for line in d["bom"] if line["part_id"] == part_id and line["item"].startswith(item_start))


def test_bom_lines_hand_computed_on_mini():
    # 4 x 1-GPU halfcard nodes over ib100 (4-port switch, one tier): see test_solver.test_switch_tiers_cost
    d = costopt.predict("resnet50", "halfcard", 1, 4, "ib100", "ring", catalog=MINI)
    by_item = {(line["part_id"], line["item"].split(":")[0].split(" ")[0]): line for line in d["bom"]}
    assert by_item[("halfcard", "GPU")]["subtotal_usd"] == 4 * 5000
    assert by_item[("pcie4x1", "chassis")]["subtotal_usd"] == 4 * 5000
    # one whole 4-port switch (4 x $500 = $2,000, the same as 4 ports before), 4 cables
    assert _qty(d, "ib100", "NIC") == 4 and _qty(d, "ib100-switch", "switch") == 1 and _qty(d, "ib100", "cable") == 4
    assert next(ln for ln in d["bom"] if ln["part_id"] == "ib100-switch")["unit_price_usd"] == 2_000
    assert _qty(d, "rack") == 1 and _qty(d, "pdu") == 2
    assert _bom_total(d) == 48_400.00 == round(d["capex_usd"], 2)
    assert {"item", "part_id", "unit_price_usd", "quantity", "subtotal_usd", "source"} <= set(d["bom"][0])


def test_racks_are_counted_by_power_when_power_binds():
    # mini h200 node: 8 x 700 W + 4,000 W + 1 x 10 W NIC = 9.61 kW; a 20 kW rack holds 2 such nodes
    # (space would allow 42 // 8 = 5), so 5 nodes need 3 racks and 6 PDUs (48.05 kW + the switch's
    # 48 x 15 W = 48.77 kW needs 3 racks too).
    d = costopt.predict("resnet50", "h200-sxm", 8, 5, "eth10", "ring", catalog=MINI)
    assert _qty(d, "rack") == 3 and _qty(d, "pdu") == 6
    # 5 x (50,000 + 8 x 30,000 + 100) + one whole 48-port switch 48 x 200 + 5 cables x 20 + 3 x (1,000 + 2 x 500)
    assert d["capex_usd"] == pytest.approx(5 * 290_100 + 9_600 + 100 + 6_000)
    assert _bom_total(d) == round(d["capex_usd"], 2)


def test_support_years_are_part_of_capex():
    # mini: support 10% of hardware per year; 2 years on the 48,400 design = 2 x 4,840
    d = costopt.predict("resnet50", "halfcard", 1, 4, "ib100", "ring", catalog=MINI, support_years=2)
    assert d["capex_usd"] == pytest.approx(48_400 + 2 * 4_840)
    line = next(line for line in d["bom"] if line["part_id"] == "support")
    assert line["unit_price_usd"] == 4_840 and line["quantity"] == 2
    assert _bom_total(d) == round(d["capex_usd"], 2)


@pytest.mark.parametrize("design", [
    ("h200-sxm", 8, 1, None, 1),
    ("h200-sxm", 8, 40, "ib-ndr", 8),    # 320 node ports > 64: two tiers
    ("l40s", 4, 6, "100gbe-roce", 1),
    ("a100-sxm-80gb", 8, 3, "ib-hdr", 1),
])
def test_bom_sums_to_capex_to_the_cent_on_the_reference_catalog(design):
    gpu, g, m, nic, k = design
    d = costopt.predict("resnet50", gpu, g, m, nic, "ring", nics_per_node=k)
    assert _bom_total(d) == round(d["capex_usd"], 2)
    assert all(line["source"].strip() for line in d["bom"])


def test_price_dates():
    assert parse_price_date("2025") == date(2025, 1, 1)
    assert parse_price_date("2025-03") == date(2025, 3, 1)
    assert parse_price_date("2025-03-04") == date(2025, 3, 4)
    assert parse_price_date("n/a") is None
    lines = [{"part_id": "a", "price_date": "2026-11-20"}, {"part_id": "b", "price_date": "2026-11-01"}]
    fresh = oldest_price(lines, TODAY)
    assert fresh["oldest_price_date"] == "2026-11-01" and fresh["price_age_days"] == 30 and fresh["warning"] == ""
    stale = oldest_price(lines + [{"part_id": "c", "price_date": "2024-08"}], TODAY)
    assert stale["oldest_price_item"] == "c" and stale["price_age_days"] == 852 and "2.3 years" in stale["warning"]


# ---- part filter ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def default_solve():
    return costopt.solve(200_000, "inception_v3", today=TODAY)


def test_default_solve_offers_current_datacentre_and_workstation_parts(default_solve):
    cat = load_catalog()
    for d in [default_solve.best] + default_solve.alternatives + default_solve.best_per_gpu:
        g = cat.gpus[d["gpu"]]
        assert g.segment in ("datacenter", "workstation") and g.lifecycle == "current", d["gpu"]
        assert d["segment"] == g.segment
        assert _bom_total(d) == round(d["capex_usd"], 2)


def test_excluded_summary_names_the_best_consumer_design(default_solve):
    ex = default_solve.excluded
    assert ex["counts"]["consumer"] > 0 and ex["counts"]["end_of_life"] > 0
    best = ex["best_by_reason"]["consumer"]
    assert load_catalog().gpus[best["gpu"]].segment == "consumer"
    assert best["cost_usd"] <= 200_000
    # the sentence's ratio is the excluded design's throughput over the chosen one's (objective throughput)
    top = ex["best"]
    ratio = top["throughput_samples_per_s"] / default_solve.best["throughput_samples_per_s"]
    assert f"{ratio:.2f}x the throughput" in ex["sentence"]
    assert "licence" in ex["sentence"] or top["excluded_reason"] != "consumer"


def test_include_opens_the_classes_and_exclude_gpu_removes_one(default_solve):
    opened = costopt.solve(200_000, "inception_v3", include="consumer,eol,legacy", today=TODAY)
    assert opened.excluded["counts"] == {}
    # with every class open the winner is at least as fast as the filtered one and as the best excluded one
    assert opened.best["throughput_samples_per_s"] >= default_solve.best["throughput_samples_per_s"] - 1e-9
    assert opened.best["throughput_samples_per_s"] == pytest.approx(
        default_solve.excluded["best"]["throughput_samples_per_s"])
    without = costopt.solve(200_000, "inception_v3", exclude_gpus=[default_solve.best["gpu"]], today=TODAY)
    assert without.best["gpu"] != default_solve.best["gpu"]
    assert without.excluded["counts"]["excluded_gpu"] > 0


def test_a_named_gpu_is_offered_whatever_its_class():
    res = costopt.solve(200_000, "inception_v3", gpus=["rtx-4090"], today=TODAY)
    assert res.best["gpu"] == "rtx-4090" and res.best["segment"] == "consumer"


@pytest.mark.parametrize("kwargs, match", [
    ({"include": "consumer,gaming"}, "--include: unknown part class 'gaming'"),
    ({"exclude_gpus": ["h900"]}, "--exclude-gpu: unknown gpu 'h900'"),
    ({"exclude_gpus": ["l40s"], "gpus": ["l40s"]}, "both asked for"),
])
def test_filter_options_are_checked(kwargs, match):
    with pytest.raises(InputError, match=match):
        costopt.solve(200_000, "inception_v3", **kwargs)


def test_cli_solve_json_and_bom_command():
    cmd = [sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model", "inception_v3",
           "--format", "json"]
    data = json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout)
    assert set(data["excluded"]) >= {"counts", "best"} and data["best"]["segment"] in ("datacenter", "workstation")
    assert round(sum(x["subtotal_usd"] for x in data["best"]["bom"]), 2) == round(data["best"]["capex_usd"], 2)
    bom = subprocess.run([sys.executable, "-m", "costopt.cli", "bom", "--gpu", "l40s", "--gpus-per-node", "4",
                          "--nodes", "2", "--nic", "25gbe", "--format", "json"], capture_output=True, text=True,
                         timeout=120)
    assert bom.returncode == 0, bom.stderr
    b = json.loads(bom.stdout)
    assert round(sum(x["subtotal_usd"] for x in b["bom"]), 2) == round(b["capex_usd"], 2)
    bad = subprocess.run([sys.executable, "-m", "costopt.cli", "solve", "--budget", "200000", "--model",
                          "inception_v3", "--include", "gaming"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown part class" in bad.stderr and "Traceback" not in bad.stderr


def test_export_compare_and_report_take_the_part_filter_of_solve(tmp_path):
    """export / compare / report / rent-vs-buy offer what solve offers: the default search (current data-centre
    and workstation parts), --include opens classes, --exclude-gpu leaves a GPU out (an id no catalog lists is
    refused). The reference catalog marks rtx-4090 consumer and end-of-life, h100-sxm legacy."""
    import csv
    import io
    import tomllib
    from costopt.purchase import purchasing as P
    ref = Path(costopt.__file__).parent / "catalogs" / "reference-2026.toml"
    cls = {g["id"]: (g["segment"], g["lifecycle"]) for g in tomllib.loads(ref.read_text())["gpu"]}
    assert cls["rtx-4090"][0] == "consumer" and cls["h100-sxm"][1] == "legacy"

    def export(*extra):
        out = subprocess.run([sys.executable, "-m", "costopt.cli", "export", "--model", "resnet50", "--budget", "60000",
                              *extra], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return list(csv.DictReader(io.StringIO(out.stdout)))

    default, opened = export(), export("--include", "consumer,legacy,eol")
    gpus_default, gpus_opened = {r["gpu"] for r in default}, {r["gpu"] for r in opened}
    assert all(cls[g][0] != "consumer" and cls[g][1] == "current" for g in gpus_default)
    assert "rtx-4090" in gpus_opened and len(opened) > len(default)
    top = default[0]["gpu"]
    assert top not in {r["gpu"] for r in export("--exclude-gpu", top)}
    rc = subprocess.run([sys.executable, "-m", "costopt.cli", "export", "--model", "resnet50", "--budget", "60000",
                         "--exclude-gpu", "no-such-gpu"], capture_output=True, text=True, timeout=120)
    assert rc.returncode == 2 and "--exclude-gpu: unknown gpu 'no-such-gpu'" in rc.stderr

    # compare: two copies of one catalog; leaving the winner's GPU out moves both picks off it
    base = P.compare([ref, ref], "resnet50", 60000, P.Options(), price_cuts=False)
    won = base.answers[0].best["gpu"]
    cut = P.compare([ref, ref], "resnet50", 60000, P.Options(exclude_gpus=[won]), price_cuts=False)
    assert all(a.best["gpu"] != won for a in cut.answers)
    with pytest.raises(InputError, match="unknown gpu 'no-such-gpu'"):
        P.compare([ref, ref], "resnet50", 60000, P.Options(exclude_gpus=["no-such-gpu"]), price_cuts=False)
    with pytest.raises(InputError, match="unknown part class"):
        P.compare([ref, ref], "resnet50", 60000, P.Options(include=["cheap"]), price_cuts=False)
