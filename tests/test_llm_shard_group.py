"""Shard groups (HSDP with a chosen group, partial ZeRO-1; perf/llm/step.py and memory.py) by hand, and what
`predict` prints for every large-model answer (tokens/s per GPU, MFU and its FLOP convention, memory per GPU by
part, the largest time term)."""

from __future__ import annotations

import numpy as np
import pytest

from costopt.core.errors import CostoptError, InputError
from costopt.perf.llm.evaluate import default_llm_params
from costopt.perf.llm.memory import LLM_STRATEGIES, model_state_bytes
from costopt.perf.llm.step import _data_parallel_s
from costopt.search.llm_search import predict_llm

HSDP, FSDP, ZERO1 = (LLM_STRATEGIES.index(s) for s in ("hsdp", "fsdp", "zero1"))


def _dp(strat, shard, m=1.0):
    """P_s = 1e9 parameters per GPU, 64 replicas on 8-GPU nodes (d = 64, g = 8, M_d = 8), NVLink 360e9 B/s, a node's
    NICs 400e9 B/s, no latency, nothing hidden (t_fwd = t_bwd = 0), the memory-traffic term made negligible."""
    one = lambda v: np.array([float(v)])  # noqa: E731
    return float(_data_parallel_s(one(1e9), np.array([strat]), one(64), one(8), one(8), one(8), one(m), one(0), one(0),
                                  2.0, one(360e9), one(400e9), 0.0, default_llm_params(), one(1e30),
                                  shard_group=one(shard))[0])


def test_hsdp_shard_group_of_two_nodes_by_hand():
    # S = 16: g_S = 8 ranks per node over m_S = 2 nodes; R = 4 groups, one rank per node each (g_R = 1, m_R = 4).
    # all-gather of X = 2e9 bytes: 7/8·2e9/360e9 + 1/2·2e9·(8/8)/400e9 = 4.8611e-3 + 2.5e-3 = 7.3611e-3 s
    # reduce-scatter of 4e9: 7/8·4e9/360e9 + 1/2·4e9/400e9 = 9.7222e-3 + 5e-3 = 14.7222e-3 s
    # all-reduce across of the 4e9/16 shard: 2·3/4·0.25e9·8/400e9 = 7.5e-3 s
    # per step with m = 4 micro-batches: 4·(7.3611 + 7.3611 + 14.7222)e-3 + 7.5e-3 = 125.278e-3 s
    assert _dp(HSDP, 16, m=4) == pytest.approx(0.125278, rel=1e-4)
    # fsdp over all 64 (S = d): the gathers cross 8 nodes: all-gather 4.8611e-3 + 7/8·2e9/400e9 = 9.2361e-3,
    # reduce-scatter 9.7222e-3 + 8.75e-3 = 18.4722e-3; 4·(2·9.2361 + 18.4722)e-3 = 147.778e-3 s
    assert _dp(FSDP, 0, m=4) == pytest.approx(0.147778, rel=1e-4)
    # hsdp's own group (one node, S = 0 -> g = 8): gathers on NVLink only, 4·(2·4.8611 + 9.7222)e-3 = 77.778e-3,
    # plus the all-reduce of the 1/8 shard over 8 nodes: 2·7/8·0.5e9·8/400e9 = 17.5e-3 -> 95.278e-3 s
    assert _dp(HSDP, 0, m=4) == pytest.approx(0.095278, rel=1e-4)
    assert _dp(HSDP, 8, m=4) == pytest.approx(_dp(HSDP, 0, m=4), rel=1e-12)


def test_partial_zero1_by_hand():
    # zero1 over S = 16 of 64: reduce-scatter in the group 14.7222e-3 + all-reduce of the shard across 7.5e-3, then
    # the all-gather of 2e9 in the group 7.3611e-3: 29.583e-3 s; plain zero1 (S = d): 18.4722e-3 + 9.2361e-3
    assert _dp(ZERO1, 16) == pytest.approx(0.029583, rel=1e-4)
    assert _dp(ZERO1, 0) == pytest.approx(0.027708, rel=1e-4)


