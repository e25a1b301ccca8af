"""Purchasing for a large transformer (`--model llama3_70b --tokens N`, or `--model-config FILE`): compare of
catalogs, rent vs buy, the ranked table for spreadsheets, and the rent-or-buy section of the report.

Data flow (no new model, no new cost rule):

    LlmJob.search(catalog, budget)   search_llm (search/llm_search.py): every hardware design with its
                                     fastest layout that fits, tokens/s with its 80% range, capex, power
       -> priced(found, basis)       cost_usd re-stated on a `cost.CostBasis` (the rule of every data-parallel
                                     purchasing command), with tokens in place of samples: a job is N
                                     tokens, its hours h_d = N / tokens_per_s_d / 3600; the budget limits
                                     the purchase (capex) of owned designs and the rent of rented ones
       -> choose_llm                 the pick, the best design of each other GPU type, why (llm_search.py)

- compare: each catalog's best design for the same budget, on one basis: capex (+ `tco_years` x
  electricity) between owned catalogs; beside a cloud catalog, on a horizon (`hours`, else the job of
  `tokens` tokens), owned designs amortised over `years` at `utilization` (CostBasis). The winner by the
  objective, and for each loser the price cut its key part (GPU, or rented instance) needs to match it:
  the best score within the budget never falls as that price falls, so a bisection on the price factor
  finds it, with the timing evaluated once (node counts enumerated at the floor price).
- rent vs buy: the owned design bought with the budget (T_own tokens/s) against the cheapest rented
  design per hour that is at least as fast, else the fastest one; both train the same model at the same
  sequence length and global batch, and the same `tokens` per job. The break-even arithmetic is
  `purchasing.rent_buy_arithmetic`, the one used for data-parallel jobs.
- table: every design that fits, is offered and is within the budget, best first by the objective (then
  cheaper, then the deterministic design order), as columns built from the search's arrays.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costopt.core import checks
from costopt.core.checks import non_negative, positive
from costopt.core.errors import InfeasibleError, InputError
from costopt.core.units import HOURS_PER_YEAR
from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.catalog_schema import Catalog as CatalogSchema
from costopt.hardware.cost import CostBasis, evaluate_costs, price_on_basis, within_budget
from costopt.search.design_space import NO_NIC
from costopt.search.llm_search import OWNED_YEARS, LlmSearch, choose_llm, search_llm
from costopt.search.llm_table import llm_frame
from costopt.search.solver import objective_values
from costopt.purchase.purchasing import PriceCut  # one record of a needed price cut, both workloads
from costopt.purchase.rental import _compare_held_equal, _price_warnings

NO_BUDGET = 1e15  # the rented side of rent vs buy is not limited by the purchase budget: no node bound from money


@dataclass
class LlmJob:
    """The large-model training job and the search settings shared by every catalog of a request."""

    model: str | None = None
    model_config: str | Path | None = None
    tokens: float | None = None
    seq_len: int | None = None
    global_batch: int | None = None
    precision: str = "amp_bf16"
    strategies: list[str] | None = None
    max_nodes: int | None = None
    include: list[str] | None = None
    exclude_gpus: list[str] | None = None
    max_instances: int | None = None
    objective: str = "throughput"
    today: Any = None  # the day price ages are counted to (--as-of; None: the clock's)

    def check(self) -> None:
        positive("tokens", self.tokens)
        if self.objective not in ("throughput", "cost-per-throughput"):
            raise InputError(f"objective must be throughput or cost-per-throughput here, got '{self.objective}'",
                             field="objective")
        self.exclude_gpus = checks.ident_list("exclude gpu", self.exclude_gpus)
        self.today = checks.as_of(self.today)

    def search(self, catalog: Catalog, budget: float, prune: bool = False) -> LlmSearch:
        """`search_llm` on one catalog; --max-instances only where it rents, --exclude-gpu ids it lists.
        Every node count is timed unless `prune` (only where the designs keep the search's own costs)."""
        return search_llm(budget, self.model, objective=self.objective, catalog=catalog, precision=self.precision,
                          seq_len=self.seq_len, global_batch=self.global_batch, max_nodes=self.max_nodes,
                          model_config=self.model_config, strategies=self.strategies, include=self.include,
                          exclude_gpus=[g for g in self.exclude_gpus or [] if g in catalog.gpus] or None,
                          max_instances=self.max_instances if catalog.is_cloud else None,
                          prune=prune)  # repriced afterwards (cost basis, price cuts): every node count timed


def _catalog(c: str | Path | Catalog | None) -> Catalog:
    return c if isinstance(c, Catalog) else load_catalog(c)


def _check_exclusions(job: LlmJob, cats: list[Catalog]) -> None:
    known = {g for c in cats for g in c.gpus}
    unknown = [g for g in job.exclude_gpus or [] if g not in known]
    if unknown:
        raise InputError(f"--exclude-gpu: unknown gpu {', '.join(repr(u) for u in unknown)} "
                         f"(known: {', '.join(sorted(known))})", field="exclude_gpu")


def priced(found: LlmSearch, basis: CostBasis) -> LlmSearch:
    """The search with cost_usd on `basis` (module docstring); the budget limits the purchase (owned) or the
    rent (rented): `cost.within_budget` on the spend, which the choice applies (search/limits.py)."""
    costs = price_on_basis(found.costs, found.ev.timing.tokens_per_s, basis)
    return dataclasses.replace(found, costs=costs, basis=basis)


def _index(found: LlmSearch, rec: dict) -> int:
    """The design of a record of `choose_llm` in the search (its hardware: each design has one layout)."""
    s = found.space
    gpu = np.array([g.id for g in s.gpus], dtype=object)[s.gpu_idx]
    ch = np.array([c.id for c in s.chassis], dtype=object)[s.chassis_idx]
    nic = np.where(s.nic_idx == NO_NIC, None, np.array([n.id for n in s.nics] + [None], dtype=object)[s.nic_idx])
    hit = np.flatnonzero((gpu == rec["gpu"]) & (ch == rec["chassis"]) & (s.gpus_per_node == rec["gpus_per_node"])
                         & (s.nodes == rec["nodes"]) & (nic == rec["nic"])
                         & (np.where(s.nic_idx == NO_NIC, 0, s.nics_per_node) == rec["nics_per_node"]))
    return int(hit[0])


# ------------------------------------------------------------------------------------------------
# compare
# ------------------------------------------------------------------------------------------------


@dataclass
class LlmCatalogAnswer:
    label: str
    catalog: Catalog
    result: dict[str, Any] | None  # choose_llm's answer
    cost_basis: str
    error: str = ""

    @property
    def best(self) -> dict[str, Any] | None:
        return self.result["best"] if self.result else None


@dataclass
class LlmComparison:
    model: str
    budget_usd: float
    objective: str
    tokens: float | None
    global_batch_sequences: int
    answers: list[LlmCatalogAnswer]
    winner: int
    margin: dict[str, Any]
    price_cuts: list[PriceCut] = field(default_factory=list)
    held_equal: str = ""  # what every catalog's pick shares: model, job, calendar, each rental's terms
    price_warnings: list[str] = field(default_factory=list)
    exact_batch: bool = False  # every pick holds the global batch exactly (--global-batch given)

    def to_json_dict(self) -> dict[str, Any]:
        return {"kind": "large-model", "model": self.model, "budget_usd": self.budget_usd, "objective": self.objective,
                "held_equal": self.held_equal, "price_warnings": self.price_warnings,
                "global_batch_exact": self.exact_batch,
                "tokens_to_train": self.tokens, "global_batch_sequences": self.global_batch_sequences,
                "catalogs": [{"label": a.label, "catalog": a.catalog.catalog.name, "kind": a.catalog.catalog.kind,
                              "cost_basis": a.cost_basis, "best": a.best, "error": a.error or None,
                              "capacity": a.result.get("capacity") if a.result else None} for a in self.answers],
                "winner": self.answers[self.winner].label, "margin": self.margin,
                "price_cuts": [dataclasses.asdict(p) for p in self.price_cuts]}


def _score(objective: str, rec: dict) -> float:
    """Higher is better: −`objective_values` of a record."""
    return -float(objective_values(objective, np.array([rec["cost_usd"]]), np.array([rec["tokens_per_s"]]))[0])


def _best_score(found: LlmSearch, objective: str) -> float:
    ok = found.ok & within_budget(found.costs, found.budget)  # the purchase (owned) or the rent within the budget
    if not ok.any():
        return -math.inf
    idx = np.flatnonzero(ok)
    return float((-objective_values(objective, found.costs.cost_usd[idx], found.ev.timing.tokens_per_s[idx])).max())


def _scaled(cat: Catalog, kind: str, pid: str, factor: float) -> Catalog:
    """The catalog with one part's price × factor (a GPU's price_usd, or a rented instance's usd_per_hour)."""
    data = cat.model_dump(mode="python")
    for item in data["gpu" if kind == "gpu" else "chassis"]:
        if item["id"] == pid:
            key = "price_usd" if kind == "gpu" else "usd_per_hour"
            item[key] = item[key] * factor
    return Catalog.from_data(CatalogSchema.model_validate(data).model_dump())


def _repriced(found: LlmSearch, kind: str, pid: str, price: float, basis: CostBasis) -> LlmSearch:
    """The same designs (timing unchanged) with one part at `price` (USD per unit, or per hour)."""
    s = found.space
    if kind == "gpu":
        gpus = [g.model_copy(update={"price_usd": price}) if g.id == pid else g for g in s.gpus]
        space = dataclasses.replace(s, gpus=gpus)
    else:
        chs = [c.model_copy(update={"usd_per_hour": price}) if c.id == pid else c for c in s.chassis]
        space = dataclasses.replace(s, chassis=chs)
    costs = evaluate_costs(space, found.catalog.site, facility=found.catalog.facility)
    return priced(dataclasses.replace(found, space=space, costs=costs), basis)


def price_cut_llm(loser: LlmCatalogAnswer, target: float, job: LlmJob, budget: float, basis: CostBasis,
                  floor: float = 0.01) -> PriceCut:
    """Bisection on the price factor of the loser's key part until its best score matches `target`."""
    best, cat = loser.best, loser.catalog
    if cat.is_cloud:
        kind, pid, fld = "instance", best["chassis"], "usd_per_hour"
        current = cat.chassis_by_id[pid].usd_per_hour
    else:
        kind, pid, fld = "gpu", best["gpu"], "price_usd"
        current = cat.gpus[pid].price_usd
    gpu = best["gpu"]
    # the designs of that GPU, node counts enumerated at the floor price, then priced back at today's
    narrow = dataclasses.replace(job, exclude_gpus=None, include=["all"])
    found = narrow.search(_scaled(cat, kind, pid, floor), budget)
    found = dataclasses.replace(found, offered=found.offered & (np.array([g.id for g in found.space.gpus],
                                                                         dtype=object)[found.space.gpu_idx] == gpu))
    lo, hi = floor, 1.0
    if _best_score(_repriced(found, kind, pid, current * lo, basis), job.objective) < target:
        return PriceCut(loser.label, kind, pid, fld, current, None, None, None,
                           f"even at {floor:.0%} of today's price no {pid} design reaches the winner")
    for _ in range(40):  # factor resolution 2^-40
        mid = 0.5 * (lo + hi)
        if _best_score(_repriced(found, kind, pid, current * mid, basis), job.objective) >= target:
            lo = mid
        else:
            hi = mid
    at = choose_llm(_repriced(found, kind, pid, current * lo, basis), tokens=job.tokens, top=1, today=job.today)["best"]
    return PriceCut(loser.label, kind, pid, fld, current, current * lo, 1.0 - lo, at)


def compare_llm(catalogs: list[str | Path | Catalog], job: LlmJob, budget: float, *, hours: float | None = None,
                tco_years: float = 0.0, years: float = 3.0, utilization: float = 1.0,
                price_cuts: bool = True) -> LlmComparison:
    """Each catalog's best design for a large-model job at the same budget, the winner, the losers' price cuts."""
    job.check()
    checks.budget(budget)
    positive("hours", hours)
    non_negative("TCO years", tco_years)
    if isinstance(catalogs, (str, bytes, Path)) or not isinstance(catalogs, (list, tuple)):
        raise InputError(f"compare needs a list of catalogs, got {type(catalogs).__name__}", field="catalogs")
    if len(catalogs) < 2:
        raise InputError("compare needs at least two catalogs")
    cats = [_catalog(c) for c in catalogs]
    _check_exclusions(job, cats)
    if job.max_instances is not None and not any(c.is_cloud for c in cats):
        raise InputError("--max-instances: none of the catalogs is a cloud catalog (use --max-nodes)",
                         field="max_instances")
    for cat in cats:
        if cat.is_cloud and hours is None and job.tokens is None:
            raise InputError(f"{cat.path}: a cloud catalog is priced per hour; give --tokens (the job) or --hours "
                             "so its cost is comparable with a purchase")
    amortize = any(c.is_cloud for c in cats) and not all(c.is_cloud for c in cats)
    if hours is not None and not any(c.is_cloud for c in cats):
        raise InputError("--hours prices rented designs; none of the catalogs is a cloud catalog", field="hours")
    if tco_years and all(c.is_cloud for c in cats):
        raise InputError("--tco-years adds electricity to owned designs; every catalog is a cloud catalog",
                         field="tco_years")
    if utilization != 1.0 and not amortize:
        raise InputError("--utilization: only when an owned catalog is compared with a cloud one (the purchase is "
                         "then amortised over --years at that use)", field="utilization")
    basis = CostBasis(tco_years=tco_years, hours=hours, samples=job.tokens if hours is None else None,
                      amortize_years=years if amortize else None, utilization=utilization)
    answers: list[LlmCatalogAnswer] = []
    gb, exact = None, False
    for cat in cats:
        label = Path(cat.path.split(" (on base")[0]).name if cat.path else cat.catalog.name
        found = priced(job.search(cat, budget), basis)
        gb, exact = found.global_batch, found.exact_batch
        try:
            res = choose_llm(found, tokens=job.tokens, top=5, years=years, today=job.today)
            res["best"]["cost_basis"] = basis.label(cat.is_cloud)
            answers.append(LlmCatalogAnswer(label, cat, res, basis.label(cat.is_cloud)))
        except InfeasibleError as exc:
            answers.append(LlmCatalogAnswer(label, cat, None, basis.label(cat.is_cloud), str(exc)))
    scores = [-math.inf if a.best is None else _score(job.objective, a.best) for a in answers]
    if all(s == -math.inf for s in scores):
        raise InfeasibleError(f"no catalog has a design within ${budget:,.0f}: " + "; ".join(a.error for a in answers),
                              reason="budget")
    order = sorted(range(len(answers)), key=lambda i: (-scores[i], answers[i].best["cost_usd"] if answers[i].best else 0, i))
    w = order[0]
    wb = answers[w].best
    margin: dict[str, Any] = {}
    if answers[order[1]].best is not None:
        rb = answers[order[1]].best
        margin = {"runner_up": answers[order[1]].label,
                  "throughput_ratio": wb["tokens_per_s"] / rb["tokens_per_s"],
                  "throughput_gain": wb["tokens_per_s"] / rb["tokens_per_s"] - 1.0,
                  "cost_difference_usd": wb["cost_usd"] - rb["cost_usd"],
                  "usd_per_token_per_s_ratio": (wb["cost_usd"] / wb["tokens_per_s"]) / (rb["cost_usd"] / rb["tokens_per_s"])}
    cuts = [price_cut_llm(answers[i], scores[w], job, budget, basis) for i in order[1:]
            if price_cuts and answers[i].best is not None]
    name = answers[w].result["model"]
    held = _compare_held(answers, name, job, hours, years, utilization, int(gb), exact)
    warnings = _price_warnings([a.best for a in answers if a.best is not None])
    return LlmComparison(name, float(budget), job.objective, job.tokens, int(gb), answers, w, margin, cuts, held,
                         warnings, exact)


@dataclass
class _HeldOptions:
    """What `rental._compare_held_equal` reads of a request, for a large-model job (its work: tokens)."""

    precision: str
    samples: float | None
    hours: float | None
    years: float
    utilization: float


def _compare_held(answers, model: str, job: LlmJob, hours, years: float, utilization: float, gb: int,
                  exact: bool) -> str:
    """The data-parallel compare's held-equal sentence, its work counted in tokens, plus the sequence and batch."""
    text = _compare_held_equal(answers, model, _HeldOptions(job.precision, job.tokens if hours is None else None,
                                                            hours, years, utilization))
    if job.tokens is not None and hours is None:
        text = text.replace(f"({job.tokens:,.0f} samples)", f"({job.tokens:,.0f} tokens)")
    seq = answers[0].best["seq_len"] if answers[0].best else None
    return text + (f"; sequence length {seq:,}" if seq else "") + (
        f"; global batch {gb:,} sequences, held exactly" if exact else
        f"; global batch about {gb:,} sequences (the default{f', {gb * seq / 1e6:.1f} M tokens' if seq else ''}; each "
        "design rounds it to its "
        "data-parallel degree: --global-batch holds one exactly)")


# ------------------------------------------------------------------------------------------------
# rent vs buy
# ------------------------------------------------------------------------------------------------


def rent_vs_buy_llm(job: LlmJob, budget: float, cloud_catalog: str | Path | Catalog,
                    owned_catalog: str | Path | Catalog | None = None, *, years: float = 3.0,
                    utilization: float | None = None, hours: float | None = None):
    """Buy the best owned design for the budget, or rent the same large-model job by the hour?"""
    from costopt.purchase.purchasing import RentVsBuy, rent_buy_arithmetic
    from costopt.purchase.rental import _held_equal, rental_terms

    job.check()
    checks.budget(budget)
    positive("--years", years, maximum=100.0)
    positive("--utilization", utilization, maximum=1.0)
    positive("hours", hours)
    if utilization is not None and hours is not None:
        raise InputError("give --utilization or --hours (which sets the utilisation), not both")
    if hours is not None and hours > years * HOURS_PER_YEAR:
        raise InputError(f"--hours {hours:g} is more than the {years * HOURS_PER_YEAR:,.0f} hours in {years:g} years")
    own_cat, cloud_cat = _catalog(owned_catalog), _catalog(cloud_catalog)
    if own_cat.is_cloud:
        raise InputError(f"{own_cat.path}: the owned catalog is a cloud catalog; give an owned one with --catalog")
    if not cloud_cat.is_cloud:
        raise InputError(f"{cloud_cat.path}: not a cloud catalog (it has no [[instance]] entries)")
    _check_exclusions(job, [own_cat, cloud_cat])
    owned = job.search(own_cat, budget)
    buy_res = choose_llm(owned, tokens=job.tokens, top=1, years=years, today=job.today)
    buy = buy_res["best"]
    t_own = buy["tokens_per_s"]
    energy = float(owned.costs.energy_usd_per_year[_index(owned, buy)])
    # rented: per-hour prices; the cheapest per hour at least as fast as the purchase, else the fastest
    rented = job.search(cloud_cat, NO_BUDGET)
    ok = rented.ok
    if not ok.any():
        raise InfeasibleError(f"no instance in {cloud_cat.path} can train {buy_res['model']}: none fits in GPU memory "
                              "with any layout", reason="memory")
    thr, rate_all = rented.ev.timing.tokens_per_s, rented.costs.cost_usd
    fast = ok & (thr >= t_own)
    order = rented.space.order_rank()
    idx = np.flatnonzero(fast if fast.any() else ok)
    j = (int(idx[np.lexsort((order[idx], -thr[idx], rate_all[idx]))[0]]) if fast.any()
         else int(idx[np.lexsort((order[idx], rate_all[idx], -thr[idx]))[0]]))
    one = dataclasses.replace(rented, offered=np.arange(len(rented.space)) == j)
    rent_res = choose_llm(one, tokens=job.tokens, top=1, years=years, today=job.today)
    rent = rent_res["best"]
    capacity = rent_res.get("capacity")
    rate = rent["cost_usd"]  # USD per hour of the whole rented cluster
    from costopt.hardware.cost import tco_breakdown
    terms = rental_terms(cloud_cat.chassis_by_id[rent["chassis"]])  # billed by the provider's terms
    owned_terms = tco_breakdown(owned.costs, _index(owned, buy), years, 0.0)  # the whole cost of owning
    rows, ratio, u_star, m_star, utilization, verdict = rent_buy_arithmetic(
        buy["capex_usd"], energy, t_own, rate, rent["tokens_per_s"], years=years, utilization=utilization,
        hours=hours, work=job.tokens, unit="token", capacity=capacity, terms=terms, owned=owned_terms)
    held = _held_equal(buy_res["model"], job, years, utilization, job.tokens, ratio, terms)
    if job.tokens is not None:  # the sentence counts the job's work in its unit
        held = held.replace(f"({job.tokens:,.0f} samples;", f"({job.tokens:,.0f} tokens;")
    held += f"; the same sequence length ({buy['seq_len']:,})" + (
        f" and global batch ({owned.global_batch:,} sequences, held exactly)" if owned.exact_batch else
        f"; a global batch of about {owned.global_batch:,} sequences (the default, "
        f"{owned.global_batch * buy['seq_len'] / 1e6:.1f} M tokens), each design "
        f"rounding it to its data-parallel degree ({buy['global_batch_sequences']:,} bought, "
        f"{rent['global_batch_sequences']:,} rented; --global-batch holds one exactly)")
    r = RentVsBuy(buy_res["model"], float(budget), years, own_cat.catalog.name, cloud_cat.catalog.name, buy, rent,
                  rate, ratio, buy["capex_usd"], energy, u_star, m_star, utilization, hours, job.tokens, rows, verdict,
                  capacity, held, terms["pricing"], terms["min_hours"], terms["interruption"],
                  _price_warnings([buy, rent]))
    r.kind = "large-model"  # type: ignore[attr-defined]
    r.parts_offered = buy_res["parts_offered"]  # type: ignore[attr-defined]
    return r


def rent_vs_buy_json(r) -> dict[str, Any]:
    """A large-model rent vs buy as JSON: the data-parallel fields, `samples` named `tokens_to_train`."""
    d = r.to_json_dict()
    d["tokens_to_train"] = d.pop("samples")
    d["kind"] = "large-model"
    d["global_batch_sequences"] = r.buy["global_batch_sequences"]
    return d


# ------------------------------------------------------------------------------------------------
# the ranked table (export)
# ------------------------------------------------------------------------------------------------


def table_basis(cat: Catalog, job: LlmJob, hours: float | None, tco_years: float) -> CostBasis:
    """What cost_usd means in a one-catalog table: owned capex (+ electricity over `tco_years`); rented
    rent for `hours`, else per job of `tokens`, else per hour."""
    non_negative("TCO years", tco_years)
    positive("hours", hours)
    return CostBasis(tco_years=tco_years, hours=hours, samples=job.tokens if hours is None else None)


def ranked_table_llm(found: LlmSearch, basis: CostBasis, tokens: float | None, years: float = OWNED_YEARS) -> pd.DataFrame:
    """Every design that fits, is offered and within the budget, best first (module docstring)."""
    c, thr = found.costs, found.ev.timing.tokens_per_s
    idx = np.flatnonzero(found.ok & within_budget(c, found.budget))
    rank = found.space.order_rank()
    idx = idx[np.lexsort((rank[idx], c.cost_usd[idx], objective_values(found.objective, c.cost_usd[idx], thr[idx])))]
    df = llm_frame(found, idx, basis, tokens, years)
    df.insert(0, "rank", np.arange(1, len(idx) + 1))
    return df


def llm_table_about(found: LlmSearch, budget: float, basis: CostBasis, tokens: float | None) -> dict[str, Any]:
    """`about` rows and `codes` for `export.export_table` of a large-model table."""
    from costopt.core.version import __version__
    from costopt.purchase.export import basis_codes, today

    cat, cfg = found.catalog, found.cfg
    about = [("model", cfg.name), ("params", f"{cfg.params:,.0f}"), ("seq_len", str(cfg.seq_len)),
             ("global_batch_sequences", str(found.global_batch)), ("tokens_to_train", "none" if tokens is None
                                                                   else f"{tokens:,.0f}"),
             ("budget_usd", f"{budget:,.2f}"), ("objective", found.objective),
             ("catalog", f"{cat.catalog.name} ({cat.catalog.kind})"), ("catalog_file", str(cat.path or "built-in")),
             ("catalog_date", str(cat.catalog.date)), ("precision", found.precision),
             ("cost_basis_owned", basis.label(False)), ("cost_basis_rented", basis.label(True)),
             ("hours", "none" if basis.hours is None else f"{basis.hours:g}"), ("tco_years", f"{basis.tco_years:g}"),
             ("parts_offered", found.parts.describe()), ("date", today()), ("costopt_version", __version__)]
    return {"about": about, "codes": basis_codes(basis)}


def export_llm(catalog: str | Path | Catalog | None, job: LlmJob, budget: float, fmt: str, out: str | Path | None,
               inputs: list[Any], *, hours: float | None = None, tco_years: float = 0.0) -> str | None:
    """The ranked large-model table as csv / xlsx / json (`export.export_table`); the text when `out` is None.
    Nothing within the budget: `choose_llm`'s InfeasibleError (exit 1, the nearest design)."""
    from costopt.purchase.export import export_table

    job.check()
    checks.budget(budget)
    cat = _catalog(catalog)
    _check_exclusions(job, [cat])
    if job.max_instances is not None and not cat.is_cloud:
        raise InputError(f"--max-instances: {cat.path or cat.catalog.name} is not a cloud catalog (use --max-nodes)",
                         field="max_instances")
    if hours is not None and not cat.is_cloud:
        raise InputError(f"--hours prices rented designs; {cat.path or cat.catalog.name} is an owned catalog",
                         field="hours")
    if tco_years and cat.is_cloud:
        raise InputError(f"--tco-years adds electricity to owned designs; {cat.path} is a cloud catalog",
                         field="tco_years")
    basis = table_basis(cat, job, hours, tco_years)
    # an owned catalog without --tco-years keeps the search's capex, so the table can be the solve's own
    # pruned search (the node counts whose bound could win, search/llm_nodes.py): each GPU type's best
    # row is the solve's; otherwise every node count is timed
    found = priced(job.search(cat, budget, prune=not cat.is_cloud and not tco_years), basis)
    table = ranked_table_llm(found, basis, job.tokens)
    if table.empty:
        choose_llm(found, tokens=job.tokens, top=1)  # raises what solve raises
    return export_table(table, fmt, out, inputs, **llm_table_about(found, budget, basis, job.tokens))


__all__ = ["LlmJob", "compare_llm", "rent_vs_buy_llm", "rent_vs_buy_json", "export_llm", "ranked_table_llm",
           "llm_frame", "priced", "LlmComparison"]
