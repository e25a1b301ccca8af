"""Host time + GPU time (costopt/perf/host_gpu.py, costopt/perf/compute.py): hand numbers and properties."""

from pathlib import Path

import numpy as np
import pytest

from costopt.core.errors import InputError
from costopt.hardware.catalog import load_catalog
from costopt.perf.host_gpu import fit_phase, identified, smax, step_split
from costopt.perf.workload import list_models, load_workload

BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def test_smooth_max_by_hand():
    assert float(smax(3.0, 4.0, 2.0)) == pytest.approx(5.0)  # (9 + 16)^(1/2)
    assert float(smax(1.0, 1.0, 4.0)) == pytest.approx(2 ** 0.25)
    assert float(smax(0.0, 7.0, 4.0)) == pytest.approx(7.0)


def test_fit_recovers_a_known_split():
    # points made from H = 10 ms, k = 0.5 ms, g = 0.1 ms per sample, p = 4 (host-bound at 8 and 32,
    # GPU-bound at 512): the fit gives H and g back within 1%
    H, k, g, p = 10e-3, 0.5e-3, 0.1e-3, 4.0
    b = np.array([8, 32, 128, 512])
    t = (H ** 4 + (k + b * g) ** 4) ** 0.25
    fit = fit_phase(b, t, k, p)
    assert fit.host_s == pytest.approx(H, rel=0.01)
    assert fit.gpu_per_sample_s == pytest.approx(g, rel=0.01)
    assert fit.fit_log_rms < 0.005


def test_a_host_bound_sweep_keeps_g_at_its_prior():
    # two host-bound points (BERT-large AMP forward: 34.75 ms at 32, 34.55 ms at 64): the data allow any
    # g below ~0.3 ms per sample; with a prior of 0.1 ms the fit keeps g near it (within 20%) and H at
    # the measured level
    fit = fit_phase([32, 64], [34.75e-3, 34.55e-3], 0.0, 4.0, g_prior=0.1e-3, sigma=1.0)
    assert fit.gpu_per_sample_s == pytest.approx(0.1e-3, rel=0.2)
    assert fit.host_s == pytest.approx(34.6e-3, rel=0.02)


def test_identified_by_hand():
    # resnet50 fp32 forward + backward: 20.29 ms at 32, 115.61 ms at 256: 5.70 >= 0.5 x 8 -> GPU time told
    assert identified([32, 64, 128, 256], [20.29, 32.09, 60.03, 115.61])
    # bert_large amp: 73.95 ms at 32, 73.33 at 64: 0.99 < 0.5 x 2 -> not told
    assert not identified([32, 64], [73.95, 73.33])
    assert not identified([32], [10.0])


def test_step_split_by_hand():
    # resnet50 amp_bf16 step: 2.06, 0.57, 0.29, 0.29 ms at 32-256. G_s = 0.29 ms (host ahead), H_s with
    # smax(H_s, G_s) = 2.06 ms: H_s = (2.06^4 - 0.29^4)^(1/4) = 2.05958 ms
    hs, gs = step_split([2.06e-3, 0.57e-3, 0.29e-3, 0.29e-3], 4.0)
    assert gs == pytest.approx(0.29e-3)
    assert hs == pytest.approx((2.06 ** 4 - 0.29 ** 4) ** 0.25 * 1e-3, rel=1e-9)
    assert float(smax(hs, gs, 4.0)) == pytest.approx(2.06e-3, rel=1e-9)
    assert step_split([1e-3, 1e-3], 4.0) == (0.0, 1e-3)


def _iterations(w, g, prec, cat):
    out = []
    for b in BATCHES:
        try:
            est = w.compute(g, prec, b, cat)
        except InputError:
            return out
        out.append((b, est))
    return out


def test_every_model_gpu_precision_batch_is_monotone_and_above_its_floor():
    # issue 24: iteration time never falls as the batch grows (1..1024), and samples/s never exceeds the
    # peak-FLOP or memory floor: t_fwd + t_bwd >= b max(F / P, B / W)
    from costopt.perf.compute import sample_cost

    cat = load_catalog()
    checked = 0
    for m in list_models():
        w = load_workload(m)
        cost = sample_cost(w.flops)
        for prec in w.precisions():
            for g in cat.gpus.values():
                prev = 0.0
                for b, est in _iterations(w, g, prec, cat):
                    assert est.iteration_s >= prev * (1 - 1e-12), (m, g.id, prec, b)
                    prev = est.iteration_s
                    peak = g.peak_flops(prec)
                    floor = b * max(cost.matmul_flops / peak, cost.bytes_for(prec) / g.memory_bandwidth_bytes_per_s)
                    assert est.forward_s + est.backward_s >= floor * (1 - 1e-9)
                    checked += 1
    assert checked > 5000


