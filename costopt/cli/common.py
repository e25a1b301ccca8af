"""Helpers shared by the command modules: output formats, console, money formatting, the design
table and the one-line error exit. rich is imported only where something is rendered with it (a
`--format json` or `csv` run never imports it)."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from costopt.core.errors import CostoptError, InfeasibleError
from costopt.core.files import json_safe
from costopt.core.units import format_usd

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table


# `--force` of the commands that write --out: a read-only output file may be replaced (core/checks.py)
FORCE = typer.Option(False, "--force", help="Replace --out even if it is read-only (a FIFO, device or other "
                     "special file is never replaced).")


class Fmt(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


class PredictFmt(str, Enum):
    table = "table"
    json = "json"


def _neutral(obj: Any) -> Any:
    """A renderable with the text that came from files (catalog names, sources, ...) neutralised for a terminal
    (`core.neutral.terminal_text`): a str, or a rich Table's title, caption, headers and str cells (in place)."""
    from costopt.core.neutral import terminal_text

    if isinstance(obj, str):
        return terminal_text(obj)
    if type(obj).__name__ == "Table" and hasattr(obj, "columns"):
        for attr in ("title", "caption"):
            if isinstance(getattr(obj, attr, None), str):
                setattr(obj, attr, terminal_text(getattr(obj, attr)))
        for col in obj.columns:
            if isinstance(col.header, str):
                col.header = terminal_text(col.header)
            col._cells = [terminal_text(c) if isinstance(c, str) else c for c in col._cells]
    return obj


def _console() -> "Console":
    """The console every command prints with: tables laid out so that no number or id is cut
    (cli/tables.py); rich markup and emoji codes off (a `[red]` or `:x:` in a catalog's text is shown as
    written), and control characters / bidi overrides removed from what it prints (an ESC in a catalog
    name cannot reach the terminal as an escape sequence)."""
    from costopt.cli.tables import FitConsole

    class SafeConsole(FitConsole):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(_neutral(o) for o in objects), **kwargs)

    # A terminal keeps its own width and COLUMNS is honoured; piped output gets 200 columns. Tables are laid
    # out so that no number or id is cut at that width (cli/tables.py: fixed widths, or split into parts).
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200
    return SafeConsole(width=width, highlight=False, markup=False, emoji=False)


_PLAIN = re.compile(r"[ -Z\\\]-~]*")  # printable ASCII without "[" (rich markup)
_EMOJI = re.compile(r":(\S*?):")  # what rich would try as an emoji code


def plain_table_text(console: Console, title: str, headers: list[str], right: list[bool],
                     rows: list[list[str]]) -> str | None:
    """The text rich's `Table(title=title, title_justify="left")` with these columns prints on `console`, byte
    for byte, built with string joins: a table of 100,000 rows in a second instead of minutes. None when rich
    would do more than pad cells: a terminal or colour (styles), a non-UTF-8 console (ASCII boxes), a cell
    with markup, an emoji code or a character outside printable ASCII, or a table wider than the console
    (wrapping). Then the caller lets rich render it.

    Rich's layout in the case kept: column width w_j = 2 + the longest of its header and cells (one space of
    padding each side); heavy-head box; the title left-justified and padded to the table's width
    Σ w_j + columns + 1."""
    if console.is_terminal or console.color_system is not None or not console.encoding.lower().startswith("utf"):
        return None
    texts = [title, *headers]
    if not all(_PLAIN.fullmatch(t) for t in texts) or any(_EMOJI.search(t) for t in texts):
        return None
    cols = list(zip(*rows)) if rows else [()] * len(headers)
    widths = []
    for h, col in zip(headers, cols):
        blob = "\n".join(col)
        if not _PLAIN.fullmatch(blob.replace("\n", " ")) or _EMOJI.search(blob):
            return None
        widths.append(2 + max([len(h), *map(len, col)]))
    table_width = sum(widths) + len(widths) + 1
    if table_width > console.width or len(title) > table_width:
        return None

    def line(cells, left: str, mid: str, end: str) -> str:
        return left + mid.join(" " + (c.rjust(w - 2) if r else c.ljust(w - 2)) + " "
                               for c, w, r in zip(cells, widths, right)) + end

    out = [title.ljust(table_width),
           "┏" + "┳".join("━" * w for w in widths) + "┓",
           line(headers, "┃", "┃", "┃"),
           "┡" + "╇".join("━" * w for w in widths) + "┩"]
    pads = [(w - 2, r) for w, r in zip(widths, right)]
    body_cols = [[(" " + c.rjust(w) + " ") if r else (" " + c.ljust(w) + " ") for c in col]
                 for col, (w, r) in zip(cols, pads)]
    out += ["│" + "│".join(cells) + "│" for cells in zip(*body_cols)]
    out.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "\n".join(out) + "\n"


