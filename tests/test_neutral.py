"""Third-party text neutralised where it lands (issue 26, item 5): terminal (no control characters or
bidi overrides, no rich markup), spreadsheets (OWASP: a cell starting =, +, -, @, tab, CR is quoted with
'), Markdown (HTML escaped; JSON cannot close its fence). The HTML report already escaped."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from costopt.cli.main import app
from costopt.core import neutral

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "costopt" / "catalogs" / "reference-2026.toml"
K80_NAME = 'name = "NVIDIA Tesla K80, one GK210 die (half a board)"'
EVIL_NAME = "K80 \x1b]0;owned\x07\x1b[2J\x9b31m [red]red[/red] :smile: \u202eevil\u202c"
EVIL_CATALOG = "=HYPERLINK(\"http://x\")"


def _catalog(tmp_path: Path, gpu_name: str = EVIL_NAME, cat_name: str | None = None) -> Path:
    text = REF.read_text(encoding="utf-8")
    assert K80_NAME in text
    import json

    text = text.replace(K80_NAME, f"name = {json.dumps(gpu_name)}", 1)
    if cat_name is not None:
        text = text.replace('name = "reference-2026"', f"name = {json.dumps(cat_name)}", 1)
    p = tmp_path / "evil.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_terminal_text_drops_controls_keeps_newlines():
    assert neutral.terminal_text("a\x1b[31mb\x07c\td\ne\u202ef\x9bg\x7f") == "a[31mbc\td\nefg"


def test_catalog_show_prints_no_escape_sequence(tmp_path):
    r = CliRunner().invoke(app, ["catalog", "show", str(_catalog(tmp_path))], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    out = r.output
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out), repr(out[:200])
    # rich markup and emoji codes are shown as written, not interpreted
    assert "[red]red[/red]" in out and ":smile:" in out
    assert "K80 ]0;owned[2J31m" in out


def test_spreadsheet_cells_are_quoted_per_owasp():
    cells = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "ok", "a=b", ""]
    assert [neutral.spreadsheet_cell(c) for c in cells] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "ok", "a=b", ""]
    assert neutral.spreadsheet_cell(-1.5) == -1.5 and neutral.spreadsheet_cell(-3) == -3
    df = pd.DataFrame({"name": ["=cmd", "fine"], "cost_usd": [-1.0, 2.0]})
    out = neutral.spreadsheet_frame(df)
    assert out["name"].tolist() == ["'=cmd", "fine"] and out["cost_usd"].tolist() == [-1.0, 2.0]
    assert neutral.xlsx_cell("=a\x00b\x1f") == "'=ab"


def test_export_csv_and_xlsx_quote_a_formula_catalog_name(tmp_path):
    cat = _catalog(tmp_path, gpu_name="K80", cat_name=EVIL_CATALOG)
    out = tmp_path / "t.csv"
    base = ["export", "--model", "resnet50", "--budget", "30000", "--catalog", str(cat)]
    r = CliRunner().invoke(app, [*base, "-o", str(out)])
    assert r.exit_code == 0, r.output
    legend = list(csv.reader(io.StringIO((tmp_path / "t.legend.csv").read_text(encoding="utf-8"))))
    values = [v for row in legend for v in row]
    assert any(v.startswith("'" + EVIL_CATALOG) for v in values)  # the catalog input row: "NAME (owned)"
    assert not any(v.startswith(("=", "+", "@")) for v in values)
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert not any(v.startswith(("=", "+", "@")) or (v.startswith("-") and not _is_number(v)) for row in rows for v in row)

    from openpyxl import load_workbook

    xl = tmp_path / "t.xlsx"
    r = CliRunner().invoke(app, [*base, "--format", "xlsx", "-o", str(xl)])
    assert r.exit_code == 0, r.output
    wb = load_workbook(xl)
    cells = [c for ws in wb.worksheets for row in ws.iter_rows() for c in row]
    assert any(isinstance(c.value, str) and c.value.startswith("'" + EVIL_CATALOG) for c in cells)
    assert not any(c.data_type == "f" for c in cells)  # no cell is a formula


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def test_markdown_report_escapes_html(tmp_path):
    from costopt.purchase.report import Figure, Report, Section, to_markdown

    evil = "<script>alert(1)</script> & <img src=x onerror=alert(1)>"
    rep = Report(title=f"T {evil}", subtitle=evil, solve_json={"name": evil + " ``` </details>"},
                 sections=[Section(id="s", title=evil, intro=evil, tables=[(["h|x", evil], [[evil, "a\nb|c"]])],
                                   figures=[Figure(name="f", title="[x](javascript:1) " + evil, png=b"\x89PNG")],
                                   notes=[evil])], data={"extra": {"k": evil}})
    md = to_markdown(rep, tmp_path / "figs", "figs")
    assert "<script" not in md and "<img" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img" in md
    assert "| h\\|x |" in md and "a b\\|c" in md
    assert "](javascript" not in md
    # the JSON stays JSON with the same data, and only the fences written by to_markdown are in the text
    assert md.count("```") == 4
    import json

    blocks = re.findall(r"```json\n(.*?)\n```", md, re.S)
    assert json.loads(blocks[0]) == rep.solve_json and json.loads(blocks[1]) == rep.data["extra"]
