"""Predicted vs published large-model training throughput (the `llm_training` CSV format).

Each row names a model by its architecture (`layers`, `hidden`, `heads`, `seq_len`, `params_b`), a
GPU, GPUs per node and nodes, the parallel layout (`dp_strategy`, `tp`, `pp`, `cp`,
`micro_batch_per_gpu`, `global_batch`, `activation_checkpointing`) and what was measured
(`measured_tokens_per_s_per_gpu`, `measured_mfu`). The model is built from the architecture columns;
the published parameter count is used for the 6·P FLOPs term (the FFN and vocabulary shapes are not in
the file). `error_pct` = 100·(predicted − measured)/measured on tokens/s per GPU; rows without a
measured tokens/s are reported as skipped, with the reason.

What the file does not say, and what is assumed (each row's `assumed` column repeats it):
- network: 8 GPUs per node on the catalog's 8-GPU NVSwitch board for that GPU, one InfiniBand adapter
  per GPU (HDR 200 Gb/s for A100, NDR 400 Gb/s for H100: the fabrics of the DGX A100 and DGX H100
  reference designs), unless `interconnect` states another;
- activation checkpointing not stated: `full` (Megatron-LM's examples enable it);
- precision not stated: `amp_bf16` (A100 and H100 run fp16 and bf16 at the same peak);
- `cp` (context parallel, ring attention) and the low precisions fp8 / mxfp8 / nvfp4 are modelled (step.py).

One optional column, `attention` (`flash` or `unfused`), says whether the run's attention kernel kept
the s×s scores out of memory (FlashAttention) or not; step.py times the two differently. Empty or
absent: `flash`, the norm of 2023-2026 training stacks, listed as assumed. The shipped file fills it
from the framework, version and date each source states (llm_training_sources.md).

Mixture-of-experts rows (optional columns): `model_config` names the zoo transformer whose architecture the row
ran (its experts, expert size, shared experts, dense layers, attention: data/llm/*.toml); `num_experts` and
`top_k`, when given, must agree with it; `ep` is the expert-parallel degree (absent: 1) and
`expert_load_imbalance` the λ of moe.py (absent: the [moe] default of data/llm_defaults.toml, listed as
assumed; Megatron-Bridge's MoE benchmarks force-balance the tokens: 1). A row without `model_config` is a
dense model built from its columns, as before.

A second optional column, `measured_tokens_basis`, says how the tokens/s per GPU was obtained: `stated`
(printed by the source), `derived_iteration_time` (tokens per iteration over the printed iteration time),
`derived_flops_formula` (printed achieved TFLOP/s over the FLOPs per token of the formula the source states
it used); empty when the file does not say. tools/derive_llm_tokens.py fills it (and the derived figures)
in the shipped file.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import Catalog, load_catalog
from costopt.search.design_space import DesignSpace
from costopt.core.errors import InputError
from costopt.core.files import input_path, iter_input_lines
from costopt.perf.llm.arch import CHECKPOINTING, ArchArrays, TransformerConfig
from costopt.perf.llm.evaluate import (DEFAULT_FRAMEWORK, FRAMEWORKS, LOW_PRECISIONS, PIPELINE_EXTRA_LAYERS, Layout,
                                      default_llm_params,
                                      evaluate_layouts, gpu_generation, params_for_framework)
from costopt.perf.llm.memory import LLM_STRATEGIES
from costopt.perf.llm.step import LlmParams
from costopt.core.paths import DATA_DIR

LLM_DATASET = DATA_DIR / "validation" / "llm_training.csv"
# mixture-of-experts runs (same format, with model_config / ep; tools/moe_rows.py): apart from LLM_DATASET, so the
# dense fit (tools/llm_fit.py) and its ranges stay on dense rows; the MoE constant is fitted on these (tools/moe_fit.py)
MOE_DATASET = DATA_DIR / "validation" / "llm_moe_training.csv"
# published fine-tuning runs (SFT, LoRA; the `finetune` column): apart from LLM_DATASET, so that no fit sees them
# (they are predicted with the pre-training efficiency; tools/finetune_errors.py prints their errors)
FINETUNE_DATASET = DATA_DIR / "validation" / "llm_finetune.csv"
SHIPPED_LLM_DATASETS = {LLM_DATASET.stem: LLM_DATASET, MOE_DATASET.stem: MOE_DATASET,
                        FINETUNE_DATASET.stem: FINETUNE_DATASET}
COLUMNS = ("source", "model", "params_b", "layers", "hidden", "heads", "seq_len", "gpu", "gpus_per_node", "nodes",
           "total_gpus", "precision", "dp_strategy", "tp", "pp", "cp", "micro_batch_per_gpu", "global_batch",
           "activation_checkpointing", "compile", "measured_tokens_per_s_per_gpu", "measured_mfu", "interconnect",
           "notes")
OPTIONAL_COLUMNS = ("attention", "measured_tokens_basis", "framework", "vp", "kv_heads", "ffn_hidden", "vocab",
                    "model_config", "num_experts", "top_k", "ep", "expert_load_imbalance", "finetune", "lora_rank",
                    "lora_targets")
DEFAULT_VOCAB = 50368  # a row that states no vocabulary (llm-foundry's MPT models)
ATTENTION = ("flash", "unfused")
# how the row's tokens/s per GPU was obtained (tools/derive_llm_tokens.py fills it in the shipped file)
TOKENS_BASIS = ("stated", "derived_iteration_time", "derived_flops_formula")
_ASSUMED_NIC = {"ampere": "ib-hdr", "hopper": "ib-ndr", "blackwell": "ib-ndr"}


def is_llm_csv(path: str | Path) -> bool:
    """True when the file's header is the large-model format (so `costopt validate` can dispatch)."""
    try:
        input_path(path, "measurement file", "csv")  # a FIFO or device is not opened (read_measurements says why)
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, InputError, csv.Error):
        return False
    return "measured_tokens_per_s_per_gpu" in header and "dp_strategy" in header


