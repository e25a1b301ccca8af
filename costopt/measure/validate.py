"""Predicted vs measured throughput for a file of measured configurations (`costopt validate`).

Measurement file: CSV, one measured configuration per row, header required. Columns:

    source, model, gpu, gpus_per_node, nodes, batch_per_gpu, precision, strategy, nic_gbps,
    transport, num_ps, reduce_on, single_gpu_samples_per_s, measured_samples_per_s

- strategy: ps | ring | hierarchical | single; precision: fp32 | amp_fp16 | amp_bf16;
- nic_gbps + transport (tcp | rdma): the inter-node link; empty for single-node rows. Each distinct
  pair becomes an ad-hoc NIC added to the catalog (adapter latency as the reference catalog's
  Ethernet / RoCE adapters);
- num_ps: PS shards (shard k on node k mod M); empty = one per node;
- reduce_on: gpu (default when empty) | cpu;
- single_gpu_samples_per_s: that system's measured 1-GPU throughput at the same batch. When given,
  the zoo's forward/backward/step times for `gpu` are scaled by one factor so that one GPU runs at
  exactly that rate (the thesis method: profile one GPU, predict the cluster). Empty: the zoo's
  compute estimate for `gpu` as it is;
- optional columns read when present: `tensor_set` (pytorch | tensorflow, default pytorch),
  `chassis` (a catalog chassis id; default the cheapest that takes gpus_per_node x gpu),
  `overlap` (wfbp | none | full, default wfbp: the timing model's overlap mode for that row; `none`
  where the source's mode waits for every gradient before communicating, e.g. tf_cnn_benchmarks
  `--gradient_repacking`, docs/sources.md §12c (thesis §6.5) (a)), `stack` (nccl | mpi | grpc | gloo: the
  communication stack the run used, costopt/perf/stacks.py). An empty or absent `stack` is inferred from
  the strategy and `reduce_on`: ps -> grpc (TensorFlow parameter servers), an all-reduce with
  reduce_on=cpu -> mpi (host-memory all-reduce), any other all-reduce -> nccl. `--stack` (the
  `stack` argument of `validate`) predicts every row as if it ran that stack instead;
  `grad_accum` (micro-batches of batch_per_gpu per
  synchronisation, default 1: K forwards and K-1 backwards before the last backward, K x batch samples
  per GPU per iteration, as api.py),
  `nics_per_node` (whole number >= 1, default 1: network adapters per node, each at nic_gbps; e.g. two
  EDR adapters per node are nic_gbps 100, nics_per_node 2),
  `gpus_per_process` (whole number, 1 <= g <= gpus_per_node, default 1: GPUs one training process drives;
  e.g. 8 for a run that schedules all eight GPUs of a node from one process, as PaddlePaddle 1.x's
  ParallelExecutor or TensorFlow 1.x tf_cnn_benchmarks towers; the timing model then charges
  (g - 1) x `process_step_us_per_gpu` of host time per step, costopt/perf/timing.py),
  `variable_update` (TensorFlow 1.x tf_cnn_benchmarks mode the run used: parameter_server |
  distributed_replicated for a ps row, replicated for an all-reduce row; empty or absent: parameter_server for
  a ps row, tf_cnn_benchmarks' default, and replicated for an all-reduce row; ignored on a 1-GPU row). It sets
  when a PS row's pull runs: parameter_server before and during the forward, distributed_replicated in the
  stream overlapped with backward (costopt/perf/timing.py).
Every other column is kept and echoed in the output.

Prediction: rows sharing (model, tensor set, batch, overlap) are evaluated as one design space where each row
has its own GPU entry (so each can carry its own compute calibration); memory is not checked, since
each row ran. Error % = (predicted - measured) / measured x 100.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made (frame_for), not by `solve`
    import pandas as pd

from costopt.hardware.catalog import REFERENCE_CATALOG, Catalog, parse_catalog
from costopt.core.checks import MAX_COUNT
from costopt.search.design_space import REDUCE_ON, STRATEGIES, DesignSpace, single_design
from costopt.core.errors import InputError
from costopt.core.files import iter_input_lines, read_toml
from costopt.perf.intervals import bounds as interval_bounds
from costopt.perf.intervals import exposed_share
from costopt.perf.stacks import AUTO, STACKS, check_stack, infer_stack
from costopt.perf.system import SystemParams, load_system
from costopt.perf.timing import OVERLAP_MODES, VARIABLE_UPDATES, GpuCompute, LinkSpecs, Timing, evaluate, link_specs
from costopt.perf.workload import PRECISIONS, TensorSet, load_workload
from costopt.core.paths import DATA_DIR

VALIDATION_DIR = DATA_DIR / "validation"
VALIDATION_CATALOG = VALIDATION_DIR / "catalog-validation.toml"

COLUMNS = (
    "source", "model", "gpu", "gpus_per_node", "nodes", "batch_per_gpu", "precision", "strategy", "nic_gbps",
    "transport", "num_ps", "reduce_on", "single_gpu_samples_per_s", "measured_samples_per_s",
)
# the cells _parse_row reads (every other column is only echoed)
PARSED_COLUMNS = COLUMNS + ("tensor_set", "chassis", "overlap", "grad_accum", "nics_per_node", "stack",
                             "gpus_per_process", "variable_update")
ROW_STRATEGIES = ("ps", "ring", "hierarchical", "single")
TRANSPORTS = ("tcp", "rdma")
# adapter latency of the ad-hoc NICs: as the reference catalog's 10/25 GbE (tcp) and RoCE (rdma) adapters
ADHOC_LATENCY_US = {"tcp": 7.5, "rdma": 1.3}


@dataclass
class Row:
    line: int
    source: str
    model: str
    gpu: str
    gpus_per_node: int
    nodes: int
    batch_per_gpu: int
    precision: str
    strategy: str
    nic_gbps: float | None
    transport: str | None
    num_ps: int | None
    reduce_on: str
    single_gpu_samples_per_s: float | None
    measured_samples_per_s: float
    tensor_set: str = "pytorch"
    chassis: str | None = None
    overlap: str = "wfbp"
    stack: str = "nccl"
    stack_basis: str = "inferred"  # "column" when the file names it
    grad_accum: int = 1
    nics_per_node: int = 1
    gpus_per_process: int = 1
    variable_update: str = ""  # PS rows: one of timing.VARIABLE_UPDATES; all-reduce rows: "replicated"; single: ""
    raw: dict[str, str] = field(default_factory=dict)

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def nic_id(self) -> str | None:
        if self.nic_gbps is None:
            return None
        return f"val-{self.nic_gbps:g}g-{self.transport}".replace("+", "")


def list_datasets() -> list[str]:
    return sorted(p.stem for p in VALIDATION_DIR.glob("*.csv"))


def resolve_dataset(name_or_path: str | Path) -> Path:
    """A shipped dataset name (e.g. `published`) or a path."""
    p = Path(name_or_path)
    if p.exists():
        return p
    shipped = VALIDATION_DIR / f"{name_or_path}.csv"
    if shipped.exists():
        return shipped
    raise InputError(f"measurement file not found: {name_or_path} (shipped datasets: {', '.join(list_datasets())})",
                     field="measurements")


def _err(path: Path, line: int, column: str, msg: str) -> InputError:
    return InputError(f"{path}: line {line}, column '{column}': {msg}")


STREAM_ROWS = 20_000  # rows per chunk when `validate` streams a file (ValidationStream): about 8 kB of memory a row


def read_measurements(name_or_path: str | Path) -> tuple[Path, list[Row], list[str]]:
    """Parse and check a measurement CSV; returns (path, rows, header)."""
    path, rows, header = next(iter_measurements(name_or_path, sys.maxsize))
    return path, rows, header


def iter_measurements(name_or_path: str | Path, chunk_rows: int = STREAM_ROWS) -> Iterator[tuple[Path, list[Row], list[str]]]:
    """Parse and check a measurement CSV as it is read, `chunk_rows` rows at a time: yields (path, rows,
    header) per chunk. The file is read line by line (core/files.iter_input_lines: regular, bounded, UTF-8,
    a bad byte named by its line), so memory holds one chunk of rows, not the file; a bad row stops the
    reading there with its line."""
    path = resolve_dataset(name_or_path)
    reader = csv.reader(iter_input_lines(path, "measurement file", "csv"))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(f"{path}: empty file (expected a header line with {', '.join(COLUMNS)})") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(f"{path}: line 1: missing column(s) {', '.join(repr(m) for m in missing)} "
                         f"(required: {', '.join(COLUMNS)})")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"{path}: line 1: duplicate column(s) {', '.join(repr(d) for d in dup)}")
    rows: list[Row] = []
    done_any = False
    workloads: dict[str, Any] = {}  # model id -> Workload (or the InputError it raised): each read once
    # Rows that differ from an earlier row only in `source` and `measured_samples_per_s` (the cells a row
    # alone checks) are copies of that row's parse: the other cells passed every check there.
    parsed: dict[tuple, Row] = {}
    key_columns = [c for c in PARSED_COLUMNS if c not in ("source", "measured_samples_per_s")]
    n_cols = len(header)
    strip = str.strip
    for cells in reader:
        line = reader.line_num
        if not cells or not "".join(cells).strip():
            continue
        if len(cells) != n_cols:
            raise InputError(f"{path}: line {line}: {len(cells)} fields, header has {n_cols}")
        raw = dict(zip(header, map(strip, cells)))
        key = tuple([raw.get(c) for c in key_columns])
        done = parsed.get(key)
        if done is None:
            r = parsed[key] = _parse_row(path, line, raw, workloads)
        else:
            if raw["source"] == "":
                raise _err(path, line, "source", "empty (required)")
            r = object.__new__(Row)  # a shallow copy of `done` (copy.copy, without its generic machinery)
            r.__dict__.update(done.__dict__)
            r.line, r.source, r.raw = line, raw["source"], raw
            r.measured_samples_per_s = _number(path, line, raw, "measured_samples_per_s")
        rows.append(r)
        if len(rows) >= chunk_rows:
            yield path, rows, header
            rows, done_any = [], True
    if rows:
        yield path, rows, header
    elif not done_any:
        raise InputError(f"{path}: no measurement rows")


def _workload(model: str, cache: dict[str, Any]):
    """`load_workload(model)`, each model read once per file (a file may have 100,000 rows)."""
    w = cache.get(model)
    if w is None:
        try:
            w = load_workload(model)
        except InputError as exc:
            w = exc
        cache[model] = w
    if isinstance(w, InputError):
        raise w
    return w


@lru_cache(maxsize=None)
def _inferred_stack(strategy: str, reduce_on: str) -> str:
    """The stack a row runs when its file does not say (stacks.infer_stack), one lookup per pair."""
    st = STRATEGIES.index(strategy) if strategy in STRATEGIES else 0
    return STACKS[int(infer_stack(np.array([st]), np.array([REDUCE_ON.index(reduce_on)]))[0])]


def _number(path: Path, line: int, raw: dict[str, str], col: str, *, integer: bool = False, optional: bool = False,
            positive: bool = True):
    """A number cell, checked: finite, > 0 unless `positive` is False, whole and at most MAX_COUNT when `integer`."""
    v = raw[col]
    if v == "":
        if optional:
            return None
        raise _err(path, line, col, "empty (required)")
    try:
        x = float(v)
    except ValueError:
        raise _err(path, line, col, f"not a number: {v!r}") from None
    if not math.isfinite(x) or (positive and x <= 0):
        raise _err(path, line, col, f"must be a positive number, got {v!r}")
    if not integer and x > 1e12:  # far past any GPU count, batch, link rate or throughput: a typo, and would overflow
        raise _err(path, line, col, f"must be at most 1e12, got {v!r}")
    if integer:
        if not x.is_integer():
            raise _err(path, line, col, f"must be a whole number, got {v!r}")
        if x > MAX_COUNT:
            raise _err(path, line, col, f"must be at most {MAX_COUNT:,}, got {v!r}")
        return int(x)
    return x


def _parse_row(path: Path, line: int, raw: dict[str, str], workloads: dict[str, Any] | None = None) -> Row:
    def need(col: str) -> str:
        v = raw[col]
        if v == "":
            raise _err(path, line, col, "empty (required)")
        return v

    def number(col: str, *, integer: bool = False, optional: bool = False, positive: bool = True):
        return _number(path, line, raw, col, integer=integer, optional=optional, positive=positive)

    def choice(col: str, options: tuple[str, ...], default: str | None = None) -> str | None:
        v = raw[col].lower()
        if v == "" and default is not None:
            return default
        if v == "" and default is None:
            return None
        if v not in options:
            raise _err(path, line, col, f"unknown value {raw[col]!r} (choose from {', '.join(options)})")
        return v

    model = need("model")
    try:
        workload = _workload(model, {} if workloads is None else workloads)
    except InputError as exc:
        raise _err(path, line, "model", str(exc)) from None
    r = Row(
        line=line, source=need("source"), model=model, gpu=need("gpu"),
        gpus_per_node=number("gpus_per_node", integer=True), nodes=number("nodes", integer=True),
        batch_per_gpu=number("batch_per_gpu", integer=True), precision=choice("precision", PRECISIONS, "fp32"),
        strategy=choice("strategy", ROW_STRATEGIES) or "", nic_gbps=number("nic_gbps", optional=True),
        transport=choice("transport", TRANSPORTS), num_ps=number("num_ps", integer=True, optional=True),
        reduce_on=choice("reduce_on", REDUCE_ON, "gpu"),
        single_gpu_samples_per_s=number("single_gpu_samples_per_s", optional=True),
        measured_samples_per_s=number("measured_samples_per_s"),
        tensor_set=raw.get("tensor_set", "") or "pytorch", chassis=raw.get("chassis", "") or None, raw=raw,
    )
    if "overlap" in raw:
        r.overlap = choice("overlap", OVERLAP_MODES, "wfbp") or "wfbp"
    if raw.get("grad_accum", ""):
        r.grad_accum = number("grad_accum", integer=True)
    if raw.get("nics_per_node", ""):
        r.nics_per_node = number("nics_per_node", integer=True)
    if raw.get("gpus_per_process", ""):
        r.gpus_per_process = number("gpus_per_process", integer=True)
        if r.gpus_per_process > r.gpus_per_node:
            raise _err(path, line, "gpus_per_process", f"{r.gpus_per_process} GPUs per process, but the row has "
                       f"{r.gpus_per_node} GPUs per node (a process drives GPUs of its own node)")
    if not r.strategy:
        raise _err(path, line, "strategy", f"empty (required; choose from {', '.join(ROW_STRATEGIES)})")
    if r.tensor_set not in workload.tensor_sets:
        raise _err(path, line, "tensor_set", f"model '{model}' has no '{r.tensor_set}' tensor set "
                   f"(has: {', '.join(sorted(workload.tensor_sets))})")
    if r.strategy == "single" and r.total_gpus != 1:
        raise _err(path, line, "strategy", f"'single' needs 1 GPU, row has {r.gpus_per_node} x {r.nodes}")
    if r.strategy != "single" and r.total_gpus == 1:
        r.strategy = "single"
    if r.nodes > 1:
        if r.nic_gbps is None:
            raise _err(path, line, "nic_gbps", f"empty, but the row has {r.nodes} nodes")
        if r.transport is None:
            raise _err(path, line, "transport", "empty, but nic_gbps is given (tcp or rdma)")
    else:
        r.nic_gbps, r.transport = None, None
    if r.num_ps is not None and r.strategy != "ps":
        raise _err(path, line, "num_ps", f"given for strategy '{r.strategy}' (only ps has shards)")
    if r.strategy == "hierarchical" and r.nodes < 2:
        r.strategy = "ring"  # single node: the same as a ring
    given_mode = choice("variable_update", VARIABLE_UPDATES + ("replicated",)) if "variable_update" in raw else None
    if r.strategy == "ps":
        if given_mode == "replicated":
            raise _err(path, line, "variable_update", "'replicated' is an all-reduce mode, but the row's strategy is ps "
                       f"(choose from {', '.join(VARIABLE_UPDATES)})")
        r.variable_update = given_mode or VARIABLE_UPDATES[0]
    elif r.strategy != "single":
        if given_mode in VARIABLE_UPDATES:
            raise _err(path, line, "variable_update", f"{given_mode!r} is a parameter-server mode, but the row's strategy "
                       f"is {r.strategy} (an all-reduce: 'replicated' or empty)")
        r.variable_update = "replicated"
    given = choice("stack", STACKS + (AUTO,)) if "stack" in raw else None
    if given and given != AUTO:
        r.stack, r.stack_basis = given, "column"
    else:
        r.stack = _inferred_stack(r.strategy, r.reduce_on)
    return r


# ---------------------------------------------------------------------------------------------------
# catalog

def validation_catalog(rows: list[Row], catalog: str | Path | None = None) -> Catalog:
    """The base catalog (reference, or `catalog`) + the validation additions + one NIC per (rate, transport).

    Validation additions (GPUs, node shapes) are added only where the base lacks their id.
    """
    base_path = Path(catalog) if catalog is not None else REFERENCE_CATALOG
    data = read_toml(base_path, "catalog file")
    extra = read_toml(VALIDATION_CATALOG, "catalog file")
    merged = {k: (list(v) if isinstance(v, list) else v) for k, v in data.items()}
    for kind in ("gpu", "chassis"):
        have = {e.get("id") for e in merged.get(kind, [])}
        merged.setdefault(kind, [])
        merged[kind] += [e for e in extra.get(kind, []) if e.get("id") not in have]
    have = {e.get("id") for e in merged.get("nic", [])}
    merged.setdefault("nic", [])
    seen = set()
    for r in rows:
        nid = r.nic_id
        if nid is None or nid in have or nid in seen:
            continue
        seen.add(nid)
        merged["nic"].append({
            "id": nid, "name": f"{r.nic_gbps:g} Gb/s {r.transport} (measurement file)", "line_rate_gbps": float(r.nic_gbps),
            "transport": r.transport, "latency_us": ADHOC_LATENCY_US[r.transport], "price_usd": 1.0,
            "switch_port_price_usd": 1.0, "switch_ports": 64, "cable_price_usd": 0.0, "source": "measurement file row",
            "date": "2026",
            "price_source": "placeholder: validation only", "price_date": "2026",
            "estimates": ["latency_us", "price_usd", "switch_port_price_usd"],
        })
    where = f"{base_path} + {VALIDATION_CATALOG.name} + measurement NICs"
    return parse_catalog(merged, where)


# ---------------------------------------------------------------------------------------------------
# prepared cases: built once, evaluated for any SystemParams (calibration re-evaluates many times)

@dataclass
class Group:
    """Rows sharing (model, tensor set, batch, overlap): one design space, one evaluate() call.

    The space holds each distinct design of the group once (its own GPU entry carrying its own compute
    calibration); `inverse` maps every row of the group to its design, so a file of 100,000 rows that
    repeat a few hundred designs evaluates a few hundred."""

    rows: np.ndarray  # indices into the prepared row list
    space: DesignSpace
    compute: GpuCompute
    tensors: TensorSet
    batch: int
    num_ps: np.ndarray
    overlap: str = "wfbp"
    inverse: np.ndarray | None = None  # per row of `rows`: its design in `space` (None: one design per row)
    specs: LinkSpecs | None = None  # the space's link spec tables (timing.link_specs), built once
    gpus_per_process: np.ndarray | None = None  # per design: GPUs one process drives (None: 1 each)
    variable_update: np.ndarray | None = None  # per design: index into timing.VARIABLE_UPDATES (None: 0 each)

    def timing(self, params: SystemParams) -> Timing:
        """The timing model on this group's designs (link spec tables built on the first call, then reused)."""
        if self.specs is None:
            self.specs = link_specs(self.space)
        return evaluate(self.space, self.compute, self.tensors, params, self.batch, self.overlap, num_ps=self.num_ps,
                        specs=self.specs, gpus_per_process=self.gpus_per_process,
                        variable_update=self.variable_update)


