"""Step time of sharded / tensor / pipeline-parallel transformer training, vectorised over designs.

Symbols as in memory.py: N = G·M GPUs (G per node, M nodes), t tensor, p pipeline, d = N/(t·p) data
parallel; b micro-batch, m micro-batches per step (gradient accumulation), s sequence length.
Ranks are ordered tensor-parallel innermost, then data parallel, then pipeline (Megatron's order), so a
tensor group never leaves an NVLink domain (t ≤ D), and the data-parallel group has g = min(d, D/t) ranks in
each domain and spans M_d = d/g domains. P_s = P/(t·p).

NVLink domain D (hardware/rack_scale.py): the GPUs that reach each other over NVLink, D = G for an HGX/DGX
server (the node), D = 72 for a GB200/GB300 NVL72 rack of 18 four-GPU trays. Every group whose ranks lie in one
domain runs at the NVLink bandwidth B_intra even across trays; only traffic that leaves the domain uses the
node's NICs, B_node/G per GPU. So "inside" below means inside the domain: tensor parallel always (t ≤ D),
context parallel when t·c ≤ D, the data-parallel phase over g ranks, pipeline point-to-point when N ≤ D.

Compute of one micro-batch on one GPU (a roofline: weight matmuls at a fraction of the tensor peak,
the attention core at its own fraction, the element-wise rest at a fraction of the memory bandwidth):

    T_mb = (F_hw − F_att)·b·s/(t·p) / (peak · e_mm)  +  F_att·b·s/(t·p) / (peak · e_att)
           +  [c_bw·h·L·b·s·(F_hw/F_model)/(t·p)  +  U·k_sc·(a/t)·s²·b·L/p  +  k_ce·V·b·s/t] / (B_mem · e_mem)
    F_att = 12·L·h·s, plus a third of it again when checkpointing recomputes the forward
    e_mm = η · MAMF(gpu) / S: the GPU's measured maximum achievable matmul fraction (mamf-finder,
          ML-ENG table; single-GPU matmuls, not LLM rows) times η, the one share fitted on the LLM rows,
          over the shape slowdown S of the layer's GEMMs (narrow GEMMs run slower):
          S = FLOP-weighted mean over QKV (K = h, N = 3h/t), output (h/t, h), FFN up (h, 4h/t) and down
          (4h/t, h) of 1 + c·(1/K + 1/N) = 1 + c·(1 + t/3)/h, c = 42.5 from measured H100 GEMMs of 512-4096 columns
          (tools/gemm_shape_fit.py on XLA's sm_90 matmul table); every GPU is given the same shape curve
    e_att per generation from the FlashAttention papers (data/llm_defaults.toml): FlashAttention-2
    reaches 50-73% of the A100 peak forward + backward (Dao 2023), 35-ish% of the H100 peak (Shah et al.
    2024, the FlashAttention-3 paper's baseline). Without FlashAttention (U = 1: the design's or
    row's attention is `unfused`) the score GEMMs run at e_mm and every head's s×s scores go through
    memory: k_sc = 32 bytes per score element per layer forward + backward (+13 when the attention
    core is recomputed), counted op by op in data/llm_defaults.toml.
    Causal masking: F_att counts every score (the MFU convention), but a causal FlashAttention kernel
    skips the masked half of the score blocks, so it executes c_causal·F_att, c_causal = 0.5 (the FLOP count
    the FlashAttention-2 paper, §4.1, quotes its causal fractions on) for the framework that does so
    (megatron), 1 elsewhere (data/llm_defaults.toml says why); without FlashAttention every score is
    computed and masked afterwards (c_causal = 1).
    The loss: the softmax cross-entropy reads and writes each of the V logits of every token, k_ce = 18 bytes
    per logit (data/llm_defaults.toml, counted for PyTorch's unfused bf16 kernels), split over the tensor group
    (vocab-parallel) but not over p: the last stage carries it all and the pipeline runs at its pace; not
    recomputed.
    T_fwd = T_mb/3 (recompute moves into backward),  T_bwd = T_mb − T_fwd

Optimizer update, once per step, memory-bound, on the parameters a GPU owns:

    T_opt = k_opt · P_s / z / (B_mem · e_mem)     z = 1 (ddp), d (zero1, zero2, fsdp), g (hsdp)
    k_opt = 30 bytes per parameter (fused mixed-precision Adam: read master, m, v, fp32 grad; write
            master, m, v and the 16-bit weight)

Pipeline bubble (1F1B, Narayanan et al. 2021): the step's compute is m·T_mb·(1 + (p−1)/m). With the
interleaved schedule of v virtual stages (model chunks) per GPU (Narayanan et al. 2021 §2.2.2) the bubble
shrinks v-fold and the point-to-point traffic grows v-fold:

    T_bubble = m·T_mb·(p−1)/(v·m)

Context parallel (degree c; ring attention as Megatron/Transformer Engine run it): the N = t·p·c·d GPUs
hold d·c weight replicas (data-parallel collectives and optimizer shards run over them: "d" in the
collective terms below is N/(t·p)); each GPU computes s/c tokens of every sequence of its micro-batch, so
every per-micro-batch compute, element-wise, tensor- and pipeline-parallel term above carries b·s/c tokens
instead of b·s (the attention FLOPs per token stay 12·L·h·s: each query still meets every key). Per layer
the K and V of s/c tokens go round the ring of c ranks, c − 1 steps forward and 2(c − 1) backward (K, V and
their gradients), on NVLink when t·c ≤ D, else the node's NICs, hidden under the attention core:

    T_cp = max(0, 3·(c−1)·2·(s/c)·b·h·(a_kv/a)/t·2 bytes·(L/p) / B_cp − o·T_att)      per micro-batch
    tokens/s = d·m·b·s / T_step with d = N/(t·p·c) the data-parallel degree

Low precision (fp8, mxfp8, nvfp4: the design's GEMM precision; data/llm_defaults.toml [low_precision]).
Only the weight GEMMs of the transformer blocks change; the attention core (softmax, QKᵀ, A·V), norms,
element-wise work, embeddings, LM head and optimizer stay in bf16/fp32. Of the weight-GEMM FLOPs
F_w = F_hw − F_att a share

    q = (1 − P_emb/P)·(1 − β)        P_emb = V·h (·2 untied), β = the share of block linears kept in bf16

runs at the low-precision peak peak_lp·e_lp, e_lp = η·MAMF_lp(gpu)/S (MAMF_lp: the GPU's measured fp8
matmul fraction), the rest at the bf16 peak·e_mm:

    T_matmul = [F_w·S·(q/(peak_lp·e_lp') + (1−q)/(peak·e_mm')) + c_causal·F_att/(peak·e_att)]·b·s/(t·p)
               (e' = the fraction before the shape slowdown S; c_causal below)

Every element that enters a low-precision GEMM is cast first: read in bf16 (2 bytes), written row-wise
and column-wise (the transposed copy the weight-gradient GEMM reads, 2·w bytes, w = bytes per element
with scales), plus one more read for the amax where the scale is the tensor's current amax (k_amax):

    T_cast = (2 + 2w + k_amax)·n_cast·h·L·(1 − β)·b·s·(F_hw/F_model)/(t·p) / (B_mem·e_mem)   per micro-batch
    n_cast = 16 elements per token per layer per h (the four GEMMs' inputs forward, 7h, and output
             gradients backward, 9h)

and the weights once per step (cached across the step's micro-batches): (2 + 2w)·q·P_s/z bytes, added to
T_opt. With low-precision parameter gathering (`low_precision_param_gather`), zero1/zero2/fsdp/hsdp
all-gather weights at w bytes per parameter of the q share instead of 2: X_ag = (2·(1 − q) + w·q)·P_s.
Gradients are reduced in fp32 as in bf16 training. bf16 designs: q = 0, no cast term.

Collectives (bus-bandwidth model, as nccl-tests reports it): a reduce-scatter or all-gather of X
bytes per GPU over a group of g ranks in a node and M_d nodes takes

    C(X, f) = f·(g−1)/g·X / B_intra  +  f·(M_d−1)/M_d·(X/g) / (B_node/G)  +  2·(g−1 + M_d−1)·α
    (f = 1 for reduce-scatter or all-gather, 2 for all-reduce; B_node = all NICs of a node, B_node/G each
     GPU's share; after the in-domain phase each GPU carries its 1/g of X across domains. With D = G and
     g = G/t the inter term is f·(M_d−1)/M_d·X·t/B_node: the node's X once, through the node's NICs)

Per step, by strategy (X in bytes per GPU; gradients reduced in fp32: 4·P_s, weights gathered in bf16: 2·P_s):

    ddp     all-reduce 4·P_s once, overlapping the last micro-batch's backward
    zero1/2 reduce-scatter 4·P_s (overlaps the last backward) + all-gather 2·P_s (overlaps the next forward)
    fsdp    per micro-batch: all-gather 2·P_s (forward), all-gather 2·P_s + reduce-scatter 4·P_s (backward)
    hsdp    fsdp inside the domain (M_d = 1), then an all-reduce of each GPU's shard 4·P_s/g across domains
            (overlaps the last backward)

Shard group (HSDP with a chosen group, partial ZeRO-1/2): the states are sharded over a group of S of the d
replicas (S divides d) and replicated over the R = d/S groups. Ranks are consecutive, so a group has
g_S = min(S, g) ranks in each NVLink domain and spans m_S = S/g_S domains; the R replicas of a shard have
g_R = max(g/S, 1) ranks in a domain and span m_R = R/g_R domains. Inside the group the collectives are those
of the strategy on (g_S, m_S); across groups the gradient shard 4·P_s/S is all-reduced over (g_R, m_R):

    zero1/2 with S   RS_S(4·P_s) + AR_R(4·P_s/S)  (overlap the last backward)  +  AG_S(X)  (the next forward)
    hsdp with S      per micro-batch AG_S(X), AG_S(X) + RS_S(4·P_s), then AR_R(4·P_s/S) once a step
    memory traffic   k·X·(S−1)/S inside the group, k_ar·4·P_s/S·(R−1)/R across
    T_opt            k_opt·P_s/S

S = d is plain zero1/zero2 (R = 1: no all-reduce) and fsdp; hsdp's default is S = g (one domain's ranks).
Hand check: 64 GPUs in 8-GPU nodes, t = p = 1 (d = 64, g = 8), hsdp S = 16: g_S = 8, m_S = 2, R = 4,
g_R = 1, m_R = 4: the gathers cross 2 nodes, the all-reduce of the 1/16 shard crosses 4.
    exposed = max(0, C − o·T_overlapped)        (o = overlap_fraction)
    plus, never hidden, the bytes each collective moves through the GPU's own memory while it overlaps
    compute (a ring rank reads what it sends and writes what it receives, and a reduction also reads its
    local chunk): k_ag = 2 bytes per byte all-gathered, k_rs = 3 per byte reduce-scattered, k_ar = 5 per
    byte all-reduced (reduce-scatter + all-gather), times (n−1)/n of the buffer for a group of n, at
    B_mem·e_mem:
    ddp  k_ar·4P_s;  zero1/2  k_rs·4P_s + k_ag·2P_s;  fsdp per micro-batch 2·k_ag·2P_s + k_rs·4P_s;
    hsdp the fsdp term inside the node (n = g) + k_ar·4P_s/g across (n = M_d)

Tensor parallel: 4 all-reduces of b·s·h·2 bytes per layer per micro-batch (2 forward, 2 backward;
6 with full recompute), on NVLink/PCIe inside the domain (t ≤ D, across trays of an NVL72 rack), not overlapped:
    T_tp = m·(L/p)·n_ar·[2(t−1)/t·b·s·h·2 / B_intra + 2(t−1)·α]
Pipeline point-to-point: each micro-batch sends b·s·h·2/t bytes forward and as many back at every
stage boundary (v times under the interleaved schedule: every model chunk has its boundary), over the
node's NICs when the job spans domains (N > D: the slowest boundary sets the pace), else NVLink:
    T_pp = (v·m + p − 1)·2·b·s·h·2/t / (B_node/G  if N > D, else B_intra)

Mixture of experts (moe.py, expert-parallel degree ep): T_mb gains the exposed all-to-all dispatch/combine
(1 − o_a2a)·T_a2a, the busiest expert rank's extra GEMM time T_imb and the token shuffling through memory
T_shuffle (in the element-wise part); the collectives and T_opt above run on
the weights outside the routed experts over d·c replicas, plus the same terms on the expert weights
P_exp/(ep·p) over their t·c·d/ep replicas.

    T_step = m·T_mb + T_bubble + exposed(dp) + T_tp + T_pp + T_opt

Fine-tunes with frozen weights (LoRA, QLoRA; finetune.py has the equations): F_model = 4·P + 2·P_a + 12·L·h·s,
the adapters' 6·P_a (8·P_a under full recompute) at their narrow-GEMM slowdown plus their add traffic
(T_adapter), QLoRA's dequantization (T_dequant) per micro-batch in T_mb; gradients, optimizer and the zero1/2
weight all-gather on P_a only; fsdp/hsdp gather the frozen weights at b_f bytes each. SFT is pre-training.
    tokens/s = d·m·b·s / T_step;  MFU = tokens/s · F_model / (N · peak_mfu)
    (peak_mfu: the dense peak of the design's GEMM precision: bf16, or fp8 / fp4 for low-precision designs)
    hardware bound: tokens/s per GPU ≤ peak / F_hw (checked, never exceeded by construction: e_mm ≤ 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costopt.perf.llm.arch import ArchArrays
from costopt.perf.llm.finetune import adapter_add_bytes
from costopt.perf.llm.memory import LLM_STRATEGIES
from costopt.perf.llm.moe import all_to_all_s, expert_states_args, imbalance_s, token_shuffle_s

DDP, ZERO1, ZERO2, FSDP, HSDP = range(len(LLM_STRATEGIES))


@dataclass(frozen=True)
class LlmParams:
    matmul_share_of_mamf: float  # fitted: e_mm = matmul_share_of_mamf x mamf_fraction(gpu)
    mamf_fraction: dict[str, float]  # per GPU id: measured maximum achievable matmul / dense peak
    attention_fraction: dict[str, float]
    attention_fraction_default: float
    elementwise_bytes_per_token_per_hidden: float
    memory_bandwidth_fraction: float
    nvlink_fraction: float
    pcie_fraction: float
    network_rdma_fraction: float
    network_tcp_fraction: float
    collective_latency_us: float
    overlap_fraction: float
    reserve_gb: float
    reserve_fraction: float
    unfused_attention_bytes_per_score: float
    unfused_attention_recompute_bytes_per_score: float
    optimizer_bytes_per_param: float
    gemm_shape_dims: float
    collective_hbm_bytes_per_byte_all_gather: float
    collective_hbm_bytes_per_byte_reduce_scatter: float
    collective_hbm_bytes_per_byte_all_reduce: float
    fit_note: str = ""
    # measured fp8 MAMF per GPU id (data/llm_defaults.toml [compute.mamf_fraction_fp8])
    mamf_fraction_fp8: dict = field(default_factory=dict)
    # per low precision (fp8, mxfp8, nvfp4): bytes per element, bf16 linear share, amax read bytes
    low_precision: dict = field(default_factory=dict)
    cast_elements_per_token_per_hidden: float = 16.0
    saved_linear_input_elements: float = 7.0
    low_precision_param_gather: bool = True
    # per training framework (evaluate.FRAMEWORKS): a factor on matmul_share_of_mamf (fitted; 1 = the pooled
    # share) and attention fractions per generation that replace attention_fraction's (its kernels)
    framework_share_factor: dict = field(default_factory=dict)
    framework_attention_fraction: dict = field(default_factory=dict)
    framework_elementwise_bytes: dict = field(default_factory=dict)  # per framework c_bw (fitted); absent: pooled
    causal_attention_flop_share: float = 1.0  # share of F_att a causal FlashAttention kernel is charged for
    framework_causal_share: dict = field(default_factory=dict)  # per framework (evaluate.params_for_framework)
    moe_load_imbalance: float = 1.25  # lambda (data/llm_defaults.toml [moe]; moe.py)
    moe_all_to_all_overlap: float = 0.0  # share of the expert all-to-alls hidden under compute
    moe_dispatch_once_per_domain: bool = True  # a token crosses the NICs once per other NVLink domain (DeepEP)
    moe_expert_gemm_share: float = 1.0  # routed experts' grouped GEMMs at this share of the dense matmul rate
    # k_ce: bytes of memory traffic per vocabulary logit per token of the loss (data/llm_defaults.toml); 0: none
    cross_entropy_bytes_per_logit: float = 0.0


@dataclass
class StepTiming:
    t_step_s: np.ndarray
    t_compute_s: np.ndarray
    t_bubble_s: np.ndarray
    t_dp_exposed_s: np.ndarray
    t_tp_s: np.ndarray
    t_pp_s: np.ndarray
    t_opt_s: np.ndarray
    tokens_per_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    mfu: np.ndarray
    bound: np.ndarray  # str labels: compute, memory-bandwidth, data-parallel, tensor-parallel, pipeline, context-parallel,
    # expert-parallel
    t_cp_s: np.ndarray | float = 0.0  # exposed ring-attention KV exchange per step (m micro-batches)
    t_ep_s: np.ndarray | float = 0.0  # exposed expert all-to-all per step (m micro-batches; moe.py)
    t_pp_unit_s: np.ndarray | float = 0.0  # one micro-batch crossing one pipeline stage boundary (T_pp / (v·m + p − 1))
    tokens_per_step: np.ndarray | float = 0.0  # d·m·b·s/c


def _collective_s(x_bytes, f, g, m_d, gpus_per_share, b_intra, b_node, alpha_s):
    """C(X, f) of the module docstring; `gpus_per_share` = G/g, the node's GPUs over the group's ranks in a
    domain (t when D = G), so the inter-domain phase moves X·G/g per node through its NICs B_node."""
    x = np.asarray(x_bytes, dtype=np.float64)
    intra = f * (g - 1.0) / g * x / b_intra
    inter = np.where(m_d > 1, f * (m_d - 1.0) / np.maximum(m_d, 1.0) * x * gpus_per_share / b_node, 0.0)
    return intra + inter + 2.0 * ((g - 1.0) + (m_d - 1.0)) * alpha_s


def shard_group_size(strat, d, g, shard_group=None):
    """S of the module docstring per design: the chosen group (`shard_group` > 0) for zero1, zero2 and hsdp, else
    the strategy's own (hsdp: the g ranks of a domain; zero1/2 and fsdp: all d replicas; ddp: 1, nothing sharded)."""
    default = np.where(strat == DDP, 1.0, np.where(strat == HSDP, g, d))
    if shard_group is None:
        return np.broadcast_to(default, np.broadcast(strat, d, g).shape).astype(np.float64)
    S = np.asarray(shard_group, dtype=np.float64)
    chosen = (S > 0) & ((strat == ZERO1) | (strat == ZERO2) | (strat == HSDP))
    return np.where(chosen, S, default)


