"""Every command of the app is walked (issue 22: no option silently ignored on either path).

`test_every_command_is_walked` reads the commands from the Typer app itself: each is either walked option
by option (tests/test_option_walk.py: solve, predict; tests/test_option_walk_purchasing.py: compare,
rent-vs-buy, export; tests/test_option_walk_report.py: report; here: bom), or listed in NOT_WALKED with the reason its options cannot take a
workload kind (they read files or write them, and none of them takes --model). A new command fails here
until it has one or the other.

The walk of `bom` (one named design's bill; the model only sets the throughput printed beside it): each
option changes the output or is refused with exit 2 naming it, as in tests/test_option_walk.py.
"""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner
from walk_common import OWNERSHIP, merge_options

from costopt.cli import app

CMD = typer.main.get_command(app)
VENDOR_A = "catalogs/vendor-a-datacenter-2026.toml"
C, R = "changes", "refused"

# commands whose options take no workload kind: what they read and write instead
NOT_WALKED = {
    "models": "lists the zoo (--format only)",
    "validate": "a measured-rows file chooses its own kind (data-parallel or large-model rows); its options are "
                "the file, the system/catalog it predicts with and an error threshold: tests/test_validate.py",
    "calibrate": "fits system parameters from a measured-rows file: tests/test_calibrate.py",
    "profile": "measures a PyTorch model on a GPU: tests/test_profile.py",
    "sweep": "each scenario of its TOML file names its own model (both kinds) and goes through solve's engine; its "
             "options are the file, output, workers and scheduler: tests/test_sweep.py",
    "catalog show": "prints a catalog file",
    "catalog import": "turns a cloud price list into a catalog",
}
BOM_BASE = ["--model", "inception_v3", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2", "--nic", "ib-ndr"]
BOM = {
    "gpu": (C, ["--gpu", "h200-sxm"]),
    "gpus_per_node": (C, ["--gpus-per-node", "4"]),
    "nodes": (C, ["--nodes", "4"]),
    "nic": (C, ["--nic", "ib-hdr"]),
    "nics_per_node": (C, ["--nics-per-node", "8"]),
    "chassis": (R, ["--chassis", "sxm8-p100"]),  # the base's own chassis is the only one for 8 x h100-sxm: a wrong one
    "model": (C, ["--model", "resnet50"]),
    "strategy": (C, ["--strategy", "ps"]),
    "catalog": (C, ["--catalog", VENDOR_A]),
    "support_years": (R, ["--support-years", "3"]),  # the reference catalog prices no support ([facility])
    "fmt": (C, ["--format", "json"]),
    "as_of": (C, ["--as-of", "2031-01-01"]),
    "tco_years": (C, ["--tco-years", "3"]),  # the whole cost of owning, term by term, below the bill
    # without --tco-years the bill is capex alone: the whole-cost terms are refused
    **{k: (R, v) for k, v in OWNERSHIP.items()},
}
LLM_BOM = (R, ["--model", "llama3_70b"])  # a transformer: bom points to predict, which prints the same bill


def _walked() -> set[str]:
    import test_option_walk as solve_walk
    import test_option_walk_purchasing as purchase_walk
    import test_option_walk_report as report_walk  # report's options, walked in their own file

    return set(solve_walk.DECISIONS) | set(purchase_walk.DECISIONS) | {"bom"} | ({"report"} if report_walk.DECISIONS
                                                                                else set())


def _commands(group, prefix: str = "") -> list[str]:
    out = []
    for name, sub in group.commands.items():
        if hasattr(sub, "commands"):
            out += _commands(sub, f"{prefix}{name} ")
        else:
            out.append(prefix + name)
    return out


def test_every_command_is_walked():
    walked = _walked()
    missing = [c for c in _commands(CMD) if c not in walked and c not in NOT_WALKED]
    assert not missing, f"commands neither walked nor listed in NOT_WALKED (with a reason): {missing}"
    both = [c for c in walked if c in NOT_WALKED]
    assert not both, both


def test_every_bom_option_has_a_decision():
    missing = [p.name for p in CMD.commands["bom"].params if p.name not in BOM]
    assert not missing, f"bom: options with no decision in {__file__}: {missing}"


def _run(args):
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def bom_base():
    rc, out = _run(["bom", *BOM_BASE, "--as-of", "2026-12-01"])
    assert rc == 0, out
    return out


@pytest.mark.parametrize("name", sorted(BOM) + ["model-llm"])
def test_bom_option_is_honoured_or_refused(name, bom_base):
    decision, extra = LLM_BOM if name == "model-llm" else BOM[name]
    base = BOM_BASE + ["--as-of", "2026-12-01"]
    rc, out = _run(["bom", *merge_options(base, extra)])
    if decision == R:
        assert rc == 2 and extra[0].lstrip("-") in out and "Traceback" not in out, out[-2000:]
    else:
        assert rc in (0, 1), out[-2000:]
        assert out != bom_base, f"{name}: {extra} changed nothing in the output of bom: silently ignored"
