"""Decoder-only transformers described by their architecture: parameters, FLOPs and bytes per token.

A model is fully described by its layer count L, hidden size h, attention heads a (and key/value
heads a_kv for grouped-query attention), feed-forward size f, vocabulary V and sequence length s,
plus two shape switches: a gated feed-forward (SwiGLU: three h×f matrices, Llama) or a plain one
(two h×f matrices, GPT), and tied or separate input/output embeddings.

Parameters (biases and norm weights are O(h) per layer and counted, but matter little):

    attention per layer   P_att = h·h (Q) + 2·h·(h·a_kv/a) (K, V) + h·h (O)
    feed-forward          P_ffn = (3 if gated else 2)·h·f
    norms                 2·h per layer + h final
    embeddings            V·h, twice when untied (input table + output projection)
    P = L·(P_att + P_ffn + 2h) + h + V·h·(1 if tied else 2)

Model FLOPs per token of one training step (forward + backward = 3 × forward; the convention of
PaLM, appendix B, and llm-foundry's MFU):

    F_model = 6·P + 12·L·h·s          (6·P: every weight is a multiply-add forward, twice that back;
                                       12·L·h·s: attention scores QKᵀ and A·V, 2·2·s·h per layer
                                       forward, not halved for the causal mask)

Activation checkpointing re-runs forward work in backward; the hardware FLOPs per token are then

    none       F_hw = F_model
    selective  F_hw = F_model + 4·L·h·s        (only the attention core is recomputed; Korthikanti 2022)
    full       F_hw = F_model + 2·P + 4·L·h·s  (the whole forward again: 4/3 of F_model)

Mixture-of-experts models (num_experts > 0; moe.py has their equations) count the routed experts they
hold in P (memory) and the ones a token meets in the active count P_act, which the FLOPs use:
F_model = 6·P_act + 12·L·a·d_h·s (a·d_h = h unless `head_dim` says otherwise).

Check by hand against llm-foundry's MPT-70B row (64.862e9 parameters, L = 80, h = 8192, s = 2048):
6·P = 389.17e9, 12·L·h·s = 16.11e9, F_model = 405.3e9 FLOPs/token; at its printed 1,007 tokens/s per
H100 (989 TFLOP/s dense bf16) that is MFU 41.3%, the table's 41.25%.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from costopt.core.errors import InputError
from costopt.core.files import read_toml
from costopt.core.paths import DATA_DIR
from costopt.perf.llm import finetune

if TYPE_CHECKING:
    from costopt.perf.llm.moe import MoeArrays

LLM_ZOO_DIR = DATA_DIR / "llm"
CHECKPOINTING = ("none", "selective", "full")

_FIELDS = {"name": str, "description": str, "source": str, "layers": int, "hidden": int, "heads": int,
           "kv_heads": int, "ffn_hidden": int, "vocab": int, "seq_len": int, "gated_ffn": bool,
           "tied_embeddings": bool, "params": int, "num_experts": int, "top_k": int, "moe_ffn_hidden": int,
           "shared_experts": int, "dense_layers": int, "head_dim": int, "attention_params": int, "date": str}
_MOE_KEYS = ("top_k", "moe_ffn_hidden", "shared_experts", "dense_layers")
_REQUIRED = ("layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len", "source")


@dataclass(frozen=True)
class TransformerConfig:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    gated_ffn: bool = False
    tied_embeddings: bool = False
    source: str = ""
    description: str = ""
    params_override: int | None = None  # a published parameter count, when the shape switches are unknown
    # mixture of experts (moe.py): 0 experts = a dense model
    num_experts: int = 0
    top_k: int = 0
    moe_ffn_hidden: int = 0
    shared_experts: int = 0
    dense_layers: int = 0  # the first layers with a dense feed-forward of ffn_hidden (the rest are MoE)
    head_dim: int | None = None  # per-head width d_h; None: hidden / heads
    attention_params: int | None = None  # attention weights per layer, stated (MLA); None: from the shapes
    active_params_override: int | None = None  # a published active count (validation rows)
    date: str = ""
    finetune: "finetune.FineTune | None" = None  # what a fine-tune trains (finetune.py); None: pre-training

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def attention_width(self) -> int:
        """a·d_h: the width of the query (and score) space, h unless head_dim says otherwise."""
        return self.hidden if self.head_dim is None else self.heads * self.head_dim

    def _attention_params(self) -> int:
        if self.attention_params is not None:
            return self.attention_params
        h, w = self.hidden, self.attention_width
        return 2 * h * w + 2 * h * (w * self.kv_heads // self.heads)

    @property
    def expert_params(self) -> int:
        """P_e: the weights of one expert feed-forward (moe.py)."""
        return (3 if self.gated_ffn else 2) * self.hidden * self.moe_ffn_hidden

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    def _params_with(self, experts_per_token: int) -> int:
        h, L = self.hidden, self.layers
        ffn = (3 if self.gated_ffn else 2) * h * self.ffn_hidden
        emb = self.vocab * h * (1 if self.tied_embeddings else 2)
        if not self.is_moe:
            return L * (self._attention_params() + ffn + 2 * h) + h + emb
        moe = self.moe_layers * ((experts_per_token + self.shared_experts) * self.expert_params + h * self.num_experts)
        return L * (self._attention_params() + 2 * h) + self.dense_layers * ffn + moe + h + emb

    @property
    def params(self) -> int:
        """Parameter count P (see the module docstring), every expert included; a published count when one
        was given."""
        if self.params_override is not None:
            return self.params_override
        return self._params_with(self.num_experts)

    @property
    def active_params(self) -> int:
        """P_act: the parameters one token meets (its top-k routed experts, not all E); = P for a dense model."""
        if not self.is_moe:
            return self.params
        if self.active_params_override is not None:
            return self.active_params_override
        return self._params_with(self.top_k)

    @property
    def routed_expert_params(self) -> int:
        """P_exp = L_m·E·P_e, the routed experts' weights (split over the expert-parallel ranks)."""
        return self.moe_layers * self.num_experts * self.expert_params

    @property
    def embedding_params(self) -> int:
        """P_emb = V·h, twice when untied (the input table and the output projection)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def attention_flops_per_token(self) -> float:
        """12·L·h·s: the attention-score FLOPs of forward + backward per token."""
        return float(ArchArrays.of(self).attention_flops_per_token[0])

    @property
    def model_flops_per_token(self) -> float:
        """F_model = 6·P + 12·L·h·s (forward + backward, no recompute)."""
        return float(ArchArrays.of(self).model_flops_per_token[0])

    def hardware_flops_per_token(self, checkpointing: str) -> float:
        """FLOPs the GPUs execute per token, recompute included (module docstring)."""
        if checkpointing not in CHECKPOINTING:
            raise InputError(f"unknown activation checkpointing '{checkpointing}' (choose from {', '.join(CHECKPOINTING)})",
                             field="activation_checkpointing")
        return float(ArchArrays.of(self).hardware_flops_per_token(np.array([CHECKPOINTING.index(checkpointing)]))[0])

    def with_finetune(self, ft: "finetune.FineTune | None") -> "TransformerConfig":
        return replace(self, finetune=ft)

    def with_seq_len(self, seq_len: int) -> "TransformerConfig":
        if not isinstance(seq_len, int) or isinstance(seq_len, bool) or seq_len < 1:
            raise InputError(f"--seq-len must be a whole number >= 1, got {seq_len}", field="seq_len")
        return replace(self, seq_len=seq_len)


@dataclass(frozen=True)
class ArchArrays:
    """The sizes the timing and memory models read, one element per design (several models at once)."""

    layers: np.ndarray
    hidden: np.ndarray
    heads: np.ndarray
    vocab: np.ndarray
    seq_len: np.ndarray
    params: np.ndarray
    embedding_params: np.ndarray | None = None  # V·h (·2 untied); None: taken as 0
    kv_heads: np.ndarray | None = None  # key/value heads (grouped-query attention); None: = heads
    # mixture of experts (moe.py): `params` is then the active count (FLOPs), `held_params` the weights a
    # model-parallel group holds outside the routed experts, `moe` the expert sizes; None: a dense model
    moe: "MoeArrays | None" = None
    held_params: np.ndarray | None = None
    attention_width: np.ndarray | None = None  # a·d_h; None: = hidden
    # adapting fine-tunes (finetune.py; None: every weight trainable): trainable P_a of the `params` P =
    # P_base + P_a, bytes per frozen weight b_f, adapter rank r, QLoRA dequantization bytes per use
    trainable_params: np.ndarray | None = None
    frozen_weight_bytes: np.ndarray | None = None
    adapter_rank: np.ndarray | None = None
    dequant_bytes_per_use: np.ndarray | None = None

    @property
    def non_expert_params(self) -> np.ndarray:
        """Weights held as in a dense model (all but the routed experts): P for a dense model."""
        return self.params if self.held_params is None else self.held_params

    @property
    def heads_kv_share(self) -> np.ndarray:
        """a_kv / a: the K and V width over h."""
        return (self.heads if self.kv_heads is None else self.kv_heads) / self.heads

    @classmethod
    def of(cls, cfgs: "list[TransformerConfig] | TransformerConfig", n: int | None = None) -> "ArchArrays":
        """From one config broadcast to `n` designs, or from one config per design."""
        if isinstance(cfgs, TransformerConfig):
            col = lambda f: np.full(n or 1, float(getattr(cfgs, f)))  # noqa: E731
            seq = [cfgs]
        else:
            seq = list(cfgs)
            col = lambda f: np.array([float(getattr(c, f)) for c in seq])  # noqa: E731
        one = [cfgs] if isinstance(cfgs, TransformerConfig) else seq
        if not any(c.is_moe or c.head_dim is not None for c in one):
            ft = {k: np.broadcast_to(v, (n or 1,)) if isinstance(cfgs, TransformerConfig) else v
                  for k, v in finetune.columns(seq).items()}  # LoRA / QLoRA (finetune.py); {} otherwise
            return cls(col("layers"), col("hidden"), col("heads"), col("vocab"), col("seq_len"),
                       ft.pop("params", col("params")), col("embedding_params"), col("kv_heads"), **ft)
        from costopt.perf.llm.moe import MoeArrays

        moe = MoeArrays(col("num_experts"), col("top_k"), col("moe_layers"), col("expert_params"),
                        col("shared_experts"), col("moe_ffn_hidden"), col("gated_ffn"))
        return cls(col("layers"), col("hidden"), col("heads"), col("vocab"), col("seq_len"), col("active_params"),
                   col("embedding_params"), col("kv_heads"), moe, col("params") - moe.routed_params,
                   col("attention_width"))

    @property
    def attention_flops_per_token(self) -> np.ndarray:
        width = self.hidden if self.attention_width is None else self.attention_width
        return 12.0 * self.layers * width * self.seq_len

    @property
    def gradient_params(self) -> np.ndarray:
        """The parameters that get gradients and optimizer states: P_a under LoRA/QLoRA, else P."""
        return self.params if self.trainable_params is None else self.trainable_params

    @property
    def model_flops_per_token(self) -> np.ndarray:
        """6·P + 12·L·h·s; with frozen weights 4·P + 2·P_a + 12·L·h·s (finetune.py)."""
        if self.trainable_params is None:
            return 6.0 * self.params + self.attention_flops_per_token
        return 4.0 * self.params + 2.0 * self.trainable_params + self.attention_flops_per_token

    def recompute_factor(self, ckpt: np.ndarray) -> np.ndarray:
        """Pre-training's F_hw/F_model: the share by which recompute repeats element-wise work (with frozen
        weights too: their element-wise work per token is pre-training's, finetune.py)."""
        f_pre = 6.0 * self.params + self.attention_flops_per_token
        extra = np.choose(np.asarray(ckpt), [np.zeros_like(self.params), self.attention_flops_per_token / 3.0,
                                             2.0 * self.params + self.attention_flops_per_token / 3.0])
        return (f_pre + extra) / f_pre

    def hardware_flops_per_token(self, ckpt: np.ndarray) -> np.ndarray:
        """As TransformerConfig.hardware_flops_per_token, with `ckpt` an index into CHECKPOINTING per design."""
        ck = np.asarray(ckpt)
        extra = np.choose(ck, [np.zeros_like(self.params), self.attention_flops_per_token / 3.0,
                               2.0 * self.params + self.attention_flops_per_token / 3.0])
        return self.model_flops_per_token + extra


