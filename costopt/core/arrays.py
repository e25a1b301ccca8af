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
