"""Rows in one global order, written piece by piece, in bounded memory (an external merge sort).

A table too large to hold (every design of a large catalog within a budget) is produced a piece of the
design space at a time. Each piece's rows are sorted by the piece itself and written to a *run*: the
records (bytes, one per row, already formatted) in one file and their keys (a numpy structured array
with each record's end offset) in another. `SortedRuns.merged` then reads the runs back in blocks and
yields the rows in the global order of the key fields (the first field first, then the next on ties).

Merge step, with R runs of keys k, each run sorted, and B rows per run per step:

    load each run's next min(B, rows left) keys;
    bound = the smallest last-loaded key among the runs with rows beyond what was loaded (none: +inf);
    emit the loaded rows with key <= bound, in key order; each run advances by its emitted count.

Every row of every run with key <= bound is loaded (a run's unloaded rows are >= its last loaded key,
which is >= bound), and every emitted row precedes every row left (a row left is > bound or is a loaded
row > bound), so the emitted blocks, one after the other, are the rows in global order. Each step emits at
least the B rows of the bound's run, so the merge ends; memory is R·B keys and records, whatever the
table's size. Keys must be unique (a design's own identity is in its key), so the order is total.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

END = "end_byte"  # the key field holding each record's end offset in its run's record file


@dataclass
class _Run:
    keys: Path
    records: Path
    rows: int
    next_row: int = 0  # rows of this run already emitted
    next_byte: int = 0  # where the next record starts in the record file
    loaded: np.ndarray | None = None  # keys of rows next_row .. next_row + len(loaded), read, not emitted

    @property
    def left(self) -> int:
        return self.rows - self.next_row

    def load(self, n: int, dtype: np.dtype) -> np.ndarray:
        """Keys of the next min(n, left) rows (read from the file only past what is loaded)."""
        have = 0 if self.loaded is None else len(self.loaded)
        want = min(n, self.left)
        if have < want:
            with self.keys.open("rb") as fh:
                fh.seek((self.next_row + have) * dtype.itemsize)
                more = np.fromfile(fh, dtype=dtype, count=want - have)
            self.loaded = more if self.loaded is None or not have else np.concatenate([self.loaded, more])
        return self.loaded[:want]

    def take(self, n: int) -> list[bytes]:
        """The next n records (bytes), and advance past them."""
        if n == 0:
            return []
        ends = self.loaded[END][:n]
        with self.records.open("rb") as fh:
            fh.seek(self.next_byte)
            data = fh.read(int(ends[-1]) - self.next_byte)
        cuts = (ends - self.next_byte).tolist()
        out = [data[a:b] for a, b in zip([0] + cuts[:-1], cuts)]
        self.next_byte = int(ends[-1])
        self.next_row += n
        self.loaded = self.loaded[n:]
        return out


class SortedRuns:
    """Runs of (key, record) rows in a folder (see the module docstring); `order`: the key fields, first
    field first. `rows_per_step`: about how many rows a merge step loads over all runs."""

    def __init__(self, folder: str | Path, dtype: np.dtype | list, order: tuple[str, ...], rows_per_step: int = 200_000):
        self.folder = Path(folder)
        self.dtype = np.dtype(list(np.dtype(dtype).descr) + [(END, "<i8")])
        self.order = tuple(order)
        self.rows_per_step = rows_per_step
        self.runs: list[_Run] = []

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.runs)

    def sort(self, keys: np.ndarray) -> np.ndarray:
        """Positions of `keys` (a structured array with the `order` fields) in key order."""
        return np.lexsort(tuple(keys[f] for f in reversed(self.order)))

    def write_run(self, blocks) -> None:
        """One run from `blocks`: (keys, records) pairs, the rows already in key order across the blocks;
        `keys` holds the `order` fields (and any other field of the dtype), `records` one bytes per row."""
        i = len(self.runs)
        run = _Run(self.folder / f"run{i:05d}.keys", self.folder / f"run{i:05d}.rec", 0)
        end = 0
        with run.keys.open("wb") as fk, run.records.open("wb") as fr:
            for keys, records in blocks:
                out = np.zeros(len(keys), dtype=self.dtype)
                for name in keys.dtype.names:
                    out[name] = keys[name]
                out[END] = end + np.cumsum(np.fromiter(map(len, records), dtype=np.int64, count=len(records)))
                if len(out):
                    end = int(out[END][-1])
                out.tofile(fk)
                fr.write(b"".join(records))
                run.rows += len(out)
        if run.rows:
            self.runs.append(run)
        else:
            run.keys.unlink()
            run.records.unlink()

    def merged(self) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """(keys, records) blocks of every run's rows, in global key order (the merge step above)."""
        runs = [r for r in self.runs if r.left]
        per_run = max(self.rows_per_step // max(len(runs), 1), 1)
        while runs:
            loaded = [r.load(per_run, self.dtype) for r in runs]
            sizes = np.array([len(k) for k in loaded], dtype=np.int64)
            keys = np.concatenate(loaded)
            src = np.repeat(np.arange(len(runs)), sizes)
            order = self.sort(keys)
            more = [i for i, r in enumerate(runs) if r.left > sizes[i]]
            if more:
                position = np.empty(len(keys), dtype=np.int64)
                position[order] = np.arange(len(keys))
                last_loaded = np.cumsum(sizes)[more] - 1
                order = order[: int(position[last_loaded].min()) + 1]
            counts = np.bincount(src[order], minlength=len(runs))
            taken = [r.take(int(n)) for r, n in zip(runs, counts)]
            first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            at = order - first[src[order]]  # each emitted row's place among its run's emitted rows
            yield keys[order], [taken[s][a] for s, a in zip(src[order].tolist(), at.tolist())]
            runs = [r for r in runs if r.left]
