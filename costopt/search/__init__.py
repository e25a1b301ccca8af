"""Search: the design space as arrays, the solver (Pareto prune + PuLP), the engine that evaluates
and picks (`search/api.py`), robustness, and several jobs sharing one purchase (`search/multijob/`)."""
