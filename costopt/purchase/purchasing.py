"""Purchasing workflows: compare vendor catalogs, rent vs buy, full ranked tables for spreadsheets.

Everything here reuses the one pipeline (catalog -> design space -> timing -> cost -> choose); the
only new arithmetic is how a design is priced and compared:

- What a cost means is `cost.CostBasis` (the one rule, shared with `solve`): owned designs cost their
  capex (plus electricity with `tco_years`); rented designs `usd_per_hour × hours` (`hours`, or per
  job the design's own time to train), else USD per hour.
- Owned beside rented (`compare` of an owned and a cloud catalog) only on a stated horizon (`hours`
  or per job), both sides priced for it: the purchase amortised over `years` at `utilization`, plus
  electricity (`CostBasis` gives the formula). The budget still limits the purchase (capex) of owned
  designs and the rent over the horizon of rented ones.

Compare: the best design of each catalog for the same budget; the winner by the objective; and for
each loser the price its key part (the GPU of its best design, or the rented instance) would need
to win. Only that part's designs change cost when its price changes and the best throughput within
the budget never falls as the price falls, so a bisection on the price factor finds the break-even
price; the timing is evaluated once.

Rent vs buy: the owned design bought with the budget (throughput T_own, capex C, electricity E per
year at full use) against the cheapest rented design per hour that is at least as fast (or the
fastest rented one, scaled by T_own/T_rent so both do the same work):

    owned cost over Y years at utilisation u  = C + Y · u · E
    rented cost for the same work             = Y · u · 8766 h · R · T_own / T_rent     (R = USD per hour)
    break-even utilisation   u* = C / (Y · (8766 · R · T_own/T_rent − E))
    break-even months at 100% use = C / (730.5 · (R · T_own/T_rent − E / 8766))
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costopt.search import api
from costopt.search.api import Evaluation, SolveResult, design_dict, resolve_inputs, choose, evaluate_space
from costopt.hardware.catalog import Catalog, load_catalog
from costopt.search.design_space import enumerate_designs
from costopt.core.files import read_input_text
from costopt.core import checks
from costopt.core.checks import count, non_negative, positive
from costopt.hardware.part_filter import KEPT, PartFilter
from costopt.hardware.cost import CostBasis, evaluate_costs, tco_breakdown, price_on_basis, within_budget
from costopt.search.solver import objective_values
from costopt.core.errors import InfeasibleError, InputError
from costopt.purchase.export import export_table
from costopt.hardware.cloud_facts import PROVIDERS, capacity_summary, provider_facts
from costopt.core.units import HOURS_PER_YEAR
from costopt.purchase.rental import (SPOT_INTERRUPTION, _billed, _compare_held_equal, _held_equal, _price_warnings,
                                      _rent_verdict, _rent_versus_own, rental_terms)
from costopt.hardware.catalog import with_max_instances

HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0


@dataclass
class Options:
    """Workload and search settings shared by every catalog in a comparison."""

    precision: str = api.DEFAULT_PRECISION
    batch_per_gpu: int | None = None
    overlap: str = "wfbp"
    strategies: list[str] | None = None
    reduce_on: list[str] | None = None
    max_nodes: int | None = None
    system: Any = None
    profile: Any = None
    tco_years: float = 0.0
    hours: float | None = None
    epochs: float | None = None
    dataset_size: float | None = None
    objective: str = "throughput"
    years: float = 3.0  # owned beside rented on a horizon: the purchase is amortised over these years...
    utilization: float = 1.0  # ...at this fraction of the time busy
    as_of: Any = None  # the day price ages are counted to (date or YYYY-MM-DD; None: the clock's date)
    max_instances: int | None = None  # cloud catalogs: at most this many instances of a type (else the catalog's cap)
    include: list[str] | None = None  # part classes opened beyond the default search: consumer, legacy, eol, all
    exclude_gpus: list[str] | None = None  # GPU ids left out (part_filter.py); an id a catalog lacks is moot there

    def basis(self, amortize: bool = False) -> CostBasis:
        """The cost basis these options state (`cost.CostBasis`); `amortize`: owned designs priced as
        their use over the horizon, for a comparison with rented ones."""
        return CostBasis(tco_years=self.tco_years, hours=self.hours, samples=self.samples,
                         amortize_years=self.years if amortize else None, utilization=self.utilization)

    def part_filter(self, cat: Catalog) -> PartFilter:
        """The part filter of `costopt solve` (part_filter.py) for this catalog: current data-centre and
        workstation parts unless `include` opens more; `exclude_gpus` ids this catalog lists are left out."""
        return PartFilter.from_options(self.include, [g for g in self.exclude_gpus or [] if g in cat.gpus], None, cat)

    def check_exclusions(self, cats: list[Catalog]) -> None:
        """Every --exclude-gpu id names a GPU of at least one of the catalogs asked about."""
        known = {g for c in cats for g in c.gpus}
        unknown = [g for g in self.exclude_gpus or [] if g not in known]
        if unknown:
            raise InputError(f"--exclude-gpu: unknown gpu {', '.join(repr(u) for u in unknown)} "
                             f"(known: {', '.join(sorted(known))})", field="exclude_gpu")

    @property
    def samples(self) -> float | None:
        return self.epochs * self.dataset_size if self.epochs and self.dataset_size else None

    def check(self) -> None:
        checks.choice("precision", self.precision, ("auto", "fp32", "amp_bf16", "amp_fp16"))
        checks.choice("overlap mode", self.overlap, ("wfbp", "none", "full"))
        self.strategies = checks.ident_list("strategy", self.strategies)
        self.reduce_on = checks.ident_list("reduce_on", self.reduce_on)
        checks.path_like("system", self.system) if not hasattr(self.system, "with_updates") else None
        checks.path_like("profile", self.profile)
        for name, v in (("hours", self.hours), ("epochs", self.epochs), ("dataset size", self.dataset_size)):
            positive(name, v)
        non_negative("TCO years", self.tco_years)
        count("max nodes", self.max_nodes)
        count("max instances", self.max_instances)
        count("batch per GPU", self.batch_per_gpu)
        self.as_of = checks.as_of(self.as_of)
        self.exclude_gpus = checks.ident_list("exclude gpu", self.exclude_gpus)
        PartFilter.from_options(self.include, None, None, None)  # the --include words (no catalog needed)
        if (self.epochs is None) != (self.dataset_size is None):
            raise InputError("--epochs and --dataset-size go together")
        if self.objective not in ("throughput", "cost-per-throughput"):
            raise InputError(f"objective must be throughput or cost-per-throughput here, got '{self.objective}'")


def check_budget(budget: float | None) -> None:
    """A budget is a finite number of USD > 0 (None: no budget)."""
    checks.budget(budget)


def _options(opts: Options | None) -> Options:
    """`opts` checked (None: the defaults)."""
    if opts is None:
        opts = Options()
    if not isinstance(opts, Options):
        raise InputError(f"opts must be a purchasing.Options, got {type(opts).__name__}", field="opts")
    opts.check()
    return opts


def _as_catalog(c: str | Path | Catalog | None) -> Catalog:
    return c if isinstance(c, Catalog) else load_catalog(c)


def _catalog_request(catalog: str | Path | Catalog | None, model: str, budget: float | None, opts: Options, *,
                     node_budget: float | None | str = "auto", gpu_ids: list[str] | None = None,
                     chassis_ids: list[str] | None = None, amortize: bool = False) -> tuple[Catalog, dict, dict]:
    """(catalog, `enumerate_designs` arguments, `evaluate_space` arguments) of a purchasing request."""
    opts = _options(opts)
    check_budget(budget)
    basis = opts.basis(amortize)
    cat = _as_catalog(catalog)
    if opts.max_instances is not None and cat.is_cloud:  # owned catalogs in the same comparison keep --max-nodes
        cat = with_max_instances(cat, opts.max_instances)
    cat, params, workload, batch, tensors = resolve_inputs(model, cat, opts.precision,
                                                            opts.batch_per_gpu, opts.system, opts.profile,
                                                            "pytorch", opts.overlap)
    space_kw = api._space_kwargs(cat, budget, basis, max_nodes=opts.max_nodes, strategies=opts.strategies,
                                 reduce_on=opts.reduce_on, gpu_ids=gpu_ids, chassis_ids=chassis_ids,
                                 node_budget=node_budget)
    eval_kw = dict(workload=workload, tensors=tensors, params=params,
                   precision=api.resolve_precision(workload, opts.precision), batch_per_gpu=batch,
                   overlap=opts.overlap, basis=basis)
    return cat, space_kw, eval_kw


def evaluate_catalog(catalog: str | Path | Catalog | None, model: str, budget: float | None, opts: Options,
                     *, node_budget: float | None | str = "auto", gpu_ids: list[str] | None = None,
                     chassis_ids: list[str] | None = None, amortize: bool = False) -> Evaluation:
    """Enumerate and evaluate every design of a catalog, priced on the basis `opts` states (owned or rented;
    `amortize`: owned designs as their use over the horizon). The whole space at once: for a space of any
    size, `evaluate_catalog_bounded`."""
    cat, space_kw, eval_kw = _catalog_request(catalog, model, budget, opts, node_budget=node_budget, gpu_ids=gpu_ids,
                                              chassis_ids=chassis_ids, amortize=amortize)
    return evaluate_space(enumerate_designs(cat, **space_kw), catalog=cat, **eval_kw)


def evaluate_catalog_bounded(catalog: str | Path | Catalog | None, model: str, budget: float | None, opts: Options,
                             *, amortize: bool = False, keep: api.Keep | None = None, objective: str | None = None,
                             min_throughput: float | None = None, chunk_designs: int | None = None,
                             ) -> tuple[Evaluation, tuple | None]:
    """`evaluate_catalog` in bounded memory, through the mechanism of `solve` (`api.evaluate_bounded`): a space
    larger than one piece (`chunk_designs` designs; None: api.CHUNK_DESIGNS) keeps only what `choose`
    (budget, `objective` (None: `opts.objective`), `min_throughput`) may pick or name, plus `keep`.
    Returns (evaluation, counts for `choose`; None when the space was evaluated whole)."""
    cat, space_kw, eval_kw = _catalog_request(catalog, model, budget, opts, amortize=amortize)
    limits = dict(budget=budget, objective=objective or opts.objective, max_power_kw=None, max_rack_units=None,
                  min_throughput=min_throughput, part_filter=opts.part_filter(cat))
    return api.evaluate_bounded(cat, space_kw, limits, keep=keep, chunk_designs=chunk_designs, **eval_kw)


def solve_catalog(catalog, model: str, budget: float, opts: Options, top: int = 10,
                  keep: api.Keep | None = None, chunk_designs: int | None = None) -> tuple[SolveResult, Evaluation]:
    """`choose` on `evaluate_catalog_bounded` (the evaluation returned holds only the survivors, plus `keep`,
    when the space was evaluated in pieces of `chunk_designs` designs)."""
    ev, counts = evaluate_catalog_bounded(catalog, model, budget, opts, keep=keep, chunk_designs=chunk_designs)
    return choose(ev, budget=budget, objective=opts.objective, top=top, counts=counts, today=opts.as_of,
                  part_filter=opts.part_filter(ev.catalog)), ev


def table_rows(ev: Evaluation, budget: float | None, part_filter: PartFilter | None = None) -> np.ndarray:
    """The designs of `ranked_table`: feasible, within the budget, offered by the part filter (default: the
    default search, as `solve`)."""
    c, t = ev.costs, ev.timing
    offered = (part_filter or PartFilter()).design_reasons(ev.space) == KEPT
    return np.flatnonzero(t.feasible & c.buildable & within_budget(c, budget) & offered)


def ranked_table(ev: Evaluation, budget: float | None, objective: str = "throughput",
                 part_filter: PartFilter | None = None) -> pd.DataFrame:
    """Every feasible design within the budget that the part filter offers (default: the default search,
    as `solve`), best first by the objective (`solver.objective_values`; ties: cheaper, then catalog order).

    Adds `rank` and `usd_per_hour` (rented designs) to the DESIGN columns. For a space of any size,
    evaluate it with `evaluate_catalog_bounded(..., keep=lambda piece: table_rows(piece, budget))`."""
    c, t = ev.costs, ev.timing
    idx = table_rows(ev, budget, part_filter)
    order_rank = ev.space.order_rank()
    thr, cost = t.throughput_samples_per_s[idx], c.cost_usd[idx]
    idx = idx[np.lexsort((order_rank[idx], cost, objective_values(objective, cost, thr)))]
    df = table_frame(ev, idx)
    df.insert(0, "rank", np.arange(1, len(idx) + 1))
    return df


def table_frame(ev: Evaluation, idx: np.ndarray) -> pd.DataFrame:
    """The rows `idx` of a ranked table without their rank: the DESIGN columns plus `usd_per_hour`
    (rented designs; 0 when owned) after `cost_usd`."""
    df = ev.frame(idx)
    c = ev.costs
    hourly = c.usd_per_hour[idx] if c.usd_per_hour is not None else np.zeros(len(idx))
    df.insert(df.columns.get_loc("cost_usd") + 1, "usd_per_hour", hourly)
    return df


# ------------------------------------------------------------------------------------------------
# compare
# ------------------------------------------------------------------------------------------------


@dataclass
class CatalogAnswer:
    label: str  # file name or catalog name
    catalog: Catalog
    result: SolveResult | None
    evaluation: Evaluation
    cost_basis: str
    error: str = ""

    @property
    def best(self) -> dict[str, Any] | None:
        return self.result.best if self.result else None


@dataclass
class PriceCut:
    """The price the loser's key part needs to match the winner (None fields when no price can)."""

    catalog: str
    part_kind: str  # "gpu" or "instance"
    part_id: str
    price_field: str  # "price_usd" or "usd_per_hour"
    current_price: float
    needed_price: float | None
    cut_fraction: float | None
    design_at_needed_price: dict[str, Any] | None
    note: str = ""