@dataclass
class LlmRow:
    line: int
    source: str
    model: str
    cfg: TransformerConfig | None
    gpu: str
    gpus_per_node: int
    nodes: int
    strategy: str
    tp: int
    pp: int
    micro_batch: int
    global_batch: int
    ckpt: str
    precision: str
    measured_tokens: float | None
    measured_mfu: float | None
    skip: str  # '' or why the row is not predicted
    assumed: str
    flash: bool = True
    tokens_basis: str = ""  # TOKENS_BASIS, or '' when the file does not say
    vp: int = 1  # virtual pipeline stages (interleaved schedule)
    framework: str = "megatron"
    # the `interconnect` column read as (fabric: ib | roce | ethernet, Gb/s, per: gpu | node); None: not stated
    fabric: tuple | None = None
    cp: int = 1  # context-parallel degree
    ep: int = 1  # expert-parallel degree (mixture of experts)
    load_imbalance: float | None = None  # the row's expert load imbalance; None: the [moe] default


def read_llm_csv(path: str | Path) -> list[LlmRow]:
    p = Path(path)
    if not p.exists():
        raise InputError(f"measurement file not found: {p}")
    # read line by line (core/files.iter_input_lines: regular, bounded, UTF-8), never the whole text at once
    reader = csv.DictReader(iter_input_lines(p, "measurement file", "csv"))
    header = reader.fieldnames or []
    missing = [c for c in COLUMNS if c not in header]
    extra = [c for c in header if c not in COLUMNS and c not in OPTIONAL_COLUMNS]
    if missing or extra:
        raise InputError(f"{p}: large-model CSV columns " + (f"missing {', '.join(missing)}" if missing else "")
                         + ("; " if missing and extra else "") + (f"unknown {', '.join(extra)}" if extra else ""))
    return [_parse(p, i + 2, r) for i, r in enumerate(reader)]


