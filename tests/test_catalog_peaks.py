"""Every GPU in every shipped catalog carries its peaks with their provenance (issue 11).

The peak fields (dense tensor FLOP/s per precision, memory bandwidth) bound every compute prediction
from above, so each entry must say where they come from and which GPU generation it is.
"""

from pathlib import Path

import pytest

from costopt.hardware.catalog import load_catalog, parse_catalog
from costopt.core.errors import InputError
from costopt.core.files import read_toml

CATALOGS = sorted((Path(__file__).resolve().parents[1] / "catalogs").glob("*.toml"))


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: p.name)
def test_every_gpu_has_peak_provenance_and_architecture(path):
    cat = load_catalog(path)
    for g in list(cat.gpu) + list(cat.unavailable_gpu):
        assert g.architecture is not None, f"{path.name}: gpu {g.id} has no architecture"
        assert g.peak_source and g.peak_date, f"{path.name}: gpu {g.id} has no peak_source/peak_date"


def test_peak_flops_per_precision_h100_sxm():
    g = load_catalog().gpus["h100-sxm"]
    # hardware_facts.md §1a: H100 SXM dense 67 FP32, 494.5 TF32, 989 FP16/BF16 TFLOP/s
    assert g.peak_flops("fp32") == pytest.approx(494.5e12)
    assert g.peak_flops("amp_bf16") == pytest.approx(989e12)
    assert g.peak_flops("amp_fp16") == pytest.approx(989e12)
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(3350e9)  # 3350 GB/s, SI


def test_best_training_precision_by_generation():
    gpus = load_catalog().gpus
    assert gpus["k80"].best_training_precision() == "fp32"
    assert gpus["p100-sxm2"].best_training_precision() == "fp32"  # FP16 only 2x FP32, no tensor cores
    assert gpus["v100-sxm2-16gb"].best_training_precision() == "amp_fp16"
    assert gpus["t4"].best_training_precision() == "amp_fp16"
    assert gpus["a100-sxm-80gb"].best_training_precision() == "amp_bf16"
    assert gpus["mi300x"].best_training_precision() == "amp_bf16"


def test_peak_source_without_date_is_rejected():
    path = Path(__file__).resolve().parents[1] / "costopt" / "catalogs" / "reference-2026.toml"
    data = read_toml(path, "catalog file")
    del data["gpu"][0]["peak_date"]
    with pytest.raises(InputError, match="gpu\\[0\\].*peak"):
        parse_catalog(data, "x.toml")