@dataclass
class Comparison:
    model: str
    budget_usd: float
    objective: str
    answers: list[CatalogAnswer]
    winner: int
    margin: dict[str, float]  # winner vs runner-up: throughput ratio - 1, cost difference...
    price_cuts: list[PriceCut] = field(default_factory=list)
    held_equal: str = ""  # what every catalog's pick shares (model, budget, job or hours, the rentals' terms)
    price_warnings: list[str] = field(default_factory=list)  # prices over a year old, as `solve` warns

    def to_json_dict(self) -> dict[str, Any]:
        return {"held_equal": self.held_equal, "price_warnings": self.price_warnings,
            "model": self.model, "budget_usd": self.budget_usd, "objective": self.objective,
            "catalogs": [{"label": a.label, "catalog": a.catalog.catalog.name, "kind": a.catalog.catalog.kind,
                          "cost_basis": a.cost_basis, "best": a.best, "error": a.error or None,
                          "capacity": a.result.capacity if a.result else None} for a in self.answers],
            "winner": self.answers[self.winner].label,
            "margin": self.margin,
            "price_cuts": [dataclasses.asdict(p) for p in self.price_cuts],
        }


def _best_score_within(ev: Evaluation, budget: float, objective: str) -> tuple[float, int | None]:
    """Best objective score (higher is better: −`objective_values`) within the budget, and its design."""
    ok = ev.timing.feasible & ev.costs.buildable & within_budget(ev.costs, budget)
    if not ok.any():
        return -math.inf, None
    idx = np.flatnonzero(ok)
    s = -objective_values(objective, ev.costs.cost_usd[idx], ev.timing.throughput_samples_per_s[idx])
    j = int(idx[np.argmax(s)])
    return float(s.max()), j


