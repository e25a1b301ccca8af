#!/usr/bin/env python3
"""Build the workload zoo: one JSON file per model under costopt/data/zoo/.

Inputs (read-only, from the shared folder):
  data/h200/train_step.jsonl   per (model, precision, batch) step timings and peak memory
  data/h200/grad_ready.jsonl   per-tensor gradient-ready timelines (PyTorch parameter tensors)

Each zoo file carries
  * the PyTorch parameter tensors in the order their gradients became ready, with the ready time
    as a fraction of the hooked backward pass (fp32 record when there is one, else amp_bf16);
  * for alexnet, vgg16, resnet50 and inception_v3 also the TensorFlow tf_cnn_benchmarks variables
    (thesis_method.md §5), listed in backward order (reverse creation order), with the batch-norm
    moving statistics included as non-trainable load for greedy PS placement;
  * every measured train_step profile of the model;
  * `flops`: matmul FLOPs and other memory traffic per training sample, counted per layer by
    tools/zoo_flops.py (its walk's parameter count must equal the measured n_params).

The output is deterministic (sorted keys, indent=1, floats at 6 significant digits), so a rerun
produces identical bytes.

Usage:  python tools/build_zoo.py [--shared DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_flops import flops_record  # noqa: E402
from shipped_file import in_repo  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared"
DEFAULT_OUT = REPO_ROOT / "costopt" / "data" / "zoo"

MODELS = [
    "alexnet",
    "vgg16",
    "inception_v3",
    "resnet50",
    "resnet101",
    "resnet152",
    "bert_base",
    "bert_large",
    "gpt2",
    "llama_1b",
    "googlenet",
    "densenet121",
]

GPU = "h200-sxm"
MEASURE_DATE = "2026-11-30"
TRAIN_STEP_SRC = "shared/data/h200/train_step.jsonl"
GRAD_READY_SRC = "shared/data/h200/grad_ready.jsonl (H200, PyTorch 2.11, 2026-11-30)"
TF_SRC = "thesis_method.md §5 (tf_cnn_benchmarks c12839f definitions, nclass 1001)"
NCLASS_TF = 1001

_TV = "torchvision 0.26.0 definition"
_HF = "transformers 5.17.0, random init from config"
MODEL_TEXT = {
    "alexnet": f"AlexNet ({_TV})",
    "vgg16": f"VGG-16 without batch norm ({_TV})",
    "inception_v3": f"Inception-v3 ({_TV}, auxiliary head on)",
    "resnet50": f"ResNet-50 ({_TV})",
    "resnet101": f"ResNet-101 ({_TV})",
    "resnet152": f"ResNet-152 ({_TV})",
    "googlenet": f"GoogLeNet ({_TV})",
    "densenet121": f"DenseNet-121 ({_TV})",
    "bert_base": f"BERT-base BertForMaskedLM ({_HF})",
    "bert_large": f"BERT-large BertForMaskedLM ({_HF})",
    "gpt2": f"GPT-2 small GPT2LMHeadModel ({_HF})",
    "llama_1b": (
        f"Llama-3.2-1B-shaped LlamaForCausalLM ({_HF}; hidden 2048, 16 layers, 32 heads, "
        "8 KV heads, vocab 128256, tied embeddings)"
    ),
}
OPTIMIZER_TEXT = {"sgd": "SGD momentum 0.9", "adamw": "AdamW"}


def _num(x: float) -> float:
    """Round a float to 6 significant digits (stable text in the JSON)."""
    return float(f"{float(x):.6g}")


def _read_jsonl(path: Path) -> list[dict]:
    with path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _describe(model: str, unit: str, optimizer: str) -> str:
    if unit.endswith(" image"):
        inputs = unit.replace(" image", "") + " images"
    elif unit.endswith(" tokens"):
        inputs = "sequence length " + unit.replace(" tokens", "")
    else:
        inputs = unit
    return f"{MODEL_TEXT[model]}, {inputs}, {OPTIMIZER_TEXT.get(optimizer, optimizer)}"


# ---------------------------------------------------------------------------------------------
# TensorFlow tf_cnn_benchmarks variables, in creation order (thesis_method.md §5 builder rules)
# ---------------------------------------------------------------------------------------------


class _TFBuilder:
    """Records variables as tf_cnn_benchmarks' ConvNetBuilder would create them."""

    def __init__(self, use_batch_norm: bool, bn_scale: bool):
        self.use_batch_norm = use_batch_norm
        self.bn_scale = bn_scale
        self.vars: list[tuple[str, int, bool]] = []  # (name, numel, trainable)
        self.n_conv = 0
        self.n_affine = 0

    def conv(self, cin: int, cout: int, kh: int, kw: int, scope: str = "") -> int:
        i = self.n_conv
        self.n_conv += 1
        base = f"{scope}conv{i}"
        self.vars.append((f"{base}/kernel", kh * kw * cin * cout, True))
        if self.use_batch_norm:
            bn = f"{base}/batchnorm{i}"
            self.vars.append((f"{bn}/beta", cout, True))
            if self.bn_scale:
                self.vars.append((f"{bn}/gamma", cout, True))
            self.vars.append((f"{bn}/moving_mean", cout, False))
            self.vars.append((f"{bn}/moving_variance", cout, False))
        else:
            self.vars.append((f"{base}/biases", cout, True))
        return cout

    def affine(self, cin: int, cout: int) -> int:
        i = self.n_affine
        self.n_affine += 1
        self.vars.append((f"affine{i}/weights", cin * cout, True))
        self.vars.append((f"affine{i}/biases", cout, True))
        return cout