@dataclass
class Prepared:
    rows: list[Row]
    groups: list[Group]
    single_idx: np.ndarray  # rows with strategy 'single'
    single_pred: np.ndarray
    compute_basis: list[str]
    measured: np.ndarray
    path: Path | None = None
    header: list[str] = field(default_factory=list)
    t_compute: np.ndarray | None = None  # per row: one GPU's calibrated iteration time (s)
    _design_of_row: np.ndarray | None = field(default=None, repr=False)

    def predict(self, params: SystemParams, groups: np.ndarray | None = None) -> np.ndarray:
        """Predicted throughput per row. `groups` (bool per group, `groups_for`): evaluate only those groups;
        the other groups' rows are NaN (a fit on a subset of rows evaluates only what it reads)."""
        return self.predict_designs(params, groups)[self.design_of_row]

    def predict_designs(self, params: SystemParams, groups: np.ndarray | None = None) -> np.ndarray:
        """Predicted throughput per distinct design (`design_of_row` maps rows to them): the single-GPU rows
        first, then each group's designs."""
        out = np.full(self.n_designs, np.nan)
        n_single = len(self.single_idx)
        out[:n_single] = self.single_pred
        at = n_single
        for k, g in enumerate(self.groups):
            n = len(g.space)
            if groups is None or groups[k]:
                out[at:at + n] = g.timing(params).throughput_samples_per_s
            at += n
        return out

    @property
    def n_designs(self) -> int:
        return len(self.single_idx) + sum(len(g.space) for g in self.groups)

    @property
    def design_of_row(self) -> np.ndarray:
        """Per row: its design in `predict_designs`' output."""
        if self._design_of_row is None:
            d = np.empty(len(self.rows), dtype=np.int64)
            d[self.single_idx] = np.arange(len(self.single_idx))
            at = len(self.single_idx)
            for g in self.groups:
                d[g.rows] = at + (np.arange(len(g.rows)) if g.inverse is None else g.inverse)
                at += len(g.space)
            self._design_of_row = d
        return self._design_of_row

    def groups_for(self, rows: np.ndarray) -> np.ndarray:
        """Bool per group: the group holds at least one of `rows` (indices into the rows)."""
        mask = np.zeros(len(self.groups), dtype=bool)
        if self.groups:
            of_row = np.full(len(self.rows), -1, dtype=np.int64)
            for k, g in enumerate(self.groups):
                of_row[g.rows] = k
            hit = of_row[np.asarray(rows, dtype=np.int64)]
            mask[np.unique(hit[hit >= 0])] = True
        return mask


