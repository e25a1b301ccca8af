"""Every command's output fits 100 and 120 columns without cutting a number (issue 25: `catalog show` split
"$11,99" / "3", `validate published` printed "5,503-…", the large-model table printed "12" hours for 126).

The property, checkable by hand on any output: take each whitespace-separated word that holds a digit
("$1,792,980", "-19/+21%≈", "8x2=16", "2,639") in the output at 1,000 columns, where nothing needs to wrap.
At 100 and at 120 columns each such word appears at least as often, whole (a split table repeats its key
column, so a word may appear more often, never less), no line is longer than the width, and nothing is cut
with "…". A number that wrapped ("$11,99" + "3") or was cut ("5,503-…") would be missing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from rich import box
from rich.table import Table
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
CAT = ROOT / "catalogs"

COMMANDS = [
    ("solve", "--budget", "200000", "--model", "inception_v3"),
    ("solve", "--budget", "200000", "--model", "inception_v3", "--top", "4", "--wide"),
    ("solve", "--model", "resnet50", "--objective", "cost", "--deadline-hours", "24", "--epochs", "90",
     "--dataset-size", "1281167"),
    ("solve", "--budget", "2000000", "--model", "llama3_70b", "--tokens", "1e12"),
    ("solve", "--workload", str(ROOT / "examples" / "mix.toml")),
    ("predict", "--model", "inception_v3", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2", "--nic",
     "ib-ndr", "--strategy", "ring"),
    ("predict", "--model", "llama3_70b", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "4", "--nic",
     "ib-ndr", "--nics-per-node", "8", "--strategy", "zero1", "--tp", "4", "--pp", "2"),
    ("bom", "--model", "inception_v3", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2", "--nic", "ib-ndr"),
    ("compare", str(CAT / "vendor-a-datacenter-2026.toml"), str(CAT / "vendor-b-whitebox-2026.toml"), "--model",
     "inception_v3", "--budget", "200000"),
    ("rent-vs-buy", "--model", "inception_v3", "--budget", "200000", "--cloud", str(CAT / "aws-on-demand-2026.toml")),
    ("validate", "published"),
    ("models",),
    ("catalog", "show"),
    ("catalog", "show", str(CAT / "aws-on-demand-2026.toml")),
    ("catalog", "show", str(CAT / "nebius-2026.toml")),
]

SPLIT = re.compile(r"[\s│┃┏┓┗┛━─┡┩└┘┬┴┼╇┳╋┃]+")


def _run(args, columns):
    from costopt.cli import app

    r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout


def numeric_words(text: str) -> Counter:
    return Counter(w for w in SPLIT.split(text) if re.search(r"\d", w))


@pytest.fixture(scope="module")
def wide_outputs():
    return {}


@pytest.mark.parametrize("columns", [100, 120])
@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) + f"#{i}" for i, a in enumerate(COMMANDS)])
def test_no_number_cut_at_100_and_120_columns(args, columns, wide_outputs):
    if args not in wide_outputs:
        wide_outputs[args] = _run(args, 1000)
    rc_wide, wide = wide_outputs[args]
    rc, out = _run(args, columns)
    assert rc == rc_wide == 0, out[-2000:]
    assert "…" not in out
    too_long = [ln for ln in out.splitlines() if len(ln) > columns]
    assert not too_long, too_long[:3]
    missing = numeric_words(wide) - numeric_words(out)
    assert not missing, f"cut or wrapped at {columns} columns: {sorted(missing)[:12]}"


def test_predict_prints_the_bill_of_materials_as_a_table():
    """The BOM is a table of line items (item, part, unit price, qty, subtotal), not a Python list in a cell;
    its total is the design's capex."""
    args = ("predict", "--model", "inception_v3", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2",
            "--nic", "ib-ndr", "--strategy", "ring")
    rc, out = _run(args, 120)
    assert rc == 0
    d = json.loads(_run(args + ("--format", "json"), 120)[1])
    assert "{'item'" not in out and "'subtotal_usd'" not in out
    assert "Bill of materials" in out and "unit price" in out and "subtotal" in out
    total = [ln for ln in out.splitlines() if re.match(r"[│ ]*total\b", ln.strip("│ ")) or "│ total" in ln]
    assert total and f"${d['capex_usd']:,.2f}" in total[-1]
    gpu_line = d["bom"][0]
    assert f"${gpu_line['unit_price_usd']:,.2f}" in out and f"${gpu_line['subtotal_usd']:,.2f}" in out