def plain_table_stream(console: Console, title: str, headers: list[str], right: list[bool],
                       chunks) -> list[list[str]] | None:
    """`plain_table_text` over rows that come in chunks (`chunks`: lists of rows), for tables too long to
    hold as lists: each chunk's cells are kept as one string per column (about the text's own size), the
    column widths as they grow, and the table is written to `console.file` once the last chunk is in, the
    same bytes `plain_table_text` gives for all the rows. Returns None when it wrote the table; else every
    row (a case `plain_table_text` declines: rich renders it). Nothing is written before the last chunk,
    so an error raised while the chunks are made leaves no partial table."""
    simple = not (console.is_terminal or console.color_system is not None or not console.encoding.lower().startswith("utf"))
    texts = [title, *headers]
    simple = simple and all(_PLAIN.fullmatch(t) for t in texts) and not any(_EMOJI.search(t) for t in texts)
    widths = [2 + len(h) for h in headers]
    blobs: list[list[str]] = []  # per chunk, one "\n"-joined string per column (while `simple`)
    rows: list[list[str]] = []  # every row, once not `simple`
    for cells in chunks:
        if not cells:
            continue
        if simple:
            cols = ["\n".join(col) for col in zip(*cells)]
            if sum(c.count("\n") for c in cols) != len(cols) * (len(cells) - 1) or not all(
                    _PLAIN.fullmatch(c.replace("\n", " ")) and not _EMOJI.search(c) for c in cols):
                simple = False
            else:
                blobs.append(cols)
                widths = [max(w, 2 + max(map(len, c.split("\n")))) for w, c in zip(widths, cols)]
                continue
        if blobs:  # no longer simple: back to rows for rich
            for cols in blobs:
                rows += [list(r) for r in zip(*(c.split("\n") for c in cols))]
            blobs = []
        rows += [list(r) for r in cells]
    table_width = sum(widths) + len(widths) + 1
    if not simple or table_width > console.width or len(title) > table_width:
        for cols in blobs:
            rows += [list(r) for r in zip(*(c.split("\n") for c in cols))]
        return rows

    def line(cells, left: str, mid: str, end: str) -> str:
        return left + mid.join(" " + (c.rjust(w - 2) if r else c.ljust(w - 2)) + " "
                               for c, w, r in zip(cells, widths, right)) + end

    f = console.file
    f.write("\n".join([title.ljust(table_width), "┏" + "┳".join("━" * w for w in widths) + "┓",
                       line(headers, "┃", "┃", "┃"), "┡" + "╇".join("━" * w for w in widths) + "┩"]) + "\n")
    pads = [(w - 2, r) for w, r in zip(widths, right)]
    for cols in blobs:
        body = [[(" " + c.rjust(w) + " ") if r else (" " + c.ljust(w) + " ") for c in col.split("\n")]
                for col, (w, r) in zip(cols, pads)]
        f.write("".join("│" + "│".join(cells) + "│\n" for cells in zip(*body)))
    f.write("└" + "┴".join("─" * w for w in widths) + "┘\n")
    return None


def _json_dump(obj: Any) -> str:
    return json.dumps(json_safe(obj), indent=2, sort_keys=False)