def tf_alexnet() -> list[tuple[str, int, bool]]:
    b = _TFBuilder(use_batch_norm=False, bn_scale=False)
    c = b.conv(3, 64, 11, 11)
    c = b.conv(c, 192, 5, 5)
    c = b.conv(c, 384, 3, 3)
    c = b.conv(c, 384, 3, 3)
    c = b.conv(c, 256, 3, 3)
    f = b.affine(c * 6 * 6, 4096)
    f = b.affine(f, 4096)
    b.affine(f, NCLASS_TF)
    return b.vars


def tf_vgg16() -> list[tuple[str, int, bool]]:
    b = _TFBuilder(use_batch_norm=False, bn_scale=False)
    c = 3
    for n_layers, width in [(2, 64), (2, 128), (3, 256), (3, 512), (3, 512)]:
        for _ in range(n_layers):
            c = b.conv(c, width, 3, 3)
    f = b.affine(c * 7 * 7, 4096)
    f = b.affine(f, 4096)
    b.affine(f, NCLASS_TF)
    return b.vars


def tf_resnet50_v1() -> list[tuple[str, int, bool]]:
    b = _TFBuilder(use_batch_norm=True, bn_scale=True)
    c = b.conv(3, 64, 7, 7)
    block = 0
    for depth, bottleneck, n_blocks in [(256, 64, 3), (512, 128, 4), (1024, 256, 6), (2048, 512, 3)]:
        for _ in range(n_blocks):
            scope = f"resnet_v1{block}/"
            block += 1
            if depth != c:  # projection shortcut, created before the main path
                b.conv(c, depth, 1, 1, scope)
            x = b.conv(c, bottleneck, 1, 1, scope)
            x = b.conv(x, bottleneck, 3, 3, scope)
            c = b.conv(x, depth, 1, 1, scope)
    b.affine(c, NCLASS_TF)
    return b.vars


def _inception_module(b: _TFBuilder, name: str, cin: int, cols: list[list[tuple]]) -> int:
    """Walk the columns like ConvNetBuilder.inception_module; return the concat channel count.

    ('share',) reuses the layer at the same position of the previous column: no variables, and
    its output channel count is that layer's.
    """
    out_channels = 0
    prev_col_channels: list[int] = []
    for col in cols:
        c = cin
        col_channels: list[int] = []
        for layer in col:
            kind = layer[0]
            if kind == "conv":
                _, cout, kh, kw = layer[:4]
                c = b.conv(c, cout, kh, kw, f"{name}/")
            elif kind == "share":
                c = prev_col_channels[len(col_channels)]
            elif kind in ("apool", "mpool"):
                pass  # pooling keeps the channel count
            else:  # pragma: no cover - definitions below use only these kinds
                raise ValueError(kind)
            col_channels.append(c)
        prev_col_channels = col_channels
        out_channels += c
    return out_channels


