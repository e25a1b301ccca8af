"""`costopt profile`: model definitions, measurement, zoo format, and use by predict.

The measuring tests need PyTorch (the `profile` extra) and skip without it. They run small inputs
(64x64 images, one timed step) to stay fast on a 2-core CPU; .ci/run also runs the full-size
`costopt profile --model resnet50 --device cpu --batch 2` command once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from costopt.search import api
from costopt.cli import app
from costopt.perf.workload import load_profile, load_workload

torch = pytest.importorskip("torch", reason="PyTorch not installed (pip install 'costopt[profile]')")

from costopt.measure import profile as prof  # noqa: E402
from costopt.measure import torch_models  # noqa: E402

ZOO_KEYS = {"model", "description", "sample_unit", "optimizer", "default_batch", "tensor_sets", "profiles"}
PROFILE_KEYS = {"gpu", "precision", "batch", "forward_ms", "backward_ms", "step_ms", "peak_mem_bytes", "source", "date"}


def test_cli_import_does_not_import_torch():
    code = "import sys, costopt, costopt.cli, costopt.search.api; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_resnet50_matches_torchvision_parameters():
    with torch.device("meta"):  # shapes only: no memory, no init cost
        params = list(torch_models.resnet50().named_parameters())
    assert len(params) == 161
    assert sum(p.numel() for _, p in params) == 25_557_032


@pytest.mark.parametrize("name", ["resnet50", "resnet101", "resnet152", "vgg16", "alexnet"])
def test_builtin_models_match_zoo_tensors(name):
    """Same names and sizes as the torchvision tensors the zoo recorded on the H200."""
    with torch.device("meta"):
        mine = {n: p.numel() for n, p in torch_models.BUILDERS[name]().named_parameters()}
    zoo = load_workload(name).tensors("pytorch")
    assert mine == dict(zip(zoo.names, zoo.numel.tolist()))


@pytest.fixture(scope="module")
def small_profile(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof") / "p.json"
    res = CliRunner().invoke(app, ["profile", "--model", "resnet50", "--device", "cpu", "--batch", "2",
                                   "--input-size", "64", "--warmup", "1", "--repeat", "1",
                                   "--gpu-id", "h200-sxm", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_profile_file_has_zoo_format(small_profile):
    data = json.loads(small_profile.read_text())
    assert ZOO_KEYS <= set(data)
    assert data["model"] == "resnet50" and data["optimizer"] == "sgd"
    ts = data["tensor_sets"]["pytorch"]
    assert ts["order"] == "backward" and ts["source"]
    assert len(ts["tensors"]) == 161
    assert sum(t["numel"] for t in ts["tensors"]) == 25_557_032
    fr = [t["ready_fraction"] for t in ts["tensors"]]
    assert fr == sorted(fr) and 0 <= fr[0] and fr[-1] <= 1
    # the classifier's gradients are ready before the stem's (backward runs from the output)
    names = [t["name"] for t in ts["tensors"]]
    assert names.index("fc.weight") < names.index("conv1.weight")
    (p,) = data["profiles"]
    assert set(p) == PROFILE_KEYS
    assert p["gpu"] == "h200-sxm" and p["batch"] == 2 and p["precision"] == "fp32"
    assert p["forward_ms"] > 0 and p["backward_ms"] > 0 and p["step_ms"] >= 0 and p["peak_mem_bytes"] > 0
    assert "CPU estimate" in p["source"]
    assert data["environment"]["copy_bandwidth"].startswith("not measured")
    load_profile(small_profile)  # the loader accepts it


def test_predict_uses_measured_profile(small_profile):
    data = json.loads(small_profile.read_text())
    p = data["profiles"][0]
    # the profile is fp32 (measured on the CPU); precision auto would ask the H200 for bf16, which it lacks
    d = api.predict(None, "h200-sxm", 4, 1, None, "ring", batch_per_gpu=2, profile=small_profile, precision="fp32")
    assert d["compute_source"] == "measured"
    assert "costopt profile" in d["compute_basis"]
    expect = (p["forward_ms"] + p["backward_ms"] + p["step_ms"]) / 1e3
    assert d["t_compute_s"] == pytest.approx(expect, rel=1e-6)
    # with --model too, the measured numbers replace the built-in H200 ones for that GPU only
    base = api.predict("resnet50", "h200-sxm", 4, 1, None, "ring", batch_per_gpu=2, precision="fp32")
    merged = api.predict("resnet50", "h200-sxm", 4, 1, None, "ring", batch_per_gpu=2, profile=small_profile,
                         precision="fp32")
    assert merged["t_compute_s"] == pytest.approx(expect, rel=1e-6)
    assert base["t_compute_s"] != pytest.approx(expect, rel=1e-3)


def test_cli_predict_with_profile(small_profile):
    res = CliRunner().invoke(app, ["predict", "--profile", str(small_profile), "--gpu", "h200-sxm",
                                   "--gpus-per-node", "4", "--nodes", "1", "--strategy", "ring",
                                   "--batch-per-gpu", "2", "--precision", "fp32", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["compute_source"] == "measured"


def test_user_model_module(tmp_path, monkeypatch):
    (tmp_path / "mymodel.py").write_text(textwrap.dedent("""
        import torch
        def build():
            model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
            make_batch = lambda b: (torch.randn(b, 16), torch.randint(0, 4, (b,)))
            loss_fn = lambda m, batch: torch.nn.functional.cross_entropy(m(batch[0]), batch[1])
            return model, make_batch, loss_fn, {"sample_unit": "16 features"}
    """))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "u.json"
    res = CliRunner().invoke(app, ["profile", "--model-module", "mymodel:build", "--name", "mlp", "--device", "cpu",
                                   "--batch", "4", "--batch", "8", "--warmup", "1", "--repeat", "3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["model"] == "mlp" and data["sample_unit"] == "16 features"
    assert [p["batch"] for p in data["profiles"]] == [4, 8]
    assert {p["gpu"] for p in data["profiles"]} == {"cpu"}
    assert [t["name"] for t in data["tensor_sets"]["pytorch"]["tensors"]][:2] == ["2.bias", "2.weight"] or \
        {t["name"] for t in data["tensor_sets"]["pytorch"]["tensors"][:2]} == {"2.bias", "2.weight"}
    assert data["default_batch"] == 8


def test_errors_are_one_line():
    r = CliRunner().invoke(app, ["profile", "--model", "nosuch", "--device", "cpu", "-o", "x.json"])
    assert r.exit_code == 2 and "unknown model" in r.output
    r = CliRunner().invoke(app, ["profile", "--device", "cpu", "-o", "x.json"])
    assert r.exit_code == 2 and "exactly one" in r.output
    r = CliRunner().invoke(app, ["profile", "--model-module", "nocolon", "--device", "cpu", "-o", "x.json"])
    assert r.exit_code == 2


def test_bad_input_size_and_output_fail_before_measuring(tmp_path):
    pytest.importorskip("torch")
    r = CliRunner().invoke(app, ["profile", "--model", "resnet50", "--device", "cpu", "--input-size", "0",
                                 "-o", str(tmp_path / "p.json")])
    assert r.exit_code == 2 and "--input-size must be >= 1, got 0" in r.output
    for out, words in ((tmp_path, "is a directory"), (tmp_path / "nodir" / "p.json", "does not exist")):
        r = CliRunner().invoke(app, ["profile", "--model", "resnet50", "--device", "cpu", "-o", str(out)])
        assert r.exit_code == 2 and words in r.output, r.output


def test_model_that_cannot_run_the_input_is_one_line(tmp_path):
    pytest.importorskip("torch")
    r = CliRunner().invoke(app, ["profile", "--model", "resnet50", "--device", "cpu", "--input-size", "8",
                                 "--batch", "1", "--repeat", "1", "--warmup", "0", "-o", str(tmp_path / "p.json")])
    assert r.exit_code == 2 and "resnet50 at batch 1 (fp32, cpu): ValueError" in r.output
    assert "Traceback" not in r.output


def test_torchvision_only_models_say_what_they_need():
    try:
        import torchvision  # noqa: F401

        pytest.skip("torchvision importable here")
    except Exception:
        pass
    with pytest.raises(Exception, match="needs torchvision"):
        prof.build_zoo_model("inception_v3")
