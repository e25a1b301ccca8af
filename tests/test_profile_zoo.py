"""tools/profile_zoo.py: the pure parts (no torch, no GPU)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import profile_zoo as pz  # noqa: E402


def test_batches_parse_sorted_unique():
    assert pz.parse_batches("64, 8,8,512") == [8, 64, 512]
    for bad in ("", "0", "8,x", "5000"):
        with pytest.raises(ValueError):
            pz.parse_batches(bad)


def test_union_counts_overlap_once():
    # [0,2) and [1,3) overlap -> 3; [5,6) apart -> 1; an empty interval adds nothing: 4 in all
    assert pz.union_ms([(1, 3), (0, 2), (5, 6), (7, 7)]) == pytest.approx(4.0)
    assert pz.union_ms([]) == 0.0


def test_busy_time_is_clipped_to_each_phase():
    # forward [0,10), backward [10,30), step [30,32); a kernel [8,12) straddles forward and backward:
    # forward busy = [1,4) + [8,10) = 5; backward = [10,12) + [15,25) = 12; step = [30,31) = 1
    windows = {"forward": (0, 10), "backward": (10, 30), "step": (30, 32)}
    kernels = [(1, 4), (8, 12), (15, 25), (20, 22), (30, 31)]
    assert pz.busy_per_phase(windows, kernels) == {"forward": 5.0, "backward": 12.0, "step": 1.0}


def test_record_and_zoo_file_load_as_a_profile(tmp_path):
    from costopt.perf.workload import load_profile, load_workload

    wall = {"forward": 10.0, "backward": 20.0, "step": 1.0}
    recs = [pz.profile_record("h200-sxm", "fp32", "eager", b, {k: v * b / 32 for k, v in wall.items()},
                              {"forward": 9.0, "backward": 19.0, "step": 0.5}, 10**9, "test", "2026-12-02")
            for b in (32, 64)]
    assert recs[0]["framework"] == "eager" and recs[0]["gpu_busy_backward_ms"] == 19.0
    shipped = json.loads((ROOT / "costopt" / "data" / "zoo" / "resnet50.json").read_text())
    path = tmp_path / "resnet50.json"
    path.write_text(json.dumps(pz.zoo_file("resnet50", recs, shipped)))
    w = load_profile(path, load_workload("resnet50"))
    assert {(p.gpu, p.batch) for p in w.profiles if p.source == "test"} == {("h200-sxm", 32), ("h200-sxm", 64)}


def test_budget_stops_starting_work():
    t = [0.0]
    b = pz.Budget(100.0, clock=lambda: t[0])
    assert b.start_next(20.0)
    t[0] = 85.0
    assert not b.start_next(20.0) and b.start_next(10.0)


def test_cli_refuses_bad_input_with_exit_2():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "profile_zoo.py"), "--gpu-id", "x", "--out", "/tmp/x",
                        "--modes", "jit"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown: jit" in r.stderr
