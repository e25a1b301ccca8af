"""Hardening (issue 13): every bad input is refused cleanly (exit 2, or 1 where documented; one line; no
traceback; no numpy warning; JSON under --format json), the Python API raises `InputError` naming the
field, ids are never paths, and no command writes over one of its own inputs.

The command line runs in-process here (`costopt.cli.main.main`) so that a corpus of many cases stays fast;
an uncaught exception would surface as a Python exception, which the helper reports as a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import traceback
import warnings
from pathlib import Path

import pytest

import costopt
from costopt.cli.main import main
from costopt.core.errors import InputError

ROOT = Path(__file__).parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini.toml"
ZOO = ROOT / "costopt" / "data" / "zoo"
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"
VMS = ROOT / "catalogs" / "aws-vms-sample.csv"
PUBLISHED = ROOT / "costopt" / "data" / "validation" / "published.csv"


def cli(*args) -> tuple[int | str, str, str, list[str]]:
    """(exit code or 'traceback', stdout, stderr, numpy/runtime warnings raised)."""
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            main([str(a) for a in args])
            code: int | str = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # noqa: BLE001 - exactly what must never happen
            code = "traceback"
            err.write(traceback.format_exc())
    noisy = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return code, out.getvalue(), err.getvalue(), noisy


def assert_clean_refusal(args, code=2, pattern=None):
    rc, out, err, noisy = cli(*args)
    assert rc == code, (rc, out[-500:], err[-2000:])
    assert "Traceback" not in out + err
    assert not noisy, noisy
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if pattern:
        assert re.search(pattern, lines[0]), lines[0]
    return out, lines[0]


SOLVE = ["solve", "--budget", "200000", "--model", "resnet50"]
PREDICT = ["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--strategy", "ring"]


def _zoo(name="resnet50") -> dict:
    return json.loads((ZOO / f"{name}.json").read_text())


def _profile_file(tmp_path, edit) -> Path:
    data = _zoo()
    edit(data)
    p = tmp_path / "prof.json"
    p.write_text(json.dumps(data))
    return p


def _catalog_file(tmp_path, old, new, src=MINI, name="cat.toml") -> Path:
    text = src.read_text()
    assert old in text, old
    p = tmp_path / name
    p.write_text(text.replace(old, new, 1))
    return p


# --- command-line options: numbers in range, dates as dates, options that need each other ------------------

OPTION_CASES = [
    (SOLVE[:2] + ["1e308", "--model", "resnet50"], r"budget must be at most"),
    (SOLVE[:2] + ["nan", "--model", "resnet50"], r"budget must be a positive number of USD, got nan"),
    (SOLVE + ["--epochs", "3"], r"--epochs and --dataset-size go together"),
    (SOLVE + ["--dataset-size", "1000"], r"--epochs and --dataset-size go together"),
    (SOLVE + ["--max-power-kw", "1e300"], r"max power must be at most"),
    (SOLVE + ["--max-rack-units", "-3"], r"max rack units must be > 0"),
    (SOLVE + ["--tco-years", "1e200"], r"TCO years must be at most"),
    (SOLVE + ["--gpu", "h100\nsxm"], r"gpu 'h100\\nsxm' is not an id"),
    (SOLVE + ["--nic", "ib-ndr\r"], r"nic 'ib-ndr\\r' is not an id"),
    (SOLVE + ["--strategy", "ring\nps"], r"strategy 'ring\\nps' is not an id"),
    (["solve", "--budget", "200000", "--model", "resnet50\nvgg16"], r"model 'resnet50\\nvgg16' is not an id"),
    (["solve", "--budget", "200000", "--model", "../zoo/resnet50"], r"model '\.\./zoo/resnet50' is not an id"),
    (["solve", "--budget", "200000", "--model", "some/dir/evil"], r"model 'some/dir/evil' is not an id"),
    (["solve", "--budget", "200000", "--model", ""], r"model '' is not an id"),
    (PREDICT + ["--nodes", "2", "--nic", "../ib-ndr"], r"nic '\.\./ib-ndr' is not an id"),
    (PREDICT + ["--nodes", "2", "--nic", "ib-ndr", "--chassis", "a/b"], r"chassis 'a/b' is not an id"),
    (PREDICT + ["--nodes", "2", "--nic", "ib-ndr", "--tensor-set", "../x"], r"tensor set '\.\./x' is not an id"),
    (["export", "--model", "resnet50", "--budget", "300000", "--epochs", "2"], r"--epochs and --dataset-size"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "300000", "--cloud", AWS, "--years", "inf"], r"--years must be"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "300000", "--cloud", AWS, "--utilization", "2"],
     r"--utilization must be at most 1"),
    (["compare", MINI, "--model", "resnet50", "--budget", "1e5"], r"at least two catalogs"),
    (["catalog", "import", VMS, "-o", "{tmp}/x.toml", "--price-date", "2025-13-45"],
     r"--price-date '2025-13-45' is not a calendar date"),
    (["catalog", "import", VMS, "-o", "{tmp}/x.toml", "--price-date", "2025-02-30"], r"is not a calendar date"),
    (["catalog", "import", VMS, "-o", "{tmp}/x.toml", "--price-date", "17/03/2025"], r"use YYYY-MM-DD"),
]


@pytest.mark.parametrize("args,pattern", OPTION_CASES, ids=[f"opt{i}" for i in range(len(OPTION_CASES))])
def test_bad_options_refused_cleanly(tmp_path, args, pattern):
    args = [str(a).replace("{tmp}", str(tmp_path)) for a in args]
    assert_clean_refusal(args, 2, pattern)


def test_usage_errors_print_json_under_format_json():
    for args in (SOLVE + ["--format", "json", "--bogus"], ["solve", "--budget", "abc", "--format=json"],
                 PREDICT + ["--nodes", "x", "--format", "json"]):
        rc, out, err, _ = cli(*args)
        assert rc == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
        data = json.loads(out)
        assert data["exit_code"] == 2 and data["reason"] == "input" and data["error"] in err


def test_errors_under_format_json_parse_and_are_one_line():
    rc, out, err, _ = cli(*SOLVE, "--gpu", "a\nb", "--format", "json")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "\n" not in json.loads(out)["error"]


# --- predict of a design that cannot run: exit 1 with the reason, no throughput ----------------------------


@pytest.mark.parametrize("args,reason", [
    (PREDICT + ["--nodes", "1", "--batch-per-gpu", "100000"], "memory"),
    (["predict", "--model", "resnet50", "--gpu", "v100-sxm2-16gb", "--gpus-per-node", "8", "--nodes", "1",
      "--strategy", "ring", "--precision", "amp_bf16"], "precision"),
    (["predict", "--model", "resnet50", "--gpu", "halfcard", "--gpus-per-node", "1", "--nodes", "9", "--nic", "ib100",
      "--strategy", "ring", "--catalog", MINI], "fabric"),  # 9 nodes > 4 x 4 / 2 ports of a two-tier ib100 fabric
])
def test_predict_of_infeasible_design_exits_1_with_reason(args, reason):
    out, line = assert_clean_refusal(args, 1, r"^infeasible: this design cannot run")
    assert "samples/s" not in out and "throughput" not in out
    rc, out, err, _ = cli(*args, "--format", "json")
    assert rc == 1
    data = json.loads(out)
    assert data["reason"] == reason
    assert "throughput_samples_per_s" not in data["nearest"] and data["nearest"]["feasible"] is False
    # the Python API still returns the design, marked infeasible, with the same reason
    from costopt.search.api import infeasible_reason
    assert infeasible_reason({**data["nearest"], "feasible": False})[0] == reason


# --- input files: every number finite and in range, every field named ---------------------------------------

PROFILE_CASES = [
    ("empty profiles", lambda d: d.update(profiles=[]), r"field profiles: empty"),
    ("string number", lambda d: d["profiles"][0].update(forward_ms="10"),
     r"profiles\[0\], field forward_ms: must be a number, got '10'"),
    ("null memory", lambda d: d["profiles"][1].update(peak_mem_bytes=None),
     r"profiles\[1\], field peak_mem_bytes: must be a number, got null"),
    ("huge time", lambda d: d["profiles"][0].update(backward_ms=1e308), r"profiles\[0\], field backward_ms: .*at most"),
    ("bool batch", lambda d: d["profiles"][0].update(batch=True), r"profiles\[0\], field batch: must be a whole number"),
    ("missing field", lambda d: d["profiles"][0].pop("step_ms"), r"profiles\[0\]: missing field 'step_ms'"),
    ("numel text", lambda d: d["tensor_sets"]["pytorch"]["tensors"][2].update(numel="many"),
     r"tensors\[2\], field numel: must be a whole number"),
    ("ready > 1", lambda d: d["tensor_sets"]["pytorch"]["tensors"][0].update(ready_fraction=7),
     r"tensors\[0\], field ready_fraction"),
    ("profiles not a list", lambda d: d.update(profiles={"a": 1}), r"field profiles: must be a list"),
]


@pytest.mark.parametrize("name,edit,pattern", PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_bad_profile_file_names_the_field(tmp_path, name, edit, pattern):
    p = _profile_file(tmp_path, edit)
    assert_clean_refusal(SOLVE + ["--profile", p], 2, pattern)


def test_profile_file_edited_between_calls_is_read_again(tmp_path):
    p = _profile_file(tmp_path, lambda d: None)
    costopt.load_profile(p)
    p.write_text(json.dumps({**_zoo(), "profiles": []}))
    os.utime(p, ns=(1, 1))  # a different modification time even on a coarse clock
    with pytest.raises(InputError, match="field profiles: empty"):
        costopt.load_profile(p)


CATALOG_CASES = [
    ("price 1e308", "price_usd = 1000", "price_usd = 1e308", r"nic\[1\] \(id 'ib100'\), field 'price_usd'.*1000000000000"),
    ("bad date", 'date = "2026-11-30"', 'date = "2026-13-45"', r"field 'date'.*must be a date"),
    ("bad price date", 'price_date = "2026-11-30"', 'price_date = "2026-02-30"', r"field 'price_date'.*must be a date"),
    ("kind rented", 'name = "mini-test"', 'name = "mini-test"\nkind = "rented"', r"field 'kind'"),
]


@pytest.mark.parametrize("name,old,new,pattern", CATALOG_CASES, ids=[c[0] for c in CATALOG_CASES])
def test_bad_catalog_values_refused(tmp_path, name, old, new, pattern):
    p = _catalog_file(tmp_path, old, new)
    assert_clean_refusal(SOLVE + ["--catalog", p], 2, pattern)


def test_cloud_catalog_kind_is_checked_before_instances_are_expanded(tmp_path):
    for kind, pattern in (("rented", r"must be 'owned' or 'cloud', got 'rented'"), ("owned", r"'owned' but the file rents")):
        p = _catalog_file(tmp_path, 'kind = "cloud"', f'kind = "{kind}"', src=AWS, name=f"{kind}.toml")
        text = p.read_text().replace('base = "reference-2026"', f'base = "{ROOT / "catalogs" / "reference-2026.toml"}"')
        p.write_text(text)
        assert_clean_refusal(SOLVE + ["--catalog", p], 2, pattern)


def test_bad_mix_system_and_csv_numbers_refused(tmp_path):
    mix = tmp_path / "mix.toml"
    mix.write_text('[jobs.a]\nmodel = "resnet50"\n[limits]\nbudget_usd = 1e308\n')
    assert_clean_refusal(["solve", "--workload", mix], 2, r"budget_usd")
    sysf = tmp_path / "sys.toml"
    sysf.write_text("[host]\nhost_reduce_gb_per_s = 1e300\n")
    assert_clean_refusal(SOLVE + ["--system", sysf], 2, r"host_reduce_gb_per_s': value .* out of range")
    rows = PUBLISHED.read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[1].split(",")
    cells[header.index("measured_samples_per_s")] = "1e308"
    csvf = tmp_path / "rows.csv"
    csvf.write_text(rows[0] + "\n" + ",".join(cells) + "\n")
    assert_clean_refusal(["validate", csvf], 2, r"line 2, column 'measured_samples_per_s': must be at most")


# --- Python API: wrong types raise InputError naming the argument -------------------------------------------


def _evaluate_none():
    from costopt.search.api import evaluate_space
    evaluate_space(None, catalog=None, workload=None, tensors=None, params=None, precision="fp32", batch_per_gpu=1)


API_CASES = [
    ("budget as text", lambda: costopt.solve("200000", "resnet50"), "budget"),
    ("catalog as int", lambda: costopt.solve(200000, "resnet50", catalog=123), "catalog"),
    ("catalog as dict", lambda: costopt.solve(200000, "resnet50", catalog={"gpu": []}), "catalog"),
    ("gpu as list", lambda: costopt.predict("resnet50", ["h100-sxm"], 8, 1, None, "ring"), "gpu"),
    ("gpus as text", lambda: costopt.solve(200000, "resnet50", gpus="h100-sxm"), "gpu"),
    ("model as list", lambda: costopt.solve(200000, ["resnet50"]), "model"),
    ("model as path", lambda: costopt.solve(200000, "../zoo/resnet50"), "model"),
    ("nodes as text", lambda: costopt.predict("resnet50", "h100-sxm", 8, "2", "ib-ndr", "ring"), "nodes"),
    ("evaluate_space(None)", _evaluate_none, "space"),
    ("choose(non-evaluation)", lambda: costopt.choose("x", budget=1.0, objective="throughput"), "ev"),
    ("load_catalog(123)", lambda: costopt.load_catalog(123), "catalog"),
    ("load_profile(None)", lambda: costopt.load_profile(None), "profile"),
    ("load_system([])", lambda: costopt.load_system([]), "system"),
    ("load_workload path", lambda: costopt.load_workload("../zoo/resnet50"), "model"),
    ("epochs alone", lambda: costopt.solve(200000, "resnet50", epochs=3), "dataset_size"),
    ("objective as int", lambda: costopt.solve(200000, "resnet50", objective=1), "objective"),
    # the field is named for every kind of refusal, not only for type errors
    ("unknown gpu in list", lambda: costopt.solve(200000, "resnet50", gpus=["nope"]), "gpu"),
    ("unknown nic", lambda: costopt.predict("resnet50", "h100-sxm", 8, 2, "nope", "ring"), "nic"),
    ("two nodes, no nic", lambda: costopt.predict("resnet50", "h100-sxm", 8, 2, None, "ring"), "nic"),
    ("unknown strategy", lambda: costopt.predict("resnet50", "h100-sxm", 8, 1, None, "tree"), "strategy"),
    ("unknown chassis", lambda: costopt.predict("resnet50", "h100-sxm", 8, 1, None, "ring", chassis="x"), "chassis"),
    ("no budget", lambda: costopt.solve(None, "resnet50"), "budget"),
    ("missing catalog file", lambda: costopt.load_catalog("/nonexistent/c.toml"), "catalog"),
    ("missing system file", lambda: costopt.load_system("/nonexistent/s.toml"), "system_parameter"),
    ("missing profile file", lambda: costopt.load_profile("/nonexistent/p.json"), "profile"),
]


@pytest.mark.parametrize("name,call,field", API_CASES, ids=[c[0] for c in API_CASES])
def test_api_raises_input_error_with_field(name, call, field):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InputError) as exc:
            call()
    assert exc.value.field == field, (exc.value.field, str(exc.value))
    assert "\n" not in str(exc.value)


def test_purchasing_api_checks_types():
    from costopt.purchase import purchasing as P
    with pytest.raises(InputError, match="list of catalogs"):
        P.compare("reference-2026", "resnet50", 1e5)
    with pytest.raises(InputError, match="purchasing.Options"):
        P.compare([MINI, MINI], "resnet50", 1e5, opts={"hours": 3})


# --- data safety: no command writes over its own inputs; writes are atomic; report's folder is its own -------


def _unchanged_after(path: Path, args, pattern=r"is one of this command's inputs"):
    before = path.read_bytes()
    assert_clean_refusal(args, 2, pattern)
    assert path.read_bytes() == before


def test_catalog_import_never_writes_over_its_price_list(tmp_path):
    prices = tmp_path / "prices.csv"
    shutil.copy(VMS, prices)
    _unchanged_after(prices, ["catalog", "import", prices, "-o", prices, "--price-date", "2025-03-17"])
    # the same file under another name (a symlink) is still the input
    link = tmp_path / "link.csv"
    link.symlink_to(prices)
    _unchanged_after(prices, ["catalog", "import", prices, "-o", link, "--price-date", "2025-03-17"])


def test_calibrate_never_writes_over_its_rows(tmp_path):
    rows = tmp_path / "rows.csv"
    shutil.copy(PUBLISHED, rows)
    _unchanged_after(rows, ["calibrate", rows, "-o", rows])


def test_export_never_writes_over_its_catalog_or_system(tmp_path):
    cat = tmp_path / "c.toml"
    shutil.copy(MINI, cat)
    _unchanged_after(cat, ["export", "--model", "resnet50", "--budget", "1e5", "--catalog", cat, "-o", cat])
    sysf = tmp_path / "s.toml"
    sysf.write_text("[network]\ntcp_efficiency = 0.5\n")
    _unchanged_after(sysf, ["export", "--model", "resnet50", "--budget", "1e5", "--system", sysf, "-o", sysf])
    sys_json = tmp_path / "s.json"  # a system file under any name is still an input
    sys_json.write_text("[network]\ntcp_efficiency = 0.5\n")
    _unchanged_after(sys_json, ["report", "--model", "resnet50", "--budget", "1e5", "--system", sys_json, "--out",
                                tmp_path / "r.md", "--all", sys_json])


def test_report_refuses_a_figure_folder_it_did_not_make(tmp_path):
    mine = tmp_path / "mine_files"
    mine.mkdir()
    (mine / "pareto.png").write_bytes(b"my own picture")
    _unchanged_after(mine / "pareto.png", ["report", "--model", "resnet50", "--budget", "1e5", "--out",
                                          tmp_path / "mine.md"], r"mine_files already exists and was not made by")


def test_report_writes_into_its_own_marked_folder_again(tmp_path):
    from costopt.purchase.report import FIGURE_DIR_MARK, Figure, Report, Section, write_report
    rep = Report("t", "s", {"best": {}}, [Section("a", "A", "intro", figures=[Figure("fig", "F", b"\x89PNG one")])])
    files = write_report(rep, tmp_path / "r.md")
    d = tmp_path / "r_files"
    assert (d / FIGURE_DIR_MARK).is_file() and (d / "fig.png").read_bytes() == b"\x89PNG one"
    rep.sections[0].figures[0] = Figure("fig", "F", b"\x89PNG two")
    write_report(rep, tmp_path / "r.md")  # our own folder: may be written again
    assert (d / "fig.png").read_bytes() == b"\x89PNG two" and files[0] == tmp_path / "r.md"


def test_writes_are_atomic(tmp_path, monkeypatch):
    from costopt.core import checks
    target = tmp_path / "out.json"
    target.write_text("old contents")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checks.os, "replace", broken_replace)
    with pytest.raises(InputError, match="cannot write: No space left on device"):
        checks.write_text(target, "new contents", "--out")
    assert target.read_text() == "old contents"  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file left behind
    monkeypatch.undo()
    checks.write_text(target, "new contents", "--out")
    assert target.read_text() == "new contents" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


# --- newcomer items ------------------------------------------------------------------------------------------


def test_version_and_help_have_no_bool_metavar():
    rc, out, err, _ = cli("--version")
    assert rc == 0 and out.strip() == f"costopt {costopt.__version__}"
    for args in (["--help"], ["solve", "--help"], ["compare", "--help"], ["catalog", "--help"]):
        rc, out, err, _ = cli(*args)
        assert rc == 0 and "<bool>" not in out, out
        assert "thin typer" not in out.lower()


def test_every_output_file_option_is_spelt_out():
    """`--out`/-o everywhere a command writes a file; `--output`, the old spelling of two commands, is still
    accepted but hidden."""
    for cmd in (["catalog", "import"], ["report"], ["export"], ["calibrate"], ["profile"]):
        rc, out, err, _ = cli(*cmd, "--help")
        assert rc == 0 and "--out" in out and "--output" not in out, (cmd, out)
    from costopt.cli.common import out_option
    assert out_option(None, Path("a")) == Path("a") and out_option(Path("b"), None) == Path("b")
    with pytest.raises(InputError, match="give --out once"):
        out_option(Path("a"), Path("b"))


def test_build_zoo_without_the_shared_folder_is_one_clean_line(tmp_path):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "build_zoo.py"), "--shared", str(tmp_path / "nowhere"),
                        "--out", str(tmp_path / "zoo")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "--shared DIR" in p.stderr
    assert not (tmp_path / "zoo").exists()