def _num(p: Path, line: int, raw: dict, col: str, *, integer: bool = False, optional: bool = False):
    v = (raw.get(col) or "").strip()
    if v == "":
        if optional:
            return None
        raise InputError(f"{p}:{line}: column '{col}' is empty", field=col)
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"{p}:{line}: column '{col}' must be a number, got '{v}'", field=col) from None
    if not math.isfinite(x) or x <= 0 or (integer and x != int(x)):
        raise InputError(f"{p}:{line}: column '{col}' must be a {'whole ' if integer else ''}number > 0, got '{v}'",
                         field=col)
    return int(x) if integer else x


def _parse(p: Path, line: int, raw: dict) -> LlmRow:
    layers, hidden, heads, seq = (_num(p, line, raw, c, integer=True) for c in ("layers", "hidden", "heads", "seq_len"))
    params_b = _num(p, line, raw, "params_b")
    G, M = _num(p, line, raw, "gpus_per_node", integer=True), _num(p, line, raw, "nodes", integer=True)
    tp, pp, cp = (_num(p, line, raw, c, integer=True) for c in ("tp", "pp", "cp"))
    mb = _num(p, line, raw, "micro_batch_per_gpu", integer=True, optional=True)
    gb = _num(p, line, raw, "global_batch", integer=True, optional=True)
    strategy = raw["dp_strategy"].strip()
    if strategy not in LLM_STRATEGIES:
        raise InputError(f"{p}:{line}: dp_strategy '{strategy}' (choose from {', '.join(LLM_STRATEGIES)})",
                         field="dp_strategy")
    assumed = []
    ckpt = raw["activation_checkpointing"].strip()
    skip = ""
    if ckpt == "":
        ckpt = "full"
        assumed.append("checkpointing full (not stated)")
    elif ckpt.startswith("selective"):
        ckpt = "selective"
    elif ckpt not in CHECKPOINTING:
        raise InputError(f"{p}:{line}: activation_checkpointing '{ckpt}'", field="activation_checkpointing")
    precision = raw["precision"].strip()
    if precision == "":
        precision = "amp_bf16"
        assumed.append("precision amp_bf16 (not stated)")
    elif precision not in ("amp_bf16", "amp_fp16", *LOW_PRECISIONS):
        raise InputError(f"{p}:{line}: precision '{precision}' (choose from amp_bf16, amp_fp16, "
                         f"{', '.join(LOW_PRECISIONS)})", field="precision")
    if G * M % (tp * pp * cp):
        raise InputError(f"{p}:{line}: tp x pp x cp = {tp * pp * cp} does not divide {G * M} GPUs", field="tp")
    tok = _num(p, line, raw, "measured_tokens_per_s_per_gpu", optional=True)
    mfu = _num(p, line, raw, "measured_mfu", optional=True)
    if tok is None and not skip:
        skip = "no measured tokens/s per GPU"
    if (mb is None or gb is None) and not skip:
        skip = "micro-batch or global batch not stated"
    kv = _num(p, line, raw, "kv_heads", integer=True, optional=True)
    ffn = _num(p, line, raw, "ffn_hidden", integer=True, optional=True)
    vocab = _num(p, line, raw, "vocab", integer=True, optional=True)
    vp = _num(p, line, raw, "vp", integer=True, optional=True) or 1
    if kv is not None and heads % kv:
        raise InputError(f"{p}:{line}: kv_heads {kv} does not divide heads {heads}", field="kv_heads")
    if vp > 1 and (pp < 2 or pp * vp > layers + PIPELINE_EXTRA_LAYERS):
        raise InputError(f"{p}:{line}: vp {vp} needs pp > 1 and at most (layers + {PIPELINE_EXTRA_LAYERS}) / pp chunks "
                         f"(layers {layers}; the embedding and the loss may each be a pipeline layer)", field="vp")
    if vocab is None:
        assumed.append(f"vocabulary {DEFAULT_VOCAB} (not stated)")
    framework = (raw.get("framework") or "").strip()
    if framework == "":
        framework = DEFAULT_FRAMEWORK
        assumed.append(f"framework {DEFAULT_FRAMEWORK} (not stated)")
    elif framework not in FRAMEWORKS:
        raise InputError(f"{p}:{line}: framework '{framework}' (choose from {', '.join(FRAMEWORKS)})", field="framework")
    cfg = TransformerConfig(name=raw["model"], layers=layers, hidden=hidden, heads=heads, kv_heads=kv or heads,
                            ffn_hidden=ffn or 4 * hidden, vocab=vocab or DEFAULT_VOCAB, seq_len=seq,
                            source=raw["source"], params_override=int(round(params_b * 1e9)))
    ep = _num(p, line, raw, "ep", integer=True, optional=True) or 1
    lam = _num(p, line, raw, "expert_load_imbalance", optional=True)
    cfg = _moe_config(p, line, raw, cfg, params_b, ep, lam, assumed)
    cfg = cfg.with_finetune(_finetune(p, line, raw, assumed))
    attention = (raw.get("attention") or "").strip()
    if attention == "":
        attention = "flash"
        assumed.append("attention flash (not stated)")
    elif attention not in ATTENTION:
        raise InputError(f"{p}:{line}: attention '{attention}' (choose from {', '.join(ATTENTION)})", field="attention")
    flash = attention == "flash"
    basis = (raw.get("measured_tokens_basis") or "").strip()
    if basis and basis not in TOKENS_BASIS:
        raise InputError(f"{p}:{line}: measured_tokens_basis '{basis}' (choose from {', '.join(TOKENS_BASIS)})",
                         field="measured_tokens_basis")
    if basis and tok is None:
        raise InputError(f"{p}:{line}: measured_tokens_basis '{basis}' but measured_tokens_per_s_per_gpu is empty",
                         field="measured_tokens_basis")
    fabric = _interconnect(p, line, raw.get("interconnect") or "")
    if fabric is None:
        assumed.append("network: the generation's InfiniBand, one adapter per GPU (not stated)")
    return LlmRow(line, raw["source"], raw["model"], cfg, raw["gpu"].strip(), G, M, strategy, tp, pp, mb or 1, gb or 1, ckpt,
                  precision, tok, None if mfu is None else mfu / 100.0, skip, "; ".join(assumed), flash,
                  basis, vp, framework, fabric, cp, ep, lam)