def _fmt_money(v: float | None) -> str:
    """USD, never in scientific notation (`units.format_usd`)."""
    return format_usd(v)


def _fmt_number(v: float) -> str:
    """The tables' one number format, never scientific notation: a thousands separator; a whole number from
    1,000 up and for an integral value (19,439; 17; 203,709,480); 4 significant figures below 1,000 (20.45,
    0.9032, 0.005097); '-' for a missing or non-finite value."""
    if v is None or not math.isfinite(v):
        return "-"
    if v == 0 or abs(v) >= 1000 or float(v).is_integer():
        return f"{v:,.0f}"
    decimals = max(0, 3 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def _fmt_short(v: float) -> str:
    """A throughput in at most 6 characters: 812, 8,088, 81.2k, 4.17M."""
    if not math.isfinite(v):
        return "-"
    if abs(v) < 10_000:
        return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.2g}"
    if abs(v) < 1e6:
        return f"{v / 1e3:.1f}k"
    return f"{v / 1e6:.2f}M"


def _nic_cell(r: dict) -> str:
    """NIC adapters per node and type: '8x ib-ndr'; a rented instance's own network: the instance type."""
    if r.get("nic", "none") == "none":
        return "none"
    if r["nic"] == f"{r.get('chassis')}-net":
        return r["chassis"]
    return f"{max(int(r.get('nics_per_node') or 1), 1)}x {r['nic']}"


def _is_hourly(r: dict) -> bool:
    return str(r.get("cost_basis", "")).startswith("USD per hour")


def _range_cell(r: dict, keys: tuple[str, str, str] = ("throughput_low_samples_per_s", "throughput_high_samples_per_s",
                                                       "throughput_samples_per_s")) -> str:
    """The 80% range relative to the prediction: '-4/+6%' (≈: a near tie with the best). `keys`: the
    record's low, high and point fields."""
    lo, hi, mid = (r.get(k) for k in keys)
    if lo is None or hi is None or not mid:
        return "-"
    return f"{(lo / mid - 1) * 100:+.0f}/{(hi / mid - 1) * 100:+.0f}%" + ("≈" if r.get("near_tie") else "")


