"""Every option of `solve` and `predict`, for a data-parallel model (inception_v3) and a transformer
(llama3_70b --tokens 1e12): it changes the answer (or what is printed), or it is refused with exit 2 and
a line naming it. Never silently ignored. (`compare`, `rent-vs-buy` and `export`:
tests/test_option_walk_purchasing.py; `report` and several jobs, `solve --workload`:
tests/test_option_walk_report.py; that every command is walked: `test_every_command_is_walked` below.)

The options are read from the Typer app itself: a new option without a decision in DECISIONS fails
`test_every_option_has_a_decision`. A decision is

    ("changes", ARGS)   the base command with ARGS (replacing the base's own value of that option) exits
                        0 or 1 and prints something different from the base command
    ("refused", ARGS)   it exits 2 and the message names the option
    ("changes", ARGS, CONTEXT)   as "changes", both commands with CONTEXT (other options that make this
                        one matter, e.g. a GPU whose node takes several NICs)

ARGS are the option's flag and a value chosen so the option matters (e.g. a power limit below the base
answer's power), written here by hand, not read from the product.
"""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner
from walk_common import OWNERSHIP, TCO, merge_options, write_model_and_system

from costopt.cli import app

CMD = typer.main.get_command(app)
VENDOR_A = "catalogs/vendor-a-datacenter-2026.toml"

BASE = {
    ("solve", "dp"): ["--budget", "200000", "--model", "inception_v3"],
    ("solve", "llm"): ["--budget", "5000000", "--model", "llama3_70b", "--tokens", "1e12", "--max-nodes", "16"],
    ("predict", "dp"): ["--model", "inception_v3", "--gpu", "l40s", "--gpus-per-node", "4", "--nodes", "2", "--nic",
                        "100gbe-roce", "--strategy", "ring"],
    ("predict", "llm"): ["--model", "llama3_70b", "--gpu", "b200", "--gpus-per-node", "8", "--nodes", "8", "--nic",
                         "ib-ndr", "--strategy", "fsdp", "--tp", "2", "--tokens", "1e12"],
}
MIX_ONLY = {"time_limit": ["--time-limit", "5"], "progress": ["--progress"], "timings": ["--timings"],
            "mixed_nics": ["--mixed-nics"]}
C, R = "changes", "refused"

