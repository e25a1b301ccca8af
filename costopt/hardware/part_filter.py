"""Which parts a search offers by default, and what the filter left out.

A buyer's default search holds only parts a vendor would quote for a new data-centre cluster today:
GPUs of segment `datacenter` or `workstation` whose lifecycle is `current`, in chassis and on NICs
that are `current` too (catalog.py: `segment`, `lifecycle`). Every other design is left out for the
first of these reasons that applies to it:

    excluded_gpu   its GPU was named with --exclude-gpu
    consumer       its GPU is a consumer card (GeForce / Radeon): the vendor's driver licence may
                   not allow data-centre deployment; or its NIC is a consumer adapter (`segment`)
    end_of_life    its GPU, chassis or NIC is discontinued
    legacy         its GPU, chassis or NIC is superseded (still sold or supported, not quoted for new builds)

`--include consumer,legacy,eol` opens those classes again. A GPU named with `--gpu` is always
offered: naming it is asking for it; so is a part a workload mix names (owned in `[inventory]`, in
`[stock]`, with a `[[discount]]`, or in a job's `gpus`).

The left-out designs are still evaluated (they are part of the same vectorised pass), so the
output can say what the best of them would give, under the same constraints and objective:

    throughput             ratio = τ_excluded / τ_chosen                      ("x the throughput")
    cost-per-throughput    ratio = (c/τ)_chosen / (c/τ)_excluded              ("x the throughput per dollar")
    cost                   ratio = c_chosen / c_excluded                      ("x cheaper")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from costopt.hardware.catalog import Catalog
from costopt.search.design_space import NO_NIC, DesignSpace
from costopt.core import checks
from costopt.core.errors import InputError
from costopt.search.solver import best_on_front

REASONS = ("excluded_gpu", "consumer", "end_of_life", "legacy")
KEPT = -1
# --include words -> the class they open
INCLUDE_WORDS = {"consumer": "consumer", "legacy": "legacy", "eol": "end_of_life", "end_of_life": "end_of_life"}
_LIFECYCLE_RANK = {"current": 0, "legacy": 1, "end_of_life": 2}
_CAUTION = {
    "consumer": "a consumer card: check the driver licence terms before a data-centre deployment "
                "(NVIDIA's GeForce licence does not allow it)",
    "end_of_life": "discontinued: check supply, warranty and driver support",
    "legacy": "a superseded generation: check supply and support",
    "excluded_gpu": "you left this GPU out with --exclude-gpu",
}


def caution(reason: str) -> str:
    """What a buyer should check about a design left out for `reason` (one of REASONS)."""
    return _CAUTION[reason]


@dataclass(frozen=True)
class PartFilter:
    """The part classes a search offers (`include`) and GPUs left out by name."""

    include: frozenset[str] = frozenset()  # of "consumer", "legacy", "end_of_life"
    exclude_gpus: tuple[str, ...] = ()
    named_gpus: tuple[str, ...] = ()  # GPUs asked for with --gpu: always offered
    # parts a workload mix names (owned, in stock, discounted: ("gpus" | "chassis" | "nics", id)): always offered
    named_parts: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_options(cls, include: list[str] | str | None, exclude_gpus: list[str] | None,
                     named_gpus: list[str] | None, catalog: Catalog) -> "PartFilter":
        """Validate --include / --exclude-gpu against the catalog (InputError names the bad value)."""
        if include is not None and not isinstance(include, str) and (
                not isinstance(include, (list, tuple)) or not all(isinstance(w, str) for w in include)):
            raise InputError(f"--include must be a string or a list of strings (consumer, legacy, eol, all), got "
                             f"{type(include).__name__} {checks.shown(include)}", field="include")
        exclude_gpus = checks.ident_list("--exclude-gpu", exclude_gpus)
        words: list[str] = []
        for item in ([include] if isinstance(include, str) else (include or [])):
            words += [w.strip() for w in item.split(",") if w.strip()]
        bad = [w for w in words if w not in INCLUDE_WORDS and w != "all"]
        if bad:
            raise InputError(f"--include: unknown part class {', '.join(repr(b) for b in bad)} "
                             f"(choose from consumer, legacy, eol, all)", field="include")
        opened = set(INCLUDE_WORDS.values()) if "all" in words else {INCLUDE_WORDS[w] for w in words}
        ex = list(dict.fromkeys(exclude_gpus or []))
        unknown = [g for g in ex if g not in catalog.gpus]
        if unknown:
            raise InputError(f"--exclude-gpu: unknown gpu {', '.join(repr(u) for u in unknown)} "
                             f"(known: {', '.join(catalog.gpus)})", field="exclude_gpu")
        both = [g for g in ex if g in (named_gpus or [])]
        if both:
            raise InputError(f"gpu {', '.join(repr(b) for b in both)} is both asked for (--gpu) and left out "
                             f"(--exclude-gpu)", field="exclude_gpu")
        return cls(frozenset(opened), tuple(ex), tuple(named_gpus or ()))

    def _gpu_reason(self, g) -> int:
        if g.id in self.exclude_gpus:
            return REASONS.index("excluded_gpu")
        if g.id in self.named_gpus or ("gpus", g.id) in self.named_parts:
            return KEPT
        if g.segment == "consumer" and "consumer" not in self.include:
            return REASONS.index("consumer")
        return self._life_reason(g)

    def _life_reason(self, part, kind: str = "gpus") -> int:
        if (kind, part.id) in self.named_parts:
            return KEPT
        if part.lifecycle == "end_of_life" and "end_of_life" not in self.include:
            return REASONS.index("end_of_life")
        if part.lifecycle == "legacy" and "legacy" not in self.include:
            return REASONS.index("legacy")
        return KEPT

    def _nic_reason(self, nic) -> int:
        """A NIC's reason: consumer adapters first (as GPUs), then its lifecycle."""
        if ("nics", nic.id) in self.named_parts:
            return KEPT
        if getattr(nic, "segment", "datacenter") == "consumer" and "consumer" not in self.include:
            return REASONS.index("consumer")
        return self._life_reason(nic, "nics")

    def design_reasons(self, space: DesignSpace) -> np.ndarray:
        """Reason code per design (index into REASONS), KEPT (-1) for designs the search offers.

        Lookup tables per catalog entry, indexed by the design arrays: no loop over designs."""
        big = len(REASONS)  # "no reason" while taking the minimum (the first reason wins)
        as_min = lambda r: big if r == KEPT else r  # noqa: E731
        g = np.array([as_min(self._gpu_reason(x)) for x in space.gpus], dtype=np.int64)[space.gpu_idx]
        c = np.array([as_min(self._life_reason(x, "chassis")) for x in space.chassis], dtype=np.int64)[space.chassis_idx]
        n_tab = np.array([as_min(self._nic_reason(x)) for x in space.nics] + [big], dtype=np.int64)
        n = n_tab[np.where(space.nic_idx == NO_NIC, len(space.nics), space.nic_idx)]
        named = np.array([x.id in self.named_gpus or ("gpus", x.id) in self.named_parts for x in space.gpus],
                         dtype=bool)[space.gpu_idx]
        part = np.minimum(c, n)
        # an explicitly named GPU keeps its designs, but its chassis / NIC still follow the filter
        r = np.where(named, np.where(g == REASONS.index("excluded_gpu"), g, part), np.minimum(g, part))
        return np.where(r == big, KEPT, r)

    def describe(self) -> str:
        """What the search offers, in words."""
        offered = ["current data-centre and workstation parts"]
        extra = [w for w in ("consumer", "legacy", "end_of_life") if w in self.include]
        if extra:
            offered.append("plus " + ", ".join(e.replace("_", "-") for e in extra) + " parts")
        if self.named_parts:
            offered.append("plus the parts the mix names (" + ", ".join(pid for _, pid in sorted(self.named_parts)) + ")")
        if self.exclude_gpus:
            offered.append("without " + ", ".join(self.exclude_gpus))
        return " ".join(offered)


