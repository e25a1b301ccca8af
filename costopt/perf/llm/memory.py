"""Memory per GPU of a sharded / model-parallel transformer training design, vectorised over designs.

Symbols: P parameters, t tensor-parallel degree, p pipeline degree, d data-parallel degree
(N = t·p·d GPUs), g the data-parallel ranks that share one node (the shard group of `hsdp`),
b micro-batch (sequences per data-parallel rank), s sequence length, h hidden, a heads, L layers,
V vocabulary. P_s = P / (t·p) are the parameters one model-parallel rank holds.

Model states, mixed-precision Adam (Rajbhandari et al. 2020, "ZeRO", §3.1: 2 bytes of fp16/bf16
weights, 2 of gradients and K = 12 of fp32 master weights, momentum and variance per parameter):

    ddp     16·P_s                         (every rank holds everything)
    zero1    4·P_s + 12·P_s/d              (optimizer states sharded)
    zero2    2·P_s + 14·P_s/d              (+ gradients sharded)
    fsdp    16·P_s/d + 2·2·P_s/L_s         (everything sharded; two layers' bf16 weights gathered at a time:
                                            the one computing and the one prefetched, L_s = L/p)
    hsdp    16·P_s/g + 2·2·P_s/L_s         (fully sharded inside a node, replicated across nodes)

Shard group (step.py: HSDP with a chosen group, partial ZeRO-1/2): the states are sharded over S of the d
replicas and replicated over the d/S groups, so d becomes S above:

    zero1 with S   4·P_s + 12·P_s/S        zero2 with S   2·P_s + 14·P_s/S        hsdp with S   16·P_s/S + 2·2·P_s/L_s

(`model_state_bytes` takes S as `dp` for zero1/zero2 and as `shard_group` for hsdp.)

ZeRO's Table 1 (7.5B parameters, d = 64) reads 120, 31.4, 16.6 and 1.88 GB for ddp, zero1, zero2
and fsdp model states: the tests check these four figures by hand.

Activations of one micro-batch per layer (Korthikanti et al. 2022, "Reducing Activation Recomputation
in Large Transformer Models", §4: s·b·h·(34 + 5·a·s/h) bytes without parallelism; tensor parallel with
sequence parallelism divides all of it by t). FlashAttention-style kernels, the norm for 2024-2026
training stacks, never store the a·s² attention scores, so the 5·a·s/h term is dropped (the
`attention_scores_stored` parameter puts it back):

    none       A_layer = 34·s·b·h / t
    selective  A_layer = 34·s·b·h / t            (what selective recompute saves is the score term)
    full       A_layer = 2·s·b·h / t             (only each layer's input is kept) + one layer's
                                                  A_none while it is recomputed
    1F1B keeps p micro-batches in flight on the first stage, each with L/p layers: L·A_layer in all
    (Korthikanti §4.2.3), whatever p is (for m ≥ p micro-batches).
    logits: 4·s·b·V / t bytes on the last stage (fp32 logits for the loss).

Low precision (fp8, mxfp8, nvfp4; w bytes per element with scales, q the share of weights whose GEMMs
run in it, step.py): Transformer Engine keeps row- and column-wise low-precision copies of those
weights, 2·w·q·P_s bytes; where weights are all-gathered in the low precision (zero1, zero2 with
`low_precision_param_gather`) the copies replace the bf16 working weights, (2·w − 2)·q·P_s. fsdp/hsdp:
unchanged (the gathered layers hold the low-precision copies in place of the bf16 ones; at w = 1 the
same bytes). Activations: the inputs of the four block GEMMs saved for backward (7 of the 34 bytes' worth
of elements: 1 + 1 + 1 + 4 per s·b·h) are kept at w bytes instead of 2:

    A_layer(low precision) = A_layer − 7·(2 − w)·(1 − β)·s·b·h/t       (none, selective; full: the
                                                                       recompute buffer likewise)

Interleaved pipelines (v virtual stages) are sized as 1F1B: the first stage's extra (p−1)/(p·v) of a
micro-batch's chunks is left out (an estimate that under-counts by that share).

Fine-tunes with frozen weights (LoRA, QLoRA; finetune.py): `finetune_state_parts` splits the states into
frozen weights (b_f·P_base/(t·p): whole under ddp/zero1/zero2, /d under fsdp and /g under hsdp plus two
gathered layers; low-precision copies as above; QLoRA one dequantized layer 2·P_q/L/(t·p)), the adapters'
weights and gradients and their Adam states, the latter two by the strategy's formulas above on P_a/(t·p).

A design fits when states + activations + logits + reserve ≤ memory_gb, the reserve being a fixed
part (CUDA context, NCCL buffers) plus a fraction of the card for allocator fragmentation
(`reserve_gb`, `reserve_fraction` in data/llm_defaults.toml).
"""

