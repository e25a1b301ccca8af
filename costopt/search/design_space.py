"""The design space: every (gpu, chassis, nodes, nic, strategy, reduce_on) a catalog allows.

Stored as a struct of arrays, one element per design, so the timing model and cost evaluate the
whole space in a handful of numpy expressions. Enumeration loops over catalog entries (tens), never
over designs: node counts are expanded with `np.repeat` / `np.arange` arithmetic.

Rules:
- a GPU goes into a chassis whose form factor matches (or that lists it in `accepts_gpus`); GPUs
  per node = the chassis's slot count;
- a NIC goes into a chassis that can feed it (`Catalog.nics_for`), k adapters per node for every k of
  1, 2, 4, 8, 16 up to the chassis's `max_nics`, and `max_nics` itself (`nic_counts`): a rail-optimised
  8-GPU node (DGX/HGX style, one adapter per GPU) is k = 8, a PCIe server with one adapter per PCIe
  switch k = 4;
- one node needs no network: it is enumerated once, with nic = none;
- hierarchical all-reduce is a distinct design only for more than one node;
- a single GPU (one node, one slot) has no communication: one design, strategy `ring`;
- a rented instance type with a capacity cap (`Chassis.max_nodes`, cloud_facts.py) has at most that
  many nodes;
- a rack-scale system (GB200/GB300 NVL72: `Chassis.rack_system_nodes` = 18 compute trays per rack) is
  bought in whole racks: its designs have 18, 36, 54 ... nodes, always with a NIC (hardware/rack_scale.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costopt.hardware.catalog import Catalog, Chassis, Gpu, Nic
from costopt.hardware.rack_scale import purchase_nodes
from costopt.core.checks import count
from costopt.core.errors import InputError
from costopt.perf.stacks import infer_stack

STRATEGIES = ("ring", "hierarchical", "ps")
NIC_COUNTS = (1, 2, 4, 8, 16)  # NIC adapters per node a design may carry (up to its chassis's max_nics)
REDUCE_ON = ("gpu", "cpu")
NO_NIC = -1


@dataclass
class DesignSpace:
    """Struct of arrays; index lists map codes back to catalog entries."""

    gpus: list[Gpu]
    chassis: list[Chassis]
    nics: list[Nic]
    gpu_idx: np.ndarray
    chassis_idx: np.ndarray
    nic_idx: np.ndarray  # NO_NIC for single-node designs
    nodes: np.ndarray
    strategy: np.ndarray  # index into STRATEGIES
    reduce_on: np.ndarray  # index into REDUCE_ON
    nics_per_node: np.ndarray | None = None  # NIC adapters per node (None: one each)
    stack: np.ndarray | None = None  # index into stacks.STACKS (None: inferred from strategy and reduce_on)

    def __post_init__(self) -> None:
        if self.nics_per_node is None:
            self.nics_per_node = np.ones(len(self.gpu_idx), dtype=np.int64)
        if self.stack is None:
            self.stack = infer_stack(self.strategy, self.reduce_on)

    def __len__(self) -> int:
        return int(self.gpu_idx.shape[0])

    @property
    def gpus_per_node(self) -> np.ndarray:
        slots = np.array([c.gpu_slots for c in self.chassis], dtype=np.int64)
        return slots[self.chassis_idx]

    @property
    def total_gpus(self) -> np.ndarray:
        return self.gpus_per_node * self.nodes

    def take(self, idx: np.ndarray) -> "DesignSpace":
        return DesignSpace(
            self.gpus, self.chassis, self.nics, self.gpu_idx[idx], self.chassis_idx[idx],
            self.nic_idx[idx], self.nodes[idx], self.strategy[idx], self.reduce_on[idx], self.nics_per_node[idx],
            self.stack[idx],
        )

    def order_key(self) -> np.ndarray:
        """One int64 per design whose ascending order is the deterministic design order of `sort_key`:
        gpu id, GPUs/node, chassis id, nodes, nic id (none first), NICs per node, strategy, reduce_on.

        Mixed radix: key = ((((((g·R₁ + G)·R₂ + c)·R₃ + M)·R₄ + n)·R₅ + k)·R₆ + s)·R₇ + r, each digit below
        its radix R (the number of values it can take), so comparing keys compares the 8-tuples
        lexicographically. Ids, not catalog positions, so reordering a catalog file does not change an
        answer."""
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        digits = tuple(zip(self.order_digits(), (
            len(self.gpus), int(self.gpus_per_node.max()) + 1, len(self.chassis), int(self.nodes.max()) + 1,
            len(self.nics) + 1, int(self.nics_per_node.max()) + 1, len(STRATEGIES), len(REDUCE_ON),
            4)))  # stacks.STACKS
        span = 1
        for _, radix in digits:
            span *= radix
        if span >= 2**62:  # would overflow int64: rank the 8-key lexicographic order instead
            key = np.empty(n, dtype=np.int64)
            key[np.lexsort(tuple(d for d, _ in digits[::-1]))] = np.arange(n)
            return key
        key = np.zeros(n, dtype=np.int64)
        for d, radix in digits:
            key *= radix
            key += d
        return key

    def order_digits(self) -> tuple[np.ndarray, ...]:
        """The nine digits of `order_key`, most significant first: gpu id rank, GPUs per node, chassis id
        rank, nodes, nic id rank (none = 0), NICs per node, strategy, reduce_on, stack. They depend on the
        design and the catalog only, not on which other designs are in the space, so the digits of two
        pieces of one space compare (`order_key`'s radices, and so its values, are the space's own)."""
        gpu_rank = _id_rank([g.id for g in self.gpus])
        ch_rank = _id_rank([c.id for c in self.chassis])
        nic_rank = np.concatenate([_id_rank([n.id for n in self.nics]) + 1, [0]])  # last slot: no NIC
        return (gpu_rank[self.gpu_idx], self.gpus_per_node, ch_rank[self.chassis_idx], self.nodes,
                nic_rank[self.nic_idx], self.nics_per_node, self.strategy, self.reduce_on, self.stack)

    def sort_key(self) -> np.ndarray:
        """Deterministic order for tie-breaking (indices, first design first): gpu id, GPUs/node,
        chassis id, nodes, nic id (none first), NICs per node, strategy, reduce_on; see `order_key`."""
        return np.argsort(self.order_key(), kind="stable")

    def order_rank(self) -> np.ndarray:
        """Each design's position in the deterministic order: any order-preserving integers will do for
        comparisons, so this is `order_key` itself (no sort needed)."""
        return self.order_key()


def nic_counts(max_nics: int) -> list[int]:
    """Adapters per node enumerated for a chassis that takes `max_nics`: NIC_COUNTS up to it, and it."""
    return sorted({k for k in NIC_COUNTS if k <= max_nics} | {max_nics})


def _id_rank(ids: list[str]) -> np.ndarray:
    """Position of each id in sorted order."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(ids, kind="stable")] = np.arange(len(ids))
    return rank


