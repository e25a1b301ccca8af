"""Mutation score: plant each of the project's own mutants, one at a time, and run the fast tests.

    python tools/mutation.py                  # every mutant in tools/mutants.toml, 2 workers
    python tools/mutation.py --only ps-applies-per-worker --jobs 1
    python tools/mutation.py --list           # the mutants and the tests each one runs

A mutant is (file, an exact snippet of that file, its replacement): a small deliberate bug of the kind
a change could bring in (a dropped term, a swapped tie-break, a wrong direction). It is *killed* when
the tests it names fail with the mutant planted; it *survives* when they pass. A snippet that is no
longer found exactly once in its file is reported *stale* (the code moved on: update the list).

Each worker copies the working tree (without .git, virtual environments and caches) into a temporary
folder, with `../shared` linked next to it when the repository has one, and runs
`python -m pytest -x -q` on the mutant's test files there (PYTHONPATH set to the copy, no bytecode
written, so a mutant is never masked by a cached module). Before any mutant, every test file in the
list is run once unmutated in each copy: a red baseline stops the run (nothing could be killed
honestly). The score is killed / (killed + survived); the run fails (exit 1) below --min-score (90%)
or when any mutant is stale. Standing command (README, Tests): `python tools/mutation.py`.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LIST = ROOT / "tools" / "mutants.toml"
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", "build", "dist", "costopt.egg-info", ".mypy_cache"}


@dataclass
class Mutant:
    id: str
    file: str
    original: str
    replacement: str
    tests: list[str]
    kind: str = ""
    status: str = "pending"  # killed | survived | stale | error
    seconds: float = 0.0
    detail: str = field(default="", repr=False)


def load_mutants(path: Path) -> tuple[list[Mutant], list[str], list[str]]:
    """Mutants, pytest options every run gets (e.g. --deselect of process-spawning tests), and baseline files."""
    data = tomllib.loads(path.read_text())
    default_tests: dict[str, list[str]] = data.get("tests", {})
    mutants = []
    seen = set()
    for row in data.get("mutant", []):
        unknown = set(row) - {"id", "file", "original", "replacement", "tests", "kind"}
        if unknown:
            raise SystemExit(f"{path}: mutant {row.get('id')!r}: unknown keys {sorted(unknown)}")
        if row["id"] in seen:
            raise SystemExit(f"{path}: mutant id {row['id']!r} appears twice")
        seen.add(row["id"])
        tests = row.get("tests") or default_tests.get(row["file"])
        if not tests:
            raise SystemExit(f"{path}: mutant {row['id']!r}: no tests named and no [tests] entry for {row['file']}")
        mutants.append(Mutant(row["id"], row["file"], row["original"], row["replacement"], list(tests), row.get("kind", "")))
    options = list(data.get("pytest", {}).get("options", []))
    files = sorted({t for m in mutants for t in m.tests})
    return mutants, options, files


def copy_tree(dst: Path) -> Path:
    """A copy of the working tree at dst/repo, with dst/shared linked to ../shared when it exists."""
    repo = dst / "repo"

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIP_DIRS or n.endswith(".pyc")}

    shutil.copytree(ROOT, repo, ignore=ignore, symlinks=True)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (dst / "shared").symlink_to(shared)
    return repo


def run_pytest(repo: Path, tests: list[str], options: list[str], timeout: float) -> tuple[int, str]:
    # not under CI's no-skip rule: the copies measure mutants, and the baseline run checks they are green
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "CI")}
    env["PYTHONPATH"] = str(repo)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", "-rN", *options, *tests]
    try:
        p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return p.returncode, (p.stdout + p.stderr)[-2000:]


def check_import_location(repo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PYTHONPATH=str(repo), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", "import costopt; print(costopt.__file__)"], cwd=repo, env=env,
                         capture_output=True, text=True).stdout.strip()
    if not out.startswith(str(repo)):
        raise SystemExit(f"the copy at {repo} imports costopt from {out!r}, not from itself")


def mark_stale(mutants: list[Mutant]) -> None:
    for m in mutants:
        text = (ROOT / m.file).read_text() if (ROOT / m.file).exists() else ""
        n = text.count(m.original)
        if n != 1:
            m.status = "stale"
            m.detail = "snippet not found" if n == 0 else f"snippet found {n} times"


def worker(repo: Path, jobs: "queue.Queue[Mutant]", options: list[str], timeout: float, lock: threading.Lock) -> None:
    while True:
        try:
            m = jobs.get_nowait()
        except queue.Empty:
            return
        target = repo / m.file
        original_text = target.read_text()
        t0 = time.perf_counter()
        try:
            target.write_text(original_text.replace(m.original, m.replacement, 1))
            rc, out = run_pytest(repo, m.tests, options, timeout)
        finally:
            target.write_text(original_text)
        m.seconds = time.perf_counter() - t0
        if rc == 0:
            m.status = "survived"
        elif rc in (1, 2, -1):  # tests failed, collection/import broke, or timed out
            m.status = "killed"
            m.detail = {-1: "timeout", 2: "collection error"}.get(rc, "")
        else:
            m.status = "error"
            m.detail = f"pytest exit {rc}: {out[-300:]}"
        with lock:
            print(f"  {m.status:8s} {m.seconds:6.1f} s  {m.id}" + (f"  ({m.detail})" if m.detail else ""), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mutants", type=Path, default=DEFAULT_LIST, help="TOML list of mutants")
    ap.add_argument("--jobs", type=int, default=2, help="parallel workers (one copy of the tree each)")
    ap.add_argument("--only", nargs="*", default=None, help="run only these mutant ids")
    ap.add_argument("--min-score", type=float, default=90.0, help="fail below this percentage killed")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run (a timeout kills it)")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    args = ap.parse_args(argv)

    mutants, options, files = load_mutants(args.mutants)
    if args.only:
        unknown = set(args.only) - {m.id for m in mutants}
        if unknown:
            print(f"unknown mutant ids: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.id in args.only]
        files = sorted({t for m in mutants for t in m.tests})
    if args.list:
        for m in mutants:
            print(f"{m.id:40s} {m.file:32s} {m.kind:28s} {' '.join(m.tests)}")
        return 0
    mark_stale(mutants)
    live = [m for m in mutants if m.status == "pending"]
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="costopt-mutation-") as tmp:
        repos = []
        for k in range(max(1, min(args.jobs, len(live) or 1))):
            dst = Path(tmp) / f"w{k}"
            dst.mkdir()
            repos.append(copy_tree(dst))
        check_import_location(repos[0])
        print(f"baseline: {len(files)} test files unmutated ...", flush=True)
        rc, out = run_pytest(repos[0], files, options, args.timeout * 3)
        if rc != 0:
            print(out, file=sys.stderr)
            print("baseline is red: fix the tests before measuring mutants", file=sys.stderr)
            return 2
        print(f"baseline green in {time.perf_counter() - t_start:.0f} s; {len(live)} mutants on {len(repos)} workers",
              flush=True)
        jobs: queue.Queue[Mutant] = queue.Queue()
        for m in live:
            jobs.put(m)
        lock = threading.Lock()
        threads = [threading.Thread(target=worker, args=(r, jobs, options, args.timeout, lock)) for r in repos]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elapsed = time.perf_counter() - t_start
    killed = [m for m in mutants if m.status == "killed"]
    survived = [m for m in mutants if m.status == "survived"]
    stale = [m for m in mutants if m.status == "stale"]
    errors = [m for m in mutants if m.status == "error"]
    for label, group in (("SURVIVED", survived), ("STALE", stale), ("ERROR", errors)):
        for m in group:
            print(f"{label}: {m.id} ({m.file}) {m.detail}")
    scored = len(killed) + len(survived)
    score = 100.0 * len(killed) / scored if scored else 0.0
    print(f"killed {len(killed)}/{scored} ({score:.1f}%); stale {len(stale)}; errors {len(errors)}; "
          f"{elapsed:.0f} s on {len(repos)} workers")
    return 0 if (score >= args.min_score and not stale and not errors) else 1


if __name__ == "__main__":
    sys.exit(main())
