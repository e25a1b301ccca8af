"""Large-model designs: hardware from the catalog × a parallel layout, timed, sized and priced.

A design = hardware (gpu, chassis → G GPUs per node, M nodes, NIC × NICs per node, as in
design_space.py) + layout (strategy ∈ ddp|zero1|zero2|fsdp|hsdp, tensor degree t, pipeline degree p,
micro-batch b, activation checkpointing). The global batch B (sequences) is fixed by the user (or
the default of `DEFAULT_GLOBAL_BATCH_TOKENS` tokens); gradient accumulation is m = ⌈B / (d·b)⌉. A
global batch the user gives is held exactly (`hold_batch`): a layout runs only when d·b·m = B, i.e.
d·b divides B; the default is a target, each design training the smallest multiple of d·b at or
above it.

Search: the layouts are a few hundred; for each layout every hardware design is evaluated in one
numpy pass (a loop over layouts, never over designs), and each hardware design keeps its fastest
layout that fits in memory (ties: the lower layout index, i.e. the simpler layout). The hardware
designs then go through the same cost, Pareto front and exact choice as data-parallel solves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from costopt.hardware.catalog import Gpu, gpu_link_used, intra_node_gb_per_s
from costopt.hardware.rack_scale import domain_gpus_of
from costopt.search.design_space import NO_NIC, DesignSpace
from costopt.core.arrays import row_codes
from costopt.core.errors import InputError
from costopt.core.files import read_toml
from costopt.core.units import gb_per_s_to_bytes_per_s, gbps_to_bytes_per_s
from costopt.perf.llm import finetune
from costopt.perf.llm.arch import CHECKPOINTING, ArchArrays, TransformerConfig
from costopt.perf.llm.layouts import (MICRO_BATCH_CHOICES, PP_CHOICES, TP_CHOICES, Layout, all_layouts,  # noqa: F401
                                      OPTIONAL_FIELDS, PIPELINE_EXTRA_LAYERS, bad_vp as _bad_vp,
                                      best_virtual_stages, dominance_groups, dp_and_grad_accum as _dp_and_grad_accum,
                                      first_fitting_in_group, layout_take, shard_fields as _shard_fields)
from costopt.perf.llm.memory import LLM_STRATEGIES, activation_bytes, finetune_state_parts, model_state_bytes
from costopt.perf.llm.moe import bad_expert_parallel, expert_states_args
from costopt.perf.llm.step import LlmParams, StepTiming, step_time
from costopt.core.paths import DATA_DIR

DEFAULTS_FILE = DATA_DIR / "llm_defaults.toml"
DEFAULT_GLOBAL_BATCH_TOKENS = 4 * 1024 * 1024  # 4M tokens a step: Llama 2 and 3 pre-training used 4M-16M
# Node counts searched for large models: 1-2 significant bits (1, 2, 3, 4, 6, 8, 12, ...), so a search
# over GPUs x chassis x NICs x layouts stays small; `predict` takes any count.
NODE_GRID = tuple(sorted({a * 2 ** k for a in (1, 3) for k in range(0, 12)}))
_PRECISION_FIELD = {"amp_bf16": "tflops_bf16", "amp_fp16": "tflops_fp16", "fp8": "tflops_fp8", "mxfp8": "tflops_fp8",
                    "nvfp4": "tflops_fp4"}
# Training software (`--framework`): each has a fitted factor on the matmul share and its attention kernels'
# fractions (data/llm_defaults.toml [framework]). megatron = Megatron-LM / Megatron-Core / NeMo / Megatron-Bridge
# with Transformer Engine; fsdp = PyTorch FSDP (llm-foundry / Composer); deepspeed = DeepSpeed ZeRO;
# torchtitan = PyTorch's torchtitan (no published run in the fit: the pooled share, said in the output)
FRAMEWORKS = ("megatron", "fsdp", "deepspeed", "torchtitan")
DEFAULT_FRAMEWORK = "megatron"
# Precisions whose weight GEMMs run below 16 bits (step.py, memory.py): the GPU must list the format in
# its catalog entry's `low_precision_formats`
LOW_PRECISIONS = ("fp8", "mxfp8", "nvfp4")
# GPU generation by catalog id prefix, for catalogs whose GPUs carry no `architecture` field
_GENERATION_BY_PREFIX = (("a100", "ampere"), ("a10", "ampere"), ("a40", "ampere"), ("rtx-3090", "ampere"),
                         ("h100", "hopper"), ("h200", "hopper"), ("gh200", "hopper"), ("b200", "blackwell"),
                         ("b300", "blackwell"), ("gb200", "blackwell"))


@dataclass(frozen=True)
class LowPrecision:
    """A low-precision design's constants (data/llm_defaults.toml [low_precision]; step.py's symbols)."""

    name: str
    share: float  # 1 − β: share of the blocks' linear-layer FLOPs run in the low precision
    bytes_per_element: float  # w
    amax_bytes: float  # k_amax


def low_precision_of(precision: str, params: LlmParams) -> LowPrecision | None:
    """The constants of `precision` when its GEMMs run below 16 bits, else None."""
    if precision not in LOW_PRECISIONS:
        return None
    c = params.low_precision[precision]
    return LowPrecision(precision, 1.0 - c["bf16_linear_share"], c["bytes_per_element"], c["amax_read_bytes"])


@lru_cache(maxsize=1)
def default_llm_params() -> LlmParams:
    d = read_toml(DEFAULTS_FILE, "large-model defaults")
    comp, links, mem, fit, lowp = d["compute"], d["links"], d["memory"], d["fit"], d["low_precision"]
    def per_generation(prefix: str) -> dict[str, float]:
        return {k.removeprefix(prefix): float(v) for k, v in comp.items()
                if k.startswith(prefix) and k != prefix + "default"}

    return LlmParams(
        matmul_share_of_mamf=float(comp["matmul_share_of_mamf"]),
        mamf_fraction={str(k): float(v) for k, v in comp["mamf_fraction"].items()},
        attention_fraction=per_generation("attention_fraction_"),
        attention_fraction_default=float(comp["attention_fraction_default"]),
        elementwise_bytes_per_token_per_hidden=float(comp["elementwise_bytes_per_token_per_hidden"]),
        memory_bandwidth_fraction=float(comp["memory_bandwidth_fraction"]),
        nvlink_fraction=float(links["nvlink_fraction"]), pcie_fraction=float(links["pcie_fraction"]),
        network_rdma_fraction=float(links["network_rdma_fraction"]),
        network_tcp_fraction=float(links["network_tcp_fraction"]),
        collective_latency_us=float(links["collective_latency_us"]), overlap_fraction=float(links["overlap_fraction"]),
        reserve_gb=float(mem["reserve_gb"]), reserve_fraction=float(mem["reserve_fraction"]),
        unfused_attention_bytes_per_score=float(comp["unfused_attention_bytes_per_score"]),
        unfused_attention_recompute_bytes_per_score=float(comp["unfused_attention_recompute_bytes_per_score"]),
        optimizer_bytes_per_param=float(comp["optimizer_bytes_per_param"]),
        cross_entropy_bytes_per_logit=float(comp["cross_entropy_bytes_per_logit"]),
        causal_attention_flop_share=float(comp["causal_attention_flop_share"]),
        gemm_shape_dims=float(comp["gemm_shape_dims"]),
        collective_hbm_bytes_per_byte_all_gather=float(links["collective_hbm_bytes_per_byte_all_gather"]),
        collective_hbm_bytes_per_byte_reduce_scatter=float(links["collective_hbm_bytes_per_byte_reduce_scatter"]),
        collective_hbm_bytes_per_byte_all_reduce=float(links["collective_hbm_bytes_per_byte_all_reduce"]),
        fit_note=f"fitted on {fit['rows']} rows, {fit['date']} ({fit['tool']})",
        mamf_fraction_fp8={str(k): float(v) for k, v in comp["mamf_fraction_fp8"].items()},
        low_precision={p: {k: float(lowp[f"{k}_{p}"]) for k in ("bytes_per_element", "bf16_linear_share", "amax_read_bytes")}
                       for p in LOW_PRECISIONS},
        cast_elements_per_token_per_hidden=float(lowp["cast_elements_per_token_per_hidden"]),
        saved_linear_input_elements=float(lowp["saved_linear_input_elements"]),
        low_precision_param_gather=bool(lowp["low_precision_param_gather"]),
        framework_share_factor={f: float(d["framework"][f]["matmul_share_factor"]) for f in FRAMEWORKS},
        framework_causal_share={f: float(d["framework"][f]["causal_attention_flop_share"])
                                for f in FRAMEWORKS if "causal_attention_flop_share" in d["framework"][f]},
        framework_elementwise_bytes={f: float(d["framework"][f]["elementwise_bytes_per_token_per_hidden"])
                                     for f in FRAMEWORKS if "elementwise_bytes_per_token_per_hidden" in d["framework"][f]},
        framework_attention_fraction={f: {k.removeprefix("attention_fraction_"): float(v)
                                          for k, v in d["framework"][f].items() if k.startswith("attention_fraction_")}
                                      for f in FRAMEWORKS},
        moe_load_imbalance=float(d["moe"]["load_imbalance"]), moe_all_to_all_overlap=float(d["moe"]["all_to_all_overlap"]),
        moe_dispatch_once_per_domain=bool(d["moe"]["dispatch_once_per_domain"]),
        moe_expert_gemm_share=float(d["moe"]["expert_gemm_share"]))


def params_for_framework(params: LlmParams, framework: str) -> LlmParams:
    """The parameters a design of `framework` runs with: the matmul share times the framework's fitted factor
    (1 where the fit had none of its runs), its attention kernels' fractions over the defaults."""
    if framework not in FRAMEWORKS:
        raise InputError(f"unknown framework '{framework}' (choose from {', '.join(FRAMEWORKS)})", field="framework")
    factor = params.framework_share_factor.get(framework, 1.0)
    att = {**params.attention_fraction, **params.framework_attention_fraction.get(framework, {})}
    el = params.framework_elementwise_bytes.get(framework, params.elementwise_bytes_per_token_per_hidden)
    causal = params.framework_causal_share.get(framework, params.causal_attention_flop_share)
    return replace(params, matmul_share_of_mamf=params.matmul_share_of_mamf * factor, attention_fraction=att,
                   elementwise_bytes_per_token_per_hidden=el, causal_attention_flop_share=causal,
                   framework_share_factor={}, framework_elementwise_bytes={}, framework_attention_fraction={},
                   framework_causal_share={})


