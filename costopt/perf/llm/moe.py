"""Mixture-of-experts (MoE) transformers and expert parallelism, vectorised over designs.

Architecture (a TransformerConfig with num_experts E > 0; symbols as in arch.py). Of the L layers, the
first L_d (`dense_layers`) have a dense feed-forward of size f (`ffn_hidden`); the other L_m = L − L_d
have E routed experts and S shared experts, each a feed-forward of size f_e (`moe_ffn_hidden`), and a
router (an h×E linear). Each token goes to its top k routed experts and to every shared expert.

    one expert             P_e   = n·h·f_e            n = 3 (gated, SwiGLU) or 2
    routed experts, total  P_exp = L_m·E·P_e          (held: sharded over the expert-parallel ranks)
    router                 P_r   = L_m·h·E
    total                  P     = L·(P_att + 2h) + L_d·n·h·f + L_m·((E + S)·P_e + h·E) + h + P_emb
    active (per token)     P_act = L·(P_att + 2h) + L_d·n·h·f + L_m·((k + S)·P_e + h·E) + h + P_emb

FLOPs use the active count (F_model = 6·P_act + 12·L·a·d_h·s: the MFU convention of dense models with
the parameters a token meets; Megatron-Bridge's "Model TFLOP/s" counts so too); memory uses the total.
P_att, the attention's weights, is h·a·d_h (Q) + 2·h·a_kv·d_h (K, V) + a·d_h·h (O) with d_h = `head_dim`
(default h/a), or the per-layer count `attention_params` a model states (DeepSeek-V3's multi-head latent
attention, MLA: its low-rank Q and KV projections are counted exactly, but its attention is timed as
standard attention of width a·d_h, with d_h the mean of its query-key and value head sizes: an
approximation, said in its zoo entry).

Expert parallel (degree ep; Megatron-Core's expert layout with expert tensor parallel 1, as Megatron-Bridge's
MoE recipes run it: its performance archive pairs TP 2 with EP 32 on 256 GPUs at PP 8, which only an expert
tensor degree of 1 allows): the N = t·p·c·d GPUs hold the routed experts split over ep ranks, so a GPU holds
P_exp/(ep·p) expert weights, whole experts, and the expert weights have N/(ep·p) = t·c·d/ep replicas (the
expert-data-parallel group). ep divides E and t·c·d (the expert group is formed from the tensor-, context- and
data-parallel ranks of a stage). Everything else (attention, dense layers, shared experts, router,
embeddings: P − P_exp) is held as in a dense model, P_s = (P − P_exp)/(t·p) over d·c replicas.

    model states      states(P_s, d·c) + states(P_exp/(ep·p), t·c·d/ep)        (memory.py per strategy)
    gradient and weight collectives: the dense formulas (step.py) on P_s over the d·c replicas, plus the same
                      formulas on the expert weights over their t·c·d/ep replicas (an expert group of ep
                      consecutive ranks: its replicas sit ep ranks apart, min(t·c·d/ep, D/ep) in an NVLink domain
                      of D GPUs)

Per MoE layer and micro-batch, the tokens go to their experts and come back: a dispatch and a combine
all-to-all forward, and both again backward (4 all-to-alls; 6 when full checkpointing recomputes the
forward). A tensor-parallel group sends the k copies of its b·s/c tokens, X = b·(s/c)·k·h·2 bytes (bf16
hidden states), its t ranks a share X/t each (sequence parallel splits the tokens), of which (ep − 1)/ep
leaves the GPU. The ep ranks of a group are ep consecutive ranks: inside the NVLink domain (n_in = min(ep, D)
of them in one domain of D GPUs: the node, D = G, or a rack-scale domain such as an NVL72's 72); the
share (ep − n_in)/ep goes to other domains over the node's NICs, B_node/G per GPU, concurrently with the
NVLink part (time = the slower of the two). A token bound for several experts in one other domain crosses the
NICs once and is forwarded over NVLink there (DeepEP / Megatron-Core's "flex" dispatcher; DeepSeek-V3 report
§3.2.2), so of its k copies at most n_dom − 1 = ep/n_in − 1 cross the NICs, the other domains of its group
([moe] dispatch_once_per_domain; false: every copy crosses):

    copies across   k_x = min(k·(ep − n_in)/ep, ep/n_in − 1)        (k·(ep − n_in)/ep without dedup)
    T_a2a = n_a2a·(L_m/p)·λ·max((n_in − 1)/ep·X/t / B_intra, (k_x/k)·X/t / (B_node/G)) + n_a2a·(L_m/p)·α
           exposed: (1 − o_a2a)·T_a2a      (o_a2a: the share hidden under compute, data/llm_defaults.toml [moe])

Load imbalance: the busiest expert rank gets λ times the mean number of tokens (λ = 1 when the router is
balanced exactly; data/llm_defaults.toml [moe] states its default and source). Its routed-expert GEMMs
take λ times as long, and its all-to-all λ times the bytes:

    T_imb = (λ/η_e − 1)·F_routed·b·s/(c·t·p) · r_w    F_routed = 6·L_m·k·P_e (+2·L_m·k·P_e with full recompute)
                                                        r_w = the time per weight FLOP of step.py's T_matmul
    η_e: the share of the dense matmul rate the routed experts' grouped GEMMs reach ([moe] expert_gemm_share,
    fitted on the MoE rows by tools/moe_fit.py; 1 = as dense GEMMs)

Token shuffling through memory (counted, not fitted): per MoE layer each token is permuted into its k expert
copies (read h·2 bytes, write k·h·2) and the k expert outputs are combined back (read k·h·2, write h·2):
(4k + 4)·h bytes forward, as many backward, a third time when full checkpointing recomputes the forward; and
each all-to-all reads what it sends and writes what it receives, 2·k·h·2 bytes per token per all-to-all
(ep > 1). At the memory bandwidth B_mem·e_mem, on the b·s/(c·t) tokens of a GPU:

    T_shuffle = (L_m/p)·[n_pass·(4k + 4) + [ep > 1]·n_a2a·4k]·h·b·s/(c·t) / (B_mem·e_mem)     n_pass = 2 (3 full)

Activations of a MoE layer (Korthikanti's 34·s·b·h per layer, of which 19·s·b·h is the dense MLP block:
its input 2, the up-projection output 8, the activation output 8, the dropout mask 1, for f = 4h): the MLP
block is replaced by k + S expert MLPs, each keeping its input (2h bytes per token), its up-projection
output (2·n'·f_e, n' = 2 gated, 1 plain) and its activation output (2·f_e):

    A_moe_layer = A_layer − 19·s·b·h/t + (k + S)·(2h + 2·(n' + 1)·f_e)·s·b/t        (none, selective)
    (full checkpointing keeps only the layer input: unchanged; low precision: the expert inputs counted in bf16)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Korthikanti et al. 2022 §4: bytes per s·b·h of the MLP block among the 34 of a layer (2 + 8 + 8 + 1)
DENSE_MLP_ACTIVATION_ELEMENTS = 19.0
EP_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # expert-parallel degrees the search offers (those dividing E)


@dataclass(frozen=True)
class MoeArrays:
    """The MoE sizes, one element per design; a dense model has experts 0 (every term below is then 0)."""

    experts: np.ndarray  # E routed experts per MoE layer
    top_k: np.ndarray  # k
    moe_layers: np.ndarray  # L_m
    expert_params: np.ndarray  # P_e: weights of one expert
    shared_experts: np.ndarray  # S
    expert_ffn: np.ndarray  # f_e
    gated: np.ndarray  # 1.0 gated (SwiGLU), 0.0 plain

    @property
    def routed_params(self) -> np.ndarray:
        """P_exp = L_m·E·P_e: the routed experts' weights, split over the expert-parallel ranks."""
        return self.moe_layers * self.experts * self.expert_params

    def routed_flops_per_token(self, ckpt) -> np.ndarray:
        """F_routed = 6·L_m·k·P_e, + 2·L_m·k·P_e when full checkpointing recomputes the forward."""
        per = 2.0 * self.moe_layers * self.top_k * self.expert_params
        return per * np.where(np.asarray(ckpt) == 2, 4.0, 3.0)

    def activation_extra_elements(self, hidden) -> np.ndarray:
        """Per token per MoE layer, bytes / 1 of activation beyond a dense layer's (the module docstring's
        (k + S)·(2h + 2(n' + 1)·f_e) − 19·h), summed over the L_m layers."""
        n_up = 1.0 + self.gated
        per_expert = 2.0 * hidden + 2.0 * (n_up + 1.0) * self.expert_ffn
        return self.moe_layers * ((self.top_k + self.shared_experts) * per_expert
                                  - DENSE_MLP_ACTIVATION_ELEMENTS * hidden)