def _finetune(p: Path, line: int, raw: dict, assumed: list[str]):
    """The optional `finetune` column (sft | lora | qlora; empty: pre-training) with `lora_rank` and `lora_targets`
    (LoRA/QLoRA only; empty: the defaults of data/finetune.toml, listed as assumed)."""
    from costopt.perf.llm.finetune import FINETUNES, resolve

    method = (raw.get("finetune") or "").strip() or None
    rank = _num(p, line, raw, "lora_rank", integer=True, optional=True)
    targets = (raw.get("lora_targets") or "").strip() or None
    if method is not None and method not in FINETUNES:
        raise InputError(f"{p}:{line}: finetune '{method}' (choose from {', '.join(FINETUNES)}; empty: pre-training)",
                         field="finetune")
    try:
        ft = resolve(method, rank, targets)
    except InputError as exc:
        raise InputError(f"{p}:{line}: {exc}", field="finetune") from None
    if ft is not None and ft.defaults:
        assumed.append(f"LoRA {' and '.join(ft.defaults)} (not stated)")
    return ft


def _moe_config(p: Path, line: int, raw: dict, cfg: TransformerConfig, params_b: float, ep: int, lam: float | None,
                assumed: list[str]) -> TransformerConfig:
    """A row's mixture-of-experts architecture: the zoo model `model_config` names, at the row's sequence length,
    checked against the row's own columns (layers, hidden, heads, num_experts, top_k, params_b within 1%)."""
    from dataclasses import replace

    from costopt.perf.llm.arch import is_llm_model, load_llm_model

    name = (raw.get("model_config") or "").strip()
    experts = _num(p, line, raw, "num_experts", integer=True, optional=True)
    top_k = _num(p, line, raw, "top_k", integer=True, optional=True)
    if not name:
        if experts or top_k or ep > 1 or lam is not None:
            raise InputError(f"{p}:{line}: num_experts, top_k, ep and expert_load_imbalance need model_config (the zoo "
                             "mixture-of-experts model whose architecture the row ran)", field="model_config")
        return cfg
    if not is_llm_model(name):
        raise InputError(f"{p}:{line}: model_config '{name}' is not a zoo transformer", field="model_config")
    zoo = load_llm_model(name)
    stated = {"layers": cfg.layers, "hidden": cfg.hidden, "heads": cfg.heads, "num_experts": experts, "top_k": top_k}
    wrong = [f"{k} {v} (zoo {getattr(zoo, k)})" for k, v in stated.items() if v is not None and v != getattr(zoo, k)]
    if abs(params_b * 1e9 - zoo.params) > 0.01 * zoo.params:
        wrong.append(f"params_b {params_b:g} (zoo {zoo.params / 1e9:.4g})")
    if wrong:
        raise InputError(f"{p}:{line}: the row disagrees with model_config '{name}': {', '.join(wrong)}",
                         field="model_config")
    assumed[:] = [a for a in assumed if not a.startswith("vocabulary")]  # the zoo model states its vocabulary
    if zoo.is_moe and lam is None:
        assumed.append("expert load imbalance: the [moe] default (not stated)")
    if zoo.is_moe and not (raw.get("ep") or "").strip():
        assumed.append("ep 1 (not stated)")
    return replace(zoo, name=cfg.name, seq_len=cfg.seq_len, source=cfg.source)


