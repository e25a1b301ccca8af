"""Collect the mixture-of-experts rows of Megatron-Bridge's performance-summary archive into the shipped large-model
rows (costopt/data/validation/llm_moe_training.csv, source id MBRIDGE; the format of llm_training.csv with the
mixture-of-experts columns model_config, num_experts, top_k, ep, expert_load_imbalance).

    git -C <Megatron-Bridge clone> show 067f987df03b8355b03192d88d70f1709fedf51a:docs/performance-summary-archive.md > archive.md
    python tools/moe_rows.py archive.md

The archive is not shipped (nothing reads it at run time); every row's notes name the file, commit, section,
table and row it was copied from. Sections read: "26.04.01", "26.02", "25.11" and "25.09 NeMo Container" (the
four the dense MBRIDGE rows come from, shared/research/llm_fp8_blackwell_runs_sources.md), pre-training tables.

Per row: Tokens/sec/GPU copied (the first value where a second is in parentheses; that one is another FP8
granularity or layout); System DGX-H100 / B200 / B300 -> h100-sxm / b200 / b300 (8 GPUs a node), DGX-GB200 /
GB300 -> gb200 / gb300 (NVL72 trays of 4 GPUs, nodes = GPUs / 4); precision BF16 -> amp_bf16, FP8 or FP8-CS -> fp8,
MXFP8 or FP8-MX -> mxfp8, NVFP4 -> nvfp4; 25.09 states none: fp8 (its note: the parentheses are the other
quantization granularity); FSDP 0 or absent -> zero1 (the distributed optimizer); VP n/a -> 1; the layout column
values before any parenthesis. Recompute is not stated: `none` (an assumption, as for the dense rows). Expert load
imbalance 1.0: the archive's footnote, "In MoE training benchmarks, we force-balance the token distribution among
experts and all benchmarks are token-dropless" (25.09's token-drop rows drop tokens beyond an expert's capacity,
which also caps the busiest expert: 1.0, an assumption).

Left out, with why (printed): Kimi-K2 (trained with the Muon optimizer, whose states and update costopt does not
model), Nemotron-3 Nano / Super (hybrid Mamba-Transformer layers, not modelled), DeepSeek-V3 "w/ MTP" (the
multi-token-prediction module is not in the zoo model).
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costopt.measure.llm_validate import LLM_DATASET, MOE_DATASET  # noqa: E402
from costopt.perf.llm.arch import load_llm_model  # noqa: E402

COMMIT = "067f987df0"
FILE = "docs/performance-summary-archive.md"
SECTIONS = ("26.04.01", "26.02", "25.11", "25.09")
MODELS = {"DeepSeekV3": "deepseek_v3", "GPT OSS 120B": "gpt_oss_120b", "Qwen3_30B_a3B": "qwen3_30b_a3b",
          "Qwen3_235B_a22B": "qwen3_235b_a22b"}
LEFT_OUT = {"Kimi_K2": "Muon optimizer not modelled", "Nemotron_3_Nano": "hybrid Mamba-Transformer not modelled",
            "Nemotron_3_Super": "hybrid Mamba-Transformer not modelled"}
SYSTEMS = {"DGX-H100": ("h100-sxm", 8), "DGX-B200": ("b200", 8), "DGX-B300": ("b300", 8), "DGX-GB200": ("gb200", 4),
           "DGX-GB300": ("gb300", 4)}
PRECISION = {"BF16": "amp_bf16", "FP8": "fp8", "FP8-CS": "fp8", "MXFP8": "mxfp8", "FP8-MX": "mxfp8", "NVFP4": "nvfp4"}


def _first(cell: str) -> str:
    return cell.split("(")[0].strip()


def rows_of(text: str) -> tuple[list[dict], list[str]]:
    """(MoE rows of the four sections, what was left out and why)."""
    out, left = [], []
    section, model, system, header = None, None, None, None
    for ln in text.splitlines():
        m = re.match(r"## (\S+) NeMo Container", ln)
        if m:
            section, header = (m.group(1) if m.group(1) in SECTIONS else None), None
            continue
        if ln.startswith("### "):
            header = None
            continue
        m = re.match(r"#### (Model|System): (.+)", ln)
        if m:
            model, system = (m.group(2).strip(), None) if m.group(1) == "Model" else (None, m.group(2).strip())
            header = None
            continue
        if section is None or not ln.startswith("|") or set(ln) <= set("|- "):
            continue
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if cells[0] in ("System", "Model"):
            header = cells
            continue
        if header is None:
            continue
        r = dict(zip(header, cells))
        name = model or r["Model"]
        sysname = system or r["System"]
        base = name.split(" (")[0].strip()
        where = (f"{FILE} @ {COMMIT} (NVIDIA-NeMo/Megatron-Bridge), section '{section} NeMo Container', "
                 + (f"Model {name}" if model else f"System {system}") + f", row {name} on {sysname}")
        if base in LEFT_OUT:
            left.append(f"{where}: {LEFT_OUT[base]}")
            continue
        if base not in MODELS:
            continue  # a dense model (the dense MBRIDGE rows come from the shared research file)
        if "w/ MTP" in name:
            left.append(f"{where}: the multi-token-prediction module is not modelled")
            continue
        out.append(_row(r, section, name, sysname, base, where))
    return out, left


def _row(r: dict, section: str, name: str, sysname: str, base: str, where: str) -> dict:
    zoo = load_llm_model(MODELS[base])
    gpu, per_node = SYSTEMS[sysname]
    n = int(r["#-GPUs"])
    prec_cell = r.get("Precision", "")
    precision = PRECISION[_first(prec_cell)] if prec_cell else "fp8"
    tok = _first(r["Tokens / sec / GPU"])
    vp = _first(r["VP"])
    fsdp = _first(r.get("FSDP", "0"))
    notes = (f"{where}; precision '{prec_cell or 'not stated (FP8: the section note on quantization granularities)'}'; "
             f"printed Tokens/sec/GPU {r['Tokens / sec / GPU']} and Model TFLOP/sec/GPU {r['Model TFLOP / sec / GPU']} "
             "(a value in parentheses is another FP8 granularity or layout: only the first is used); "
             f"FSDP={fsdp} (0: DDP with the distributed optimizer, filed zero1); VP={vp}; EP={_first(r['EP'])}; "
             f"GA={_first(r.get('GA', ''))}; architecture: zoo model {MODELS[base]}; recompute not stated: filed 'none' "
             "(an assumption); expert_load_imbalance 1: the archive's footnote, MoE benchmarks force-balance the tokens "
             "among experts" + ("; token-drop run (tokens over an expert's capacity dropped: 1, an assumption)"
                                 if "tokendrop" in name else ""))
    return {"source": "MBRIDGE", "model": name, "params_b": f"{zoo.params / 1e9:.4f}", "layers": zoo.layers,
            "hidden": zoo.hidden, "heads": zoo.heads, "seq_len": int(r["Sequence Length"]), "gpu": gpu,
            "gpus_per_node": per_node, "nodes": n // per_node, "total_gpus": n, "precision": precision,
            "dp_strategy": "fsdp" if fsdp not in ("0", "") else "zero1", "tp": _first(r["TP"]), "pp": _first(r["PP"]),
            "cp": _first(r["CP"]), "micro_batch_per_gpu": _first(r["MBS"]), "global_batch": _first(r["GBS"]),
            "activation_checkpointing": "none", "attention": "flash", "measured_tokens_per_s_per_gpu": tok,
            "notes": notes, "measured_tokens_basis": "stated", "framework": "megatron",
            "vp": "1" if vp in ("n/a", "") else vp, "model_config": MODELS[base], "num_experts": zoo.num_experts,
            "top_k": zoo.top_k, "ep": _first(r["EP"]), "expert_load_imbalance": "1.0"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archive", type=Path)
    a = ap.parse_args()
    rows, left = rows_of(a.archive.read_text(encoding="utf-8"))
    with open(LLM_DATASET, newline="", encoding="utf-8") as fh:  # the dense file's columns, then the MoE ones
        header = [c for c in (csv.DictReader(fh).fieldnames or []) if c not in ("kv_heads", "ffn_hidden", "vocab")]
    header += ["model_config", "num_experts", "top_k", "ep", "expert_load_imbalance"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") or "" for c in header})
    MOE_DATASET.write_text(buf.getvalue(), encoding="utf-8")
    print(f"wrote {len(rows)} MoE rows to {MOE_DATASET}; left out {len(left)}:")
    for x in left:
        print("  " + x)


if __name__ == "__main__":
    main()