def _pick(names: list[str] | None, known: dict, what: str) -> list[str]:
    if not names:
        return list(known)
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"unknown {what} {', '.join(repr(b) for b in bad)} (known: {', '.join(known)})", field=what.replace(" ", "_"))
    return list(names)


@dataclass
class _Blocks:
    """The design space before expansion: (gpu, chassis, nic, first node count, last node count, NICs per
    node) rows, and the strategy x reduce_on combinations each kind of row takes."""

    gpus: list[Gpu]
    chassis: list[Chassis]
    nics: list[Nic]
    rows: np.ndarray  # (B, 6) int64
    multi_combos: np.ndarray  # (strategy, reduce_on) pairs for more than one node
    single_combos: np.ndarray  # ... for one node of several GPUs (no hierarchical)

    def designs_per_row(self) -> np.ndarray:
        """Designs each row expands to: node counts x the combinations its kind of row takes."""
        nodes = self.rows[:, 4] - self.rows[:, 3] + 1
        slots = np.array([c.gpu_slots for c in self.chassis], dtype=np.int64)[self.rows[:, 1]]
        multi = self.rows[:, 2] != NO_NIC
        per = np.where(multi, len(self.multi_combos), np.where(slots > 1, len(self.single_combos), 1))
        return nodes * per

    def kinds(self) -> np.ndarray:
        """0: several nodes, 1: one node of several GPUs, 2: one GPU (the order designs come in)."""
        slots = np.array([c.gpu_slots for c in self.chassis], dtype=np.int64)[self.rows[:, 1]]
        return np.where(self.rows[:, 2] != NO_NIC, 0, np.where(slots > 1, 1, 2))