_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:Gbps|Gb/s)", re.IGNORECASE)


def _interconnect(p: Path, line: int, text: str) -> tuple[str, float, str] | None:
    """The `interconnect` column: the inter-node fabric a row states, as (fabric, Gb/s, per). Read from free
    text: a rate in Gbps or Gb/s; InfiniBand (or HDR/NDR/XDR) -> ib, RoCE -> roce, Ethernet -> ethernet; "per GPU"
    -> one adapter of that rate per GPU, else the rate is the node's total. Empty: None (the assumed fabric).
    Text with no rate or no fabric is an error naming the line (never ignored)."""
    t = text.strip()
    if not t:
        return None
    m = _RATE.search(t)
    low = t.lower()
    fabric = ("ib" if ("infiniband" in low or re.search(r"\b(hdr|ndr|xdr|edr)\b", low)) else
              "roce" if "roce" in low else "ethernet" if "ethernet" in low else None)
    if m is None or fabric is None:
        raise InputError(f"{p}:{line}: interconnect '{t}': give a rate (e.g. '400 Gb/s') and a fabric (InfiniBand, "
                         f"RoCE or Ethernet), 'per GPU' or the node's total", field="interconnect")
    return fabric, float(m.group(1)), "gpu" if "per gpu" in low else "node"


def _fabric_nic(r: "LlmRow", nics: list, G: int) -> tuple[int, int]:
    """(catalog NIC index, adapters per node) of a row's stated fabric: per GPU, the NIC of that fabric and
    rate, G of them; a node total, the fastest NIC of that fabric whose rate divides it, total / rate of them."""
    fabric, gbps, per = r.fabric
    def kind(x) -> str:
        if x.id.startswith("ib-"):
            return "ib"
        return "roce" if x.transport == "rdma" else "ethernet"
    same = [(x.line_rate_gbps, q) for q, x in enumerate(nics) if kind(x) == fabric]
    if per == "gpu":
        hit = [q for rate, q in same if abs(rate - gbps) < 1e-6]
        if hit:
            return hit[0], G
    else:
        fit = sorted((rate, q) for rate, q in same if rate <= gbps + 1e-6 and abs(gbps / rate - round(gbps / rate)) < 1e-9)
        if fit:
            rate, q = fit[-1]
            return q, int(round(gbps / rate))
    raise InputError(f"line {r.line}: the catalog has no {fabric} NIC for the stated {gbps:g} Gb/s "
                     f"({'per GPU' if per == 'gpu' else 'per node'})", field="interconnect")