# option -> decision per workload kind (dp, llm)
SOLVE = {
    "budget": ((C, ["--budget", "100000"]), (C, ["--budget", "2000000"])),
    "model": ((C, ["--model", "resnet50"]), (C, ["--model", "llama3_8b"])),
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", VENDOR_A])),
    "objective": ((C, ["--objective", "cost-per-throughput"]), (C, ["--objective", "cost-per-throughput"])),
    "precision": ((C, ["--precision", "fp32"]), (C, ["--precision", "fp8"])),
    "batch_per_gpu": ((C, ["--batch-per-gpu", "32"]), (R, ["--batch-per-gpu", "32"])),
    "strategy": ((C, ["--strategy", "ps"]), (C, ["--strategy", "fsdp"])),
    "reduce_on": ((C, ["--reduce-on", "cpu"]), (R, ["--reduce-on", "cpu"])),
    "stack": ((C, ["--stack", "gloo"]), (R, ["--stack", "gloo"])),
    "top": ((C, ["--top", "2"]), (C, ["--top", "2"])),
    "fmt": ((C, ["--format", "json"]), (C, ["--format", "json"])),
    "max_power_kw": ((C, ["--max-power-kw", "5"]), (C, ["--max-power-kw", "60"])),
    "max_nodes": ((C, ["--max-nodes", "1"]), (C, ["--max-nodes", "2"])),
    "max_rack_units": ((C, ["--max-rack-units", "4"]), (C, ["--max-rack-units", "30"])),
    "min_throughput": ((C, ["--min-throughput", "10000"]), (C, ["--min-throughput", "200000"])),
    "deadline_hours": ((R, ["--deadline-hours", "24"]), (C, ["--deadline-hours", "1500"])),
    "epochs": ((R, ["--epochs", "90"]), (R, ["--epochs", "90"])),
    "dataset_size": ((R, ["--dataset-size", "1281167"]), (R, ["--dataset-size", "1281167"])),
    "tco_years": ((C, ["--tco-years", "3"]), (C, ["--tco-years", "3"])),
    "hours": ((R, ["--hours", "100"]), (R, ["--hours", "100"])),
    "overlap": ((C, ["--overlap", "none"]), (R, ["--overlap", "none"])),
    "system": ((C, ["--system", "SYSTEM"]), (R, ["--system", "SYSTEM"])),
    "profile": ((C, ["--profile", "PROFILE"]), (R, ["--profile", "PROFILE"])),
    "gpu": ((C, ["--gpu", "h100-sxm"]), (C, ["--gpu", "h100-sxm"])),
    "exclude_gpu": ((C, ["--exclude-gpu", "rtx-pro-6000"]), (C, ["--exclude-gpu", "mi355x"])),
    "include": ((C, ["--include", "consumer"]), (C, ["--include", "legacy"])),
    "nic": ((C, ["--nic", "ib-ndr"]), (C, ["--nic", "ib-ndr"])),
    "gpus_per_node": ((C, ["--gpus-per-node", "8"]), (C, ["--gpus-per-node", "4"])),
    "support_years": ((R, ["--support-years", "3"]), (R, ["--support-years", "3"])),
    "bom": ((C, ["--bom"]), (C, ["--bom"])),
    "workload": ((R, ["--workload", "examples/mix.toml"]), (R, ["--workload", "examples/mix.toml"])),
    **{k: ((R, v), (R, v)) for k, v in MIX_ONLY.items()},
    "wide": ((C, ["--wide"]), (R, ["--wide"])),
    "grad_accum": ((C, ["--grad-accum", "2"]), (R, ["--grad-accum", "2"])),
    "model_config": ((C, ["--model-config", "MODEL"]), (C, ["--model-config", "MODEL"])),
    "seq_len": ((R, ["--seq-len", "4096"]), (C, ["--seq-len", "4096"])),
    "global_batch": ((R, ["--global-batch", "1024"]), (C, ["--global-batch", "1024"])),
    "tokens": ((R, ["--tokens", "1e12"]), (C, ["--tokens", "1e11"])),
    "as_of": ((C, ["--as-of", "2031-01-01"]), (C, ["--as-of", "2031-01-01"])),
    "max_instances": ((R, ["--max-instances", "4"]), (R, ["--max-instances", "4"])),
    "confidence": ((R, ["--confidence", "0.9"]), (R, ["--confidence", "0.9"])),
    "framework": ((C, ["--framework", "cuda-graphs"]), (R, ["--framework", "cuda-graphs"])),
    # fine-tunes (costopt/perf/llm/finetune.py): adapter rank and targets matter with --strategy lora
    "lora_rank": ((R, ["--lora-rank", "8"]), (C, ["--lora-rank", "8"], ["--strategy", "lora"])),
    "lora_targets": ((R, ["--lora-targets", "qkv"]), (C, ["--lora-targets", "qkv"], ["--strategy", "lora"])),
    # the whole cost of owning (costopt/cli/ownership.py): each term changes the cost with --tco-years (a liquid-
    # cooled part for --liquid-pue); without it the large-model base prices capex alone: refused
    **{k: ((C, v, TCO + (["--gpu", "b300", "--budget", "2000000"] if k == "liquid_pue" else [])), (R, v))
       for k, v in OWNERSHIP.items()},
}
PREDICT = {
    "model": ((C, ["--model", "resnet50"]), (C, ["--model", "llama3_8b"])),
    "gpu": ((C, ["--gpu", "l4"]), (C, ["--gpu", "h200-sxm"])),
    "gpus_per_node": ((C, ["--gpus-per-node", "2"]),
                      (C, ["--gpus-per-node", "4"], ["--gpu", "rtx-pro-6000", "--nic", "100gbe-roce"])),
    "nodes": ((C, ["--nodes", "4"]), (C, ["--nodes", "4"])),
    "nic": ((C, ["--nic", "25gbe-roce"]), (C, ["--nic", "ib-hdr"])),
    "strategy": ((C, ["--strategy", "ps"]), (C, ["--strategy", "zero1"])),
    "reduce_on": ((C, ["--reduce-on", "cpu"]), (R, ["--reduce-on", "cpu"])),
    "stack": ((C, ["--stack", "gloo"]), (R, ["--stack", "gloo"])),
    "batch_per_gpu": ((C, ["--batch-per-gpu", "32"]), (R, ["--batch-per-gpu", "32"])),
    "precision": ((C, ["--precision", "fp32"]), (C, ["--precision", "fp8"])),
    "overlap": ((C, ["--overlap", "none"]), (R, ["--overlap", "none"])),
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", VENDOR_A])),
    "system": ((C, ["--system", "SYSTEM"]), (R, ["--system", "SYSTEM"])),
    "profile": ((C, ["--profile", "PROFILE"]), (R, ["--profile", "PROFILE"])),
    "chassis": ((C, ["--chassis", "pcie5-4gpu-nvl"], ["--gpu", "h200-nvl"]), (R, ["--chassis", "pcie5-8gpu"])),
    "tco_years": ((C, ["--tco-years", "3"]), (C, ["--tco-years", "3"])),
    "tensor_set": ((C, ["--tensor-set", "tensorflow"]), (R, ["--tensor-set", "tensorflow"])),
    "nics_per_node": ((C, ["--nics-per-node", "8"], ["--gpu", "h100-sxm", "--gpus-per-node", "8", "--nic", "ib-ndr"]),
                      (C, ["--nics-per-node", "8"])),
    "fmt": ((C, ["--format", "json"]), (C, ["--format", "json"])),
    "grad_accum": ((C, ["--grad-accum", "2"]), (R, ["--grad-accum", "2"])),
    "model_config": ((C, ["--model-config", "MODEL"]), (C, ["--model-config", "MODEL"])),
    "seq_len": ((R, ["--seq-len", "4096"]), (C, ["--seq-len", "4096"])),
    "global_batch": ((R, ["--global-batch", "1024"]), (C, ["--global-batch", "1024"])),
    "tp": ((R, ["--tp", "2"]), (C, ["--tp", "4"])),
    "pp": ((R, ["--pp", "2"]), (C, ["--pp", "2"])),
    "vp": ((R, ["--vp", "2"]), (C, ["--vp", "2"])),
    "cp": ((R, ["--cp", "2"]), (C, ["--cp", "2"])),
    "ep": ((R, ["--ep", "2"]), (R, ["--ep", "2"])),
    # zero1/zero2/hsdp shard over groups of replicas (perf/llm step.py): it matters with --strategy zero1
    "shard_group": ((R, ["--shard-group", "2"]), (C, ["--shard-group", "2"], ["--strategy", "zero1"])),  # the llm base (llama3_70b) is dense: no experts to split
    "micro_batch": ((R, ["--micro-batch", "2"]), (C, ["--micro-batch", "2"])),
    "checkpointing": ((R, ["--checkpointing", "full"]), (C, ["--checkpointing", "full"])),
    "tokens": ((R, ["--tokens", "1e12"]), (C, ["--tokens", "1e11"])),
    "as_of": ((C, ["--as-of", "2031-01-01"]), (C, ["--as-of", "2031-01-01"])),
    "framework": ((C, ["--framework", "cuda-graphs"]), (R, ["--framework", "cuda-graphs"])),
    # fine-tunes (costopt/perf/llm/finetune.py): adapter rank and targets matter with --strategy lora
    "lora_rank": ((R, ["--lora-rank", "8"]), (C, ["--lora-rank", "8"], ["--strategy", "lora"])),
    "lora_targets": ((R, ["--lora-targets", "qkv"]), (C, ["--lora-targets", "qkv"], ["--strategy", "lora"])),
    # the whole cost of owning, priced with --tco-years (--liquid-pue: a part over 1000 W, liquid-cooled)
    **{k: ((C, v, TCO + (["--gpu", "b300", "--gpus-per-node", "8", "--nic", "ib-ndr"] if k == "liquid_pue" else [])),
           (C, v, TCO)) for k, v in OWNERSHIP.items()},
}
DECISIONS = {"solve": SOLVE, "predict": PREDICT}
# the base of each case already gives this option: the case changes its value
KINDS = ("dp", "llm")