def _design_blocks(
    catalog: Catalog, *, max_nodes: int, strategies: tuple[str, ...] = STRATEGIES, reduce_on: tuple[str, ...] = ("gpu",),
    gpu_ids: list[str] | None = None, nic_ids: list[str] | None = None, gpus_per_node: list[int] | None = None,
    chassis_ids: list[str] | None = None, node_budget_usd: float | None = None,
) -> _Blocks:
    for s in strategies:
        if s not in STRATEGIES:
            raise InputError(f"unknown strategy '{s}' (choose from {', '.join(STRATEGIES)})", field="strategy")
    for r in reduce_on:
        if r not in REDUCE_ON:
            raise InputError(f"unknown reduce_on '{r}' (choose from {', '.join(REDUCE_ON)})", field="reduce_on")
    count("max nodes", max_nodes)
    for k in gpus_per_node or []:
        count("GPUs per node", k)
    gpu_keep = set(_pick(gpu_ids, catalog.gpus, "gpu"))
    nic_keep = set(_pick(nic_ids, catalog.nics, "nic"))
    ch_keep = set(_pick(chassis_ids, catalog.chassis_by_id, "chassis"))
    gpus = list(catalog.gpu)
    chassis = list(catalog.chassis)
    nics = list(catalog.nic)
    nic_pos = {n.id: i for i, n in enumerate(nics)}

    strat_codes = np.array([STRATEGIES.index(s) for s in strategies], dtype=np.int64)
    red_codes = np.array([REDUCE_ON.index(r) for r in reduce_on], dtype=np.int64)
    combos = [(s, r) for s in strat_codes for r in red_codes]
    multi_combos = np.array(combos, dtype=np.int64).reshape(-1, 2)
    single_combos = np.array(
        [(s, r) for s, r in combos if STRATEGIES[s] != "hierarchical"], dtype=np.int64
    ).reshape(-1, 2)

    # (gpu, chassis, nic, first node count, last node count, NICs per node) blocks: loops over catalog
    # entries only
    blocks: list[tuple[int, int, int, int, int, int]] = []
    for gi, g in enumerate(gpus):
        if g.id not in gpu_keep:
            continue
        for ci, ch in enumerate(chassis):
            if ch.id not in ch_keep or not catalog.gpu_fits(g, ch):
                continue
            if gpus_per_node and ch.gpu_slots not in gpus_per_node:
                continue
            node_hw = ch.price_usd + ch.gpu_slots * g.price_usd
            unit = purchase_nodes(ch)  # a rack-scale system is bought in whole racks of `unit` nodes
            if unit == 1:
                blocks.append((gi, ci, NO_NIC, 1, 1, 1))
            for n in catalog.nics_for(ch):
                if n.id not in nic_keep:
                    continue
                for k in nic_counts(ch.max_nics):
                    top = max_nodes if ch.max_nodes is None else min(max_nodes, ch.max_nodes)  # a rented type's cap
                    if node_budget_usd is not None:
                        top = min(top, int(node_budget_usd // (node_hw + k * n.price_usd)))
                    if unit > 1 and top >= unit:  # counts in racks: 1 .. top // unit racks
                        blocks.append((gi, ci, nic_pos[n.id], 1, top // unit, k))
                    elif unit == 1 and top >= 2:
                        blocks.append((gi, ci, nic_pos[n.id], 2, top, k))
    if not blocks:
        asked = [f"{what} {', '.join(map(str, v))}" for what, v in
                 (("GPU", gpu_ids), ("NIC", nic_ids), ("GPUs per node", gpus_per_node), ("chassis", chassis_ids)) if v]
        raise InputError(f"no design in {catalog.path or 'the catalog'} matches the requested "
                         + ("; ".join(asked) if asked else "GPUs, NICs and GPUs per node"))

    return _Blocks(gpus, chassis, nics, np.array(blocks, dtype=np.int64), multi_combos, single_combos)


def _expand(blk: _Blocks, rows: np.ndarray) -> DesignSpace:
    """The designs of `rows` (a subset of `blk.rows`, in order): multi-node rows first, then one-node rows,
    then one-GPU rows, each row's node counts in ascending order, each design once per combination."""
    gpus, chassis, nics = blk.gpus, blk.chassis, blk.nics
    multi_combos, single_combos = blk.multi_combos, blk.single_combos
    b = rows
    counts = b[:, 4] - b[:, 3] + 1
    owner = np.repeat(np.arange(len(b)), counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    gpu_idx, ch_idx, nic_idx, nics_per_node = b[owner, 0], b[owner, 1], b[owner, 2], b[owner, 5]
    # a row counts purchase units: nodes for a server, racks of `purchase_nodes` nodes for a rack-scale system
    nodes = (b[owner, 3] + offset) * np.array([purchase_nodes(c) for c in chassis], dtype=np.int64)[ch_idx]

    # expand each (gpu, chassis, nic, nodes) by the strategy x reduce_on combinations it admits
    slots = np.array([c.gpu_slots for c in chassis], dtype=np.int64)[ch_idx]
    single_gpu = (nodes == 1) & (slots == 1)
    single_node = (nodes == 1) & ~single_gpu
    multi = nodes > 1
    parts = []
    for mask, combo in ((multi, multi_combos), (single_node, single_combos)):
        idx = np.flatnonzero(mask)
        if len(idx) == 0 or len(combo) == 0:
            continue
        rep = np.repeat(idx, len(combo))
        cc = np.tile(combo, (len(idx), 1))
        parts.append((rep, cc[:, 0], cc[:, 1]))
    idx = np.flatnonzero(single_gpu)
    if len(idx):
        parts.append((idx, np.zeros(len(idx), np.int64), np.zeros(len(idx), np.int64)))
    rep = np.concatenate([p[0] for p in parts])
    strat = np.concatenate([p[1] for p in parts])
    red = np.concatenate([p[2] for p in parts])
    return DesignSpace(gpus, chassis, nics, gpu_idx[rep], ch_idx[rep], nic_idx[rep], nodes[rep], strat, red,
                       nics_per_node[rep])


def enumerate_designs(
    catalog: Catalog,
    *,
    max_nodes: int,
    strategies: tuple[str, ...] = STRATEGIES,
    reduce_on: tuple[str, ...] = ("gpu",),
    gpu_ids: list[str] | None = None,
    nic_ids: list[str] | None = None,
    gpus_per_node: list[int] | None = None,
    chassis_ids: list[str] | None = None,
    node_budget_usd: float | None = None,
) -> DesignSpace:
    """Every design the catalog allows with at most `max_nodes` nodes.

    `node_budget_usd` trims node counts whose node hardware alone already exceeds the budget
    (switches only add cost, so this never drops a design that could fit).
    """
    blk = _design_blocks(catalog, max_nodes=max_nodes, strategies=strategies, reduce_on=reduce_on, gpu_ids=gpu_ids,
                         nic_ids=nic_ids, gpus_per_node=gpus_per_node, chassis_ids=chassis_ids,
                         node_budget_usd=node_budget_usd)
    return _expand(blk, blk.rows)


def count_designs(catalog: Catalog, **kw) -> int:
    """How many designs `enumerate_designs(catalog, **kw)` gives, without building them."""
    return int(_design_blocks(catalog, **kw).designs_per_row().sum())


def iter_design_chunks(catalog: Catalog, *, max_designs: int, **kw):
    """`enumerate_designs(catalog, **kw)` in consecutive pieces of at most about `max_designs` designs
    (a row's node range is split when one row alone is larger): concatenated, the pieces are exactly
    `enumerate_designs`, design for design, so memory stays bounded whatever the catalog size."""
    blk = _design_blocks(catalog, **kw)
    per = blk.designs_per_row()
    if per.sum() <= max_designs:  # small enough: one piece, exactly as enumerate_designs builds it
        yield _expand(blk, blk.rows)
        return
    kinds = blk.kinds()
    for kind in (0, 1, 2):  # the order _expand puts designs in
        rows: list[np.ndarray] = []
        size = 0
        for i in np.flatnonzero(kinds == kind).tolist():
            row = blk.rows[i]
            n_nodes = int(row[4] - row[3] + 1)
            per_node = int(per[i]) // n_nodes
            if per_node == 0:  # e.g. one node when only hierarchical is asked for: no design
                continue
            lo = int(row[3])
            while lo <= row[4]:
                room = max((max_designs - size) // per_node, 1)
                hi = min(int(row[4]), lo + room - 1)
                piece = row.copy()
                piece[3], piece[4] = lo, hi
                rows.append(piece)
                size += (hi - lo + 1) * per_node
                lo = hi + 1
                if size >= max_designs:
                    yield _expand(blk, np.array(rows, dtype=np.int64))
                    rows, size = [], 0
        if rows:
            yield _expand(blk, np.array(rows, dtype=np.int64))


def single_design(
    catalog: Catalog, gpu: str, gpus_per_node: int, nodes: int, nic: str | None, strategy: str,
    reduce_on: str = "gpu", chassis: str | None = None, nics_per_node: int = 1,
) -> DesignSpace:
    """One explicitly named design (for `predict`), validated against the catalog."""
    if gpu not in catalog.gpus:
        raise InputError(f"unknown gpu '{gpu}' (known: {', '.join(catalog.gpus)})", field="gpu")
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy '{strategy}' (choose from {', '.join(STRATEGIES)})", field="strategy")
    if reduce_on not in REDUCE_ON:
        raise InputError(f"unknown reduce_on '{reduce_on}' (choose from {', '.join(REDUCE_ON)})", field="reduce_on")
    count("nodes", nodes)
    count("GPUs per node", gpus_per_node)
    count("NICs per node", nics_per_node)
    if chassis is not None and chassis not in catalog.chassis_by_id:
        raise InputError(f"unknown chassis '{chassis}' (known: {', '.join(catalog.chassis_by_id)})", field="chassis")
    g = catalog.gpus[gpu]
    options = [
        (ci, c) for ci, c in enumerate(catalog.chassis)
        if c.gpu_slots == gpus_per_node and catalog.gpu_fits(g, c) and (chassis is None or c.id == chassis)
    ]
    if not options:
        if chassis is not None:
            ch = catalog.chassis_by_id[chassis]
            raise InputError(f"chassis '{chassis}' does not take {gpus_per_node} x '{gpu}' "
                             f"({ch.gpu_slots} {ch.form_factor} slots)", field="chassis")
        slots = sorted({c.gpu_slots for c in catalog.chassis if catalog.gpu_fits(g, c)})
        raise InputError(
            f"no chassis in {catalog.path or 'the catalog'} takes {gpus_per_node} x '{gpu}'"
            + (f" (GPUs per node available for it: {slots})" if slots else ""), field="gpus_per_node",
        )
    nic_i = NO_NIC
    if nodes > 1:
        if nic is None:
            raise InputError("a design with more than one node needs --nic", field="nic")
        if nic not in catalog.nics:
            raise InputError(f"unknown nic '{nic}' (known: {', '.join(catalog.nics)})", field="nic")
        fitting = [(ci, c) for ci, c in options if any(n.id == nic for n in catalog.nics_for(c))]
        if not fitting:
            raise InputError(f"no {gpus_per_node}-GPU chassis for '{gpu}' can take nic '{nic}'", field="nic")
        options = fitting
        nic_i = [n.id for n in catalog.nic].index(nic)
    elif nic is not None and nic not in catalog.nics:
        raise InputError(f"unknown nic '{nic}' (known: {', '.join(catalog.nics)})", field="nic")
    if nics_per_node < 1:
        raise InputError(f"NICs per node must be >= 1, got {nics_per_node}", field="nics_per_node")
    if nics_per_node > 1:
        if nodes == 1:
            raise InputError("NICs per node only matter for more than one node", field="nics_per_node")
        roomy = [(ci, c) for ci, c in options if c.max_nics >= nics_per_node]
        if not roomy:
            most = max(c.max_nics for _, c in options)
            raise InputError(f"no chassis for {gpus_per_node} x '{gpu}' takes {nics_per_node} NICs (at most {most})", field="nics_per_node")
        options = roomy
    ci = min(options, key=lambda o: (o[1].price_usd, o[1].id))[0]  # cheapest fitting chassis
    a = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
    return DesignSpace(
        list(catalog.gpu), list(catalog.chassis), list(catalog.nic), a(list(catalog.gpus).index(gpu)),
        a(ci), a(nic_i), a(nodes), a(STRATEGIES.index(strategy)), a(REDUCE_ON.index(reduce_on)), a(nics_per_node),
    )
