"""`costopt validate` and `costopt calibrate`: prediction accuracy against measured throughput."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from costopt.measure.calibrate import BOUNDS, DEFAULT_FIT, calibrate as run_calibrate
from costopt.core.checks import non_negative, output_path, write_text
from costopt.core.checks import force_overwrite
from costopt.cli.common import FORCE, _console, _fail, _json_dump, out_option, plain_table_stream

from costopt.core.errors import CostoptError, InputError

app = typer.Typer()


class ValFmt(str, Enum):
    table = "table"
    json = "json"


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def _summary_table(title: str, groups: dict) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("group", "n", "median |err| %", "p90 |err| %", "max |err| %"):
        t.add_column(col, justify="left" if col == "group" else "right")
    for name, s in groups.items():
        t.add_row(name, str(s["n"]), _fmt(s["median_abs_error_pct"]), _fmt(s["p90_abs_error_pct"]), _fmt(s["max_abs_error_pct"]))
    return t


def _validate_cells(frame) -> list[list[str]]:
    """The per-row table's cells, column by column (no per-row pandas access)."""
    col = {k: frame[k].tolist() for k in ("line", "source", "model", "gpu", "gpus_per_node", "nodes", "batch_per_gpu",
                                          "strategy", "reduce_on", "num_ps", "stack", "nic_gbps", "transport",
                                          "measured_samples_per_s", "predicted_samples_per_s",
                                          "predicted_low_samples_per_s", "predicted_high_samples_per_s", "error_pct")}
    strat = [s + ("/cpu" if ro == "cpu" else "") + (f" P={p}" if p else "")
             for s, ro, p in zip(col["strategy"], col["reduce_on"], col["num_ps"])]
    nic = [f"{g}G {t}" if g else "-" for g, t in zip(col["nic_gbps"], col["transport"])]
    return [list(r) for r in zip(
        map(str, col["line"]), col["source"], col["model"], col["gpu"],
        [f"{g}x{m}" for g, m in zip(col["gpus_per_node"], col["nodes"])], map(str, col["batch_per_gpu"]), strat,
        col["stack"], nic, [f"{float(v):,.1f}" for v in col["measured_samples_per_s"]],
        [f"{v:,.1f}" for v in col["predicted_samples_per_s"]],
        [f"{lo:,.0f}-{hi:,.0f}" for lo, hi in zip(col["predicted_low_samples_per_s"], col["predicted_high_samples_per_s"])],
        [f"{v:+.1f}" for v in col["error_pct"]])]


@app.command()
def validate(
    file: str = typer.Argument(..., help="Measurement CSV, or a shipped dataset name (e.g. 'published')."),
    system: Optional[Path] = typer.Option(None, help="System parameters TOML (from `costopt calibrate`)."),
    catalog: Optional[Path] = typer.Option(None, help="Base catalog TOML (default: reference-2026); the validation additions are merged in."),
    fmt: ValFmt = typer.Option(ValFmt.table, "--format", help="table | json"),
    max_median_error: Optional[float] = typer.Option(None, help="Exit 1 when the median absolute error (%) is above this."),
    stack: str = typer.Option("auto", help="Predict every row as if it ran this stack: auto (each row's `stack` "
                              "column, else inferred) | nccl | mpi | grpc | gloo."),
) -> None:
    """Predicted vs measured throughput per row, with error summaries per source, strategy and stack. A file in the
    large-model format (`llm_training`, the shipped one; `llm_moe_training`, its mixture-of-experts rows) is predicted by
    the large-model path."""
    from costopt.measure.llm_validate import SHIPPED_LLM_DATASETS, is_llm_csv

    if file in SHIPPED_LLM_DATASETS or is_llm_csv(file):
        from costopt.cli.llm import run_validate as run_llm_validate

        run_llm_validate(file, fmt.value, max_median_error)
        return
    # rows are read, predicted and printed a chunk at a time (measure/validate.ValidationStream): a file of
    # 1,000,000 rows stays under 1 GB (benchmarks/bench_validate_stream.py). Nothing is printed before the
    # last row is checked: JSON is spooled to a temporary file, the table kept as one string per column.
    import tempfile

    from costopt.measure.validate import ValidationStream

    try:
        non_negative("--max-median-error", max_median_error)
        stream = ValidationStream(file, system=system, catalog=catalog, stack=stack)
        if fmt is ValFmt.json:  # as _json_dump(res.to_json_dict()), column by column
            from costopt.core.files import write_json_with_columns
            from costopt.measure.validate import ValidationResult

            spool = tempfile.TemporaryFile("w+", encoding="utf-8")
            write_json_with_columns(spool, {"file": str(stream.path)}, "rows",
                                    (ValidationResult(stream.path, df, stream.header, {}).json_columns()
                                     for df in stream.frames()), lambda: stream.summaries)
        else:
            c = _console()
            headers = ["line", "source", "model", "gpu", "GxM", "batch", "strategy", "stack", "nic", "measured",
                       "predicted", "80% range", "err %"]
            right = [h in ("line", "batch", "measured", "predicted", "80% range", "err %") for h in headers]
            title = f"costopt validate: {stream.path}"
            rows = plain_table_stream(c, title, headers, right, (_validate_cells(df) for df in stream.frames()))
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    s = stream.summaries
    med = s["summary"]["median_abs_error_pct"]
    if fmt is ValFmt.json:
        with spool:
            spool.seek(0)
            out = sys.stdout
            while True:
                block = spool.read(1 << 20)
                if not block:
                    break
                out.write(block)
            out.write("\n")
            out.flush()
    else:
        if rows is not None:  # a table plain_table_stream declines: rich lays it out
            t = Table(title=title, title_justify="left")
            for col, r in zip(headers, right):
                t.add_column(col, justify="right" if r else "left")
            for row in rows:
                t.add_row(*row)
            c.print(t)
        c.print(_summary_table("Absolute error by source", s["by_source"]))
        c.print(_summary_table("Absolute error by strategy", s["by_strategy"]))
        c.print(_summary_table("Absolute error by stack", s["by_stack"]))
        c.print(_summary_table("Overall", {"all rows": s["summary"], "multi-node rows": s["multi_node"]}))
        c.print(f"Rows inside their 80% range: {s['interval']['inside_share']:.0%} of {s['interval']['n']}")
    if max_median_error is not None and med is not None and med > max_median_error:
        typer.echo(f"median absolute error {med:.2f}% is above --max-median-error {max_median_error:g}%", err=True)
        raise typer.Exit(1)


