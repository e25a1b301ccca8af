"""Property-based tests (hypothesis): laws the timing and cost model must obey for any input, and the
command line's promise that no input, however mangled, gives a traceback or an exit code other than
0, 1 or 2.

Examples are drawn deterministically (`derandomize=True`: the same examples on every run, so CI is
reproducible) and bounded in number to keep the suite fast.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from costopt.search.api import evaluate_space  # noqa: E402
from costopt.hardware.catalog import load_catalog, parse_catalog  # noqa: E402
from costopt.search.design_space import enumerate_designs  # noqa: E402
from costopt.perf.system import default_system  # noqa: E402
from costopt.perf.workload import list_models, load_workload  # noqa: E402

from test_hardening import MINI, PUBLISHED, ZOO, cli  # noqa: E402

FAST = settings(max_examples=15, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CLI = settings(max_examples=20, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

CATALOG = load_catalog()
SPACE = enumerate_designs(CATALOG, max_nodes=12, reduce_on=("gpu", "cpu"))
PARAMS = default_system()
MODELS = list_models()


def _evaluate(model: str, precision: str, batch: int | None, overlap: str = "wfbp", params=PARAMS, space=SPACE,
              catalog=CATALOG):
    w = load_workload(model)
    return evaluate_space(space, catalog=catalog, workload=w, tensors=w.tensors("pytorch"), params=params,
                          precision=precision, batch_per_gpu=batch or w.default_batch, overlap=overlap)


model_st = st.sampled_from(MODELS)
precision_st = st.sampled_from(["fp32", "amp_bf16", "auto"])
batch_st = st.one_of(st.none(), st.integers(1, 256))


def _runs(ev) -> np.ndarray:
    return ev.timing.feasible & np.isfinite(ev.timing.throughput_samples_per_s)


# --- the timing model ------------------------------------------------------------------------------------


LINKS = {  # SystemParams fields that scale an effective link bandwidth (bytes/s = spec x efficiency)
    "network": ("tcp_efficiency", "rdma_efficiency"),
    "intra-node": ("nvlink_efficiency",),
    "pcie": ("pcie_efficiency",),
    "host": ("host_reduce_gb_per_s", "host_memory_gb_per_s"),
}


@FAST
@given(model=model_st, precision=precision_st, batch=batch_st, link=st.sampled_from(sorted(LINKS)),
       low=st.floats(0.05, 0.6), gain=st.floats(1.0, 3.0), overlap=st.sampled_from(["wfbp", "none", "full"]))
def test_more_link_bandwidth_never_lowers_throughput(model, precision, batch, link, low, gain, overlap):
    names = LINKS[link]
    slow = PARAMS.with_updates(**{n: getattr(PARAMS, n) * low for n in names})
    fast = PARAMS.with_updates(**{n: min(getattr(slow, n) * gain, 1.0) if "efficiency" in n else getattr(slow, n) * gain
                                  for n in names})
    a = _evaluate(model, precision, batch, overlap, params=slow)
    b = _evaluate(model, precision, batch, overlap, params=fast)
    ok = _runs(a) & _runs(b)
    ta, tb = a.timing.throughput_samples_per_s[ok], b.timing.throughput_samples_per_s[ok]
    assert np.all(tb >= ta * (1 - 1e-12)), float(np.max((ta - tb) / ta))


@FAST
@given(model=model_st, precision=precision_st, batch=batch_st, overlap=st.sampled_from(["wfbp", "none", "full"]))
def test_throughput_at_most_gpus_times_one_gpu(model, precision, batch, overlap):
    """N GPUs never beat N times one GPU running the same batch alone (no communication)."""
    ev = _evaluate(model, precision, batch, overlap)
    ok = _runs(ev)
    n = ev.space.total_gpus[ok].astype(float)
    b = batch or ev.workload.default_batch
    one_gpu = b / ev.timing.t_compute_s[ok]
    assert np.all(ev.timing.throughput_samples_per_s[ok] <= n * one_gpu * (1 + 1e-12))
    assert np.all(ev.timing.scaling_efficiency[ok] <= 1 + 1e-12)


@FAST
@given(model=model_st, precision=precision_st, batch=batch_st)
def test_full_overlap_le_wfbp_le_no_overlap(model, precision, batch):
    """Iteration time: full overlap <= wait-free backprop <= no overlap, design by design."""
    t = {m: _evaluate(model, precision, batch, m).timing.t_iter_s for m in ("full", "wfbp", "none")}
    assert np.all(t["full"] <= t["wfbp"] * (1 + 1e-12))
    assert np.all(t["wfbp"] <= t["none"] * (1 + 1e-12))


# --- costs ------------------------------------------------------------------------------------------------


@FAST
@given(model=model_st, tco=st.sampled_from([0.0, 1.0, 4.0]))
def test_cost_rises_with_nodes(model, tco):
    """Same GPU, chassis, NIC, adapters per node and strategy: one more node always costs more."""
    w = load_workload(model)
    ev = evaluate_space(SPACE, catalog=CATALOG, workload=w, tensors=w.tensors("pytorch"), params=PARAMS,
                        precision="fp32", batch_per_gpu=w.default_batch, tco_years=tco)
    s = ev.space
    key = np.stack([s.gpu_idx, s.chassis_idx, s.nic_idx, s.nics_per_node, s.strategy, s.reduce_on, s.nodes], axis=1)
    order = np.lexsort(key.T[::-1])
    k, cost = key[order], ev.costs.cost_usd[order]
    same_family = np.all(k[1:, :6] == k[:-1, :6], axis=1)
    assert np.all(cost[1:][same_family] > cost[:-1][same_family])


PART_KINDS = ("gpu", "chassis", "nic")


@FAST
@given(kind=st.sampled_from(PART_KINDS), which=st.integers(0, 10**6), factor=st.floats(1.0, 5.0))
def test_dearer_part_never_lowers_any_cost(kind, which, factor):
    """Raising one part's price raises (or keeps) the cost of every design, and nothing else changes."""
    data = tomllib.loads(Path(CATALOG.path).read_text())
    entries = data[kind]
    i = which % len(entries)
    entries[i] = {**entries[i], "price_usd": entries[i]["price_usd"] * factor}
    dear = parse_catalog(data, "dearer")
    from costopt.hardware.cost import evaluate_costs

    space = enumerate_designs(CATALOG, max_nodes=12)
    dear_space = enumerate_designs(dear, max_nodes=12)
    assert np.array_equal(space.gpu_idx, dear_space.gpu_idx) and np.array_equal(space.nodes, dear_space.nodes)
    a = evaluate_costs(space, CATALOG.site).cost_usd
    b = evaluate_costs(dear_space, dear.site).cost_usd
    assert np.all(b >= a * (1 - 1e-12))


