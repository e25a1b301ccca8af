"""Units and the compute side of the workload zoo (interpolation, floor, scaling, memory)."""

from pathlib import Path

import pytest

from costopt import units
from costopt.catalog import load_catalog
from costopt.workload import load_workload, memory_fits

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def test_unit_conversions():
    assert units.gbps_to_bytes_per_s(400) == 50e9  # 400 Gb/s NDR = 50 GB/s (hardware_facts.md §4a)
    assert units.gbps_to_bytes_per_s(10) == 1.25e9
    assert units.gb_per_s_to_bytes_per_s(450) == 450e9
    assert units.gb_to_bytes(141) == 141e9
    assert units.bytes_to_gb(2**30) == pytest.approx(1.073741824)  # 1 GiB is not 1 GB
    assert units.ms_to_s(12.5) == 0.0125
    assert units.us_to_s(30) == 3e-5
    assert units.pcie_x16_gbps(3) == 128.0  # 16 GB/s x 8 bit
    assert units.HOURS_PER_YEAR == 8766.0


def test_measured_point_is_used_exactly():
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    est = w.compute(cat.gpus["h200-sxm"], "fp32", 128, cat)
    # shared/data/h200/train_step.jsonl: resnet50 fp32 batch 128 forward 20.452 ms, backward 39.578 ms
    assert est.source == "measured"
    assert est.forward_s == pytest.approx(20.452e-3, rel=1e-3)
    assert est.backward_s == pytest.approx(39.578e-3, rel=1e-3)


def test_interpolation_between_batches():
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    lo = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    hi = w.compute(cat.gpus["h200-sxm"], "fp32", 128, cat)
    mid = w.compute(cat.gpus["h200-sxm"], "fp32", 96, cat)
    assert mid.source == "interpolated"
    assert mid.backward_s == pytest.approx((lo.backward_s + hi.backward_s) / 2, rel=1e-9)
    assert mid.peak_mem_bytes == pytest.approx((lo.peak_mem_bytes + hi.peak_mem_bytes) / 2, rel=1e-9)


def test_small_batches_keep_a_floor():
    # H200 README: small batches are launch-bound, a per-sample model must keep a floor per iteration
    cat = load_catalog(MINI)
    w = load_workload("resnet101")
    tiny = w.compute(cat.gpus["h200-sxm"], "amp_bf16", 4, cat)
    smallest = w.compute(cat.gpus["h200-sxm"], "amp_bf16", 32, cat)
    assert tiny.iteration_s == pytest.approx(smallest.iteration_s)
    assert tiny.peak_mem_bytes < smallest.peak_mem_bytes


def test_extrapolation_beyond_largest_batch_uses_last_slope():
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    b128 = w.compute(cat.gpus["h200-sxm"], "fp32", 128, cat)
    b256 = w.compute(cat.gpus["h200-sxm"], "fp32", 256, cat)
    b384 = w.compute(cat.gpus["h200-sxm"], "fp32", 384, cat)
    assert b384.source == "extrapolated"
    assert b384.backward_s - b256.backward_s == pytest.approx(b256.backward_s - b128.backward_s, rel=1e-9)


def test_scaling_by_published_throughput_ratio():
    cat = load_catalog(MINI)
    w = load_workload("vgg16")
    h = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    half = w.compute(cat.gpus["halfcard"], "fp32", 64, cat)  # fixture: 1129.5 vs 2259 samples/s
    assert half.source == "scaled"
    assert half.iteration_s == pytest.approx(2 * h.iteration_s, rel=1e-9)
    assert "2259/1129.5" in half.basis


def test_faster_gpu_never_beats_the_measured_small_batch_floor():
    cat = load_catalog()
    w = load_workload("resnet50")
    b200 = cat.gpus["b200"]
    h200 = cat.gpus["h200-sxm"]
    for batch in (1, 8, 32):
        assert w.compute(b200, "amp_bf16", batch, cat).iteration_s >= w.compute(h200, "amp_bf16", 32, cat).iteration_s * 0.999


def test_amp_fp16_reads_the_bf16_profile_and_fp32_is_slower():
    cat = load_catalog()
    w = load_workload("resnet50")
    g = cat.gpus["h200-sxm"]
    assert w.compute(g, "amp_fp16", 256, cat).iteration_s == w.compute(g, "amp_bf16", 256, cat).iteration_s
    assert w.compute(g, "fp32", 256, cat).iteration_s > w.compute(g, "amp_bf16", 256, cat).iteration_s


def test_memory_fit():
    cat = load_catalog()
    w = load_workload("llama_1b")  # batch 4 peaks at 47.1 GB (shared/data/h200/train_step.jsonl)
    est = w.compute(cat.gpus["h200-sxm"], "amp_bf16", 4, cat)
    assert est.peak_mem_bytes == pytest.approx(47.08e9, rel=1e-3)
    assert memory_fits(est, cat.gpus["h100-sxm"], 1.0)  # 80 GB
    assert not memory_fits(est, cat.gpus["a10"], 1.0)  # 24 GB


def test_gradient_bytes_are_fp32():
    w = load_workload("resnet50")
    assert w.tensors().total_gradient_bytes == 25_557_032 * 4


def test_buckets_cover_all_bytes_in_ready_order():
    ts = load_workload("bert_base").tensors()
    sizes, ready, count = ts.buckets(25e6)
    assert sizes.sum() == ts.total_gradient_bytes
    assert count.sum() == ts.n_trainable
    assert all(ready[i] <= ready[i + 1] for i in range(len(ready) - 1))
    assert all(s >= 25e6 for s in sizes[:-1])
