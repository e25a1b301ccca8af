"""Communication stacks: the software that moves the gradients, an input beside strategy and transport.

The same bytes move at very different rates depending on the software that moves them, so each
design carries a stack, and the stack carries its own parameters (`SystemParams` fields
`<stack>_link_fraction`, `<stack>_sync_us`, `<stack>_compute_slowdown`, `<stack>_copy_ns_per_byte`,
`<stack>_stream_ns_per_byte`, plus `nccl_socket_gb_per_s`, `mpi_host_gb_per_s` and `mpi_host_rdma_gb_per_s`; values and sources in
`costopt/data/system_priors.toml`, fitted values in `system_defaults.toml`):

    nccl  NCCL rings/trees (PyTorch DDP, Horovod with NCCL, TF replicated with NCCL): reduction on the
          GPUs, data stays in device memory
    mpi   all-reduce through host memory with MPI (2017-style Horovod without GPU-aware MPI): every
          gradient is copied device -> host, reduced by the CPU, copied back
    grpc  TensorFlow's runtime: parameter servers (and in-graph replication) over gRPC between processes
    gloo  Gloo collectives (PyTorch `gloo` backend): rings on host memory over TCP

Default (`auto`), from the design's strategy and where it reduces:

    strategy ps                              -> grpc   (the thesis's system: TF 1.x parameter servers)
    all-reduce (ring, hierarchical), reduce_on=cpu -> mpi    (an all-reduce on host memory)
    all-reduce, reduce_on=gpu                -> nccl

The same rule fills a measurement file's optional `stack` column when it is empty.

What each stack's parameters do in the timing model (costopt/perf/timing.py has the full equations):

- link fraction f_s: bulk transfers between nodes reach f_s of the transport's effective rate,
  B_wire = line rate x eff(transport) x f_s;
- NCCL over transport tcp (no IB verbs, or NCCL_IB_DISABLE=1) runs its socket transport: host threads copy each
  chunk through the kernel's TCP stack, pipelined with the wire, so B_wire = min(line x eff(tcp) x f_nccl,
  `nccl_socket_gb_per_s`) per NIC, a host-CPU ceiling whatever the link (NVIDIA/nccl#209, #450: 2.4-5 GB/s);
  over RDMA NCCL uses GPUDirect and no ceiling applies;
- MPI drives its host-memory ring with ONE thread per rank (wait for a block, reduce it, send it on), so a rank's
  ring traffic is capped whatever the link, per rank, not per NIC: over transport tcp (through the kernel's sockets)
  at `mpi_host_gb_per_s` (prior 1.07 GB/s: a one-thread host ring on 40 GbE, pytorch/gloo#248); over rdma (the
  adapter moves the bytes) at `mpi_host_rdma_gb_per_s` (prior 2.7 GB/s: osu_allreduce on host buffers, one rank
  per node, 4-8 nodes of LLNL Lassen, converged-computing/metrics-operator-experiments);
- copy cost c_s (ns per byte): RPC stacks serialise and copy every tensor on host CPUs, independent of the
  link (gRPC: one TF RecvTensor stream at ~0.5 GB/s) and concurrently with the wire: per connection the
  slower of the two sets the rate (TF 1.x gRPC moved the same ~162 MB/s with and without a wire,
  tensorflow#4498); a tensor held on a GPU is also staged through the host (device -> host before the RPC,
  host -> device after), in series;
- single-stream cost c1_s (ns per byte, `<stack>_stream_ns_per_byte`): an RPC stack serves each tensor as one
  request on one stream, so however many tensors run in parallel, the largest one costs at least its bytes x
  c1_s per parameter-server phase (gRPC prior 2.5 ns/B: published single-tensor RecvTensor rates); 0 for the
  stacks without an RPC layer;
- mpi and gloo reduce on host memory whatever `reduce_on` says (the copies over PCIe and the CPU
  reduction of the host-memory all-reduce path are charged); a hierarchical all-reduce over them reduces
  inside each node on the GPUs first and moves only the node's buffer through the host;
- per-step synchronisation t_sync = c_s x g_s, with the growth g_s of that stack's step:
      nccl: g = log2(N)               (tree-shaped launch/rendezvous: NCCL 2.4 double binary trees keep
                                       latency logarithmic in the ranks)
      grpc: g = log2(G) + (M - 1)     (in-process towers of one worker, then one barrier RPC per other
                                       worker: TF's step-end token queues, docs/sources.md §12c (thesis §4.1))
      mpi, gloo: g = N - 1            (rank-0 coordination / ring steps: linear in the ranks)
                 g = M - 1            hierarchical over several nodes with reduce_on=gpu: the GPUs of a node
                                       reduce among themselves first and only one leader per node is a rank
                                       of the host collective (Goyal et al. 2017 §4: NCCL inside the server,
                                       Gloo between servers), so M ranks, not N, coordinate each step
  N = all GPUs, G per node, M nodes; 0 for one GPU. Every stack counts the same GPUs: none is charged
  per GPU while another is charged per worker for the same peers;
- compute slowdown k_s: backward compute that runs while the stack communicates is stretched by
  k_s x the overlapped time (communication kernels take SMs and memory bandwidth; host-staged stacks
  take PCIe and memory bandwidth): T_b' = T_b + k_s x min(T_b, t_stream) when communication overlaps.
"""

