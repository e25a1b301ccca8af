"""The front door: every shell command README.md shows, in its "What it answers" table and in its code blocks,
pastes and runs as shown from the repository root, and leaves the checkout as it was.

Each command line runs through bash (so `mkdir -p out && costopt ...` runs as a user would paste it) in a
scratch folder that sees the repository's files through links, with `costopt` on the PATH as this Python's
entry point. It ends with exit code 0, or the code its line documents (`# exits 1`); never a traceback or a
usage error. Whatever a command writes either lands in the scratch folder under a name that git ignores in the
checkout (`out/`) or is a folder of the repository's own git status: the checkout's `git status` is the same
before and after.

The setup lines (`python3 -m venv ...`, `pip install ...`) are not run: they install, they answer nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SETUP = ("python3 -m venv", "pip install", "python -m pytest", ". .venv")


def readme_commands() -> list[tuple[int, str]]:
    """(line, command) for each shell command the README shows: the `command` column of a table (inline
    code in its last cell) and each line of a fenced block, continuation lines joined; each command once."""
    out: list[tuple[int, str]] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        n = i + 1
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            text = line.strip()
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            if text and not text.startswith("#"):
                out.append((n, text))
        elif line.startswith("|") and line.rstrip().endswith("|"):
            last = line.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()
            m = re.fullmatch(r"`([^`]+)`", last)
            if m and ("costopt " in m.group(1)):
                out.append((n, m.group(1)))
        i += 1
    seen, unique = set(), []
    for n, c in out:
        key = " ".join(c.split(" #")[0].split())
        if key not in seen and not c.startswith(SETUP):
            seen.add(key)
            unique.append((n, c))
    return unique


COMMANDS = readme_commands()


def test_the_readme_shows_its_commands():
    """The ten questions of the table, then the worked example's three new ones (`models`, `catalog show`, the
    solve with named GPUs and a power limit): 13 distinct commands, none with a placeholder left (USD, M, H,
    QUOTE_A.toml, `...`)."""
    assert len(COMMANDS) >= 13, COMMANDS
    for _, c in COMMANDS:
        assert not re.search(r"\b(USD|QUOTE_[AB]\S*|[MHEN])\b(?!\S)|\.\.\.", c.split(" #")[0]), c


def _git_status() -> str | None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    return p.stdout if p.returncode == 0 else None


def _ignored(name: str) -> bool:
    """True when git ignores `name` at the root of the checkout (or git is not there to say)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return True
    p = subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT, capture_output=True, timeout=60)
    return p.returncode == 0


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Path:
    """A bin folder whose `costopt` is this interpreter's entry point (no installed script needed)."""
    d = tmp_path_factory.mktemp("bin")
    exe = d / "costopt"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from costopt.cli import main; main()' \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return d


@pytest.mark.parametrize("line,command", COMMANDS, ids=[f"README.md:{n}" for n, _ in COMMANDS])
def test_readme_command_runs_and_leaves_the_checkout_clean(tmp_path, shim, line, command):
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    before = _git_status()
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ.get('PATH', '')}", COLUMNS="120",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    p = subprocess.run(["bash", "-c", command.split(" #")[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    expect = 1 if "exits 1" in command else 0
    assert p.returncode == expect, f"README.md:{line}: `{command}` exited {p.returncode}: {p.stderr[-1500:]}"
    assert "Traceback" not in p.stdout + p.stderr
    assert p.stdout.strip(), f"README.md:{line}: `{command}` printed nothing"
    m = re.search(r"--out (\S+)", command)
    if m:  # the file it names is there, a whole page
        assert (tmp_path / m.group(1)).read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    # what it wrote: new entries of the scratch folder, each a name the checkout ignores
    new = sorted(e.name + ("/" if e.is_dir() else "") for e in tmp_path.iterdir() if not e.is_symlink())
    assert all(_ignored(name) for name in new), f"README.md:{line} writes {new} into the checkout, not git-ignored"
    # and nothing through the links into the checkout itself
    assert _git_status() == before, f"README.md:{line} changed the checkout's git status"


def test_report_commands_write_under_the_ignored_out_folder():
    """The README's two report lines (CNN and large model) write their page under out/, which git ignores."""
    reports = [c for _, c in COMMANDS if " report " in c and "--out" in c]
    assert len(reports) == 2, reports
    assert all(re.search(r"--out out/\S+\.html", c) for c in reports), reports
    assert _ignored("out/")


CITING = [README, *sorted((ROOT / "catalogs").glob("*.toml")), *sorted((ROOT / "costopt" / "catalogs").glob("*.toml")),
          ROOT / "costopt" / "data" / "cloud_instances.toml"]


def test_readme_and_catalogs_cite_only_files_in_the_repository():
    """No path outside the repository (`shared/...`, the research notes' `hardware_facts.md`, `thesis_method.md`);
    every `docs/sources.md §..` a catalog cites is a section heading there (`§1a` -> `### 1a.`, `§6` -> `## 6.`)."""
    sources = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,3} (\d+[a-z]?)\.", sources, re.M))
    assert {"1a", "1c", "3a", "4c", "5a", "6", "7e"} <= headings, headings
    cited = 0
    for path in CITING:
        text = path.read_text(encoding="utf-8")
        for bad in ("shared/", "hardware_facts.md", "thesis_method.md"):
            assert bad not in text, f"{path.relative_to(ROOT)} cites {bad}"
        for group in re.findall(r"docs/sources\.md ((?:§\d+[a-z]?/?)+)", text):
            for sec in re.findall(r"§(\d+[a-z]?)", group):
                assert sec in headings, f"{path.relative_to(ROOT)} cites docs/sources.md §{sec}, not a section"
                cited += 1
    assert cited > 100  # the reference catalog alone cites a section for each of its parts


def _shipped_text_files() -> list[Path]:
    """Every doc, catalog, example and data file the repository ships (text): README, docs/, catalogs/,
    examples/ and everything under costopt/data and costopt/catalogs."""
    out = [README, *sorted((ROOT / "docs").glob("*.md"))]
    for folder in (ROOT / "catalogs", ROOT / "examples", ROOT / "costopt" / "data", ROOT / "costopt" / "catalogs"):
        out += sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".md", ".toml", ".json", ".csv", ".txt"))
    return out


def test_no_doc_catalog_or_data_file_cites_a_path_outside_the_repository():
    """Every source a doc, catalog or data file cites is in the repository (docs/sources.md names the
    original public source): no `shared/...` research or measurement folder, no `/work/...` machine path,
    no `../` that leaves the repository, no research note outside it (`hardware_facts.md`, `thesis_method.md`)."""
    files = _shipped_text_files()
    assert len(files) > 40 and any(p.parent.name == "zoo" for p in files)
    bad = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            hits = re.findall(r"(?<![\w.-])shared/|\.\./shared\b|/work/|hardware_facts\.md|thesis_method\.md", line)
            for rel in re.findall(r"(?<![\w/])((?:\.\./)+[\w./-]*)", line):  # a relative link leaving the repository
                if not (path.parent / rel).resolve().is_relative_to(ROOT):
                    hits.append(rel)
            if hits:
                bad.append(f"{path.relative_to(ROOT)}:{n}: {', '.join(hits)}")
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} lines)"