def _rescaled(ev: Evaluation, kind: str, part_id: str, factor: float, opts: Options) -> Evaluation:
    """The same designs with one part's price × factor (costs only; timing unchanged)."""
    s = ev.space
    if kind == "gpu":
        gpus = [g.model_copy(update={"price_usd": g.price_usd * factor}) if g.id == part_id else g for g in s.gpus]
        space = dataclasses.replace(s, gpus=gpus)
    else:
        chs = [c.model_copy(update={"usd_per_hour": c.usd_per_hour * factor}) if c.id == part_id else c for c in s.chassis]
        space = dataclasses.replace(s, chassis=chs)
    costs = price_on_basis(evaluate_costs(space, ev.catalog.site, facility=ev.catalog.facility,
                                          support_years=ev.costs.support_years),
                           ev.timing.throughput_samples_per_s, ev.basis)
    return dataclasses.replace(ev, space=space, costs=costs)


def price_cut_to_win(loser: CatalogAnswer, target_score: float, model: str, budget: float, opts: Options,
                     floor: float = 0.01) -> PriceCut:
    """Bisection on the price factor of the loser's key part until its best design matches the target."""
    best = loser.best
    cat = loser.catalog
    amortize = loser.evaluation.basis.amortize_years is not None
    if cat.is_cloud:
        kind, pid, fld = "instance", best["chassis"], "usd_per_hour"
        current = cat.chassis_by_id[pid].usd_per_hour
    else:
        kind, pid, fld = "gpu", best["gpu"], "price_usd"
        current = cat.gpus[pid].price_usd
    # Only designs with this part change cost: enumerate them once, with node counts bounded at the floor price.
    if kind == "gpu":
        cheap = cat.model_copy(update={"gpu": [g.model_copy(update={"price_usd": g.price_usd * floor}) if g.id == pid else g
                                               for g in cat.gpu]})
        cheap.__dict__.pop("gpus", None)  # cached lookups must see the copied list
        ev = evaluate_catalog(cheap, model, budget, opts, gpu_ids=[pid], amortize=amortize)
        ev = _rescaled(ev, kind, pid, 1.0 / floor, opts)  # back to today's price
    else:
        ev = evaluate_catalog(cat, model, budget, opts, chassis_ids=[pid], amortize=amortize,
                              node_budget=(budget / floor / opts.hours) if opts.hours else None)
    f_lo, f_hi = floor, 1.0
    s_lo, _ = _best_score_within(_rescaled(ev, kind, pid, f_lo, opts), budget, opts.objective)
    if s_lo < target_score:
        return PriceCut(loser.label, kind, pid, fld, current, None, None, None,
                        f"even at {floor:.0%} of today's price no {pid} design reaches the winner")
    for _ in range(40):  # factor resolution 2^-40: far below a cent on any part
        mid = 0.5 * (f_lo + f_hi)
        s_mid, _ = _best_score_within(_rescaled(ev, kind, pid, mid, opts), budget, opts.objective)
        if s_mid >= target_score:
            f_lo = mid
        else:
            f_hi = mid
    ev_at = _rescaled(ev, kind, pid, f_lo, opts)
    _, j = _best_score_within(ev_at, budget, opts.objective)
    design = design_dict(ev_at.frame([j]).iloc[0]) if j is not None else None
    return PriceCut(loser.label, kind, pid, fld, current, current * f_lo, 1.0 - f_lo, design)