def _data_parallel_s(P_s, strat, d, g, m_d, G, m, t_fwd, t_bwd, w_gather, b_intra, b_node, alpha, params, e_bw,
                     grad_s=None, x_step=None, x_mb=None, shard_group=None):
    """Exposed data-parallel collective time per step of P_s weights per GPU held in d replicas, g of them in an
    NVLink domain over m_d domains (module docstring, by strategy); G GPUs per node share its NICs. Fine-tunes
    with frozen weights (finetune.py) give `grad_s`, the parameters with gradients per GPU (default P_s), and the
    bytes all-gathered once a step by zero1/2 (`x_step`) and every micro-batch by fsdp/hsdp (`x_mb`; both
    default w_gather·P_s). `shard_group`: S per design (0 or None: the strategy's own; shard_group_size)."""
    o = params.overlap_fraction
    G_s = P_s if grad_s is None else grad_s
    X_step = w_gather * P_s if x_step is None else x_step
    X_mb = w_gather * P_s if x_mb is None else x_mb
    S = shard_group_size(strat, d, g, shard_group)
    S = np.where(strat == DDP, d, np.where(strat == FSDP, d, S))  # ddp's all-reduce and fsdp span all d
    g_S = np.minimum(S, g)
    m_S = np.maximum(S / g_S, 1.0)
    R = np.maximum(d / S, 1.0)
    g_R = np.maximum(g / S, 1.0)
    m_R = np.maximum(R / g_R, 1.0)
    coll = lambda x, f, gg=g_S, md=m_S: _collective_s(x, f, gg, md, G / gg, b_intra, b_node, alpha)  # noqa: E731
    ar_grad = coll(4 * G_s, 2.0)
    rs_grad = coll(4 * G_s, 1.0)
    ag_w = coll(X_mb, 1.0)
    # the gradient shard 4·G_s/S all-reduced over the R groups (none when S = d)
    across = np.where(R > 1, _collective_s(4 * G_s / S, 2.0, g_R, m_R, G / g_R, b_intra, b_node, alpha), 0.0)
    ddp = np.maximum(ar_grad - o * t_bwd, 0.0)
    zero = np.maximum(rs_grad + across - o * t_bwd, 0.0) + np.maximum(coll(X_step, 1.0) - o * t_fwd, 0.0)
    sharded = m * (np.maximum(ag_w - o * t_fwd, 0.0) + np.maximum(ag_w + rs_grad - o * t_bwd, 0.0)) \
        + np.maximum(across - o * t_bwd, 0.0)
    t_dp = np.choose(strat, [ddp, zero, zero, sharded, sharded])
    # an overlapped collective still moves its bytes through the GPU's memory, competing with the
    # compute it hides under: not hidden (module docstring)
    kag, krs, kar = (params.collective_hbm_bytes_per_byte_all_gather, params.collective_hbm_bytes_per_byte_reduce_scatter,
                     params.collective_hbm_bytes_per_byte_all_reduce)
    ring = (S - 1.0) / S
    across_hbm = kar * 4.0 * G_s / S * (R - 1.0) / R
    sharded_mb = (2.0 * kag * X_mb + krs * 4.0 * G_s)  # fsdp micro-batch: gather twice, reduce-scatter once
    zero_hbm = (krs * 4.0 * G_s + kag * X_step) * ring + across_hbm
    hbm = np.choose(strat, [kar * 4.0 * G_s * ring, zero_hbm, zero_hbm, m * sharded_mb * ring + across_hbm,
                            m * sharded_mb * ring + across_hbm])
    t_dp = t_dp + hbm / e_bw
    t_dp = np.where(d > 1, t_dp, 0.0)
    return t_dp


