"""The distributed rig (benchmarks/rig): its sizes, placement and predictions, and one real run.

The model-side tests need neither root nor torch. The real run (namespaces, veth, tc, gloo) runs
only when COSTOPT_RIG=1 (.ci/run sets it) and is gated on the rig's measured error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from costopt.perf.placement import greedy_shard_loads, ps_busiest_bytes_table
from costopt.perf.workload import load_workload

RIG = Path(__file__).resolve().parents[1] / "benchmarks" / "rig" / "rig.py"


@pytest.fixture(scope="module")
def rig():
    spec = importlib.util.spec_from_file_location("costopt_rig", RIG)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["costopt_rig"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_scaled_tensors_keep_structure(rig):
    full = load_workload("vgg16").tensors("pytorch")
    small = rig.scaled_tensors("vgg16", 0.1)
    assert small.names == full.names
    assert small.total_gradient_bytes == pytest.approx(0.1 * full.total_gradient_bytes, rel=1e-3)
    r50 = load_workload("resnet50").tensors("pytorch")
    assert rig.scaled_tensors("resnet50", 1.0).total_gradient_bytes == r50.total_gradient_bytes


@pytest.mark.parametrize("model", ["alexnet", "vgg16", "resnet50", "inception_v3"])
@pytest.mark.parametrize("world", [2, 3, 4])
def test_owner_assignment_is_costopt_placement(rig, model, world):
    plan = rig.plan_model(model, 0.1, world, 25.0)
    creation_bytes = np.array(plan.creation_numel, dtype=np.float64) * 4
    loads = np.bincount(plan.owner, weights=creation_bytes, minlength=world)
    expect, _ = greedy_shard_loads(creation_bytes, world)
    assert np.allclose(loads, expect)
    # busiest NIC per phase from the actual owners equals costopt's table
    total = creation_bytes.sum()
    busiest = max(max((world - 1) * s, total - s) for s in loads)
    assert busiest == pytest.approx(ps_busiest_bytes_table(creation_bytes, world)["busiest_bytes"][world])


def test_buckets_scale_with_sizes(rig):
    full = load_workload("resnet50").tensors("pytorch").buckets(25e6)[0]
    plan = rig.plan_model("resnet50", 0.1, 2, 25.0)
    assert len(plan.bucket_bytes) == len(full)
    assert plan.bucket_bytes.sum() == pytest.approx(plan.total_bytes)


def test_ring_prediction_formula(rig):
    b = np.array([100e6, 50e6])
    t = rig.predict_ring_s(b, 4, 1e8, 0.001)
    assert t == pytest.approx(2 * 3 / 4 * 150e6 / 1e8 + 2 * 0.001)


def test_ps_prediction_uses_busiest_nic(rig):
    ts = rig.scaled_tensors("vgg16", 0.1)
    p = rig.predict_ps_s(ts, 2, 1e8, 0.0, 1e30)
    cb, tr = ts.creation_order_bytes()
    x = ps_busiest_bytes_table(cb, 2, tr)["busiest_bytes"][2]
    assert p["busiest_bytes"] == x and p["seconds"] == pytest.approx(2 * x / 1e8)


def test_wire_efficiency(rig):
    assert rig.wire_efficiency(1500) == pytest.approx(1448 / 1514)


def test_stale_names_only_dead_owners(rig):
    alive = {111}
    ns, links = rig.stale_names(
        ["costopt-rig-111-w0", "costopt-rig-222-w1", "other-ns", "costopt-rig-x-w0"],
        ["cr" + rig._b36(111) + "br", "cr" + rig._b36(222) + "br", "eth0", "crazybridgeXX"],
        alive=lambda pid: pid in alive,
    )
    assert ns == ["costopt-rig-222-w1"]
    assert links == ["cr" + rig._b36(222) + "br"]


@pytest.mark.skipif(os.environ.get("COSTOPT_RIG") != "1", reason="real rig run: set COSTOPT_RIG=1 (.ci/run sets it)")
def test_rig_small_run(tmp_path):
    """One small real run (vgg16 and resnet50 gradients x0.05, W = 2, 1 Gbit/s), gated on the accuracy the
    README claims for these rows: ring within ±8.4% over all 24 published rig rows and vgg16 PS within
    ±7.4%; the gate is ±15% to leave room for a shared 2-core runner. resnet50 PS (hundreds of small
    messages, per-message cost not modelled at this load; README "What the rig taught") is printed, not
    gated. Where namespaces/tc/torch are unavailable the rig says why and exits 0; the test skips then,
    and under CI=true (tests/conftest.py) that skip is a failure."""
    proc = subprocess.Popen([sys.executable, str(RIG), "--models", "vgg16,resnet50", "--workers", "2", "--gbit", "1",
                             "--scale", "0.05", "--repeat", "3", "--timeout", "400", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=500)
    print(out[-4000:], err[-2000:])
    assert proc.returncode == 0
    if "SKIPPED" in out:
        pytest.skip(out.strip().splitlines()[-1])
    assert "median |error|" in out
    leftover = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"costopt-rig-{proc.pid}-" not in leftover  # its namespaces are gone
    rows = {(r["model"], r["strategy"]): r for r in json.loads((tmp_path / "results.json").read_text())["rows"]}
    assert set(rows) == {("vgg16", "ring"), ("vgg16", "ps"), ("resnet50", "ring"), ("resnet50", "ps")}  # none cut short
    for key in (("vgg16", "ring"), ("resnet50", "ring"), ("vgg16", "ps")):
        assert abs(rows[key]["error_pct"]) <= 15.0, (key, rows[key]["predicted_ms"], rows[key]["measured_ms"])