def _check_compare_horizon(cats: list[Catalog], opts: Options, amortize: bool) -> None:
    """Options that only price a rented design or amortise an owned one beside it: refused when no catalog
    of the comparison rents (--hours, --max-instances), or when none is owned beside a rented one
    (--years, --utilization away from their defaults), instead of changing nothing."""
    if not any(c.is_cloud for c in cats):
        named = [k for k, v in (("--hours", opts.hours), ("--max-instances", opts.max_instances)) if v is not None]
        if named:
            raise InputError(f"{', '.join(named)}: price rented designs; none of the catalogs is a cloud catalog",
                             field="hours" if opts.hours is not None else "max_instances")
    if not amortize:
        named = [k for k, v, d in (("--years", opts.years, 3.0), ("--utilization", opts.utilization, 1.0)) if v != d]
        if named:
            raise InputError(f"{', '.join(named)}: only when an owned catalog is compared with a cloud one (the "
                             "purchase is then amortised over --years at --utilization)", field="years")


def compare(catalogs: list[str | Path | Catalog], model: str, budget: float, opts: Options | None = None,
            *, price_cuts: bool = True) -> Comparison:
    """Best design under each catalog for the same budget, the winner, and the losers' break-even prices."""
    opts = _options(opts)
    check_budget(budget)
    if isinstance(catalogs, (str, bytes, Path)) or not isinstance(catalogs, (list, tuple)):
        raise InputError(f"compare needs a list of catalogs, got {type(catalogs).__name__}", field="catalogs")
    if len(catalogs) < 2:
        raise InputError("compare needs at least two catalogs")
    answers: list[CatalogAnswer] = []
    cats = [_as_catalog(c) for c in catalogs]
    opts.check_exclusions(cats)
    for cat in cats:
        if cat.is_cloud and opts.hours is None and opts.samples is None:
            raise InputError(f"{cat.path}: a cloud catalog is priced per hour; give --hours or --epochs with "
                             f"--dataset-size so its cost is comparable with a purchase")
    # owned beside rented: both on the stated horizon (the purchase amortised over years at utilisation)
    amortize = any(c.is_cloud for c in cats) and not all(c.is_cloud for c in cats)
    _check_compare_horizon(cats, opts, amortize)
    for cat in cats:
        label = Path(cat.path.split(" (on base")[0]).name if cat.path else cat.catalog.name
        basis = opts.basis(amortize).label(cat.is_cloud)
        ev, counts = evaluate_catalog_bounded(cat, model, budget, opts, amortize=amortize)
        try:
            res = choose(ev, budget=budget, objective=opts.objective, top=5, counts=counts, today=opts.as_of,
                         part_filter=opts.part_filter(cat))
            answers.append(CatalogAnswer(label, cat, res, ev, basis))
        except InfeasibleError as exc:
            answers.append(CatalogAnswer(label, cat, None, ev, basis, str(exc)))
    scores = []
    for a in answers:
        if a.best is None:
            scores.append(-math.inf)
        else:
            b = a.best
            scores.append(-float(objective_values(opts.objective, np.array([b["cost_usd"]]),
                                                  np.array([b["throughput_samples_per_s"]]))[0]))
    if all(s == -math.inf for s in scores):
        raise InfeasibleError(f"no catalog has a design within ${budget:,.0f}: " + "; ".join(a.error for a in answers),
                              reason="budget")
    # winner: best score, then cheaper, then the order given
    order = sorted(range(len(answers)), key=lambda i: (-scores[i], answers[i].best["cost_usd"] if answers[i].best else 0, i))
    w = order[0]
    wb = answers[w].best
    margin: dict[str, float] = {}
    if len(order) > 1 and answers[order[1]].best is not None:
        rb = answers[order[1]].best
        margin = {
            "runner_up": answers[order[1]].label,
            "throughput_ratio": wb["throughput_samples_per_s"] / rb["throughput_samples_per_s"],
            "throughput_gain": wb["throughput_samples_per_s"] / rb["throughput_samples_per_s"] - 1.0,
            "cost_difference_usd": wb["cost_usd"] - rb["cost_usd"],
            "usd_per_sample_per_s_ratio": wb["usd_per_sample_per_s"] / rb["usd_per_sample_per_s"],
        }
    cuts = []
    if price_cuts:
        for i in order[1:]:
            if answers[i].best is not None:
                cuts.append(price_cut_to_win(answers[i], scores[w], model, budget, opts))
    return Comparison(model, budget, opts.objective, answers, w, margin, cuts, _compare_held_equal(answers, model, opts),
                      [f"{a.label}: {w}" for a in answers if a.best for w in _price_warnings([a.best])])


