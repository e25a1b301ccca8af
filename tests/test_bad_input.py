"""Every bad input: one clear message naming what and where, exit code 2, no traceback."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from costopt.hardware.catalog import load_catalog
from costopt.core.errors import InputError

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def run_cli(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "costopt.cli", *args], capture_output=True, text=True, cwd=cwd,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def write_variant(tmp_path, edit):
    """Copy the mini catalog with one textual edit."""
    text = MINI.read_text()
    new = edit(text)
    assert new != text
    path = tmp_path / "bad.toml"
    path.write_text(new)
    return path


BAD_CATALOGS = [
    ("unknown key", lambda t: t.replace("memory_gb = 141", "memory_gb = 141\nmemroy_gb = 141", 1),
     r"gpu\[0\] \(id 'h200-sxm'\), field 'memroy_gb': unknown key"),
    ("wrong type", lambda t: t.replace("tdp_w = 700", 'tdp_w = "700"', 1),
     r"gpu\[0\] \(id 'h200-sxm'\), field 'tdp_w'"),
    ("missing field", lambda t: t.replace("memory_gb = 24\n", "", 1),
     r"gpu\[1\] \(id 'halfcard'\), field 'memory_gb': missing required field"),
    ("price <= 0", lambda t: t.replace("price_usd = 5000\nsource", "price_usd = 0\nsource", 1),
     r"gpu\[1\] \(id 'halfcard'\), field 'price_usd'.*greater than 0"),
    ("negative nic price", lambda t: t.replace("price_usd = 1000", "price_usd = -1", 1),
     r"nic\[1\] \(id 'ib100'\), field 'price_usd'"),
    ("duplicate id", lambda t: t.replace('id = "halfcard"', 'id = "h200-sxm"', 1),
     r"gpu\[1\]: duplicate id 'h200-sxm'"),
    ("nic a chassis can't take", lambda t: t.replace('id = "pcie4x1"', 'id = "pcie4x1"\nnics = ["ib100", "ib999"]', 1),
     r"chassis\[2\] \(id 'pcie4x1'\), field 'nics': unknown nic 'ib999'"),
    ("nic too fast for slot", lambda t: t.replace("line_rate_gbps = 100", "line_rate_gbps = 800", 1).replace(
        'id = "pcie4x1"', 'id = "pcie4x1"\nnics = ["ib100"]', 1),
     r"chassis\[2\] \(id 'pcie4x1'\), field 'nics': nic 'ib100' \(800 Gb/s\) cannot be fed by a PCIe Gen4 x16 slot"),
    ("unknown gpu in accepts_gpus", lambda t: t.replace('id = "sxm8"', 'id = "sxm8"\naccepts_gpus = ["b300"]', 1),
     r"chassis\[0\] \(id 'sxm8'\), field 'accepts_gpus': unknown gpu 'b300'"),
    ("bad enum", lambda t: t.replace('transport = "tcp"', 'transport = "udp"', 1),
     r"nic\[0\] \(id 'eth10'\), field 'transport'"),
    ("not toml", lambda t: t.replace("[catalog]", "[catalog", 1), r"not valid TOML"),
    ("estimates name unknown field", lambda t: t.replace('price_date = "2026-11-30"', 'price_date = "2026-11-30"\nestimates = ["pirce_usd"]', 1),
     r"gpu\[0\].*estimates names unknown field"),
]


@pytest.mark.parametrize("name,edit,pattern", BAD_CATALOGS, ids=[b[0] for b in BAD_CATALOGS])
def test_bad_catalog_message_names_file_entry_field(tmp_path, name, edit, pattern):
    path = write_variant(tmp_path, edit)
    with pytest.raises(InputError) as exc:
        load_catalog(path)
    msg = str(exc.value)
    assert str(path) in msg
    assert re.search(pattern, msg), msg
    assert "\n" not in msg.strip()


def test_bad_catalog_cli_exit_2_no_traceback(tmp_path):
    path = write_variant(tmp_path, BAD_CATALOGS[0][1])
    rc, out, err = run_cli("solve", "--budget", "200000", "--model", "resnet50", "--catalog", str(path))
    assert rc == 2
    assert "Traceback" not in err + out
    assert "memroy_gb" in err and "unknown key" in err


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["solve", "--budget", "200000", "--model", "resnet5"], r"unknown model 'resnet5'"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--catalog", "nope.toml"], r"catalog file not found: nope.toml"),
        (["solve", "--budget", "-5", "--model", "resnet50"], r"budget must be a positive number"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--precision", "fp8"], r"unknown precision 'fp8'"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--gpu", "h300"], r"unknown gpu 'h300'"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--strategy", "tree"], r"unknown strategy 'tree'"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--objective", "speed"], r"unknown objective 'speed'"),
        (["solve", "--model", "resnet50", "--objective", "cost"], r"needs --min-throughput"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--system", "missing.toml"], r"system parameter file not found"),
        (["solve", "--budget", "200000", "--model", "resnet50", "--profile", "missing.json"], r"profile file not found"),
        (["predict", "--model", "resnet50", "--gpu", "h300", "--gpus-per-node", "8", "--nodes", "2", "--nic", "ib-ndr",
          "--strategy", "ring"], r"unknown gpu 'h300'"),
        (["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "3", "--nodes", "2", "--nic",
          "ib-ndr", "--strategy", "ring"], r"no chassis .* takes 3 x 'h100-sxm'"),
        (["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2",
          "--strategy", "ring"], r"needs --nic"),
        (["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2", "--nic",
          "ib-xdr", "--strategy", "ring"], r"unknown nic 'ib-xdr'"),
        (["catalog", "show", "nope.toml"], r"catalog file not found"),
    ],
)
def test_cli_bad_input_exit_2(args, pattern):
    rc, out, err = run_cli(*args)
    assert rc == 2, (out, err)
    assert re.search(pattern, err), err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1


def test_bad_system_file(tmp_path):
    p = tmp_path / "sys.toml"
    p.write_text("[network]\ntcp_efficency = 0.5\n")
    rc, out, err = run_cli("solve", "--budget", "200000", "--model", "resnet50", "--system", str(p))
    assert rc == 2 and "[network] field 'tcp_efficency': unknown key" in err
    p.write_text("[network]\ntcp_efficiency = 1.5\n")
    rc, out, err = run_cli("solve", "--budget", "200000", "--model", "resnet50", "--system", str(p))
    assert rc == 2 and "out of range" in err


def test_bad_profile_json(tmp_path):
    p = tmp_path / "p.json"
    p.write_text("{not json")
    rc, out, err = run_cli("predict", "--profile", str(p), "--gpu", "h200-sxm", "--gpus-per-node", "8", "--nodes", "1",
                           "--strategy", "ring")
    assert rc == 2 and "not valid JSON" in err and "Traceback" not in err


def test_impossible_budget_shows_cheapest_design_exit_1():
    rc, out, err = run_cli("solve", "--budget", "100", "--model", "resnet50")
    assert rc == 1
    assert "below the cheapest feasible design" in err
    assert "Nearest feasible design" in out
    assert "Traceback" not in out + err


def test_impossible_budget_json_has_nearest():
    import json
    rc, out, err = run_cli("solve", "--budget", "100", "--model", "resnet50", "--format", "json")
    assert rc == 1
    data = json.loads(out)
    assert data["reason"] == "budget"
    assert data["nearest"]["cost_usd"] > 100


def test_unreachable_throughput_explains_fastest_within_budget():
    rc, out, err = run_cli("solve", "--budget", "50000", "--model", "resnet50", "--objective", "cost",
                           "--min-throughput", "1e9")
    assert rc == 1
    assert "fastest within budget" in err


def test_model_too_big_for_every_gpu():
    rc, out, err = run_cli("solve", "--budget", "1e7", "--model", "llama_1b", "--precision", "amp_bf16",
                           "--batch-per-gpu", "4096")
    assert rc == 1
    assert "no design can run llama_1b" in err


def test_mini_catalog_is_valid_toml_and_loads():
    tomllib.loads(MINI.read_text())
    assert len(load_catalog(MINI).gpu) == 2


# --- QA sweep: every numeric option, file kind and output path of the core commands -------------------

PREDICT = ["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nic", "ib-ndr",
           "--strategy", "ring"]
SOLVE = ["solve", "--budget", "200000", "--model", "resnet50"]


@pytest.mark.parametrize(
    "args,pattern",
    [
        (SOLVE + ["--tco-years", "nan"], r"TCO years must be a finite number >= 0, got nan"),
        (SOLVE + ["--tco-years", "inf"], r"TCO years must be a finite number >= 0, got inf"),
        (SOLVE + ["--max-power-kw", "inf"], r"max power must be a finite number > 0, got inf"),
        (SOLVE + ["--min-throughput", "inf", "--objective", "cost"], r"min throughput must be a finite number > 0"),
        (SOLVE + ["--epochs", "inf", "--dataset-size", "1000"], r"epochs must be a finite number > 0"),
        (SOLVE + ["--top", "-5"], r"top must be >= 1, got -5"),
        (SOLVE + ["--gpus-per-node", "0"], r"GPUs per node must be >= 1, got 0"),
        (SOLVE + ["--gpus-per-node", "3", "--gpu", "h100-sxm"], r"no design in .* matches the requested GPU h100-sxm; GPUs per node 3"),
        (SOLVE + ["--max-nodes", str(10**20)], r"max nodes must be at most 1,000,000,000"),
        (SOLVE + ["--batch-per-gpu", str(10**20)], r"batch per GPU must be at most 1,000,000,000"),
        (["solve", "--budget", "200000"], r"give --model .* or --profile"),
        (PREDICT + ["--nodes", str(10**20)], r"nodes must be at most 1,000,000,000"),
        (PREDICT + ["--nodes", "0"], r"nodes must be >= 1, got 0"),
        (PREDICT + ["--nodes", "2", "--tco-years", "-1"], r"TCO years must be >= 0, got -1"),
        (PREDICT + ["--nodes", "2", "--chassis", "nope"], r"unknown chassis 'nope' \(known: "),
        (PREDICT + ["--nodes", "2", "--chassis", "pcie5-4gpu"], r"chassis 'pcie5-4gpu' does not take 8 x 'h100-sxm'"),
        # command-line parsing errors: one line too, not typer's boxed usage panel
        (["solve", "--budget", "abc", "--model", "resnet50"], r"^error: Invalid value for '--budget'.*costopt(\.cli)? solve --help"),
        (SOLVE + ["--format", "xml"], r"^error: Invalid value for '--format'"),
        (PREDICT + ["--nodes", "2", "--format", "csv"], r"^error: Invalid value for '--format'"),
        (SOLVE + ["--bogus"], r"^error: No such option: --bogus"),
        (["bogus"], r"^error: No such command 'bogus'"),
    ],
)
def test_cli_bad_numbers_and_usage_exit_2_one_line(args, pattern):
    rc, out, err = run_cli(*args)
    assert rc == 2, (out, err)
    assert re.search(pattern, err), err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("kind", ["directory", "binary", "empty"])
@pytest.mark.parametrize("option,what", [("--catalog", "catalog"), ("--system", "system"), ("--profile", "profile")])
def test_unreadable_input_files_exit_2(tmp_path, kind, option, what):
    p = tmp_path / "in.dat"
    if kind == "directory":
        p.mkdir()
    elif kind == "binary":
        p.write_bytes(bytes(range(256)) * 4)
    else:
        p.write_text("")
    rc, out, err = run_cli(*SOLVE, option, str(p))
    if kind == "empty" and option == "--system":  # an empty system file is all defaults
        assert rc == 0, err
        return
    assert rc == 2, (out, err)
    assert str(p.name) in err and "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err


def test_bad_profile_values(tmp_path):
    from costopt.perf.workload import load_profile, load_workload

    data = json.loads((Path(__file__).parents[1] / "costopt" / "data" / "zoo" / "resnet50.json").read_text())
    data["profiles"][0]["forward_ms"] = float("nan")
    p = tmp_path / "p.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"profiles\[0\], field forward_ms: must be a finite number"):
        load_profile(p, load_workload("resnet50"))


def test_catalog_rejects_inf_and_nan(tmp_path):
    for bad in ("inf", "nan"):
        path = write_variant(tmp_path, lambda t: t.replace("price_usd = 1000", f"price_usd = {bad}", 1))
        with pytest.raises(InputError, match=r"nic\[1\] \(id 'ib100'\), field 'price_usd'"):
            load_catalog(path)


def test_json_format_errors_print_json_on_stdout():
    rc, out, err = run_cli(*SOLVE[:3], "--model", "resnet5", "--format", "json")
    assert rc == 2
    assert json.loads(out) == {"error": err.strip().removeprefix("error: "), "reason": "input", "exit_code": 2}
    rc, out, err = run_cli(*PREDICT, "--nodes", "0", "--format", "json")
    assert rc == 2 and json.loads(out)["reason"] == "input"


def test_infeasible_message_is_one_line_however_long():
    rc, out, err = run_cli(*SOLVE, "--batch-per-gpu", "1000000000")
    assert rc == 1 and "no design can run resnet50" in err
    assert len(err.strip().splitlines()) == 1, err


def test_api_checks_numbers_like_the_cli():
    import costopt

    with pytest.raises(InputError, match="TCO years must be a finite number >= 0"):
        costopt.solve(200000, "resnet50", tco_years=float("nan"))
    with pytest.raises(InputError, match="NICs per node must be >= 1"):
        costopt.predict("resnet50", "h100-sxm", 8, 2, "ib-ndr", "ring", nics_per_node=0)
    with pytest.raises(InputError, match="batch per GPU must be >= 1"):
        costopt.predict("resnet50", "h100-sxm", 8, 2, "ib-ndr", "ring", batch_per_gpu=0)
