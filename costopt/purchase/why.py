"""Reasons a buyer asks for: why the winner, against the designs a buyer would weigh it against.

Among the designs the request allows (constraints met, within the budget, and for objective `cost` at
or above the throughput target), with v_d the objective value to minimise (`solver.objective_values`):

1. Another GPU type: o = argmin v_d over designs whose GPU differs from the winner's w (ties: the
   solver's order: cheaper for `throughput`, faster otherwise, then design order). The line states the
   objective's own comparison:
       throughput:           τ_w / τ_o − 1                     ("+18% throughput")
       cost-per-throughput:  1 − (c_w/τ_w) / (c_o/τ_o)          ("12% lower cost per sample/s")
       cost:                 c_o − c_w and 1 − c_w / c_o        ("$41,000 (17%) cheaper")
2. A near tie on throughput: n = the cheapest design with τ_d ≥ 0.95 τ_w among the allowed ones
   (ties: faster, then design order). When n ≠ w it is cheaper: the line gives c_n, 1 − c_n/c_w and
   τ_n/τ_w − 1, so a buyer sees what the last few percent of throughput cost.
3. The winner's throughput with its 80% range (costopt/perf/intervals.py: communication and compute error
   combined) and, in the same words, where its compute time comes from: measured on that GPU, or an
   estimate (a published same-model or same-class ratio, or a roofline):
       "throughput 1,234 samples/s (80% range 1,050-1,300; compute scaled from a published ResNet-50
        ratio to the measured GPU (estimate))"
   The near tie of 2. says whether its range overlaps the winner's (the solve's `near_tie` rule).

4. The parts of the winner whose catalog price is an estimate (listed under the entry's `estimates`),
   named in the same line: "the price of h200-nvl is an estimate, not a quote".

The strategy comparison (the best design of the other synchronisation family, PS vs all-reduce) is a
separate line: a question of how to run the cluster, not which to buy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from costopt.search.design_space import STRATEGIES
from costopt.perf.intervals import compute_label, range_phrase
from costopt.search.solver import objective_values
from costopt.core.units import format_usd

if TYPE_CHECKING:  # pragma: no cover
    from costopt.search.evaluation import Evaluation

NEAR_THROUGHPUT_FRACTION = 0.95  # "within 5% of its throughput"


@dataclass
class Reasons:
    why: str  # the buyer's line
    strategy: str  # the strategy comparison line
    facts: dict[str, Any] = field(default_factory=dict)  # the designs compared and the figures quoted


def estimated_price_parts(space, i: int) -> list[str]:
    """Ids of design i's GPU, chassis (or instance) and NIC whose catalog price is an estimate."""
    parts = [space.gpus[int(space.gpu_idx[i])], space.chassis[int(space.chassis_idx[i])]]
    if space.nic_idx[i] >= 0:
        parts.append(space.nics[int(space.nic_idx[i])])
    return [p.id for p in parts if "price_usd" in getattr(p, "estimates", ())]


def estimated_price_clause(ids: list[str]) -> str | None:
    """The words a buyer reads for estimated prices (None: every price is from a listing or quote)."""
    if not ids:
        return None
    if len(ids) == 1:
        return f"the price of {ids[0]} is an estimate, not a quote"
    return f"the prices of {', '.join(ids)} are estimates, not quotes"


def _money(v: float) -> str:
    return format_usd(v)


def _design(d: dict[str, Any]) -> str:
    """'4x8 rtx-4090, 1x eth-25g, ring': enough to tell two designs of one GPU type apart."""
    nic = "one node" if d["nic"] == "none" else f"{max(int(d['nics_per_node']), 1)}x {d['nic']}"
    return f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {nic}, {d['strategy']}"


def _short(d: dict[str, Any]) -> str:
    return f"{_design(d)}: {_money(d['cost_usd'])}, {d['throughput_samples_per_s']:,.1f} samples/s"


def _pick(mask: np.ndarray, values: np.ndarray, cost: np.ndarray, thr: np.ndarray, order_rank: np.ndarray,
          objective: str) -> int | None:
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return None
    second = cost[idx] if objective == "throughput" else -thr[idx]
    return int(idx[np.lexsort((order_rank[idx], second, values[idx]))[0]])


