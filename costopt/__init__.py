"""costopt: which GPU cluster to buy or rent for data-parallel training, and why.

    import costopt
    result = costopt.solve(200_000, "inception_v3")      # SolveResult: .best, .alternatives, .table
    design = costopt.predict("resnet50", "h100-sxm", 8, 4, "ib-ndr", "ring")   # DESIGN dict

The names below are imported on first use (PEP 562), so `import costopt.errors` or the command line
loads only the modules a command needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "DESIGN_FIELDS": "api", "Evaluation": "api", "SolveResult": "api", "choose": "api", "evaluate_space": "api",
    "predict": "api", "solve": "api",
    "Catalog": "catalog", "load_catalog": "catalog",
    "CostoptError": "errors", "InfeasibleError": "errors", "InputError": "errors",
    "SystemParams": "system", "default_system": "system", "load_system": "system",
    "Workload": "workload", "list_models": "workload", "load_profile": "workload", "load_workload": "workload",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'costopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from .api import DESIGN_FIELDS, Evaluation, SolveResult, choose, evaluate_space, predict, solve  # noqa: F401
    from .catalog import Catalog, load_catalog  # noqa: F401
    from .errors import CostoptError, InfeasibleError, InputError  # noqa: F401
    from .system import SystemParams, default_system, load_system  # noqa: F401
    from .workload import Workload, list_models, load_profile, load_workload  # noqa: F401
