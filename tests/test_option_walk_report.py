"""Every option of `report`, for a data-parallel model (inception_v3) and a transformer (llama3_70b --tokens
1e12): it changes the report written (its Markdown text, or what the command prints), or it is refused with
exit 2 and a line naming it. Never silently ignored (issue 22; tests/test_option_walk.py walks solve and
predict, tests/test_option_walk_purchasing.py compare, rent-vs-buy and export, in the same way).

The options are read from the Typer app: a new option without a decision here fails
`test_every_report_option_has_a_decision` (in the default run). A decision is ("changes", ARGS[, CONTEXT]),
("refused", ARGS) or ("own test", NAME): the base with CONTEXT and ARGS writes a different report than the
base with CONTEXT, or exits 2 naming the option; "own test" names the test of this file that checks it
(an option whose effect needs a file in a given state). The reports are Markdown (the text compared, the
figure folder's name taken out: it follows the file's name), each run drawing its plots: seconds each, so
the walk is marked slow (tests/conftest.py SLOW).
"""

from __future__ import annotations

import os
import pty
import re
import select
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner
from walk_common import OWNERSHIP, check_decision, merge_options, overlay_toml, write_model_and_system

from costopt.cli import app

CMD = typer.main.get_command(app)
VENDOR_A = "catalogs/vendor-a-datacenter-2026.toml"
AWS = "catalogs/aws-on-demand-2025.toml"
BASE = {
    "dp": ["--model", "inception_v3", "--budget", "200000", "--max-nodes", "2", "--top", "3", "--no-progress"],
    "llm": ["--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--max-nodes", "16", "--top", "3",
            "--no-progress"],
}
C, R, OWN = "changes", "refused", "own test"
DECISIONS = {  # name -> (data-parallel decision, large-model decision)
    "model": ((C, ["--model", "resnet50"]), (C, ["--model", "llama3_8b"])),
    "budget": ((C, ["--budget", "100000"]), (C, ["--budget", "2000000"])),
    "out": ((C, ["--out", "OUT_HTML"]), (C, ["--out", "OUT_HTML"])),  # HTML, not Markdown
    "catalog": ((C, ["--catalog", VENDOR_A]), (C, ["--catalog", VENDOR_A])),
    # the time to train needs both; either alone is refused
    "epochs": ((R, ["--epochs", "90"]), (R, ["--epochs", "90"])),
    "dataset_size": ((R, ["--dataset-size", "1281167"]), (R, ["--dataset-size", "1281167"])),
    "hours": ((R, ["--hours", "100"]), (R, ["--hours", "100"])),  # an owned catalog and no --cloud: no rent to price
    "precision": ((C, ["--precision", "fp32"]), (C, ["--precision", "fp8"])),
    "batch_per_gpu": ((C, ["--batch-per-gpu", "32"]), (R, ["--batch-per-gpu", "32"])),
    "overlap": ((C, ["--overlap", "none"]), (R, ["--overlap", "none"])),
    "strategy": ((C, ["--strategy", "ps"]), (C, ["--strategy", "fsdp"])),
    "max_nodes": ((C, ["--max-nodes", "1"]), (C, ["--max-nodes", "2"])),
    "system": ((C, ["--system", "SYSTEM"]), (R, ["--system", "SYSTEM"])),
    "top": ((C, ["--top", "2"]), (C, ["--top", "2"])),
    "all_designs": ((C, ["--all", "ALL_CSV"]), (R, ["--all", "ALL_CSV"])),
    # the progress bar is drawn on stderr when it is a terminal (a CliRunner run has none): its own test, on a pty
    "progress": ((OWN, "test_progress_bar_on_a_terminal"), (OWN, "test_progress_bar_on_a_terminal")),
    "cloud": ((C, ["--cloud", AWS]), (C, ["--cloud", AWS])),
    "years": ((C, ["--years", "5"]), (C, ["--years", "5"])),  # the whole cost of owning over 5 years
    "utilization": ((R, ["--utilization", "0.5"]), (R, ["--utilization", "0.5"])),  # only with --cloud
    "tokens": ((R, ["--tokens", "1e12"]), (C, ["--tokens", "1e11"])),
    "model_config": ((C, ["--model-config", "MODEL"]), (C, ["--model-config", "MODEL"])),
    "seq_len": ((R, ["--seq-len", "4096"]), (C, ["--seq-len", "4096"])),
    "global_batch": ((R, ["--global-batch", "1024"]), (C, ["--global-batch", "1024"])),
    "as_of": ((C, ["--as-of", "2031-01-01"]), (C, ["--as-of", "2031-01-01"])),
    "max_instances": ((R, ["--max-instances", "4"]), (R, ["--max-instances", "4"])),  # an owned catalog
    "include": ((C, ["--include", "all"]), (C, ["--include", "all"])),
    "exclude_gpu": ((C, ["--exclude-gpu", "EXCLUDE"]), (C, ["--exclude-gpu", "EXCLUDE"])),
    "force": ((OWN, "test_force_replaces_a_read_only_report"), (OWN, "test_force_replaces_a_read_only_report")),
    # the report prices the purchase by its whole cost of owning over --years (its cost-basis row): every term
    # applies; a PUE only to the designs cooled that way (--liquid-pue: a catalog of liquid-cooled b300 only)
    **{k: ((C, v), (C, v)) for k, v in OWNERSHIP.items()},
    "liquid_pue": ((C, OWNERSHIP["liquid_pue"], ["--catalog", "LIQUID", "--budget", "3000000"]),
                   (C, OWNERSHIP["liquid_pue"], ["--catalog", "LIQUID"])),
    "pue": ((C, OWNERSHIP["pue"]), (C, OWNERSHIP["pue"], ["--catalog", "AIR"])),
}
KINDS = ("dp", "llm")


