"""Helpers shared by the command modules: output formats, console, money formatting, the design
table and the one-line error exit."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ..errors import CostoptError, InfeasibleError
from ..files import json_safe


class Fmt(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class PredictFmt(str, Enum):
    table = "table"
    json = "json"


def _console() -> Console:
    # Wide enough for the ranked table when piped; a terminal keeps its own width.
    return Console(width=None if sys.stdout.isatty() else 200, highlight=False)


def _json_dump(obj: Any) -> str:
    return json.dumps(json_safe(obj), indent=2, sort_keys=False)


def _fmt_money(v: float) -> str:
    return f"${v:,.0f}"


def _fmt_ratio(v: float) -> str:
    return f"{v:,.2f}" if v >= 1 else f"{v:.3g}"


def _design_table(rows: list[dict], title: str) -> Table:
    t = Table(title=title, title_justify="left", show_lines=False)
    cols = [("#", "right"), ("gpu", "left"), ("gpus", "right"), ("nic", "left"), ("strategy", "left"),
            ("cost", "right"), ("samples/s", "right"), ("80% range", "right"), ("$/(sample/s)", "right"), ("scal.eff", "right"),
            ("t_iter ms", "right"), ("exposed comm ms", "right"), ("bottleneck", "left"), ("compute", "left")]
    for name, just in cols:
        t.add_column(name, justify=just)
    for i, r in enumerate(rows, 1):
        strat = r["strategy"] + ("" if r["reduce_on"] == "gpu" else "/cpu") + (f" {r['stack']}" if r.get("stack") else "")
        lo, hi = r.get("throughput_low_samples_per_s"), r.get("throughput_high_samples_per_s")
        rng = "-" if lo is None or hi is None else f"{lo:,.0f}-{hi:,.0f}" + (" ≈best" if r.get("near_tie") else "")
        t.add_row(
            str(r.get("rank", i)), r["gpu"], f"{r['gpus_per_node']}x{r['nodes']}={r['total_gpus']}",
            r["nic"] if r.get("nics_per_node", 1) <= 1 else f"{r['nics_per_node']}x {r['nic']}", strat,
            _fmt_money(r["cost_usd"]) + ("/h" if r.get("cost_basis", "").startswith("USD per hour") else ""),
            f"{r['throughput_samples_per_s']:,.1f}", rng, _fmt_ratio(r["usd_per_sample_per_s"]),
            f"{r['scaling_efficiency']:.2f}", f"{r['t_iter_s'] * 1e3:,.1f}", f"{r['t_exposed_comm_s'] * 1e3:,.1f}",
            r["bottleneck"], r["compute_source"],
        )
    return t


def one_line(message: str) -> str:
    """A message as one line: newlines and other control characters (from a user's id or file name)
    are shown escaped instead of breaking the line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in message)


def _fail(exc: CostoptError, fmt: str = "table", *, show_nearest: bool = True) -> None:
    """One line on stderr (`error: ...` or `infeasible: ...`) and the exit code; with `--format json`
    stdout carries the same as JSON, so it always parses."""
    msg = one_line(str(exc))
    if isinstance(exc, InfeasibleError):
        if fmt == "json":
            typer.echo(_json_dump({"error": msg, "reason": exc.reason, "nearest": exc.nearest}))
        else:
            typer.echo(f"infeasible: {msg}", err=True)  # one line, however long (no console wrapping)
            if exc.nearest and show_nearest:
                c = _console()
                c.print(_design_table([exc.nearest], "Nearest feasible design"))
        raise typer.Exit(exc.exit_code)
    typer.echo(f"error: {msg}", err=True)
    if fmt == "json":
        typer.echo(_json_dump({"error": msg, "reason": "input", "exit_code": exc.exit_code}))
    raise typer.Exit(exc.exit_code)