@pytest.mark.parametrize("a,b", [("v100-sxm2-16gb", "v100-sxm2-32gb"), ("v100-pcie-16gb", "v100-pcie-32gb"),
                                 ("a100-sxm-40gb", "a100-sxm-80gb"), ("a100-pcie-40gb", "a100-pcie-80gb"),
                                 ("b200", "b300")])
def test_same_silicon_within_its_spec_ratio(a, b):
    # one die: t_a / t_b inside [min(1, P_b/P_a, W_b/W_a), max(...)] (host time is the same on both)
    cat = load_catalog()
    ga, gb = cat.gpus[a], cat.gpus[b]
    for m in list_models():
        w = load_workload(m)
        for prec in w.precisions():
            pa, pb = ga.peak_flops(prec), gb.peak_flops(prec)
            if not pa or not pb:
                continue
            r = (pb / pa, gb.memory_bandwidth_gbs / ga.memory_bandwidth_gbs, 1.0)
            for batch in (8, 64, 256):
                ta = w.compute(ga, prec, batch, cat).iteration_s
                tb = w.compute(gb, prec, batch, cat).iteration_s
                assert min(r) * (1 - 1e-6) <= ta / tb <= max(r) * (1 + 1e-6), (m, prec, batch)


def test_optimizer_step_does_not_grow_with_the_batch():
    # issue 24: BERT-large's step was 8.3 ms at 64 and 33 ms at 256 (scaled with the batch): now once per
    # optimizer step, the same at every batch, on the measured GPU and on another one
    cat = load_catalog()
    w = load_workload("bert_large")
    for gid in ("h200-sxm", "a100-sxm-80gb"):
        steps = {w.compute(cat.gpus[gid], "amp_bf16", b, cat).step_s for b in (8, 64, 256, 1024)}
        assert len(steps) == 1


def _logo():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import compute_logo

    return compute_logo.logo(load_catalog())["all"]


def test_leave_one_gpu_out_median_meets_issue_24():
    # met since the smooth-max host term in the published-ratio equations and the convolution op class
    # (2026-12-02): 7.7% (8.1% before them)
    assert _logo()["median"] <= 0.08


@pytest.mark.xfail(strict=True, reason="issue 24 done-when not met: leave-one-GPU-out p90 is 25.2% (target 15%; "
                   "24.9% before the convolution class, 22.6% before the host/GPU split): RTX 3090/4090, A10 and "
                   "B200 Lambda cells and the K80 ResNet / P100 Inception-v3 cells")
def test_leave_one_gpu_out_p90_meets_issue_24():
    assert _logo()["p90"] <= 0.15


@pytest.mark.xfail(strict=True, reason="issue 24 done-when not met: worst leave-one-GPU-out cell is 1.63x "
                   "(target 1.5x; 1.66x before the convolution class): RTX 3090 AMP ResNet-50 (Lambda) with the 3090 "
                   "left out, -39%")
def test_leave_one_gpu_out_worst_meets_issue_24():
    assert _logo()["worst_ratio"] <= 1.5


def test_compute_logo_clock_what_if_scales_only_the_named_gpu():
    # tools/compute_logo.py --clock GPU=MHZ/BOOST: the peaks scale by MHZ / BOOST (A10 AMP: 125 x 1340 / 1695 =
    # 98.82 TFLOP/s), the shipped catalog is untouched, a clock equal to the rated boost changes nothing, and a
    # slower clock never makes the GPU's own left-out cells faster (its fit does not hold it)
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import compute_logo

    cat = load_catalog()
    slow = compute_logo.with_clocks(cat, {"a10": (1340.0, 1695.0)})
    assert slow.gpus["a10"].sustained_flops("amp_bf16") == pytest.approx(98.82e12, rel=1e-4)
    assert cat.gpus["a10"].sustained_flops("amp_bf16") == 125e12
    assert slow.gpus["h100-sxm"] is cat.gpus["h100-sxm"]
    def errors(c):
        return {(r["gpu"], r["table"], r["model"], r["precision"]): r["error"] for r in compute_logo.logo(c)["rows"]}

    plain = errors(cat)
    assert errors(compute_logo.with_clocks(cat, {"a10": (1695.0, 1695.0)})) == plain
    a10 = {k: e for k, e in errors(slow).items() if k[0] == "a10"}
    assert len(a10) == 6
    assert all(e < plain[k] for k, e in a10.items())
    assert compute_logo.main(["--clock", "zz=1/2"]) == 2  # unknown GPU
    assert compute_logo.main(["--clock", "a10=1340"]) == 2  # no rated boost in the catalog, none given
    with pytest.raises(SystemExit) as bad:
        compute_logo.main(["--clock", "a10=-5/1695"])
    assert bad.value.code == 2