def _kw(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


_STRATEGY_SHORT = {"ring": "ring", "hierarchical": "hier", "ps": "ps"}


def _design_table(rows: list[dict], title: str, wide: bool = False, legend: bool = True) -> "Table":
    """Designs as a table. Compact by default (fits 120 columns with the shipped catalogs; a cell too wide
    folds onto a second line, it is never cut); `wide` adds every column. A range column appears when the
    rows carry one (`throughput_low_samples_per_s`, `throughput_high_samples_per_s`)."""
    from rich import box
    from rich.table import Table

    hourly = any(_is_hourly(r) for r in rows)
    has_range = any(r.get("throughput_low_samples_per_s") is not None for r in rows)
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              collapse_padding=True, caption_justify="left",
              caption=None if not legend else "GxM=N: G GPUs per node x M nodes = N GPUs; NICs/node: adapters per node x type (a rented "
                      "instance: its own network); hier: hierarchical all-reduce; compute: measured on that GPU, "
                      "or an estimate (scaled, published, roofline)" + ("; range: 80% range of throughput, ≈: a near "
                                                                         "tie with the best" if has_range else ""))
    cols: list[tuple[str, str, Any]] = [
        ("#", "right", lambda i, r: str(r.get("rank", i))),
        ("GPU", "left", lambda i, r: r["gpu"]),
        ("GPUs\nGxM=N", "right", lambda i, r: f"{r['gpus_per_node']}x{r['nodes']}={r['total_gpus']}"),
        ("NICs/node", "left", lambda i, r: _nic_cell(r)),
        ("strat.", "left", lambda i, r: _STRATEGY_SHORT.get(r["strategy"], r["strategy"])
         + ("" if r.get("reduce_on", "gpu") == "gpu" else "/cpu") + (f" {r['stack']}" if r.get("stack") else "")),
        ("cost\nUSD/h" if hourly and all(_is_hourly(r) for r in rows) else "cost\nUSD", "right",
         lambda i, r: _fmt_money(r["cost_usd"]) + ("/h" if _is_hourly(r) and not hourly else "")),
        ("throughput\nsamples/s", "right", lambda i, r: f"{r['throughput_samples_per_s']:,.0f}"),
    ]
    if has_range:
        cols.append(("range\n80%", "right", lambda i, r: _range_cell(r)))
    cols += [
        ("USD per\nsample/s", "right", lambda i, r: _fmt_money(r["usd_per_sample_per_s"])),
        ("power\nkW", "right", lambda i, r: _kw(r["power_kw"])),
        ("rack\nRU", "right", lambda i, r: f"{r['rack_units']:,.0f}"),
        ("compute", "left", lambda i, r: r["compute_source"]),
    ]
    if wide:
        cols += [
            ("scaling\neff.", "right", lambda i, r: f"{r['scaling_efficiency']:.3f}"),
            ("chassis", "left", lambda i, r: r["chassis"]),
            ("precision", "left", lambda i, r: r.get("precision", "")),
            ("transport", "left", lambda i, r: r.get("transport", "")),
            ("capex\nUSD", "right", lambda i, r: _fmt_money(r.get("capex_usd"))),
            ("electricity\nUSD/year", "right", lambda i, r: _fmt_money(r.get("energy_usd_per_year"))),
            ("t_iter\nms", "right", lambda i, r: f"{r['t_iter_s'] * 1e3:,.1f}"),
            ("exposed\ncomm ms", "right", lambda i, r: f"{r['t_exposed_comm_s'] * 1e3:,.1f}"),
            ("bottleneck", "left", lambda i, r: r["bottleneck"]),
            ("time to\ntrain h", "right", lambda i, r: "-" if r.get("time_to_train_h") is None
             or not math.isfinite(r["time_to_train_h"]) else _fmt_number(r["time_to_train_h"])),
        ]
    for name, just, _ in cols:
        t.add_column(name, justify=just, overflow="fold")
    for i, r in enumerate(rows, 1):
        t.add_row(*[fn(i, r) for _, _, fn in cols])
    return t


def out_option(out, alias):
    """`--out` (every command's name for the file it writes), or the old spelling `--output` that some
    commands used (still accepted, hidden from the help); both at once is an error."""
    from costopt.core.errors import InputError

    if out is not None and alias is not None and out != alias:
        raise InputError("give --out once (--output is its old spelling)", field="--out")
    return out if out is not None else alias


def only_for(name: str, value: Any, applies: bool, what: str, *, positive: bool = False) -> None:
    """An option given where it cannot apply is an error, never ignored: `name` (given as `value`) works
    only for `what`. `positive`: it must also be a number > 0 (checked first, so -8 is named as such)."""
    from costopt.core import checks
    from costopt.core.errors import InputError

    if value is None:
        return
    if positive:
        checks.positive(name, value)
    if not applies:
        raise InputError(f"{name} applies only to {what}", field=name.lstrip("-").replace("-", "_"))


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
                if "tokens_per_s" in exc.nearest:  # a large-model design
                    c.print(designs_table([exc.nearest], "Nearest feasible design",
                                          exc.nearest.get("hours_to_train") is not None))
                else:
                    c.print(_design_table([exc.nearest], "Nearest feasible design"))
        raise typer.Exit(exc.exit_code)
    typer.echo(f"error: {msg}", err=True)
    if fmt == "json":
        typer.echo(_json_dump({"error": msg, "reason": "input", "exit_code": exc.exit_code}))
    raise typer.Exit(exc.exit_code)


