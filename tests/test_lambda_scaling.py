"""The Lambda 1-8 GPU single-node rows (costopt/data/validation/lambda_scaling.csv, built by
tools/build_lambda_scaling.py from shared/research/lambda/): rebuilt byte for byte, and cells checked by hand
against the source tables (lambdal/deeplearning-benchmark pytorch-train-throughput-*.csv, 2024-07-24)."""

import subprocess
import sys
from pathlib import Path

import pytest

from costopt.measure.validate import read_measurements, validate

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "research" / "lambda"


def test_build_lambda_scaling_is_reproducible():
    if not SHARED.exists():
        pytest.skip("shared/research/lambda not available")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_lambda_scaling.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_lambda_rows_by_hand():
    """Source cells (resnet50 column): fp32 'H100 80GB SXM5' 1753 img/s on 1 GPU, '2x H100 80GB SXM5' 3477 at a
    global batch of 1280 (640 per GPU); fp16 '8x A100 80GB SXM4' 11439, 1-GPU 1582, global batch 10240 (1280 per
    GPU); fp32 '2x RTX 4090' 1363, 1-GPU 721, global batch 448 (224 per GPU)."""
    _, rows, _ = read_measurements("lambda_scaling")
    got = {(r.gpu, r.gpus_per_node, r.precision): r for r in rows}
    expect = {("h100-sxm", 2, "fp32"): (1753, 3477, 640), ("a100-sxm-80gb", 8, "amp_fp16"): (1582, 11439, 1280),
              ("rtx-4090", 2, "fp32"): (721, 1363, 224)}
    for key, (single, measured, batch) in expect.items():
        r = got[key]
        assert (r.single_gpu_samples_per_s, r.measured_samples_per_s, r.batch_per_gpu) == (single, measured, batch)
        assert r.nodes == 1 and r.strategy == "ring" and r.stack == "nccl" and r.source == "LAMBDA_PT_V1"
    assert len(rows) == 24  # 6 systems x (2, 4, 8 GPUs where the table has them) x fp32 / fp16


def test_lambda_rows_predict_within_the_hardware():
    """No prediction beats perfect scaling of the row's own 1-GPU figure (physics first)."""
    f = validate("lambda_scaling").frame
    assert (f.predicted_samples_per_s <= f.single_gpu_samples_per_s.astype(float) * f.gpus_per_node * 1.000001).all()
