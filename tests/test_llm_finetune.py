"""Fine-tuning workloads (costopt/perf/llm/finetune.py): full SFT, LoRA, QLoRA.

Each term against a number worked out by hand in this file, on the tiny transformer of test_llm_terms.py
(L = 2, h = 1024, a = a_kv = 8, f = 4096, not gated, P = 1e8 stated, b = 2 sequences of s = 1,000 tokens,
peak 1e15 FLOP/s, matmul fraction 0.5, attention 0.25, memory 1e12 B/s at 0.5, no shape slowdown), plus the
commands: predict and solve answer, and what a fine-tune cannot use is refused (exit 2)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from costopt.cli import app
from costopt.core.errors import InputError
from costopt.perf.llm.arch import ArchArrays, TransformerConfig
from costopt.perf.llm.finetune import (FineTune, adapter_params, block_linear_params, frozen_weight_bytes,
                                       nf4_bytes_per_weight, resolve, split_strategies)
from costopt.perf.llm.memory import LLM_STRATEGIES, finetune_state_parts
from costopt.perf.llm.step import step_time
from test_llm_terms import T_MB, TINY, _params  # noqa: E402

LORA8 = FineTune("lora", 8, "all-linear")
QLORA8 = FineTune("qlora", 8, "all-linear")
# adapters of one layer, all-linear, not gated: Q, K, V, O (1024 + 1024 each) + FFN up (1024 + 4096) and
# down (4096 + 1024) = 8,192 + 10,240 = 18,432 per unit of rank; x r = 8 x L = 2 layers:
P_A = 18_432 * 8 * 2  # 294,912
# LoRA step on one GPU by hand (P = 1e8 frozen + P_a):
# F_model = 4·(1e8 + 294,912) + 2·294,912 + 12·2·1024·1000 = 401,179,648 + 589,824 + 24,576,000 = 426,345,472
# matmul: the weight GEMMs (F_model − F_att = 401,769,472, adapters included: no shape slowdown here) at 0.5,
#   the attention core 24,576,000 at 0.25: (803,538,944 + 98,304,000)·2000/1e15 = 1.803685888 ms
# element-wise: pre-training's 0.8192 ms + the adapters' adds, 6 bytes x (P_a/r = 36,864 elements) per token:
#   6·36,864·2000/(1e12·0.5) = 0.884736 ms
T_MB_LORA = 1.803685888e-3 + 0.8192e-3 + 0.884736e-3


def _step(ft=None, G=1, strategy=0, intra=1e9, ckpt=0, params=None):
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    cfg = TINY if ft is None else TINY.with_finetune(ft)
    return step_time(ArchArrays.of(cfg, 1), params or _params(), peak_flops=one(1e15), mem_bw_bytes_per_s=one(1e12),
                     matmul_fraction=one(0.5), attention_fraction=one(0.25), intra_bytes_per_s=one(intra),
                     node_bytes_per_s=one(1e9), gpus_per_node=one(G), nodes=one(1), strategy=np.array([strategy]),
                     tp=one(1), pp=one(1), micro_batch=one(2), grad_accum=one(1), ckpt=np.array([ckpt]),
                     flash_attention=np.array([True]))


def test_adapter_parameters_by_hand():
    assert adapter_params(TINY, LORA8) == 294_912
    # qkv only: 3 x 2,048 x 8 x 2 = 98,304; attention (+ O): 4 x 2,048 x 8 x 2 = 131,072
    assert adapter_params(TINY, FineTune("lora", 8, "qkv")) == 98_304
    assert adapter_params(TINY, FineTune("lora", 8, "attention")) == 131_072
    # a gated FFN has one more h x f matrix: + 5,120 x 8 x 2 = 376,832
    assert adapter_params(replace(TINY, gated_ffn=True), LORA8) == 376_832
    # Llama 3 70B (h 8192, 8 of 64 KV heads, f 28672, gated, 80 layers), r = 32 on every linear layer:
    # (16,384 + 2·9,216 + 16,384 + 2·36,864 + 36,864)·32·80 = 161,792·2,560 = 414,187,520
    llama = TransformerConfig("l70", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=128256,
                              seq_len=8192, gated_ffn=True)
    assert adapter_params(llama, FineTune("lora", 32, "all-linear")) == 414_187_520
    assert adapter_params(TINY, FineTune("sft")) == 0


def test_lora_flops_per_token_by_hand():
    # 4·P + 2·P_a + 12·L·h·s with P = 1e8 + 294,912: 426,345,472 (above); pre-training 6·1e8 + 24,576,000
    assert TINY.with_finetune(LORA8).model_flops_per_token == pytest.approx(426_345_472, rel=1e-12)
    assert TINY.model_flops_per_token == pytest.approx(624_576_000, rel=1e-12)
    # SFT is pre-training's count
    assert TINY.with_finetune(FineTune("sft")).model_flops_per_token == pytest.approx(624_576_000, rel=1e-12)
    # full recompute adds the forward, adapters included: 2·(1e8 + 294,912) + 24,576,000/3 = 208,781,824
    assert TINY.with_finetune(LORA8).hardware_flops_per_token("full") == pytest.approx(426_345_472 + 208_781_824,
                                                                                       rel=1e-12)


def test_lora_single_gpu_step_by_hand():
    st = _step(LORA8)
    assert st.t_step_s[0] == pytest.approx(T_MB_LORA, rel=1e-12)
    # MFU on the fine-tune's own count: 2000/T · 426,345,472 / 1e15
    assert st.mfu[0] == pytest.approx(2000 / T_MB_LORA * 426_345_472 / 1e15, rel=1e-12)
    assert _step(FineTune("sft")).t_step_s[0] == pytest.approx(T_MB, rel=1e-12)  # SFT = pre-training


def test_lora_adapter_gemm_shape_slowdown_by_hand():
    # c = 42.5: the block GEMMs slow by S = 1 + 42.5·(1 + 1/3)/1024 = 1.055338541..., the adapters' rank-8 GEMMs
    # by S_a = 1 + 42.5·(1/8 + 1/1024) = 6.353759765625; adapters 6·294,912 = 1,769,472 FLOPs per token
    p = replace(_params(), gemm_shape_dims=42.5)
    s_blk = 1 + 42.5 * (4 / 3) / 1024
    s_a = 1 + 42.5 * (1 / 8 + 1 / 1024)
    matmul = ((401_769_472 - 1_769_472) * s_blk / 0.5 + 1_769_472 * s_a / 0.5 + 24_576_000 / 0.25) * 2000 / 1e15
    assert _step(LORA8, params=p).t_step_s[0] == pytest.approx(matmul + 0.8192e-3 + 0.884736e-3, rel=1e-12)


def test_lora_gradient_all_reduce_carries_adapters_only():
    # ddp over 2 GPUs at 10 MB/s: all-reduce of 4·P_a = 1,179,648 bytes: 2·(1/2)·1,179,648/1e7 = 0.1179648 s,
    # hidden under the backward 2T/3 (o = 1): exposed 0.1179648 − 2/3·3.507621888 ms = 0.115626385408 s
    st = _step(LORA8, G=2, intra=1e7)
    assert st.t_dp_exposed_s[0] == pytest.approx(0.1179648 - 2 / 3 * T_MB_LORA, rel=1e-12)
    # pre-training all-reduces 4·1e8 bytes: 40 s at that rate, not 0.118
    assert _step(None, G=2, intra=1e7).t_dp_exposed_s[0] == pytest.approx(40.0 - 2 / 3 * T_MB, rel=1e-12)


def test_lora_fsdp_gathers_frozen_weights_by_hand():
    # fsdp over 2 GPUs at 1 GB/s: every micro-batch all-gathers every weight in bf16, 2·(1e8 + 294,912) =
    # 200,589,824 bytes, (1/2)·200,589,824/1e9 = 0.100294912 s forward and again backward; the reduce-scatter
    # carries the adapters' 4·P_a: (1/2)·1,179,648/1e9 = 0.000589824 s. Exposed (o = 1):
    # (0.100294912 − T/3) + (0.100294912 + 0.000589824 − 2T/3) = 0.201179648 − T: the step is 0.201179648 s
    assert _step(LORA8, G=2, strategy=3).t_step_s[0] == pytest.approx(0.201179648, rel=1e-12)


def test_qlora_bytes_and_dequantization_by_hand():
    # NF4 with double-quantized constants: (4 + 0.127)/8 = 0.515875 bytes per weight
    assert nf4_bytes_per_weight() == pytest.approx(0.515875, rel=1e-12)
    # block linears: 2·(4·1024² + 2·1024·4096) = 25,165,824; the other 74,834,176 of P = 1e8 stay bf16:
    # b_f = (0.515875·25,165,824 + 2·74,834,176)/1e8 = 1.62650771456
    assert block_linear_params(TINY) == 25_165_824
    assert frozen_weight_bytes(TINY, QLORA8) == pytest.approx(1.62650771456, rel=1e-12)
    # dequantization before each use: read 0.515875 + write 2 bytes per quantized weight, twice per micro-batch
    # (forward, input gradient): 2·2.515875·25,165,824/(1e12·0.5) = 0.253256269824 ms over LoRA's step
    assert _step(QLORA8).t_step_s[0] == pytest.approx(T_MB_LORA + 0.253256269824e-3, rel=1e-12)
    # three uses under full recompute
    gap = _step(QLORA8, ckpt=2).t_step_s[0] - _step(LORA8, ckpt=2).t_step_s[0]
    assert gap == pytest.approx(3 * 2.515875 * 25_165_824 / 0.5e12, rel=1e-9)
    # fsdp over 2 GPUs gathers the NF4 storage: b_f·1e8 + 2·P_a = 163,240,595.456 bytes, (1/2)/1e9 s each way
    # (plus the dequantization inside T): the step is 2·0.081620297728 + 0.000589824 = 0.163830419456 s
    assert _step(QLORA8, G=2, strategy=3).t_step_s[0] == pytest.approx(0.163830419456, rel=1e-12)


def _parts(ft, strategy, dp):
    arch = ArchArrays.of(TINY.with_finetune(ft), 1)
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    return {k: float(v[0]) for k, v in finetune_state_parts(arch, one(1), one(1), np.array([LLM_STRATEGIES.index(strategy)]),
                                                              one(dp), one(dp)).items()}


def test_lora_memory_by_part_by_hand():
    # ddp on one GPU: frozen bf16 2·1e8; adapters' weights + gradients 4·294,912; their Adam 12·294,912
    m = _parts(LORA8, "ddp", 1)
    assert m["frozen_weights"] == pytest.approx(2e8, rel=1e-12)
    assert m["adapters"] == pytest.approx(1_179_648, rel=1e-12)
    assert m["optimizer"] == pytest.approx(3_538_944, rel=1e-12)
    assert m["total"] == pytest.approx(2e8 + 1_179_648 + 3_538_944, rel=1e-12)
    # fsdp over 4: frozen 2e8/4 + two gathered layers of the two (2·2·1e8/2); adapters 16·P_a/4 + 4·P_a/2 less their
    # Adam 12·P_a/4: 1,769,472 − 884,736 = 884,736
    m = _parts(LORA8, "fsdp", 4)
    assert m["frozen_weights"] == pytest.approx(5e7 + 2e8, rel=1e-12)
    assert m["optimizer"] == pytest.approx(884_736, rel=1e-12)
    assert m["adapters"] == pytest.approx(884_736, rel=1e-12)
    # zero1 over 4: frozen whole (2e8), Adam sharded 12·P_a/4, weights + gradients 4·P_a
    m = _parts(LORA8, "zero1", 4)
    assert (m["frozen_weights"], m["adapters"], m["optimizer"]) == pytest.approx((2e8, 1_179_648, 884_736), rel=1e-12)


def test_qlora_memory_by_hand():
    # ddp: b_f·1e8 = 162,650,771.456 in NF4 + bf16, plus one dequantized layer in bf16 (2·1e8/2 layers = 1e8)
    m = _parts(QLORA8, "ddp", 1)
    assert m["frozen_weights"] == pytest.approx(162_650_771.456 + 1e8, rel=1e-12)


def test_strategy_rule_and_refusals():
    assert split_strategies(["lora", "fsdp"]) == ("lora", ["fsdp"])
    assert split_strategies(["zero1"]) == (None, ["zero1"])
    with pytest.raises(InputError, match="one fine-tune"):
        split_strategies(["lora", "qlora"])
    with pytest.raises(InputError, match="--lora-rank"):
        resolve(None, rank=8)
    with pytest.raises(InputError, match="--lora-targets"):
        resolve("sft", targets="qkv")
    with pytest.raises(InputError, match="--lora-targets"):
        resolve("lora", targets="mlp-only")
    ft = resolve("lora")
    assert (ft.rank, ft.targets) == (32, "all-linear")  # NeMo 2.0 / Megatron-Bridge defaults (data/finetune.toml)
    assert ft.defaults == ("rank 32", "targets all-linear")


def _cli(*args):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return r.exit_code, r.output


PREDICT_70B = ["predict", "--model", "llama3_70b", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "1"]


def test_predict_llama3_70b_lora_on_one_node():
    rc, out = _cli(*PREDICT_70B, "--strategy", "lora", "--format", "json")
    assert rc == 0, out
    d = json.loads(out)
    assert d["finetune"] == "lora" and d["lora_rank"] == 32 and d["lora_targets"] == "all-linear"
    assert d["trainable_params"] == 414_187_520
    assert d["strategy_rule"].startswith("no layout named")
    for k in ("memory_frozen_weights_gb", "memory_adapters_gb", "memory_optimizer_gb", "memory_activations_gb"):
        assert d[k] > 0
    # the parts add up to the memory per GPU
    assert d["memory_frozen_weights_gb"] + d["memory_adapters_gb"] + d["memory_optimizer_gb"] \
        + d["memory_activations_gb"] == pytest.approx(d["memory_per_gpu_gb"], rel=1e-9)
    # frozen bf16 weights of 70.55e9 parameters cannot sit whole on one 80 GB GPU (141 GB): sharded or split
    assert d["strategy"] in ("fsdp", "hsdp") or d["tp"] * d["pp"] > 1
    assert "4·P + 2·P_a" in d["mfu_basis"] and d["bottleneck"]
    assert "lora fine-tuning" in d["range_basis"]  # widened: no fine-tuning run in the fit
    rc, text = _cli(*PREDICT_70B, "--strategy", "lora")
    assert rc == 0 and "frozen weights" in text and "MFU basis" in text and "rank 32" in text


def test_predict_refuses_what_a_finetune_cannot_use():
    cases = [(["--strategy", "qlora", "--precision", "fp8"], "no fp8 path"),
             (["--strategy", "qlora", "--tp", "2"], "tensor, pipeline or context"),
             (["--strategy", "qlora", "--framework", "megatron"], "--framework megatron"),
             (["--strategy", "fsdp", "--lora-rank", "8"], "--lora-rank"),
             (["--strategy", "sft", "--lora-targets", "qkv"], "--lora-targets"),
             (["--strategy", "lora", "--strategy", "qlora"], "one fine-tune"),
             (["--strategy", "lora", "--strategy", "fsdp", "--strategy", "ddp"], "one layout")]
    for extra, words in cases:
        rc, out = _cli(*PREDICT_70B, *extra)
        assert rc == 2, (extra, out)
        assert words in out and "Traceback" not in out, (extra, out)
    rc, out = _cli("predict", "--model", "inception_v3", "--gpu", "l40s", "--gpus-per-node", "4", "--nodes", "1",
                   "--strategy", "ring", "--lora-rank", "8")
    assert rc == 2 and "--lora-rank" in out


def test_qlora_fits_70b_on_one_gpu_where_lora_does_not():
    # QLoRA paper's point: NF4 70B (about 36 GB + bf16 embeddings) fits whole on one 80 GB GPU (ddp: every GPU a
    # replica); bf16 LoRA's 141 GB of frozen weights do not
    one = ["predict", "--model", "llama3_70b", "--gpu", "h100-sxm", "--gpus-per-node", "4", "--nodes", "1",
           "--seq-len", "4096", "--strategy", "ddp", "--format", "json"]
    rc, out = _cli(*one, "--strategy", "qlora")
    assert rc == 0, out
    assert json.loads(out)["memory_frozen_weights_gb"] < 45
    rc, out = _cli(*one, "--strategy", "lora")
    assert rc == 1 and "does not fit" in out


def test_solve_lora_answers_and_honours_limits():
    base = ["solve", "--budget", "2000000", "--model", "llama3_70b", "--strategy", "lora", "--tokens", "1e9",
            "--gpu", "h100-sxm", "--max-nodes", "4", "--format", "json"]
    rc, out = _cli(*base)
    assert rc == 0, out
    d = json.loads(out)
    assert d["finetune"] == "lora" and d["best"]["finetune"] == "lora" and d["best"]["hours_to_train"] > 0
    # a power limit below the pick's power binds: every design shown within it
    cap = d["best"]["power_kw"] * 0.6
    rc, out = _cli(*base, "--max-power-kw", f"{cap:.3f}")
    if rc == 0:
        assert json.loads(out)["best"]["power_kw"] <= cap
    else:
        assert rc == 1
    # QLoRA's layouts have no tensor or pipeline parallel
    rc, out = _cli(*base[:6], "qlora", *base[7:])
    assert rc == 0, out
    b = json.loads(out)["best"]
    assert b["tp"] == 1 and b["pp"] == 1 and b["framework"] == "fsdp"


# ---- accuracy on the published fine-tuning runs (costopt/data/validation/llm_finetune.csv, never fitted):
# NVIDIA NeMo 24.07 performance summary, 'Finetuning' table (NVIDIA/NeMo docs/source/performance/
# performance_summary.md @ 8e3d65dcfe: Llama 2 7B/13B/70B SFT and LoRA, FP8, DGX-H100, packed 4096) and the
# Megatron-Bridge 26.06 'SFT Performance' / 'LoRA Performance' tables (NVIDIA-NeMo/Megatron-Bridge
# docs/performance-summary-archive.md @ 067f987df0: Llama 3 70B on DGX-H100, GB200, GB300)
def test_finetune_rows_read_and_predicted():
    from costopt.measure.llm_finetune_errors import finetune_errors

    recs = finetune_errors()
    assert len(recs) == 12
    assert {r["finetune"] for r in recs} == {"sft", "lora"}
    # transcribed measurements (the tables above)
    assert [r["measured_tokens_per_s_per_gpu"] for r in recs if r["source"] == "NEMO_2407_FT"] == \
        [16891, 10176, 1816, 24824, 14629, 2621]
    assert all(r["error_out_of_sample_pct"] is not None for r in recs)
    # LoRA computes 4·P instead of 6·P per token on the same layout (Llama 2 7B, 8 GPUs, tp 1 pp 1): faster, by
    # less than 6/4 (attention and element-wise work are not cut); NeMo measured 24,824 / 16,891 = 1.47
    sft, lora = recs[0]["predicted_out_of_sample"], recs[3]["predicted_out_of_sample"]
    assert 1.0 < lora / sft < 1.5


@pytest.mark.xfail(strict=True, reason="fine-tuning rows out of sample (leave-one-source-out folds): median |error| "
                                       "13.3% (p90 18.5%) on 2026-12-02, 13.1% (p90 17.4%) on 2026-12-03, against the issue's 8% / 20%; "
                                       "LoRA rows 9-17% low: attention "
                                       "is charged over the whole packed 4096 tokens, the runs attend within each "
                                       "packed SQuAD sample (not modelled)")
def test_finetune_rows_out_of_sample_target():
    from costopt.measure.llm_finetune_errors import finetune_errors, summary

    s = summary(finetune_errors(), "error_out_of_sample_pct")["all"]
    assert s["median"] <= 8.0 and s["p90"] <= 20.0


def test_validate_command_reads_the_finetune_file():
    rc, out = _cli("validate", "llm_finetune", "--format", "json")
    assert rc == 0, out[-2000:]
    d = json.loads(out)
    assert d["summary"]["predicted"] == 12
    assert {r.get("finetune") for r in d["rows"]} == {"sft", "lora"}
    r = next(x for x in d["rows"] if x["line"] == 5)
    assert r["predicted_high_tokens_per_s_per_gpu"] > r["predicted_tokens_per_s_per_gpu"] > \
        r["predicted_low_tokens_per_s_per_gpu"]


def test_finetune_range_is_wider():
    # a fine-tune is a feature with no run among the residuals (ranges.py): both ends move out by
    # exp(±1.2816·σ_between), σ_between > 0 (the spread of the per-GPU medians); MFU 0.3 keeps the cap away
    from costopt.perf.llm.ranges import bounds, load_llm_residuals

    args = (np.array([1000.0]), np.array([0.3]), np.array(["h100-sxm"]), np.array([0.9]))
    pre, ft = bounds(*args), bounds(*args, finetune="lora")
    w = np.exp(1.2816 * load_llm_residuals().between_sd)
    assert ft.low[0] == pytest.approx(pre.low[0] / w, rel=1e-12)
    assert ft.high[0] == pytest.approx(pre.high[0] * w, rel=1e-12)