def test_shard_group_memory_by_hand():
    # 1e9 parameters per GPU, 80 layers per stage: hsdp over 16: 16e9/16 + two gathered layers 2·2e9/80 = 1.05e9;
    # zero1 over 16 (S passed as its dp): 4e9 + 12e9/16 = 4.75e9
    P = np.array([1e9])
    assert model_state_bytes(P, np.array([HSDP]), np.array([64.0]), np.array([16.0]), np.array([80.0]))[0] == \
        pytest.approx(1.05e9)
    assert model_state_bytes(P, np.array([ZERO1]), np.array([16.0]), np.array([8.0]), np.array([80.0]))[0] == \
        pytest.approx(4.75e9)


_H100 = dict(gpu="h100-sxm", gpus_per_node=8, nic="ib-ndr", nics_per_node=8)


def test_predict_hsdp_with_a_shard_group():
    # 128 GPUs, tp 2 x pp 4: 16 weight replicas, 4 of them per node (hsdp's own group)
    kw = dict(nodes=16, strategy="hsdp", tp=2, pp=4, micro_batch=1, checkpointing="full", **_H100)
    a = predict_llm("llama3_70b", **kw)
    b = predict_llm("llama3_70b", shard_group=8, **kw)
    assert (a["shard_group"], a["shard_groups"]) == (4, 4) and (b["shard_group"], b["shard_groups"]) == (8, 2)
    # 70.55e9 parameters over tp x pp = 8: 16 bytes each over 4 vs over 8 replicas
    assert a["memory_model_states_gb"] - b["memory_model_states_gb"] == pytest.approx(16 * 70.55 / 8 * (1 / 4 - 1 / 8),
                                                                                      rel=0.01)
    with pytest.raises(InputError):
        predict_llm("llama3_70b", **{**kw, "strategy": "fsdp"}, shard_group=8)
    with pytest.raises(CostoptError, match="shard group"):
        predict_llm("llama3_70b", shard_group=6, **kw)  # 6 does not divide 16


def test_predict_without_a_layout_prints_throughput_mfu_memory_parts_and_bottleneck():
    """The issue's case: llama3_8b fp8 on 8 x H100, no --strategy: the fastest layout that fits."""
    d = predict_llm("llama3_8b", "h100-sxm", 8, 1, None, [], precision="fp8")
    assert d["strategy_rule"].startswith("no layout named")
    assert d["tokens_per_s_per_gpu"] > 0 and 0 < d["mfu"] < 1
    assert "6·P + 12·L·h·s" in d["mfu_basis"] and "no recompute" in d["mfu_basis"] and "fp8 peak" in d["mfu_basis"]
    parts = d["memory_weights_gb"] + d["memory_gradients_gb"] + d["memory_optimizer_states_gb"]
    assert parts == pytest.approx(d["memory_model_states_gb"], rel=1e-9)
    assert d["memory_per_gpu_gb"] == pytest.approx(d["memory_model_states_gb"] + d["memory_activations_gb"], rel=1e-9)
    assert d["bottleneck"] in ("compute", "memory-bandwidth", "data-parallel", "tensor-parallel", "pipeline",
                               "context-parallel")
    # tokens/s per GPU x model FLOPs per token / the fp8 peak (1,979 TFLOP/s) is the MFU
    assert d["mfu"] == pytest.approx(d["tokens_per_s_per_gpu"] * d["flops_per_token"] / 1979e12, rel=1e-6)


def test_predict_70b_interleaved_context_parallel_on_256_h100():
    d = predict_llm("llama3_70b", nodes=32, strategy=[], tp=8, pp=4, vp=5, cp=2, **_H100)
    assert (d["tp"], d["pp"], d["vp"], d["cp"], d["total_gpus"]) == (8, 4, 5, 2, 256)
    assert d["dp"] == 256 // (8 * 4 * 2)
    # the step is the sum of its printed terms
    terms = ("t_compute_s", "t_pipeline_bubble_s", "t_pipeline_p2p_s", "t_tensor_parallel_s",
             "t_data_parallel_exposed_s", "t_optimizer_s")
    assert sum(d[k] for k in terms) == pytest.approx(d["t_step_s"], rel=1e-9)
    # interleaving 5-fold: the bubble is (p − 1)/(v·m) of the compute, m = 512 / (4 x 1) = 128 micro-batches
    assert d["t_pipeline_bubble_s"] == pytest.approx(d["t_compute_s"] * 3 / (5 * 128), rel=1e-9)
