"""costopt: which GPU cluster to buy or rent for data-parallel training, and why.

    import costopt
    result = costopt.solve(200_000, "inception_v3")      # SolveResult: .best, .alternatives, .table
    design = costopt.predict("resnet50", "h100-sxm", 8, 4, "ib-ndr", "ring")   # DESIGN dict
"""

from .api import DESIGN_FIELDS, Evaluation, SolveResult, choose, evaluate_space, predict, solve
from .catalog import Catalog, load_catalog
from .errors import CostoptError, InfeasibleError, InputError
from .system import SystemParams, default_system, load_system
from .workload import Workload, list_models, load_profile, load_workload

__version__ = "0.1.0"

__all__ = [
    "DESIGN_FIELDS", "Catalog", "CostoptError", "Evaluation", "InfeasibleError", "InputError", "SolveResult",
    "SystemParams", "Workload", "choose", "default_system", "evaluate_space", "list_models", "load_catalog",
    "load_profile", "load_system", "load_workload", "predict", "solve",
]