from __future__ import annotations

import numpy as np

from costopt.perf.llm.arch import ArchArrays

LLM_STRATEGIES = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
CKPT_CODES = ("none", "selective", "full")
ADAM_STATE_BYTES = 12  # fp32 master weights + momentum + variance (ZeRO's K)
WEIGHT_BYTES = 2  # bf16 / fp16 working weights
GRAD_BYTES = 2  # bf16 / fp16 gradients held per parameter


def model_state_bytes(params_per_rank: np.ndarray, strategy: np.ndarray, dp: np.ndarray, shard_group: np.ndarray,
                      layers_per_stage: np.ndarray, lowp_share=0.0, lowp_bytes=2.0,
                      lowp_param_gather: bool = True) -> np.ndarray:
    """Bytes of weights, gradients and optimizer states per GPU (module docstring). `lowp_share` is q
    (0 for bf16 designs), `lowp_bytes` w."""
    P = np.asarray(params_per_rank, dtype=np.float64)
    d = np.asarray(dp, dtype=np.float64)
    g = np.asarray(shard_group, dtype=np.float64)
    full = (WEIGHT_BYTES + GRAD_BYTES + ADAM_STATE_BYTES) * P
    gathered = 2.0 * WEIGHT_BYTES * P / np.asarray(layers_per_stage, dtype=np.float64)
    q = np.asarray(lowp_share, dtype=np.float64)
    w = np.asarray(lowp_bytes, dtype=np.float64)
    lp_ddp = 2.0 * w * q * P  # row- and column-wise low-precision copies
    lp_zero = (2.0 * w - WEIGHT_BYTES) * q * P if lowp_param_gather else lp_ddp  # they replace the bf16 weights
    per_strategy = np.stack([
        full + lp_ddp,                                                    # ddp
        (WEIGHT_BYTES + GRAD_BYTES) * P + ADAM_STATE_BYTES * P / d + lp_zero,  # zero1
        WEIGHT_BYTES * P + (GRAD_BYTES + ADAM_STATE_BYTES) * P / d + lp_zero,  # zero2
        full / d + gathered,                                              # fsdp
        full / g + gathered,                                              # hsdp
    ])
    return np.take_along_axis(per_strategy, np.asarray(strategy)[None, :], axis=0)[0]


def activation_bytes(arch: ArchArrays, micro_batch: np.ndarray, tp: np.ndarray, ckpt: np.ndarray,
                     attention_scores_stored: bool = False, lowp_linear_share=0.0, lowp_bytes=2.0,
                     saved_linear_input_elements: float = 7.0) -> np.ndarray:
    """Activation bytes per GPU on the first pipeline stage (1F1B), logits included (module docstring).
    `lowp_linear_share` is 1 − β of a low-precision design (0 for bf16), `lowp_bytes` w."""
    s, h, L = arch.seq_len, arch.hidden, arch.layers
    b = np.asarray(micro_batch, dtype=np.float64)
    t = np.asarray(tp, dtype=np.float64)
    per_elem = 34.0 + (5.0 * arch.heads * s / h if attention_scores_stored else 0.0)
    saved = saved_linear_input_elements * (2.0 - np.asarray(lowp_bytes, dtype=np.float64)) \
        * np.asarray(lowp_linear_share, dtype=np.float64)
    a_none = (per_elem - saved) * s * b * h / t
    a_sel = (34.0 - saved) * s * b * h / t
    a_full = 2.0 * s * b * h / t
    per_layer = np.choose(np.asarray(ckpt), [a_none, a_sel, a_full])
    recompute_buffer = np.where(np.asarray(ckpt) == 2, a_none, 0.0)
    logits = 4.0 * s * b * arch.vocab / t
    return L * per_layer + recompute_buffer + logits


