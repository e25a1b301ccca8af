"""`export` (and `report --all`) in bounded memory: the ranked table of every design within the budget,
written a block of rows at a time, whatever the catalog size (issue 13).

The table is ranked over the whole design space (objective value, then cost, then the deterministic
design order), but the space is evaluated a piece at a time (`api.evaluate_bounded`). So:

1. each piece's table rows (`purchasing.table_rows`) are sorted by (objective value, cost, design order
   digits) and formatted as CSV lines or JSON records, `FORMAT_ROWS` at a time, into a run on disk
   (`sorted_runs.SortedRuns`, beside the output file);
2. the runs are merged in that order and written with their rank to a temporary file renamed over the
   output at the end (`checks.atomic_output`), or to stdout.

Memory is one evaluated piece (api.CHUNK_DESIGNS designs), one block of formatted rows, and one merge
step; never the table. The bytes are those of the whole table formatted at once (pandas' CSV and JSON
writers format each value on its own): `tests/test_export_stream.py` checks it.

xlsx is not streamed: openpyxl holds every cell of a workbook as an object (about 15 kB per design row
measured on this table), so a workbook is refused above `XLSX_MAX_ROWS` rows, with the CSV alternative.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from costopt.purchase import purchasing as P
from costopt.search.api import Evaluation, choose
from costopt.core.checks import atomic_output, output_path
from costopt.core.interrupts import signals_held
from costopt.core.errors import InputError
from costopt.purchase.export import _legend_csv, _short_table, basis_codes, export_table, legend_path, legend_rows_for, spreadsheet_about
from costopt.search.solver import objective_values
from costopt.core.sorted_runs import SortedRuns
from costopt.core.units import plain_number

FORMAT_ROWS = 20_000  # rows formatted by pandas at once (a few tens of MB of objects)
MERGE_ROWS = 200_000  # rows loaded over all runs per merge step (sorted_runs.SortedRuns.rows_per_step)
# Largest xlsx table: openpyxl keeps about 15 kB per row in memory (measured: 13,362 rows, 0.33 GB peak),
# so 100,000 rows stay within the 2 GB of issue 13; larger tables go to CSV, which is streamed.
XLSX_MAX_ROWS = 100_000

# the key of a table row: objective value, cost, then the nine digits of the design order (ids, not positions)
_DIGITS = tuple(f"d{i}" for i in range(9))
_KEY = [("objective", "<f8"), ("cost", "<f8")] + [(d, "<i8") for d in _DIGITS] + [("gpu", "<i8")]
_ORDER = ("objective", "cost") + _DIGITS


def _keys(ev: Evaluation, idx: np.ndarray, objective: str) -> np.ndarray:
    c, t, s = ev.costs, ev.timing, ev.space
    keys = np.zeros(len(idx), dtype=_KEY)
    cost = c.cost_usd[idx]
    keys["objective"] = objective_values(objective, cost, t.throughput_samples_per_s[idx])
    keys["cost"] = cost
    for name, digit in zip(_DIGITS, s.order_digits()):
        keys[name] = digit[idx]
    keys["gpu"] = s.gpu_idx[idx]
    return keys


def _records(ev: Evaluation, idx: np.ndarray, fmt: str, codes: dict[str, str]) -> list[bytes]:
    """One record per row, without its rank: a CSV line (no newline) or the inside of a JSON record."""
    df = P.table_frame(ev, idx)
    if fmt == "csv":
        lines = _short_table(df, codes).to_csv(index=False, header=False, float_format=plain_number,
                                                lineterminator="\n").encode("utf-8").split(b"\n")[:-1]
        if len(lines) != len(idx):  # a field with a line break (quoted): format row by row
            lines = [_short_table(df.iloc[[i]], codes).to_csv(index=False, header=False, float_format=plain_number,
                                                              lineterminator="\n").encode("utf-8")[:-1]
                     for i in range(len(idx))]
        return lines
    text = df.to_json(orient="records", indent=1, double_precision=9).encode("utf-8")
    if not len(idx):
        return []
    # "[\n {\n  ...\n },\n {\n  ...\n }\n]": a raw line break is never inside a JSON string
    return text[len(b"[\n {\n"):-len(b"\n }\n]")].split(b"\n },\n {\n")


def _write_piece(runs: SortedRuns, ev: Evaluation, budget: float | None, objective: str, part_filter,
                 fmt: str, codes: dict[str, str]) -> int:
    """The piece's table rows, sorted, as one run; returns their count."""
    idx = P.table_rows(ev, budget, part_filter)
    keys = _keys(ev, idx, objective)
    order = runs.sort(keys)
    idx, keys = idx[order], keys[order]

    def blocks():
        for a in range(0, len(idx), FORMAT_ROWS):
            yield keys[a:a + FORMAT_ROWS], _records(ev, idx[a:a + FORMAT_ROWS], fmt, codes)

    runs.write_run(blocks())
    return len(idx)


