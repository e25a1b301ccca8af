"""Every mutant in tools/mutants.toml still plants: its original snippet occurs exactly once in its file.

CI's mutation step (tools/mutation.py) fails on a stale mutant; this check fails in the ordinary suite, so
an edit to a line a mutant targets is caught before it lands, not only in CI."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_every_mutant_snippet_occurs_once_in_its_file():
    mutants = tomllib.loads((ROOT / "tools" / "mutants.toml").read_text())["mutant"]
    assert len(mutants) >= 60
    stale = []
    for m in mutants:
        path = ROOT / m["file"]
        n = path.read_text().count(m["original"]) if path.exists() else 0
        if n != 1:
            stale.append(f"{m['id']} ({m['file']}): snippet found {n} times")
        assert m["original"] != m["replacement"], m["id"]
    assert not stale, "stale mutants, update tools/mutants.toml: " + "; ".join(stale)
