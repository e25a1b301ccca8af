"""System parameters of the timing model (efficiencies, per-message costs, host speeds, stacks).

Two files of data, both with every value's source:

- `costopt/data/system_priors.toml`: what public measurements of each link and stack say, before
  any shipped row is fitted (the prior of the fit, with its width in `costopt.measure.calibrate.PRIOR`);
- `costopt/data/system_defaults.toml`: the defaults every command uses, FITTED on all shipped rows by
  `tools/fit_defaults.py` (rows, date and tool version recorded in its `[fit]` section, each value's
  prior and source beside it), with the fit's uncertainty (`[uncertainty]`, one standard deviation
  per fitted parameter) and the communication part of the 80% ranges (`[interval]`; the ranges a design
  shows combine it with compute error: costopt/perf/intervals.py, costopt/data/residuals.json).

A user's `--system FILE` (written by `costopt calibrate`) overrides any subset of the parameters;
unknown keys are errors, as in catalogs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

from costopt.core.errors import InputError
from costopt.core.files import read_toml
from costopt.core.paths import DATA_DIR

DEFAULTS_PATH = DATA_DIR / "system_defaults.toml"
PRIORS_PATH = DATA_DIR / "system_priors.toml"
# sections that describe a fit rather than set a parameter (read by `fit_record`)
RECORD_SECTIONS = ("fit", "interval", "uncertainty")


@dataclass(frozen=True)
class SystemParams:
    tcp_efficiency: float
    rdma_efficiency: float
    tcp_message_overhead_us: float
    rdma_message_overhead_us: float
    nvlink_efficiency: float
    pcie_efficiency: float
    intra_message_overhead_us: float
    host_reduce_gb_per_s: float
    host_memory_gb_per_s: float
    cpu_network_efficiency: float
    ps_tensor_overhead_us: float
    ps_pull_overlap: float
    bucket_mb: float
    overlap_efficiency: float
    memory_reserved_gb: float
    straggler_cv: float = 0.0
    sync_us_per_gpu: float = 0.0
    sync_us_per_worker: float = 0.0
    # host scheduling cost per step for every GPU beyond the first that ONE process drives (us); 0: not charged
    process_step_us_per_gpu: float = 0.0
    # per communication stack (costopt/perf/stacks.py): fraction of the transport's rate reached by bulk
    # transfers, per-step synchronisation cost per growth unit, compute slowdown under communication,
    # host CPU time per byte the stack serialises and copies (RPC stacks), and per byte of ONE RPC stream (one tensor)
    nccl_link_fraction: float = 1.0
    nccl_sync_us: float = 0.0
    nccl_compute_slowdown: float = 0.0
    nccl_copy_ns_per_byte: float = 0.0
    nccl_stream_ns_per_byte: float = 0.0
    # NCCL's socket transport (no IB verbs / RDMA): the rate its proxy threads push through the kernel's TCP
    # stack, a host-CPU ceiling independent of the link (GB/s per NIC); inf: no ceiling
    nccl_socket_gb_per_s: float = math.inf
    mpi_link_fraction: float = 1.0
    mpi_sync_us: float = 0.0
    mpi_compute_slowdown: float = 0.0
    mpi_copy_ns_per_byte: float = 0.0
    mpi_stream_ns_per_byte: float = 0.0
    # MPI's host-memory ring over kernel TCP: the ring traffic one rank's single progress thread moves per second
    # (sends, receives through the kernel's sockets and reduces every byte in series), a host-CPU ceiling
    # independent of the link (GB/s per rank); inf: no ceiling
    mpi_host_gb_per_s: float = math.inf
    # the same one-thread ceiling when the NIC's transport is rdma: the adapter moves the bytes, the thread still
    # waits, reduces and posts every block in series (GB/s per rank); inf: no ceiling
    mpi_host_rdma_gb_per_s: float = math.inf
    grpc_link_fraction: float = 1.0
    grpc_sync_us: float = 0.0
    grpc_compute_slowdown: float = 0.0
    grpc_copy_ns_per_byte: float = 0.0
    grpc_stream_ns_per_byte: float = 0.0
    # gRPC (2016-17) one-stream cost that grows with the message: per byte of a tensor of S GB, this x S ns more
    # (the stream's time grows as S²); the single-stream floor is S·max(c_1, this·S/1e9); 0: no growth
    grpc_stream_ns_per_byte_per_gb: float = 0.0
    gloo_link_fraction: float = 1.0
    gloo_sync_us: float = 0.0
    gloo_compute_slowdown: float = 0.0
    gloo_copy_ns_per_byte: float = 0.0
    gloo_stream_ns_per_byte: float = 0.0

    def with_updates(self, **kw: float) -> "SystemParams":
        return replace(self, **kw)


# TOML section/key -> SystemParams field
_KEYS = {
    ("network", "tcp_efficiency"): "tcp_efficiency",
    ("network", "rdma_efficiency"): "rdma_efficiency",
    ("network", "tcp_message_overhead_us"): "tcp_message_overhead_us",
    ("network", "rdma_message_overhead_us"): "rdma_message_overhead_us",
    ("intra_node", "nvlink_efficiency"): "nvlink_efficiency",
    ("intra_node", "pcie_efficiency"): "pcie_efficiency",
    ("intra_node", "message_overhead_us"): "intra_message_overhead_us",
    ("host", "host_reduce_gb_per_s"): "host_reduce_gb_per_s",
    ("host", "host_memory_gb_per_s"): "host_memory_gb_per_s",
    ("host", "cpu_network_efficiency"): "cpu_network_efficiency",
    ("parameter_server", "tensor_overhead_us"): "ps_tensor_overhead_us",
    ("parameter_server", "pull_overlap"): "ps_pull_overlap",
    ("overlap", "bucket_mb"): "bucket_mb",
    ("overlap", "efficiency"): "overlap_efficiency",
    ("memory", "reserved_gb"): "memory_reserved_gb",
    ("sync", "straggler_cv"): "straggler_cv",
    ("sync", "step_us_per_gpu"): "sync_us_per_gpu",
    ("sync", "step_us_per_worker"): "sync_us_per_worker",
    ("sync", "step_us_per_process_gpu"): "process_step_us_per_gpu",
    **{(stack, key): f"{stack}_{key}" for stack in ("nccl", "mpi", "grpc", "gloo")
       for key in ("link_fraction", "sync_us", "compute_slowdown", "copy_ns_per_byte", "stream_ns_per_byte")},
    ("nccl", "socket_gb_per_s"): "nccl_socket_gb_per_s",
    ("mpi", "host_gb_per_s"): "mpi_host_gb_per_s",
    ("mpi", "host_rdma_gb_per_s"): "mpi_host_rdma_gb_per_s",
    ("grpc", "stream_ns_per_byte_per_gb"): "grpc_stream_ns_per_byte_per_gb",
}
_FRACTIONS = {"tcp_efficiency", "rdma_efficiency", "nvlink_efficiency", "pcie_efficiency",
              "cpu_network_efficiency", "overlap_efficiency",
              "nccl_link_fraction", "mpi_link_fraction", "grpc_link_fraction", "gloo_link_fraction"}
_MAX_VALUE = 1e9  # no speed (GB/s), per-message cost (us) or size (MB, GB) of the model comes near this
_UNIT_INTERVAL = {"ps_pull_overlap", "straggler_cv",  # in [0, 1], 0 allowed
                  "nccl_compute_slowdown", "mpi_compute_slowdown", "grpc_compute_slowdown", "gloo_compute_slowdown"}
_POSITIVE = {"bucket_mb", "nccl_socket_gb_per_s", "mpi_host_gb_per_s", "mpi_host_rdma_gb_per_s"}  # a size or a speed: 0 is not a value
FIELD_TO_KEY = {v: k for k, v in _KEYS.items()}

# The parameters `costopt calibrate` fits (calibrate.BOUNDS) and `solve` resamples (robustness.py):
# name -> (lower, upper, scale). "log": searched (and resampled) on a log scale between the bounds.
FIT_BOUNDS: dict[str, tuple[float, float, str]] = {
    "tcp_efficiency": (0.05, 1.0, "lin"),
    "rdma_efficiency": (0.2, 1.0, "lin"),
    "tcp_message_overhead_us": (1.0, 2000.0, "log"),
    "rdma_message_overhead_us": (0.1, 200.0, "log"),
    "ps_tensor_overhead_us": (1.0, 5000.0, "log"),
    "ps_pull_overlap": (0.0, 1.0, "lin"),
    "overlap_efficiency": (0.3, 1.0, "lin"),
    "host_reduce_gb_per_s": (0.5, 100.0, "log"),
    "cpu_network_efficiency": (0.05, 1.0, "lin"),
    "pcie_efficiency": (0.2, 1.0, "lin"),
    "nvlink_efficiency": (0.2, 1.0, "lin"),
    "straggler_cv": (0.0, 0.3, "lin"),
    "sync_us_per_gpu": (0.0, 20000.0, "lin"),
    "sync_us_per_worker": (0.0, 20000.0, "lin"),
    "process_step_us_per_gpu": (0.0, 200000.0, "lin"),
    **{f"{st}_link_fraction": (0.02, 1.0, "lin") for st in ("nccl", "mpi", "grpc", "gloo")},
    **{f"{st}_sync_us": (0.1, 20000.0, "log") for st in ("nccl", "mpi", "grpc", "gloo")},
    **{f"{st}_compute_slowdown": (0.0, 1.0, "lin") for st in ("nccl", "mpi", "grpc", "gloo")},
    **{f"{st}_copy_ns_per_byte": (0.05, 50.0, "log") for st in ("nccl", "mpi", "grpc", "gloo")},
    **{f"{st}_stream_ns_per_byte": (0.05, 50.0, "log") for st in ("nccl", "mpi", "grpc", "gloo")},
    "nccl_socket_gb_per_s": (0.2, 50.0, "log"),
    "mpi_host_gb_per_s": (0.1, 50.0, "log"),
    "mpi_host_rdma_gb_per_s": (0.1, 50.0, "log"),
}


def _read(path: Path) -> dict:
    return read_toml(path, "system parameter file")


def _values(data: dict, where: str, *, require_all: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for section, body in data.items():
        if section in RECORD_SECTIONS:  # a fit's record carried along (`costopt calibrate`, the defaults); not a parameter
            continue
        if not isinstance(body, dict):
            raise InputError(f"{where}: top-level key '{section}': unknown key (expected a [section])", field=section)
        for key, value in body.items():
            name = _KEYS.get((section, key))
            if name is None:
                raise InputError(f"{where}: [{section}] field '{key}': unknown key", field=key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"{where}: [{section}] field '{key}': must be a number, got {value!r}", field=key)
            value = float(value)
            if (not math.isfinite(value) or value < 0 or value > _MAX_VALUE or (name in _FRACTIONS and not 0 < value <= 1) or (name in _POSITIVE and value <= 0)
                    or (name in _UNIT_INTERVAL and value > 1)):
                raise InputError(f"{where}: [{section}] field '{key}': value {value:g} out of range", field=key)
            out[name] = value
    if require_all:
        missing = [FIELD_TO_KEY[f.name] for f in fields(SystemParams) if f.name not in out]
        if missing:
            raise InputError(f"{where}: missing field(s) {missing}", field="system")
    return out


_CACHE: dict[str, tuple[float, SystemParams, dict]] = {}


def _load_full(path: Path) -> tuple[SystemParams, dict]:
    key = str(path)
    mtime = path.stat().st_mtime if path.exists() else 0.0
    hit = _CACHE.get(key)
    if hit is None or hit[0] != mtime:
        data = _read(path)
        hit = (mtime, SystemParams(**_values(data, key, require_all=True)), data)
        _CACHE[key] = hit
    return hit[1], hit[2]


def default_system() -> SystemParams:
    """The shipped defaults: fitted on all shipped rows (see the module docstring)."""
    return _load_full(DEFAULTS_PATH)[0]


def prior_system() -> SystemParams:
    """The values public measurements give before any shipped row is fitted: the centre of every fit."""
    return _load_full(PRIORS_PATH)[0]


def fit_record(path: Path = DEFAULTS_PATH) -> dict:
    """The defaults file's record sections: `fit` (rows, date, tool version...), `uncertainty`
    (parameter -> one standard deviation) and `interval` (`<stack>_p10_exposed_ratio`, `<stack>_p90_exposed_ratio`:
    quantiles of measured / predicted time beyond compute in the leave-one-source-out predictions,
    costopt/perf/intervals.py)."""
    data = _load_full(path)[1]
    return {k: dict(data.get(k, {})) for k in RECORD_SECTIONS}


def load_system(path: str | Path | None) -> SystemParams:
    """Defaults, overridden by the values in `path` when given."""
    base = default_system()
    if path is None:
        return base
    if isinstance(path, bool) or not isinstance(path, (str, Path)) or path == "":
        raise InputError(f"system must be a file path, got {type(path).__name__} {path!r}"[:120], field="system")
    p = Path(path)
    return base.with_updates(**_values(_read(p), str(p), require_all=False))


def system_to_toml(params: SystemParams, extra: str = "") -> str:
    """Write parameters back in the file format (used by `costopt calibrate`)."""
    by_section: dict[str, list[str]] = {}
    for f in fields(SystemParams):
        section, key = FIELD_TO_KEY[f.name]
        by_section.setdefault(section, []).append(f"{key} = {getattr(params, f.name):.6g}")
    text = "\n\n".join(f"[{s}]\n" + "\n".join(lines) for s, lines in by_section.items()) + "\n"
    return text + extra
