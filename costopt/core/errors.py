"""Error types that the CLI turns into one clear message and an exit code.

`InputError` (exit code 2): something the user gave us is wrong or missing — a malformed catalog,
an unknown model or GPU, a bad CSV column, a file that does not exist. The message names what is
wrong and where.

`InfeasibleError` (exit code 1): the request is well formed but nothing satisfies it (budget too
small, throughput target too high). It carries the nearest feasible answer when there is one.
"""

from __future__ import annotations

from typing import Any


class CostoptError(Exception):
    """Base class; `exit_code` is what the CLI exits with."""

    exit_code = 2


class InputError(CostoptError):
    """Bad user input: file, catalog, model, GPU, option value. `field`, when set, names the input at
    fault (e.g. "chassis", "gpus_per_node", "nic"), so a caller can point at its own column or flag."""

    exit_code = 2

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InfeasibleError(CostoptError):
    """A valid request that no candidate design satisfies."""

    exit_code = 1

    def __init__(self, message: str, nearest: Any = None, reason: str = "") -> None:
        super().__init__(message)
        self.nearest = nearest
        self.reason = reason