def _row_space(rows: list[LlmRow], catalog: Catalog) -> tuple[DesignSpace, np.ndarray]:
    """One hardware design per row: the catalog's largest NVSwitch/NVLink board for the GPU, the assumed NIC."""
    gpus, chassis, nics = list(catalog.gpu), list(catalog.chassis), list(catalog.nic)
    gi, ci, ni, k = [], [], [], []
    for r in rows:
        if r.gpu not in catalog.gpus:
            raise InputError(f"line {r.line}: unknown gpu '{r.gpu}' (known: {', '.join(catalog.gpus)})", field="gpu")
        g = catalog.gpus[r.gpu]
        boards = [(c.gpu_slots, -c.price_usd, j) for j, c in enumerate(chassis)
                  if catalog.gpu_fits(g, c) and c.intra_fabric != "pcie" and c.usd_per_hour is None]
        if not boards:
            boards = [(c.gpu_slots, -c.price_usd, j) for j, c in enumerate(chassis) if catalog.gpu_fits(g, c)]
        j = max(boards)[2]
        if r.fabric is not None:
            n, per_node = _fabric_nic(r, nics, r.gpus_per_node)
        else:
            nic_id = _ASSUMED_NIC.get(gpu_generation(g), "ib-hdr")
            n = next((q for q, x in enumerate(nics) if x.id == nic_id), None)
            if n is None:
                raise InputError(f"the catalog has no NIC '{nic_id}' (assumed for {r.gpu} rows)", field="nic")
            per_node = max(1, chassis[j].max_nics)
        gi.append(gpus.index(g))
        ci.append(j)
        ni.append(n)
        k.append(per_node if r.nodes > 1 else 1)
    a = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    space = DesignSpace(gpus, chassis, nics, a(gi), a(ci), a(ni), a([r.nodes for r in rows]),
                        np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64), a(k))
    return space, a([r.gpus_per_node for r in rows])