def expert_states_args(moe: MoeArrays, tp, pp, ep, replicas):
    """(expert weights per GPU P_exp/(ep·p), their replicas t·c·d/ep) from the dense replicas d·c: what
    memory.model_state_bytes and the collectives of step.py take for the expert part."""
    t, p, e = (np.asarray(x, dtype=np.float64) for x in (tp, pp, ep))
    return moe.routed_params / (e * p), np.maximum(np.asarray(replicas, dtype=np.float64) * t / e, 1.0)


def all_to_all_s(moe: MoeArrays, *, hidden, seq_len, micro_batch, cp, tp, pp, ep, gpus_per_node, intra_bytes_per_s,
                 node_bytes_per_s, imbalance, latency_s, ckpt, domain_gpus=None, once_per_domain=False) -> np.ndarray:
    """T_a2a per micro-batch before overlap (module docstring), 0 where ep = 1 or the model is dense.
    `domain_gpus` is the NVLink domain D (None: the node, D = G)."""
    t, p, e, c = (np.asarray(x, dtype=np.float64) for x in (tp, pp, ep, cp))
    G = np.asarray(gpus_per_node, dtype=np.float64)
    n_a2a = np.where(np.asarray(ckpt) == 2, 6.0, 4.0)
    x = np.asarray(micro_batch, dtype=np.float64) * np.asarray(seq_len, dtype=np.float64) / c * moe.top_k \
        * np.asarray(hidden, dtype=np.float64) * 2.0 / t
    D = G if domain_gpus is None else np.maximum(np.asarray(domain_gpus, dtype=np.float64), G)
    n_in = np.minimum(e, D)
    inside = (n_in - 1.0) / e * x / np.asarray(intra_bytes_per_s, dtype=np.float64)
    share = (e - n_in) / e
    if once_per_domain:  # a token crosses the NICs once per other domain of its group, at most k times
        share = np.minimum(share, (e / n_in - 1.0) / moe.top_k)
    across = share * x / (np.asarray(node_bytes_per_s, dtype=np.float64) / G)
    per = n_a2a * moe.moe_layers / p
    t_a2a = per * (np.asarray(imbalance, dtype=np.float64) * np.maximum(inside, across) + latency_s)
    return np.where((e > 1) & (moe.experts > 0), t_a2a, 0.0)


