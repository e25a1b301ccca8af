"""`costopt sweep FILE`: a grid of scenarios through the solve engine (costopt/search/sweep.py).

Mounted by `costopt/cli/main.py`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from costopt.cli.common import FORCE, _fail
from costopt.core.checks import force_overwrite, output_path
from costopt.core.errors import CostoptError, InputError

app = typer.Typer()


class SweepFmt(str, Enum):
    csv = "csv"
    json = "json"


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep file (TOML): [sweep] models, budgets_usd, catalogs; [[limits]]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Table file (stdout when omitted)."),
    fmt: SweepFmt = typer.Option(SweepFmt.csv, "--format", help="csv | json (one object per scenario)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Also write a PNG: throughput against budget."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Local worker processes (default: the CPUs; 1: "
                                          "in this process)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask distributed scheduler address (e.g. "
                                            "tcp://10.0.0.5:8786): run the scenarios on that cluster."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    force: bool = FORCE,
) -> None:
    """Solve every scenario of a grid (models x budgets x catalogs x limits) and write one table."""
    from costopt.search import sweep as S

    force_overwrite(force)
    json_out = fmt is SweepFmt.json and out is None
    try:
        inputs = [file]
        if out is not None:
            output_path(out, "--out", inputs)
        if plot is not None:
            output_path(plot, "--plot", inputs + ([out] if out else []))
            if out is not None and Path(plot).resolve() == Path(out).resolve():
                raise InputError("--plot and --out name the same file", field="plot")
        spec = S.load_sweep(file)
        result = S.run_sweep(spec, workers=workers, scheduler=scheduler, progress=progress)
        if out is None:
            import sys

            df = S.table(result)
            text = df.to_csv(index=False, lineterminator="\n") if fmt is SweepFmt.csv else None
            if text is None:
                import json

                from costopt.core.files import json_safe

                text = json.dumps([json_safe(r) for r in result.rows], indent=1) + "\n"
            sys.stdout.write(text)
        else:
            S.write_table(result, out, fmt.value, inputs)
        if plot is not None:
            S.write_plot(result, plot, inputs)
        ok = sum(r["status"] == "ok" for r in result.rows)
        typer.echo(f"sweep: {len(result.rows)} scenarios ({ok} solved, {len(result.rows) - ok} infeasible) on "
                   f"{result.workers} {'Dask worker' if result.engine == 'dask' else 'process'}"
                   f"{'es' if result.engine != 'dask' and result.workers != 1 else ('s' if result.workers != 1 else '')}"
                   f" in {result.seconds:.1f} s", err=True)
    except CostoptError as exc:
        _fail(exc, "json" if json_out else "table")
