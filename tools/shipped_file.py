"""The one rule of the build tools for a file they ship: `--check` compares a fresh build with it (exit 1
when it differs), otherwise the fresh build is written."""

from __future__ import annotations

import csv
import io
import sys
import re
from pathlib import Path

# Citations of the raw record and research files the builders read (kept beside the checkout, not shipped),
# rewritten as the docs/sources.md sections that describe them and name their public origins: every
# source a shipped file cites is then in the repository (tests/test_readme_commands.py checks).
IN_REPO_CITATIONS = [
    (r"`?shared/data/h200/train_step\.jsonl`?", "H200 train-step records (docs/sources.md §12a)"),
    (r"`?shared/data/h200/grad_ready\.jsonl`?", "H200 gradient-ready records (docs/sources.md §12a)"),
    (r"`?shared/data/h200/system\.jsonl`?", "H200 copy-bandwidth records (docs/sources.md §12a)"),
    (r"`?shared/data/h200/?`?", "the H200 measurements (docs/sources.md §12a)"),
    (r"`?shared/research/lambda/SOURCES\.md`?", "docs/sources.md §2b"),
    (r"`?shared/research/lambda/?`?", "lambdal/deeplearning-benchmark pytorch/, docs/sources.md §2b"),
    (r"`?shared/research/published_throughput\.csv`?", "docs/sources.md §12b"),
    (r"`?shared/research/llm_training_throughput\.csv`?", "the project's LLM training-throughput compilation"),
    (r"`?shared/research/llm_fp8_blackwell_runs\.csv`?", "the project's FP8/Blackwell run compilation"),
    (r"`?shared/research/hardware_facts\.md`?", "docs/sources.md"),
    (r"`?hardware_facts\.md`? §", "docs/sources.md §"),
    (r"`?hardware_facts\.md`?", "docs/sources.md"),
    (r"`?(?:shared/research/)?thesis_method\.md`? (§\d+(?:\.\d+)?)", r"docs/sources.md §12c (thesis \1)"),
    (r"`?(?:shared/research/)?thesis_method\.md`?", "docs/sources.md §12c"),
    (r"shared/research (GOYAL_2017_SECONDARY)", r"docs/sources.md §12b \1"),
]


def in_repo(text: str) -> str:
    """`text` with every citation of a file outside the repository replaced by its docs/sources.md section."""
    for pattern, repl in IN_REPO_CITATIONS:
        text = re.sub(pattern, repl, text)
    return text


def check_or_write(path: Path, text: str, check: bool) -> None:
    """With `check`: print whether `path` holds `text` and exit 0 (same) or 1; else write `text` to it. Citations
    of files outside the repository become their docs/sources.md sections first (`in_repo`)."""
    text = in_repo(text)
    if check:
        same = path.exists() and path.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{path} differs from a fresh build")
        sys.exit(0 if same else 1)
    path.write_text(text, encoding="utf-8")


def csv_text(rows: list[dict], columns: list[str]) -> str:
    """The CSV text a build tool ships: header, then `rows` in order, "\n" line ends (byte-stable across OSes)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