# --- the command line: anything in, 0/1/2 out, never a traceback ----------------------------------------


def _assert_clean(args):
    rc, out, err, noisy = cli(*args)
    assert rc in (0, 1, 2), (args, rc, err[-3000:])
    assert "Traceback" not in out + err, (args, err[-3000:])
    assert not noisy, (args, noisy)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, (args, err)


junk = st.one_of(
    st.sampled_from(["", "0", "-1", "1e308", "-1e308", "inf", "-inf", "nan", "NaN", "1e-320", "3.5", "2", "8",
                     "h100-sxm", "ib-ndr", "ring", "ps", "../x", "a/b", "a\nb", "none", "auto", "json", "csv",
                     "table", "--budget", "-", "1,000", "0x10", "١٢٣", "\x00", "fp32", "amp_bf16"]),
    st.text(min_size=0, max_size=12),
)
OPTIONS = {
    "solve": ["--budget", "--model", "--objective", "--precision", "--batch-per-gpu", "--strategy", "--reduce-on",
              "--top", "--format", "--max-power-kw", "--max-rack-units", "--min-throughput", "--deadline-hours",
              "--epochs", "--dataset-size", "--tco-years", "--overlap", "--gpu", "--nic", "--gpus-per-node",
              "--hours", "--grad-accum"],
    "predict": ["--model", "--gpu", "--gpus-per-node", "--nodes", "--nic", "--strategy", "--reduce-on",
                "--batch-per-gpu", "--precision", "--overlap", "--chassis", "--tco-years", "--tensor-set",
                "--nics-per-node", "--format"],
    "export": ["--model", "--budget", "--format", "--objective", "--epochs", "--dataset-size", "--hours",
               "--tco-years", "--precision", "--batch-per-gpu", "--overlap", "--strategy"],
}
BASE = {  # a working command each random option list is added to; node counts kept small so runs are fast
    "solve": ["solve", "--budget", "200000", "--model", "resnet50"],
    "predict": ["predict", "--model", "resnet50", "--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2",
                "--nic", "ib-ndr", "--strategy", "ring"],
    "export": ["export", "--model", "resnet50", "--budget", "100000"],
}
TAIL = {"solve": ["--max-nodes", "8"], "predict": [], "export": ["--max-nodes", "4"]}