def explain(ev: "Evaluation", best: int, allowed: np.ndarray, objective: str, order_rank: np.ndarray,
            min_throughput: float | None = None) -> Reasons:
    """Why `best` wins among `allowed` (a mask already holding constraints and budget)."""
    s, t, c = ev.space, ev.timing, ev.costs
    cost, thr = c.cost_usd, t.throughput_samples_per_s
    allowed = allowed.copy()
    if objective == "cost" and min_throughput is not None:
        allowed &= thr >= min_throughput
    values = objective_values(objective, cost, thr)
    row = ev.rows([best])[0]
    facts: dict[str, Any] = {"objective": objective}
    parts = []

    o = _pick(allowed & (s.gpu_idx != s.gpu_idx[best]), values, cost, thr, order_rank, objective)
    if o is None:
        parts.append("no design of another GPU type fits the request")
    else:
        od = ev.rows([o])[0]
        facts["other_gpu"] = {k: od[k] for k in ("gpu", "total_gpus", "cost_usd", "throughput_samples_per_s")}
        if objective == "throughput":
            gain = thr[best] / thr[o] - 1.0
            facts["other_gpu_throughput_gain"] = gain
            parts.append(f"{gain:+.0%} throughput vs the best {od['gpu']} design ({_short(od)})")
        elif objective == "cost-per-throughput":
            saving = 1.0 - (cost[best] / thr[best]) / (cost[o] / thr[o])
            facts["other_gpu_cost_per_throughput_saving"] = saving
            parts.append(f"{saving:.0%} lower cost per sample/s than the best {od['gpu']} design ({_short(od)})")
        else:
            saving = 1.0 - cost[best] / cost[o]
            facts["other_gpu_cost_saving"] = saving
            target = f" reaching {min_throughput:,.1f} samples/s" if min_throughput is not None else ""
            parts.append(f"{_money(cost[o] - cost[best])} ({saving:.0%}) cheaper than the cheapest {od['gpu']} "
                         f"design{target} ({_short(od)})")

    near_pool = allowed & (thr >= NEAR_THROUGHPUT_FRACTION * thr[best])
    near_pool[best] = True
    idx = np.flatnonzero(near_pool)
    n = int(idx[np.lexsort((order_rank[idx], -thr[idx], cost[idx]))[0]])
    if n == best or cost[n] >= cost[best]:
        parts.append(f"no design within {1 - NEAR_THROUGHPUT_FRACTION:.0%} of its throughput costs less")
    else:
        nd = ev.rows([n])[0]
        facts["near_cheaper"] = {k: nd[k] for k in ("gpu", "gpus_per_node", "nodes", "nic", "cost_usd",
                                                    "throughput_samples_per_s")}
        facts["near_cheaper_cost_saving"] = 1.0 - cost[n] / cost[best]
        facts["near_cheaper_throughput_change"] = thr[n] / thr[best] - 1.0
        overlap = bool(nd["throughput_high_samples_per_s"] >= row["throughput_low_samples_per_s"]
                       and row["throughput_high_samples_per_s"] >= nd["throughput_low_samples_per_s"])
        facts["near_cheaper_ranges_overlap"] = overlap
        parts.append(f"near tie: {_design(nd)} costs {_money(cost[n])} "
                     f"({facts['near_cheaper_cost_saving']:.0%} less) for {thr[n] / thr[best] - 1.0:+.1%} throughput"
                     + (" (80% ranges overlap)" if overlap else " (outside the winner's 80% range)"))

    facts["compute_source"] = str(row.get("compute_source", ""))
    gi = int(s.gpu_idx[best])
    label = compute_label(str(ev.compute.source[gi]), ev.model, str(ev.compute.basis[gi]), ev.space.gpus[gi].id)
    facts["compute_label"] = label
    head = "throughput " + range_phrase(row["throughput_samples_per_s"], row["throughput_low_samples_per_s"],
                                        row["throughput_high_samples_per_s"], label)
    facts["estimated_prices"] = estimated_price_parts(s, best)
    price_note = estimated_price_clause(facts["estimated_prices"])
    why = f"{row['total_gpus']} x {row['gpu']} ({_design(row)}): " + "; ".join([head] + parts
                                                                            + ([price_note] if price_note else []))
    return Reasons(why, _strategy_line(ev, best, row, allowed, values, cost, thr, order_rank, objective), facts)


def _strategy_line(ev, best, row, allowed, values, cost, thr, order_rank, objective) -> str:
    s = ev.space
    strat = row["strategy"] + ("" if row["reduce_on"] == "gpu" else " (cpu)")
    nic = "inside one node" if row["nic"] == "none" else f"over {ev.catalog.nics[row['nic']].name}"
    parts = []
    if row["bottleneck"] == "compute":
        parts.append("communication hidden behind backward" if row["total_gpus"] > 1 else "single GPU, no communication")
    else:
        share = row["t_exposed_comm_s"] / row["t_iter_s"]
        parts.append(f"{row['bottleneck']}-bound ({share:.0%} of the iteration is exposed communication)")
    is_ps = s.strategy == STRATEGIES.index("ps")
    j = _pick(allowed & (is_ps != is_ps[best]), values, cost, thr, order_rank, objective)
    if j is not None:
        label = "PS" if is_ps[j] else "all-reduce"
        if objective == "throughput":
            parts.append(f"{thr[best] / thr[j] - 1.0:+.0%} throughput vs the best {label} design")
        elif objective == "cost-per-throughput":
            parts.append(f"{1.0 - values[best] / values[j]:.0%} lower cost per sample/s than the best {label} design")
        else:
            parts.append(f"{1.0 - cost[best] / cost[j]:.0%} cheaper than the cheapest {label} design")
    return f"{strat} {nic}: " + "; ".join(parts)