def token_shuffle_s(moe: MoeArrays, *, hidden, seq_len, micro_batch, cp, tp, pp, ep, ckpt, mem_bytes_per_s) -> np.ndarray:
    """T_shuffle per micro-batch (module docstring): permutation, combine and the all-to-all buffers through memory."""
    t, p, e, c = (np.asarray(x, dtype=np.float64) for x in (tp, pp, ep, cp))
    full = np.asarray(ckpt) == 2
    k = moe.top_k
    per_token = np.where(full, 3.0, 2.0) * (4.0 * k + 4.0) + np.where(e > 1, np.where(full, 6.0, 4.0) * 4.0 * k, 0.0)
    tokens = np.asarray(micro_batch, dtype=np.float64) * np.asarray(seq_len, dtype=np.float64) / (c * t)
    t_shuffle = moe.moe_layers / p * per_token * np.asarray(hidden, dtype=np.float64) * tokens \
        / np.asarray(mem_bytes_per_s, dtype=np.float64)
    return np.where(moe.experts > 0, t_shuffle, 0.0)


def imbalance_s(moe: MoeArrays, *, ckpt, micro_batch, seq_len, cp, tp, pp, imbalance, time_per_weight_flop,
                expert_gemm_share=1.0) -> np.ndarray:
    """T_imb per micro-batch: the busiest rank's extra routed-expert GEMM time (module docstring), with the
    grouped GEMMs at η_e = `expert_gemm_share` of the dense rate: (λ/η_e − 1)·F_routed·tokens·r_w."""
    lam = np.asarray(imbalance, dtype=np.float64) / np.asarray(expert_gemm_share, dtype=np.float64)
    tokens = np.asarray(micro_batch, dtype=np.float64) * np.asarray(seq_len, dtype=np.float64) \
        / (np.asarray(cp, dtype=np.float64) * np.asarray(tp, dtype=np.float64) * np.asarray(pp, dtype=np.float64))
    return np.where(moe.experts > 0, (lam - 1.0) * moe.routed_flops_per_token(ckpt) * tokens * time_per_weight_flop, 0.0)


def bad_expert_parallel(moe: MoeArrays | None, ep, replicas) -> tuple[np.ndarray, np.ndarray]:
    """(ep > 1 on a dense model, ep not dividing E or the `replicas` = t·c·d ranks of a stage) per design."""
    e = np.asarray(ep, dtype=np.float64)
    if moe is None:
        return e > 1, np.zeros(e.shape, dtype=bool)
    dense = (e > 1) & (moe.experts == 0)
    r = np.asarray(replicas, dtype=np.float64)
    E = np.where(moe.experts > 0, moe.experts, 1.0)
    not_dividing = (moe.experts > 0) & ((np.mod(E, e) != 0) | (np.mod(np.round(r), e) != 0))
    return dense, not_dividing
