"""Fine-tuning workloads of a transformer: full supervised fine-tuning (SFT), LoRA and QLoRA.

Chosen with `--strategy sft | lora | qlora` beside (or instead of) a layout name (ddp, zero1, zero2,
fsdp, hsdp): one rule, `--strategy` says what is trained and how it is laid out (split_strategies).
`--lora-rank r` and `--lora-targets qkv | attention | all-linear` shape the adapters (LoRA and QLoRA
only: refused otherwise); the defaults (r = 32 on every linear layer, NeMo 2.0's and Megatron-Bridge's)
are in data/finetune.toml and said in the output. Symbols as in arch.py, step.py and memory.py:
P parameters, L layers, h hidden, a heads, a_kv key/value heads, f feed-forward size, s sequence, t, p
tensor and pipeline degrees, d the data-parallel degree.

SFT. A full fine-tune trains every weight: the maths is pre-training's, unchanged. What differs is the
data: packed sequences of the fine-tuning set at `--seq-len`, and a smaller default global batch (32
sequences, data/finetune.toml). One path: an SFT design is a pre-training design on that data.

LoRA (Hu et al. 2021). Each adapted matrix W (d_in x d_out, frozen) gains A (d_in x r) and B (r x d_out),
trained; y = x·W + (x·A)·B·α/r. Per layer, the matrices by target set (gated FFN: 3 matrices, else 2):

    qkv          Q, K, V (one fused QKV GEMM): (h, h), (h, h·a_kv/a), (h, h·a_kv/a)
    attention    qkv + the output projection (h, h)
    all-linear   attention + the FFN: gate and up (h, f) each (up only when not gated), down (f, h)

    P_a = L · r · Σ (d_in + d_out)        trainable (adapter) parameters; P_base frozen; P = P_base + P_a

FLOPs per token (forward 2 per weight; backward: the input gradient dx = dy·Wᵀ needs 2 per weight for
every layer, frozen or not, so gradients reach the lower layers' adapters; the weight gradient dW = xᵀ·dy,
2 more, only for trainable weights):

    F_model = 4·P + 2·P_a + 12·L·h·s  =  4·P_base + 6·P_a + 12·L·h·s
    (pre-training / SFT: P_a = P, 6·P + 12·L·h·s). The attention core keeps its full count: its backward
    (dQ, dK, dV) is all input gradients. Recompute adds the forward as in arch.py (full: 2·P + 4·L·h·s).

MFU convention: model FLOPs F_model above (PaLM's convention applied to what a LoRA step computes) over
the dense peak of the design's GEMM precision. NeMo 24.07 and Megatron-Bridge print "model TFLOP/s" for
LoRA at about 2/3 of their full fine-tune count (Llama 2 7B: 663 / 24,824 = 26.7 GFLOP per token against
SFT's 673 / 16,891 = 39.8; Llama 3 70B: 735 / 2,643 = 278 against 710 / 1,638 = 433): the 4·P of this
count without the adapters and with a smaller attention term, so their LoRA MFU reads 10-20% below
this one's at s = 4096.

Adapter GEMMs have one side of width r: they run at the shape slowdown of arch/step.py's
1 + c·(1/K + 1/N) with the narrow side r, S_a = 1 + c·(1/r + 1/h), in bf16 (also in fp8 designs: the
adapters are not Transformer Engine layers), and their outputs are added into the base GEMMs' (forward)
and their input gradients into the base's (backward): k_add = 6 bytes per element (read, read, write in
bf16) of d_out and of d_in, per adapted matrix per token:

    T_adapter = [6·P_a·S_a / (peak_bf16·e_mm') + k_add·(P_a/r) / (B_mem·e_mem)] · b·s/(c·t·p)   per micro-batch

Element-wise work per token (norms, activations, their gradients) is pre-training's: a frozen layer still
back-propagates through them; its recompute share is taken as pre-training's (4/3 of the forward's under
full recompute).

Memory (memory.py): frozen weights P_base in bf16 (2 bytes), no gradients or optimizer states for them;
the adapters' weights, gradients and Adam states (16·P_a) as model states sharded by the strategy (zero1:
4·P_a + 12·P_a/d, ...). Frozen weights: ddp, zero1, zero2 hold them whole (2·P_base/(t·p)); fsdp, hsdp
shard them (2·P_base/(t·p)/d, /g) plus two gathered layers. Activations as in pre-training (the inputs
of a frozen linear are kept: its adapter's A reads the same input for dA, and frameworks keep them), with
the same checkpointing options.

QLoRA (Dettmers et al. 2023). The blocks' frozen linear weights P_q = L·(P_att + P_ffn) are stored in NF4
with double-quantized constants, w4 = (4 + 0.127)/8 = 0.5159 bytes each; embeddings and LM head stay
bf16 (data/finetune.toml). Frozen bytes b_f = (w4·P_q + 2·(P_base − P_q)) / P_base per frozen weight.
Each use of a quantized matrix dequantizes it to bf16 first, reading w4 and writing 2 bytes, at the
memory bandwidth, n_use = 2 per micro-batch (forward, input-gradient GEMM), 3 under full recompute:

    T_dequant = n_use · (w4 + 2) · P_q/(t·p) / (B_mem·e_mem)     per micro-batch
    memory: b_f·P_base/(t·p) (sharded by fsdp/hsdp as above) + one layer's linear weights in bf16
            (the dequantized copy being multiplied, 2·P_q/L/(t·p): an upper bound)

QLoRA's GEMMs run in 16-bit after dequantization: an fp8 / mxfp8 / nvfp4 QLoRA design is refused (exit 2),
and so is one with tensor, pipeline or context parallelism: the NF4 stacks that train it (bitsandbytes
with PEFT, FSDP-QLoRA) shard by data parallel / FSDP only.

Communication: the data-parallel gradient reduction carries only the adapters' gradients, 4·P_a/(t·p)
bytes (tiny), and zero1/zero2 all-gather only the adapters' updated weights (2·P_a/(t·p)); fsdp/hsdp still
all-gather the frozen weights every micro-batch, forward and backward (2 bytes per weight; QLoRA its b_f
bytes: the quantized storage is what is sharded), and reduce-scatter the adapters' gradients. Tensor-
parallel all-reduces and pipeline sends are pre-training's (activations and their gradients still flow).
The optimizer update (30 bytes per parameter owned) runs on the adapters only; frozen low-precision weight
casts happen once per run, not per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from costopt.core.errors import InputError
from costopt.core.files import read_toml
from costopt.core.paths import DATA_DIR

FINETUNE_FILE = DATA_DIR / "finetune.toml"
FINETUNES = ("sft", "lora", "qlora")
ADAPTING = ("lora", "qlora")
LORA_TARGETS = ("qkv", "attention", "all-linear")
# precisions whose GEMMs QLoRA can run in (it dequantizes its NF4 weights to the 16-bit compute dtype)
QLORA_PRECISIONS = ("amp_bf16", "amp_fp16")


@lru_cache(maxsize=1)
def constants() -> dict:
    return read_toml(FINETUNE_FILE, "fine-tuning defaults")


@dataclass(frozen=True)
class FineTune:
    """What a fine-tune trains: `method` in FINETUNES; `rank`, `targets` for LoRA/QLoRA (0, '' for SFT);
    `defaults` names the settings taken from data/finetune.toml (said in the output)."""

    method: str
    rank: int = 0
    targets: str = ""
    defaults: tuple = ()

    @property
    def adapts(self) -> bool:
        return self.method in ADAPTING

    def describe(self) -> str:
        if not self.adapts:
            return ("full supervised fine-tune (sft): every weight trained, pre-training's maths on the fine-tuning "
                    "data (packed sequences of --seq-len)")
        note = f" ({' and '.join(self.defaults)} by default)" if self.defaults else ""
        base = "NF4 4-bit frozen base weights (QLoRA)" if self.method == "qlora" else "bf16 frozen base weights"
        return f"{self.method}: rank {self.rank} adapters on {self.targets} matrices{note}, {base}"


def split_strategies(strategies) -> tuple[str | None, list[str]]:
    """`--strategy` values -> (the fine-tune named, or None; the layout names). At most one fine-tune."""
    vals = [strategies] if isinstance(strategies, str) else list(strategies or [])
    named = [s for s in vals if s in FINETUNES]
    if len(set(named)) > 1:
        raise InputError(f"--strategy: one fine-tune at a time (got {', '.join(named)}); a fine-tune (sft, lora, "
                         "qlora) goes with layout names (ddp, zero1, zero2, fsdp, hsdp)", field="strategy")
    return (named[0] if named else None), [s for s in vals if s not in FINETUNES]


def resolve(method: str | None, rank: int | None = None, targets: str | None = None) -> FineTune | None:
    """The fine-tune of a request; `rank`/`targets` without lora or qlora are refused (never ignored)."""
    if method is None or method == "sft":
        for flag, v in (("--lora-rank", rank), ("--lora-targets", targets)):
            if v is not None:
                raise InputError(f"{flag}: applies to LoRA/QLoRA fine-tunes (--strategy lora or qlora); "
                                 f"{'a full fine-tune (sft)' if method else 'pre-training'} has no adapters",
                                 field=flag[2:].replace("-", "_"))
        return None if method is None else FineTune("sft")
    if method not in FINETUNES:
        raise InputError(f"unknown fine-tune '{method}' (choose from {', '.join(FINETUNES)})", field="strategy")
    c = constants()["lora"]
    defaults = []
    if rank is None:
        rank = int(c["default_rank"])
        defaults.append(f"rank {rank}")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputError(f"--lora-rank must be a whole number >= 1, got {rank}", field="lora_rank")
    if targets is None:
        targets = str(c["default_targets"])
        defaults.append(f"targets {targets}")
    if targets not in LORA_TARGETS:
        raise InputError(f"--lora-targets '{targets}' (choose from {', '.join(LORA_TARGETS)})", field="lora_targets")
    return FineTune(method, rank, targets, tuple(defaults))


def adapted_shapes(cfg, targets: str) -> list[tuple[int, int]]:
    """(d_in, d_out) of each adapted matrix of one layer (module docstring)."""
    h, kv = cfg.hidden, cfg.hidden * cfg.kv_heads // cfg.heads
    shapes = [(h, h), (h, kv), (h, kv)]
    if targets in ("attention", "all-linear"):
        shapes.append((h, h))
    if targets == "all-linear":
        shapes += [(h, cfg.ffn_hidden)] * (2 if cfg.gated_ffn else 1) + [(cfg.ffn_hidden, h)]
    return shapes


def adapter_params(cfg, ft: FineTune) -> int:
    """P_a = L·r·Σ(d_in + d_out) over the adapted matrices (0 for SFT)."""
    if not ft.adapts:
        return 0
    return cfg.layers * ft.rank * sum(a + b for a, b in adapted_shapes(cfg, ft.targets))


def block_linear_params(cfg) -> int:
    """P_q = L·(P_att + P_ffn): the blocks' linear weights (what QLoRA stores in NF4)."""
    h = cfg.hidden
    att = 2 * h * h + 2 * h * (h * cfg.kv_heads // cfg.heads)
    return cfg.layers * (att + (3 if cfg.gated_ffn else 2) * h * cfg.ffn_hidden)


def nf4_bytes_per_weight() -> float:
    """w4 = (4 + 0.127) / 8 bytes per NF4 weight with double-quantized constants (data/finetune.toml)."""
    q = constants()["qlora"]
    return (float(q["nf4_bits_per_weight"]) + float(q["quantization_constant_bits_per_weight"])) / 8.0


def frozen_weight_bytes(cfg, ft: FineTune) -> float:
    """b_f: mean bytes per frozen weight (2 in bf16; QLoRA: NF4 block linears, bf16 embeddings)."""
    if ft.method != "qlora":
        return 2.0
    p_base, p_q = cfg.params, min(block_linear_params(cfg), cfg.params)
    return (nf4_bytes_per_weight() * p_q + 2.0 * (p_base - p_q)) / p_base


def lacks_finetune(ft: FineTune | None, precision: str, tp: int = 1, pp: int = 1, cp: int = 1) -> str | None:
    """Why a design cannot run this fine-tune (None: it can); the words of an exit-2 message."""
    if ft is None or ft.method != "qlora":
        return None
    if precision not in QLORA_PRECISIONS:
        return (f"QLoRA dequantizes its NF4 base weights to 16-bit and runs its GEMMs there: it has no {precision} "
                f"path (give --precision amp_bf16 or amp_fp16, or --strategy lora)")
    if max(tp, pp, cp) > 1:
        return ("QLoRA's NF4 base weights are not split by tensor, pipeline or context parallel in the stacks that "
                "train it (bitsandbytes with PEFT, FSDP-QLoRA): use --tp 1 --pp 1 --cp 1 with ddp or fsdp, or "
                "--strategy lora")
    return None


def columns(cfgs: list) -> dict[str, np.ndarray]:
    """The per-design arrays arch.ArchArrays carries for adapting fine-tunes (empty when no design adapts):
    trainable parameters P_a, total P = P_base + P_a (the `params` column), frozen bytes per weight b_f,
    adapter rank r, and the QLoRA dequantization bytes per use (w4 + 2)·P_q (0 for LoRA)."""
    if not any(getattr(c, "finetune", None) is not None and c.finetune.adapts for c in cfgs):
        return {}
    dq = float(constants()["qlora"]["dequantized_bytes_per_weight"])
    rows = []
    for c in cfgs:
        ft = getattr(c, "finetune", None)
        if ft is None or not ft.adapts:  # pre-training / SFT beside fine-tunes: every weight trainable
            rows.append((c.params, c.params, 2.0, 0.0, 0.0))
            continue
        p_a = adapter_params(c, ft)
        deq = (nf4_bytes_per_weight() + dq) * block_linear_params(c) if ft.method == "qlora" else 0.0
        rows.append((float(p_a), float(c.params + p_a), frozen_weight_bytes(c, ft), float(ft.rank), deq))
    a = np.array(rows, dtype=np.float64)
    return {"trainable_params": a[:, 0], "params": a[:, 1], "frozen_weight_bytes": a[:, 2], "adapter_rank": a[:, 3],
            "dequant_bytes_per_use": a[:, 4]}


def default_global_batch_sequences() -> int:
    return int(constants()["batch"]["default_global_batch_sequences"])


def adapter_add_bytes() -> float:
    return float(constants()["lora"]["adapter_add_bytes_per_element"])


__all__ = ["ADAPTING", "FINETUNES", "FineTune", "LORA_TARGETS", "adapter_params", "block_linear_params", "columns",
           "frozen_weight_bytes", "lacks_finetune", "nf4_bytes_per_weight", "resolve", "split_strategies"]