def tf_inception3() -> list[tuple[str, int, bool]]:
    """tf_cnn_benchmarks Inceptionv3Model (auxiliary=False), BN with scale=False."""
    b = _TFBuilder(use_batch_norm=True, bn_scale=False)
    c = b.conv(3, 32, 3, 3)
    c = b.conv(c, 32, 3, 3)
    c = b.conv(c, 64, 3, 3)
    c = b.conv(c, 80, 1, 1)
    c = b.conv(c, 192, 3, 3)
    counts = {"a": 0, "b": 0, "c": 0, "d": 0, "e": 0}

    def module(kind: str, cols: list[list[tuple]]) -> None:
        nonlocal c
        name = f"incept_v3_{kind}{counts[kind]}"
        counts[kind] += 1
        c = _inception_module(b, name, c, cols)

    def block_a(n: int) -> None:
        module("a", [
            [("conv", 64, 1, 1)],
            [("conv", 48, 1, 1), ("conv", 64, 5, 5)],
            [("conv", 64, 1, 1), ("conv", 96, 3, 3), ("conv", 96, 3, 3)],
            [("apool",), ("conv", n, 1, 1)],
        ])

    def block_b() -> None:
        module("b", [
            [("conv", 384, 3, 3)],
            [("conv", 64, 1, 1), ("conv", 96, 3, 3), ("conv", 96, 3, 3)],
            [("mpool",)],
        ])

    def block_c(n: int) -> None:
        module("c", [
            [("conv", 192, 1, 1)],
            [("conv", n, 1, 1), ("conv", n, 1, 7), ("conv", 192, 7, 1)],
            [("conv", n, 1, 1), ("conv", n, 7, 1), ("conv", n, 1, 7), ("conv", n, 7, 1),
             ("conv", 192, 1, 7)],
            [("apool",), ("conv", 192, 1, 1)],
        ])

    def block_d() -> None:
        module("d", [
            [("conv", 192, 1, 1), ("conv", 320, 3, 3)],
            [("conv", 192, 1, 1), ("conv", 192, 1, 7), ("conv", 192, 7, 1), ("conv", 192, 3, 3)],
            [("mpool",)],
        ])

    def block_e(pool: str) -> None:
        module("e", [
            [("conv", 320, 1, 1)],
            [("conv", 384, 1, 1), ("conv", 384, 1, 3)],
            [("share",), ("conv", 384, 3, 1)],
            [("conv", 448, 1, 1), ("conv", 384, 3, 3), ("conv", 384, 1, 3)],
            [("share",), ("share",), ("conv", 384, 3, 1)],
            [(pool,), ("conv", 192, 1, 1)],
        ])

    for n in (32, 64, 64):
        block_a(n)
    block_b()
    for n in (128, 160, 160, 192):
        block_c(n)
    block_d()
    block_e("apool")
    block_e("mpool")
    b.affine(c, NCLASS_TF)
    return b.vars


TF_MODELS = {
    "alexnet": tf_alexnet,
    "vgg16": tf_vgg16,
    "resnet50": tf_resnet50_v1,
    "inception_v3": tf_inception3,
}


# ---------------------------------------------------------------------------------------------
# Tensor sets
# ---------------------------------------------------------------------------------------------


def pick_grad_ready(records: list[dict], model: str) -> dict:
    mine = {r["precision"]: r for r in records if r["model"] == model}
    for precision in ("fp32", "amp_bf16"):
        if precision in mine:
            return mine[precision]
    raise SystemExit(f"no grad_ready record for {model}")


def pytorch_set(rec: dict) -> tuple[dict, np.ndarray, np.ndarray]:
    """Return the tensor set plus the (cumulative byte fraction, ready fraction) curve."""
    denom = float(rec["backward_ms_with_hooks"])
    tensors = []
    running = 0.0
    fracs = []
    for t in rec["tensors"]:
        f = min(max(float(t["ready_ms"]) / denom, 0.0), 1.0)
        running = max(running, f)  # non-decreasing along the list
        fracs.append(running)
        tensors.append(
            {"name": t["name"], "numel": int(t["numel"]), "ready_fraction": _num(running), "trainable": True}
        )
    numel = np.array([t["numel"] for t in tensors], dtype=np.float64)
    cum = np.cumsum(numel) / numel.sum()
    tset = {
        "source": f"{GRAD_READY_SRC}, {rec['precision']} batch {rec['batch']}",
        "order": "backward",
        "tensors": tensors,
    }
    # curve starts at (0 bytes ready, fraction 0)
    return tset, np.concatenate([[0.0], cum]), np.concatenate([[0.0], np.array(fracs)])