def prepare(rows: list[Row], catalog: str | Path | Catalog | None = None, path: Path | None = None,
            header: list[str] | None = None) -> Prepared:
    """Per row: the calibrated compute times and the catalog design; rows grouped by (model, tensor set,
    batch, overlap) and, within a group, by identical design and compute, so each distinct design is
    evaluated once however many rows repeat it. The compute estimate and the chassis choice are looked
    up once per distinct (model, GPU, precision, batch) and (GPU, shape, link, strategy) respectively.

    Per row i (K = grad_accum, s_i = its measured 1-GPU rate, when given):
        T_f = K·f + (K−1)·b,  T_b = b,  T_step = st       (zoo phases f, b, st at batch b_i)
        scale = (K·b_i / s_i) / (T_f + T_b + T_step)      (1 when s_i is not given)
    and every phase is multiplied by `scale`, so one GPU runs at exactly s_i.
    """
    cat = catalog if isinstance(catalog, Catalog) else validation_catalog(rows, catalog)
    chassis_all, nics_all = list(cat.chassis), list(cat.nic)
    where = str(path) if path is not None else "measurements"
    n_rows = len(rows)
    f = np.zeros(n_rows)
    b = np.zeros(n_rows)
    st = np.zeros(n_rows)
    basis: list[str] = [""] * n_rows
    workloads: dict[str, Any] = {}
    estimates: dict[tuple, Any] = {}  # (model, gpu, precision, batch) -> ComputeEstimate
    placed: dict[tuple, tuple[int, int]] = {}  # the single_design arguments -> (chassis index, NIC index)
    design: dict[int, tuple[int, int]] = {}
    for i, r in enumerate(rows):
        if r.gpu not in cat.gpus:
            raise InputError(f"{where}: line {r.line}, column 'gpu': unknown gpu '{r.gpu}' "
                             f"(known: {', '.join(cat.gpus)})")
        g = cat.gpus[r.gpu]
        ekey = (r.model, r.gpu, r.precision, r.batch_per_gpu)
        est = estimates.get(ekey)
        if est is None:
            w = _workload(r.model, workloads)
            try:
                est = w.compute(g, r.precision, r.batch_per_gpu, cat)
            except InputError as exc:
                raise InputError(f"{where}: line {r.line}, column 'gpu': {exc}") from None
            estimates[ekey] = est
        k = r.grad_accum  # K micro-batches per synchronisation (api._gpu_compute)
        fk, bk, sk = k * est.forward_s + (k - 1) * est.backward_s, est.backward_s, est.step_s
        scale = 1.0
        if r.single_gpu_samples_per_s is not None:
            scale = (k * r.batch_per_gpu / r.single_gpu_samples_per_s) / (fk + bk + sk)
            basis[i] = f"calibrated to {r.single_gpu_samples_per_s:g} samples/s on 1 GPU (zoo phases x {scale:.3g})"
        else:
            basis[i] = f"{est.source}: {est.basis}"
        f[i], b[i], st[i] = fk * scale, bk * scale, sk * scale
        if r.strategy == "single":
            continue
        nics = r.nics_per_node if r.nodes > 1 else 1
        dkey = (r.gpu, r.gpus_per_node, r.nodes, r.nic_id, r.strategy, r.reduce_on, r.chassis, nics)
        at = placed.get(dkey)
        if at is None:
            try:
                sp = single_design(cat, r.gpu, r.gpus_per_node, r.nodes, r.nic_id, r.strategy, r.reduce_on, r.chassis,
                                   nics)
            except InputError as exc:
                msg = str(exc)
                # the column at fault, from what single_design says failed; the link when no chassis takes it
                col = {"nic": "nic_gbps", "chassis": "chassis"}.get(exc.field or "", "gpus_per_node")
                if col == "nic_gbps":
                    msg += f" (no adapter slot in the catalog takes {r.nic_gbps:g} Gb/s {r.transport})"
                raise InputError(f"{where}: line {r.line}, column '{col}': {msg}") from None
            at = placed[dkey] = (int(sp.chassis_idx[0]), int(sp.nic_idx[0]))
        design[i] = at

    single_idx = np.array([i for i, r in enumerate(rows) if r.strategy == "single"], dtype=np.int64)
    per_iter = np.array([r.batch_per_gpu * r.grad_accum for r in rows], dtype=np.float64)
    single_pred = per_iter[single_idx] / (f[single_idx] + b[single_idx] + st[single_idx])
    keys: dict[tuple, list[int]] = {}
    for i in design:
        r = rows[i]
        keys.setdefault((r.model, r.tensor_set, r.batch_per_gpu * r.grad_accum, r.overlap), []).append(i)
    groups = []
    for (model, ts, batch, overlap), idx in keys.items():
        # distinct designs of the group, first row first: everything evaluate() reads of a row
        distinct: dict[tuple, int] = {}
        first: list[int] = []
        inverse = np.empty(len(idx), dtype=np.int64)
        for j, i in enumerate(idx):
            r = rows[i]
            key = (r.gpu, design[i], r.nodes, r.strategy, r.reduce_on, r.stack, r.nics_per_node if r.nodes > 1 else 1,
                   r.num_ps or 0, r.gpus_per_process, r.variable_update, f[i], b[i], st[i])
            u = distinct.get(key)
            if u is None:
                u = distinct[key] = len(first)
                first.append(i)
            inverse[j] = u
        n = len(first)
        space = DesignSpace(
            gpus=[cat.gpus[rows[i].gpu] for i in first], chassis=chassis_all, nics=nics_all,
            gpu_idx=np.arange(n, dtype=np.int64),
            chassis_idx=np.array([design[i][0] for i in first], dtype=np.int64),
            nic_idx=np.array([design[i][1] for i in first], dtype=np.int64),
            nodes=np.array([rows[i].nodes for i in first], dtype=np.int64),
            strategy=np.array([STRATEGIES.index(rows[i].strategy) for i in first], dtype=np.int64),
            reduce_on=np.array([REDUCE_ON.index(rows[i].reduce_on) for i in first], dtype=np.int64),
            stack=np.array([STACKS.index(rows[i].stack) for i in first], dtype=np.int64),
            nics_per_node=np.array([rows[i].nics_per_node if rows[i].nodes > 1 else 1 for i in first], dtype=np.int64),
        )
        fa = np.array(first, dtype=np.int64)
        compute = GpuCompute(f[fa], b[fa], st[fa], np.ones(n, bool), np.ones(n, bool),
                             ["calibrated"] * n, [basis[i] for i in first])
        num_ps = np.array([rows[i].num_ps or 0 for i in first], dtype=np.int64)
        per_process = np.array([rows[i].gpus_per_process for i in first], dtype=np.int64)
        mode = np.array([VARIABLE_UPDATES.index(rows[i].variable_update) if rows[i].variable_update in VARIABLE_UPDATES
                         else 0 for i in first], dtype=np.int64)
        groups.append(Group(np.array(idx, dtype=np.int64), space, compute,
                            _workload(model, workloads).tensors(ts), int(batch), num_ps, overlap, inverse,
                            gpus_per_process=per_process if (per_process > 1).any() else None,
                            variable_update=mode if mode.any() else None))
    measured = np.array([r.measured_samples_per_s for r in rows])
    return Prepared(rows, groups, single_idx, single_pred, basis, measured, path, header or [], f + b + st)


