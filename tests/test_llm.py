"""Large-model path (costopt/perf/llm/): architecture counts, memory, step time, search, validation.

References are published figures or numbers worked out by hand in this file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from costopt.perf.llm.arch import ArchArrays, TransformerConfig, config_from_dict, load_llm_model
from costopt.perf.llm.memory import activation_bytes, model_state_bytes

CLI = [sys.executable, "-m", "costopt"]


def run(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


# --- architecture -------------------------------------------------------------------------------

@pytest.mark.parametrize("model, published", [
    ("llama3_8b", 8.03e9),     # Meta Llama 3 model card: 8.03B parameters
    ("llama3_70b", 70.55e9),   # Meta Llama 3 model card: 70.55B
    ("llama2_13b", 13.016e9),  # meta-llama/Llama-2-13b-hf: 13,015,864,320
    ("gpt3_175b", 174.6e9),    # Narayanan et al. 2021, Table 2: GPT-3 175B = 174.6B parameters
    ("gpt2", 124.4e9 / 1e3),   # GPT-2 small: 124.4M with its 0.79M position embeddings (left out here)
])
def test_parameter_counts_match_published(model, published):
    assert load_llm_model(model).params == pytest.approx(published, rel=0.008)


def test_model_flops_per_token_mpt70b_by_hand():
    # llm-foundry benchmark table, H100 BF16 large scale, MPT-70b: 1,007 tokens/s per GPU at MFU 41.25%.
    cfg = TransformerConfig("mpt-70b", layers=80, hidden=8192, heads=64, kv_heads=64, ffn_hidden=4 * 8192,
                            vocab=50368, seq_len=2048, params_override=64_862_437_376)
    flops = 6 * 64_862_437_376 + 12 * 80 * 8192 * 2048  # = 389,174,624,256 + 16,106,127,360
    assert cfg.model_flops_per_token == flops == 405_280_751_616
    assert 1007 * flops / 989e12 == pytest.approx(0.4125, abs=0.001)
    # full recompute runs the forward twice: + 2P + 4·L·h·s, i.e. 4/3 of the model FLOPs
    assert cfg.hardware_flops_per_token("full") == pytest.approx(flops * 4 / 3)
    assert cfg.hardware_flops_per_token("selective") == flops + 4 * 80 * 8192 * 2048


def test_model_config_is_strict(tmp_path):
    with pytest.raises(Exception, match="unknown key"):
        config_from_dict({"layers": 2, "hidden": 64, "heads": 4, "ffn_hidden": 256, "vocab": 10, "seq_len": 8,
                          "source": "x", "hiddn": 3}, "m.toml")
    bad = tmp_path / "m.toml"
    bad.write_text('layers = 2\nhidden = 64\nheads = 5\nffn_hidden = 256\nvocab = 10\nseq_len = 8\nsource = "x"\n')
    r = run("predict", "--model-config", str(bad), "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "1",
            "--strategy", "fsdp")
    assert r.returncode == 2 and "heads must divide hidden" in r.stderr and "Traceback" not in r.stderr


# --- memory --------------------------------------------------------------------------------------

def test_zero_paper_table1_model_states():
    # Rajbhandari et al. 2020 (ZeRO), Table 1: 7.5B parameters, 64-way data parallel, per-device memory
    # of model states: baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.88 GB.
    P = np.full(4, 7.5e9)
    got = model_state_bytes(P, np.array([0, 1, 2, 3]), np.full(4, 64), np.full(4, 64), np.full(4, 1e15)) / 1e9
    assert got == pytest.approx([120.0, 31.4, 16.6, 1.88], rel=0.01)


def test_activation_bytes_by_hand():
    # one layer, s = 2048, b = 1, h = 12288, t = 8 (GPT-3 shape, Korthikanti et al. 2022 §4):
    # selective: 34·s·b·h/t = 106,954,752 bytes; logits 4·s·b·V/t with V = 8: 8,192 bytes
    arch = ArchArrays(*(np.array([v], dtype=float) for v in (1, 12288, 96, 8, 2048, 1e9)))
    sel = activation_bytes(arch, np.array([1]), np.array([8]), np.array([1]))
    assert sel[0] == 106_954_752 + 8_192
    # full checkpointing keeps 2·s·b·h/t of the layer input plus one layer's 34·s·b·h/t while recomputing
    full = activation_bytes(arch, np.array([1]), np.array([8]), np.array([2]))
    assert full[0] == 2 * 2048 * 12288 / 8 + 106_954_752 + 8_192


# --- step time -----------------------------------------------------------------------------------

# the tiny model, its parameters and the hand-derived one-GPU step: one definition, in test_llm_terms
from test_llm_terms import T_MB, _step  # noqa: E402


def test_single_gpu_step_by_hand():
    st = _step()
    assert st.t_step_s[0] == pytest.approx(T_MB, rel=1e-12)
    assert st.tokens_per_s[0] == pytest.approx(2000 / T_MB, rel=1e-12)
    assert st.mfu[0] == pytest.approx(2000 / T_MB * 624_576_000 / 1e15, rel=1e-12)


def test_fsdp_exposed_communication_by_hand():
    # 2 GPUs in a node at 1 GB/s each way, P = 1e8: all-gather of 2·P bytes: (1/2)·2e8/1e9 = 0.1 s (forward
    # and again in backward); reduce-scatter of 4·P bytes: (1/2)·4e8/1e9 = 0.2 s. Fully overlappable with
    # compute (o = 1): exposed = (0.1 − T/3) + (0.1 + 0.2 − 2T/3) = 0.4 − T, so the step is exactly 0.4 s.
    st = _step(G=2, strategy=3)
    assert st.t_step_s[0] == pytest.approx(0.4, rel=1e-12)
    assert st.tokens_per_s[0] == pytest.approx(2 * 2000 / 0.4, rel=1e-12)


def test_ddp_all_reduce_by_hand():
    # all-reduce of 4·P = 4e8 bytes over 2 GPUs: 2·(1/2)·4e8/1e9 = 0.4 s, hidden under the backward 2T/3
    st = _step(G=2, strategy=0)
    assert st.t_step_s[0] == pytest.approx(T_MB + 0.4 - 2 * T_MB / 3, rel=1e-12)


def test_tensor_parallel_by_hand():
    # t = 2: compute per GPU halves; 4 all-reduces per layer of b·s·h·2 = 4,096,000 bytes, each
    # 2·(1/2)·4,096,000/1e9 = 4.096 ms, over 2 layers: 32.768 ms, not overlapped
    st = _step(G=2, tp=2)
    assert st.t_tp_s[0] == pytest.approx(0.032768, rel=1e-12)
    assert st.t_step_s[0] == pytest.approx(T_MB / 2 + 0.032768, rel=1e-12)


def test_pipeline_bubble_and_p2p_by_hand():
    # p = 2 on 2 GPUs, m = 4 micro-batches: compute 4·T/2, bubble (p−1)/m of it; p2p (m + p − 1)·2·b·s·h·2/t
    # = 5·2·4,096,000 / 1e9 = 40.96 ms (inside one node: the intra-node link)
    st = _step(G=2, pp=2, m=4)
    assert st.t_bubble_s[0] == pytest.approx(4 * T_MB / 2 / 4, rel=1e-12)
    assert st.t_pp_s[0] == pytest.approx(0.04096, rel=1e-12)
    assert st.t_step_s[0] == pytest.approx(4 * T_MB / 2 * 1.25 + 0.04096, rel=1e-12)


def test_never_faster_than_the_peak():
    # every zoo transformer on every catalog GPU with a bf16 peak, 1 node, fsdp, no recompute:
    # tokens/s per GPU × hardware FLOPs per token must stay below the GPU's dense bf16 peak
    from costopt.hardware.catalog import load_catalog
    from costopt.search.design_space import enumerate_designs
    from costopt.perf.llm.arch import list_llm_models
    from costopt.perf.llm.evaluate import Layout, evaluate_layouts

    cat = load_catalog(None)
    space = enumerate_designs(cat, max_nodes=1, strategies=("ring",))
    bf16 = np.array([cat.gpus[g.id].tflops_bf16 is not None for g in space.gpus])[space.gpu_idx]
    space = space.take(np.flatnonzero(bf16))
    n = len(space)
    peak = np.array([(g.tflops_bf16 or 0) * 1e12 for g in space.gpus])[space.gpu_idx]
    for name in list_llm_models():
        cfg = load_llm_model(name)
        lay = Layout(np.full(n, 3), np.ones(n, int), np.ones(n, int), np.ones(n, int), np.zeros(n, int))
        ev = evaluate_layouts(cfg, space, lay, precision="amp_bf16", global_batch=64)
        ok = ev.valid
        implied = ev.timing.tokens_per_s_per_gpu[ok] * cfg.hardware_flops_per_token("none")
        assert np.all(implied <= peak[ok]), name


# --- commands ------------------------------------------------------------------------------------

def test_predict_llama3_8b_fsdp_json():
    r = run("predict", "--model", "llama3_8b", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "1",
            "--nic", "ib-ndr", "--strategy", "fsdp", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["strategy"] == "fsdp" and d["feasible"] is True
    assert 0 < d["mfu"] < 1 and d["tokens_per_s_per_gpu"] > 0
    assert d["memory_per_gpu_gb"] <= d["memory_limit_gb"] < 80
    assert d["memory_per_gpu_gb"] == pytest.approx(d["memory_model_states_gb"] + d["memory_activations_gb"])
    # fsdp over 8 GPUs: 16 bytes x 8.03e9 / 8 = 16.06 GB of states + two layers of bf16 weights
    assert d["memory_model_states_gb"] == pytest.approx(16 * 8.030261248 / 8 + 2 * 2 * 8.030261248 / 32, rel=1e-6)


def test_predict_replica_that_does_not_fit_says_why():
    r = run("predict", "--model", "llama3_8b", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "1",
            "--nic", "ib-ndr", "--strategy", "ring")
    assert r.returncode == 1
    assert "does not fit" in r.stderr and "16 bytes per parameter" in r.stderr and "GB usable of 80 GB" in r.stderr
    # 16 bytes per parameter alone is 128.5 GB
    assert "Adam states 128.5 GB" in r.stderr


def test_solve_large_model_restricted():
    from costopt.search.llm_search import solve_llm

    res = solve_llm(5_000_000, "llama3_70b", tokens=1e11, gpus=["h100-sxm", "h200-sxm"], max_nodes=32)
    b = res["best"]
    assert b["feasible"] and b["cost_usd"] <= 5_000_000
    assert b["memory_per_gpu_gb"] <= b["memory_limit_gb"]
    assert b["hours_to_train"] == pytest.approx(1e11 / b["tokens_per_s"] / 3600)
    assert b["strategy"] in ("ddp", "zero1", "zero2", "fsdp", "hsdp") and b["tp"] >= 1 and b["pp"] >= 1
    # a replica of 70B with Adam (1.13 TB) fits no GPU: the answer must be sharded or model parallel
    assert b["strategy"] != "ddp" or b["tp"] * b["pp"] >= 16


def test_large_model_solve_applies_the_part_filter():
    from costopt.hardware.catalog import load_catalog
    from costopt.search.llm_search import solve_llm

    cat = load_catalog(None)
    res = solve_llm(400_000, "llama_1b", max_nodes=2)
    for d in [res["best"], *res["best_per_gpu"]]:
        g = cat.gpus[d["gpu"]]
        assert g.segment in ("datacenter", "workstation") and g.lifecycle == "current", d["gpu"]
    assert res["designs_left_out_by_part_filter"] > 0


def test_validate_llm_rows_and_skips():
    r = run("validate", "llm_training", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    s = d["summary"]
    # 263 rows of the research copy + 26 FP8 rows of NeMo 24.07 and Megatron-Bridge on H100/B200 + 33 Megatron-Bridge
    # rows on GB200/GB300 NVL72 (tools/llm_rows.py)
    assert s["rows"] == 322 and s["predicted"] + s["skipped"] == 322
    reasons = {x["skipped"] for x in d["rows"] if x["skipped"]}
    assert reasons == {"no measured tokens/s per GPU"}  # fp8 and context-parallel rows are predicted
    # in sample (the compute fractions are fitted on these rows): llm-foundry benchmark README tables,
    # Megatron-LM README 2020 and Korthikanti et al. 2022
    assert s["median_abs_error_pct"] <= 10.0


def test_llm_leave_one_source_out_median():
    # issue 14: leave-one-source-out on the shipped rows (llm-foundry benchmark README tables, Megatron-LM
    # README 2020, Korthikanti et al. 2022), median |error| of tokens/s per GPU at most 10%
    from costopt.measure.llm_fit import leave_one_source_out
    from costopt.measure.llm_validate import LLM_DATASET, read_llm_csv

    recs = leave_one_source_out(read_llm_csv(LLM_DATASET))
    e = np.array([r["error_pct"] for r in recs if r.get("error_pct") is not None])
    assert np.median(np.abs(e)) <= 10.0


# one valid row of the LLM measurement CSV (a 1.3B model, FSDP on 8 x A100 80GB), for the column checks
CSV_ROW = {"source": "S", "model": "m", "params_b": "1.3", "layers": "24", "hidden": "2048", "heads": "16",
           "seq_len": "2048", "gpu": "a100-sxm-80gb", "gpus_per_node": "8", "nodes": "1", "total_gpus": "8",
           "precision": "amp_bf16", "dp_strategy": "fsdp", "tp": "1", "pp": "1", "cp": "1",
           "micro_batch_per_gpu": "8", "global_batch": "64", "activation_checkpointing": "none", "compile": "",
           "measured_tokens_per_s_per_gpu": "20000", "measured_mfu": "", "interconnect": "", "notes": ""}

def test_llm_csv_attention_column(tmp_path):
    # the optional `attention` column: absent -> flash, listed as assumed; a wrong value is one clear error
    from costopt.core.errors import InputError
    from costopt.measure.llm_validate import COLUMNS, read_llm_csv

    row = dict(CSV_ROW)

    def write(name, cols, extra):
        f = tmp_path / name
        f.write_text(",".join(cols) + "\n" + ",".join({**row, **extra}.get(c, "") for c in cols) + "\n")
        return f

    plain = read_llm_csv(write("a.csv", COLUMNS, {}))[0]
    assert plain.flash and "attention flash (not stated)" in plain.assumed
    unfused = read_llm_csv(write("b.csv", (*COLUMNS, "attention"), {"attention": "unfused"}))[0]
    assert not unfused.flash and "attention" not in unfused.assumed
    with pytest.raises(InputError, match="attention 'sdpa'"):
        read_llm_csv(write("c.csv", (*COLUMNS, "attention"), {"attention": "sdpa"}))


def test_shipped_attention_column_by_source():
    # llm_training_sources.md: llm-foundry ran FlashAttention (--attn_impl flash); Megatron-LM 2020-2022 and
    # DeepSpeed 2022 ran before FlashAttention reached them
    from costopt.measure.llm_validate import LLM_DATASET, read_llm_csv

    want = {"LLMF_BENCH": True, "MCORE_README_2024": True, "MLM_README_2020": False, "MLM_SC21_T1": False,
            "MLM_SC21_T2": False, "MLM_README_2022_SP": False, "DS_AZURE_2022": False,
            "NEMO_2407": True, "MBRIDGE": True}  # Transformer Engine's fused attention
    rows = read_llm_csv(LLM_DATASET)
    assert {r.source for r in rows} == set(want)
    assert all(r.flash == want[r.source] for r in rows)


def test_large_model_why_says_which_prices_are_estimates():
    """The reference catalog lists `price_usd` under `estimates` for the MI355X (no public list price) and
    not for the H200 SXM; the Why sentence a buyer reads names the estimated prices of the pick's parts."""
    import tomllib
    from costopt.search.llm_search import solve_llm
    cat = tomllib.loads((Path(__file__).parents[1] / "costopt" / "catalogs" / "reference-2026.toml").read_text())
    est = {e["id"] for kind in ("gpu", "chassis", "nic") for e in cat[kind] if "price_usd" in e.get("estimates", [])}
    assert "mi355x" in est and "h200-sxm" not in est
    for gpu in ("mi355x", "h200-sxm"):
        out = solve_llm(2_000_000, "llama3_8b", gpus=[gpu])
        b = out["best"]
        parts = [b["gpu"], b["chassis"]] + ([b["nic"]] if b.get("nic") else [])
        named = [p for p in parts if p in est]
        if named:
            tail = out["why"].split("the price")[-1]
            assert all(p in tail for p in named) and "estimate" in tail, out["why"]
        else:
            assert "is an estimate, not a quote" not in out["why"] and "are estimates, not quotes" not in out["why"]
        assert (gpu in named) == (gpu == "mi355x")
