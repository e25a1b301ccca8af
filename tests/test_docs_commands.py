"""Every `costopt` command that README.md and docs/*.md show in a code block runs as shown (from the
repository root) and ends with exit code 0, or 1 where the line says `# exits 1`; never a traceback or
a usage error.

Lines that need something the test machine may lack say so in a comment and are skipped without it:
`# needs torch` (the `profile` extra), `needs ... a GPU`, `needs network` (the rig's processes and links),
and lines that use a file a `needs` line makes (`needs the line above`, `needs the first line`). A line
marked `# after the line above` runs after the command before it, in the same folder.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from test_hardening import cli

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


MKDIR = r"^mkdir -p ([\w./-]+) && (?=costopt )"  # an output folder made first, as a user pastes it


def documented_commands() -> list[tuple[str, int, str]]:
    """(file, line, command) for each `costopt ...` line (or `mkdir -p DIR && costopt ...`) of a fenced or
    indented code block."""
    out = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        fenced = False
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.lstrip().startswith("```"):
                fenced = not fenced
                i += 1
                continue
            text = line.strip().removeprefix("$ ")
            in_block = fenced or line.startswith("    ")
            if in_block and re.sub(MKDIR, "", text).startswith("costopt "):
                n = i + 1
                while text.endswith("\\") and i + 1 < len(lines):  # continuation lines
                    i += 1
                    text = text[:-1] + " " + lines[i].strip()
                if not any(text.split(" #")[0].split() == c[2].split(" #")[0].split() for c in out):
                    out.append((path.name, n, text))  # a command shown twice runs once
            i += 1
    return out


COMMANDS = documented_commands()


def _split(command: str) -> tuple[list[str], str]:
    """The arguments and the trailing comment of a documented command line (a leading `mkdir -p DIR &&`
    is made by `_mkdir`)."""
    command = re.sub(MKDIR, "", command)
    lexer = shlex.shlex(command, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    args = list(lexer)
    comment = command.split(" #", 1)[1] if " #" in command else ""
    return args, comment


def test_the_docs_show_commands():
    assert len(COMMANDS) >= 20, COMMANDS
    assert any(c[2].startswith("costopt solve --budget 200000 --model inception_v3") for c in COMMANDS)


@pytest.mark.parametrize("where,line,command", COMMANDS, ids=[f"{c[0]}:{c[1]}" for c in COMMANDS])
def test_documented_command_runs(tmp_path, monkeypatch, where, line, command):
    args, comment = _split(command)
    if "needs torch" in comment:
        torch = pytest.importorskip("torch")
        if "GPU" in comment and not torch.cuda.is_available():
            pytest.skip("needs a GPU")
    if "needs network" in comment:
        pytest.skip("needs the rig's network (see docs/measuring.md)")
    if "needs the" in comment:
        pytest.skip("uses a file that a command needing torch and a GPU makes")
    # run from a scratch folder that sees the repository's files, so outputs land there
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name != "out":  # out/: the ignored output folder, made fresh
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    for c in (command, *([c[2] for c in COMMANDS if c[0] == where and c[1] < line][-1:] if "after the line above" in comment else [])):
        m = re.match(MKDIR, c)
        if m:
            (tmp_path / m.group(1)).mkdir(parents=True, exist_ok=True)
    if "after the line above" in comment:
        before = [c for c in COMMANDS if c[0] == where and c[1] < line][-1]
        assert cli(*_split(before[2])[0][1:])[0] == 0, before
    rc, out, err, _ = cli(*args[1:])
    expect = 1 if re.search(r"exits 1", comment) else 0
    assert rc == expect, f"{where}:{line}: `{command}` exited {rc}: {err[-1500:]}"
    assert "Traceback" not in out + err


def test_readme_is_the_front_door():
    """Under about 200 lines; the depth lives in docs/, one file per topic, each linked from the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in text, f"README does not link docs/{doc.name}"


def test_measuring_doc_lists_every_column_the_measurement_reader_parses():
    """docs/measuring.md's table of the measurement CSV names each column `validate` and `calibrate` read
    (costopt/measure/validate.py PARSED_COLUMNS) and no other, and marks the fourteen header-required ones."""
    from costopt.measure.validate import COLUMNS, PARSED_COLUMNS
    doc = (Path(__file__).resolve().parents[1] / "docs" / "measuring.md").read_text()
    start = doc.index("| column | value | meaning |")
    table = doc[start:doc.index("\n\n", start)].splitlines()[2:]
    named, optional = [], []
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`([a-z_0-9]+)`", cells[0])
        named += names
        if cells[1].startswith("optional"):
            optional += names
    assert sorted(named) == sorted(PARSED_COLUMNS)
    assert len(COLUMNS) == 14 and sorted(set(named) - set(optional)) == sorted(COLUMNS)
