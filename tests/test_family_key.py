"""The family key of `choose` (api._family) is collision-free for any catalog size (issue 13).

It was `(g*1000 + c)*1000 + n ...`: with 1,000 NICs, (chassis 0, NIC 999) and (chassis 1, no NIC) got
the same key, so one family's best design was dropped from the alternatives. The references below
are plain Python sets of the six-field tuples, written here.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import numpy as np

import costopt
from costopt.search.api import _family
from costopt.hardware.catalog import parse_catalog
from costopt.search.design_space import DesignSpace

MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def _catalog_with_nics(n: int):
    data = tomllib.loads(MINI.read_text())
    eth = next(x for x in data["nic"] if x["id"] == "eth10")
    extra = []
    for i in range(n - len(data["nic"])):
        e = copy.deepcopy(eth)
        e["id"], e["name"], e["price_usd"] = f"eth10-{i:04d}", f"10 GbE clone {i}", 100 + i  # no two tied
        extra.append(e)
    data["nic"] = extra + data["nic"]  # the real adapters last: indices 998 and 999
    return parse_catalog(data, "mini + 1000 NICs (test)")


def _tuples(s: DesignSpace, idx: np.ndarray) -> list[tuple]:
    return list(zip(s.gpu_idx[idx].tolist(), s.chassis_idx[idx].tolist(), s.nic_idx[idx].tolist(),
                    s.strategy[idx].tolist(), s.reduce_on[idx].tolist(), s.nics_per_node[idx].tolist()))


def test_family_key_is_collision_free_with_thousands_of_chassis_and_nics():
    # codes that the x1000 key sent to one value: (g, c, n) = (0, 0, 999) and (0, 1, -1); (1, 0, -1) and (0, 1000, -1)
    gpu = [0, 0, 1, 0, 0, 0]
    ch = [0, 1, 0, 1000, 1, 1]
    nic = [999, -1, -1, -1, 5, 5]
    ks = [1, 1, 1, 1, 1, 40]  # 40 NICs per node, beyond the old radix of 32
    a = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    z = np.zeros(6, dtype=np.int64)
    s = DesignSpace(gpus=[None, None], chassis=[None] * 1001, nics=[None] * 1000, gpu_idx=a(gpu), chassis_idx=a(ch),
                    nic_idx=a(nic), nodes=np.ones(6, dtype=np.int64), strategy=z, reduce_on=z, nics_per_node=a(ks))
    idx = np.arange(6)
    key = _family(s, idx)
    assert len(set(key.tolist())) == len(set(_tuples(s, idx))) == 6
    # ascending keys order families as the tuples do (the order best_per_group returns them in)
    assert [t for _, t in sorted(zip(key.tolist(), _tuples(s, idx)))] == sorted(_tuples(s, idx))


def test_solve_names_every_family_once_with_a_thousand_nic_catalog():
    cat = _catalog_with_nics(1000)
    budget = 400_000.0
    res = costopt.solve(budget, "resnet50", catalog=cat, max_nodes=2, strategies=["ring"], top=100_000,
                        precision="fp32")
    ev = res.evaluation
    ok = ev.timing.feasible & ev.costs.buildable & (ev.costs.cost_usd <= budget)
    families = set(_tuples(ev.space, np.flatnonzero(ok)))
    assert len(families) > 1000  # the case the old key could not tell apart
    shown = [res.best] + res.alternatives
    names = [(d["gpu"], d["chassis"], d["nic"], d["strategy"], d["reduce_on"], d["nics_per_node"]) for d in shown]
    assert len(names) == len(set(names)) == len(families)
