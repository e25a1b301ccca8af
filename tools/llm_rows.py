"""Bring the published FP8 / MXFP8 / NVFP4 runs of the shared research file into the shipped large-model rows,
and fill the optional columns the model reads (framework, vp, kv_heads, ffn_hidden, vocab) for every row.

    python tools/llm_rows.py [--research PATH] [--check]

Rewrites costopt/data/validation/llm_training.csv in place (`--check`: compare instead, exit 1 when a fresh
build differs; tools/shipped_file.py). Same file in, same bytes out; running it twice changes nothing.

What it does, row by row:
- rows of the research file (default ../shared/research/llm_fp8_blackwell_runs.csv: NeMo 24.07 and the
  Megatron-Bridge performance-summary archive, see its _sources.md) whose GPU is in the reference catalog
  are added (or replaced, matched on source and notes). The research file files every low-precision row as
  `fp8`; the precision is read back from the row's notes: "NVFP4" -> nvfp4, "MXFP8" (as the row's own
  precision, not a value in parentheses) -> mxfp8, else fp8. VP is read from the notes ("VP=5"; "n/a"
  and a first value of 1 -> 1). Activation checkpointing not stated -> `none` (the performance recipes of
  NeMo and Megatron-Bridge recompute only where their tables say: an assumption, appended to the notes).
  GB200/GB300 rows (DGX GB200 / GB300: NVL72 racks) are refiled at 4 GPUs per node, the GPUs of one compute
  tray, and total/4 nodes (the research file files them 8 per node); the catalog's gb200-nvl72 / gb300-nvl72
  chassis put every 72 of them in one NVLink domain (costopt/hardware/rack_scale.py). Said in the notes.
- framework: the software each source ran (its notes or the source list): llm-foundry (Composer + PyTorch
  FSDP) `fsdp`; Megatron-LM, Megatron-Core, NeMo, Megatron-Bridge `megatron`; DeepSpeed on Azure and SC21
  Table 2's "ZeRO-3 without Model Parallelism" rows (DeepSpeed ZeRO-3, run by the Megatron authors) `deepspeed`.
- kv_heads, ffn_hidden, vocab: from the published configs of the models named (ARCH below); empty where the
  row's model has none stated (the reader's defaults then: kv_heads = heads, ffn 4h, vocabulary 50,368).
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
sys.path.insert(0, str(ROOT / "tools"))

from costopt.measure.llm_validate import COLUMNS, LLM_DATASET  # noqa: E402
from shipped_file import check_or_write  # noqa: E402

def _research_file() -> Path:
    """The shared research copy: shared/research/ beside the checkout (or above it, for a worktree)."""
    for parent in ROOT.parents:
        f = parent / "shared" / "research" / "llm_fp8_blackwell_runs.csv"
        if f.exists():
            return f
    return ROOT.parent / "shared" / "research" / "llm_fp8_blackwell_runs.csv"


RESEARCH = _research_file()
CATALOG_GPUS = ("h100-sxm", "b200", "gb200", "gb300")
TRAY_GPUS = {"gb200": 4, "gb300": 4}  # GPUs per compute tray of an NVL72 rack (the catalog's gpu_slots)
ADDED_SOURCES = ("NEMO_2407", "MBRIDGE")
OUT_COLUMNS = (*COLUMNS[:COLUMNS.index("compile") + 1], "attention", *COLUMNS[COLUMNS.index("compile") + 1:-1],
               "notes", "measured_tokens_basis", "framework", "vp", "kv_heads", "ffn_hidden", "vocab")
FRAMEWORK = {"LLMF_BENCH": "fsdp", "MLM_README_2020": "megatron", "MLM_SC21_T1": "megatron", "MLM_SC21_T2": "megatron",
             "MLM_README_2022_SP": "megatron", "MCORE_README_2024": "megatron", "DS_AZURE_2022": "deepspeed",
             "NEMO_2407": "megatron", "MBRIDGE": "megatron"}
# (kv_heads, ffn_hidden, vocab) of the published configs: Llama 2 (Touvron et al. 2023, Table 1 and the HF
# configs: 7B MHA ffn 11008, 13B MHA 13824, 70B GQA 8 28672; vocabulary 32,000), Llama 3 / 3.1 (the Llama 3
# model cards / HF configs: GQA 8, ffn 14336 / 28672 / 53248, vocabulary 128,256), Nemotron-4 340B (NVIDIA 2024
# technical report: GQA 8, ffn 73728, vocabulary 256,000), Nemotron-3 8B/22B (NeMo Nemotron3Config8B/22B: MHA,
# ffn 4h, vocabulary 256,000)
ARCH = {"LLAMA2-7B": (32, 11008, 32000), "LLAMA2-13B": (40, 13824, 32000), "LLAMA2-70B": (8, 28672, 32000),
        "LLAMA3-8B": (8, 14336, 128256), "LLAMA3_8B": (8, 14336, 128256), "LLAMA3-70B": (8, 28672, 128256),
        "LLAMA3_70B": (8, 28672, 128256), "LLAMA3.1_405B": (8, 53248, 128256), "Nemotron-340B": (8, 73728, 256000),
        "Nemotron-8B": (32, 16384, 256000), "Nemotron-22B": (48, 24576, 256000)}


def precision_of(notes: str) -> str:
    m = re.search(r"precision '([^']*)'", notes)
    own = (m.group(1) if m else "").split("(")[0].upper()
    if "NVFP4" in own or (not m and "NVFP4" in notes):
        return "nvfp4"
    if "MXFP8" in own:
        return "mxfp8"
    return "fp8"


def vp_of(notes: str) -> str:
    m = re.search(r"VP=([0-9]+|n/a)", notes)
    return "1" if not m or m.group(1) == "n/a" else m.group(1)


def framework_of(row: dict) -> str:
    if row["source"] == "MLM_SC21_T2" and "ZeRO-3" in row["notes"]:
        return "deepspeed"
    return FRAMEWORK[row["source"]]


def build(shipped: Path, research: Path) -> str:
    with open(shipped, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["source"] not in ADDED_SOURCES]
    with open(research, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["gpu"] not in CATALOG_GPUS:
                continue
            r = dict(r)
            r["precision"] = precision_of(r["notes"])
            r["vp"] = vp_of(r["notes"])
            if r["gpu"] in TRAY_GPUS:
                g, total = TRAY_GPUS[r["gpu"]], int(r["total_gpus"])
                r["notes"] = r["notes"].replace(f"; UNSUPPORTED: gpu DGX-{r['gpu'].upper()} not in the catalog", "")
                r["notes"] += (f"; gpus_per_node refiled {g} x {total // g} nodes by tools/llm_rows.py (filed "
                               f"{r['gpus_per_node']} x {r['nodes']}): a DGX {r['gpu'].upper()} runs on NVL72 racks of "
                               f"18 compute trays of {g} GPUs, one NVLink domain of 72 (chassis {r['gpu']}-nvl72)")
                r["gpus_per_node"], r["nodes"] = str(g), str(total // g)
            if not r["activation_checkpointing"]:
                r["activation_checkpointing"] = "none"
                r["notes"] += ("; activation_checkpointing filed 'none' by tools/llm_rows.py: not stated, and the NeMo / "
                               "Megatron-Bridge performance recipes recompute only where their tables say (an assumption)")
            rows.append(r)
    for r in rows:
        r["framework"] = framework_of(r)
        r.setdefault("vp", "")
        r["vp"] = r.get("vp") or ""
        kv, ffn, voc = ARCH.get(r["model"], ("", "", ""))
        r["kv_heads"], r["ffn_hidden"], r["vocab"] = (str(kv), str(ffn), str(voc)) if kv else ("", "", "")
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(OUT_COLUMNS), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") or "" for c in OUT_COLUMNS})
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--research", type=Path, default=RESEARCH)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    text = build(LLM_DATASET, a.research)
    check_or_write(LLM_DATASET, text, a.check)
    print(f"{'checked' if a.check else 'wrote'} {LLM_DATASET} ({text.count(chr(10)) - 1} rows)")


if __name__ == "__main__":
    main()