# ------------------------------------------------------------------------------------------------
# rent vs buy
# ------------------------------------------------------------------------------------------------


@dataclass
class RentVsBuy:
    model: str
    budget_usd: float
    years: float
    owned_catalog: str
    cloud_catalog: str
    buy: dict[str, Any]  # DESIGN of the owned cluster
    rent: dict[str, Any]  # DESIGN of the rented cluster (cost_usd = USD per hour)
    rent_usd_per_hour: float
    work_ratio: float  # T_own / T_rent: rented hours per owned hour of work
    capex_usd: float
    energy_usd_per_year_full_use: float
    breakeven_utilization: float | None  # None: renting is cheaper at any utilisation
    breakeven_months_full_use: float | None
    utilization: float | None
    hours_of_use: float | None
    samples: float | None
    rows: list[tuple[str, float, str]]  # (what, value, unit/meaning)
    verdict: str
    capacity: dict[str, Any] | None = None  # the rented instance type's cap and whether the rented design sits on it
    held_equal: str = ""  # what both sides share: model, job, calendar, the rental's terms
    rent_pricing: str = "on-demand"  # on-demand | spot | capacity-block | reserved
    rent_min_hours: float = 0.0  # the provider's minimum term for one rental
    rent_interruption: str = ""  # spot: what an interruption costs
    price_warnings: list[str] = field(default_factory=list)  # prices over a year old (as `solve` warns)

    def to_json_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["rows"] = [{"what": a, "value": v, "unit": u} for a, v, u in self.rows]
        return d


