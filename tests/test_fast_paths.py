"""The fast paths of the solve (issue 13) pick exactly what the plain multi-key sorts pick.

Each reference below is written here, as the straightforward lexsort the fast path replaces, and
compared on random data with many ties (small integer costs and throughputs).
"""

from __future__ import annotations

import numpy as np
import pytest

import costopt
from costopt.search.api import best_per_group
from costopt.hardware.catalog import load_catalog
from costopt.search.design_space import enumerate_designs
from costopt.search.solver import pareto_front


def reference_front(cost, thr, rank):
    order = np.lexsort((rank, -thr, cost))
    t = thr[order]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(t)[:-1]])
    return order[t > before]


def reference_group_best(group, score, cost, rank):
    order = np.lexsort((rank, cost, -score, group))
    first = np.ones(len(order), dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    return order[first]


@pytest.mark.parametrize("seed", range(20))
def test_pareto_front_matches_the_lexsort_scan(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    cost = rng.integers(0, 30, n).astype(float)
    thr = rng.integers(0, 30, n).astype(float)
    rank = rng.integers(0, 50, n)  # repeated ranks too: ties fall back to index order
    assert np.array_equal(pareto_front(cost, thr, rank), reference_front(cost, thr, rank))


@pytest.mark.parametrize("seed", range(20))
def test_best_per_group_matches_the_lexsort(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 400))
    group = rng.integers(0, 12, n) * 1000
    score = rng.integers(0, 5, n).astype(float)
    cost = rng.integers(0, 5, n).astype(float)
    rank = rng.integers(0, 8, n)
    assert np.array_equal(best_per_group(group, score, cost, rank), reference_group_best(group, score, cost, rank))


def test_order_key_orders_designs_like_the_eight_key_lexsort():
    space = enumerate_designs(load_catalog(), max_nodes=48, reduce_on=("gpu", "cpu"))
    gpu_rank = np.argsort(np.argsort([g.id for g in space.gpus], kind="stable"))
    ch_rank = np.argsort(np.argsort([c.id for c in space.chassis], kind="stable"))
    nic_rank = np.concatenate([np.argsort(np.argsort([n.id for n in space.nics], kind="stable")) + 1, [0]])
    reference = np.lexsort((space.reduce_on, space.strategy, space.nics_per_node, nic_rank[space.nic_idx], space.nodes,
                            ch_rank[space.chassis_idx], space.gpus_per_node, gpu_rank[space.gpu_idx]))
    assert np.array_equal(space.sort_key(), reference)
    key = space.order_key()
    assert np.all(np.diff(key[reference]) > 0)  # strictly increasing along the reference order: a total order


def test_solution_does_not_depend_on_catalog_order(tmp_path):
    """Ids, not positions, break ties: the reference catalog with its entries reversed gives the same answer."""
    import tomllib

    from costopt.hardware.catalog import parse_catalog, REFERENCE_CATALOG

    data = tomllib.loads(REFERENCE_CATALOG.read_text())
    rev = {**data, "gpu": data["gpu"][::-1], "chassis": data["chassis"][::-1], "nic": data["nic"][::-1]}
    a = costopt.solve(200_000, "inception_v3", top=20)
    b = costopt.solve(200_000, "inception_v3", top=20, catalog=parse_catalog(rev, "reversed"))
    assert a.best == b.best and a.alternatives == b.alternatives


CHUNKED_CASES = [
    dict(budget=1e6, model="resnet50", reduce_on=["gpu", "cpu"]),
    dict(budget=None, model="resnet50", objective="cost", min_throughput=20000, max_nodes=128),
    dict(budget=3e6, model="bert_base", precision="amp_bf16", max_power_kw=60, objective="cost-per-throughput"),
    dict(budget=2e5, model="resnet50", max_rack_units=1),  # infeasible: the nearest design is named
    dict(budget=None, model="resnet50", objective="cost", min_throughput=1e9, max_nodes=64),
]


@pytest.mark.parametrize("kw", CHUNKED_CASES, ids=[f"case{i}" for i in range(len(CHUNKED_CASES))])
def test_space_evaluated_in_pieces_gives_the_same_answer(monkeypatch, kw):
    """Memory bound: a space larger than CHUNK_DESIGNS is evaluated piece by piece, keeping only what
    `choose` can pick or name; the answer (best, alternatives, counts, why, table) is the same."""
    import json

    from costopt.search import api
    from costopt.core.errors import InfeasibleError

    def run():
        args = dict(kw)
        budget, model = args.pop("budget"), args.pop("model")
        try:
            r = costopt.solve(budget, model, top=12, **args)
            return json.dumps(r.to_json_dict(), sort_keys=True) + r.table.to_csv()
        except InfeasibleError as exc:
            return f"infeasible {exc} {json.dumps(exc.nearest, sort_keys=True)}"

    whole = run()
    monkeypatch.setattr(api, "CHUNK_DESIGNS", 3001)
    assert run() == whole
