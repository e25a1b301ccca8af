"""Tables that fit the console without cutting a word: a number, an id or a range is never wrapped, folded
or truncated ("$11,99" / "3", "5,503-…", "12" for 126 hours were what rich did when a table was wider than
the terminal).

Rule. A word is a run of characters without a space: "$1,792,980", "-19/+21%≈", "rtx-pro-6000". For each
column j let max_j be the width of its widest line (header included) and min_j the width of its widest
word. A table whose columns at max_j fit the console prints as rich lays it out. Otherwise the columns whose
cells hold spaces (text) give up width, the one with most room above its min_j first, down to min_j, and every column gets a
fixed width, so rich wraps text at spaces and has no reason to fold or cut. When even Σ min_j does not fit,
the table is split into parts of whole columns, in order, as many as fit with text columns at up to
24 cells (never below min_j), each part repeating the row's key columns (the
first one, or the first two when the first is a "#" rank), so each part reads on its own; the title goes on
the first part with "(part 1 of k)", the caption (a legend) under the last part, as wide as the console.

`FitConsole` is a rich Console whose `print` does this to every Table it is given; `cli.common._console()`
returns one, so every command's tables fit.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


PREFERRED = 24  # cells: a text column of a split table is not squeezed below this (or its widest word)


def _plain(cell: Any) -> str | None:
    """The text a cell shows (markup resolved); None for a renderable that is not text."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:  # not valid markup: rich prints it as it is
            return cell
    return None


def _widths(col) -> tuple[int, int] | None:
    """(min_j, max_j) of a column: its widest word (its widest line when it does not wrap) and its widest
    line, header included."""
    texts = [_plain(col.header), *(_plain(c) for c in col._cells)]
    if any(t is None for t in texts):
        return None
    lines = [ln for t in texts for ln in t.split("\n")]
    words = [w for ln in lines for w in ln.split()]
    widest = max(map(cell_len, lines), default=0)
    if col.no_wrap:  # the table's author wants each line whole
        return widest, widest
    return max(map(cell_len, words), default=0), widest


def _subset(table: Table, indexes: list[int], title: str | None, caption: str | None) -> Table:
    part = copy.copy(table)
    part.columns = [dataclasses.replace(table.columns[j], _index=i) for i, j in enumerate(indexes)]
    part.title, part.caption = title, caption
    return part


def _overhead(console: Console, table: Table) -> int:
    """Padding and borders: the table's rendered width less the sum of its columns' content widths."""
    fixed = copy.copy(table)
    fixed.columns = [dataclasses.replace(c, width=1, min_width=None, max_width=None) for c in table.columns]
    fixed.title = fixed.caption = None
    fixed.expand = False
    return Measurement.get(console, console.options.update_width(10_000), fixed).maximum - len(fixed.columns)


def fit_table(console: Console, table: Table) -> list[Table | Text]:
    """The table, laid out so that no word is cut at this console's width: itself with fixed column widths,
    or parts of whole columns (see the module docstring)."""
    ranges = [_widths(c) for c in table.columns]
    if not table.columns or any(r is None for r in ranges) or table.expand:
        return [table]
    width = console.width
    mins, maxs = [r[0] for r in ranges], [r[1] for r in ranges]
    overhead = _overhead(console, table)
    if sum(maxs) + overhead <= width:
        return [table]
    if sum(mins) + overhead <= width:
        return [_shrunk(table, mins, maxs, width - overhead)]
    # split: keys + as many following columns as fit at a readable width (a text column at up to PREFERRED
    # cells, never below its widest word), in order
    keys = [0, 1] if len(table.columns) > 2 and _plain(table.columns[0].header).strip() == "#" else [0]
    pref = [min(hi, max(lo, PREFERRED)) for lo, hi in zip(mins, maxs)]
    groups, current = [], []
    for j in range(len(keys), len(table.columns)):
        trial = keys + current + [j]
        sub = _subset(table, trial, None, None)
        if current and sum(pref[k] for k in trial) + _overhead(console, sub) > width:
            groups.append(current)
            current = [j]
        else:
            current.append(j)
    if current:
        groups.append(current)
    parts = []
    for n, g in enumerate(groups, 1):
        idx = keys + g
        title = (f"{_plain(table.title)} (part {n} of {len(groups)})" if table.title is not None and n == 1 else
                 (f"(part {n} of {len(groups)})" if table.title is not None else None))
        sub = _subset(table, idx, title, None)
        budget = width - _overhead(console, sub)
        sub_min, sub_max = [mins[k] for k in idx], [maxs[k] for k in idx]
        parts.append(sub if sum(sub_max) <= budget else _shrunk(sub, sub_min, sub_max, max(budget, sum(sub_min))))
    if table.caption is not None:  # the legend under the last part, as wide as the console
        caption = table.caption if isinstance(table.caption, Text) else Text.from_markup(str(table.caption))
        parts.append(caption)
    return parts


def _shrunk(table: Table, mins: list[int], maxs: list[int], budget: int) -> Table:
    """Fixed column widths summing to at most `budget`: the column with the most room above its widest word
    gives one cell at a time, never below that word."""
    w = list(maxs)
    while sum(w) > budget:
        j = max((k for k in range(len(w)) if w[k] > mins[k]), key=lambda k: w[k] - mins[k], default=None)
        if j is None:
            break
        w[j] -= 1
    out = copy.copy(table)
    out.columns = [dataclasses.replace(c, width=wj, min_width=None, max_width=None, overflow="fold")
                   for c, wj in zip(table.columns, w)]
    return out


class FitConsole(Console):
    """A Console that lays every Table it prints out with `fit_table`."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 (rich's name)
        out = []
        for o in objects:
            out.extend(fit_table(self, o) if isinstance(o, Table) else [o])
        if len(out) > len(objects):  # a split table: its parts one under the other
            for o in out:
                super().print(o, **kwargs)
            return
        super().print(*out, **kwargs)