def gpu_generation(gpu: Gpu) -> str:
    arch = getattr(gpu, "architecture", None)
    if arch:
        return str(arch)
    for prefix, gen in _GENERATION_BY_PREFIX:
        if gpu.id.startswith(prefix):
            return gen
    return "other"


def mamf_fraction(gpu: Gpu, params: LlmParams, catalog_gpus=None, precision: str = "amp_bf16") -> tuple[float, str]:
    """The GPU's maximum achievable matmul fraction of its dense peak and where it comes from:
    measured for this GPU, else the mean of its generation's measured GPUs, else the mean of all
    measured (an estimate). `catalog_gpus` (id -> Gpu) tells the generation of the listed ids.
    Low precisions: the measured fp8 fraction ([compute.mamf_fraction_fp8]), else the bf16 one times the
    mean fp8/bf16 ratio of the GPUs measured in both (an estimate); nvfp4 and mxfp8 take the fp8 figure."""
    if precision in LOW_PRECISIONS:
        fp8 = params.mamf_fraction_fp8
        note = "" if precision == "fp8" else f" (no {precision} measurement: the fp8 figure, an estimate)"
        if gpu.id in fp8:
            return fp8[gpu.id], f"measured maximum achievable fp8 matmul rate of the {gpu.id}{note}"
        both = [k for k in sorted(fp8) if k in params.mamf_fraction]
        ratio = sum(fp8[k] / params.mamf_fraction[k] for k in both) / len(both)
        base, where = mamf_fraction(gpu, params, catalog_gpus)
        return base * ratio, f"{where} x {ratio:.3f}, the mean fp8/bf16 ratio of measured GPUs (estimate){note}"
    table = params.mamf_fraction
    if gpu.id in table:
        return table[gpu.id], f"measured maximum achievable matmul rate of the {gpu.id}"
    gen = gpu_generation(gpu)
    by_gen = [v for k, v in sorted(table.items())
              if _generation_of_id(k, catalog_gpus) == gen]
    if by_gen:
        return sum(by_gen) / len(by_gen), f"the {gen} GPUs' measured maximum achievable matmul rate (estimate)"
    vals = list(table.values())
    return sum(vals) / len(vals), "the mean measured maximum achievable matmul rate of other GPUs (estimate)"


def _generation_of_id(gpu_id: str, catalog_gpus) -> str:
    if catalog_gpus and gpu_id in catalog_gpus:
        return gpu_generation(catalog_gpus[gpu_id])
    for prefix, gen in _GENERATION_BY_PREFIX:
        if gpu_id.startswith(prefix):
            return gen
    return "other"


def matmul_fraction(gpu: Gpu, params: LlmParams, catalog_gpus=None, precision: str = "amp_bf16") -> float:
    """e_mm = matmul_share_of_mamf x mamf_fraction (data/llm_defaults.toml), never above 1."""
    return min(1.0, params.matmul_share_of_mamf * mamf_fraction(gpu, params, catalog_gpus, precision)[0])