def rent_buy_arithmetic(capex: float, energy: float, t_own: float, rate: float, t_rent: float, *, years: float,
                        utilization: float | None, hours: float | None, work: float | None, unit: str = "sample",
                        capacity: dict[str, Any] | None = None, terms: dict[str, Any] | None = None,
                        owned: dict[str, float] | None = None
                        ) -> tuple[list[tuple[str, float, str]], float, float | None, float | None, float | None, str]:
    """The break-even arithmetic of rent vs buy, in any unit of work (`unit`: 'sample' or 'token';
    throughputs in units/s, `work` the units of one job or None): the rows, the work ratio T_own/T_rent,
    the break-even utilisation and months, the utilisation used and the verdict. The rental is billed by
    its provider's `terms` (`rental.rental_terms`; None: billed by the second, no minimum): the maths is
    `rental._rent_versus_own`'s docstring. `owned` (cost.tco_breakdown at utilisation 0) gives the owned
    side's whole cost over the years, term by term; None: the purchase alone (capex)."""
    if terms is None:
        terms = rental_terms(None)
    fixed = owned["total"] if owned is not None else capex
    per = f"{unit}s/s"
    ratio = t_own / t_rent
    if utilization is None and hours is not None:
        utilization = min(1.0, hours / (years * HOURS_PER_YEAR))
    rv = _rent_versus_own(rate, ratio, fixed, energy, years, terms)
    u_star, m_star = rv["u_star"], rv["m_star"]
    rows: list[tuple[str, float, str]] = [("buy: capex", capex, "USD, one-off")]
    if owned is not None:
        rows += [
            ("buy: storage", owned["storage"], f"USD, one-off ({owned['storage_tb']:,.4g} usable TB)"),
            ("buy: financing", owned["financing"], f"USD over {years:g} years (a loan of capex + storage)"),
            ("buy: colocation", owned["colocation"], f"USD over {years:g} years (contracted kW x $/kW-month)"),
            ("buy: hardware support", owned["support"], f"USD over {years:g} years"),
            ("buy: operations staff", owned["staff"], f"USD over {years:g} years"),
            ("buy: resale at the end", owned["resale"], f"USD after {years:g} years (negative: money back)"),
            ("buy: whole cost of owning but electricity", fixed, f"USD over {years:g} years, any utilisation"),
        ]
    rows += [
        ("buy: electricity at full use", energy, "USD per year (power x average draw x PUE x $/kWh)"),
        ("buy: throughput", t_own, per),
        ("buy: capex per unit of throughput", capex / t_own, f"USD per {unit}/s"),
        ("rent: price", rate, "USD per hour"),
        (("rent: minimum term", terms["min_hours"], f"hours ({terms['pricing']}, {terms['step_text']}; {terms['source']})")
         if terms["min_hours"] >= 1 else
         ("rent: minimum term", terms["min_hours"] * 60.0,
          f"minutes ({terms['pricing']}, {terms['step_text']}; {terms['source']})")),
        ("rent: throughput", t_rent, per),
        ("rent: price per unit of throughput", 1000.0 * rate / t_rent, f"USD per hour per 1,000 {per}"),
        ("rent: cost of one owned-cluster hour of work", rv["rent_per_work_hour"],
         "USD per hour of work (billed hours by the provider's terms)"),
        ("rent: cost of a full year of the owned cluster's work", rv["rent_total"](1.0) / years, "USD per year"),
    ]
    if work is not None:
        own_h = work / t_own / 3600.0
        rent_h = work / t_rent / 3600.0
        billed = _billed(rent_h, terms)
        rows += [
            ("job: time to train, owned", own_h, "hours per job"),
            ("job: time to train, rented", rent_h, "hours per job"),
            ("job: rented hours billed, one job alone", billed, "hours (at least the minimum term, in its billing steps)"),
            ("job: rent", rate * billed, "USD per job (one job alone)"),
            ("job: rent, jobs back to back", rate * rent_h, "USD per job (packed into the billing steps)"),
            ("job: electricity, owned", energy / HOURS_PER_YEAR * own_h, "USD per job"),
        ]
        per_job_gap = rate * rent_h - energy / HOURS_PER_YEAR * own_h
        if per_job_gap > 0 and not terms["commitment"]:
            rows.append(("job: jobs for the purchase to pay off", fixed / per_job_gap, "jobs"))
    if utilization is not None:
        own_total = fixed + years * utilization * energy
        rows += [
            ("at your utilisation: owned total", own_total, f"USD over {years:g} years at {utilization:.0%} use"),
            ("at your utilisation: rented total", rv["rent_total"](utilization),
             f"USD over {years:g} years for the same work"),
        ]
    if u_star is not None and (not terms["commitment"] or 0 < u_star < 1):
        rows.append(("break-even utilisation", u_star, f"fraction of {years:g} years the owned cluster must be busy"
                     if not terms["commitment"] else f"fraction of {years:g} years: owning is cheaper below it"))
        if m_star is not None:
            rows.append(("break-even at full use", m_star, "months"))
    verdict = _rent_verdict(rv, years, utilization, terms)
    if capacity is not None and capacity["bound"]:  # the rented side is as large as the cap allows
        verdict += (f"; the rented design is at its capacity cap ({capacity['max_instances']} x {capacity['instance']}, "
                    f"{capacity['label']}): renting the same work takes "
                    f"{ratio:.2f} rented hours per owned hour")
    return rows, ratio, u_star, m_star, utilization, verdict


def rent_vs_buy(model: str, budget: float, cloud_catalog: str | Path | Catalog, owned_catalog: str | Path | Catalog | None = None,
                *, years: float = 3.0, opts: Options | None = None, utilization: float | None = None,
                chunk_designs: int | None = None) -> RentVsBuy:
    """Buy the best owned design for the budget, or rent the same work by the hour? Both spaces are
    evaluated in bounded memory, `chunk_designs` designs at a time (None: api.CHUNK_DESIGNS)."""
    opts = _options(opts)
    check_budget(budget)
    positive("--years", years, maximum=100.0)
    positive("--utilization", utilization, maximum=1.0)
    if utilization is not None and opts.hours is not None:
        raise InputError("give --utilization or --hours (which sets the utilisation), not both")
    if opts.hours is not None and opts.hours > years * HOURS_PER_YEAR:
        raise InputError(f"--hours {opts.hours:g} is more than the {years * HOURS_PER_YEAR:,.0f} hours in {years:g} years")
    own_cat, cloud_cat = _as_catalog(owned_catalog), _as_catalog(cloud_catalog)
    if own_cat.is_cloud:
        raise InputError(f"{own_cat.path}: the owned catalog is a cloud catalog; give an owned one with --catalog")
    if not cloud_cat.is_cloud:
        raise InputError(f"{cloud_cat.path}: not a cloud catalog (it has no [[instance]] entries)")
    opts.check_exclusions([own_cat, cloud_cat])
    own_opts = dataclasses.replace(opts, hours=None, tco_years=0.0)
    own_res, _ = solve_catalog(own_cat, model, budget, own_opts, top=1, chunk_designs=chunk_designs)
    buy = own_res.best
    t_own = buy["throughput_samples_per_s"]
    # rented: per-hour prices; the cheapest per hour that is at least as fast, else the fastest
    cloud_opts = dataclasses.replace(opts, hours=None, epochs=None, dataset_size=None, tco_years=0.0)
    # the cloud space in bounded memory (api.evaluate_bounded): with no budget a cloud space has no node
    # bound from the money, so each piece keeps only what this `choose` may pick or name, and the fastest
    # feasible design of each GPU type (`_survivors`), from which the fallback below picks
    cev, counts = evaluate_catalog_bounded(cloud_cat, model, None, cloud_opts, objective="cost",
                                           min_throughput=t_own, chunk_designs=chunk_designs)
    try:
        rent_res = choose(cev, budget=None, objective="cost", top=1, min_throughput=t_own, today=opts.as_of,
                          part_filter=opts.part_filter(cloud_cat), counts=counts)
        rent, capacity = rent_res.best, rent_res.capacity
    except InfeasibleError:
        ok = cev.timing.feasible & cev.costs.buildable
        if not ok.any():
            raise InfeasibleError(f"no instance in {cloud_cat.path} can run {model}", reason="memory/precision") from None
        idx = np.flatnonzero(ok)
        j = int(idx[np.argmax(cev.timing.throughput_samples_per_s[idx])])
        rent = design_dict(cev.frame([j]).iloc[0])
        capacity = capacity_summary(cev.space.chassis[int(cev.space.chassis_idx[j])], int(cev.space.nodes[j]))
    rate = rent["cost_usd"]  # USD per hour of the whole rented cluster
    capex = buy["capex_usd"]
    energy = buy["energy_usd_per_year"]
    terms = rental_terms(cloud_cat.chassis_by_id[rent["chassis"]])
    samples = opts.samples
    owned = tco_breakdown(own_res.evaluation.costs, int(own_res.ranked[0]), years, 0.0)
    rows, ratio, u_star, m_star, utilization, verdict = rent_buy_arithmetic(
        capex, energy, t_own, rate, rent["throughput_samples_per_s"], years=years, utilization=utilization,
        hours=opts.hours, work=samples, unit="sample", capacity=capacity, terms=terms, owned=owned)
    hours = opts.hours
    held = _held_equal(model, opts, years, utilization, samples, ratio, terms)
    return RentVsBuy(model, budget, years, own_cat.catalog.name, cloud_cat.catalog.name, buy, rent, rate, ratio,
                     capex, energy, u_star, m_star, utilization, hours, samples, rows, verdict, capacity, held,
                     terms["pricing"], terms["min_hours"], terms["interruption"],
                     _price_warnings([buy, rent]))


