"""Low-precision (fp8, mxfp8, nvfp4) training and the interleaved pipeline schedule on the large-model path
(costopt/perf/llm/step.py, memory.py, evaluate.py): each term against a number worked out by hand here.

tools/mutants.toml plants mutants in these terms and runs this file: keep it fast."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from costopt.cli.main import app
from costopt.hardware.catalog import load_catalog
from costopt.perf.llm.arch import ArchArrays, TransformerConfig
from costopt.perf.llm.evaluate import default_llm_params, low_precision_of, mamf_fraction, peak_flops
from costopt.perf.llm.memory import activation_bytes, model_state_bytes
from costopt.perf.llm.step import step_time

# P = 1e8 (published count), V = 1000, h = 1024, untied: P_emb = 2·1000·1024 = 2,048,000,
# so q = (1 − β)·(1 − P_emb/P) = 1 − 0.02048 = 0.97952 for fp8 (β = 0)
TINY = TransformerConfig("tiny", layers=2, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, vocab=1000,
                         seq_len=1000, params_override=100_000_000)
Q = 0.97952


def _params():
    p = default_llm_params()
    return replace(p, elementwise_bytes_per_token_per_hidden=100.0, memory_bandwidth_fraction=0.5,
                   collective_latency_us=0.0, overlap_fraction=1.0, optimizer_bytes_per_param=0.0,
                   collective_hbm_bytes_per_byte_all_gather=0.0, collective_hbm_bytes_per_byte_reduce_scatter=0.0,
                   collective_hbm_bytes_per_byte_all_reduce=0.0, gemm_shape_dims=0.0,
                   cast_elements_per_token_per_hidden=16.0, low_precision_param_gather=True,
                   cross_entropy_bytes_per_logit=0.0)


def _step(G=1, M=1, strategy=0, tp=1, pp=1, b=2, m=1, ckpt=0, lowp=True, w=1.0, amax=0.0, share=1.0, vp=1.0,
          params=None, cp=1.0):
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    low = dict(lowp_peak_flops=one(2e15), lowp_matmul_fraction=one(0.4), lowp_share=share, lowp_bytes=w,
               lowp_amax_bytes=amax) if lowp else {}
    return step_time(ArchArrays.of(TINY, 1), params or _params(), peak_flops=one(1e15), mem_bw_bytes_per_s=one(1e12),
                     matmul_fraction=one(0.5), attention_fraction=one(0.25), intra_bytes_per_s=one(1e9),
                     node_bytes_per_s=one(1e9), gpus_per_node=one(G), nodes=one(M), strategy=np.array([strategy]),
                     tp=one(tp), pp=one(pp), micro_batch=one(b), grad_accum=one(m), ckpt=np.array([ckpt]),
                     flash_attention=np.array([True]), virtual_stages=one(vp), cp=one(cp), **low)


# by hand, b = 2 sequences of 1,000 tokens on one GPU, fp8 (w = 1, no amax pass):
# F_w = 6·1e8 = 600,000,000 per token; at fp8: q·F_w = 587,712,000, at bf16: 12,288,000; F_att = 24,576,000
# matmul: (587,712,000/(2e15·0.4) + 12,288,000/(1e15·0.5) + 24,576,000/(1e15·0.25))·2000
#       = (7.3464e-7 + 2.4576e-8 + 9.8304e-8)·2000 = 8.5752e-7·2000 = 1.71504 ms
# element-wise: 100·1024·2 layers·2000 / (1e12·0.5) = 0.8192 ms
# cast: (2 + 2·1 + 0)·16·1024·2 layers·1·2000 / 5e11 = 0.524288 ms
# weights cast once per step: (2 + 2·1)·q·P / 5e11 = 4·97,952,000 / 5e11 = 0.783616 ms (in T_opt)
T_MB_FP8 = 1.71504e-3 + 0.8192e-3 + 0.524288e-3
T_WCAST = 0.783616e-3


def test_fp8_gemm_split_cast_and_weight_cast_by_hand():
    st = _step()
    assert st.t_compute_s[0] == pytest.approx(T_MB_FP8, rel=1e-12)
    assert st.t_opt_s[0] == pytest.approx(T_WCAST, rel=1e-12)
    assert st.t_step_s[0] == pytest.approx(T_MB_FP8 + T_WCAST, rel=1e-12)
    # MFU over the fp8 peak: 2000 tokens · F_model (624,576,000) / t_step / 2e15
    assert st.mfu[0] == pytest.approx(2000 * 624_576_000 / (T_MB_FP8 + T_WCAST) / 2e15, rel=1e-12)
    # a current-scaling amax read adds 2 bytes per cast element: (6/4)·0.524288 ms
    assert _step(amax=2.0).t_compute_s[0] == pytest.approx(T_MB_FP8 + 0.5 * 0.524288e-3, rel=1e-12)


def test_bf16_design_has_no_cast_term():
    # the same design in bf16: (600,000,000/0.5 + 24,576,000/0.25)·2000/1e15 = 2.596608 ms + 0.8192 ms
    st = _step(lowp=False)
    assert st.t_step_s[0] == pytest.approx(2.596608e-3 + 0.8192e-3, rel=1e-12)


def test_nvfp4_keeps_a_bf16_share_by_hand():
    # β = 0.15: q = 0.85·0.97952 = 0.832592; w = 0.5625, amax 2
    # matmul: (600e6·0.832592/(8e14) + 600e6·0.167408/(5e14) + 24,576,000/2.5e14)·2000
    #       = (6.24444e-7 + 2.008896e-7 + 9.8304e-8)·2000 = 1.8472752 ms
    # cast: (2 + 1.125 + 2)·16·1024·2·0.85·2000/5e11 = 285,491,200/5e11 = 0.5709824 ms
    st = _step(share=0.85, w=0.5625, amax=2.0)
    assert st.t_compute_s[0] == pytest.approx(1.8472752e-3 + 0.8192e-3 + 0.5709824e-3, rel=1e-12)
    # weights: (2 + 1.125)·0.832592·1e8/5e11 = 0.52037 ms
    assert st.t_opt_s[0] == pytest.approx(3.125 * 0.832592e8 / 5e11, rel=1e-12)


def test_low_precision_param_gather_by_hand():
    # fsdp over 2 GPUs in a node (1e9 B/s), overlap 1: per micro-batch exposed = 2·AG + RS − T_mb
    # fp8 all-gather bytes (2·(1 − q) + q)·P = 1.02048e8: AG = 0.5·1.02048e8/1e9 = 0.051024 s
    # RS of fp32 gradients 4P: 0.5·4e8/1e9 = 0.2 s;  T_mb (the GPU's compute, as above) = 3.058528 ms
    st = _step(G=2, strategy=3)
    assert st.t_dp_exposed_s[0] == pytest.approx(2 * 0.051024 + 0.2 - T_MB_FP8, rel=1e-12)
    # the weights owned by one GPU are cast once per step: half of 0.783616 ms
    assert st.t_opt_s[0] == pytest.approx(T_WCAST / 2, rel=1e-12)
    # without low-precision gathering the weights move in bf16: AG = 0.1 s
    st = _step(G=2, strategy=3, params=replace(_params(), low_precision_param_gather=False))
    assert st.t_dp_exposed_s[0] == pytest.approx(2 * 0.1 + 0.2 - T_MB_FP8, rel=1e-12)


def test_interleaved_pipeline_bubble_and_p2p_by_hand():
    # pp 2 on 2 GPUs of a node, m = 4 micro-batches, bf16: the bubble is m·T_mb·(p − 1)/(v·m)
    # T_mb per stage = 3.415808 ms / 2 = 1.707904 ms
    t_mb = (2.596608e-3 + 0.8192e-3) / 2
    one = _step(G=2, pp=2, m=4, lowp=False)
    two = _step(G=2, pp=2, m=4, lowp=False, vp=2.0)
    assert one.t_bubble_s[0] == pytest.approx(4 * t_mb / 4, rel=1e-12)
    assert two.t_bubble_s[0] == pytest.approx(4 * t_mb / (2 * 4), rel=1e-12)
    # p2p: (v·m + p − 1)·2·b·s·h·2/t / 1e9: v = 1: 5·8,192,000/1e9 = 40.96 ms; v = 2: 9·8,192,000/1e9 = 73.728 ms
    assert one.t_pp_s[0] == pytest.approx(0.04096, rel=1e-12)
    assert two.t_pp_s[0] == pytest.approx(0.073728, rel=1e-12)


def test_low_precision_memory_by_hand():
    P = np.array([1e8])
    zero1, ddp, fsdp = np.array([1]), np.array([0]), np.array([3])
    d, g, ls = np.array([4.0]), np.array([4.0]), np.array([2.0])
    # zero1 over 4: 4P + 12P/4 = 7e8 in bf16; fp8 copies (2·1)·q·P replace the 2·q·P bf16 weights: 7e8
    assert model_state_bytes(P, zero1, d, g, ls)[0] == pytest.approx(7e8)
    assert model_state_bytes(P, zero1, d, g, ls, lowp_share=Q, lowp_bytes=1.0)[0] == pytest.approx(7e8)
    # without low-precision gathering they are added: + 2·0.97952e8 = 1.95904e8
    assert model_state_bytes(P, zero1, d, g, ls, lowp_share=Q, lowp_bytes=1.0,
                             lowp_param_gather=False)[0] == pytest.approx(8.95904e8)
    # nvfp4 copies (2·0.5625 = 1.125 bytes) in place of 2: 7e8 − 0.875·0.97952e8 = 6.142920e8
    assert model_state_bytes(P, zero1, d, g, ls, lowp_share=Q, lowp_bytes=0.5625)[0] == pytest.approx(6.14292e8)
    # ddp keeps its bf16 weights and adds the copies: 16P + 1.95904e8
    assert model_state_bytes(P, ddp, d, g, ls, lowp_share=Q, lowp_bytes=1.0)[0] == pytest.approx(1.795904e9)
    # fsdp unchanged: 16P/4 + 2·2·P/2 = 4e8 + 2e8
    assert model_state_bytes(P, fsdp, d, g, ls, lowp_share=Q, lowp_bytes=1.0)[0] == pytest.approx(6e8)
    # activations, no checkpointing: 34·s·b·h per layer in bf16 = 34·2,048,000 = 69,632,000; fp8 keeps the
    # 7 saved GEMM inputs at 1 byte: 27·2,048,000 = 55,296,000; 2 layers + fp32 logits 4·1000·2·1000 = 8e6
    arch = ArchArrays.of(TINY, 1)
    b, t, ck = np.array([2.0]), np.array([1.0]), np.array([0])
    assert activation_bytes(arch, b, t, ck)[0] == pytest.approx(2 * 69_632_000 + 8e6)
    assert activation_bytes(arch, b, t, ck, lowp_linear_share=1.0, lowp_bytes=1.0)[0] == pytest.approx(
        2 * 55_296_000 + 8e6)


def test_fp8_matmul_fraction_measured_or_scaled():
    # measured: the ML-ENG FP8 MAMF table, H100 SXM 1402.6 of 1979 = 0.709
    cat = load_catalog(None)
    p = default_llm_params()
    assert mamf_fraction(cat.gpus["h100-sxm"], p, cat.gpus, "fp8")[0] == pytest.approx(0.709)
    # not measured (MI300X): its bf16 MAMF 0.514 x the mean fp8/bf16 ratio of the five GPUs measured in both:
    # (0.709/0.803 + 0.734/0.803 + 0.763/0.776 + 0.745/0.786 + 0.723/0.729)/5
    # = (0.882939 + 0.914072 + 0.983247 + 0.947837 + 0.991770)/5 = 0.943973 -> 0.485202
    frac, where = mamf_fraction(cat.gpus["mi300x"], p, cat.gpus, "fp8")
    assert frac == pytest.approx(0.485202, abs=2e-6) and "estimate" in where
    # nvfp4 has no measurement: the fp8 figure, said to be an estimate
    frac, where = mamf_fraction(cat.gpus["b200"], p, cat.gpus, "nvfp4")
    assert frac == pytest.approx(0.763) and "estimate" in where


def test_grace_blackwell_matmul_fractions_measured_or_from_their_generation():
    # the GB200 is measured (ML-ENG mamf-finder table, stas00/ml-engineering 744d01e): bf16 1822.0 of 2500 TFLOP/s,
    # fp8 3615.6 of 5000; the GB300 is not, and takes the mean of the measured Blackwell GPUs, B200 0.776, B300 0.786,
    # GB200 0.729: 2.291 / 3 = 0.763667 (bf16), times the fp8/bf16 mean ratio 0.943973 = 0.720882 (fp8)
    cat = load_catalog(None)
    p = default_llm_params()
    frac, where = mamf_fraction(cat.gpus["gb200"], p, cat.gpus)
    assert frac == pytest.approx(1822.0 / 2500, abs=5e-4) and "estimate" not in where
    frac, where = mamf_fraction(cat.gpus["gb200"], p, cat.gpus, "fp8")
    assert frac == pytest.approx(3615.6 / 5000, abs=5e-4) and "estimate" not in where
    frac, where = mamf_fraction(cat.gpus["gb300"], p, cat.gpus)
    assert frac == pytest.approx(0.763667, abs=2e-6) and "estimate" in where
    frac, where = mamf_fraction(cat.gpus["gb300"], p, cat.gpus, "fp8")
    assert frac == pytest.approx(0.763667 * 0.943973, abs=2e-6) and "estimate" in where


def test_catalog_low_precision_peaks():
    cat = load_catalog(None)
    # dense peaks of the ML-ENG TFLOPS table (w/o sparsity)
    assert peak_flops(cat.gpus["h100-sxm"], "fp8") == 1979e12
    assert peak_flops(cat.gpus["b200"], "mxfp8") == 4500e12
    assert peak_flops(cat.gpus["b200"], "nvfp4") == 9000e12
    assert peak_flops(cat.gpus["a100-sxm-80gb"], "fp8") is None  # Ampere has no fp8
    assert peak_flops(cat.gpus["h100-sxm"], "mxfp8") is None  # Hopper has no block-scaled formats
    for g in cat.gpu:
        if g.tflops_fp8 is not None:
            # every fp8 part of the table runs fp8 at about twice its dense 16-bit rate (MI355X 5000/2300)
            assert 1.9 <= g.tflops_fp8 / g.tflops_bf16 <= 2.2, g.id
            assert g.low_precision_source and g.low_precision_date, g.id


def test_low_precision_constants_from_the_defaults():
    p = default_llm_params()
    fp8, nv = low_precision_of("fp8", p), low_precision_of("nvfp4", p)
    assert (fp8.share, fp8.bytes_per_element) == (1.0, 1.0)
    assert nv.bytes_per_element == 0.5 + 1 / 16 and nv.share == pytest.approx(0.85)
    assert low_precision_of("amp_bf16", p) is None


PREDICT = ["predict", "--model", "llama3_8b", "--gpus-per-node", "8", "--nodes", "1", "--nic", "ib-ndr",
           "--strategy", "fsdp", "--format", "json"]


def test_predict_llama3_8b_fp8_on_8_h100():
    r = CliRunner().invoke(app, [*PREDICT, "--gpu", "h100-sxm", "--precision", "fp8"])
    assert r.exit_code == 0, r.output
    fp8 = json.loads(r.output)
    bf16 = json.loads(CliRunner().invoke(app, [*PREDICT, "--gpu", "h100-sxm"]).output)
    assert fp8["feasible"] and fp8["precision"] == "fp8"
    # faster than bf16, but far from the 2x of the peaks: attention, element-wise work and casts stay
    assert 1.05 < fp8["tokens_per_s_per_gpu"] / bf16["tokens_per_s_per_gpu"] < 1.6
    assert "1,979 TFLOP/s" in fp8["mfu_basis"] and "6·P + 12·L·h·s" in fp8["mfu_basis"]
    # fp8 saved GEMM inputs: less activation memory than bf16 at the same layout
    if fp8["activation_checkpointing"] == bf16["activation_checkpointing"]:
        assert fp8["memory_activations_gb"] < bf16["memory_activations_gb"]


def test_gpu_without_the_format_exits_2_naming_it():
    r = CliRunner().invoke(app, [*PREDICT, "--gpu", "a100-sxm-80gb", "--precision", "fp8"])
    assert r.exit_code == 2
    assert "a100-sxm-80gb has no fp8" in r.output and "fit" not in r.output
    r = CliRunner().invoke(app, ["solve", "--budget", "2000000", "--model", "llama3_8b", "--precision", "nvfp4",
                                 "--gpu", "h100-sxm", "--include", "legacy"])
    assert r.exit_code == 2 and "nvfp4" in r.output and "fit" not in r.output


# ---------------------------------------------------------------- frameworks, validation columns


def test_framework_values_from_the_defaults_by_hand():
    # llm_defaults.toml [framework.megatron]: share factor 1.058 on the pooled 0.794, 204.9 element-wise bytes,
    # Hopper attention 0.51 (FlashAttention-3-class), causal blocks skipped (0.5); torchtitan has no row in the
    # fit: the pooled values (factor 1, [compute]'s 211.7 bytes, FA2's 0.35 on Hopper, every score charged)
    from costopt.perf.llm.evaluate import params_for_framework

    p = default_llm_params()
    m = params_for_framework(p, "megatron")
    assert m.matmul_share_of_mamf == pytest.approx(0.794 * 1.058)
    assert m.elementwise_bytes_per_token_per_hidden == 204.9 and m.causal_attention_flop_share == 0.5
    assert m.attention_fraction["hopper"] == 0.51 and m.attention_fraction["ampere"] == 0.6
    t = params_for_framework(p, "torchtitan")
    assert t.matmul_share_of_mamf == 0.794 and t.elementwise_bytes_per_token_per_hidden == 211.7
    assert t.attention_fraction["hopper"] == 0.35 and t.causal_attention_flop_share == 1.0
    # applying it twice changes nothing (the framework tables are consumed)
    assert params_for_framework(m, "megatron") == m


def test_causal_attention_share_by_hand():
    # bf16, one GPU: with c_causal = 0.5 the attention core runs 24,576,000/2 FLOPs per token at 0.25 of 1e15:
    # (600,000,000/0.5 + 12,288,000/0.25)·2000/1e15 = 2.498304 ms, + 0.8192 ms element-wise
    st = _step(lowp=False, params=replace(_params(), causal_attention_flop_share=0.5))
    assert st.t_step_s[0] == pytest.approx(2.498304e-3 + 0.8192e-3, rel=1e-12)


CSV_ROW = {"source": "S", "model": "m", "params_b": "1.3", "layers": "24", "hidden": "2048", "heads": "16",
           "seq_len": "2048", "gpu": "a100-sxm-80gb", "gpus_per_node": "8", "nodes": "2", "total_gpus": "16",
           "precision": "amp_bf16", "dp_strategy": "fsdp", "tp": "1", "pp": "1", "cp": "1",
           "micro_batch_per_gpu": "8", "global_batch": "64", "activation_checkpointing": "none", "compile": "",
           "measured_tokens_per_s_per_gpu": "20000", "measured_mfu": "", "interconnect": "", "notes": ""}


def _csv(tmp_path, **extra):
    from costopt.measure.llm_validate import COLUMNS, read_llm_csv

    cols = (*COLUMNS, *[c for c in extra if c not in COLUMNS])
    f = tmp_path / "rows.csv"
    row = {**CSV_ROW, **extra}
    f.write_text(",".join(cols) + "\n" + ",".join(f'"{row.get(c, "")}"' for c in cols) + "\n")
    return read_llm_csv(f)


def test_validate_reads_the_interconnect_column(tmp_path):
    from costopt.core.errors import InputError
    from costopt.measure.llm_validate import _row_space

    cat = load_catalog(None)
    # a node total: 1600 Gb/s of RoCE = 4 x 400gbe-roce (the fastest RoCE NIC whose rate divides it)
    r = _csv(tmp_path, interconnect="1600 Gbps node-node interconnect (RoCE) (from table title)")[0]
    space, _ = _row_space([r], cat)
    assert space.nics[space.nic_idx[0]].id == "400gbe-roce" and space.nics_per_node[0] == 4
    # per GPU: 200 Gb/s HDR InfiniBand on each of the 8 GPUs
    r = _csv(tmp_path, interconnect="200 Gb/s HDR InfiniBand per GPU (dedicated)")[0]
    space, _ = _row_space([r], cat)
    assert space.nics[space.nic_idx[0]].id == "ib-hdr" and space.nics_per_node[0] == 8
    # empty: the generation's assumed InfiniBand, said in `assumed`
    r = _csv(tmp_path)[0]
    assert "network" in r.assumed and r.fabric is None
    with pytest.raises(InputError, match="interconnect 'a fast network'"):
        _csv(tmp_path, interconnect="a fast network")


def test_validate_reads_the_optional_architecture_columns(tmp_path):
    from costopt.core.errors import InputError

    r = _csv(tmp_path, kv_heads="4", ffn_hidden="5632", vocab="32000", vp="1", framework="fsdp")[0]
    assert (r.cfg.kv_heads, r.cfg.ffn_hidden, r.cfg.vocab, r.vp, r.framework) == (4, 5632, 32000, 1, "fsdp")
    r = _csv(tmp_path)[0]
    assert r.cfg.vocab == 50368 and r.framework == "megatron" and "framework megatron (not stated)" in r.assumed
    with pytest.raises(InputError, match="framework 'jax'"):
        _csv(tmp_path, framework="jax")
    with pytest.raises(InputError, match="vp 2 needs pp > 1"):
        _csv(tmp_path, vp="2")


def test_shipped_rows_are_the_tools_output():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if not any((p / "shared" / "research" / "llm_fp8_blackwell_runs.csv").exists() for p in root.parents):
        pytest.skip("the shared research copy is not beside this checkout (a mutation-testing copy)")
    r = subprocess.run([sys.executable, str(root / "tools" / "llm_rows.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# issue 23 target: leave-one-source-out median <= 8% and p90 <= 20% on the shipped rows with the FP8 rows (309 rows,
# the 33 GB200/GB300 NVL72 rows included). 2026-12-02: 8.4% / 21.4% (a strict xfail); 2026-12-03: 7.9% / 18.8% once
# the loss's cross-entropy traffic over the vocabulary is charged (18 bytes per logit, counted; 9 bytes would give
# 8.1% / 19.2%); 7.9% / 19.4% with the GB200's measured matmul fractions; SC21 Table 2's ZeRO-3 rows are still up
# to 3.7x off.
def test_leave_one_source_out_target_median_8_p90_20():
    from costopt.perf.llm.ranges import LLM_RESIDUALS_PATH

    res = json.loads(LLM_RESIDUALS_PATH.read_text(encoding="utf-8"))["by_source"]
    e = np.abs(np.expm1(-np.array([x["log_residual"] for x in res])))  # |predicted/measured − 1|
    assert np.median(e) <= 0.08 and np.percentile(e, 90) <= 0.20


def test_context_parallel_by_hand():
    # bf16, cp 2 over the 2 GPUs of a node (1e9 B/s), one micro-batch of b = 2 sequences of 1,000 tokens:
    # each GPU computes 1,000 tokens: half of 3.415808 ms = 1.707904 ms
    # ring: K and V of s/c = 500 tokens, 2·500·2·1024·2 bytes = 4,096,000 B per step, 3·(c − 1) steps per
    # layer, 2 layers: 0.024576 s at 1e9 B/s, less the attention core it hides under (24,576,000 FLOPs per
    # token at 0.25 of 1e15 for 1,000 tokens: 98.304 us): 0.024477696 s exposed
    st = _step(G=2, cp=2.0, lowp=False, params=replace(_params(), overlap_fraction=1.0))
    assert st.t_cp_s[0] == pytest.approx(0.024477696, rel=1e-12)
    assert st.t_compute_s[0] == pytest.approx(1.707904e-3 + 0.024477696, rel=1e-12)
    # the two GPUs are one data-parallel rank: 2 sequences x 1,000 tokens per step
    assert st.tokens_per_s[0] == pytest.approx(2000 / st.t_step_s[0], rel=1e-12)
    # without context parallel the ring term is 0
    assert _step(G=2, lowp=False).t_cp_s[0] == 0.0


def test_predict_llama3_70b_tp8_pp4_vp5_cp2_on_256_h100():
    base = ["predict", "--model", "llama3_70b", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "32",
            "--nic", "ib-ndr", "--nics-per-node", "8", "--strategy", "zero1", "--tp", "8", "--pp", "4", "--vp", "5",
            "--checkpointing", "none", "--format", "json"]
    r = CliRunner().invoke(app, [*base, "--cp", "2"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    one = json.loads(CliRunner().invoke(app, base).output)
    assert d["feasible"] and d["cp"] == 2 and d["vp"] == 5 and d["dp"] == 256 // (8 * 4 * 2)
    # each GPU holds half of every sequence: activations halve; the optimizer shards over the weight replicas
    # (dp x cp = 8 either way), so the states are the same
    assert d["memory_model_states_gb"] == pytest.approx(one["memory_model_states_gb"])
    assert d["memory_activations_gb"] == pytest.approx(one["memory_activations_gb"] / 2, rel=1e-9)
    assert d["tokens_per_s_per_gpu"] > 0 and d["mfu"] > 0 and d["bottleneck"]


def test_ranges_by_evidence_by_hand(tmp_path):
    # a residual file with two GPUs, one precision, one framework:
    # by_source: 9 residuals -0.2 .. 0.2 (Weibull: q10 = the 1st of 9 at j/(n+1) = 0.1: -0.2, q90 the 9th: 0.2)
    # by_gpu: g1 rows at -0.1, g2 rows at +0.1 (medians -0.1, +0.1: sigma_between = 0.141421 with ddof 1);
    # its q10 / q90 over 10 rows (5 + 5): -0.1 / 0.1
    from costopt.perf.llm.ranges import bounds, load_llm_residuals, range_fields

    src = [{"gpu": "g1", "source": "S", "precision": "amp_bf16", "framework": "megatron", "log_residual": v}
           for v in np.linspace(-0.2, 0.2, 9)]
    gpu = ([{"gpu": "g1", "log_residual": -0.1}] * 5) + ([{"gpu": "g2", "log_residual": 0.1}] * 5)
    f = tmp_path / "res.json"
    f.write_text(json.dumps({"by_source": src, "by_gpu": gpu, "date": "2026-12-02", "coverage": {}}))
    load_llm_residuals.cache_clear()
    sd = np.std([-0.1, 0.1], ddof=1)
    one = np.array([1000.0])
    big = np.array([1.0])  # MAMF cap out of the way (MFU 0.1 of a fraction 1)
    # a GPU with runs, its precision and framework: the by_source range, not widened
    r = bounds(one, np.array([0.1]), np.array(["g1"]), big, path=f, precision="amp_bf16", framework="megatron")
    assert (r.low[0], r.high[0]) == pytest.approx((1000 * np.exp(-0.2), 1000 * np.exp(0.2)))
    # a GPU with none: the wider ends of both samples, widened by 1.2816·sd·√1
    r = bounds(one, np.array([0.1]), np.array(["g9"]), big, path=f, precision="amp_bf16", framework="megatron")
    w = 1.2816 * sd
    assert (r.low[0], r.high[0]) == pytest.approx((1000 * np.exp(-0.2 - w), 1000 * np.exp(0.2 + w)))
    # ... and an unseen precision and framework too: √3
    r = bounds(one, np.array([0.1]), np.array(["g9"]), big, path=f, precision="nvfp4", framework="torchtitan")
    w3 = 1.2816 * sd * np.sqrt(3)
    assert (r.low[0], r.high[0]) == pytest.approx((1000 * np.exp(-0.2 - w3), 1000 * np.exp(0.2 + w3)))
    rec = range_fields({"feasible": True, "tokens_per_s": 1000.0, "tokens_per_s_per_gpu": 125.0, "mfu": 0.1,
                        "gpu": "g9", "precision": "nvfp4", "framework": "torchtitan"},
                       float(r.low[0]), float(r.high[0]), int(r.sample[0]), path=f)
    assert "no published run of the g9, nvfp4, torchtitan" in rec["range_basis"]
    load_llm_residuals.cache_clear()


def test_a_gpu_without_runs_gets_a_wider_range_than_one_with():
    # issue 23: the B300 (no published run) must not get a narrower range than the H100 (many)
    base = ["predict", "--model", "llama3_8b", "--gpus-per-node", "8", "--nodes", "1", "--strategy", "fsdp",
            "--format", "json"]
    rel = {}
    for gpu in ("h100-sxm", "b300"):
        d = json.loads(CliRunner().invoke(app, [*base, "--gpu", gpu]).output)
        rel[gpu] = (d["tokens_per_s_low"] / d["tokens_per_s"], d["tokens_per_s_high"] / d["tokens_per_s"])
    assert rel["b300"][0] < rel["h100-sxm"][0]
    d = json.loads(CliRunner().invoke(app, [*base, "--gpu", "b200", "--precision", "nvfp4",
                                            "--framework", "torchtitan"]).output)
    # torchtitan has no published run in the fit; nvfp4 has 8 since the GB200/GB300 NVL72 rows came in (2026-12-02:
    # before them this read "no published run of nvfp4, torchtitan"), so only the framework widens the range
    assert "no published run of torchtitan" in d["range_basis"] and "nvfp4" not in d["range_basis"]
