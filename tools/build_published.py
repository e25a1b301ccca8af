#!/usr/bin/env python3
"""Build costopt/data/published/lambda_single_gpu.json from Lambda's PyTorch training tables (and
tf_bench_2017_single_gpu.json from TensorFlow's 2017 benchmark page, see build_tf2017).

Input (read-only): shared/research/lambda/ (see its SOURCES.md): lambdal/deeplearning-benchmark,
folder pytorch/, v1 tables (last changed 2024-07-24) and v2 tables (2025-12-10). Only single-GPU
cells are kept, only for GPUs that are in the reference catalog, and only for the Lambda models that
are the same model or the same class of model as a zoo model (MODEL_MAP says which and why).

Several rows of one table can be the same GPU (Lambda ran many H100 SXM5 hosts): the cell is the
median of those rows, and `rows` lists them. A value of 0 (not run) is skipped.

Usage:  python tools/build_published.py [--shared DIR] [--out FILE] [--out-tf2017 FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shipped_file import in_repo  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared"
DEFAULT_OUT = REPO_ROOT / "costopt" / "data" / "published" / "lambda_single_gpu.json"
DEFAULT_OUT_TF2017 = REPO_ROOT / "costopt" / "data" / "published" / "tf_bench_2017_single_gpu.json"

TABLES = {
    "lambda-v1": {
        "files": {"amp": "pytorch-train-throughput-fp16.csv", "fp32": "pytorch-train-throughput-fp32.csv"},
        "batch_files": {"amp": "pytorch-train-bs-fp16.csv", "fp32": "pytorch-train-bs-fp32.csv"},
        "source": "Lambda, deeplearning-benchmark (GitHub), pytorch/pytorch-train-throughput-{fp16,fp32}.csv "
                  "and pytorch-train-bs-{fp16,fp32}.csv (v1, NGC PyTorch containers)",
        "date": "2024-07-24",
    },
    "lambda-v2": {
        "files": {"amp": "pytorch-train-throughput-v2-fp16.csv", "fp32": "pytorch-train-throughput-v2-fp32.csv"},
        "batch_files": {},
        "source": "Lambda, deeplearning-benchmark (GitHub), pytorch/pytorch-train-throughput-v2-{fp16,fp32}.csv "
                  "(v2, NGC PyTorch 24.x containers)",
        "date": "2025-12-10",
    },
}

# Lambda system name -> catalog GPU id. Rows not listed (Quadro RTX 8000, RTX A6000, RTX 6000 Ada,
# GH200) are GPUs the reference catalog does not carry.
V1_GPUS = {
    "LambdaCloud V100 16GB": "v100-sxm2-16gb",  # Lambda Cloud's V100 nodes are SXM2 (300 W in the table)
    "RTX 3090": "rtx-3090",
    "LambdaCloud A10": "a10",
    "LambdaCloud A100 40GB PCIe": "a100-pcie-40gb",
    "A100 80GB PCIe": "a100-pcie-80gb",
    "A100 80GB SXM4": "a100-sxm-80gb",
    "RTX 4090": "rtx-4090",
    "H100 80GB PCIe Gen5": "h100-pcie",
    "LambdaCloud H100 80GB PCIe Gen5": "h100-pcie",
    "H100 80GB SXM5": "h100-sxm",
    "Dell H100 80GB SXM5": "h100-sxm",
    "DellTexas H100 80GB SXM5": "h100-sxm",
    "SMC H100 80GB SXM5": "h100-sxm",
    "1CC H100 80GB SXM5": "h100-sxm",
    "RAIDZ1 H100 80GB SXM5": "h100-sxm",
}


def v2_gpu(name: str) -> str | None:
    """v2 row names carry the GPU count and type, e.g. LambdaOD_..._1xH100_80GB_SXM5_..._v2."""
    if "_v2_bk" in name or "HTOff" in name:  # a backup rerun and a hyper-threading-off rerun of one host
        return None
    if "_1xH200_" in name:
        return "h200-sxm"
    if "_1xB200_" in name:
        return "b200"
    if "_1xH100_80GB_SXM5_" in name:
        return "h100-sxm"
    if "_1xH100_80GB_PCIe_" in name:
        return "h100-pcie"
    return None


# zoo model -> (Lambda model, relation). Only the same network, or one of the same family whose time
# is spent in the same kinds of layer in about the same proportions.
MODEL_MAP = {
    "resnet50": ("resnet50", "same model (NVIDIA DeepLearningExamples ResNet-50 v1.5 = torchvision resnet50)"),
    "resnet101": ("resnet50", "same class: ResNet-50's bottleneck blocks, deeper (same layer mix)"),
    "resnet152": ("resnet50", "same class: ResNet-50's bottleneck blocks, deeper (same layer mix)"),
    "bert_base": ("bert_base_squad", "same network (BERT-base encoder); Lambda fine-tunes on SQuAD at "
                  "sequence 384, the zoo pre-trains (masked LM) at 128"),
    "bert_large": ("bert_large_squad", "same network (BERT-large encoder); Lambda fine-tunes on SQuAD at "
                   "sequence 384, the zoo pre-trains (masked LM) at 128"),
    "gpt2": ("bert_base_squad", "same class: a 12-layer, 768-wide transformer with GELU MLPs (GPT-2 small is "
             "decoder-only at sequence 1024)"),
}
LAMBDA_MODELS = sorted({v[0] for v in MODEL_MAP.values()})


def _float(x: str) -> float:
    try:
        return float(x)
    except ValueError:
        return 0.0


def read_table(folder: Path, table: str, prec: str) -> list[dict]:
    spec = TABLES[table]
    out = []
    batch_by_row: dict[str, dict] = {}
    if prec in spec["batch_files"]:
        with open(folder / spec["batch_files"][prec], newline="") as f:
            for r in csv.DictReader(f):
                if _float(r["num_gpu"]) == 1:
                    batch_by_row[r["name_gpu"]] = r
    with open(folder / spec["files"][prec], newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    for r in rows[1:]:
        rec = dict(zip(header, r))
        if table == "lambda-v1":
            if _float(rec["num_gpu"]) != 1:
                continue
            name, gpu = rec["name_gpu"], V1_GPUS.get(rec["name_gpu"])
        else:
            name = r[0]
            gpu = v2_gpu(name)
        if gpu is None:
            continue
        for lm in LAMBDA_MODELS:
            value = _float(rec.get(lm, "0"))
            if value <= 0:
                continue
            b = batch_by_row.get(name, {}).get(lm)
            out.append({"gpu": gpu, "row": name, "lambda_model": lm, "value": value,
                        "batch_per_gpu": int(float(b)) if b else None})
    return out


def build(folder: Path) -> dict:
    cells = []
    for table in TABLES:
        for prec in ("amp", "fp32"):
            groups: dict[tuple, list[dict]] = {}
            for c in read_table(folder, table, prec):
                groups.setdefault((c["gpu"], c["lambda_model"]), []).append(c)
            for (gpu, lm), g in sorted(groups.items()):
                batches = sorted({c["batch_per_gpu"] for c in g if c["batch_per_gpu"]})
                cells.append({
                    "table": table, "precision": prec, "gpu": gpu, "lambda_model": lm,
                    "samples_per_s": statistics.median(c["value"] for c in g),
                    "batch_per_gpu": batches[0] if len(batches) == 1 else None,
                    "rows": sorted(c["row"] for c in g),
                })
    return {
        "description": "Single-GPU training throughput per GPU and model from Lambda's PyTorch benchmark "
                       "(units per model as Lambda reports them: images/s for resnet50, sequences/s for "
                       "bert); only ratios between GPUs of one table are used (costopt/perf/compute.py). "
                       "'amp' is automatic mixed precision (fp16); 'fp32' runs TF32 on Ampere and later.",
        "built_by": "tools/build_published.py from shared/research/lambda/ (head commit aa5addb, 2025-12-17)",
        "tables": {k: {"source": v["source"], "date": v["date"]} for k, v in TABLES.items()},
        "model_map": {z: {"lambda_model": lm, "relation": rel} for z, (lm, rel) in MODEL_MAP.items()},
        "cells": cells,
    }


# TensorFlow's 2017 benchmark page (shared/research/published_throughput.csv, source TF_BENCH_2017):
# the only public single-GPU training figures for Kepler (K80) and Pascal (P100) in shared/research.
# Kept: one GPU, synthetic data, the batch of each platform's main table, and the models whose
# tf_cnn_benchmarks network is the zoo's network (AlexNet left out: TF's AlexNet is not torchvision's
# and its batch-512 runs are input-bound). Several platforms of one GPU (GCE and AWS K80) -> median.
TF2017_SOURCE_ID = "TF_BENCH_2017"
TF2017_GPUS = {"Tesla K80 (GCE n1-standard-32-k80x8)": "k80", "Tesla K80 (AWS p2.8xlarge)": "k80",
               "Tesla P100 (DGX-1)": "p100-sxm2"}
TF2017_MODELS = {"InceptionV3": "inception_v3", "ResNet-50": "resnet50", "ResNet-152": "resnet152",
                 "VGG16": "vgg16"}
# kept as a check, not fitted: VGG16 is 3x3 convolutions only, which cuDNN 5 runs with Winograd
# transforms (fewer multiplies than the direct count): the P100's 154 images/s x 93 GFLOP (direct
# count, forward + backward) is 14.3 TFLOP/s, 135% of its 10.6 TFLOP/s FP32 peak.
TF2017_CHECK_ONLY = {"vgg16": "not fitted: 3x3 convolutions run as Winograd in cuDNN 5, so the direct FLOP count "
                              "overstates the work (P100: 135% of FP32 peak by that count)"}
TF2017_MAIN_BATCH = {("k80", "inception_v3"): 64, ("k80", "resnet50"): 64, ("k80", "resnet152"): 32,
                     ("k80", "vgg16"): 32, ("p100-sxm2", "inception_v3"): 64, ("p100-sxm2", "resnet50"): 64,
                     ("p100-sxm2", "resnet152"): 64, ("p100-sxm2", "vgg16"): 64}


def build_tf2017(csv_path: Path) -> dict:
    groups: dict[tuple, list[dict]] = {}
    with open(csv_path, newline="") as f:
        for r in csv.DictReader(f):
            gpu, model = TF2017_GPUS.get(r["gpu"]), TF2017_MODELS.get(r["model"])
            if (r["source_id"] != TF2017_SOURCE_ID or gpu is None or model is None or r["total_gpus"] != "1"
                    or r["data"] != "synthetic" or r["strategy"].startswith("distributed")):
                continue
            if int(r["batch_per_gpu"]) != TF2017_MAIN_BATCH[(gpu, model)]:
                continue
            groups.setdefault((gpu, model), []).append(r)
    cells = [{"gpu": gpu, "model": model, "batch_per_gpu": TF2017_MAIN_BATCH[(gpu, model)],
              "samples_per_s": round(statistics.median(float(r["throughput_samples_per_s"]) for r in rows), 6),
              "rows": sorted(f"{r['gpu']}: {r['throughput_samples_per_s']}" for r in rows),
              "in_fit": model not in TF2017_CHECK_ONLY, "note": TF2017_CHECK_ONLY.get(model, "")}
             for (gpu, model), rows in sorted(groups.items())]
    return {
        "description": "Single-GPU training throughput (images/s, fp32, synthetic data) of K80 (one GK210 die) "
                       "and P100 SXM2 from TensorFlow's 2017 benchmark page; used as absolute times per "
                       "sample to fit Kepler's and Pascal's achieved fractions (costopt/perf/compute.py).",
        "built_by": "tools/build_published.py from shared/research/published_throughput.csv (source_id TF_BENCH_2017)",
        "source": "tensorflow/tensorflow docs_src/performance/benchmarks.md, commit 6535ed7 ('Test Date: May 2017', "
                  "TF b1e174e, tf_cnn_benchmarks 9165a70, CUDA 8.0 / cuDNN 5.1, K80 GPU Boost on)",
        "date": "2017-05",
        "precision": "fp32",
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--out-tf2017", type=Path, default=DEFAULT_OUT_TF2017)
    args = ap.parse_args(argv)
    doc = build(args.shared / "research" / "lambda")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(in_repo(json.dumps(doc, sort_keys=True, indent=1) + "\n"), encoding="utf-8")
    print(f"wrote {args.out} ({len(doc['cells'])} cells)")
    tf = build_tf2017(args.shared / "research" / "published_throughput.csv")
    args.out_tf2017.write_text(in_repo(json.dumps(tf, sort_keys=True, indent=1) + "\n"), encoding="utf-8")
    print(f"wrote {args.out_tf2017} ({len(tf['cells'])} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
