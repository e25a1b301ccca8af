"""Fill tokens/s per GPU into the shipped large-model rows whose source prints only achieved TFLOP/s per
GPU, where the source itself states the FLOP count it divided by, and say for every row how its figure
was obtained (column `measured_tokens_basis`).

    python tools/derive_llm_tokens.py [--check]

Rewrites costopt/data/validation/llm_training.csv in place (`--check`: compare instead, exit 1 when a
fresh build differs; tools/shipped_file.py). Same file in, same bytes out; running it twice changes nothing.

`measured_tokens_basis`, one of:
  stated                  the source prints tokens/s per GPU (llm-foundry's T/s/GPU column)
  derived_iteration_time  tokens per iteration / iteration time / GPUs, from the source's printed iteration
                          time, global batch and sequence length (the row's notes give the arithmetic)
  derived_flops_formula   from the printed achieved TFLOP/s per GPU and the FLOPs-per-iteration formula the
                          source states it used (below; the row's notes give the arithmetic)
  (empty)                 no tokens/s per GPU (the row is skipped by costopt/measure/llm_validate.py)

The formula (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", SC21, Eq. 3): one iteration of a GPT model with l layers, hidden size h, sequence length s,
vocabulary V and global batch B is

    F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))    FLOPs (forward, backward and the activation-recompute
                                                   forward; the paper counts the recompute)

and the paper reports achieved TFLOP/s per GPU = F / (iteration time · GPUs). An iteration holds B·s tokens,
so tokens/s per GPU = TFLOP/s per GPU · 1e12 / (96·l·h²·(1 + s/(6h) + V/(16·l·h))). V = 51,200 and
s = 2048 are stated for these runs (Megatron-LM README, Jan 2022). The TFLOP/s are printed to 1 TFLOP/s, so
the derived figures carry up to ±0.4% of rounding (1 in 137..171). Cross-check that the conversion is the
paper's own: Table 2 also prints the training time for 300B tokens, which the derived figure reproduces
(300e9 / (tokens/s per GPU · GPUs) / 86400 s within the printed rounding; each T2 row's notes show it).

Applied to MLM_SC21_T1 (Table 1, 10 rows) and MLM_SC21_T2 (Table 2, 12 rows). Not applied, left skipped:
- DS_AZURE_2022 (DeepSpeed on Azure, 2022): states the same formula but not V, and not the global batch;
  its runs use ZeRO-3 with CPU offload, which the model does not cover;
- MCORE_README_2024 (Megatron-Core, 2024): its TFLOP/s and MFU come from num_floating_point_operations(),
  whose count depends on the FFN width, gated (SwiGLU) MLP and grouped-query attention of each model, none
  of which the table states; the micro-batch is not stated either.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from shipped_file import check_or_write, csv_text  # noqa: E402

DATASET = ROOT / "costopt" / "data" / "validation" / "llm_training.csv"
BASIS_COLUMN = "measured_tokens_basis"
EQ3_SOURCES = ("MLM_SC21_T1", "MLM_SC21_T2")
EQ3_VOCAB = 51200  # Megatron-LM README (Jan 2022) for the SC21 runs: "vocabulary size of 51,200"
MARK = "; tokens/s/GPU DERIVED by tools/derive_llm_tokens.py"
_TFLOPS = re.compile(r"Achieved teraFLOP/s per GPU=([0-9.]+)")
_DAYS = re.compile(r"training time for 300B tokens=([0-9.]+) days")


def eq3_flops_per_token(layers: int, hidden: int, seq_len: int, vocab: int = EQ3_VOCAB) -> float:
    """FLOPs per token of Narayanan et al. 2021 Eq. 3: 96·l·h²·(1 + s/(6h) + V/(16·l·h)) (F / (B·s))."""
    return 96.0 * layers * hidden**2 * (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden))


def _derive(row: dict) -> None:
    notes = row["notes"].split(MARK)[0]
    m = _TFLOPS.search(notes)
    if not m:
        sys.exit(f"error: {row['source']} row '{row['model']}' has no 'Achieved teraFLOP/s per GPU=' in its notes")
    tflops = float(m.group(1))
    l, h, s = int(row["layers"]), int(row["hidden"]), int(row["seq_len"])
    tok = tflops * 1e12 / eq3_flops_per_token(l, h, s)
    row["measured_tokens_per_s_per_gpu"] = f"{tok:.1f}"
    row[BASIS_COLUMN] = "derived_flops_formula"
    text = (f"{MARK} = {m.group(1)}e12 / (96 x {l} x {h}^2 x (1 + {s}/(6 x {h}) + {EQ3_VOCAB}/(16 x {l} x {h}))) "
            f"= {tok:.1f}: achieved TFLOP/s per GPU over FLOPs per token of Narayanan et al. SC21 Eq. 3 "
            f"(96Bslh^2(1+s/6h+V/16lh) per iteration of B·s tokens, recompute forward counted), V={EQ3_VOCAB}; "
            f"TFLOP/s printed to 1 TFLOP/s (rounding up to +-{50 / tflops:.2f}%)")
    d = _DAYS.search(notes)
    if d:
        days = 300e9 / (tok * int(row["total_gpus"])) / 86400.0
        text += f"; cross-check: 300e9 tokens / ({tok:.1f} x {row['total_gpus']} GPUs) = {days:.1f} days vs printed {d.group(1)}"
    row["notes"] = notes + text


def _basis(row: dict) -> str:
    if row["source"] in EQ3_SOURCES:
        return "derived_flops_formula"
    if not row["measured_tokens_per_s_per_gpu"].strip():
        return ""
    return "derived_iteration_time" if "DERIVED" in row["notes"] else "stated"


def build(text: str) -> str:
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    if BASIS_COLUMN not in header:
        header.append(BASIS_COLUMN)
    rows = list(reader)
    for row in rows:
        if row["source"] in EQ3_SOURCES:
            _derive(row)
        row[BASIS_COLUMN] = _basis(row)
    return csv_text(rows, header)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the dataset with a fresh build, do not write")
    a = ap.parse_args()
    text = build(DATASET.read_text(encoding="utf-8"))
    check_or_write(DATASET, text, a.check)
    if not a.check:
        print(f"wrote {DATASET}")


if __name__ == "__main__":
    main()