def _columns(ev: Evaluation, fmt: str, codes: dict[str, str]) -> list[str]:
    df = P.table_frame(ev, np.zeros(0, dtype=np.int64))
    df.insert(0, "rank", np.zeros(0, dtype=np.int64))
    return list(df.columns if fmt == "json" else _short_table(df, codes).columns)


def _write_rows(fh: BinaryIO, runs: SortedRuns, fmt: str, columns: list[str]) -> list[int]:
    """The merged runs with their ranks; returns the GPU (index) of each first appearance, in rank order."""
    if fmt == "csv":
        fh.write((",".join(columns) + "\n").encode("utf-8"))
    else:
        fh.write(b"[\n")
    rank = 0
    seen: dict[int, None] = {}
    for keys, records in runs.merged():
        gpus, first = np.unique(keys["gpu"], return_index=True)
        for g in gpus[np.argsort(first)].tolist():
            seen.setdefault(g, None)
        ranks = range(rank + 1, rank + 1 + len(records))
        if fmt == "csv":
            fh.write(b"".join(b"%d,%s\n" % (r, rec) for r, rec in zip(ranks, records)))
        else:
            fh.write((b",\n" if rank else b"") + b",\n".join(b' {\n  "rank":%d,\n%s\n }' % (r, rec)
                                                              for r, rec in zip(ranks, records)))
        rank += len(records)
    if fmt == "json":
        fh.write(b"\n]")
    return list(seen)


def export_ranked(catalog: Any, model: str, budget: float, opts: P.Options, fmt: str, out: str | Path | None,
                  inputs: list[Any], *, stdout: BinaryIO | None = None, chunk_designs: int | None = None) -> None:
    """Write the ranked table of `model` on `catalog` within `budget` (`purchasing.ranked_table`, ranked by
    `opts.objective`) as csv (with its legend file when `out` is given), json or xlsx to `out`, or csv/json
    to `stdout` when `out` is None, in bounded memory (module docstring). `out` is written atomically and
    never over one of `inputs`. Nothing within the budget: `choose` raises the InfeasibleError of `solve`
    (exit 1, with the nearest design). `chunk_designs`: designs evaluated at once (None: api.CHUNK_DESIGNS)."""
    if fmt not in ("csv", "xlsx", "json"):
        raise InputError(f"unknown format '{fmt}' (choose from csv, xlsx, json)", field="format")
    cat = P._as_catalog(catalog)
    if fmt == "xlsx":
        _export_xlsx(cat, model, budget, opts, out, inputs, chunk_designs)
        return
    if out is not None:
        output_path(out, "--out", inputs)
        if fmt == "csv":
            output_path(legend_path(out), "--out (its legend file)", inputs + [out])
    try:
        _stream(cat, model, budget, opts, fmt, out, inputs, stdout, chunk_designs)
    except OSError as exc:  # the output or the runs beside it: a folder we cannot write in, a full disk
        where = "stdout" if out is None else f"--out {out}"
        raise InputError(f"{where}: cannot write: {exc.strerror or exc}", field="out") from None