def _options(command: str) -> list[str]:
    return [p.name for p in CMD.commands[command].params]


def _flags(command: str, name: str) -> list[str]:
    p = next(p for p in CMD.commands[command].params if p.name == name)
    return list(p.opts) + list(getattr(p, "secondary_opts", []) or [])


@pytest.mark.parametrize("command", sorted(DECISIONS))
def test_every_option_has_a_decision(command):
    missing = [n for n in _options(command) if n not in DECISIONS[command]]
    assert not missing, f"{command}: options with no decision in tests/test_option_walk.py: {missing}"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("walk")
    made = write_model_and_system(d)
    import json
    from costopt.core.paths import DATA_DIR

    prof = json.loads((DATA_DIR / "zoo" / "inception_v3.json").read_text())
    for row in prof["profiles"]:  # a GPU twice as slow as the shipped measurement
        for key in ("forward_ms", "backward_ms", "step_ms"):
            row[key] *= 2.0
    (d / "profile.json").write_text(json.dumps(prof))
    return {**made, "PROFILE": str(d / "profile.json")}


_BASE_OUT: dict = {}


def _run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return r.exit_code, r.output


def _cases():
    for command, table in DECISIONS.items():
        for name in sorted(table):
            for k, kind in enumerate(KINDS):
                d = table[name][k]
                yield pytest.param(command, kind, name, d[0], d[1], d[2] if len(d) > 2 else [],
                                   id=f"{command}-{kind}-{name}")


@pytest.mark.parametrize("command,kind,name,decision,extra,context", list(_cases()))
def test_option_is_honoured_or_refused(command, kind, name, decision, extra, context, files):
    extra = [files.get(a, a) for a in extra]
    base = merge_options(BASE[(command, kind)], context)
    key = (command, kind, tuple(context))
    if key not in _BASE_OUT:
        _BASE_OUT[key] = _run([command, *base])
    rc0, out0 = _BASE_OUT[key]
    assert rc0 == 0, out0
    rc, out = _run([command, *merge_options(base, extra)])
    flags = _flags(command, name)
    if decision == R:
        assert rc == 2, f"{name}: expected a refusal (exit 2), got {rc}:\n{out[-2000:]}"
        assert any(f in out for f in flags) or name.replace("_", " ") in out, \
            f"{name}: the refusal does not name the option:\n{out[-2000:]}"
        assert "Traceback" not in out
    else:
        assert rc in (0, 1), f"{name}: exit {rc}:\n{out[-2000:]}"
        assert out != out0, f"{name}: {extra} changed nothing in the output of {command} ({kind}): silently ignored"