def _bom_table(lines: list[dict], title: str) -> "Table":
    """A bill of materials: one row per line item, then the total (= capex, or USD per hour when rented)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for name, just in (("item", "left"), ("part", "left"), ("unit price", "right"), ("qty", "right"),
                       ("subtotal", "right"), ("price date", "left"), ("source", "left")):
        t.add_column(name, justify=just, overflow="fold")
    for ln in lines:
        unit = ln["unit_price_usd"]
        t.add_row(ln["item"], ln["part_id"], f"${unit:,.2f}", f"{ln['quantity']:,}", f"${ln['subtotal_usd']:,.2f}",
                  ln.get("price_date", ""), ln["source"])
    total = round(sum(ln["subtotal_usd"] for ln in lines), 2)
    t.add_row("total", "", "", "", f"${total:,.2f}", "", "")
    return t


_TOKEN_RANGE_KEYS = ("tokens_per_s_low", "tokens_per_s_high", "tokens_per_s")
def _cell(v, fmt: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if fmt == "cents":
        return f"${v:,.2f}"
    return _fmt_money(v) if fmt == "money" else fmt.format(v)


def designs_table(designs: list[dict], title: str, hours: bool = False) -> Table:
    """Large-model designs as a table (solve, and the nearest feasible design of an infeasible request);
    `range`: the 80% range of tokens/s against the prediction, ≈ a near tie with the best."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              collapse_padding=True)
    cols = ("gpu", "GPUs", "NIC", "layout", "tokens/s", "range", "tok/s/GPU", "MFU", "mem GB", "cost", "$/1e9 tok")
    if hours:
        cols += ("hours",)
    rows = []
    for d in designs:
        nic = "-" if not d["nic"] else f"{d['nics_per_node']}x {d['nic']}"
        row = [d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}", nic,
               f"{d['strategy']} tp{d['tp']} pp{d['pp']}" + (f" vp{d['vp']}" if d.get("vp", 1) > 1 else "")
               + (f" cp{d['cp']}" if d.get("cp", 1) > 1 else "") + (f" ep{d['ep']}" if d.get("ep", 1) > 1 else "")
               + (f" sg{d['shard_group']}" if d.get("shard_groups", 1) > 1 and d["strategy"] != "ddp" else "")
               + f" mb{d['micro_batch']} ckpt {d['activation_checkpointing']}",
               f"{d['tokens_per_s']:,.0f}", _range_cell(d, _TOKEN_RANGE_KEYS), f"{d['tokens_per_s_per_gpu']:,.0f}",
               f"{d['mfu']:.0%}", f"{d['memory_per_gpu_gb']:.0f}/{d['gpu_memory_gb']:g}", _fmt_money(d["cost_usd"]),
               _cell(d.get("usd_per_1e9_tokens"), "cents")]
        if hours:
            row.append(_cell(d.get("hours_to_train"), "{:,.0f}"))
        rows.append(row)
    for j, col in enumerate(cols):
        text = col in ("NIC", "layout")  # these wrap; every other cell is kept whole
        t.add_column(col, justify="left" if text or col == "gpu" else "right",
                     min_width=None if text else max(len(r[j]) for r in rows))
    for row in rows:
        t.add_row(*row)
    return t


def _rate_money(v: float | None, rate: bool = False) -> str:
    """Money as `_fmt_money`, but a rate (USD per hour, per unit) keeps its cents; None is '-'."""
    if v is None:
        return "-"
    return f"${v:,.2f}" if rate and abs(v) >= 0.01 else _fmt_money(v)


def print_rent_buy_costs(c, r) -> None:
    """The end of a rent-vs-buy answer, the same for every workload: the cost rows (each with its unit),
    what was held equal, the price-age warnings and the verdict."""
    from rich.table import Table

    t = Table(title="Costs (each with what it means)", title_justify="left")
    for col, just in (("what", "left"), ("value", "right"), ("unit / meaning", "left")):
        t.add_column(col, justify=just)
    for what, v, unit in r.rows:
        if unit.startswith("USD"):
            s = _rate_money(v, "hour" in unit)
        elif unit.startswith("fraction"):
            s = f"{v:.1%}"
        else:
            s = f"{v:,.1f}"
        t.add_row(what, s, unit)
    c.print(t)
    if r.held_equal:
        c.print(r.held_equal)
    for warning in r.price_warnings:
        c.print(f"Warning: {warning}")
    c.print(f"Verdict: {r.verdict}")
