"""Several jobs, one purchase: a mixed-integer program over every job's candidate designs.

Each job of a workload mix (`costopt/search/mix.py`) runs on its own partition of the cluster, one design
of its own design space; the budget, power, rack units, nodes, owned/stocked/discounted parts and
the network fabric are shared. Data flows one way through the modules:

    problem      candidates per job, the parts market, the limits; exact totals and brute force
    pruning      per-design and joint limits, dominance pruning, necessary conditions for a value
    formulation  the MILP (variables, constraints, objectives) and running CBC on it
    fair         the `fair` objective by bisection over ratio levels (enumeration, CBC fallback)
    program      `solve_program`: first solve, then the tie-break
    explain      an answer: which limits bind (with slack for the rest), why owned parts stay unused
    diagnose     an infeasible mix: which limit binds and by how much
    pipeline     `solve_mix`: mix file -> candidates (timing model) -> reduce -> solve -> `MixResult`
    render       `MixResult` as rich tables (the solver returns data; only this module prints)

The maths of each step is in its module's docstring.
"""

from costopt.search.multijob.diagnose import diagnose
from costopt.search.multijob.pipeline import DEFAULT_TIME_LIMIT_S, MixResult, build_jobs, job_candidates, market_from, solve_mix
from costopt.search.multijob.problem import MIX_OBJECTIVES, JobCandidates, Market, MixLimits, brute_force, evaluate_picks, own_cost
from costopt.search.multijob.program import ProgramResult, solve_program
from costopt.search.multijob.pruning import prune, reduce_jobs
from costopt.search.multijob.render import render

__all__ = ["solve_mix", "solve_program", "brute_force", "prune", "diagnose", "JobCandidates", "Market", "MixLimits",
           "MixResult", "MIX_OBJECTIVES", "evaluate_picks", "build_jobs", "reduce_jobs", "market_from", "render",
           "job_candidates", "own_cost", "ProgramResult",
           "DEFAULT_TIME_LIMIT_S"]
