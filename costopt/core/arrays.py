"""Small numpy helpers shared by the timing model's modules."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def select(conditions: Sequence[np.ndarray], choices: Sequence[np.ndarray], default: float | np.ndarray) -> np.ndarray:
    """`np.select(conditions, choices, default)`, value for value: per element the choice of the first true
    condition, else `default`, as nested `np.where` (np.select's generic broadcasting costs far more than the
    arithmetic on the few designs a calibration evaluates thousands of times)."""
    out = np.where(conditions[-1], choices[-1], default)
    for cond, choice in zip(reversed(conditions[:-1]), reversed(choices[:-1])):
        out = np.where(cond, choice, out)
    return out


def row_codes(*columns: np.ndarray) -> tuple[np.ndarray, int]:
    """(code per row, number of distinct rows) of integer columns: the inverse and length of
    `np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)`, code for code (rows numbered in
    lexicographic order), without np.unique's sort of a structured view (several times slower): each column
    ranked on its own, the ranks packed into one int64 key, which orders as the rows do."""
    key = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    span = 1
    for col in columns:
        values, rank = np.unique(np.asarray(col).reshape(-1), return_inverse=True)
        span *= max(len(values), 1)
        if span >= 2 ** 62:
            codes = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
            return codes, int(codes.max()) + 1 if len(codes) else 0
        key = key * max(len(values), 1) + rank.reshape(-1)
    distinct, codes = np.unique(key, return_inverse=True)
    return codes.reshape(-1), len(distinct)