@CLI
@given(data=st.data(), command=st.sampled_from(sorted(OPTIONS)))
def test_random_options_never_traceback(data, command):
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(OPTIONS[command]), junk), min_size=1, max_size=4))
    extra = data.draw(st.lists(junk, max_size=1))
    args = BASE[command] + [x for p in pairs for x in p] + extra + TAIL[command]
    _assert_clean(args)


def _mutate_text(text: str, data) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["drop", "dup", "value", "key", "cut", "junk"]))
        i = data.draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            break
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = key + "= " + data.draw(st.sampled_from(
                ["inf", "nan", "-1", "0", "1e308", '"x"', "true", "[]", '"2026-13-45"', "1e-320", "{}", '"../x"']))
        elif op == "key" and "=" in lines[i]:
            lines[i] = "typo_" + lines[i].lstrip()
        elif op == "cut":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
        else:
            lines.insert(i, data.draw(st.text(max_size=20)))
    return "\n".join(lines) + "\n"


@CLI
@given(data=st.data())
def test_mutated_catalog_never_tracebacks(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("cat") / "c.toml"
    path.write_text(_mutate_text(MINI.read_text(), data))
    _assert_clean(["solve", "--budget", "100000", "--model", "resnet50", "--catalog", path, "--max-nodes", "6"])


@CLI
@given(data=st.data())
def test_mutated_measurement_csv_never_tracebacks(tmp_path_factory, data):
    rows = PUBLISHED.read_text().splitlines()
    path = tmp_path_factory.mktemp("csv") / "rows.csv"
    text = "\n".join(rows[:4]) + "\n"
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        j = data.draw(st.integers(0, len(cells) - 1))
        cells[j] = data.draw(st.sampled_from(["", "inf", "nan", "-1", "0", "1e308", "x", "2.5", "h100-sxm", "ps",
                                              "ring", "cpu", "1e30", '"', "rdma"]))
        lines[i] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    _assert_clean(["validate", path])


def _json_leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _json_leaves(v, path + (i,))
    else:
        yield path


PROFILE = json.loads((ZOO / "resnet50.json").read_text())
PROFILE_LEAVES = [p for p in _json_leaves(PROFILE) if "tensors" not in p or p[-2:] == (0, "numel") or p[-1] == "name"]


@CLI
@given(data=st.data())
def test_mutated_profile_json_never_tracebacks(tmp_path_factory, data):
    doc = json.loads(json.dumps(PROFILE))
    for _ in range(data.draw(st.integers(1, 3))):
        leaf = data.draw(st.sampled_from(PROFILE_LEAVES))
        node = doc
        for k in leaf[:-1]:
            node = node[k]
        node[leaf[-1]] = data.draw(st.one_of(
            st.sampled_from([None, True, "10", -1, 0, 1e308, [], {}, "x", 1e-320, 10**30]),
            st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5)))
    path = tmp_path_factory.mktemp("prof") / "p.json"
    path.write_text(json.dumps(doc))
    _assert_clean(["solve", "--budget", "200000", "--model", "resnet50", "--profile", path, "--max-nodes", "6"])
