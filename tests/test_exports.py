"""Spreadsheet exports a buyer can file: an inputs sheet, units in headers, currency and number formats,
an autofilter; CSV without the long basis text on every row (its meaning is in a legend file)."""

import csv
import datetime as dt
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

import costopt
from hand_tco import whole_cost_without_power

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def run_cli(*args):
    from typer.testing import CliRunner

    from costopt.cli import app

    r = CliRunner().invoke(app, [*map(str, args)])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("x") / "designs.xlsx"
    rc, _, err = run_cli("export", "--model", "resnet50", "--budget", "150000", "--catalog", MINI, "--format", "xlsx",
                         "-o", out, "--tco-years", "3")
    assert rc == 0, err
    return openpyxl.load_workbook(out)


def test_xlsx_inputs_sheet(book):
    assert book.sheetnames[:2] == ["designs", "inputs"]
    rows = {k: v for k, v in list(book["inputs"].values)[1:]}
    assert rows["model"] == "resnet50" and rows["budget_usd"] == "150,000.00"
    assert rows["catalog"] == "mini-test (owned)" and rows["costopt_version"] == costopt.__version__
    assert dt.date.fromisoformat(rows["date"]) and rows["catalog_date"]
    assert rows["cost_basis_owned"] == "USD whole cost of owning over 3 years (capex, storage, financing, colocation, electricity, support, staff, less resale)"


def test_xlsx_units_formats_autofilter(book):
    ws = book["designs"]
    header = [c.value for c in ws[1]]
    assert "cost_usd [USD]" in header and "power_kw [kW]" in header and "rack_units [RU]" in header
    assert "throughput_samples_per_s [samples/s]" in header and "usd_per_hour [USD/h]" in header
    assert "compute_basis" not in header and "cost_basis" in header
    col = {h: i for i, h in enumerate(header)}
    row2 = ws[2]
    assert row2[col["cost_usd [USD]"]].number_format == '"$"#,##0'
    assert row2[col["usd_per_hour [USD/h]"]].number_format == '"$"#,##0.00'
    assert row2[col["throughput_samples_per_s [samples/s]"]].number_format == "#,##0.0"
    assert row2[col["scaling_efficiency [fraction]"]].number_format == "0.000"
    assert ws.auto_filter.ref == f"A1:{ws.cell(1, len(header)).column_letter}{ws.max_row}"
    assert ws.freeze_panes == "B2"
    # the cell holds the number, the format shows dollars: the whole cost of owning over 3 years (hand_tco.py)
    cost = row2[col["cost_usd [USD]"]].value
    whole = whole_cost_without_power(row2[col["capex_usd [USD]"]].value, row2[col["power_kw [kW]"]].value,
                                     row2[col["total_gpus [count]"]].value, 3)
    assert cost == pytest.approx(whole + 3 * row2[col["energy_usd_per_year [USD/year]"]].value, rel=1e-7)
    assert row2[col["cost_basis"]].value == "tco_3y"
    legend = list(book["legend"].values)
    assert ("cost_basis", "tco_3y", None, "USD whole cost of owning over 3 years (capex, storage, financing, colocation, electricity, support, staff, less resale)") in legend


def test_csv_has_codes_and_a_legend_file(tmp_path):
    out = tmp_path / "d.csv"
    rc, _, err = run_cli("export", "--model", "resnet50", "--budget", "150000", "--catalog", MINI, "-o", out)
    assert rc == 0, err
    df = pd.read_csv(out)
    assert "compute_basis" not in df.columns
    assert set(df["cost_basis"]) == {"capex"}
    assert max(len(line) for line in out.read_text().splitlines()[1:]) < 400  # no paragraph per row
    legend = list(csv.DictReader((tmp_path / "d.legend.csv").open()))
    kinds = {(r["kind"], r["name"]): r for r in legend}
    assert kinds[("cost_basis", "capex")]["meaning"] == "USD capex (one-off purchase)"
    assert kinds[("column", "power_kw")]["value"] == "kW"
    assert kinds[("input", "model")]["value"] == "resnet50"
    for gpu in set(df["gpu"]):
        assert kinds[("compute_basis", gpu)]["meaning"]  # each GPU's compute basis, once


def test_csv_to_stdout_is_the_table_only():
    rc, out, err = run_cli("export", "--model", "resnet50", "--budget", "150000", "--catalog", MINI)
    assert rc == 0, err
    assert out.splitlines()[0].startswith("rank,gpu,") and "scaled from" not in out


def test_csv_numbers_never_scientific():
    import re

    rc, out, err = run_cli("export", "--model", "resnet50", "--budget", "5000000")
    assert rc == 0, err
    assert not re.search(r"\d[eE][+-]\d", out)
    rc, out, err = run_cli("solve", "--model", "resnet50", "--budget", "5000000", "--format", "csv", "--top", "3")
    assert rc == 0, err
    assert not re.search(r"\d[eE][+-]\d", out)


@pytest.mark.parametrize("v,text", [(1265920.4, "1265920"), (6.5e-05, "0.000065"), (187418000.0, "187418000"),
                                    (12295.3, "12295.3"), (0.0, "0")])
def test_plain_number(v, text):
    from costopt.core.units import plain_number

    assert plain_number(v) == text
