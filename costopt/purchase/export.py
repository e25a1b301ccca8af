"""Tables for spreadsheets: csv, xlsx, json.

- json: DESIGN records as they are (every field, long texts included).
- csv: one row per design, field names with their unit (`cost_usd`, `power_kw`); the long per-row texts
  are not repeated: `cost_basis` becomes a short code (`capex`, `rent_per_job`, ...) and `compute_basis`
  is left out. With `--out FILE.csv` a legend `FILE.legend.csv` (kind, name, value, meaning) holds the
  inputs, every column's unit and meaning, what each cost-basis code means and each GPU's compute basis.
- xlsx: sheet `designs` (the csv columns, header `field [unit]`, currency and number formats,
  autofilter, frozen header), sheet `inputs` (model, budget, catalog, date, version, ...), sheet
  `legend` (as the csv legend). Byte-reproducible: the save times openpyxl stamps are fixed.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from costopt.core.checks import output_path, write_bytes_atomic, write_text
from costopt.core.errors import InputError
from costopt.core.neutral import spreadsheet_cell, spreadsheet_frame, xlsx_cell
from costopt.core.units import plain_number

# field -> (unit, meaning); the unit is what the field name's suffix says
COLUMNS: dict[str, tuple[str, str]] = {
    "rank": ("", "position in the ranking (1 = best by the objective)"),
    "gpu": ("", "GPU id in the catalog"),
    "chassis": ("", "node (server or rented instance) id in the catalog"),
    "gpus_per_node": ("count", "GPUs in each node"),
    "nodes": ("count", "nodes"),
    "total_gpus": ("count", "GPUs in the cluster"),
    "nic": ("", "NIC id (none inside one node)"),
    "nics_per_node": ("count", "NIC adapters per node"),
    "transport": ("", "tcp or rdma"),
    "strategy": ("", "ring, hierarchical (all-reduce) or ps (parameter server)"),
    "reduce_on": ("", "gpu or cpu: where gradients are reduced"),
    "batch_per_gpu": ("samples", "per-GPU batch"),
    "precision": ("", "fp32 or mixed precision"),
    "overlap": ("", "communication overlap mode"),
    "cost_usd": ("USD", "what the objective uses; its meaning is the cost_basis code (see cost_basis)"),
    "usd_per_hour": ("USD/h", "rented designs: the whole cluster's price per hour (0 when owned)"),
    "cost_basis": ("", "code of what cost_usd means (see the cost_basis rows)"),
    "capex_usd": ("USD", "purchase price (0 when rented)"),
    "energy_usd_per_year": ("USD/year", "electricity per year (power x average draw x PUE x $/kWh)"),
    "power_kw": ("kW", "nameplate power"),
    "rack_units": ("RU", "rack units (0 when rented)"),
    "throughput_samples_per_s": ("samples/s", "predicted training throughput"),
    "throughput_low_samples_per_s": ("samples/s", "low end of the 80% range of the prediction"),
    "throughput_high_samples_per_s": ("samples/s", "high end of the 80% range of the prediction"),
    "usd_per_sample_per_s": ("USD per sample/s", "cost_usd / throughput"),
    "scaling_efficiency": ("fraction", "throughput / (GPUs x one GPU's throughput)"),
    "t_iter_s": ("s", "time per iteration"),
    "t_compute_s": ("s", "forward + backward + optimizer step"),
    "t_comm_s": ("s", "all communication per iteration"),
    "t_exposed_comm_s": ("s", "communication not hidden behind backward"),
    "bottleneck": ("", "what bounds the iteration"),
    "busiest_nic_bytes_per_iter": ("bytes", "bytes through the busiest NIC per iteration"),
    "time_to_train_h": ("h", "epochs x dataset size / throughput (empty without --epochs)"),
    "compute_source": ("", "measured on that GPU, or an estimate (scaled, published, roofline)"),
    "feasible": ("", "fits in memory and the precision is supported"),
}

_MONEY_WHOLE = '"$"#,##0'
_MONEY_CENTS = '"$"#,##0.00'
_FORMATS = {"USD": _MONEY_WHOLE, "USD/year": _MONEY_WHOLE, "USD/h": _MONEY_CENTS, "USD per sample/s": '"$"#,##0.0000',
            "samples/s": "#,##0.0", "kW": "#,##0.0", "RU": "#,##0", "count": "#,##0", "samples": "#,##0",
            "bytes": "#,##0", "s": "0.00000", "h": "#,##0.00", "fraction": "0.000"}


def _short_table(df: pd.DataFrame, codes: dict[str, str]) -> pd.DataFrame:
    """The table without the long per-row texts: cost_basis as its code, compute_basis left out; text cells
    that would start a spreadsheet formula quoted (`core.neutral.spreadsheet_frame`, OWASP rule)."""
    out = df.drop(columns=[c for c in ("compute_basis",) if c in df.columns])
    if "cost_basis" in out.columns:
        out = out.assign(cost_basis=out["cost_basis"].map(lambda s: codes.get(s, s)))
    return spreadsheet_frame(out)


def legend_rows(df: pd.DataFrame, inputs: list[tuple[str, str]], codes: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(kind, name, value, meaning) rows: inputs, columns with units, cost-basis codes, compute basis per GPU
    (each GPU once, in the order of its first row in `df`)."""
    per_gpu = []
    if "compute_basis" in df.columns:
        per_gpu = list(df.drop_duplicates("gpu")[["gpu", "compute_source", "compute_basis"]].itertuples(index=False))
    return legend_rows_for(list(_short_table(df, codes).columns), per_gpu, inputs, codes)