def finetune_state_parts(arch: ArchArrays, tp: np.ndarray, pp: np.ndarray, strategy: np.ndarray, dp: np.ndarray,
                         shard_group: np.ndarray, lowp_share=0.0, lowp_bytes=2.0,
                         lowp_param_gather: bool = True) -> dict[str, np.ndarray]:
    """Model-state bytes per GPU of a LoRA/QLoRA design by part (module docstring): `frozen_weights`,
    `adapters` (weights and gradients), `optimizer` (the adapters' Adam states) and their `total`."""
    t, p = np.asarray(tp, dtype=np.float64), np.asarray(pp, dtype=np.float64)
    L_s = arch.layers / p
    P_a = arch.gradient_params / (t * p)
    P_f = arch.params / (t * p) - P_a
    b_f = arch.frozen_weight_bytes
    st = np.asarray(strategy)
    fsdp, hsdp = LLM_STRATEGIES.index("fsdp"), LLM_STRATEGIES.index("hsdp")
    divisor = np.where(st == fsdp, np.asarray(dp, dtype=np.float64), np.where(st == hsdp, shard_group, 1.0))
    gathered = np.where((st == fsdp) | (st == hsdp), 2.0 * b_f * P_f / L_s, 0.0)
    q, w = np.asarray(lowp_share, dtype=np.float64), np.asarray(lowp_bytes, dtype=np.float64)
    copies = np.where((st == fsdp) | (st == hsdp), 0.0,
                      np.where((st == LLM_STRATEGIES.index("ddp")) | (not lowp_param_gather), 2.0 * w * q * P_f,
                               (2.0 * w - WEIGHT_BYTES) * q * P_f))
    dequantized = np.where(arch.dequant_bytes_per_use > 0, WEIGHT_BYTES * P_f / L_s, 0.0)  # QLoRA: one layer in bf16
    frozen = b_f * P_f / divisor + gathered + copies + dequantized
    adapters = model_state_bytes(P_a, st, dp, shard_group, L_s)
    opt = ADAM_STATE_BYTES * P_a / np.where(st == LLM_STRATEGIES.index("ddp"), 1.0,
                                            np.where(st == hsdp, shard_group, np.asarray(dp, dtype=np.float64)))
    return {"frozen_weights": frozen, "adapters": adapters - opt, "optimizer": opt, "total": frozen + adapters}


def state_parts(params_per_rank: float, strategy: str, dp: float, shard_group: float, layers_per_stage: float,
                lowp_share: float = 0.0, lowp_bytes: float = 2.0, lowp_param_gather: bool = True) -> dict[str, float]:
    """Bytes per GPU of `model_state_bytes` by part for one design: `weights` (bf16 working weights, their
    low-precision copies and, under fsdp/hsdp, the two gathered layers), `gradients` and `optimizer` (fp32
    master weights, momentum, variance); they sum to model_state_bytes up to rounding."""
    P, d, g = float(params_per_rank), float(dp), float(shard_group)
    q, w = float(lowp_share), float(lowp_bytes)
    lp_ddp = 2.0 * w * q * P
    lp_zero = (2.0 * w - WEIGHT_BYTES) * q * P if lowp_param_gather else lp_ddp
    gathered = 2.0 * WEIGHT_BYTES * P / float(layers_per_stage)
    div = {"ddp": 1.0, "zero1": d, "zero2": d, "fsdp": d, "hsdp": g}[strategy]
    weights = {"ddp": WEIGHT_BYTES * P + lp_ddp, "zero1": WEIGHT_BYTES * P + lp_zero, "zero2": WEIGHT_BYTES * P + lp_zero,
               "fsdp": WEIGHT_BYTES * P / div + gathered, "hsdp": WEIGHT_BYTES * P / div + gathered}[strategy]
    grads = GRAD_BYTES * P / (div if strategy in ("zero2", "fsdp", "hsdp") else 1.0)
    return {"weights": weights, "gradients": grads, "optimizer": ADAM_STATE_BYTES * P / div}