def check_precision(precision: str) -> None:
    if precision not in _PRECISION_FIELD:
        raise InputError(f"precision '{precision}' is not a large-model training precision "
                         f"(choose from {', '.join(_PRECISION_FIELD)})", field="precision")


def lacks_precision(gpu: Gpu, precision: str) -> str | None:
    """What the GPU lacks to train in `precision` (None: it has it): the words of an exit-2 message."""
    check_precision(precision)
    if precision in LOW_PRECISIONS:
        if precision not in (getattr(gpu, "low_precision_formats", None) or []):
            has = ", ".join(getattr(gpu, "low_precision_formats", None) or []) or "none"
            return (f"the {gpu.id} has no {precision} tensor-core path (its catalog entry lists low-precision "
                    f"formats: {has})")
        return None
    if getattr(gpu, _PRECISION_FIELD[precision], None) is None:
        return f"the {gpu.id} has no {precision} tensor-core peak in the catalog"
    return None


def require_precision_somewhere(gpus, precision: str) -> None:
    """A search in a low precision needs at least one GPU that has the format: else exit 2 naming it."""
    check_precision(precision)
    gpus = list(gpus)
    if gpus and all(lacks_precision(g, precision) for g in gpus):
        raise InputError(f"--precision {precision}: none of the GPUs searched ({', '.join(g.id for g in gpus)}) has a "
                         f"{precision} tensor-core path in the catalog", field="precision")


def peak_flops(gpu: Gpu, precision: str) -> float | None:
    """Dense peak FLOP/s of the precision's weight GEMMs (fp8 and mxfp8: tflops_fp8, nvfp4: tflops_fp4);
    None where the GPU lacks the format."""
    check_precision(precision)
    if lacks_precision(gpu, precision):
        return None
    v = getattr(gpu, _PRECISION_FIELD[precision], None)
    return None if v is None else float(v) * 1e12


def bf16_peak_flops(gpu: Gpu, precision: str) -> float | None:
    """The 16-bit peak the rest of a step runs at (attention core, embeddings, LM head): fp16's for
    amp_fp16, bf16's otherwise."""
    v = gpu.tflops_fp16 if precision == "amp_fp16" else gpu.tflops_bf16
    return None if v is None else float(v) * 1e12


@dataclass
class LlmEvaluation:
    cfg: TransformerConfig
    precision: str
    global_batch: int
    space: DesignSpace  # hardware of each design
    layout: Layout
    grad_accum: np.ndarray
    timing: StepTiming
    memory_per_gpu_bytes: np.ndarray
    memory_states_bytes: np.ndarray  # weights, gradients, optimizer states (and gathered layers under fsdp)
    memory_limit_bytes: np.ndarray
    fits: np.ndarray
    valid: np.ndarray  # layout possible on this hardware (degrees divide the GPUs, precision supported)
    why_not: np.ndarray  # str: '' or the first reason the design cannot run
    framework: str = DEFAULT_FRAMEWORK
    params: LlmParams | None = None  # what it was timed with (the framework's values applied)
    memory_expert_states_bytes: np.ndarray | float = 0.0  # of memory_states_bytes, the routed experts' (moe.py)