def _stream(cat, model: str, budget: float, opts: P.Options, fmt: str, out, inputs: list[Any],
            stdout: BinaryIO | None, chunk_designs: int | None) -> None:
    objective = opts.objective
    pf = opts.part_filter(cat)
    with ExitStack() as stack:
        with signals_held():  # the folder and its clean-up in one step (a SIGTERM between them left it behind)
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix=".costopt-export-",
                                                                  dir=None if out is None else Path(out).parent))
        runs = SortedRuns(tmp, _KEY, _ORDER, rows_per_step=MERGE_ROWS)
        codes: dict[str, str] = {}

        def keep(piece: Evaluation) -> np.ndarray:
            codes.update(basis_codes(piece.basis))
            _write_piece(runs, piece, budget, objective, pf, fmt, codes)
            return np.zeros(0, dtype=np.int64)  # the rows are on disk: keep none of them in memory

        ev, counts = P.evaluate_catalog_bounded(cat, model, budget, opts, keep=keep, chunk_designs=chunk_designs)
        codes.update(basis_codes(ev.basis))
        if counts is None:  # the whole space in one piece: `keep` was not called
            _write_piece(runs, ev, budget, objective, pf, fmt, codes)
        if not runs.rows:  # nothing within the budget: exit 1 with the nearest design, as solve does
            choose(ev, budget=budget, objective=objective, top=1, counts=counts, part_filter=pf)
        about = spreadsheet_about(ev, budget, objective)
        columns = _columns(ev, fmt, codes)
        if out is None:
            _write_rows(stdout, runs, fmt, columns)
            if fmt == "json":
                stdout.write(b"\n")  # as `typer.echo` ends the text of the whole table
            stdout.flush()
            return
        with atomic_output(out, "--out", inputs) as fh:
            first_gpu = _write_rows(fh, runs, fmt, columns)
    if fmt == "csv":
        per_gpu = [(ev.space.gpus[g].id, ev.compute.source[g], ev.compute.basis[g]) for g in first_gpu]
        legend = legend_rows_for(columns, per_gpu, about["about"], about["codes"])
        with atomic_output(legend_path(out), "--out (its legend file)", inputs + [out]) as fh:
            fh.write(_legend_csv(legend).encode("utf-8"))


def _export_xlsx(cat, model: str, budget: float, opts: P.Options, out, inputs: list[Any],
                 chunk_designs: int | None) -> None:
    if out is None:
        raise InputError("--format xlsx needs --out FILE.xlsx", field="out")
    if Path(out).suffix.lower() != ".xlsx":
        raise InputError(f"--format xlsx writes an Excel workbook: --out must end in .xlsx, got '{Path(out).name}'",
                         field="out")
    output_path(out, "--out", inputs)
    pf = opts.part_filter(cat)
    rows = [0]

    def too_many(n: int) -> InputError:
        return InputError(f"--format xlsx: the table has {n:,} designs or more, over the {XLSX_MAX_ROWS:,} an xlsx "
                          f"export holds (openpyxl keeps every cell in memory); use --format csv, written in pieces "
                          f"whatever the size, or narrow the search (--budget, --max-nodes, --strategy)", field="format")

    def keep(piece: Evaluation) -> np.ndarray:
        idx = P.table_rows(piece, budget, pf)
        rows[0] += len(idx)
        if rows[0] > XLSX_MAX_ROWS:  # before the kept rows outgrow memory
            raise too_many(rows[0])
        return idx

    ev, counts = P.evaluate_catalog_bounded(cat, model, budget, opts, keep=keep, chunk_designs=chunk_designs)
    n = len(P.table_rows(ev, budget, pf))
    if n > XLSX_MAX_ROWS:
        raise too_many(n)
    table = P.ranked_table(ev, budget, opts.objective, part_filter=pf)
    if table.empty:  # nothing within the budget: exit 1 with the nearest design, as solve does
        choose(ev, budget=budget, objective=opts.objective, top=1, counts=counts, part_filter=pf)
    export_table(table, "xlsx", out, inputs, **spreadsheet_about(ev, budget, opts.objective))