def test_predict_numbers_one_format():
    """Every number in predict's field table in one format: thousands separated whole numbers from 1,000 up,
    4 significant figures below (hand: 0.9032, not 0.903215; 19,439, not 19,439.1); a missing value is '-'."""
    args = ("predict", "--model", "inception_v3", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2",
            "--nic", "ib-ndr", "--strategy", "ring")
    out = _run(args, 120)[1]
    d = json.loads(_run(args + ("--format", "json"), 120)[1])
    cells = {m.group(1): m.group(2).strip() for m in re.finditer(r"│ (\w+)\s+│ (.*?)│", out)}
    assert cells["throughput_samples_per_s"] == f"{d['throughput_samples_per_s']:,.0f}"
    assert cells["throughput_high_samples_per_s"] == f"{d['throughput_high_samples_per_s']:,.0f}"
    assert cells["busiest_nic_bytes_per_iter"] == f"{d['busiest_nic_bytes_per_iter']:,.0f}"
    assert cells["time_to_train_h"] == "-"
    eff = d["scaling_efficiency"]  # 4 significant figures of a value in [0.1, 1)
    assert cells["scaling_efficiency"] == f"{eff:.4f}"


@pytest.mark.parametrize("v,text", [(19439.1, "19,439"), (203709480.0, "203,709,480"), (17.0, "17"), (20.4512, "20.45"),
                                    (0.903215, "0.9032"), (0.00509712, "0.005097"), (999.94, "999.9"), (None, "-"),
                                    (float("nan"), "-")])
def test_number_format(v, text):
    from costopt.cli.common import _fmt_number

    assert _fmt_number(v) == text


def _table(rows):
    t = Table(title="Designs", title_justify="left", box=box.SIMPLE_HEAD, caption="legend: the caption")
    for name, just in (("#", "right"), ("GPU", "left"), ("cost USD", "right"), ("note", "left"),
                       ("throughput samples/s", "right")):
        t.add_column(name, justify=just)
    for r in rows:
        t.add_row(*r)
    return t


ROWS = [("1", "rtx-pro-6000", "$198,590", "a long note that can wrap at its spaces anywhere", "11,556"),
        ("2", "h200-nvl", "$1,190,620", "short", "8,001")]


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_fit_table_never_cuts_a_word(width):
    """At any width that holds the widest key + one column, each word of each cell is printed whole, every
    line fits, the caption is printed once, and a row's cost stands on a line with its GPU id."""
    from costopt.cli.tables import FitConsole

    c = FitConsole(width=width, record=True, highlight=False)
    c.print(_table(ROWS))
    text = c.export_text()
    assert max(len(ln) for ln in text.splitlines()) <= width
    words = Counter(w for w in SPLIT.split(text) if w)
    for row in ROWS:
        for cell in row:
            for w in cell.split():
                assert words[w] >= 1, (w, text)
    assert text.count("legend: the caption") == 1 or width < 60  # the caption may wrap at its spaces
    for gpu, cost in (("rtx-pro-6000", "$198,590"), ("h200-nvl", "$1,190,620")):
        assert any(gpu in ln and cost in ln for ln in text.splitlines()), text


def test_fit_table_splits_with_the_key_columns_repeated():
    """At 40 columns the five columns (widest words 1, 12, 10, 10, 10 cells) cannot stand side by side with
    their padding: the table is split into parts, each repeating '#' and 'GPU', the title on the first part."""
    from costopt.cli.tables import FitConsole, fit_table

    c = FitConsole(width=40, record=True, highlight=False)
    parts = [p for p in fit_table(c, _table(ROWS)) if isinstance(p, Table)]
    assert len(parts) >= 2
    for p in parts:
        assert [str(col.header) for col in p.columns][:2] == ["#", "GPU"]
    assert "(part 1 of" in str(parts[0].title)
    shown = [str(col.header) for p in parts for col in p.columns[2:]]
    assert shown == ["cost USD", "note", "throughput samples/s"]  # every column once, in order
    # at 200 columns nothing changes: the table as given
    wide = FitConsole(width=200)
    assert fit_table(wide, t := _table(ROWS)) == [t]
