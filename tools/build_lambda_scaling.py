"""Build costopt/data/validation/lambda_scaling.csv: 2-8 GPU single-node rows from Lambda's benchmark tables.

    python tools/build_lambda_scaling.py [--shared ../shared] [--check]

Source: Lambda, "deeplearning-benchmark" (GitHub, lambdal/deeplearning-benchmark, folder `pytorch/`, v1 tables
last changed 2024-07-24; copies in shared/research/lambda/, SOURCES.md). Each row is one multi-GPU cell of
`pytorch-train-throughput-{fp32,fp16}.csv` (column `resnet50`, images/s) whose system also has a 1-GPU row in
the same table: that 1-GPU figure is the row's compute calibration, so the row measures how throughput
scales inside one node. Per-GPU batch = the `pytorch-train-bs-*.csv` cell / num_gpu.

What goes in, and the assumptions written into each row's `notes`:
- Systems (the plain-named rows; the vendor duplicates of H100 SXM5 (Dell, SMC, 1CC, ...) and the
  LambdaCloud 8x H100 row, which has no 1-GPU row of its own, are left out, as in
  published_throughput_sources.md for LAMBDA_PT_V1):
  H100 80GB SXM5 (HGX H100, NVSwitch), A100 80GB SXM4 (HGX A100, NVSwitch), H100 80GB PCIe Gen5,
  A100 80GB PCIe, RTX 4090, RTX 3090. The PCIe systems' GPU-to-GPU links are not stated (NVLink bridges on
  H100/A100 PCIe pairs are optional): modelled as PCIe only (an estimate, said in the row).
  The LambdaCloud V100 rows are left out: the table names "V100 16GB" without the form factor, so the
  GPU link (SXM2 NVLink or PCIe) would be a guess.
- Stack: nccl (the harness runs NVIDIA DeepLearningExamples ResNet-50 v1.5 for PyTorch, multi-GPU with
  DDP over NCCL: pytorch/README.md of the benchmark repository); strategy ring, reduce on the GPUs.
- Precision: the fp32 table is `fp32` (on Ampere/Hopper PyTorch's default TF32 convolutions may be in use;
  the source does not say: the 1-GPU calibration absorbs it); the fp16 table is automatic mixed precision
  (`amp_fp16`).
- Data: not stated by the source.
- Chassis: the validation catalog's node shapes for 2 (and 4) of a board's GPUs where the reference catalog
  has none.
`--check` compares with the shipped file instead of writing (exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from build_validation import COLUMNS, _num, _row  # noqa: E402
from shipped_file import check_or_write, csv_text  # noqa: E402

OUT = ROOT / "costopt" / "data" / "validation" / "lambda_scaling.csv"
SOURCE = "LAMBDA_PT_V1"
# Lambda system name (1-GPU row) -> (catalog gpu, {gpus per node: chassis id or "" for the catalog default},
#                                    note on the node's GPU links)
SYSTEMS = {
    "H100 80GB SXM5": ("h100-sxm", {2: "val-hgx-h100-2", 4: "", 8: ""}, "HGX H100 board, NVLink/NVSwitch"),
    "A100 80GB SXM4": ("a100-sxm-80gb", {2: "val-hgx-a100-2", 4: "val-dgxa100-4", 8: ""},
                       "HGX A100 board, NVLink/NVSwitch"),
    "H100 80GB PCIe Gen5": ("h100-pcie", {2: "", 4: "", 8: ""},
                            "GPU-to-GPU links not stated: PCIe only assumed (NVLink bridges are optional)"),
    "A100 80GB PCIe": ("a100-pcie-80gb", {2: "", 4: "", 8: ""},
                       "GPU-to-GPU links not stated: PCIe only assumed (NVLink bridges are optional)"),
    "RTX 4090": ("rtx-4090", {2: "", 4: "", 8: ""}, "PCIe (the RTX 4090 has no NVLink)"),
    "RTX 3090": ("rtx-3090", {2: "", 4: "", 8: ""},
                 "GPU-to-GPU links not stated: PCIe only assumed (an NVLink bridge is optional)"),
}
TABLES = {"fp32": "fp32", "fp16": "amp_fp16"}
FILE_DATE = "2024-07-24"


def _multi_name(name: str, n: int) -> str:
    return f"{n}x {name}"


def build(shared: Path) -> str:
    lam = shared / "research" / "lambda"
    rows = []
    for table, precision in TABLES.items():
        tput = pd.read_csv(lam / f"pytorch-train-throughput-{table}.csv")
        bs = pd.read_csv(lam / f"pytorch-train-bs-{table}.csv")
        for name, (gpu, chassis, link_note) in SYSTEMS.items():
            one = tput[tput.name_gpu == name]
            if len(one) != 1:
                raise SystemExit(f"{table}: no unique 1-GPU row named {name!r}")
            single = float(one.resnet50.iloc[0])
            one_line = int(one.index[0]) + 2
            for n, ch in chassis.items():
                hit = tput[tput.name_gpu == _multi_name(name, n)]
                if not len(hit):
                    continue
                i = int(hit.index[0])
                value = float(hit.resnet50.iloc[0])
                if value <= 0:  # 0 = not run
                    continue
                global_bs = float(bs.loc[bs.name_gpu == _multi_name(name, n), "resnet50"].iloc[0])
                per_gpu = global_bs / n
                if not per_gpu.is_integer():
                    raise SystemExit(f"{table}: {name} x{n}: batch {global_bs:g} not a multiple of {n}")
                notes = [f"1-GPU calibration: same table's 1-GPU row ({single:g} img/s, line {one_line})",
                         f"per-GPU batch {int(per_gpu)} = global {global_bs:g} / {n} (pytorch-train-bs-{table}.csv)",
                         "DeepLearningExamples ResNet-50 v1.5 (PyTorch), DDP over NCCL: ring all-reduce on GPUs",
                         link_note, "pytorch tensor set",
                         f"where: pytorch-train-throughput-{table}.csv row '{_multi_name(name, n)}' column resnet50 "
                         f"(lambdal/deeplearning-benchmark, {FILE_DATE})"]
                if table == "fp32" and gpu not in ("rtx-3090",):
                    notes.append("fp32 table: TF32 convolutions may be in use (not stated); the 1-GPU calibration absorbs it")
                rows.append(_row(
                    source=SOURCE, model="resnet50", gpu=gpu, gpus_per_node=n, nodes=1, batch_per_gpu=int(per_gpu),
                    precision=precision, strategy="ring", reduce_on="gpu", single_gpu_samples_per_s=_num(single),
                    measured_samples_per_s=_num(value), tensor_set="pytorch", chassis=ch, stack="nccl",
                    measured_basis="throughput", system=f"Lambda {_multi_name(name, n)}", data="not stated",
                    source_line=i + 2, notes="; ".join(notes)))
    return csv_text(rows, COLUMNS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"), help="the shared/ folder (default ../shared)")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, do not write")
    a = ap.parse_args()
    text = build(Path(a.shared))
    check_or_write(OUT, text, a.check)
    print(f"wrote {OUT} ({text.count(chr(10)) - 1} rows)")


if __name__ == "__main__":
    main()
