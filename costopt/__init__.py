"""costopt: which GPU cluster to buy or rent for data-parallel training, and why.

    import costopt
    result = costopt.solve(200_000, "inception_v3")      # SolveResult: .best, .alternatives, .table
    design = costopt.predict("resnet50", "h100-sxm", 8, 4, "ib-ndr", "ring")   # DESIGN dict
    big = costopt.solve(5_000_000, "llama3_70b", tokens=1e12, max_power_kw=500)  # LlmSolveResult: .best, ...
    one = costopt.predict("llama3_70b", "b200", 8, 8, "ib-ndr", "fsdp", tp=2, tokens=1e12)  # dict

`solve` and `predict` take any workload (search/engine.py): a data-parallel zoo model or a transformer
described by its architecture; an argument the workload cannot use is refused (InputError), never ignored.

The names below are imported on first use (PEP 562), so `import costopt.core.errors` or the command line
loads only the modules a command needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from costopt.core.version import __version__  # noqa: F401  (re-exported: costopt.__version__)

# public name -> module that defines it
_LAZY = {
    "DESIGN_FIELDS": "search.api", "Evaluation": "search.api", "SolveResult": "search.api", "choose": "search.api", "evaluate_space": "search.api",
    "predict": "search.engine", "solve": "search.engine", "LlmSolveResult": "search.engine",
    "Catalog": "hardware.catalog", "load_catalog": "hardware.catalog",
    "CostoptError": "core.errors", "InfeasibleError": "core.errors", "InputError": "core.errors",
    "SystemParams": "perf.system", "default_system": "perf.system", "load_system": "perf.system",
    "Workload": "perf.workload", "list_models": "perf.workload", "load_profile": "perf.workload", "load_workload": "perf.workload",
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
    from costopt.search.api import DESIGN_FIELDS, Evaluation, SolveResult, choose, evaluate_space  # noqa: F401
    from costopt.search.engine import LlmSolveResult, predict, solve  # noqa: F401
    from costopt.hardware.catalog import Catalog, load_catalog  # noqa: F401
    from costopt.core.errors import CostoptError, InfeasibleError, InputError  # noqa: F401
    from costopt.perf.system import SystemParams, default_system, load_system  # noqa: F401
    from costopt.perf.workload import Workload, list_models, load_profile, load_workload  # noqa: F401