def legend_rows_for(columns: list[str], per_gpu: list[tuple[str, str, str]], inputs: list[tuple[str, str]],
                    codes: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """`legend_rows` from the table's (short) column names and (gpu, compute source, compute basis) per GPU,
    for a table written in pieces (export_stream.py) that is never one DataFrame."""
    rows = [("input", k, v, "") for k, v in inputs]
    for c in columns:
        unit, meaning = COLUMNS.get(c, ("", ""))
        rows.append(("column", c, unit, meaning))
    for text, code in codes.items():
        rows.append(("cost_basis", code, "", text))
    rows += [("compute_basis", gpu, source, basis) for gpu, source, basis in per_gpu]
    return rows


def _legend_csv(rows: list[tuple[str, str, str, str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("kind", "name", "value", "meaning"))
    w.writerows([[spreadsheet_cell(v) for v in r] for r in rows])
    return buf.getvalue()


def legend_path(out: str | Path) -> Path:
    p = Path(out)
    return p.with_name(f"{p.stem}.legend.csv")


_XLSX_TIME = "2000-01-01T00:00:00Z"


def _normalise_xlsx(book: bytes) -> bytes:
    """Same table, same bytes: openpyxl stamps the save time into docProps/core.xml and every zip
    entry; replace both with fixed values."""
    with zipfile.ZipFile(io.BytesIO(book)) as z:
        items = [(info, z.read(info.filename)) for info in z.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in items:
            if info.filename == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:)",
                              lambda m: m.group(1) + _XLSX_TIME.encode() + m.group(3), data)
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = info.external_attr
            z.writestr(fixed, data)
    return buf.getvalue()


def _write_xlsx(short: pd.DataFrame, about: list[tuple[str, str]], legend: list[tuple[str, str, str, str]],
                out: Any) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    wb = Workbook()
    ws = wb.active
    ws.title = "designs"
    bold = Font(bold=True)
    headers = []
    for c in short.columns:
        unit = COLUMNS.get(c, ("", ""))[0]
        headers.append(f"{c} [{unit}]" if unit else c)
    ws.append(headers)
    for cell in ws[1]:
        cell.font = bold
    for row in short.itertuples(index=False):
        ws.append([None if (isinstance(v, float) and v != v) else xlsx_cell(v.item() if hasattr(v, "item") else v)
                   for v in row])
    for j, c in enumerate(short.columns, 1):
        letter = get_column_letter(j)
        fmt = _FORMATS.get(COLUMNS.get(c, ("", ""))[0])
        if fmt:
            for (cell,) in ws.iter_rows(min_row=2, min_col=j, max_col=j):
                cell.number_format = fmt
        ws.column_dimensions[letter].width = min(max(len(headers[j - 1]), 8) + 2, 40)
    ws.freeze_panes = "B2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(headers))}{max(len(short) + 1, 1)}"

    wi = wb.create_sheet("inputs")
    wi.append(["input", "value"])
    for k, v in about:
        wi.append([xlsx_cell(k), xlsx_cell(v)])
    for cell in wi[1]:
        cell.font = bold
    wi.column_dimensions["A"].width = 22
    wi.column_dimensions["B"].width = 70

    wl = wb.create_sheet("legend")
    wl.append(["kind", "name", "value", "meaning"])
    for r in legend:
        wl.append([xlsx_cell(v) for v in r])
    for cell in wl[1]:
        cell.font = bold
    for letter, width in zip("ABCD", (14, 28, 18, 90)):
        wl.column_dimensions[letter].width = width
    wl.auto_filter.ref = f"A1:D{len(legend) + 1}"
    wb.save(out)


def export_table(df: pd.DataFrame, fmt: str, out: str | Path | None, inputs: Iterable[Any] = (), *,
                 about: list[tuple[str, str]] | None = None, codes: dict[str, str] | None = None) -> str | None:
    """Write the table as csv, xlsx or json; returns the text when `out` is None (csv/json only).

    `out` is written atomically and never over one of `inputs` (the files the command read).
    `about`: (name, value) pairs of what produced the table (model, budget, catalog, date, version);
    `codes`: cost-basis text -> short code (`CostBasis.short`)."""
    inputs = list(inputs)
    about = about or []
    codes = codes or {}
    if fmt == "json":
        text = df.to_json(orient="records", indent=1, double_precision=9)
        if out is None:
            return text
        write_text(out, text, "--out", inputs)
        return None
    if fmt not in ("csv", "xlsx"):
        raise InputError(f"unknown format '{fmt}' (choose from csv, xlsx, json)")
    short = _short_table(df, codes)
    legend = legend_rows(df, about, codes)
    if fmt == "csv":
        text = short.to_csv(index=False, float_format=plain_number)
        if out is None:
            return text
        leg = legend_path(out)
        output_path(leg, "--out (its legend file)", inputs + [out])
        write_text(out, text, "--out", inputs)
        write_text(leg, _legend_csv(legend), "--out (its legend file)", inputs + [out])
        return None
    if out is None:
        raise InputError("--format xlsx needs --out FILE.xlsx")
    if Path(out).suffix.lower() != ".xlsx":
        raise InputError(f"--format xlsx writes an Excel workbook: --out must end in .xlsx, got '{Path(out).name}'")
    output_path(out, "--out", inputs)
    try:
        import openpyxl  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency
        raise InputError("xlsx export needs openpyxl (pip install openpyxl)") from None
    buf = io.BytesIO()
    _write_xlsx(short, about, legend, buf)
    write_bytes_atomic(out, _normalise_xlsx(buf.getvalue()), "--out", inputs)
    return None


def inputs_of(ev: Any, *, budget: float | None, objective: str, generated: str, version: str,
              extra: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(name, value) rows describing an evaluation for the `inputs` sheet / legend."""
    cat = ev.catalog
    rows = [
        ("model", str(ev.model)),
        ("budget_usd", "none" if budget is None else f"{budget:,.2f}"),
        ("objective", objective),
        ("catalog", f"{cat.catalog.name} ({cat.catalog.kind})"),
        ("catalog_file", str(cat.path or "built-in")),
        ("catalog_date", str(cat.catalog.date)),
        ("precision", str(ev.precision)),
        ("batch_per_gpu", str(ev.batch_per_gpu)),
        ("overlap", str(ev.overlap)),
        ("cost_basis_owned", ev.basis.label(False)),
        ("cost_basis_rented", ev.basis.label(True)),
        ("samples_to_train", "none" if ev.basis.samples is None else f"{ev.basis.samples:,.0f}"),
        ("hours", "none" if ev.basis.hours is None else f"{ev.basis.hours:g}"),
        ("tco_years", f"{ev.basis.tco_years:g}"),
        ("date", generated),
        ("costopt_version", version),
    ]
    return rows + list(extra or [])


def basis_codes(basis: Any) -> dict[str, str]:
    """Cost-basis text -> short code, for owned and rented designs under `basis` (a `CostBasis`)."""
    return {basis.label(False): basis.short(False), basis.label(True): basis.short(True)}


def today() -> str:
    """The date an export was made (UTC; SOURCE_DATE_EPOCH when set, for reproducible builds)."""
    import datetime as dt
    import os

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    now = dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc) if epoch.isdigit() else dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y-%m-%d")


def spreadsheet_about(ev: Any, budget: float | None, objective: str) -> dict[str, Any]:
    """`about` rows and `codes` for `export_table` from an evaluation (see `inputs_of`)."""
    from costopt.core.version import __version__

    return {"about": inputs_of(ev, budget=budget, objective=objective, generated=today(), version=__version__),
            "codes": basis_codes(ev.basis)}