def gemm_shape_slowdown(h, t, c):
    """Time per FLOP of a layer's weight GEMMs relative to very large ones (module docstring): the
    FLOP-weighted mean of 1 + c·(1/K + 1/N) over QKV (h -> 3h/t), output (h/t -> h), FFN up (h -> 4h/t)
    and down (4h/t -> h), weights 3 : 1 : 4 : 4, which sums to 1 + c·(1 + t/3)/h."""
    return 1.0 + c * (1.0 + np.asarray(t, dtype=np.float64) / 3.0) / np.asarray(h, dtype=np.float64)


def step_time(arch: ArchArrays, params: LlmParams, *, peak_flops, mem_bw_bytes_per_s, matmul_fraction, attention_fraction,
              intra_bytes_per_s, node_bytes_per_s, gpus_per_node, nodes, strategy, tp, pp, micro_batch,
              grad_accum, ckpt, flash_attention=None, lowp_peak_flops=None, lowp_matmul_fraction=None,
              lowp_share=0.0, lowp_bytes=2.0, lowp_amax_bytes=0.0, virtual_stages=1.0, cp=1.0,
              nvlink_domain_gpus=None, ep=1.0, load_imbalance=None, shard_group=None) -> StepTiming:
    """Arrays in, arrays out (one element per design); see the module docstring for every term.
    `nvlink_domain_gpus` is D per design (None: the node, D = G).

    bf16 designs leave the low-precision arguments at their defaults (q = `lowp_share` = 0: no cast
    term, weights gathered at 2 bytes). `lowp_share` is the share 1 − β of the blocks' linears that run
    in the low precision; q multiplies it by 1 − P_emb/P here. `ep` is the expert-parallel degree of a
    mixture-of-experts model and `load_imbalance` its λ (None: params.moe_load_imbalance); moe.py.
    `shard_group` is S per design (0 or None: the strategy's own); it applies to the weights outside the routed
    experts (the experts keep their own replicas' rule, moe.py)."""
    G = np.asarray(gpus_per_node, dtype=np.float64)
    M = np.asarray(nodes, dtype=np.float64)
    t = np.asarray(tp, dtype=np.float64)
    p = np.asarray(pp, dtype=np.float64)
    b = np.asarray(micro_batch, dtype=np.float64)
    m = np.asarray(grad_accum, dtype=np.float64)
    strat = np.asarray(strategy)
    ck = np.asarray(ckpt)
    c = np.asarray(cp, dtype=np.float64)
    N = G * M
    D = G if nvlink_domain_gpus is None else np.maximum(np.asarray(nvlink_domain_gpus, dtype=np.float64), G)
    d = N / (t * p)  # weight replicas: the data-parallel ranks times the context-parallel ones
    g = np.minimum(d, np.maximum(D / t, 1.0))  # data-parallel ranks in one NVLink domain
    m_d = np.maximum(d / g, 1.0)
    s, h, L = arch.seq_len, arch.hidden, arch.layers
    f_model = arch.model_flops_per_token
    f_hw = arch.hardware_flops_per_token(ck)
    f_att = arch.attention_flops_per_token * np.where(ck > 0, 4.0 / 3.0, 1.0)
    frozen = arch.trainable_params is not None  # LoRA / QLoRA (finetune.py)
    p_grad = arch.gradient_params
    # which designs adapt (LoRA/QLoRA); a pre-training or SFT design evaluated beside them keeps its own maths
    adapting = (arch.adapter_rank > 0) if frozen else False
    f_adapter = np.where(adapting, (6.0 + np.where(ck == 2, 2.0, 0.0)) * p_grad, 0.0) if frozen else 0.0
    alpha = params.collective_latency_us * 1e-6
    peak = np.asarray(peak_flops, dtype=np.float64)

    flash = np.ones(np.broadcast(b, peak).shape, dtype=bool) if flash_attention is None \
        else np.asarray(flash_attention, dtype=bool)
    e_mm = np.asarray(matmul_fraction, dtype=np.float64)
    e_att = np.where(flash, np.asarray(attention_fraction, dtype=np.float64), e_mm)
    e_bw = np.asarray(mem_bw_bytes_per_s, dtype=np.float64) * params.memory_bandwidth_fraction
    beta_c = np.asarray(lowp_share, dtype=np.float64)  # 1 − β
    q = beta_c * (1.0 - (0.0 if arch.embedding_params is None else arch.embedding_params) / arch.params)
    peak_lp = peak if lowp_peak_flops is None else np.asarray(lowp_peak_flops, dtype=np.float64)
    e_lp = e_mm if lowp_matmul_fraction is None else np.asarray(lowp_matmul_fraction, dtype=np.float64)
    slow = gemm_shape_slowdown(h, t, params.gemm_shape_dims)
    # a causal FlashAttention kernel skips the masked half of the score blocks: it executes c_causal·F_att
    # (FlashAttention-2 paper §4.1 counts causal FLOPs so, and its fractions are quoted on that count); an
    # unfused kernel computes every score and masks afterwards (c = 1)
    f_att_run = f_att * np.where(flash, params.causal_attention_flop_share, 1.0)
    t_matmul = ((f_hw - f_att - f_adapter) * slow * (q / (peak_lp * e_lp) + (1.0 - q) / (peak * e_mm))
                + f_att_run / (peak * e_att)) * b * s / (c * t * p)
    recompute = arch.recompute_factor(ck)
    t_elem = params.elementwise_bytes_per_token_per_hidden * h * L * b * s * recompute / (c * t * p) / e_bw
    if frozen:  # adapters: rank-r GEMMs in bf16 at their shape slowdown, their adds; QLoRA dequantization
        r = np.maximum(arch.adapter_rank, 1.0)
        slow_a = 1.0 + params.gemm_shape_dims * (1.0 / r + 1.0 / h)
        t_matmul = t_matmul + f_adapter * slow_a / (peak * e_mm) * b * s / (c * t * p)
        t_elem = t_elem + adapter_add_bytes() * np.where(arch.adapter_rank > 0, p_grad / r, 0.0) * b * s \
            / (c * t * p) / e_bw
        n_use = np.where(ck == 2, 3.0, 2.0)
        t_elem = t_elem + n_use * arch.dequant_bytes_per_use / (t * p) / e_bw
    k_score = params.unfused_attention_bytes_per_score \
        + np.where(ck > 0, params.unfused_attention_recompute_bytes_per_score, 0.0)
    t_elem = t_elem + np.where(flash, 0.0, k_score * arch.heads / t * s * s * b * L / (c * p) / e_bw)
    w_lp = np.asarray(lowp_bytes, dtype=np.float64)
    k_cast = np.where(q > 0, 2.0 + 2.0 * w_lp + np.asarray(lowp_amax_bytes, dtype=np.float64), 0.0)
    t_cast = k_cast * params.cast_elements_per_token_per_hidden * h * L * beta_c * b * s * recompute \
        / (c * t * p) / e_bw
    t_elem = t_elem + t_cast
    # the loss over the vocabulary: the last stage's softmax cross-entropy reads and writes every logit
    # (k_ce bytes per logit per token), split over the tensor group (vocab-parallel) and the context ranks;
    # one stage carries it, so the pipeline runs at that stage's pace (not divided by p)
    t_elem = t_elem + params.cross_entropy_bytes_per_logit * arch.vocab * b * s / (c * t) / e_bw
    # context parallel (ring attention): each layer passes the K and V chunks of s/c tokens around the ring
    # of c ranks, c − 1 steps forward and 2(c − 1) backward (K, V and their gradients), hidden under the
    # attention core's compute (overlap o); the ring is inside the NVLink domain when t·c ≤ D
    kv = 2.0 * (s / c) * b * h * (arch.heads_kv_share if arch.kv_heads is not None else 1.0) / t * 2.0
    b_cp = np.where(t * c <= D, np.asarray(intra_bytes_per_s, dtype=np.float64),
                    np.asarray(node_bytes_per_s, dtype=np.float64) / G)
    t_ring = 3.0 * (c - 1.0) * kv * L / p / b_cp
    t_att_core = f_att_run / (peak * e_att) * b * s / (c * t * p)
    t_cp = np.where(c > 1, np.maximum(t_ring - params.overlap_fraction * t_att_core, 0.0), 0.0)
    # mixture of experts (moe.py): the exposed all-to-all dispatch/combine and the busiest rank's extra expert GEMMs
    e_p = np.asarray(ep, dtype=np.float64)
    t_a2a = np.zeros_like(t_cp)
    if arch.moe is not None:
        lam = params.moe_load_imbalance if load_imbalance is None else load_imbalance
        t_a2a = (1.0 - params.moe_all_to_all_overlap) * all_to_all_s(
            arch.moe, hidden=h, seq_len=s, micro_batch=b, cp=c, tp=t, pp=p, ep=e_p, gpus_per_node=G, domain_gpus=D,
            intra_bytes_per_s=intra_bytes_per_s, node_bytes_per_s=node_bytes_per_s, imbalance=lam, latency_s=alpha,
            ckpt=ck, once_per_domain=params.moe_dispatch_once_per_domain)
        r_w = slow * (q / (peak_lp * e_lp) + (1.0 - q) / (peak * e_mm))  # time per weight-GEMM FLOP
        t_matmul = t_matmul + imbalance_s(arch.moe, ckpt=ck, micro_batch=b, seq_len=s, cp=c, tp=t, pp=p,
                                          imbalance=lam, time_per_weight_flop=r_w,
                                          expert_gemm_share=params.moe_expert_gemm_share)
        t_elem = t_elem + token_shuffle_s(arch.moe, hidden=h, seq_len=s, micro_batch=b, cp=c, tp=t, pp=p, ep=e_p,
                                          ckpt=ck, mem_bytes_per_s=e_bw)
    t_mb = t_matmul + t_elem + t_cp + t_a2a
    t_fwd = t_mb / 3.0
    t_bwd = t_mb - t_fwd
    t_compute = m * t_mb

    b_intra = np.asarray(intra_bytes_per_s, dtype=np.float64)
    b_node = np.asarray(node_bytes_per_s, dtype=np.float64)
    w_gather = np.where(q > 0, 2.0 * (1.0 - q) + w_lp * q, 2.0) if params.low_precision_param_gather else 2.0
    P_s = arch.non_expert_params / (t * p)  # all weights of a dense model; a MoE model's outside its routed experts
    G_s = p_grad / (t * p)  # parameters with gradients per GPU: P_s, or the adapters' under LoRA/QLoRA
    # frozen weights: zero1/2 gather only the adapters' updated weights once a step; fsdp/hsdp gather every weight
    # every micro-batch, the frozen ones at b_f bytes (QLoRA: the NF4 storage)
    ft_bytes = dict(grad_s=G_s, x_step=np.where(adapting, 2.0 * G_s, w_gather * P_s),
                    x_mb=np.where(adapting, arch.frozen_weight_bytes * (P_s - G_s) + 2.0 * G_s, w_gather * P_s)) \
        if frozen else {}
    t_dp = _data_parallel_s(P_s, strat, d, g, m_d, G, m, t_fwd, t_bwd, w_gather, b_intra, b_node, alpha, params, e_bw,
                            shard_group=shard_group, **ft_bytes)
    if arch.moe is not None:  # the routed experts' weights: their own d·c/ep replicas (moe.py)
        P_e, d_e = expert_states_args(arch.moe, t, p, e_p, d)
        g_e = np.minimum(d_e, np.maximum(D / e_p, 1.0))
        m_e = np.maximum(d_e / g_e, 1.0)
        t_dp = t_dp + np.where(P_e > 0, _data_parallel_s(P_e, strat, d_e, g_e, m_e, G, m, t_fwd, t_bwd, w_gather,
                                                         b_intra, b_node, alpha, params, e_bw), 0.0)

    n_ar = np.where(ck == 2, 6.0, 4.0)
    t_tp = np.where(t > 1, m * (L / p) * n_ar * (2.0 * (t - 1.0) / t * b * s / c * h * 2.0 / b_intra
                                                 + 2.0 * (t - 1.0) * alpha), 0.0)
    per_gpu_net = np.where(N > D, b_node / G, b_intra)  # stages in one NVLink domain talk over NVLink
    t_pp_unit = 2.0 * b * s / c * h * 2.0 / t / per_gpu_net  # one micro-batch's crossing of one stage boundary
    v = np.asarray(virtual_stages, dtype=np.float64)

    shard = np.where((strat == DDP) | (d <= 1), 1.0, shard_group_size(strat, d, g, shard_group))
    # frozen weights are cast to the low precision once per run, not per step
    t_opt = (params.optimizer_bytes_per_param * G_s
             + np.where(adapting, 0.0, np.where(q > 0, 2.0 + 2.0 * w_lp, 0.0) * q * P_s)) / shard / e_bw
    if arch.moe is not None:  # the expert weights a GPU owns: sharded over their d·c/ep replicas
        shard_e = np.where((strat == DDP) | (d_e <= 1), 1.0, np.where(strat == HSDP, g_e, d_e))
        t_opt = t_opt + (params.optimizer_bytes_per_param + np.where(q > 0, 2.0 + 2.0 * w_lp, 0.0) * q) * P_e \
            / shard_e / e_bw
    t_bubble, t_pp, t_step = pipeline_step_s(t_compute, t_dp, t_tp, t_opt, t_pp_unit, p, m, v)
    tokens_per_step = d / c * m * b * s
    tokens = tokens_per_step / t_step
    per_gpu = tokens / N
    mfu = per_gpu * f_model / peak_lp
    parts = np.stack([t_compute - m * (t_elem + t_cp + t_a2a), m * t_elem + t_opt, t_dp, t_tp, t_bubble + t_pp,
                      m * t_cp, m * t_a2a])
    labels = np.array(["compute", "memory-bandwidth", "data-parallel", "tensor-parallel", "pipeline",
                       "context-parallel", "expert-parallel"])
    bound = labels[np.argmax(parts, axis=0)]
    return StepTiming(t_step, t_compute, t_bubble, t_dp, t_tp, t_pp, t_opt, tokens, per_gpu, mfu, bound,
                      np.broadcast_to(m * t_cp, t_step.shape), np.broadcast_to(m * t_a2a, t_step.shape),
                      np.broadcast_to(t_pp_unit, t_step.shape), np.broadcast_to(tokens_per_step, t_step.shape))


def pipeline_step_s(t_compute, t_dp, t_tp, t_opt, t_pp_unit, p, m, v):
    """(T_bubble, T_pp, T_step) of the module docstring for v virtual stages: the one place they are summed, so
    the search's choice of v (layouts.best_virtual_stages) times exactly what step_time does."""
    t_bubble = t_compute * (p - 1.0) / (v * m)
    t_pp = np.where(p > 1, (v * m + p - 1.0) * t_pp_unit, 0.0)
    return t_bubble, t_pp, t_compute + t_bubble + t_dp + t_tp + t_pp + t_opt
