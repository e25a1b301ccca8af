"""Checks on the workload zoo JSON files in costopt/data/zoo/ (written by tools/build_zoo.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from costopt.perf.placement import greedy_shard_loads

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "costopt" / "data" / "zoo"
SHARED = Path(__file__).resolve().parents[2] / "shared"

# n_params, n_param_tensors and the number of rows per model, as recorded in
# shared/data/h200/train_step.jsonl (H200, PyTorch 2.11, 2026-11-30).
TRAIN_STEP = {
    "alexnet": (61_100_840, 16, 6),
    "vgg16": (138_357_544, 32, 6),
    "inception_v3": (27_161_264, 292, 6),
    "resnet50": (25_557_032, 161, 8),
    "resnet101": (44_549_160, 314, 6),
    "resnet152": (60_192_808, 467, 6),
    "bert_base": (109_514_298, 202, 6),
    "bert_large": (335_174_458, 394, 2),
    "gpt2": (124_439_808, 148, 6),
    "llama_1b": (1_235_814_400, 146, 2),
    "googlenet": (6_624_904, 173, 4),
    "densenet121": (7_978_856, 364, 3),
}
MODELS = sorted(TRAIN_STEP)
TF_MODELS = ["alexnet", "inception_v3", "resnet50", "vgg16"]

# thesis_method.md §5 table: (trainable tensors, trainable params, BN-stat tensors, BN-stat elems)
THESIS_TOTALS = {
    "alexnet": (16, 61_842_345, 0, 0),
    "vgg16": (32, 138_361_641, 0, 0),
    "inception_v3": (190, 23_819_401, 188, 34_432),
    "resnet50": (161, 25_559_081, 106, 53_120),
}

# thesis_method.md §5.1, greedy PS placement: trainable MB (1e6 bytes) per shard; P=8 gives the max.
THESIS_GREEDY = {
    "alexnet": {2: [157.3, 90.1], 3: [21.8, 153.7, 71.9], 4: [20.1, 69.8, 152.2, 5.3], 8: 151.0},
    "vgg16": {2: [115.7, 437.7], 3: [38.3, 88.7, 426.5], 4: [20.1, 79.2, 423.0, 31.2], 8: 413.4},
    "inception_v3": {2: [51.1, 44.1], 3: [36.2, 30.4, 28.6], 4: [28.6, 24.0, 22.0, 20.7], 8: 17.5},
    "resnet50": {2: [54.0, 48.2], 3: [35.3, 36.8, 30.2], 4: [28.4, 23.2, 23.2, 27.4], 8: 16.6},
}

# thesis_method.md §5.1, round-robin shadow variables: trainable variable k on PS (k+1) mod P.
THESIS_ROUND_ROBIN = {
    "alexnet": {2: [0.0, 247.3], 4: [0.0, 73.4, 0.0, 173.9]},
    "vgg16": {2: [0.1, 553.4], 4: [0.0, 99.3, 0.0, 454.1]},
    "inception_v3": {2: [0.1, 95.2], 4: [0.0, 51.7, 0.0, 43.5]},
    "resnet50": {2: [60.0, 42.2], 4: [30.6, 24.5, 29.4, 17.7]},
}

# The thesis prints one decimal, so a faithful reproduction is within half a unit of it.
HALF_DIGIT_MB = 0.05 + 1e-9


def load(model: str) -> dict:
    return json.loads((ZOO / f"{model}.json").read_text(encoding="utf-8"))


def tf_creation(model: str) -> tuple[np.ndarray, np.ndarray]:
    """fp32 bytes and trainable flags of the TF variables in creation order."""
    backward = load(model)["tensor_sets"]["tensorflow"]["tensors"]
    creation = list(reversed(backward))
    sizes = np.array([4 * t["numel"] for t in creation], dtype=np.float64)
    train = np.array([t["trainable"] for t in creation], dtype=bool)
    return sizes, train


def test_zoo_has_exactly_the_expected_models():
    assert sorted(p.stem for p in ZOO.glob("*.json")) == MODELS


@pytest.mark.parametrize("model", MODELS)
def test_top_level_fields(model):
    doc = load(model)
    assert doc["model"] == model
    for key in ("description", "sample_unit", "optimizer"):
        assert isinstance(doc[key], str) and doc[key]
    assert doc["optimizer"] in ("sgd", "adamw")
    assert isinstance(doc["default_batch"], int) and doc["default_batch"] > 0
    expected_sets = {"pytorch", "tensorflow"} if model in TF_MODELS else {"pytorch"}
    assert set(doc["tensor_sets"]) == expected_sets


@pytest.mark.parametrize("model", MODELS)
def test_pytorch_tensors_match_train_step_params(model):
    n_params, n_tensors, _ = TRAIN_STEP[model]
    pt = load(model)["tensor_sets"]["pytorch"]
    tensors = pt["tensors"]
    assert sum(t["numel"] for t in tensors) == n_params
    assert len(tensors) == n_tensors
    assert all(t["trainable"] is True for t in tensors)
    assert len({t["name"] for t in tensors}) == len(tensors)
    assert pt["order"] == "backward"
    assert "H200 gradient-ready records (docs/sources.md §12a)" in pt["source"]


@pytest.mark.parametrize("model", MODELS)
def test_default_batch_is_the_grad_ready_batch(model):
    doc = load(model)
    src = doc["tensor_sets"]["pytorch"]["source"]
    assert src.endswith(f"batch {doc['default_batch']}")
    precision = "fp32" if "fp32 batch" in src else "amp_bf16"
    # the grad_ready record's (precision, batch) is one of the measured profiles
    assert any(
        p["precision"] == precision and p["batch"] == doc["default_batch"] for p in doc["profiles"]
    )


@pytest.mark.parametrize("model", MODELS)
def test_ready_fractions_in_unit_interval_and_monotone(model):
    for name, tset in load(model)["tensor_sets"].items():
        r = np.array([t["ready_fraction"] for t in tset["tensors"]])
        assert r.size > 0, name
        assert np.all((r >= 0.0) & (r <= 1.0)), name
        assert np.all(np.diff(r) >= 0.0), name
        # the last gradient arrives at the end of backward
        assert r[-1] > 0.9, name


@pytest.mark.parametrize("model", MODELS)
def test_profiles_present_and_sorted(model):
    _, _, n_rows = TRAIN_STEP[model]
    profs = load(model)["profiles"]
    assert len(profs) == n_rows
    keys = [(p["precision"], p["batch"]) for p in profs]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    for p in profs:
        assert p["gpu"] == "h200-sxm"
        assert p["precision"] in ("fp32", "amp_bf16")
        for f in ("forward_ms", "backward_ms", "step_ms"):
            assert p[f] > 0
        assert isinstance(p["peak_mem_bytes"], int) and p["peak_mem_bytes"] > 0
        assert p["source"] == "H200 train-step records (docs/sources.md §12a)"
        assert p["date"] == "2026-11-30"


@pytest.mark.parametrize("model", TF_MODELS)
def test_tensorflow_totals_match_thesis_table(model):
    """thesis_method.md §5 table: trainable count/params and BN moving-statistics load."""
    n_train, params, n_stats, stat_elems = THESIS_TOTALS[model]
    tensors = load(model)["tensor_sets"]["tensorflow"]["tensors"]
    train = [t for t in tensors if t["trainable"]]
    stats = [t for t in tensors if not t["trainable"]]
    assert len(train) == n_train
    assert sum(t["numel"] for t in train) == params
    assert len(stats) == n_stats
    assert sum(t["numel"] for t in stats) == stat_elems
    assert all(t["name"].endswith(("moving_mean", "moving_variance")) for t in stats)


@pytest.mark.parametrize("model", TF_MODELS)
def test_tensorflow_backward_order_ends_with_first_conv(model):
    tensors = load(model)["tensor_sets"]["tensorflow"]["tensors"]
    assert tensors[0]["name"].endswith("biases")  # final affine bias is created last
    assert tensors[-1]["name"] == "conv0/kernel"  # first variable created


@pytest.mark.parametrize("model", TF_MODELS)
def test_greedy_ps_shards_match_thesis_5_1(model):
    """thesis_method.md §5.1 greedy PS shard sizes (creation order, BN stats count as load)."""
    sizes, train = tf_creation(model)
    for p, expected in THESIS_GREEDY[model].items():
        shard, count = greedy_shard_loads(sizes, p, train)
        assert count.sum() == train.sum()
        mb = shard / 1e6
        if isinstance(expected, list):
            assert np.allclose(mb, expected, rtol=0, atol=HALF_DIGIT_MB), (p, mb.round(2))
        else:
            assert abs(mb.max() - expected) <= HALF_DIGIT_MB, (p, mb.round(2))


@pytest.mark.parametrize("model", TF_MODELS)
def test_round_robin_shards_match_thesis_5_1(model):
    """thesis_method.md §5.1 round-robin shadow variables (global_step takes slot 0)."""
    sizes, train = tf_creation(model)
    trainable = sizes[train]
    for p, expected in THESIS_ROUND_ROBIN[model].items():
        shard = np.zeros(p)
        for k, size in enumerate(trainable):
            shard[(k + 1) % p] += size
        assert np.allclose(shard / 1e6, expected, rtol=0, atol=HALF_DIGIT_MB), p


def test_vgg16_p2_and_p4_spot_values():
    """The VGG16 figures named in thesis_method.md §5.1: fc6 pins the busiest shard."""
    sizes, train = tf_creation("vgg16")
    s2, _ = greedy_shard_loads(sizes, 2, train)
    s4, _ = greedy_shard_loads(sizes, 4, train)
    assert np.allclose(s2 / 1e6, [115.7, 437.7], atol=0.1)
    assert np.allclose(s4 / 1e6, [20.1, 79.2, 423.0, 31.2], atol=0.1)
    assert s4.max() >= 4 * 25088 * 4096


@pytest.mark.skipif(not (SHARED / "data" / "h200").is_dir(), reason="../shared not available")
def test_builder_reproduces_committed_json(tmp_path):
    out = tmp_path / "zoo"
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "build_zoo.py"), "--shared", str(SHARED), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    built = sorted(p.name for p in out.glob("*.json"))
    assert built == sorted(p.name for p in ZOO.glob("*.json"))
    for name in built:
        assert (out / name).read_bytes() == (ZOO / name).read_bytes(), name