def config_from_dict(data: dict, where: str) -> TransformerConfig:
    """Strict: unknown keys, wrong types, missing fields and non-positive sizes are errors naming `where`."""
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(_FIELDS)})")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    for k, v in data.items():
        t = _FIELDS[k]
        ok = isinstance(v, t) and not (t is int and isinstance(v, bool))
        if not ok:
            raise InputError(f"{where}: {k} must be {t.__name__}, got {v!r}")
        low = 0 if k in ("shared_experts", "dense_layers") else 1
        if t is int and v < low:
            raise InputError(f"{where}: {k} must be >= {low}, got {v}")
    kv = data.get("kv_heads", data["heads"])
    if data["heads"] % kv or data["hidden"] % data["heads"]:
        raise InputError(f"{where}: heads must divide hidden and kv_heads must divide heads "
                         f"(hidden {data['hidden']}, heads {data['heads']}, kv_heads {kv})")
    if data.get("num_experts"):
        lacking = [k for k in ("top_k", "moe_ffn_hidden") if k not in data]
        if lacking:
            raise InputError(f"{where}: a mixture-of-experts model (num_experts) needs {', '.join(lacking)}")
        if data["top_k"] > data["num_experts"] or data.get("dense_layers", 0) >= data["layers"]:
            raise InputError(f"{where}: top_k must be at most num_experts and dense_layers below layers "
                             f"(top_k {data['top_k']}, num_experts {data['num_experts']}, "
                             f"dense_layers {data.get('dense_layers', 0)}, layers {data['layers']})")
    else:
        given = [k for k in _MOE_KEYS if k in data]
        if given:
            raise InputError(f"{where}: {', '.join(given)} apply to a mixture-of-experts model: give num_experts too")
    return TransformerConfig(
        name=data.get("name", Path(where).stem), layers=data["layers"], hidden=data["hidden"], heads=data["heads"],
        kv_heads=kv, ffn_hidden=data["ffn_hidden"], vocab=data["vocab"], seq_len=data["seq_len"],
        gated_ffn=data.get("gated_ffn", False), tied_embeddings=data.get("tied_embeddings", False),
        source=data["source"], description=data.get("description", ""), params_override=data.get("params"),
        num_experts=data.get("num_experts", 0), top_k=data.get("top_k", 0), moe_ffn_hidden=data.get("moe_ffn_hidden", 0),
        shared_experts=data.get("shared_experts", 0), dense_layers=data.get("dense_layers", 0),
        head_dim=data.get("head_dim"), attention_params=data.get("attention_params"), date=data.get("date", ""))


def load_config_file(path: str | Path) -> TransformerConfig:
    """A `--model-config FILE.toml` (the keys of `_FIELDS`; see docs/large-models.md)."""
    data = read_toml(path, "model config file")
    return config_from_dict(data, str(path))


def list_llm_models() -> list[str]:
    return sorted(p.stem for p in LLM_ZOO_DIR.glob("*.toml"))


@lru_cache(maxsize=None)
def load_llm_model(model_id: str) -> TransformerConfig:
    """A zoo transformer by id (never a path)."""
    if model_id not in list_llm_models():
        raise InputError(f"unknown transformer model '{model_id}' (known: {', '.join(list_llm_models())})", field="model")
    return load_config_file(LLM_ZOO_DIR / f"{model_id}.toml")


def is_llm_model(model_id: str) -> bool:
    return model_id in list_llm_models()