# ---------------------------------------------------------------------------------------------------
# summaries

def error_stats(err_pct: np.ndarray) -> dict[str, Any]:
    a = np.abs(np.asarray(err_pct, dtype=np.float64))
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return {"n": 0, "median_abs_error_pct": None, "p90_abs_error_pct": None, "max_abs_error_pct": None}
    return {
        "n": int(len(a)),
        "median_abs_error_pct": round(float(np.median(a)), 3),
        "p90_abs_error_pct": round(float(np.percentile(a, 90)), 3),
        "max_abs_error_pct": round(float(a.max()), 3),
    }


def summarize(frame: pd.DataFrame, err_col: str = "error_pct") -> dict[str, Any]:
    multi = frame["nodes"].astype(int) > 1
    return {
        "summary": error_stats(frame[err_col].to_numpy()),
        "multi_node": error_stats(frame.loc[multi, err_col].to_numpy()),
        "by_source": {s: error_stats(g[err_col].to_numpy()) for s, g in frame.groupby("source", sort=True)},
        "by_strategy": {s: error_stats(g[err_col].to_numpy()) for s, g in frame.groupby("strategy", sort=True)},
        "by_stack": {s: error_stats(g[err_col].to_numpy()) for s, g in frame.groupby("stack", sort=True)},
    }


