"""Units and the compute side of the workload zoo (interpolation, floor, scaling, memory)."""

from pathlib import Path

import pytest

from costopt.core import units
from costopt.hardware.catalog import load_catalog
from costopt.perf.workload import load_workload, memory_fits

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


def test_measured_point_is_the_fit_of_the_sweep():
    # shared/data/h200/train_step.jsonl: resnet50 fp32 batch 128 forward 20.452 ms, backward 39.578 ms;
    # the estimate is the host + GPU fit of the whole sweep (32-256, GPU-bound from 64 on): within 5%
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    est = w.compute(cat.gpus["h200-sxm"], "fp32", 128, cat)
    assert est.source == "measured"
    assert est.forward_s == pytest.approx(20.452e-3, rel=0.05)
    assert est.backward_s == pytest.approx(39.578e-3, rel=0.05)
    assert "host + GPU fit" in est.basis


def test_interpolation_between_batches():
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    lo = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    hi = w.compute(cat.gpus["h200-sxm"], "fp32", 128, cat)
    mid = w.compute(cat.gpus["h200-sxm"], "fp32", 96, cat)
    assert mid.source == "interpolated"
    assert lo.backward_s < mid.backward_s < hi.backward_s
    assert mid.peak_mem_bytes == pytest.approx((lo.peak_mem_bytes + hi.peak_mem_bytes) / 2, rel=1e-9)


def test_small_batches_keep_the_host_time():
    # H200 README: small batches are launch-bound. resnet101 amp_bf16 forward + backward: 45.9 ms at 32,
    # 52.0 ms at 128 (host-bound): at batch 4 the host time stays, so the time is no less than 80% of the
    # batch-32 time and no more than it
    cat = load_catalog(MINI)
    w = load_workload("resnet101")
    tiny = w.compute(cat.gpus["h200-sxm"], "amp_bf16", 4, cat)
    smallest = w.compute(cat.gpus["h200-sxm"], "amp_bf16", 32, cat)
    t4, t32 = tiny.forward_s + tiny.backward_s, smallest.forward_s + smallest.backward_s
    assert 0.8 * 45.9e-3 <= t4 <= t32
    assert tiny.peak_mem_bytes < smallest.peak_mem_bytes


def test_extrapolation_beyond_largest_batch_follows_the_gpu_time():
    # issue 11/24: beyond the largest measured batch the GPU time grows with the batch: resnet50 fp32 is
    # GPU-bound at 256 (backward 76.11 ms), so t(384) / t(256) is just under 1.5 (the kernel floor k
    # does not grow): (k + 384 g) / (k + 256 g) in (1.45, 1.5]
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    b256 = w.compute(cat.gpus["h200-sxm"], "fp32", 256, cat)
    b384 = w.compute(cat.gpus["h200-sxm"], "fp32", 384, cat)
    assert b384.source == "extrapolated"
    assert 1.45 < b384.backward_s / b256.backward_s <= 1.5
    # BERT-large amp_bf16, measured at 32 (74.0 ms fwd+bwd) and 64 (73.3 ms): host-bound. At 256 the host
    # time is amortised: more sequences/s than at 64 (not frozen at the H200's operating point), but the
    # time still grows (monotone) and stays above its floor (260.76 GFLOP x 256 / 989 TFLOP/s = 67.5 ms)
    bl = load_workload("bert_large")
    b64 = bl.compute(cat.gpus["h200-sxm"], "amp_bf16", 64, cat)
    b256 = bl.compute(cat.gpus["h200-sxm"], "amp_bf16", 256, cat)
    t64, t256 = b64.forward_s + b64.backward_s, b256.forward_s + b256.backward_s
    assert t64 < t256 < 4 * t64
    assert t256 >= 260_763_549_696 * 256 / 989e12


def test_published_figures_are_not_multipliers():
    # mini.toml: halfcard's ResNet-50 figure 1129.5 samples/s vs the H200's 2259 (2x): no longer a
    # multiplier on the H200 measurement. halfcard has half the H200's peaks and bandwidth (roofline
    # ratio 2): its GPU time doubles but its host time does not, so it lies between 1x and 2x the H200's
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    h = w.compute(cat.gpus["h200-sxm"], "fp32", 32, cat)
    half = w.compute(cat.gpus["halfcard"], "fp32", 32, cat)
    assert half.source == "roofline"
    assert "2259/1129.5" not in half.basis
    assert h.forward_s < half.forward_s < 2 * h.forward_s


def test_roofline_for_a_model_without_a_published_figure():
    # VGG-16 on halfcard (half the H200's peaks and bandwidth, same generation): GPU time doubles, host
    # time kept: forward + backward between 1x and 2x the H200's; the optimizer step's GPU part doubles
    # and its host part stays: step between 1x and 2x
    cat = load_catalog(MINI)
    w = load_workload("vgg16")
    h = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    half = w.compute(cat.gpus["halfcard"], "fp32", 64, cat)
    assert half.source == "roofline"
    busy_h, busy_half = h.forward_s + h.backward_s, half.forward_s + half.backward_s
    assert busy_h < busy_half <= 2 * busy_h
    assert h.step_s <= half.step_s <= 2 * h.step_s * (1 + 1e-9)


def test_faster_gpu_is_faster_but_never_beats_the_peak():
    # B200 (2250 TFLOP/s bf16, 8 TB/s) must beat the H200 (989, 4.8 TB/s) on BERT-large, and no estimate
    # may imply more than the peak FLOP/s
    cat = load_catalog()
    w = load_workload("bert_large")
    b200, h200 = cat.gpus["b200"], cat.gpus["h200-sxm"]
    b = w.compute(b200, "amp_bf16", 256, cat)
    h = w.compute(h200, "amp_bf16", 256, cat)
    assert b.forward_s + b.backward_s < h.forward_s + h.backward_s
    flops = 260_763_549_696  # bert_large training matmul FLOPs per 128-token sample (tests/test_compute.py derives it)
    for batch in (1, 8, 64, 512):
        est = w.compute(b200, "amp_bf16", batch, cat)
        assert flops * batch / (est.forward_s + est.backward_s) <= 2250e12 * (1 + 1e-9)


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
