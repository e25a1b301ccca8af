"""tools/range_coverage.py: per-group out-of-sample coverage of the 80% ranges."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import range_coverage  # noqa: E402


def test_overall_coverage_matches_the_recorded_figures():
    # residuals.json records the coverage tools/build_residuals.py measured; the per-group tool must
    # reproduce the overall communication and per-kind compute figures from the same rows
    doc = json.loads((ROOT / "costopt" / "data" / "residuals.json").read_text())
    lines = range_coverage.tables(doc)
    want = doc["coverage"]["communication"]["all"]
    assert f"all: {want['inside']:.0%} of {want['rows']} rows" in lines[0]
    for kind, rec in doc["coverage"]["compute"].items():
        assert any(line.startswith(f"compute {kind} ") and f"{rec['inside']:.0%} of {rec['rows']} rows" in line
                   for line in lines)


def test_marks_groups_outside_70_90():
    assert range_coverage._mark(0.5, 10) == "  low" and range_coverage._mark(0.95, 10) == "  high"
    assert range_coverage._mark(0.8, 10) == "" and range_coverage._mark(0.0, 2) == ""


def test_bad_file_exit_2(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{")
    assert range_coverage.main(["--residuals", str(p)]) == 2
