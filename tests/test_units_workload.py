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


def test_extrapolation_beyond_largest_batch_follows_the_batch():
    # issue 11: beyond the largest measured batch the work (FLOPs) grows with the batch, so time does
    # too: t(384) = t(256) x 384/256 (shared/data/h200/train_step.jsonl: resnet50 fp32 batch 256
    # backward 76.11 ms -> 114.16 ms), never the flat or shrinking slope of the last two points
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    b256 = w.compute(cat.gpus["h200-sxm"], "fp32", 256, cat)
    b384 = w.compute(cat.gpus["h200-sxm"], "fp32", 384, cat)
    assert b384.source == "extrapolated"
    assert b384.backward_s == pytest.approx(b256.backward_s * 1.5, rel=1e-9)
    assert b384.forward_s == pytest.approx(b256.forward_s * 1.5, rel=1e-9)
    # BERT-large amp_bf16 was measured at batch 32 (74.0 ms fwd+bwd) and 64 (73.3 ms): at batch 256
    # the time is 4 x the batch-64 time, not the flat 73 ms of the last two points
    bl = load_workload("bert_large")
    b64 = bl.compute(cat.gpus["h200-sxm"], "amp_bf16", 64, cat)
    b256 = bl.compute(cat.gpus["h200-sxm"], "amp_bf16", 256, cat)
    assert b256.forward_s + b256.backward_s == pytest.approx(4 * (b64.forward_s + b64.backward_s), rel=1e-9)


def test_published_same_model_ratio_from_the_catalog_figure():
    # mini.toml: halfcard's ResNet-50 figure 1129.5 samples/s vs the H200's 2259: every phase x 2
    cat = load_catalog(MINI)
    w = load_workload("resnet50")
    h = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    half = w.compute(cat.gpus["halfcard"], "fp32", 64, cat)
    assert half.source == "published"
    assert half.forward_s == pytest.approx(2 * h.forward_s, rel=1e-9)
    assert half.step_s == pytest.approx(2 * h.step_s, rel=1e-9)
    assert "2259/1129.5" in half.basis


def test_roofline_for_a_model_without_a_published_figure():
    # VGG-16 is not ResNet-50's class: no published ratio, so the roofline. halfcard has exactly half
    # the H200's peak FLOP/s (33.5 vs 67 fp32) and memory bandwidth (2400 vs 4800 GB/s) and shares its
    # generation (same achieved fractions): r_half / r_h200 = 2 for any FLOP/byte mix. The H200's time
    # beyond its roofline (launches, host) is kept, not scaled (compute.py (c)): forward + backward =
    # t_h200 + 64 r_h200, between 1x and 2x the H200's; the memory-bound optimizer step is 2x.
    from costopt.perf.compute import fit_fractions

    cat = load_catalog(MINI)
    w = load_workload("vgg16")
    h = w.compute(cat.gpus["h200-sxm"], "fp32", 64, cat)
    half = w.compute(cat.gpus["halfcard"], "fp32", 64, cat)
    assert half.source == "roofline"
    u_mm, u_bw, _ = fit_fractions(None).for_gpu(load_catalog().gpus["h200-sxm"], "fp32")
    r_h200 = (w.flops["train_matmul_flops_per_sample"] / 494.5e12 * u_mm
              + w.flops["train_other_bytes_per_sample"]["fp32"] / 4800e9 * u_bw)
    busy_h, busy_half = h.forward_s + h.backward_s, half.forward_s + half.backward_s
    assert busy_half == pytest.approx(busy_h + 64 * r_h200, rel=1e-9)
    assert busy_h < busy_half <= 2 * busy_h
    assert half.step_s == pytest.approx(2 * h.step_s, rel=1e-9)
    assert "2259/1129.5" not in half.basis


def test_faster_gpu_is_faster_but_never_beats_the_peak():
    # issue 11: B200 must beat H200 where the published ratio says so (BERT-large fp16: Lambda v2
    # 523 vs 350 sequences/s), and no estimate may imply more than the peak FLOP/s
    cat = load_catalog()
    w = load_workload("bert_large")
    b200, h200 = cat.gpus["b200"], cat.gpus["h200-sxm"]
    b = w.compute(b200, "amp_bf16", 64, cat)
    h = w.compute(h200, "amp_bf16", 64, cat)
    assert b.forward_s + b.backward_s == pytest.approx((h.forward_s + h.backward_s) * 350 / 523, rel=1e-9)
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
