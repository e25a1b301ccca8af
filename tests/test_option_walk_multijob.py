"""Every option of `solve` under `--workload` (several jobs, one purchase), for a mix of data-parallel jobs
(examples/mix.toml) and a mix with a large-model job (examples/mix-70b.toml: Llama 3 70B beside ResNet-50):
it changes what is printed, or it is refused with exit 2 and a line naming it. Never silently ignored
(issue 22; tests/test_option_walk.py walks the one-model solve the same way).

The options are read from the Typer app: a new solve option without a decision here fails
`test_every_solve_option_has_a_mix_decision` (in the default run). Per-job options (the model, its batch,
precision, work and targets, the parts a job may use) are set in the mix file and refused on the command
line; options of a one-model answer (its ranked table, its bill, price ages) are refused by one rule
(cli/design.py `_single_design_only`); shared limits, the catalog, the objective and the whole cost of
owning change the answer. A decision is ("changes", ARGS[, CONTEXT]) or ("refused", ARGS), as in
tests/test_option_walk_purchasing.py. Each run solves an integer program: the walk is marked slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner
from walk_common import OWNERSHIP, TCO, check_decision, merge_options, overlay_toml, write_model_and_system

from costopt.cli import app

CMD = typer.main.get_command(app)
VENDOR_A = "catalogs/vendor-a-datacenter-2026.toml"
# the 70B mix with its 70B job on two GPU types (mi355x, gb200: both liquid-cooled), so each case searches in
# seconds; the shipped file is the "workload" decision's other mix
BASE = {"dp": ["--workload", "examples/mix.toml"], "llm": ["--workload", "MIX_70B"]}
C, R = "changes", "refused"


def SAME(d: tuple) -> tuple:  # one decision for both mixes
    return (d, d)


DECISIONS = {
    # shared limits and choices: the command line overrides the file's [limits]
    "budget": ((C, ["--budget", "1000000"]), (C, ["--budget", "4000000"])),
    # (the 70B job names mi355x and gb200: a catalog without them is refused for it, so an overlay keeping them)
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", "FEW_GPUS"])),
    "objective": SAME((C, ["--objective", "fair"])),
    "fmt": SAME((C, ["--format", "json"])),
    "max_power_kw": ((C, ["--max-power-kw", "40"]), (C, ["--max-power-kw", "150"])),
    "max_nodes": ((C, ["--max-nodes", "4"]), (C, ["--max-nodes", "20"])),
    "max_rack_units": ((C, ["--max-rack-units", "30"]), (C, ["--max-rack-units", "90"])),
    "tco_years": SAME((C, ["--tco-years", "3"])),
    "overlap": SAME((C, ["--overlap", "none"])),
    "system": SAME((C, ["--system", "SYSTEM"])),
    "strategy": ((C, ["--strategy", "ring"]), (R, ["--strategy", "ring"])),
    # a data-parallel job's strategies: with the option when the mix has no large-model job, else in the file
    "reduce_on": ((C, ["--reduce-on", "cpu"]), (R, ["--reduce-on", "cpu"])),
    "include": SAME((C, ["--include", "all"])),
    "exclude_gpu": SAME((C, ["--exclude-gpu", "h200-nvl"])),  # the ResNet-50 job's pick (a GPU a job names is its own)
    "workload": ((C, ["--workload", "examples/mix-70b.toml"]), (C, ["--workload", "examples/mix.toml"])),
    "time_limit": SAME((C, ["--time-limit", "0.01"])),
    "progress": SAME((C, ["--progress"])),
    "timings": SAME((C, ["--timings"])),
    "mixed_nics": SAME((C, ["--mixed-nics"])),
    # per job: set in the mix file
    "model": SAME((R, ["--model", "resnet50"])),
    "precision": SAME((R, ["--precision", "fp32"])),
    "batch_per_gpu": SAME((R, ["--batch-per-gpu", "32"])),
    "min_throughput": SAME((R, ["--min-throughput", "100"])),
    "deadline_hours": SAME((R, ["--deadline-hours", "100"])),
    "epochs": SAME((R, ["--epochs", "10"])),
    "dataset_size": SAME((R, ["--dataset-size", "100000"])),
    "hours": SAME((R, ["--hours", "100"])),
    "profile": SAME((R, ["--profile", "SYSTEM"])),
    "gpu": SAME((R, ["--gpu", "h200-sxm"])),
    "nic": SAME((R, ["--nic", "ib-ndr"])),
    "gpus_per_node": SAME((R, ["--gpus-per-node", "8"])),
    "model_config": SAME((R, ["--model-config", "SYSTEM"])),
    "seq_len": SAME((R, ["--seq-len", "4096"])),
    "global_batch": SAME((R, ["--global-batch", "1024"])),
    "tokens": SAME((R, ["--tokens", "1e11"])),
    "lora_rank": SAME((R, ["--lora-rank", "16"])),
    "lora_targets": SAME((R, ["--lora-targets", "qkv"])),
    "confidence": SAME((R, ["--confidence", "0.5"])),
    "max_instances": SAME((R, ["--max-instances", "4"])),
    "framework": SAME((R, ["--framework", "cuda-graphs"])),
    # a one-model answer's options (cli/design.py _single_design_only)
    "top": SAME((R, ["--top", "3"])),
    "wide": SAME((R, ["--wide"])),
    "bom": SAME((R, ["--bom"])),
    "stack": SAME((R, ["--stack", "mpi"])),
    "support_years": SAME((R, ["--support-years", "3"])),
    "grad_accum": SAME((R, ["--grad-accum", "2"])),
    "as_of": SAME((R, ["--as-of", "2031-01-01"])),
    # the whole cost of owning: priced with --tco-years, refused without it. The 70B mix's whole cost is about
    # $9M: its budget, now a limit on that, is raised to keep it feasible. A liquid PUE only touches liquid-cooled
    # parts: the data-parallel mix with its ResNet-50 job on b300 (1,400 W); the 70B mix's mi355x and gb200 are.
    **{k: ((C, v, TCO), (C, v, TCO + ["--budget", "10000000"])) for k, v in OWNERSHIP.items()},
    "liquid_pue": ((C, OWNERSHIP["liquid_pue"], TCO + ["--workload", "LIQUID_MIX"]),
                   (C, OWNERSHIP["liquid_pue"], TCO + ["--budget", "10000000"])),
}
KINDS = ("dp", "llm")
XFAIL: dict = {}  # (kind, option) -> reason: known wrong, failing until the product is right (strict xfail)


def _params() -> list:
    return [p for p in CMD.commands["solve"].params if p.param_type_name == "option"]


def test_every_solve_option_has_a_mix_decision():
    missing = [p.name for p in _params() if p.name not in DECISIONS]
    assert not missing, f"solve --workload: options with no decision in {__file__}: {missing}"


def test_whole_cost_terms_without_tco_years_are_refused():
    # capex alone prices no whole-cost term: refused naming the option (one run per kind is enough: one rule)
    for kind in KINDS:
        r = CliRunner().invoke(app, ["solve", "--workload", f"examples/{'mix' if kind == 'dp' else 'mix-70b'}.toml",
                                     "--staff-usd-per-gpu-year", "2000"])
        assert r.exit_code == 2 and "--staff-usd-per-gpu-year" in r.output, r.output


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix_walk")
    made = write_model_and_system(d)
    mix = Path("examples/mix.toml").read_text(encoding="utf-8")
    job = '[jobs.resnet50]\nmodel = "resnet50"\n'
    assert job in mix
    (d / "liquid_mix.toml").write_text(mix.replace(job, job + 'gpus = ["b300"]\n'))
    mix = Path("examples/mix-70b.toml").read_text(encoding="utf-8")
    job = '[jobs.llama70b]\n'
    assert job in mix
    (d / "mix_70b.toml").write_text(mix.replace(job, job + 'gpus = ["mi355x", "gb200"]\n'))
    (d / "few_gpus.toml").write_text(overlay_toml("few-gpus", ["mi355x", "gb200", "h100-sxm"]))
    return {**made, "LIQUID_MIX": str(d / "liquid_mix.toml"), "FEW_GPUS": str(d / "few_gpus.toml"),
            "MIX_70B": str(d / "mix_70b.toml")}


_BASE_OUT: dict = {}


def _run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return r.exit_code, r.output


def _cases():
    for name in sorted(DECISIONS):
        for k, kind in enumerate(KINDS):
            d = DECISIONS[name][k]
            marks = [pytest.mark.xfail(strict=True, reason=XFAIL[(kind, name)])] if (kind, name) in XFAIL else []
            yield pytest.param(kind, name, d[0], d[1], d[2] if len(d) > 2 else [], id=f"{kind}-{name}", marks=marks)


@pytest.mark.parametrize("kind,name,decision,extra,context", list(_cases()))
def test_mix_option_is_honoured_or_refused(kind, name, decision, extra, context, files):
    extra = [files.get(a, a) for a in extra]
    context = [files.get(a, a) for a in context]
    base = merge_options([files.get(a, a) for a in BASE[kind]], context)
    key = (kind, tuple(context))
    if key not in _BASE_OUT:
        _BASE_OUT[key] = _run(["solve", *base])
    rc0, out0 = _BASE_OUT[key]
    assert rc0 == 0, out0
    rc, out = _run(["solve", *merge_options(base, extra)])
    p = next(p for p in _params() if p.name == name)
    check_decision(p, decision, extra, rc, out, out != out0, f"the mix's answer ({kind})")