@contextmanager
def _fit_progress():
    """A progress bar on stderr, one step per fit (all rows, then each leave-one-source-out fold), when stderr
    is a terminal; else nothing (logs and pipes stay clean). Yields the `progress(done, total, label)`
    callback of `calibrate`."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("calibrate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("reading rows", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label if done else f"fitting: {label}")

        yield progress


@app.command()
def calibrate(
    file: str = typer.Argument(..., help="Measurement CSV, or a shipped dataset name (e.g. 'published')."),
    output: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the fitted system TOML here."),
    output_alias: Optional[Path] = typer.Option(None, "--output", hidden=True, help="Old spelling of --out."),
    system: Optional[Path] = typer.Option(None, help="Starting system parameters TOML (default: built-in defaults)."),
    catalog: Optional[Path] = typer.Option(None, help="Base catalog TOML (as for validate)."),
    fit_param: Optional[list[str]] = typer.Option(None, "--fit", help=f"Parameter to fit (repeatable; default: {', '.join(DEFAULT_FIT)}; any of {', '.join(BOUNDS)})."),
    loso: bool = typer.Option(True, help="Also report the leave-one-source-out error."),
    fmt: ValFmt = typer.Option(ValFmt.table, "--format", help="table | json"),
    force: bool = FORCE,
) -> None:
    """Fit system parameters to measured rows (bounded least squares on log error)."""
    force_overwrite(force)  # --force: a read-only --out may be replaced
    try:
        names = tuple(fit_param) if fit_param else DEFAULT_FIT
        bad = [n for n in names if n not in BOUNDS]
        if bad:
            raise InputError(f"cannot fit {', '.join(bad)} (fittable: {', '.join(BOUNDS)})")
        inputs = [file, system, catalog]
        output = out_option(output, output_alias)
        if output is not None:
            output_path(output, "--out", inputs)  # before the fit, which takes a while
        with _fit_progress() as progress:
            res = run_calibrate(file, system=system, catalog=catalog, names=names, with_loso=loso, progress=progress)
        if output is not None:
            write_text(output, res.toml(), "--out", inputs)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is ValFmt.json:
        typer.echo(_json_dump({"file": str(res.path), "parameters": res.fit.table(), "rms_log_error": res.fit.rms_log_error,
                               **{k: {"summary": v["summary"], "multi_node": v["multi_node"], "by_source": v["by_source"]}
                                  for k, v in res.summaries.items()}, "output": str(output) if output else None}))
        return
    c = _console()
    t = Table(title=f"costopt calibrate: {res.path} ({res.fit.n_rows} rows)", title_justify="left")
    for col in ("parameter", "start", "fitted", "± 1 sd", "note"):
        t.add_column(col)
    for r in res.fit.table():
        t.add_row(r["parameter"], f"{r['start']:.4g}", f"{r['fitted']:.4g}", "-" if r["sigma"] is None else f"{r['sigma']:.3g}", r["note"])
    c.print(t)
    rows = {}
    for k, v in res.summaries.items():
        rows[f"{k}: all"] = v["summary"]
        rows[f"{k}: multi-node"] = v["multi_node"]
    c.print(_summary_table("Absolute error (uncalibrated defaults, fitted on all rows, leave-one-source-out)", rows))
    if "loso" in res.summaries:
        c.print(_summary_table("Leave-one-source-out error by source", res.summaries["loso"]["by_source"]))
    if output is not None:
        c.print(f"wrote {output}")
