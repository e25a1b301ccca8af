"""Outputs (issue 26, item 4): `-o` never replaces a special file, a read-only file (without --force) or
an input; a link to a regular file is written through; SIGTERM removes temporary folders and ends with
exit 143; the CBC child dies with its parent; a closed stdout ends quietly with exit 141; a usage error
under --format json says "reason": "input" (docs/commands.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costopt.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
EXPORT = ["export", "--model", "resnet50", "--budget", "200000"]


def _one_line_2(args) -> str:
    r = CliRunner().invoke(app, [*map(str, args)])
    text = r.output.strip()
    assert r.exit_code == 2, (args, text, r.exception)
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    return text


def test_special_files_are_never_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_null = tmp_path / "null.link"
    to_null.symlink_to("/dev/null")
    to_stdout = tmp_path / "stdout.link"
    to_stdout.symlink_to("/dev/stdout")
    for out, word in ((fifo, "FIFO"), (to_null, "a device"), (to_stdout, "a link through /dev/stdout"),
                      ("/dev/stdout", "a link through"), (tmp_path, "is a directory")):
        assert word in _one_line_2([*EXPORT, "-o", out])
    assert fifo.is_fifo() and to_null.is_symlink() and os.readlink(to_null) == "/dev/null"
    assert _one_line_2(["catalog", "import", ROOT / "catalogs" / "aws-vms-sample.csv", "-o", fifo, "--price-date",
                        "2025-03-17"]).count("FIFO") == 1


def test_read_only_needs_force_and_keeps_its_mode(tmp_path):
    out = tmp_path / "t.csv"
    out.write_text("old\n")
    out.chmod(0o444)
    assert "read-only" in _one_line_2([*EXPORT, "-o", out])
    assert out.read_text() == "old\n"
    r = CliRunner().invoke(app, [*EXPORT, "-o", str(out), "--force"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("rank,gpu,")
    assert out.stat().st_mode & 0o777 == 0o444
    # --force is per command: the next command without it refuses again
    assert "read-only" in _one_line_2([*EXPORT, "-o", out])


def test_link_to_a_regular_file_is_written_through(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real.name)
    r = CliRunner().invoke(app, [*EXPORT, "-o", str(link)])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and real.read_text().startswith("rank,gpu,")


def test_input_of_the_same_run_is_refused(tmp_path):
    prices = tmp_path / "vms.csv"
    prices.write_bytes((ROOT / "catalogs" / "aws-vms-sample.csv").read_bytes())
    before = prices.read_bytes()
    assert "one of this command's inputs" in _one_line_2(
        ["catalog", "import", prices, "-o", prices, "--price-date", "2025-03-17"])
    assert prices.read_bytes() == before


def test_closed_stdout_ends_quietly_with_141():
    p = subprocess.Popen([sys.executable, "-m", "costopt.cli", "models"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=ENV)
    p.stdout.readline()
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read()
    assert p.wait(timeout=60) == 141
    assert err == b""


def test_usage_error_under_json_says_input():
    p = subprocess.run([sys.executable, "-m", "costopt.cli", "solve", "--bogus", "--format", "json"],
                       capture_output=True, env=ENV, timeout=60)
    assert p.returncode == 2
    doc = json.loads(p.stdout)
    assert doc["reason"] == "input" and doc["exit_code"] == 2
    assert len(p.stderr.decode().strip().splitlines()) == 1


@pytest.mark.slow
def test_sigterm_removes_export_temp_folder(tmp_path):
    # a bounded-memory export writes its pieces into .costopt-export-* beside --out; SIGTERM while it
    # exists must remove it and leave no partial output (exit 143)
    out = tmp_path / "big.csv"
    p = subprocess.Popen([sys.executable, "-m", "costopt.cli", "export", "--model", "resnet50", "--budget", "1e7",
                          "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".costopt-export-*")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(tmp_path.glob(".costopt-export-*")), "the export never made its temporary folder"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143
    assert p.stderr.read().decode().strip() == "terminated"
    assert sorted(x.name for x in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_sigint_removes_export_temp_folder(tmp_path):
    # Ctrl-C (SIGINT) unwinds as SIGTERM does: exit 130, one word on stderr, nothing left behind
    out = tmp_path / "big.csv"
    p = subprocess.Popen([sys.executable, "-m", "costopt.cli", "export", "--model", "resnet50", "--budget", "1e7",
                          "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".costopt-export-*")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(tmp_path.glob(".costopt-export-*")), "the export never made its temporary folder"
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=60) == 130
    assert p.stderr.read().decode().strip() == "interrupted"
    assert sorted(x.name for x in tmp_path.iterdir()) == []


_HARD_MILP = """
import random, sys, time, pulp
from costopt.search.multijob.formulation import _run_cbc
random.seed(7)
n, m = 120, 40
prob = pulp.LpProblem("knap", pulp.LpMaximize)
x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(n)]
prob += pulp.lpSum(random.randint(50, 100) * v for v in x)
for _ in range(m):
    w = [random.randint(20, 80) for _ in range(n)]
    prob += pulp.lpSum(a * v for a, v in zip(w, x)) <= sum(w) // 2
print("solving", flush=True)
_run_cbc(prob, time_limit=120)
"""


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux only")
def test_cbc_child_dies_with_its_parent():
    p = subprocess.Popen([sys.executable, "-c", _HARD_MILP], stdout=subprocess.PIPE, env=ENV)
    assert p.stdout.readline().strip() == b"solving"
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while not kids and time.monotonic() < deadline:
        kids = [k for k in _children(p.pid) if "cbc" in Path(f"/proc/{k}/cmdline").read_bytes().decode(errors="replace")]
        time.sleep(0.05)
    assert kids, "CBC never started"
    p.kill()  # SIGKILL: no handler runs; only the kernel's parent-death signal can end the child
    p.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{k}").exists() and "Z" not in (Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0])
              for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [k for k in kids if Path(f"/proc/{k}").exists()
             and Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    for k in alive:  # do not leave it running if the check fails
        os.kill(k, signal.SIGKILL)
    assert not alive, f"CBC {alive} outlived its parent"


def test_a_signal_in_a_held_block_is_raised_when_the_block_ends():
    # a temporary file or folder is made and taken in charge inside signals_held (core/interrupts.py): the CLI's
    # SIGTERM handler passes its exception to `deliver`, which must hold it inside the block (where raising
    # would strand the new file) and raise it as the outermost block ends
    from costopt.core.interrupts import deliver, signals_held

    class Stop(Exception):
        pass

    old = signal.signal(signal.SIGTERM, lambda *_: deliver(Stop()))
    reached = []
    try:
        with pytest.raises(Stop):
            with signals_held():
                with signals_held():
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.05)  # the handler runs in here
                    reached.append("inner")
                reached.append("outer")  # the inner block's end does not raise: the outer one still holds
        assert reached == ["inner", "outer"]
        with pytest.raises(Stop):  # outside any held block the handler raises at once
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
    finally:
        signal.signal(signal.SIGTERM, old)