def segment_lifecycle(space: DesignSpace, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per design: the GPU's segment and the worst lifecycle among its GPU, chassis and NIC."""
    seg = np.array([g.segment for g in space.gpus], dtype=object)[space.gpu_idx[idx]]
    names = np.array(list(_LIFECYCLE_RANK), dtype=object)
    rank = lambda parts: np.array([_LIFECYCLE_RANK[p.lifecycle] for p in parts], dtype=np.int64)  # noqa: E731
    n_tab = np.concatenate([rank(space.nics), [0]])
    ni = np.where(space.nic_idx[idx] == NO_NIC, len(space.nics), space.nic_idx[idx])
    worst = np.maximum(np.maximum(rank(space.gpus)[space.gpu_idx[idx]], rank(space.chassis)[space.chassis_idx[idx]]),
                       n_tab[ni])
    return seg, names[worst]


def _other_part(best: dict[str, Any], catalog: Catalog, gpu) -> str:
    """', on a NIC that is end-of-life since ...' when the design is left out for its NIC or chassis, not its GPU."""
    reason = best.get("excluded_reason")
    wanted = {"end_of_life": "end_of_life", "legacy": "legacy"}.get(reason)
    if reason == "consumer" and gpu.segment != "consumer":
        nic = catalog.nics.get(best.get("nic") or "")
        return f", on {best['nic']}, a consumer adapter" if nic is not None and nic.segment == "consumer" else ""
    if wanted is None or gpu.lifecycle == wanted:
        return ""
    for kind, part in (("NIC", catalog.nics.get(best.get("nic") or "")),
                       ("chassis", catalog.chassis_by_id.get(best.get("chassis") or ""))):
        if part is not None and part.lifecycle == wanted:
            since = f" since {part.end_of_life_date}" if part.end_of_life_date else ""
            return f", on {kind} {part.id}: {wanted.replace('_', '-')}{since}"
    return ""


def _ratio_phrase(objective: str, chosen: dict[str, Any], other: dict[str, Any]) -> tuple[float, str]:
    thr_c, thr_o = chosen["throughput_samples_per_s"], other["throughput_samples_per_s"]
    if objective == "throughput":
        r = thr_o / thr_c
        return r, f"{r:.2f}x the throughput within the same limits"
    if objective == "cost-per-throughput":
        r = (chosen["cost_usd"] / thr_c) / (other["cost_usd"] / thr_o)
        return r, f"{r:.2f}x the throughput per dollar"
    r = chosen["cost_usd"] / other["cost_usd"]
    return r, f"costs {1.0 / r:.2f}x as much" if r < 1 else f"is {r:.2f}x cheaper for the required throughput"


def excluded_summary(
    *, reasons: np.ndarray, pool: np.ndarray, cost: np.ndarray, throughput: np.ndarray, order_rank: np.ndarray,
    budget: float | None, min_throughput: float | None, objective: str, chosen: dict[str, Any] | None,
    to_design: Callable[[int], dict[str, Any]], catalog: Catalog, part_filter: PartFilter,
    reason_counts: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """JSON `excluded`: {counts by reason, best: DESIGN or null, best_by_reason, sentence}.

    `pool` marks designs that meet every per-design limit (memory, buildable, power, rack units);
    the best excluded design is the best of the left-out ones among them under the same budget and
    objective (the same numpy search as the choice itself, no loop per design). `reason_counts` replaces
    the counts when `reasons` covers only part of the space (a space evaluated in pieces)."""
    counts = {r: (int(reason_counts[i]) if reason_counts is not None else int((reasons == i).sum()))
              for i, r in enumerate(REASONS)}
    counts = {k: v for k, v in counts.items() if v}
    out: dict[str, Any] = {"offered": part_filter.describe(), "counts": counts, "best": None,
                           "best_by_reason": {}, "sentence": ""}
    mt = min_throughput if objective == "cost" else None

    def best_of(mask: np.ndarray) -> dict[str, Any] | None:
        idx = np.flatnonzero(mask & pool)
        if len(idx) == 0:
            return None
        j, _ = best_on_front(objective, cost[idx], throughput[idx], order_rank[idx], budget, mt)
        if j is None:
            return None
        d = to_design(int(idx[j]))
        d["excluded_reason"] = REASONS[int(reasons[idx[j]])]
        return d

    out["best"] = best_of(reasons != KEPT)
    for i, r in enumerate(REASONS):
        if counts.get(r):
            d = best_of(reasons == i)
            if d is not None:
                out["best_by_reason"][r] = d
    out["sentence"] = excluded_sentence(out, objective, chosen, catalog)
    return out


def excluded_sentence(summary: dict[str, Any], objective: str, chosen: dict[str, Any] | None,
                      catalog: Catalog) -> str:
    """One line for a buyer: what was left out and what the best of it would give."""
    counts = summary["counts"]
    if not counts:
        return f"Part filter: {summary['offered']}; nothing was left out."
    n = sum(counts.values())
    by = ", ".join(f"{k.replace('_', '-')} {v:,}" for k, v in counts.items())
    head = f"Part filter: {summary['offered']}; left out {n:,} designs ({by})."
    best = summary["best"]
    if best is None:
        return head + " None of them fits the same limits."
    g = catalog.gpus[best["gpu"]]
    life = g.lifecycle.replace("_", "-") + (f" since {g.end_of_life_date}" if g.end_of_life_date else "")
    what = (f"{best['total_gpus']} x {best['gpu']} ({g.segment}, {life}"
            + _other_part(best, catalog, g) + f") for ${best['cost_usd']:,.0f}")
    if chosen is None:
        return head + f" The best of them: {what}."
    ratio, phrase = _ratio_phrase(objective, chosen, best)
    verb = "gives" if objective != "cost" else ""
    better = ratio > 1.0 + 1e-9
    text = f" The best of them, {what}, {verb + ' ' if verb else ''}{phrase}"
    caution = _CAUTION[best["excluded_reason"]]
    more = " (use --include consumer,legacy,eol to consider them)" if best["excluded_reason"] != "excluded_gpu" else ""
    return head + text + ("" if better else " (no better than the choice)") + f"; {caution}{more}."


__all__ = ["PartFilter", "REASONS", "KEPT", "INCLUDE_WORDS", "caution", "segment_lifecycle", "excluded_summary",
           "excluded_sentence"]
