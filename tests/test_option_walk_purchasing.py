"""Every option of `compare`, `rent-vs-buy` and `export`, for a data-parallel model (inception_v3) and a
transformer (llama3_70b --tokens 1e12): it changes what is printed, or it is refused with exit 2 and a line
naming it. Never silently ignored (issue 22; tests/test_option_walk.py does the same for solve and predict).

The options are read from the Typer app: a new option without a decision here fails
`test_every_option_has_a_decision`. A decision is ("changes", ARGS) or ("refused", ARGS): the base command
with ARGS (replacing the base's own value of that option) prints something different and exits 0 or 1, or
exits 2 naming the option; ("changes", ARGS, CONTEXT) compares the base with CONTEXT against the base with
CONTEXT and ARGS (other options that make this one matter: --tco-years for the whole-cost terms). ARGS are
chosen by hand so the option matters (e.g. a GPU the base answer uses for --exclude-gpu). `report` has its own walk, tests/test_option_walk_report.py (every run draws its plots).
"""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner
from walk_common import OWNERSHIP, TCO, check_decision, merge_options, overlay_toml, write_model_and_system

from costopt.cli import app

CMD = typer.main.get_command(app)
REF = "catalogs/reference-2026.toml"
VENDOR_A = "catalogs/vendor-a-datacenter-2026.toml"
VENDOR_B = "catalogs/vendor-b-whitebox-2026.toml"
AWS = "catalogs/aws-on-demand-2025.toml"
BASE = {
    ("compare", "dp"): [VENDOR_A, VENDOR_B, "--model", "inception_v3", "--budget", "200000"],
    ("compare", "llm"): [REF, VENDOR_A, "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000",
                         "--max-nodes", "16"],
    ("rent-vs-buy", "dp"): ["--model", "inception_v3", "--budget", "200000", "--cloud", AWS],
    ("rent-vs-buy", "llm"): ["--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--cloud", AWS,
                             "--max-nodes", "16"],
    ("export", "dp"): ["--model", "inception_v3", "--budget", "100000", "--max-nodes", "2"],
    ("export", "llm"): ["--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--max-nodes", "16"],
}
C, R = "changes", "refused"
COMMON = {  # options of all three commands
    "model": ((C, ["--model", "resnet50"]), (C, ["--model", "llama3_8b"])),
    "budget": ((C, ["--budget", "100000"]), (C, ["--budget", "2000000"])),
    "precision": ((C, ["--precision", "fp32"]), (C, ["--precision", "fp8"])),
    "batch_per_gpu": ((C, ["--batch-per-gpu", "32"]), (R, ["--batch-per-gpu", "32"])),
    "overlap": ((C, ["--overlap", "none"]), (R, ["--overlap", "none"])),
    "strategy": ((C, ["--strategy", "ps"]), (C, ["--strategy", "fsdp"])),
    "max_nodes": ((C, ["--max-nodes", "1"]), (C, ["--max-nodes", "2"])),
    "system": ((C, ["--system", "SYSTEM"]), (R, ["--system", "SYSTEM"])),
    "fmt": ((C, ["--format", "json"]), (C, ["--format", "json"])),
    "include": ((C, ["--include", "all"]), (C, ["--include", "all"])),
    "tokens": ((R, ["--tokens", "1e12"]), (C, ["--tokens", "1e11"])),
    "model_config": ((C, ["--model-config", "MODEL"]), (C, ["--model-config", "MODEL"])),
    "seq_len": ((R, ["--seq-len", "4096"]), (C, ["--seq-len", "4096"])),
    "global_batch": ((R, ["--global-batch", "1024"]), (C, ["--global-batch", "1024"])),
}
COMPARE = {
    **COMMON,
    "objective": ((C, ["--objective", "cost-per-throughput"]), (C, ["--objective", "cost-per-throughput"])),
    "hours": ((R, ["--hours", "100"]), (R, ["--hours", "100"])),  # no cloud catalog among the two
    "epochs": ((R, ["--epochs", "10"]), (R, ["--epochs", "10"])),  # alone: it needs --dataset-size
    "dataset_size": ((R, ["--dataset-size", "100000"]), (R, ["--dataset-size", "100000"])),
    "as_of": ((C, ["--as-of", "2031-01-01"]), (C, ["--as-of", "2031-01-01"])),
    "tco_years": ((C, ["--tco-years", "3"]), (C, ["--tco-years", "3"])),
    "years": ((R, ["--years", "5"]), (C, ["--years", "5"])),  # owned only: llm's USD per 1e9 tokens
    "utilization": ((R, ["--utilization", "0.5"]), (R, ["--utilization", "0.5"])),
    "price_cut": ((C, ["--no-price-cut"]), (C, ["--no-price-cut"])),
    "max_instances": ((R, ["--max-instances", "4"]), (R, ["--max-instances", "4"])),
    "exclude_gpu": ((C, ["--exclude-gpu", "l40s"]), (C, ["--exclude-gpu", "mi355x"])),
    # the whole cost of owning: priced with --tco-years; two owned catalogs without it price capex: refused
    # (--liquid-pue: the large-model base's answers include liquid-cooled parts)
    **{k: ((C, v, TCO) if k != "liquid_pue" else (R, v), (R, v) if k != "liquid_pue" else (C, v, TCO))
       for k, v in OWNERSHIP.items()},
}
RENT = {
    **COMMON,
    "cloud": ((C, ["--cloud", "CLOUD2"]), (C, ["--cloud", "CLOUD2"])),
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", VENDOR_A])),
    "years": ((C, ["--years", "5"]), (C, ["--years", "5"])),
    "utilization": ((C, ["--utilization", "0.5"]), (C, ["--utilization", "0.5"])),
    "hours": ((C, ["--hours", "1000"]), (C, ["--hours", "1000"])),
    "epochs": ((R, ["--epochs", "90"]), (R, ["--epochs", "90"])),  # alone: it needs --dataset-size
    "dataset_size": ((R, ["--dataset-size", "1281167"]), (R, ["--dataset-size", "1281167"])),
    "max_instances": ((C, ["--max-instances", "1"]), (C, ["--max-instances", "8"])),
    "exclude_gpu": ((C, ["--exclude-gpu", "rtx-pro-6000"]), (C, ["--exclude-gpu", "mi355x"])),
    "as_of": ((C, ["--as-of", "2031-01-01"]), (C, ["--as-of", "2031-01-01"])),
    # the purchase is priced by its whole cost of owning over --years: every term applies (a PUE to the
    # designs cooled that way: the data-parallel buy is air-cooled, the large-model one a liquid-cooled mi355x)
    **{k: ((C, v), (C, v)) for k, v in OWNERSHIP.items()},
    "liquid_pue": ((C, OWNERSHIP["liquid_pue"], ["--catalog", "LIQUID", "--budget", "3000000"]),
                   (C, OWNERSHIP["liquid_pue"])),
    "pue": ((C, OWNERSHIP["pue"]), (C, OWNERSHIP["pue"], ["--exclude-gpu", "mi355x", "--exclude-gpu", "b300"])),
}
EXPORT = {
    **COMMON,
    "budget": ((C, ["--budget", "50000"]), (C, ["--budget", "2000000"])),
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", VENDOR_A])),
    "out": ((C, ["--out", "OUT"]), (C, ["--out", "OUT"])),
    "objective": ((C, ["--objective", "cost-per-throughput"]), (C, ["--objective", "cost-per-throughput"])),
    "epochs": ((R, ["--epochs", "90"]), (R, ["--epochs", "90"])),
    "dataset_size": ((R, ["--dataset-size", "1281167"]), (R, ["--dataset-size", "1281167"])),
    "hours": ((R, ["--hours", "100"]), (R, ["--hours", "100"])),  # an owned catalog
    "tco_years": ((C, ["--tco-years", "3"]), (C, ["--tco-years", "3"])),
    "max_instances": ((R, ["--max-instances", "4"]), (R, ["--max-instances", "4"])),
    "exclude_gpu": ((C, ["--exclude-gpu", "l4"]), (C, ["--exclude-gpu", "mi355x"])),
    "force": ((C, ["--out", "OUT", "--force"]), (C, ["--out", "OUT", "--force"])),
    # the whole cost of owning: priced with --tco-years (a ranked table of every design: a liquid-cooled one too)
    **{k: ((C, v, TCO), (R, v)) for k, v in OWNERSHIP.items()},
    "liquid_pue": ((C, OWNERSHIP["liquid_pue"], TCO + ["--catalog", "LIQUID", "--budget", "2000000"]),
                   (R, OWNERSHIP["liquid_pue"])),
}
DECISIONS = {"compare": COMPARE, "rent-vs-buy": RENT, "export": EXPORT}
KINDS = ("dp", "llm")


