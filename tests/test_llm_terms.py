"""Large-model step-time terms added for accuracy (costopt/perf/llm/step.py, evaluate.py): unfused attention,
optimizer update, collective memory traffic, GEMM shape slowdown, MAMF-based matmul fraction.

Each is checked against a number worked out by hand in this file (tools/mutants.toml plants mutants in
these terms and runs this file: keep it fast)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from costopt.perf.llm.arch import ArchArrays, TransformerConfig
from costopt.perf.llm.evaluate import default_llm_params
from costopt.perf.llm.step import step_time

TINY = TransformerConfig("tiny", layers=2, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, vocab=1000,
                         seq_len=1000, params_override=100_000_000)


def _params():
    p = default_llm_params()
    return replace(p, elementwise_bytes_per_token_per_hidden=100.0, memory_bandwidth_fraction=0.5,
                   collective_latency_us=0.0, overlap_fraction=1.0, optimizer_bytes_per_param=0.0,
                   unfused_attention_bytes_per_score=32.0, unfused_attention_recompute_bytes_per_score=13.0,
                   collective_hbm_bytes_per_byte_all_gather=0.0, collective_hbm_bytes_per_byte_reduce_scatter=0.0,
                   collective_hbm_bytes_per_byte_all_reduce=0.0, gemm_shape_dims=0.0,
                   cross_entropy_bytes_per_logit=0.0)  # each term's hand test sets the ones it checks


def _step(G=1, M=1, strategy=0, tp=1, pp=1, b=2, m=1, ckpt=0, intra=1e9, node=1e9, flash=True, params=None):
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    return step_time(ArchArrays.of(TINY, 1), params or _params(), peak_flops=one(1e15), mem_bw_bytes_per_s=one(1e12),
                     matmul_fraction=one(0.5), attention_fraction=one(0.25), intra_bytes_per_s=one(intra),
                     node_bytes_per_s=one(node), gpus_per_node=one(G), nodes=one(M), strategy=np.array([strategy]),
                     tp=one(tp), pp=one(pp), micro_batch=one(b), grad_accum=one(m), ckpt=np.array([ckpt]),
                     flash_attention=np.array([flash]))


# by hand, b = 2 sequences of 1,000 tokens on one GPU:
# F_model = 6·1e8 + 12·2·1024·1000 = 624,576,000; F_att = 24,576,000
# matmul: ((624,576,000 − 24,576,000)/0.5 + 24,576,000/0.25)·2000/1e15 = 1,298,304,000·2000/1e15 = 2.596608 ms
# element-wise: 100·1024·2·2000 / (1e12·0.5) = 0.8192 ms
T_MB = 2.596608e-3 + 0.8192e-3


def test_unfused_attention_by_hand():
    # no FlashAttention: the attention-score FLOPs run at the matmul fraction (0.5, not 0.25), and the
    # s x s scores of a = 8 heads go through memory, 32 bytes per score per layer:
    # matmul: 624,576,000/0.5 · 2000/1e15 = 2.498304 ms (was 2.596608 ms with the 0.25 attention fraction)
    # scores: 32·8·1000²·2 sequences·2 layers / (1e12·0.5) = 2.048 ms; element-wise as before 0.8192 ms
    st = _step(flash=False)
    assert st.t_step_s[0] == pytest.approx(2.498304e-3 + 2.048e-3 + 0.8192e-3, rel=1e-12)
    # selective recompute re-runs the attention core: 45 bytes per score, F_att 4/3 of 24,576,000
    # matmul: (600,000,000 + 32,768,000)/0.5 · 2000/1e15 = 2.531072 ms; scores 45/32 · 2.048 = 2.88 ms;
    # element-wise scales with F_hw/F_model = 632,768,000/624,576,000
    st = _step(flash=False, ckpt=1)
    elem = 0.8192e-3 * 632_768_000 / 624_576_000
    assert st.t_step_s[0] == pytest.approx(2.531072e-3 + 2.88e-3 + elem, rel=1e-12)


def test_optimizer_update_by_hand():
    # 30 bytes per parameter at 1e12·0.5 B/s: P = 1e8 on one GPU: 6 ms once per step (m = 4 micro-batches);
    # fsdp over 2 GPUs owns half the parameters: 3 ms
    p = replace(_params(), optimizer_bytes_per_param=30.0)
    st = _step(m=4, params=p)
    assert st.t_opt_s[0] == pytest.approx(6e-3, rel=1e-12)
    assert st.t_step_s[0] == pytest.approx(4 * T_MB + 6e-3, rel=1e-12)
    assert _step(G=2, strategy=3, params=p).t_opt_s[0] == pytest.approx(3e-3, rel=1e-12)


def test_collective_memory_traffic_by_hand():
    # an overlapped collective's bytes through the GPU's memory are not hidden: P = 1e8 on 2 GPUs, ring
    # factor (2-1)/2, memory at 1e12·0.5 B/s; k_ag = 2, k_rs = 3, k_ar = 5 bytes per byte of buffer
    p = replace(_params(), collective_hbm_bytes_per_byte_all_gather=2.0,
                collective_hbm_bytes_per_byte_reduce_scatter=3.0, collective_hbm_bytes_per_byte_all_reduce=5.0)
    # fsdp, per micro-batch: all-gather 2P twice (2·2·2e8) + reduce-scatter 4P (3·4e8) = 2e9 bytes, half of
    # it per rank: 1e9 / 5e11 = 2 ms, on top of the 0.4 s of exposed link time
    # (test_llm.py, test_fsdp_exposed_communication_by_hand)
    st = _step(G=2, strategy=3, params=p)
    assert st.t_step_s[0] == pytest.approx(0.4 + 2e-3, rel=1e-12)
    # two micro-batches: twice the fsdp traffic; ddp all-reduces 4P once per step: 5·4e8/2 / 5e11 = 2 ms
    assert st.t_dp_exposed_s[0] - _step(G=2, strategy=3).t_dp_exposed_s[0] == pytest.approx(2e-3, rel=1e-9)
    two = _step(G=2, strategy=3, m=2, params=p).t_dp_exposed_s[0] - _step(G=2, strategy=3, m=2).t_dp_exposed_s[0]
    assert two == pytest.approx(4e-3, rel=1e-9)
    ddp = _step(G=2, strategy=0, params=p).t_dp_exposed_s[0] - _step(G=2, strategy=0).t_dp_exposed_s[0]
    assert ddp == pytest.approx(2e-3, rel=1e-9)


def test_gemm_shape_slowdown_by_hand():
    # c = 42.5, h = 768, t = 1: QKV 1 + 42.5·(1/768 + 1/2304) = 1.0737847, output 1 + 42.5·2/768 = 1.1106771,
    # FFN up and down 1 + 42.5·(1/768 + 1/3072) = 1.0691732; FLOP weights 3 : 1 : 4 : 4 (of 12 h²)
    from costopt.perf.llm.step import gemm_shape_slowdown

    want = (3 * 1.0737847 + 1.1106771 + 8 * 1.0691732) / 12
    assert float(gemm_shape_slowdown(768, 1, 42.5)) == pytest.approx(want, rel=1e-6)
    # tensor parallel narrows every GEMM: h = 4096, t = 8: QKV 4096 -> 1536, output 512 -> 4096, FFN up
    # 4096 -> 2048 and down 2048 -> 4096 (closed form 1 + 42.5·(1 + 8/3)/4096 = 1.0380452)
    g = lambda k, n: 1 + 42.5 * (1 / k + 1 / n)  # noqa: E731
    want = (3 * g(4096, 1536) + g(512, 4096) + 4 * g(4096, 2048) + 4 * g(2048, 4096)) / 12
    assert float(gemm_shape_slowdown(4096, 8, 42.5)) == pytest.approx(want, rel=1e-12) == pytest.approx(1.0380452)


def test_gemm_shape_constant_from_the_measured_table():
    # tools/gemm_shape_fit.py on costopt/data/published/gemm_shapes_h100.json (XLA sm_90 bf16 GEMMs):
    # k0 = 124.2, n0 = 3.3 extra columns, c = (k0 + n0)/3 = 42.5, as written in data/llm_defaults.toml
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tools" / "gemm_shape_fit.py"
    spec = importlib.util.spec_from_file_location("gemm_shape_fit", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = mod.fit_shape()
    assert f["points"] == 16 and f["max_rel_err"] < 0.05
    assert f["k0"] == pytest.approx(124.2, abs=0.1) and f["c"] == pytest.approx(42.5, abs=0.05)
    assert default_llm_params().gemm_shape_dims == 42.5


def test_matmul_fraction_from_mamf_table():
    # e_mm = share x MAMF: the H100 SXM row of the ML-ENG MAMF table is 794.5 of 989 TFLOP/s = 0.803, and
    # its note says the H200 is the same; a GPU with no row takes its generation's mean (h100-pcie: Hopper
    # rows h100-sxm and h200-sxm, both 0.803); a generation with no row takes the mean of all rows
    from costopt.hardware.catalog import load_catalog
    from costopt.perf.llm.evaluate import mamf_fraction, matmul_fraction

    cat = load_catalog(None)
    p = replace(default_llm_params(), matmul_share_of_mamf=0.5,
                mamf_fraction={"h100-sxm": 0.803, "h200-sxm": 0.803, "a100-sxm-80gb": 0.869})
    assert matmul_fraction(cat.gpus["h200-sxm"], p, cat.gpus) == pytest.approx(0.4015)
    assert mamf_fraction(cat.gpus["h100-pcie"], p, cat.gpus)[0] == pytest.approx(0.803)
    frac, where = mamf_fraction(cat.gpus["l40s"], p, cat.gpus)
    assert frac == pytest.approx((0.803 + 0.803 + 0.869) / 3) and "estimate" in where
    # never above the peak: a share that would pass 100% is held at 1
    assert matmul_fraction(cat.gpus["h100-sxm"], replace(p, matmul_share_of_mamf=2.0), cat.gpus) == 1.0


def test_cross_entropy_over_the_vocabulary_by_hand():
    # the loss reads and writes every logit: k_ce = 18 bytes per logit per token (data/llm_defaults.toml,
    # counted), V = 1,000, b = 2 sequences of 1,000 tokens: 18·1,000·2,000 = 36,000,000 bytes per micro-batch
    # at 1e12·0.5 B/s = 72 us on one GPU, whatever the checkpointing (the loss is not recomputed)
    ce = replace(_params(), cross_entropy_bytes_per_logit=18.0)

    def extra(**kw):
        a, b = _step(params=ce, **kw), _step(**kw)
        return a.t_compute_s[0] - b.t_compute_s[0], a.t_step_s[0] - b.t_step_s[0]

    assert extra() == pytest.approx((72e-6, 72e-6), rel=1e-9)
    assert extra(ckpt=2) == pytest.approx((72e-6, 72e-6), rel=1e-9)
    # tensor parallel 2: a vocab-parallel loss, half the logits on each GPU: 36 us
    assert extra(G=2, tp=2) == pytest.approx((36e-6, 36e-6), rel=1e-9)
    # pipeline 2, 4 micro-batches: the last stage carries the whole loss (not halved) and sets the pace:
    # 4·72 us of compute, and the 1F1B bubble (p − 1)/m of it, 72 us, on top: 360 us per step
    assert extra(G=2, pp=2, m=4) == pytest.approx((288e-6, 360e-6), rel=1e-9)
    assert default_llm_params().cross_entropy_bytes_per_logit == 18.0