from __future__ import annotations

import numpy as np

from costopt.core.arrays import select

from costopt.core.errors import InputError

STACKS = ("nccl", "mpi", "grpc", "gloo")
NCCL, MPI, GRPC, GLOO = range(4)
AUTO = "auto"
STACK_PARAMS = ("link_fraction", "sync_us", "compute_slowdown")
_PS = 2  # STRATEGIES.index("ps"); kept literal to avoid importing design_space here
_CPU = 1  # REDUCE_ON.index("cpu")


def check_stack(stack: str | None) -> str:
    """`auto` (or None) or one of STACKS; anything else is an input error."""
    s = AUTO if stack is None else str(stack).lower()
    if s != AUTO and s not in STACKS:
        raise InputError(f"unknown stack '{stack}' (choose from {AUTO}, {', '.join(STACKS)})", field="stack")
    return s


def infer_stack(strategy: np.ndarray, reduce_on: np.ndarray) -> np.ndarray:
    """Default stack index per design: ps -> grpc; all-reduce on the CPU -> mpi; else nccl."""
    strategy = np.asarray(strategy)
    reduce_on = np.asarray(reduce_on)
    return np.where(strategy == _PS, GRPC, np.where(reduce_on == _CPU, MPI, NCCL)).astype(np.int64)


def stack_codes(stack: str | None, strategy: np.ndarray, reduce_on: np.ndarray) -> np.ndarray:
    """Stack index per design: the inferred default for `auto`, else the named stack for every design."""
    s = check_stack(stack)
    if s == AUTO:
        return infer_stack(strategy, reduce_on)
    return np.full(len(np.asarray(strategy)), STACKS.index(s), dtype=np.int64)


def per_stack(params, name: str, stack: np.ndarray) -> np.ndarray:
    """Per-design value of the stack parameter `name` (e.g. `sync_us`): `<stack>_<name>` of each design's
    stack. A parameter may itself be an array (one value per design, used by resampling)."""
    n = len(stack)
    raw = [getattr(params, f"{s}_{name}") for s in STACKS]
    if all(type(v) is float or type(v) is int for v in raw):  # one value per stack: a table lookup
        return np.array(raw, dtype=np.float64)[stack]
    vals = [np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)) for v in raw]
    return np.choose(stack, vals)


def sync_growth(stack: np.ndarray, G: np.ndarray, M: np.ndarray, host_hier: np.ndarray | None = None) -> np.ndarray:
    """g_s of the per-step synchronisation cost (see the module docstring); 0 for a single GPU.

    `host_hier` (optional, one bool per design): a hierarchical all-reduce over a host stack (mpi, gloo)
    whose node leaders alone are ranks of the host collective: g = M - 1 instead of N - 1.
    """
    N = G * M
    with np.errstate(divide="ignore"):
        log_n = np.log2(np.maximum(N, 1.0))
        log_g = np.log2(np.maximum(G, 1.0))
    host_ranks = N if host_hier is None else np.where(host_hier, M, N)
    g = select([stack == NCCL, stack == GRPC], [log_n, log_g + (M - 1.0)], host_ranks - 1.0)
    return np.where(N <= 1, 0.0, g)


__all__ = ["STACKS", "AUTO", "STACK_PARAMS", "check_stack", "infer_stack", "stack_codes", "per_stack", "sync_growth"]