def tensorflow_set(model: str, curve_x: np.ndarray, curve_y: np.ndarray, pt_source: str) -> dict:
    creation = TF_MODELS[model]()
    backward = list(reversed(creation))
    numel = np.array([n for _, n, _ in backward], dtype=np.float64)
    train = np.array([tr for _, _, tr in backward], dtype=bool)
    cum = np.cumsum(np.where(train, numel, 0.0)) / numel[train].sum()
    ready = np.interp(cum, curve_x, curve_y)
    ready = np.maximum.accumulate(np.clip(ready, 0.0, 1.0))
    tensors = [
        {"name": name, "numel": int(n), "ready_fraction": _num(r), "trainable": bool(tr)}
        for (name, n, tr), r in zip(backward, ready)
    ]
    return {
        "source": (
            f"{TF_SRC}; ready fractions mapped by cumulative trainable-byte fraction from the "
            f"pytorch timeline ({pt_source})"
        ),
        "order": "backward",
        "tensors": tensors,
    }


def profiles(rows: list[dict]) -> list[dict]:
    out = []
    for r in sorted(rows, key=lambda r: (r["precision"], int(r["batch"]))):
        out.append(
            {
                "gpu": GPU,
                "precision": r["precision"],
                "batch": int(r["batch"]),
                "forward_ms": _num(r["forward_ms"]),
                "backward_ms": _num(r["backward_ms"]),
                "step_ms": _num(r["step_ms"]),
                "peak_mem_bytes": int(r["peak_mem_bytes"]),
                "source": TRAIN_STEP_SRC,
                "date": MEASURE_DATE,
            }
        )
    return out


def build_model(model: str, steps: list[dict], ready_records: list[dict]) -> dict:
    rows = [r for r in steps if r["model"] == model]
    if not rows:
        raise SystemExit(f"no train_step rows for {model}")
    units = {r["unit"] for r in rows}
    opts = {r["optimizer"] for r in rows}
    if len(units) != 1 or len(opts) != 1:
        raise SystemExit(f"{model}: inconsistent unit/optimizer {units} {opts}")
    unit, optimizer = units.pop(), opts.pop()
    rec = pick_grad_ready(ready_records, model)
    pt, cx, cy = pytorch_set(rec)
    sets = {"pytorch": pt}
    if model in TF_MODELS:
        sets["tensorflow"] = tensorflow_set(model, cx, cy, pt["source"])
    flops = flops_record(model)
    n_params = {int(r["n_params"]) for r in rows}
    if n_params != {flops["param_count"]}:
        raise SystemExit(f"{model}: layer walk counts {flops['param_count']} parameters, measured {n_params}")
    return {
        "model": model,
        "flops": flops,
        "description": _describe(model, unit, optimizer),
        "sample_unit": unit,
        "optimizer": optimizer,
        "default_batch": int(rec["batch"]),
        "tensor_sets": sets,
        "profiles": profiles(rows),
    }


def dumps(doc: dict) -> str:
    return in_repo(json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n")  # shipped_file.in_repo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED,
                    help="shared folder holding data/h200/ (default: ../shared next to the repo)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="output folder (default: costopt/data/zoo in the repo)")
    args = ap.parse_args(argv)
    data = args.shared / "data" / "h200"
    missing = [f for f in ("train_step.jsonl", "grad_ready.jsonl") if not (data / f).is_file()]
    if missing:  # one clear line, not a traceback: the shared folder is not always beside the repo
        print(f"error: {data} has no {' or '.join(missing)}: give the shared folder with --shared DIR "
              f"(it holds data/h200/ with the H200 measurements)", file=sys.stderr)
        return 2
    steps = _read_jsonl(data / "train_step.jsonl")
    ready = _read_jsonl(data / "grad_ready.jsonl")
    args.out.mkdir(parents=True, exist_ok=True)
    for model in MODELS:
        doc = build_model(model, steps, ready)
        path = args.out / f"{model}.json"
        path.write_text(dumps(doc), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