def predict_rows(rows: list[LlmRow], params: LlmParams | None = None, catalog: Catalog | None = None) -> list[dict]:
    """Predicted tokens/s per GPU (and MFU, memory) for every row; skipped rows carry their reason."""
    catalog = catalog or load_catalog(None)
    live = [r for r in rows if not r.skip]
    out = {r.line: {"line": r.line, "source": r.source, "model": r.model, "gpu": r.gpu, "total_gpus": r.gpus_per_node * r.nodes,
                    "strategy": r.strategy, "tp": r.tp, "pp": r.pp, "vp": r.vp, "cp": r.cp, "ep": r.ep,
                    "moe": bool(r.cfg is not None and r.cfg.is_moe),
                    "precision": r.precision,
                    "framework": r.framework,
                    "attention": "flash" if r.flash else "unfused", "measured_tokens_per_s_per_gpu": r.measured_tokens,
                    "measured_mfu": r.measured_mfu, "measured_tokens_basis": r.tokens_basis or None,
                    "skipped": r.skip or None, "assumed": r.assumed,
                    **({} if r.cfg.finetune is None else {"finetune": r.cfg.finetune.method})} for r in rows}
    if live:
        space, G = _row_space(live, catalog)
        lay = Layout(np.array([LLM_STRATEGIES.index(r.strategy) for r in live]), np.array([r.tp for r in live]),
                     np.array([r.pp for r in live]), np.array([r.micro_batch for r in live]),
                     np.array([CHECKPOINTING.index(r.ckpt) for r in live]))
        base_lam = (params or default_llm_params()).moe_load_imbalance
        groups: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(live):
            groups.setdefault((r.precision, r.framework), []).append(i)
        base = params or default_llm_params()
        for (precision, framework), idx in sorted(groups.items()):  # one evaluation per precision and framework
            ix = np.array(idx)
            sub_lay = Layout(*(getattr(lay, f)[ix] for f in ("strategy", "tp", "pp", "micro_batch", "ckpt")),
                             vp=np.array([live[i].vp for i in idx]), cp=np.array([live[i].cp for i in idx]),
                             ep=np.array([live[i].ep for i in idx]))
            lam = np.array([base_lam if live[i].load_imbalance is None else live[i].load_imbalance for i in idx])
            ev = evaluate_layouts(ArchArrays.of([live[i].cfg for i in idx]), space.take(ix), sub_lay,
                                  precision=precision, global_batch=np.array([live[i].global_batch for i in idx]),
                                  params=params_for_framework(base, framework), gpus_per_node=G[ix],
                                  flash_attention=np.array([live[i].flash for i in idx]), load_imbalance=lam)
            for j, i in enumerate(idx):
                r = live[i]
                pred = float(ev.timing.tokens_per_s_per_gpu[j])
                rec = out[r.line]
                rec["predicted_tokens_per_s_per_gpu"] = pred
                rec["predicted_mfu"] = float(ev.timing.mfu[j])
                rec["memory_per_gpu_gb"] = float(ev.memory_per_gpu_bytes[j]) / 1e9
                rec["fits_in_memory"] = bool(ev.fits[j])
                rec["error_pct"] = 100.0 * (pred - r.measured_tokens) / r.measured_tokens
    return [out[r.line] for r in rows]


def add_ranges(recs: list[dict], catalog: Catalog | None = None) -> dict:
    """Give every predicted row the 80% range a prediction of it carries (ranges.py: the row's GPU decides the
    sample), `predicted_low_tokens_per_s_per_gpu` / `predicted_high_tokens_per_s_per_gpu`, and return the
    share of rows whose measurement lies inside it with the committed out-of-sample coverage beside it.
    The share is in sample: the range's residuals include these rows' own held-out errors."""
    from costopt.perf.llm.evaluate import default_llm_params, mamf_fraction
    from costopt.perf.llm.ranges import bounds, load_llm_residuals

    catalog = catalog or load_catalog(None)
    live = [r for r in recs if r.get("error_pct") is not None]
    if not live:
        return {}
    params = default_llm_params()
    mamf = np.array([mamf_fraction(catalog.gpus[r["gpu"]], params, catalog.gpus)[0] for r in live])
    x = np.array([r["predicted_tokens_per_s_per_gpu"] for r in live])
    lows, highs = np.zeros(len(live)), np.zeros(len(live))
    for ft in sorted({r.get("finetune") or "" for r in live}):  # a fine-tune widens its rows' ranges (ranges.py)
        k = np.array([(r.get("finetune") or "") == ft for r in live])
        rng = bounds(x[k], np.array([r["predicted_mfu"] for r in live])[k], np.array([r["gpu"] for r in live])[k],
                     mamf[k], finetune=ft or None, moe=np.array([bool(r.get("moe")) for r in live])[k])
        lows[k], highs[k] = rng.low, rng.high
    meas = np.array([r["measured_tokens_per_s_per_gpu"] for r in live])
    for r, lo, hi in zip(live, lows.tolist(), highs.tolist()):
        r["predicted_low_tokens_per_s_per_gpu"] = lo
        r["predicted_high_tokens_per_s_per_gpu"] = hi
    inside = (meas >= lows) & (meas <= highs)
    res = load_llm_residuals()
    return {"rows_inside_range_share": float(inside.mean()),
            "rows_inside_range_basis": "in sample: the shipped fit, ranges whose residuals include these rows",
            "range_coverage_out_of_sample": res.coverage}
