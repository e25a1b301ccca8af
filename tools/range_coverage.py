#!/usr/bin/env python3
"""Out-of-sample coverage of the 80% ranges, per group (target 70-90% each).

    python tools/range_coverage.py [--residuals PATH]

Reads the shipped residuals (costopt/data/residuals.json, built by tools/build_residuals.py) and, with the
same rules the ranges use (costopt/perf/intervals.py), prints the share of rows inside the range built
WITHOUT their own source (communication) or GPU/model (compute):

- communication, per stack, per source, and per (stack, source): `intervals.coverage`, each source's rows
  against the other sources' spread of the time beyond compute;
- compute, per evidence kind and per group within it (a GPU; a model for measured profiles):
  `intervals.coverage_by_group`.

A group outside 70-90% is marked (`low`: the range is too narrow out of sample, `high`: wider than it
needs to be). Groups of one or two rows are printed but not marked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costopt.perf.intervals import RESIDUALS_PATH, coverage, coverage_by_group  # noqa: E402

LO, HI = 0.70, 0.90


def _mark(share: float, n: int) -> str:
    if n < 3:
        return ""
    return "  low" if share < LO else ("  high" if share > HI else "")


def tables(doc: dict) -> list[str]:
    out = []
    comm = doc["communication"]
    r = np.array([c["log_residual"] for c in comm])
    x = np.array([c["exposed_share"] for c in comm])
    st = np.array([c["stack"] for c in comm])
    src = np.array([c["source"] for c in comm])
    inside = coverage(r, x, st, src)
    out.append(f"communication (leave one source out), all: {inside.mean():.0%} of {len(r)} rows")
    out.append(f"{'group':<40}{'rows':>6}{'inside':>9}")
    for s in sorted(set(st.tolist())):
        m = st == s
        out.append(f"{'stack ' + s:<40}{int(m.sum()):>6}{inside[m].mean():>9.0%}{_mark(inside[m].mean(), int(m.sum()))}")
    for s in sorted(set(st.tolist())):
        for so in sorted(set(src[st == s].tolist())):
            m = (st == s) & (src == so)
            out.append(f"{'  ' + s + ' / ' + so:<40}{int(m.sum()):>6}{inside[m].mean():>9.0%}"
                       f"{_mark(inside[m].mean(), int(m.sum()))}")
    out.append("")
    comp = doc["compute"]
    for kind in sorted({c["kind"] for c in comp}):
        rows = [c for c in comp if c["kind"] == kind]
        rr = np.array([c["log_residual"] for c in rows])
        g = np.array([c["group"] for c in rows])
        ins = coverage_by_group(rr, g)
        out.append(f"compute {kind} (leave one group out): {ins.mean():.0%} of {len(rr)} rows, {len(set(g.tolist()))} groups"
                   f"{_mark(ins.mean(), len(rr))}")
        for name in sorted(set(g.tolist())):
            m = g == name
            out.append(f"{'  ' + name:<40}{int(m.sum()):>6}{ins[m].mean():>9.0%}{_mark(ins[m].mean(), int(m.sum()))}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--residuals", default=str(RESIDUALS_PATH))
    a = ap.parse_args(argv)
    try:
        doc = json.loads(Path(a.residuals).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {a.residuals}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(tables(doc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