@dataclass
class ValidationResult:
    path: Path
    frame: pd.DataFrame  # the file's columns + predicted_samples_per_s, error_pct, compute_basis
    header: list[str]
    summaries: dict[str, Any]

    def to_json_dict(self) -> dict[str, Any]:
        """The rows as JSON-ready dicts (floats to 6 significant digits, NaN and infinities as None), column by
        column, then the summaries."""
        columns = self.json_columns()
        rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
        return {"file": str(self.path), "rows": rows, **self.summaries}

    def json_columns(self) -> dict[str, list]:
        """The rows' values as `to_json_dict` gives them, one list per column."""
        return {k: _json_column(self.frame[k]) for k in self.frame.columns}

    def json_text(self) -> str:
        """`json.dumps(to_json_dict(), indent=2)` (with non-finite numbers as null), byte for byte, without
        building a dict per row (files.json_with_columns)."""
        from costopt.core.files import json_with_columns

        return json_with_columns({"file": str(self.path)}, "rows", self.json_columns(), self.summaries)


def _json_value(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not math.isfinite(float(v)) else float(f"{float(v):.6g}")
    return v


def _json_column(col: pd.Series) -> list:
    """One frame column as Python values: ints and strings as they are, floats to 6 significant digits."""
    values = col.tolist()
    kinds = set(map(type, values))
    if col.dtype.kind in "iub" or kinds == {str}:
        return values
    if kinds == {float} and all(map(math.isfinite, values)):
        return [float(f"{v:.6g}") for v in values]
    return [_json_value(v) for v in values]


def frame_for(prep: Prepared, predicted: np.ndarray) -> pd.DataFrame:
    """The file's columns (as read), then line, stack, predicted_samples_per_s, error_pct and compute_basis
    (a column of the file with one of those names is replaced in place). Built column by column."""
    import pandas as pd

    rows = prep.rows
    # every row's raw dict has the header's keys in the header's order: transpose the values in one pass
    cols: dict[str, Any] = dict(zip(rows[0].raw, map(list, zip(*(r.raw.values() for r in rows))))) if rows else {}
    cols["line"] = [r.line for r in rows]
    cols["stack"] = [r.stack for r in rows]
    pred = np.asarray(predicted, dtype=np.float64)
    cols["predicted_samples_per_s"] = pred
    cols["error_pct"] = (pred - prep.measured) / prep.measured * 100.0
    cols["compute_basis"] = list(prep.compute_basis)
    # the counts as parsed (a cell written 8.0 is the whole number 8, as in the prediction), not as read
    cols["nodes"] = np.array([r.nodes for r in rows], dtype=np.int64)
    cols["gpus_per_node"] = np.array([r.gpus_per_node for r in rows], dtype=np.int64)
    return pd.DataFrame(cols)


def with_stack(rows: list[Row], stack: str | None) -> list[Row]:
    """Rows predicted as if they ran `stack` (None or `auto`: each row's own, from its column or inferred)."""
    s = check_stack(stack)
    if s != AUTO:
        for r in rows:
            r.stack, r.stack_basis = s, "--stack"
    return rows


def validate(file: str | Path, *, system: str | Path | SystemParams | None = None,
             catalog: str | Path | None = None, stack: str | None = None,
             chunk_rows: int = STREAM_ROWS) -> ValidationResult:
    """Predict every row of a measurement file and compare with what was measured (all rows in one frame;
    `ValidationStream` gives them a chunk at a time, for files too large to hold)."""
    stream = ValidationStream(file, system=system, catalog=catalog, stack=stack, chunk_rows=chunk_rows)
    frames = list(stream.frames())
    if len(frames) == 1:
        df = frames[0]
    else:
        import pandas as pd

        df = pd.concat(frames, ignore_index=True)
    return ValidationResult(stream.path, df, stream.header, stream.summaries)


_INTERVAL_BASIS = ("10th-90th percentile (Weibull positions) of measured / predicted time beyond compute "
                   "in the shipped rows' leave-one-source-out predictions, per stack, weighed by each "
                   "row's predicted exposed share (t_iter - t_compute) / t_iter; compute calibrated to "
                   "each row's 1-GPU figure (costopt/perf/intervals.py)")


class ValidationStream:
    """`validate`, one chunk of rows at a time: `frames()` reads, predicts and yields each chunk's frame (the
    columns `validate` gives, `chunk_rows` rows at most) and drops it; what the summaries need is kept per row
    as numbers (absolute error, codes of source, strategy and stack, multi-node, inside the 80% range:
    about 30 bytes a row), so a file of 1,000,000 rows runs in the memory of one chunk plus that
    (benchmarks/bench_validate_stream.py). `summaries` (after the last frame) equal `summarize` over every
    row: the same groups in the same order, the same statistics.

    Chunks share the catalog: the validation catalog of a chunk's rows is made once per set of ad-hoc
    NICs (a row's prediction depends only on its own design, so a chunk predicts each row as the whole
    file would)."""

    def __init__(self, file: str | Path, *, system: str | Path | SystemParams | None = None,
                 catalog: str | Path | None = None, stack: str | None = None, chunk_rows: int = STREAM_ROWS):
        self._chunks = iter_measurements(file, chunk_rows)
        self._first = next(self._chunks)  # the header's and the first rows' errors now, before any output
        self.path, _, self.header = self._first
        check_stack(stack)
        self.stack = stack
        self.params = system if isinstance(system, SystemParams) else load_system(system)
        self.catalog = catalog
        self.summaries: dict[str, Any] | None = None

    def frames(self) -> Iterator[pd.DataFrame]:
        err, multi, inside = [], [], []
        codes: dict[str, dict[str, int]] = {"source": {}, "strategy": {}, "stack": {}}
        of: dict[str, list[np.ndarray]] = {k: [] for k in codes}
        catalogs: dict[frozenset, Catalog] = {}
        first, self._first = self._first, None
        for path, rows, header in itertools.chain([first], self._chunks):
            rows = with_stack(rows, self.stack)
            nics = frozenset(r.nic_id for r in rows if r.nic_id is not None)
            cat = catalogs.get(nics)
            if cat is None:
                cat = catalogs[nics] = validation_catalog(rows, self.catalog)
            prep = prepare(rows, cat, path, header)
            pred = prep.predict(self.params)
            df = frame_for(prep, pred)
            low, high = row_ranges(prep, pred)
            at = df.columns.get_loc("predicted_samples_per_s") + 1
            df.insert(at, "predicted_high_samples_per_s", high)
            df.insert(at, "predicted_low_samples_per_s", low)
            meas = prep.measured
            inside.append((meas >= low) & (meas <= high))
            err.append(df["error_pct"].to_numpy(dtype=np.float64))
            multi.append(df["nodes"].to_numpy().astype(int) > 1)
            for k, names in codes.items():
                of[k].append(np.array([names.setdefault(v, len(names)) for v in df[k].tolist()], dtype=np.int32))
            del prep, rows
            yield df
        e, m, ins = np.concatenate(err), np.concatenate(multi), np.concatenate(inside)

        def by(k: str) -> dict[str, Any]:
            c = np.concatenate(of[k])
            return {name: error_stats(e[c == code]) for name, code in sorted(codes[k].items())}

        s = {"summary": error_stats(e), "multi_node": error_stats(e[m]), "by_source": by("source"),
             "by_strategy": by("strategy"), "by_stack": by("stack")}
        s["summary"]["inside_80pct_range_share"] = round(float(ins.mean()), 4)
        s["interval"] = {"n": int(len(ins)), "inside_share": float(ins.mean()), "basis": _INTERVAL_BASIS}
        self.summaries = s


def row_ranges(prep: Prepared, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """80% range of each row's prediction (costopt/perf/intervals.py), capped at perfect scaling of its GPU."""
    stack = np.array([STACKS.index(r.stack) for r in prep.rows], dtype=np.int64)
    perfect = np.array([r.total_gpus * r.batch_per_gpu * r.grad_accum for r in prep.rows], dtype=np.float64) / prep.t_compute
    # the rows' compute is their own 1-GPU figure (kind `calibrated`): its error is inside the residuals;
    # the compute share t_c / t_iter = predicted / perfect sets how much of the communication error applies
    share = 1.0 - exposed_share(predicted, perfect)
    return interval_bounds(predicted, stack, None, share, perfect=perfect)


__all__ = ["COLUMNS", "Row", "read_measurements", "iter_measurements", "ValidationStream", "resolve_dataset", "validation_catalog", "prepare", "Prepared",
           "validate", "ValidationResult", "error_stats", "summarize", "list_datasets"]