def _hardware_arrays(space: DesignSpace, precision: str, params: LlmParams) -> dict[str, np.ndarray]:
    gi = space.gpu_idx
    peak = np.array([peak_flops(g, precision) or np.nan for g in space.gpus])[gi]
    peak_hi = np.array([bf16_peak_flops(g, precision) or np.nan for g in space.gpus])[gi]
    bw = np.array([g.memory_bandwidth_gbs * 1e9 for g in space.gpus])[gi]
    by_id = {g.id: g for g in space.gpus}
    frac = np.array([matmul_fraction(g, params, by_id) for g in space.gpus])[gi]
    frac_lp = np.array([matmul_fraction(g, params, by_id, precision) for g in space.gpus])[gi]
    att = np.array([params.attention_fraction.get(gpu_generation(g), params.attention_fraction_default)
                    for g in space.gpus])[gi]
    mem = np.array([g.memory_gb * 1e9 for g in space.gpus])[gi]
    n_c = len(space.chassis)
    intra = np.zeros((len(space.gpus), n_c))
    pairs = np.flatnonzero(np.bincount(gi * n_c + space.chassis_idx, minlength=len(space.gpus) * n_c))
    for a, c in zip((pairs // n_c).tolist(), (pairs % n_c).tolist()):  # (gpu, chassis) pairs in use only
        g, ch = space.gpus[a], space.chassis[c]
        link_frac = params.nvlink_fraction if gpu_link_used(g, ch) else params.pcie_fraction
        intra[a, c] = gb_per_s_to_bytes_per_s(intra_node_gb_per_s(g, ch)) * link_frac
    nic_rate = np.array([gbps_to_bytes_per_s(n.line_rate_gbps) * (params.network_rdma_fraction if n.transport == "rdma"
                                                                   else params.network_tcp_fraction)
                         for n in space.nics] + [0.0])
    ni = np.where(space.nic_idx == NO_NIC, len(space.nics), space.nic_idx)
    node = nic_rate[ni] * space.nics_per_node
    return {"peak": peak, "peak_hi": peak_hi, "bw": bw, "frac": frac, "frac_lp": frac_lp, "att": att, "mem": mem,
            "intra": intra[gi, space.chassis_idx], "node": np.where(node > 0, node, np.inf),
            "domain": domain_gpus_of(space)}


# Why a layout cannot run on a design, in the order the checks apply (the first that holds is reported).
# Codes in the search, sentences in the output; `{precision}` is filled in.
WHY_NOT = ("", "the GPU has no {precision} tensor-core path",
           "tensor parallel degree above the GPUs of one node (its NVLink domain)",
           "tensor x pipeline degrees do not divide the GPUs", "more pipeline stages than layers",
           "hybrid sharding needs more than one node (more than one NVLink domain)",
           "virtual pipeline stages need pp > 1 and at least one layer per chunk (pp x vp <= layers + 2)", "does not fit in GPU memory",
           "the global batch is not a multiple of data-parallel degree x micro-batch (--global-batch is held exactly)",
           "expert parallel needs a mixture-of-experts model (this one is dense)",
           "the expert-parallel degree must divide the experts and the tensor x data x context-parallel ranks",
           "context parallel needs the sequence length divisible by 2 x cp (two chunks per rank)",
           "a shard group applies to zero1, zero2 and hsdp, and must divide the data x context-parallel ranks and be "
           "below them (all of them: zero1/zero2 or fsdp)")
(_NO_PATH, _TP_ABOVE_NODE, _NOT_DIVIDING, _PP_ABOVE_LAYERS, _HSDP_ONE_NODE, _BAD_VP, _NO_FIT, _BATCH_NOT_HELD, _EP_DENSE,
 _EP_NOT_DIVIDING, _BAD_CP, _BAD_SHARD) = range(1, len(WHY_NOT))


@dataclass
class _Sizing:
    """What a (hardware, layout) pair needs before any timing: whether it can run and its memory."""

    why: np.ndarray  # int code into WHY_NOT (0: it runs)
    dp: np.ndarray  # data-parallel degree d (rounded, >= 1)
    grad_accum: np.ndarray
    used: np.ndarray  # bytes per GPU
    states: np.ndarray
    limit: np.ndarray
    expert_states: np.ndarray | float = 0.0  # of `states`, the routed experts' (moe.py)
    dense_states: np.ndarray | float = 0.0  # of `states`, the rest

    @property
    def valid(self) -> np.ndarray:
        return (self.why == 0) | (self.why == _NO_FIT)

    @property
    def fits(self) -> np.ndarray:
        return self.why == 0


def _sizing(arch: ArchArrays, peak: np.ndarray, mem_bytes: np.ndarray, G: np.ndarray, M: np.ndarray, layout: Layout,
            global_batch: int | np.ndarray, params: LlmParams, lp: LowPrecision | None = None,
            hold_batch: bool = False, domain: np.ndarray | None = None) -> _Sizing:
    """Validity and memory of one layout per element (arrays of equal length); needs only the GPU (its
    peak and memory), the GPUs per node G, the nodes M and the NVLink domain D (`domain`, None: D = G), so
    the search runs it on the distinct (GPU, G, M, D) keys and times only the pairs that fit."""
    N = G * M
    D = G if domain is None else np.maximum(np.asarray(domain, dtype=np.float64), G)
    t, p, b = (layout.tp.astype(np.float64), layout.pp.astype(np.float64), layout.micro_batch.astype(np.float64))
    c = np.ones_like(t) if layout.cp is None else layout.cp.astype(np.float64)
    d = N / (t * p * c)  # data-parallel degree; the weights have d·c replicas (step.py)
    why = np.zeros(len(N), dtype=np.int8)
    ep = np.ones_like(t) if layout.ep is None else layout.ep.astype(np.float64)
    ep_dense, ep_not_dividing = bad_expert_parallel(arch.moe, ep, d * c * t)
    S = np.zeros_like(t) if layout.shard is None else layout.shard.astype(np.float64)
    hsdp = layout.strategy == LLM_STRATEGIES.index("hsdp")
    sharding = np.isin(layout.strategy, [LLM_STRATEGIES.index(x) for x in ("zero1", "zero2", "hsdp")])
    bad_shard = (S > 0) & (~sharding | (S >= d * c) | (np.mod(np.round(d * c), np.maximum(S, 1.0)) != 0) | (S < 2))
    for code, bad in ((_NO_PATH, np.isnan(peak)), (_EP_DENSE, ep_dense), (_TP_ABOVE_NODE, t > D),
                      (_NOT_DIVIDING, (d < 1) | (np.abs(d - np.round(d)) > 1e-9)), (_PP_ABOVE_LAYERS, p > arch.layers),
                      (_HSDP_ONE_NODE, hsdp & (N <= D) & (S == 0)),
                      (_BAD_VP, _bad_vp(layout, p, arch.layers)), (_EP_NOT_DIVIDING, ep_not_dividing),
                      (_BAD_CP, (c > 1) & (np.mod(arch.seq_len, 2.0 * c) != 0)), (_BAD_SHARD, bad_shard)):
        why = np.where((why == 0) & bad, code, why).astype(np.int8)
    d, grad_accum = _dp_and_grad_accum(N, layout, global_batch)
    if hold_batch:  # B held exactly: d x b x m = B, i.e. d x b divides B (checked before memory)
        held = grad_accum * d * b == np.asarray(global_batch, dtype=np.float64)
        why = np.where((why == 0) & ~held, _BATCH_NOT_HELD, why).astype(np.int8)
    shard_group = np.minimum(d * c, np.maximum(D / t, 1.0))  # hsdp's own: one domain's replicas
    # a chosen shard group S (step.py): zero1/zero2 shard over S instead of all d·c replicas, hsdp over S
    dp_states = np.where((S > 0) & ~hsdp, S, d * c)
    hsdp_group = np.where((S > 0) & hsdp, S, shard_group)
    share, w = (0.0, 2.0) if lp is None else (lp.share, lp.bytes_per_element)
    emb = 0.0 if arch.embedding_params is None else arch.embedding_params
    # context parallel: optimizer states shard over the d·c replicas, each GPU holds s/c tokens' activations
    states = model_state_bytes(arch.non_expert_params / (t * p), layout.strategy, dp_states, hsdp_group,
                               arch.layers / p, lowp_share=share * (1.0 - emb / arch.params), lowp_bytes=w,
                               lowp_param_gather=params.low_precision_param_gather)
    if arch.trainable_params is not None:  # LoRA / QLoRA: frozen weights, adapters, their optimizer (memory.py)
        states = np.where(arch.adapter_rank > 0, finetune_state_parts(
            arch, t, p, layout.strategy, dp_states, hsdp_group, lowp_share=share * (1.0 - emb / arch.params),
            lowp_bytes=w, lowp_param_gather=params.low_precision_param_gather)["total"], states)
    act, moe_act = _activation_parts(arch, layout, params, lp)
    used = states + act
    dense = states
    if arch.moe is not None:  # the routed experts: split over ep, their states over the d·c/ep replicas (moe.py)
        P_e, d_e = expert_states_args(arch.moe, t, p, ep, d * c)
        expert = model_state_bytes(P_e, layout.strategy, d_e, np.minimum(shard_group, d_e), arch.layers / p,
                                   lowp_share=share, lowp_bytes=w, lowp_param_gather=params.low_precision_param_gather)
        states, used = states + expert, used + expert + moe_act
    else:
        expert = 0.0
    limit = mem_bytes * (1.0 - params.reserve_fraction) - params.reserve_gb * 1e9
    why = np.where((why == 0) & ~(used <= limit), _NO_FIT, why).astype(np.int8)
    return _Sizing(why, d, grad_accum, used, states, limit, expert, dense)


def _activation_parts(arch: ArchArrays, layout: Layout, params: LlmParams, lp: LowPrecision | None):
    """Activation bytes per GPU (memory.activation_bytes) and a MoE model's extra expert activations (0 if dense):
    they depend on the layout only, not on the hardware."""
    t, b = layout.tp.astype(np.float64), layout.micro_batch.astype(np.float64)
    c = np.ones_like(t) if layout.cp is None else layout.cp.astype(np.float64)
    share, w = (0.0, 2.0) if lp is None else (lp.share, lp.bytes_per_element)
    act = activation_bytes(arch, b / c, t, layout.ckpt, lowp_linear_share=share, lowp_bytes=w,
                           saved_linear_input_elements=params.saved_linear_input_elements)
    if arch.moe is None:
        return act, 0.0
    return act, np.where(layout.ckpt == 2, 0.0, arch.moe.activation_extra_elements(arch.hidden)) * arch.seq_len * b / (c * t)


def _timing(arch: ArchArrays, hw: dict[str, np.ndarray], G: np.ndarray, M: np.ndarray, layout: Layout,
            grad_accum: np.ndarray, peak: np.ndarray, params: LlmParams,
            flash_attention: np.ndarray | None = None, lp: LowPrecision | None = None,
            load_imbalance: np.ndarray | None = None) -> StepTiming:
    """`peak` is the precision's peak (masked where the design cannot run); a low-precision design runs
    its bf16 parts at `hw["peak_hi"]`."""
    vp = 1.0 if layout.vp is None else layout.vp.astype(np.float64)
    cp = 1.0 if layout.cp is None else layout.cp.astype(np.float64)
    common = dict(cp=cp, mem_bw_bytes_per_s=hw["bw"], matmul_fraction=hw["frac"],
                  attention_fraction=hw["att"], intra_bytes_per_s=hw["intra"], node_bytes_per_s=hw["node"],
                  gpus_per_node=G, nodes=M, strategy=layout.strategy, tp=layout.tp.astype(np.float64),
                  pp=layout.pp.astype(np.float64), micro_batch=layout.micro_batch.astype(np.float64),
                  grad_accum=grad_accum, ckpt=layout.ckpt, flash_attention=flash_attention, virtual_stages=vp,
                  nvlink_domain_gpus=hw["domain"],
                  ep=1.0 if layout.ep is None else layout.ep.astype(np.float64), load_imbalance=load_imbalance,
                  shard_group=None if layout.shard is None else layout.shard.astype(np.float64))
    if lp is None:
        return step_time(arch, params, peak_flops=peak, **common)
    hi = np.where(np.isfinite(hw["peak_hi"]), hw["peak_hi"], peak)
    return step_time(arch, params, peak_flops=hi, lowp_peak_flops=peak, lowp_matmul_fraction=hw["frac_lp"],
                     lowp_share=lp.share, lowp_bytes=lp.bytes_per_element, lowp_amax_bytes=lp.amax_bytes, **common)


def evaluate_layouts(cfg: TransformerConfig | ArchArrays, space: DesignSpace, layout: Layout, *, precision: str,
                     global_batch: int | np.ndarray,
                     params: LlmParams | None = None, gpus_per_node: np.ndarray | None = None,
                     flash_attention: np.ndarray | None = None, hold_batch: bool = False,
                     framework: str = DEFAULT_FRAMEWORK, load_imbalance: np.ndarray | None = None) -> LlmEvaluation:
    """One layout per hardware design (arrays of equal length): time, memory and whether it can run.
    `hold_batch`: a layout whose dp x micro-batch does not divide the global batch cannot run.

    `gpus_per_node` overrides the chassis slot count (measured rows that used part of a node); `framework`
    selects the training software's fitted values (params_for_framework)."""
    params = params_for_framework(params or default_llm_params(), framework)
    arch = cfg if isinstance(cfg, ArchArrays) else ArchArrays.of(cfg, len(space))
    hw = _hardware_arrays(space, precision, params)
    lp = low_precision_of(precision, params)
    G = (space.gpus_per_node if gpus_per_node is None else np.asarray(gpus_per_node)).astype(np.float64)
    M = space.nodes.astype(np.float64)
    size = _sizing(arch, hw["peak"], hw["mem"], G, M, layout, global_batch, params, lp, hold_batch, hw["domain"])
    valid = size.valid
    peak = np.where(valid, hw["peak"], 1.0)
    timing = _timing(arch, hw, G, M, layout, size.grad_accum, peak, params, flash_attention, lp, load_imbalance)
    sentences = np.array([w.format(precision=precision) for w in WHY_NOT])
    return LlmEvaluation(cfg, precision, global_batch, space, layout, size.grad_accum, timing, size.used, size.states,
                         size.limit, size.fits, valid, sentences[size.why], framework, params,
                         np.broadcast_to(size.expert_states, size.used.shape))


@dataclass
class TripleSizing:
    """Pass 1 of the search: every layout sized on each distinct (GPU, GPUs per node G, nodes M) triple.

    Matrices are (triples x layouts); `why`, `used_bytes` and `states_bytes` are kept only when asked
    (the report's memory grid reads them; the solve needs only `fits`)."""

    triple_of: np.ndarray  # triple of each design
    first: np.ndarray  # one design of each triple
    fits: np.ndarray  # bool
    why: np.ndarray | None = None  # int codes into WHY_NOT
    used_bytes: np.ndarray | None = None
    states_bytes: np.ndarray | None = None
    limit_bytes: np.ndarray | None = None  # per triple


# Pairs per chunk of the two-pass search. The step-time model makes some hundred temporaries per pair, so a chunk
# whose arrays stay in the CPU's cache (50,000 x 8 bytes = 0.4 MB each) runs the large-model solve in about
# two thirds of the CPU of chunks of 400,000 (most of the saving is system time: fewer large arrays mapped and
# unmapped); the answer does not depend on it (chunks are whole layouts taken in order).
CHUNK_ELEMENTS = 50_000


def size_triples(cfg: TransformerConfig, space: DesignSpace, layouts: Layout, *, precision: str, global_batch: int,
                 params: LlmParams | None = None, keep_sizes: bool = False,
                 chunk_elements: int = CHUNK_ELEMENTS, hold_batch: bool = False,
                 framework: str = DEFAULT_FRAMEWORK) -> TripleSizing:
    """Validity and memory depend on the hardware only through (GPU, G, M): size each layout once per
    distinct triple (a few hundred triples instead of thousands of designs)."""
    params = params_for_framework(params or default_llm_params(), framework)
    n, n_lay = len(space), len(layouts.tp)
    hw = _hardware_arrays(space, precision, params)
    triple_of, n_tri = row_codes(space.gpu_idx, space.gpus_per_node, space.nodes, hw["domain"].astype(np.int64))
    first = np.zeros(n_tri, dtype=np.int64)
    first[triple_of[::-1]] = np.arange(n)[::-1]
    G, M = space.gpus_per_node[first].astype(np.float64), space.nodes[first].astype(np.float64)
    out = TripleSizing(triple_of, first, np.zeros((n_tri, n_lay), dtype=bool))
    if keep_sizes:
        out.why = np.zeros((n_tri, n_lay), dtype=np.int8)
        out.used_bytes = np.zeros((n_tri, n_lay))
        out.states_bytes = np.zeros((n_tri, n_lay))
    # model states and validity depend on the layout but for its micro-batch and checkpointing, activations on the
    # layout only: size the states once per (triple, state key) and add each layout's activations (the same sums
    # as _sizing, so the same bytes)
    lp = low_precision_of(precision, params)
    state_fields = [layouts.strategy, layouts.tp, layouts.pp] + [
        np.zeros(n_lay, dtype=np.int64) if getattr(layouts, f) is None else getattr(layouts, f) for f in OPTIONAL_FIELDS]
    key_of, n_key = row_codes(*state_fields)
    rep = np.zeros(n_key, dtype=np.int64)
    rep[key_of[::-1]] = np.arange(n_lay)[::-1]  # one layout of each key
    key_lay = layout_take(layouts, rep)
    key_lay.micro_batch, key_lay.ckpt = np.ones(len(rep), dtype=np.int64), np.zeros(len(rep), dtype=np.int64)
    why_k, dense_k, expert_k, d_k = (np.zeros((n_tri, n_key), dtype=np.int8), np.zeros((n_tri, n_key)),
                                     np.zeros((n_tri, n_key)), np.zeros((n_tri, n_key)))
    per = max(1, chunk_elements // max(n_tri, 1))
    limit = None
    for start in range(0, n_key, per):
        ks = np.arange(start, min(n_key, start + per))
        tri = np.tile(np.arange(n_tri), len(ks))
        size = _sizing(ArchArrays.of(cfg, len(tri)), hw["peak"][first][tri], hw["mem"][first][tri], G[tri], M[tri],
                       layout_take(key_lay, np.repeat(ks, n_tri)), global_batch, params, lp, False,
                       hw["domain"][first][tri])
        why_k[:, ks] = np.where(size.why == _NO_FIT, 0, size.why).reshape(len(ks), n_tri).T
        dense_k[:, ks] = np.broadcast_to(size.dense_states, size.why.shape).reshape(len(ks), n_tri).T
        expert_k[:, ks] = np.broadcast_to(size.expert_states, size.why.shape).reshape(len(ks), n_tri).T
        d_k[:, ks] = size.dp.reshape(len(ks), n_tri).T
        limit = size.limit[:n_tri]
    act, moe_act = _activation_parts(ArchArrays.of(cfg, n_lay), layouts, params, lp)
    moe_act = np.broadcast_to(moe_act, (n_lay,))
    b_lay = layouts.micro_batch.astype(np.float64)
    B = float(global_batch)
    per = max(1, chunk_elements // max(n_tri, 1))
    for start in range(0, n_lay, per):
        ks = np.arange(start, min(n_lay, start + per))
        kk = key_of[ks]
        why = why_k[:, kk]
        if hold_batch:  # as _sizing: d x b x m = B
            d, b = d_k[:, kk], b_lay[ks][None, :]
            held = np.maximum(np.ceil(B / (d * b)), 1.0) * d * b == B
            why = np.where((why == 0) & ~held, _BATCH_NOT_HELD, why).astype(np.int8)
        used = dense_k[:, kk] + act[ks][None, :]
        if cfg.is_moe:
            used = used + expert_k[:, kk] + moe_act[ks][None, :]
        why = np.where((why == 0) & ~(used <= limit[:, None]), _NO_FIT, why).astype(np.int8)
        out.fits[:, ks] = why == 0
        if keep_sizes:
            out.why[:, ks] = why
            out.used_bytes[:, ks] = used
            out.states_bytes[:, ks] = dense_k[:, kk] + expert_k[:, kk] if cfg.is_moe else dense_k[:, kk]
    out.limit_bytes = limit
    return out


def fastest_fitting(cfg: TransformerConfig, space: DesignSpace, layouts: Layout, sized: TripleSizing, *,
                    precision: str, global_batch: int, group_of_layout: np.ndarray | None = None,
                    params: LlmParams | None = None, chunk_elements: int = CHUNK_ELEMENTS,
                    hold_batch: bool = False, framework: str = DEFAULT_FRAMEWORK,
                    search_vp: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pass 2: time only the (design, layout) pairs whose triple fits, layout-major, in chunks of whole
    layouts of about `chunk_elements` pairs, and of those only the first that fits in its dominance group
    (layouts.py: the others cannot be faster). Returns (tokens/s, layout index, virtual stages), each
    (groups x designs): per design and layout group (default: one group) the fastest fitting layout, the
    lowest index among equals; -1 tokens/s and layout 0 where none fits. `search_vp`: each pair at its best
    virtual pipeline stages (layouts.best_virtual_stages; else 1 or the layouts' own)."""
    params = params_for_framework(params or default_llm_params(), framework)
    n, n_lay = len(space), len(layouts.tp)
    grp = np.zeros(n_lay, dtype=np.int64) if group_of_layout is None else np.asarray(group_of_layout, dtype=np.int64)
    n_grp = int(grp.max()) + 1 if n_lay else 1
    hw = _hardware_arrays(space, precision, params)
    G = space.gpus_per_node.astype(np.float64)
    M = space.nodes.astype(np.float64)
    dom, rank = dominance_groups(layouts, grp)
    fits, triple_of = first_fitting_in_group(sized.fits, dom, rank), sized.triple_of
    best_thr = np.full((n_grp, n), -1.0)
    best_k = np.zeros((n_grp, n), dtype=np.int64)
    best_v = np.ones((n_grp, n), dtype=np.int64)
    per_triple = np.bincount(triple_of, minlength=len(fits))
    cell_tri, cell_lay = np.nonzero(fits)  # few cells fit: count each layout's pairs from them (no int matrix)
    pairs_of_layout = np.bincount(cell_lay, weights=per_triple[cell_tri], minlength=n_lay).astype(np.int64)
    pairs_before = np.r_[0, np.cumsum(pairs_of_layout)]
    by_triple = np.argsort(triple_of, kind="stable")  # the designs of each triple, contiguous
    triple_start = np.r_[0, np.cumsum(per_triple)[:-1]]
    start = 0
    while start < n_lay:
        stop = int(np.searchsorted(pairs_before, pairs_before[start] + chunk_elements, side="right")) - 1
        stop = min(max(stop, start + 1), n_lay)
        ks = np.arange(start, stop)
        start = stop
        tri_i, lay_pos = np.nonzero(fits[:, ks])  # the fitting (triple, layout) cells, then each triple's designs
        reps = per_triple[tri_i]
        if reps.sum() == 0:
            continue
        offset = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        design = by_triple[np.repeat(triple_start[tri_i], reps) + offset]
        lay_k = ks[np.repeat(lay_pos, reps)]
        lay = layout_take(layouts, lay_k)
        hw_pair = {k: v[design] for k, v in hw.items()}
        arch = ArchArrays.of(cfg, len(design))
        lp = low_precision_of(precision, params)
        grad_accum = _dp_and_grad_accum(G[design] * M[design], lay, global_batch)[1]  # the pair fits: only m needed
        tm = _timing(arch, hw_pair, G[design], M[design], lay, grad_accum, hw_pair["peak"], params, lp=lp)
        thr, vp = tm.tokens_per_s, np.ones(len(design), dtype=np.int64)
        if search_vp and lay.vp is None:
            thr, vp = best_virtual_stages(tm, lay.pp.astype(np.float64), grad_accum, float(cfg.layers))
        # per (design, group), the fastest pair of this chunk, the lowest layout index among equals: a design's
        # pairs come in ascending layout order (its triple's row of `fits`), and lexsort is stable
        g = grp[lay_k]
        cell = design * n_grp + g
        order = np.lexsort((-thr, cell))
        head = order[np.r_[True, cell[order][1:] != cell[order][:-1]]]
        gh, dh = g[head], design[head]
        better = thr[head] > best_thr[gh, dh]
        best_thr[gh[better], dh[better]] = thr[head][better]
        best_k[gh[better], dh[better]] = lay_k[head][better]
        best_v[gh[better], dh[better]] = vp[head][better]
    return best_thr, best_k, best_v


def best_layout_per_design(cfg: TransformerConfig, space: DesignSpace, *, precision: str, global_batch: int,
                           params: LlmParams | None = None, layouts: Layout | None = None,
                           chunk_elements: int = CHUNK_ELEMENTS, hold_batch: bool = False,
                           framework: str = DEFAULT_FRAMEWORK, search_vp: bool = False) -> LlmEvaluation:
    """For every hardware design the fastest layout that fits (module docstring); ties go to the lower
    layout index. `search_vp`: each layout at its best virtual pipeline stages (layouts.py). Designs with no layout that fits keep layout 0 (and say why). `hold_batch`: only
    layouts whose dp x micro-batch divides the global batch fit (`--global-batch` held exactly).

    Two passes, so only pairs that can run are timed: `size_triples` (validity and memory on the
    distinct (GPU, G, M) triples), then `fastest_fitting` (step time of the pairs that fit). Every
    number is the same element-wise expression as `evaluate_layouts`, so the choice is identical to
    timing every pair (tests/test_llm_search.py checks it against that plain search).
    """
    params = params_for_framework(params or default_llm_params(), framework)
    layouts = layouts or all_layouts()
    sized = size_triples(cfg, space, layouts, precision=precision, global_batch=global_batch, params=params,
                         chunk_elements=chunk_elements, hold_batch=hold_batch)
    _, best_k, best_v = fastest_fitting(cfg, space, layouts, sized, precision=precision, global_batch=global_batch,
                                        params=params, chunk_elements=chunk_elements, hold_batch=hold_batch,
                                        search_vp=search_vp)
    chosen = layout_take(layouts, best_k[0])
    if search_vp and chosen.vp is None:
        chosen.vp = best_v[0]
    return evaluate_layouts(cfg, space, chosen, precision=precision,
                            global_batch=global_batch, params=params, hold_batch=hold_batch, framework=framework)


def default_global_batch(cfg: TransformerConfig) -> int:
    """4M tokens for pre-training; a fine-tune's default batch of sequences (data/finetune.toml)."""
    if cfg.finetune is not None:
        return finetune.default_global_batch_sequences()
    return max(1, int(round(DEFAULT_GLOBAL_BATCH_TOKENS / cfg.seq_len)))


def design_record(ev: LlmEvaluation, i: int) -> dict:
    """One design as a DESIGN-style dict (large-model fields)."""
    s, lay, tm = ev.space, ev.layout, ev.timing
    g = s.gpus[s.gpu_idx[i]]
    nic = None if s.nic_idx[i] == NO_NIC else s.nics[s.nic_idx[i]].id
    G, M = int(s.gpus_per_node[i]), int(s.nodes[i])
    t, p = int(lay.tp[i]), int(lay.pp[i])
    c = 1 if lay.cp is None else int(lay.cp[i])
    ok = bool(ev.fits[i])
    nan = float("nan")
    rec = {
        "gpu": g.id, "chassis": s.chassis[s.chassis_idx[i]].id, "gpus_per_node": G, "nodes": M, "total_gpus": G * M,
        "nic": nic, "nics_per_node": int(s.nics_per_node[i]) if nic else 0,
        "strategy": LLM_STRATEGIES[lay.strategy[i]], "tp": t, "pp": p, "dp": (G * M) // (t * p * c),
        "micro_batch": int(lay.micro_batch[i]), "grad_accum": int(ev.grad_accum[i]),
        "global_batch_sequences": int(ev.grad_accum[i]) * int(lay.micro_batch[i]) * max((G * M) // (t * p * c), 1),
        "seq_len": ev.cfg.seq_len, "activation_checkpointing": CHECKPOINTING[lay.ckpt[i]],
        "precision": ev.precision, "feasible": ok, "infeasible_reason": ev.why_not[i] or None,
        "tokens_per_s": float(tm.tokens_per_s[i]) if ok else nan,
        "tokens_per_s_per_gpu": float(tm.tokens_per_s_per_gpu[i]) if ok else nan,
        "mfu": float(tm.mfu[i]) if ok else nan,
        "memory_per_gpu_gb": float(ev.memory_per_gpu_bytes[i]) / 1e9,
        "memory_model_states_gb": float(ev.memory_states_bytes[i]) / 1e9,
        "memory_activations_gb": float(ev.memory_per_gpu_bytes[i] - ev.memory_states_bytes[i]) / 1e9,
        "memory_limit_gb": float(ev.memory_limit_bytes[i]) / 1e9,
        "gpu_memory_gb": g.memory_gb,
        "t_step_s": float(tm.t_step_s[i]), "t_compute_s": float(tm.t_compute_s[i]),
        "t_pipeline_bubble_s": float(tm.t_bubble_s[i]), "t_data_parallel_exposed_s": float(tm.t_dp_exposed_s[i]),
        "t_tensor_parallel_s": float(tm.t_tp_s[i]), "t_pipeline_p2p_s": float(tm.t_pp_s[i]),
        "t_optimizer_s": float(tm.t_opt_s[i]),
        "bottleneck": str(tm.bound[i]),
        "compute_basis": (f"roofline: {ev.cfg.hardware_flops_per_token(CHECKPOINTING[lay.ckpt[i]]) / 1e9:.1f} "
                          f"GFLOP/token, weight matmuls at {_mm_note(g, s.gpus, ev.precision, ev.params)} of the {g.id} "
                          f"{ev.precision} peak{_lowp_note(ev)}; an estimate, not a measurement on this GPU"),
        "mfu_basis": (f"model FLOPs 6·P + 12·L·h·s = {ev.cfg.model_flops_per_token / 1e9:.1f} GFLOP per token (PaLM "
                      f"convention: no recompute) over the {g.id}'s dense {ev.precision} peak "
                      f"{(peak_flops(g, ev.precision) or float('nan')) / 1e12:,.0f} TFLOP/s"),
        "mfu_bf16_peak": (float(tm.tokens_per_s_per_gpu[i]) * ev.cfg.model_flops_per_token
                          / (bf16_peak_flops(g, ev.precision) or float("nan")) if ok else nan),
    }
    rec["framework"] = ev.framework
    rec["framework_basis"] = framework_basis(ev.framework)
    if lay.vp is not None:
        rec["vp"] = int(lay.vp[i])
    if lay.cp is not None:
        rec["cp"] = c
    rec.update(_shard_fields(ev, i))
    rec["t_context_parallel_exposed_s"] = float(tm.t_cp_s[i])
    if getattr(ev.cfg, "finetune", None) is not None:
        rec.update(_finetune_fields(ev, i))
    if ev.cfg.is_moe:  # mixture of experts (moe.py): expert parallel, the experts' share of memory, active parameters
        rec["ep"] = 1 if lay.ep is None else int(lay.ep[i])
        rec["expert_data_parallel"] = max((G * M) // (p * rec["ep"]), 1)
        rec["memory_expert_states_gb"] = float(ev.memory_expert_states_bytes[i]) / 1e9
        rec["t_expert_parallel_exposed_s"] = float(tm.t_ep_s[i])
        rec["active_params"] = ev.cfg.active_params
        rec["mfu_basis"] = rec["mfu_basis"].replace("6·P + 12·L·h·s", "6·P_active + 12·L·a·d_h·s") + (
            f" (P_active = {ev.cfg.active_params / 1e9:.1f} B of {ev.cfg.params / 1e9:.1f} B parameters: attention, "
            f"dense layers, the top-{ev.cfg.top_k} routed and {ev.cfg.shared_experts} shared experts and the router)")
        mp = ev.params or default_llm_params()
        rec["moe_basis"] = (f"{ev.cfg.num_experts} experts, top {ev.cfg.top_k}, expert load imbalance "
                            f"{mp.moe_load_imbalance:g} (data/llm_defaults.toml [moe]: an estimate), routed grouped GEMMs at "
                            f"{mp.moe_expert_gemm_share:.2f} of the dense matmul rate (fitted on Megatron-Bridge's MoE runs), "
                            "all-to-all dispatch and combine 4 times per MoE layer per micro-batch, inside the NVLink "
                            "domain while the ep group fits it, else over the NICs")
    return rec


def _finetune_fields(ev: LlmEvaluation, i: int) -> dict:
    """A fine-tune's fields (finetune.py): what is trained, the MFU's FLOP count, memory per GPU by part."""
    cfg, lay = ev.cfg, ev.layout
    ft = cfg.finetune
    out = {"finetune": ft.method, "finetune_basis": ft.describe()}
    if not ft.adapts:
        return out
    arch = ArchArrays.of(cfg)
    p_a = int(arch.trainable_params[0])
    out.update({"lora_rank": ft.rank, "lora_targets": ft.targets, "trainable_params": p_a,
                "frozen_params": int(cfg.params)})
    out["mfu_basis"] = (f"model FLOPs of a step with frozen weights 4·P + 2·P_a + 12·L·h·s = "
                        f"{cfg.model_flops_per_token / 1e9:.1f} GFLOP per token (no weight gradients for the frozen "
                        f"weights, no recompute; NeMo and Megatron-Bridge count about 4·P for LoRA, 10-20% less) "
                        f"over the {_gpu_id(ev, i)}'s dense {ev.precision} peak")
    s = ev.space
    G, M = float(s.gpus_per_node[i]), float(s.nodes[i])
    t, p = float(lay.tp[i]), float(lay.pp[i])
    c = 1.0 if lay.cp is None else float(lay.cp[i])
    d = G * M / (t * p * c)
    lp = low_precision_of(ev.precision, ev.params or default_llm_params())
    share, w = (0.0, 2.0) if lp is None else (lp.share, lp.bytes_per_element)
    emb = 0.0 if arch.embedding_params is None else arch.embedding_params
    D = max(float(domain_gpus_of(s)[i]), G)  # the NVLink domain: hsdp's shard group (as _sizing)
    parts = finetune_state_parts(arch, np.array([t]), np.array([p]), lay.strategy[i:i + 1], np.array([d * c]),
                                 np.array([min(d * c, max(D / t, 1.0))]), lowp_share=share * (1.0 - emb / arch.params),
                                 lowp_bytes=w, lowp_param_gather=(ev.params or default_llm_params()).low_precision_param_gather)
    for k in ("frozen_weights", "adapters", "optimizer"):
        out[f"memory_{k}_gb"] = float(parts[k][0]) / 1e9
    return out


def _gpu_id(ev: LlmEvaluation, i: int) -> str:
    return ev.space.gpus[ev.space.gpu_idx[i]].id


def framework_basis(framework: str) -> str:
    """Where a framework's efficiency comes from, in words (the fit's rows of it, or none)."""
    d = read_toml(DEFAULTS_FILE, "large-model defaults")
    rows = {"megatron": "NeMo, Megatron-Bridge (GB200/GB300 NVL72 included), Megatron-LM and Megatron-Core runs (81 rows)",
            "fsdp": "llm-foundry's PyTorch FSDP runs (216 rows)", "deepspeed": "six DeepSpeed ZeRO-3 runs of SC21 Table 2"}
    if framework in rows:
        return (f"{framework}: matmul share and element-wise bytes fitted on {rows[framework]}, "
                f"{d['fit']['date']}")
    return f"{framework}: no published run in the fit; the pooled values of all frameworks (an estimate)"


def _mm_note(g: Gpu, gpus, precision: str = "amp_bf16", params: LlmParams | None = None) -> str:
    p = params or default_llm_params()
    frac, where = mamf_fraction(g, p, {x.id: x for x in gpus}, precision)
    return f"{min(1.0, p.matmul_share_of_mamf * frac):.0%} ({p.matmul_share_of_mamf:.2f} x {frac:.3f}, {where})"


def _lowp_note(ev: LlmEvaluation) -> str:
    lp = low_precision_of(ev.precision, default_llm_params())
    if lp is None:
        return ""
    return (f" ({lp.share:.0%} of the blocks' linear layers; attention core, embeddings, LM head, norms and the "
            f"optimizer in bf16/fp32; {lp.bytes_per_element:g} bytes per element with scales, cast traffic charged)")


def tokens_to_train_hours(tokens: float, tokens_per_s: float) -> float:
    return tokens / tokens_per_s / 3600.0 if tokens_per_s > 0 and math.isfinite(tokens_per_s) else float("inf")