def _params(command: str) -> list:
    return [p for p in CMD.commands[command].params if p.param_type_name == "option"]


@pytest.mark.parametrize("command", sorted(DECISIONS))
def test_every_option_has_a_decision(command):
    missing = [p.name for p in _params(command) if p.name not in DECISIONS[command]]
    assert not missing, f"{command}: options with no decision in {__file__}: {missing}"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("walk")
    made = write_model_and_system(d)
    # a second cloud catalog: the shipped one at twice the hourly prices
    text = open(AWS, encoding="utf-8").read()
    doubled = re.sub(r"(?m)^usd_per_hour = ([0-9.]+)", lambda m: f"usd_per_hour = {2 * float(m.group(1)):g}", text)
    assert doubled != text
    (d / "cloud2.toml").write_text(doubled)
    # an overlay offering one liquid-cooled GPU only (b300, 1400 W): where a liquid PUE matters
    (d / "liquid.toml").write_text(overlay_toml("liquid-only", ["b300"]))
    return {**made, "CLOUD2": str(d / "cloud2.toml"),
            "OUT": str(d / "out.csv"), "LIQUID": str(d / "liquid.toml")}


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
    context = [files.get(a, a) for a in context]
    base = merge_options(BASE[(command, kind)], context)
    key = (command, kind, tuple(context))
    if key not in _BASE_OUT:
        _BASE_OUT[key] = _run([command, *base])
    rc0, out0 = _BASE_OUT[key]
    assert rc0 == 0, out0
    rc, out = _run([command, *merge_options(base, extra)])
    p = next(p for p in _params(command) if p.name == name)
    check_decision(p, decision, extra, rc, out, out != out0, f"the output of {command} ({kind})")