# --- the software stack (--framework) -------------------------------------------------------------------


def _h200_split(model, precision):
    from costopt.perf.compute import reference_split, sample_cost

    cat = load_catalog()
    w = load_workload(model)
    pts = tuple(sorted((q for q in w.profiles if q.gpu == "h200-sxm" and q.precision == precision),
                       key=lambda q: q.batch))
    return w, cat, reference_split(model, pts, sample_cost(w.flops), cat.gpus["h200-sxm"], precision)


def test_cuda_graphs_scale_only_the_host_time():
    # data/compute_defaults.toml [framework.cuda-graphs]: host x0.1 per phase and per step (estimate).
    # resnet101 amp_bf16 at batch 32 on the H200 (host-bound): forward = smax(0.1 H, k + 32 g), p = 3
    w, cat, sp = _h200_split("resnet101", "amp_bf16")
    g = cat.gpus["h200-sxm"]
    est = w.with_framework("cuda-graphs").compute(g, "amp_bf16", 32, cat)
    f = sp.forward
    assert est.forward_s == pytest.approx(((0.1 * f.host_s) ** 3 + (f.floor_s + 32 * f.gpu_per_sample_s) ** 3) ** (1 / 3),
                                          rel=1e-9)
    assert est.step_s == pytest.approx(((0.1 * sp.step_host_s) ** 3 + sp.step_gpu_s ** 3) ** (1 / 3), rel=1e-9)
    eager = w.compute(g, "amp_bf16", 32, cat)
    assert est.iteration_s < eager.iteration_s
    assert "software stack eager (the default)" in eager.basis and "cuda-graphs" in est.basis


def test_vendor_tuned_fuses_only_the_optimizer_loop():
    # [framework.vendor-tuned]: forward/backward host as measured, optimizer-step host x0.05:
    # resnet50 amp_bf16 step = smax(0.05 H_s, G_s), p = 3 (H_s from the 2.06 ms step at batch 32)
    w, cat, sp = _h200_split("resnet50", "amp_bf16")
    g = cat.gpus["h200-sxm"]
    est = w.with_framework("vendor-tuned").compute(g, "amp_bf16", 64, cat)
    eager = w.compute(g, "amp_bf16", 64, cat)
    assert est.forward_s == eager.forward_s and est.backward_s == eager.backward_s
    assert est.step_s == pytest.approx(((0.05 * sp.step_host_s) ** 3 + sp.step_gpu_s ** 3) ** (1 / 3), rel=1e-9)


def test_unknown_framework_is_refused():
    with pytest.raises(InputError, match="unknown framework 'jax'"):
        load_workload("resnet50").with_framework("jax")
    from typer.testing import CliRunner

    from costopt.cli.main import app

    r = CliRunner().invoke(app, ["predict", "--model", "resnet50", "--gpu", "h200-sxm", "--gpus-per-node", "1",
                                 "--nodes", "1", "--strategy", "ring", "--framework", "jax"])
    assert r.exit_code == 2 and "unknown framework" in r.output


def test_transformer_without_fp32_profile_gets_a_labelled_roofline_estimate():
    # bert_large is measured in amp_bf16 only: fp32 comes from that measurement by the roofline, labelled;
    # slower than AMP on the same GPU, host time kept, peak memory x2 (zoo fp32/amp other bytes:
    # 1,181,255,680 / 590,627,840 = 2)
    cat = load_catalog()
    w = load_workload("bert_large")
    assert "fp32" not in w.precisions()
    g = cat.gpus["h200-sxm"]
    fp32 = w.compute(g, "fp32", 32, cat)
    amp = w.compute(g, "amp_bf16", 32, cat)
    assert fp32.source.startswith("roofline") and "no fp32 profile" in fp32.basis and "estimate" in fp32.basis
    assert fp32.iteration_s > amp.iteration_s
    assert fp32.peak_mem_bytes == pytest.approx(2 * amp.peak_mem_bytes, rel=1e-12)
    prev = 0.0
    for b in BATCHES:
        t = w.compute(cat.gpus["v100-sxm2-16gb"], "fp32", b, cat).iteration_s
        assert t >= prev
        prev = t
    # a model with no FLOP count still refuses a precision it was not measured in
    from costopt.perf.compute import estimate

    with pytest.raises(InputError, match="no fp32 compute profile"):
        estimate("bert_large", w.profiles, None, g, "fp32", 32, cat)