# ------------------------------------------------------------------------------------------------
# exports
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# import a SkyPilot-style price list (vms.csv)
# ------------------------------------------------------------------------------------------------

VMS_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice", "Region")

# SkyPilot accelerator names -> reference-2026 GPU ids (override or extend with gpu_map)
ACCELERATOR_GPU = {
    "K80": "k80", "V100": "v100-sxm2-16gb", "V100-32GB": "v100-sxm2-32gb", "T4": "t4", "A10G": "a10", "A10": "a10",
    "A100": "a100-sxm-40gb", "A100-80GB": "a100-sxm-80gb", "L4": "l4", "L40S": "l40s", "H100": "h100-sxm",
    "H200": "h200-sxm", "B200": "b200", "MI300X": "mi300x", "P100": "p100-sxm2",
}

def _toml_number(v: float) -> int | float:
    """A whole number as an int (`96`, as the price lists write it), any other as the float itself (written
    in full by the TOML writer: no rounding to 6 digits)."""
    return int(v) if float(v).is_integer() else float(v)


def import_vms_csv(csv_path: str | Path, *, base: str = "reference-2026", region: str | None = None,
                   gpu_map: dict[str, str] | None = None, default_network_gbps: float = 25.0,
                   name: str | None = None, date: str | None = None, base_ref: str | None = None,
                   provider: str = "aws", pricing: str = "on-demand") -> tuple[str, list[str]]:
    """Turn a SkyPilot `vms.csv` price list into a cloud catalog (TOML text); returns (text, warnings).

    `date` (YYYY-MM-DD) is when the prices were taken; it is stamped on every entry. Without it the
    file gets today's date, so the same price list imported on two days gives two files.

    A price list has no network column. The catalog names its `provider`, and an instance type the
    provider's facts know (costopt/data/cloud_instances.toml, cloud_facts.py) gets no network figure
    in the file: it loads the table's, the same one the shipped catalog loads. Other types get
    `default_network_gbps`, written into the entry and listed as an estimate.

    The `SpotPrice` column is kept: as `spot_usd_per_hour` beside the on-demand price, and with
    `pricing="spot"` it becomes the price (`usd_per_hour`, `pricing = "spot"`, the interruption terms
    in `interruption_note`; rows without a spot price are skipped with a warning).
    """
    checks.choice("--pricing", pricing, ("on-demand", "spot"))
    facts = provider_facts(provider) if provider else None
    if provider and facts is None:
        raise InputError(f"--provider {checks.shown(provider)}: no instance facts for it (known: "
                         f"{', '.join(PROVIDERS)}); every instance then needs --default-network-gbps", field="provider")
    p = Path(csv_path)
    if not p.exists():
        raise InputError(f"price list not found: {p}", field="price_list")
    if date is not None and (not isinstance(date, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", date)):
        raise InputError(f"--price-date {checks.shown(date)}: use YYYY-MM-DD (the date the prices were taken)",
                         field="price_date")
    if date is not None:
        checks.date("--price-date", date)
    positive("default network Gb/s (--default-network-gbps)", default_network_gbps)
    text = read_input_text(p, "price list", "csv", field="price_list")  # a regular UTF-8 file, bounded
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas raises many kinds on malformed CSV
        raise InputError(f"{p}: not a readable CSV: {exc}") from None
    missing = [c for c in VMS_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(missing)}; a SkyPilot vms.csv price list has "
                         f"{', '.join(VMS_COLUMNS)} (found: {', '.join(map(str, df.columns)) or 'none'})")
    base_cat = load_catalog(base)
    amap = {**ACCELERATOR_GPU, **(gpu_map or {})}
    for acc, gid in amap.items():
        if gid not in base_cat.gpus and acc in (gpu_map or {}):
            raise InputError(f"--map {acc}={gid}: unknown gpu '{gid}' in base catalog '{base}'")
    df = df[df["AcceleratorName"].str.strip() != ""]
    regions = list(dict.fromkeys(df["Region"]))
    if region is None:
        region = "us-east-1" if "us-east-1" in regions else (regions[0] if regions else "")
    elif region not in regions:
        raise InputError(f"{p}: no rows in region '{region}' (regions: {', '.join(regions[:20])})")
    df = df[df["Region"] == region]
    warnings: list[str] = []
    instances: list[dict[str, Any]] = []
    seen: set[str] = set()
    today = date or pd.Timestamp.now().strftime("%Y-%m-%d")
    skipped_acc: dict[str, int] = {}
    price_col = "SpotPrice" if pricing == "spot" else "Price"
    for line, row in df.iterrows():
        itype = row["InstanceType"].strip()
        iid = itype.lower()
        if iid in seen:
            continue
        acc = row["AcceleratorName"].strip()
        gid = amap.get(acc)
        if gid is None or gid not in base_cat.gpus:
            skipped_acc[acc] = skipped_acc.get(acc, 0) + 1
            continue
        try:
            count = float(row["AcceleratorCount"])
            price = float(row["Price"])
        except ValueError:
            warnings.append(f"row {line + 2} ({itype}): AcceleratorCount/Price not numbers; skipped")
            continue
        if pricing == "spot":
            try:
                price = float(row["SpotPrice"])
            except ValueError:
                warnings.append(f"row {line + 2} ({itype}): no SpotPrice; skipped (--pricing spot)")
                continue
        if count not in (1, 2, 4, 8, 16) or not (0 < price <= 1e9):
            warnings.append(f"row {line + 2} ({itype}): {count:g} GPUs at ${price:g}/h cannot be modelled; skipped")
            continue
        seen.add(iid)
        known = facts is not None and iid in facts.instances
        est = not known
        entry: dict[str, Any] = {"id": iid, "name": itype, "gpu": gid, "gpu_count": int(count)}
        if est:  # a type the facts table does not know: the assumed figure goes into the file, as an estimate
            entry.update(network_gbps=_toml_number(default_network_gbps), transport="tcp")
        entry["usd_per_hour"] = _toml_number(price)
        if gid.startswith(("v100-sxm", "p100-sxm")) and count > 1:  # P3/P2-era boards: NVLink mesh, no NVSwitch
            entry["intra_fabric"] = "nvlink-bridge"
        if pricing == "spot":
            entry.update(pricing="spot", interruption_note=SPOT_INTERRUPTION.get(provider, SPOT_INTERRUPTION[""]))
        for col, key in ((("SpotPrice", "spot_usd_per_hour"),) if pricing != "spot" else ()) + (
                ("vCPUs", "vcpus"), ("MemoryGiB", "memory_gib")):
            try:
                v = float(row[col])
                if 0 < v <= 1e9:
                    entry[key] = _toml_number(v)
            except ValueError:
                pass
        src = ("network and capacity cap: costopt/data/cloud_instances.toml" if not est else
               f"network not in the price list nor in costopt/data/cloud_instances.toml: {default_network_gbps:g} "
               "Gb/s assumed (--default-network-gbps)")
        entry.update(region=region, source=f"{p.name} row {line + 2}; {src}", date=today,
                     price_source=f"{p.name} row {line + 2} ({price_col}, {region})", price_date=today)
        if est:
            entry["estimates"] = ["network_gbps"]
        instances.append(entry)
    for acc, n in sorted(skipped_acc.items()):
        warnings.append(f"accelerator '{acc}' ({n} row(s)) has no GPU in '{base}'; skipped (add --map '{acc}=GPU_ID')")
    if not instances:
        if warnings:  # rows with a known GPU, all unusable: say why, not that the GPUs are unknown
            more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
            raise InputError(f"{p}: no row in region '{region}' could be imported: {warnings[0]}{more}")
        raise InputError(f"{p}: no row in region '{region}' has a GPU the base catalog '{base}' knows")
    cname = name or re.sub(r"[^a-z0-9._-]+", "-", p.stem.lower()).strip("-") or "imported"
    # The file is written by a TOML writer (tomli-w), never by string formatting: every value a price list
    # brings (region, instance type, the file's name) is a TOML string escaped by the writer, so a newline,
    # quote or bracket in one stays inside its string and cannot add a table or an instance. tomli-w:
    # writes only (tomllib reads), small, no dependencies, escapes per the TOML 1.0 spec (tomlkit keeps
    # comments and layout for editing, which a generated file does not need). The comment header holds
    # no text from the price list.
    import tomli_w

    cat: dict[str, Any] = {"name": cname, "base": base_ref or base, "kind": "cloud"}
    if provider:
        cat["provider"] = provider
    cat.update(description=f"Imported from {p.name}, region {region}", date=today)
    head = ("# Cloud catalog imported by `costopt catalog import` from a price list (see [catalog] description).\n"
            "# Network bandwidth is not in a vms.csv price list: types in costopt/data/cloud_instances.toml take\n"
            "# theirs (and their capacity cap) from there; see each instance's `source`.\n\n")
    return head + tomli_w.dumps({"catalog": cat, "instance": instances}), warnings


__all__ = ["Options", "compare", "Comparison", "PriceCut", "rent_vs_buy", "RentVsBuy", "ranked_table", "table_rows",
           "export_table", "evaluate_catalog", "evaluate_catalog_bounded", "solve_catalog", "import_vms_csv"]