def _params() -> list:
    return [p for p in CMD.commands["report"].params if p.param_type_name == "option"]


def test_every_report_option_has_a_decision():
    missing = [p.name for p in _params() if p.name not in DECISIONS]
    assert not missing, f"report: options with no decision in {__file__}: {missing}"
    for name, pair in DECISIONS.items():
        for d in pair:
            assert d[0] in (C, R, OWN), (name, d)
            if d[0] == OWN:
                assert callable(globals().get(d[1])), f"{name}: no test {d[1]} in {__file__}"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("report_walk")
    made = write_model_and_system(d)
    # overlays offering one liquid-cooled GPU (b300, 1400 W) or one air-cooled one (h200-sxm, 700 W) only
    for name, gpu in (("liquid", "b300"), ("air", "h200-sxm")):
        (d / f"{name}.toml").write_text(overlay_toml(f"{name}-only", [gpu]))
    return {**made, "LIQUID": str(d / "liquid.toml"),
            "AIR": str(d / "air.toml"), "OUT_HTML": str(d / "walk.html"), "ALL_CSV": str(d / "all.csv"),
            "DIR": d}


_RUNS: dict = {}


def _report(args: list[str], out: Path) -> tuple[int, str, str]:
    """Exit code, what the command printed and the report's text (figure folder name taken out)."""
    r = CliRunner().invoke(app, ["report", *args], env={"COLUMNS": "200"})
    target = Path(args[args.index("--out") + 1])
    text = target.read_text(encoding="utf-8") if r.exit_code == 0 and target.exists() else ""
    text = text.replace(f"{target.stem}_files/", "FIGURES/")
    return r.exit_code, r.output.replace(str(target), "REPORT"), text


def _recommended_gpu(text: str) -> str:
    """The GPU id of the report's recommendation (its first table's first row names it)."""
    ids = re.findall(r"\b(h100-sxm|h200-sxm|h200-nvl|b200|b300|mi355x|mi325x|mi300x|l40s|rtx-pro-6000|rtx-4090|"
                     r"rtx-5090|a100-sxm-80|l4|gb200|gb300)\b", text)
    assert ids, "no GPU id in the report"
    return ids[0]


def _cases():
    for name in sorted(DECISIONS):
        for k, kind in enumerate(KINDS):
            d = DECISIONS[name][k]
            if d[0] != OWN:
                yield pytest.param(kind, name, d[0], d[1], d[2] if len(d) > 2 else [], id=f"{kind}-{name}")


@pytest.mark.parametrize("kind,name,decision,extra,context", list(_cases()))
def test_report_option_is_honoured_or_refused(kind, name, decision, extra, context, files):
    d: Path = files["DIR"]
    context = [files.get(a, a) for a in context]
    base = merge_options(BASE[kind], context) + ["--out", str(d / f"{kind}_base.md")]
    key = (kind, tuple(context))
    if key not in _RUNS:
        _RUNS[key] = _report(base, d / f"{kind}_base.md")
    rc0, out0, text0 = _RUNS[key]
    assert rc0 == 0 and text0, out0
    if extra == ["--exclude-gpu", "EXCLUDE"]:
        extra = ["--exclude-gpu", _recommended_gpu(text0)]
    extra = [files.get(a, a) for a in extra]
    args = merge_options(base[:-1] + [str(d / f"{kind}_{name}.md")], extra)
    rc, out, text = _report(args, d / f"{kind}_{name}.md")
    p = next(p for p in _params() if p.name == name)
    check_decision(p, decision, extra, rc, out, (out, text) != (out0, text0), f"the {kind} report", ok_codes=(0,))


def test_force_replaces_a_read_only_report(tmp_path):
    # --force: a read-only --out is replaced; without it the run stops before any work, naming the file
    out = tmp_path / "ro.md"
    out.write_text("old\n")
    os.chmod(out, stat.S_IRUSR)
    args = BASE["dp"] + ["--out", str(out)]
    r = CliRunner().invoke(app, ["report", *args], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "ro.md" in r.output and "--force" in r.output, r.output
    assert out.read_text() == "old\n"
    r = CliRunner().invoke(app, ["report", *args, "--force"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("# costopt report")


def _stderr_on_a_pty(args: list[str]) -> tuple[int, bytes]:
    """Run `costopt report ARGS` with stderr on a pseudo-terminal; its exit code and what reached the terminal."""
    main, sub = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "costopt", "report", *args], stdout=subprocess.DEVNULL, stderr=sub,
                         env={**os.environ, "COLUMNS": "120"})
    os.close(sub)
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=120)
    os.close(main)
    return p.returncode, seen


def test_progress_bar_on_a_terminal(tmp_path):
    # --progress (the default) draws one bar per step on a terminal's stderr, each ending at its count
    # (n/n); --no-progress draws nothing there
    args = BASE["dp"][:-1] + ["--out", str(tmp_path / "p.md")]
    rc, seen = _stderr_on_a_pty(args + ["--progress"])
    assert rc == 0, seen[-2000:]
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen).decode("utf-8", "replace")
    assert re.search(r"\b(\d+)/\1\b", text), text[-2000:]
    rc, seen = _stderr_on_a_pty(args + ["--no-progress"])
    assert rc == 0 and seen == b"", seen[-2000:]
