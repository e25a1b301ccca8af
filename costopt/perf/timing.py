"""Timing model of one data-parallel training iteration, evaluated for all designs at once.

Symbols (per design): G GPUs per node, M nodes, N = G·M; S gradient bytes per replica;
T_f, T_b, T_step forward, backward and optimizer-step time of one GPU at batch b.
Links (effective = spec × efficiency, efficiencies and per-message costs from `SystemParams`):

    B_nic   = NIC line rate × eff(transport)            α_nic   = adapter latency + stack overhead(transport)
    B_intra = NVLink/NVSwitch or PCIe per GPU × eff      α_intra = intra-node step latency
    B_pcie  = PCIe host link × eff / GPUs per PCIe switch (host copies of all GPUs at once)
    B_red   = host reduction speed;  B_hmem = host memory speed

Communication, per iteration:

    ring (flat, NCCL-style, reduce_on=gpu):   V = 2(N−1)/N·S
        t = V / min(B_nic, B_intra)  (M > 1)    t = V / B_intra  (M = 1)      + 2(N−1)·α per bucket
    hierarchical (M > 1): intra reduce-scatter, inter-node ring over M, intra all-gather
        t = 2(G−1)/G·S / B_intra + 2(M−1)/M·S / B_nic                        + (2(G−1)α_intra + 2(M−1)α_nic) per bucket
    ring, reduce_on=cpu (MPI on host memory): copies through the host, a host-memory-speed reduction
        t = 2·S / B_pcie + V / min(B_nic·cpu_eff, B_hmem) + (N−1)/N·S / B_red
        (stack mpi: min(B_nic·cpu_eff, B_hmem, B_host), the one-thread host ceiling below)
    parameter server, P shards (default P = M) colocated on the worker nodes (shard k on node k mod M),
    greedy whole-tensor placement:
        per phase NIC bytes  X = max_j max((M−1)·L_j, S − L_j), L_j = shard bytes on node j  (placement.py)
        pull (before forward)                   = max(X/B_nic + α_ps·R(M), host copy); exposed: max(pull − w·T_f, 0)
        push (overlaps backward, per bucket)    = max(X/B_nic, host copy, local reduce, M·S_max·3/B_apply)
        apply (exposed) = S_max · 3 / B_apply   (read var, read grad, write var; S_max = largest shard)
      Each of the W = M workers applies its own averaged gradient to a shard when it arrives (TF PS,
      no accumulation; docs/sources.md §12c (thesis §4.1)), so the W applies are one more pipelined stage of the
      push (thesis §6.3's W·S_p·3/B_mem, here a rate limit), and only the last one follows the push.
      host copy: reduce_on=cpu (variables on the host, TF local_parameter_device=cpu): every GPU copies
      S each way, B_pcie shared; local reduce (G−1)·S/B_red on the CPU. reduce_on=gpu: variables on
      GPUs, local reduce/broadcast over B_intra: (G−1)/G·S / B_intra, staging S over PCIe when M > 1.
    When the pull runs depends on TensorFlow's `variable_update` mode (tf_cnn_benchmarks
    scripts/tf_cnn_benchmarks/variable_mgr.py; `variable_update` argument, one per design, VARIABLE_UPDATES):
      parameter_server (the default; every design costopt enumerates): the towers read each variable from its
        shard with no other input (VariableMgrDistributedFetchFromPS), so all pulls start with the step and the
        forward of a layer waits only for its own variables: exposed pull max(pull − w·T_f, 0),
        w = `ps_pull_overlap` (prior 0.87 from that dataflow with the pulls sharing the rate:
        tools/ps_pull_overlap_prior.py)
      distributed_replicated: every GPU keeps its own copy; per variable, the worker pushes its aggregated
        gradient, the shard applies it, a barrier waits for all workers, and the updated value is read once on
        the worker's CPU and written into its G GPU copies (VariableMgrDistributedReplicated), so the pull of a
        variable follows its push as soon as the gradient is ready: the pull joins the backward-overlapped
        stream instead of preceding the forward (the next forward reads local copies only):
          stream stages (push + pull):  NIC  2 × the phase above (both directions carry both phases)
                                        host copy + S / B_pcie (G copies of S through the shared PCIe)
                                        per-tensor request cost in the stream 2·α_ps·(M−1)/M per tensor
          exposed pull = 0; the last apply stays serial. The per-variable barrier's token RPCs are not charged.

Overlap (`overlap` mode). Gradients are grouped into buckets k in ready order, bucket k ready at
r_k·T_b (r from the measured timeline) carrying s_k bytes and costing c_k = β·s_k + λ_k, where
β = t_stream/S. A FIFO link finishes the last bucket at

    E = max_k ( r_k·T_b + Σ_{j ≥ k} c_j )        (closed form of end_k = max(ready_k, end_{k−1}) + c_k)

    none:  t_iter = T_f + T_b + t_stream + T_step + t_serial
    wfbp:  t_iter = T_f + max(T_b, E) + T_step + t_serial              (default)
    full:  t_iter = T_f + max(T_b, t_stream) + T_step + t_serial

t_serial is the PS pull and apply (0 for all-reduce), plus the synchronisation wait for the slowest GPU
(docs/sources.md §12c (thesis §6.3) step 7, "straggler spread"; applies to every synchronous strategy, N > 1):

    t_straggle = cv · (T_f + T_b + T_step) · E_N,   E_N = E[max of N iid standard normals]
                 (E_1 = 0, E_2 = 0.564, E_8 = 1.424, E_64 = 2.344; cv = `straggler_cv`, fitted; prior 0.0365, the
                 step-to-step spread of one H200, tools/straggler_prior.py)

and a fixed per-step synchronisation cost per peer (collective launch and rendezvous, TF's step-end
barrier; §6.3 step 7 "t_sync ≈ 2·α", the ring's 2(N−1)·α per tensor of §6.4), independent of compute
time. Who the peers are depends on the processes: an all-reduce has one rank per GPU; TF's PS modes
run one worker process per node with its G GPUs as towers inside it, and the step-end barrier is
between the M workers (docs/sources.md §12c (thesis §4.1): W token queues, one per worker):

    all-reduce:  t_sync = (N − 1) · α_gpu
    PS:          t_sync = (G − 1) · α_gpu + (M − 1) · α_worker
                 (α_gpu = `sync_us_per_gpu`, [sync] step_us_per_gpu; α_worker = `sync_us_per_worker`,
                  [sync] step_us_per_worker; both default 0)

These two legacy terms default to 0; the per-stack terms below carry the per-step costs.

One process driving several GPUs (a measured run's `gpus_per_process` g; 1, one process per GPU as PyTorch
DDP and Horovod run, for every design costopt enumerates): a runtime that schedules every device's operators
from one process (PaddlePaddle 1.x ParallelExecutor, TF 1.x in-graph towers) does the host work of all g
devices each step, in series with the step (DLPerf's PaddlePaddle 1.8.3 BERT-base on 8 V100: about 0.2 s more
per step than one GPU at batch 32, 64 and 96 alike, where the same framework's multi-process ResNet-50 run
loses 7%):

    t_proc = (g − 1) · h                (h = `process_step_us_per_gpu`, [sync] step_us_per_process_gpu)

Communication stack s (costopt/perf/stacks.py; one per design, default from strategy and reduce_on):

    B_wire    = line rate × eff(transport) × f_s                     (f_s = `<s>_link_fraction`)
                nccl over transport tcp (its socket transport: no IB verbs, or NCCL_IB_DISABLE=1):
                B_wire = min(line rate × eff(tcp) × f_nccl, B_sock)  per NIC, B_sock = `nccl_socket_gb_per_s`
                (host threads copy chunks through the kernel TCP stack, pipelined with the wire: the slower
                stage sets the rate; NVIDIA/nccl#209, #450: 2.4-5 GB/s whatever the link)
    c_s       = `<s>_copy_ns_per_byte`: host CPU time per byte the stack serialises and copies on one connection
                (gRPC 2 ns/B prior: one TF RecvTensor stream at ~0.5 GB/s, tensorflow#6116); it does not scale with
                the link, and it runs CONCURRENTLY with the wire (while one chunk is on the wire the next is being
                serialised): per connection the slower of the two sets the rate, as NCCL's socket threads above.
                TF 1.x gRPC moved the same ~162 MB/s between two processes on one machine (no wire) as across a
                40 Gb/s network (tensorflow#4498, 2016-09: 161.63 MB/s local benchmark; "always around 1.3 Gbit/s"
                on the network): the wire added no time to the CPU-bound stream
    stage     = 1/B_pcie_one for grpc with reduce_on=gpu (TF's RecvTensor copies a GPU tensor to the host
                before encoding it, and back on arrival, in series with the RPC), else 0
    one stream (rings):  1/B_nic = max(1/B_wire, c_s) + stage
    gRPC PS phase:       max(X/B_wire, X·c_s/(M − 1), S_big·c_1) + X·stage
                (the NIC carries all X; the (M − 1) peers' RPCs run on parallel threads, one connection per peer,
                pipelined with the wire; but one tensor
                is one RPC served on one stream, so the largest tensor S_big costs at least S_big·c_1 per phase,
                c_1 = `<s>_stream_ns_per_byte`, the published single-tensor RecvTensor rate (gRPC prior 2.5 ns/B,
                tensorflow#6116/#11261): VGG16's 411 MB fc6 costs about 1 s per phase however fast the link);
                for gRPC that stream slows as the tensor grows (time ∝ S² above ~0.27 GB), so
                c_1 → max(c_1, k·S_big), k = `grpc_stream_ns_per_byte_per_gb` (prior 9.33 ns/B per GB: TF's
                single-tensor benchmark, 569 MB/s at 128 MB down to 106 MB/s at 1 GB, tensorflow#6256;
                grpc/grpc#8975): fc6 about 1.6 s per phase)
    mpi, gloo: an all-reduce goes through host memory (the reduce_on=cpu path above) whatever reduce_on says;
               hierarchical over several nodes reduces inside each node on the GPUs first (Goyal et al. 2017 §4),
               then only the node's buffer crosses the host (phases in series):
        t = 2(G−1)/G·S / B_intra + 2·S / B_pcie_one + 2(M−1)/M·S / min(B_nic·cpu_eff, B_hmem) + (M−1)/M·S / B_red
    mpi over a NIC: the host ring's network term runs at min(B_nic·cpu_eff, B_hmem, B_host) instead, in both forms
               above (flat: V / min(...); hierarchical: 2(M−1)/M·S / min(...)), B_host per rank (not per NIC):
               MPI's ring is driven by ONE thread per rank that waits for a block, reduces it and sends it on, in
               series (Open MPI coll/base `allreduce_intra_ring`), so a rank's ring traffic is capped by that
               thread's rate whatever the link.
               transport tcp:  B_host = `mpi_host_gb_per_s`: the thread also copies every byte through the kernel's
                               sockets; a one-thread host ring over 40 GbE moved 1.07 GB/s per rank, a fifth of
                               line rate, and no more with larger buffers (pytorch/gloo#248, 2020-02-29).
               transport rdma: B_host = `mpi_host_rdma_gb_per_s`: the adapter moves the bytes, the thread still
                               waits, reduces and posts in series; osu_allreduce on host buffers, one rank per
                               node, 4 and 8 nodes of LLNL Lassen (InfiniBand; osu_latency 1.13 µs, 13.6 GB/s
                               at 4 MB): 1 MB in 573.6 / 686.6 µs, i.e. 2.74 / 2.67 GB/s of ring traffic per rank,
                               2.7 GB/s, a fifth of the point-to-point rate (converged-computing/
                               metrics-operator-experiments, OSU Micro-Benchmarks 5.8).
    t_sync_s  = c_s · g_s,  g_nccl = log2 N,  g_grpc = log2 G + (M − 1),  g_mpi = g_gloo = N − 1
                (hierarchical over mpi/gloo with reduce_on=gpu, M > 1: g = M − 1, one leader per node is a rank)
                                                                      (c_s = `<s>_sync_us`, added to t_serial)
    T_b'      = T_b + k_s · min(T_b, t_stream)   (wfbp and full: compute slowed while the stack communicates;
                                                  k_s = `<s>_compute_slowdown`; T_b' replaces T_b above)

NCCL's per-step cost grows with log2 N, not N: a per-step cost fitted on 8 GPUs does not multiply
by the thousand peers of a large cluster. full ≤ wfbp ≤ none always, since
t_stream ≤ E ≤ T_b + t_stream. Throughput = N·b / t_iter; scaling efficiency = throughput /
(N · b / (T_f + T_b + T_step)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costopt.core.arrays import select

from costopt.hardware.catalog import gpu_link_used, host_pcie_gb_per_s, intra_node_gb_per_s
from costopt.search.design_space import NO_NIC, STRATEGIES, DesignSpace
from costopt.perf.placement import ps_node_traffic
from costopt.perf.stacks import GLOO, GRPC, MPI, NCCL, per_stack, sync_growth
from costopt.perf.system import SystemParams
from costopt.core.units import gb_per_s_to_bytes_per_s, gbps_to_bytes_per_s, us_to_s
from costopt.perf.workload import TensorSet

OVERLAP_MODES = ("wfbp", "none", "full")
# TensorFlow 1.x tf_cnn_benchmarks `--variable_update` modes of a PS design (when its pull runs; module docstring)
VARIABLE_UPDATES = ("parameter_server", "distributed_replicated")
PS_REPLICATED = VARIABLE_UPDATES.index("distributed_replicated")
RING, HIER, PS = (STRATEGIES.index(s) for s in ("ring", "hierarchical", "ps"))
BOTTLENECKS = ("compute", "network", "pcie", "intra-node", "host-cpu", "ps-shard", "memory", "precision")
_COMPUTE_BOUND_FRACTION = 0.05  # exposed communication under 5% of the iteration counts as compute-bound


@dataclass
class GpuCompute:
    """Per GPU type (indexed like DesignSpace.gpus): compute times and feasibility at one batch."""

    forward_s: np.ndarray
    backward_s: np.ndarray
    step_s: np.ndarray
    memory_ok: np.ndarray  # bool
    supported: np.ndarray  # bool: the GPU runs this precision
    source: list[str]
    basis: list[str]


@dataclass
class Timing:
    t_compute_s: np.ndarray
    t_comm_s: np.ndarray
    t_exposed_comm_s: np.ndarray
    t_iter_s: np.ndarray
    throughput_samples_per_s: np.ndarray
    scaling_efficiency: np.ndarray
    busiest_nic_bytes: np.ndarray
    bottleneck: np.ndarray  # index into BOTTLENECKS
    feasible: np.ndarray  # bool
    stack: np.ndarray | None = None  # index into stacks.STACKS


def _param(params: SystemParams, name: str, n: int) -> np.ndarray:
    """A system parameter as one value per design (a parameter may be a scalar or, when resampled, an
    array with one value per design)."""
    v = getattr(params, name)
    if type(v) is float or type(v) is int:  # the common case, without broadcast_to's generic machinery
        return np.full(n, float(v))
    return np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))


@dataclass
class LinkSpecs:
    """The parts of `_link_arrays` that depend on the designs only, not on the system parameters: built once
    per space and reused when the same space is evaluated for many parameter sets (calibration)."""

    nvlink: np.ndarray  # per design: the GPU link (not PCIe) carries intra-node traffic
    intra: np.ndarray  # per design: intra-node spec rate, bytes/s
    pcie: np.ndarray  # per design: host PCIe spec rate, bytes/s
    share: np.ndarray  # per chassis: GPUs per PCIe switch
    line: np.ndarray  # per NIC (+ none): line rate, bytes/s
    rdma: np.ndarray  # per NIC (+ none)
    adapter_us: np.ndarray  # per NIC (+ none)
    ni: np.ndarray  # per design: NIC index (none -> the extra last entry)
    gpu_mem: np.ndarray  # per design: GPU memory bandwidth, bytes/s


def link_specs(space: DesignSpace) -> LinkSpecs:
    """Spec tables per (gpu, chassis) pair in use and per NIC: small loops over catalog entries."""
    n_g, n_c = len(space.gpus), len(space.chassis)
    intra = np.zeros((n_g, n_c))
    pcie = np.zeros((n_g, n_c))
    nvlink = np.zeros((n_g, n_c), dtype=bool)
    # pairs in use only: a catalog's full GPU x chassis grid is mostly unused
    pairs = np.flatnonzero(np.bincount(space.gpu_idx * n_c + space.chassis_idx, minlength=n_g * n_c))
    for gi, ci in zip((pairs // n_c).tolist(), (pairs % n_c).tolist()):
        g, c = space.gpus[gi], space.chassis[ci]
        nvlink[gi, ci] = gpu_link_used(g, c)
        intra[gi, ci] = gb_per_s_to_bytes_per_s(intra_node_gb_per_s(g, c))
        pcie[gi, ci] = gb_per_s_to_bytes_per_s(host_pcie_gb_per_s(g, c))
    g_i, c_i = space.gpu_idx, space.chassis_idx
    return LinkSpecs(
        nvlink=nvlink[g_i, c_i], intra=intra[g_i, c_i], pcie=pcie[g_i, c_i],
        share=np.array([c.gpus_per_pcie_switch for c in space.chassis], dtype=np.float64),
        line=np.array([gbps_to_bytes_per_s(n_.line_rate_gbps) for n_ in space.nics] + [np.inf]),
        rdma=np.array([n_.transport == "rdma" for n_ in space.nics] + [False]),
        adapter_us=np.array([n_.latency_us for n_ in space.nics] + [0.0]),
        ni=np.where(space.nic_idx == NO_NIC, len(space.nics), space.nic_idx),
        gpu_mem=np.array([gb_per_s_to_bytes_per_s(g.memory_bandwidth_gbs) for g in space.gpus])[g_i],
    )


def _link_arrays(space: DesignSpace, params: SystemParams, stack: np.ndarray,
                 specs: LinkSpecs | None = None) -> dict[str, np.ndarray]:
    """Per-design effective bandwidths (bytes/s) and per-message latencies (s).

    Spec tables (`link_specs`, or `specs` when the caller built them for this space) are small loops over
    catalog entries; efficiencies are applied per design afterwards, so every parameter may carry one
    value per design."""
    n = len(space)
    sp = link_specs(space) if specs is None else specs
    share, line, rdma, adapter_us, ni = sp.share, sp.line, sp.rdma, sp.adapter_us, sp.ni
    has_nic = space.nic_idx != NO_NIC
    c_i = space.chassis_idx
    G = space.gpus_per_node.astype(np.float64)
    pcie_eff = _param(params, "pcie_efficiency", n)
    intra_eff = np.where(sp.nvlink, _param(params, "nvlink_efficiency", n), pcie_eff)
    pcie_one = sp.pcie * pcie_eff
    is_rdma = rdma[ni]
    wire_eff = np.where(is_rdma, _param(params, "rdma_efficiency", n), _param(params, "tcp_efficiency", n))
    # NCCL without IB verbs (transport tcp) runs its socket transport: host threads copy each chunk through the
    # kernel's TCP stack while the previous chunk is on the wire, so the slower of the two sets the rate
    sock = np.where((stack == NCCL) & ~is_rdma & has_nic,
                    gb_per_s_to_bytes_per_s(_param(params, "nccl_socket_gb_per_s", n)), np.inf)
    # MPI's host-memory ring: one thread per rank waits, reduces and sends every block in series (Open MPI
    # coll/base ring), so the ring traffic of a rank is capped by that thread's rate whatever the link; over kernel
    # TCP it also copies every byte through the sockets, over RDMA the adapter moves the bytes (a higher ceiling)
    host_gb = np.where(is_rdma, _param(params, "mpi_host_rdma_gb_per_s", n), _param(params, "mpi_host_gb_per_s", n))
    host_cap = np.where((stack == MPI) & has_nic, gb_per_s_to_bytes_per_s(host_gb), np.inf)
    overhead_us = np.where(is_rdma, _param(params, "rdma_message_overhead_us", n),
                           _param(params, "tcp_message_overhead_us", n))
    return {
        # several adapters per node (one per rail) run in parallel: NCCL rings/trees stripe across them;
        # the stack reaches its own fraction of the transport's rate
        "B_wire": np.minimum(line[ni] * wire_eff * per_stack(params, "link_fraction", stack), sock) * space.nics_per_node,
        # host CPU time per byte an RPC stack spends serialising and copying what it sends (s/byte); no NIC: 0
        # per rank, not per NIC: one progress thread per rank moves the host ring's traffic (inf: no ceiling)
        "B_host_mpi": host_cap,
        "c_copy": np.where(has_nic, per_stack(params, "copy_ns_per_byte", stack) * 1e-9, 0.0),
        # host time per byte of ONE request stream (one tensor is one RPC), s/byte; no NIC: 0
        "c_stream": np.where(has_nic, per_stack(params, "stream_ns_per_byte", stack) * 1e-9, 0.0),
        # gRPC's one-stream cost growth with the tensor's size: s/byte per byte of tensor (ns/B per GB x 1e-18)
        "k_stream": np.where(has_nic & (stack == GRPC), _param(params, "grpc_stream_ns_per_byte_per_gb", n) * 1e-18, 0.0),
        "a_nic": np.where(has_nic, us_to_s(adapter_us[ni] + overhead_us), 0.0),
        "B_intra": sp.intra * intra_eff,
        "a_intra": us_to_s(_param(params, "intra_message_overhead_us", n)),
        "B_pcie": pcie_one / np.minimum(share[c_i], G),
        "B_pcie_one": pcie_one,
        "B_gpu_mem": sp.gpu_mem,
    }


_EMAX_CACHE: dict[int, float] = {}


def expected_max_normal(n: int) -> float:
    """E[max of n iid standard normals] by quadrature of n·x·φ(x)·Φ(x)^(n-1) (0 for n <= 1)."""
    n = int(n)
    if n <= 1:
        return 0.0
    hit = _EMAX_CACHE.get(n)
    if hit is None:
        x = np.linspace(-10.0, 10.0, 8001)
        phi = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
        cdf = np.cumsum(phi) * (x[1] - x[0])  # Φ on the grid (error < 1e-6 for this step)
        cdf = np.clip(cdf - 0.5 * phi * (x[1] - x[0]), 0.0, 1.0)
        f = n * x * phi * cdf ** (n - 1)
        hit = float(np.sum(f) * (x[1] - x[0]))
        _EMAX_CACHE[n] = hit
    return hit


_BUCKET_CACHE: dict[tuple[int, float], tuple[TensorSet, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}


def _buckets(tensors: TensorSet, bucket_bytes: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`tensors.buckets(bucket_bytes)`, cached per (tensor set, size) as `_ps_node_bytes` is."""
    key = (id(tensors), bucket_bytes)
    hit = _BUCKET_CACHE.get(key)
    if hit is not None and hit[0] is tensors:
        return hit[1]
    out = tensors.buckets(bucket_bytes)
    if len(_BUCKET_CACHE) > 1024:
        _BUCKET_CACHE.clear()
    _BUCKET_CACHE[key] = (tensors, out)
    return out


_PS_CACHE: dict[tuple[int, int, int], tuple[TensorSet, float, float, float]] = {}


def _ps_node_bytes(tensors: TensorSet, m: int, p: int) -> tuple[float, float, float]:
    """`placement.ps_node_traffic` for P shards on M nodes, cached per (tensor set, M, P): the same
    model is evaluated over many designs, calibration runs and jobs."""
    key = (id(tensors), int(m), int(p))
    hit = _PS_CACHE.get(key)
    if hit is not None and hit[0] is tensors:
        return hit[1], hit[2], hit[3]
    creation_bytes, trainable = tensors.creation_order_bytes()
    out = ps_node_traffic(creation_bytes, trainable, int(m), int(p))
    if len(_PS_CACHE) > 4096:
        _PS_CACHE.clear()
    _PS_CACHE[key] = (tensors, *out)
    return out


def _ps_lookup(tensors: TensorSet, M: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vector of PS quantities per design: one placement per distinct (M, P) pair, not per design."""
    m = np.asarray(M, dtype=np.int64)
    p = np.asarray(P, dtype=np.int64)
    if len(m) and np.array_equal(m, p):  # default layout, one shard per node: a table indexed by M
        table = np.zeros((int(m.max()) + 1, 3))
        for k in np.flatnonzero(np.bincount(m)).tolist():
            table[k] = _ps_node_bytes(tensors, k, k)
        return table[m, 0], table[m, 1], table[m, 2]
    key = m << 32 | p  # one integer per pair: a 1-D unique is far cheaper than unique(axis=0)
    uniq, inv = np.unique(key, return_inverse=True)
    vals = np.array([_ps_node_bytes(tensors, int(k >> 32), int(k & 0xFFFFFFFF)) for k in uniq]).reshape(-1, 3)
    inv = np.asarray(inv).reshape(-1)
    return vals[inv, 0], vals[inv, 1], vals[inv, 2]


def evaluate(
    space: DesignSpace,
    compute: GpuCompute,
    tensors: TensorSet,
    params: SystemParams,
    batch_per_gpu: int,
    overlap: str = "wfbp",
    num_ps: np.ndarray | None = None,
    specs: LinkSpecs | None = None,
    gpus_per_process: np.ndarray | None = None,
    variable_update: np.ndarray | None = None,
) -> Timing:
    """Iteration time, throughput and bottleneck for every design in `space`.

    `num_ps` (optional, one integer per design) is the number of PS shards for `ps` designs; 0 or
    None means the default layout, one shard per node. Shard p lives on node p mod M. `specs`: the
    space's `link_specs`, when the caller evaluates the same space many times (else built here).
    `gpus_per_process` (optional, one integer per design, 1 <= g <= G): GPUs one process drives; None
    means one process per GPU (no per-process host cost).
    `variable_update` (optional, one index into VARIABLE_UPDATES per design): when a PS design's pull runs;
    None means parameter_server for every design (tf_cnn_benchmarks' default mode).
    """
    if overlap not in OVERLAP_MODES:
        raise ValueError(f"overlap must be one of {OVERLAP_MODES}")
    n = len(space)
    G = space.gpus_per_node.astype(np.float64)
    M = space.nodes.astype(np.float64)
    N = G * M
    strat = space.strategy
    cpu = space.reduce_on == 1
    stack = np.asarray(space.stack, dtype=np.int64)
    host_stack = (stack == MPI) | (stack == GLOO)  # all-reduce through host memory whatever reduce_on says
    S = tensors.total_gradient_bytes
    S_big = tensors.largest_gradient_bytes
    L = _link_arrays(space, params, stack, specs)
    a_nic, B_intra, a_intra, B_pcie = L["a_nic"], L["B_intra"], L["a_intra"], L["B_pcie"]
    B_wire, c_copy = L["B_wire"], L["c_copy"]
    # gRPC serialises from host memory: a tensor held on a GPU is copied device -> host before it is sent and
    # host -> device when it arrives, in series with its RPC (per byte 1/B_pcie_one; 0 for variables on the CPU)
    stage = np.where((stack == GRPC) & ~cpu, 1.0 / L["B_pcie_one"], 0.0)
    # one stream (a ring neighbour): the stack's copy runs concurrently with the wire (pipelined: the slower sets the
    # rate, tensorflow#4498); the staging copy of a GPU tensor is in series with both
    with np.errstate(divide="ignore"):
        B_nic = 1.0 / (np.maximum(1.0 / B_wire, c_copy) + np.where(np.isfinite(B_wire), stage, 0.0))
    B_red = gb_per_s_to_bytes_per_s(_param(params, "host_reduce_gb_per_s", n))
    B_hmem = gb_per_s_to_bytes_per_s(_param(params, "host_memory_gb_per_s", n))
    multi = M > 1
    one = N <= 1

    T_f = compute.forward_s[space.gpu_idx]
    T_b = compute.backward_s[space.gpu_idx]
    T_step = compute.step_s[space.gpu_idx]
    t_compute = T_f + T_b + T_step

    # Component times of the overlappable stream (bandwidth part) and of the serial phases. Every
    # expression runs over the full arrays and `np.select` picks per strategy: no gathers per class.
    on_host = cpu | host_stack
    # hierarchical over a host stack (Gloo or MPI between servers): the GPUs of each server reduce and broadcast
    # among themselves on the GPUs first, and only the server's one reduced buffer goes through host memory
    # (Goyal et al. 2017, "Accurate, Large Minibatch SGD", §4: NCCL inside the server, Gloo between servers)
    host_hier = (strat == HIER) & host_stack & ~cpu & multi
    is_ring = (strat == RING) & ~on_host & ~one
    is_hier = (strat == HIER) & (~on_host | host_hier) & ~one
    is_cpu_ar = (strat != PS) & on_host & ~one & ~host_hier  # all-reduce on host CPUs (MPI without GPU awareness), flat over N
    p = (strat == PS) & ~one
    # PS designs that run as distributed_replicated (variable_update None: every PS design is parameter_server)
    replicated = p & (False if variable_update is None else np.asarray(variable_update) == PS_REPLICATED)
    with np.errstate(divide="ignore", invalid="ignore"):
        V = np.where(N > 1, 2.0 * (N - 1) / N * S, 0.0)
        V_inter = np.where(multi, 2.0 * (M - 1) / M * S, 0.0)
        cpu_rate = np.where(multi, np.minimum(np.minimum(B_nic * _param(params, "cpu_network_efficiency", n), B_hmem),
                                              L["B_host_mpi"]), B_hmem)
        t_nic = select([is_ring & multi, is_hier, is_cpu_ar],
                          [V / B_nic, V_inter / np.where(host_hier, cpu_rate, B_nic), V / cpu_rate], 0.0)
        t_host = select([is_cpu_ar, host_hier], [2.0 * S / B_pcie, 2.0 * S / L["B_pcie_one"]], 0.0)
        # hierarchical: intra reduce-scatter + all-gather (single node: the plain ring)
        t_local = select([is_ring, is_hier], [V / B_intra, np.where(multi, 2.0 * (G - 1) / G * S, V) / B_intra], 0.0)
        t_red = select([is_cpu_ar, host_hier], [(N - 1) / N * S / B_red, (M - 1) / M * S / B_red], 0.0)
        a_multi = np.where(multi, a_nic, 0.0)
        lam = select(
            [is_ring, is_hier, is_cpu_ar],
            [2.0 * (N - 1) * np.where(multi, np.maximum(a_nic, a_intra), a_intra),
             2.0 * (G - 1) * a_intra + 2.0 * (M - 1) * a_multi,
             2.0 * (N - 1) * np.where(multi, a_nic, a_intra)],
            0.0,
        )  # latency per bucket
        busiest = select([is_ring | is_cpu_ar, is_hier], [np.where(multi, V, 0.0), V_inter], 0.0)
        t_serial = np.zeros(n)
        ps_shard_pinned = np.zeros(n, dtype=bool)

        # parameter server, shards colocated on the worker nodes (one per node unless num_ps says otherwise)
        if p.any():
            Mi = space.nodes[p]
            Pi = Mi if num_ps is None else np.where(np.asarray(num_ps)[p] > 0, np.asarray(num_ps)[p], Mi)
            X, largest, remote = _ps_lookup(tensors, Mi, Pi)
            balanced = (Mi - 1) / Mi * S
            ps_shard_pinned[p] = (Mi > 1) & (X > 1.2 * balanced)
            a_ps = a_nic[p] + us_to_s(_param(params, "ps_tensor_overhead_us", n)[p])
            # gRPC PS: the NIC carries X; the stack's per-byte cost c is paid on the (M - 1) concurrent RPC
            # streams of the busiest process (one connection per peer), beside the wire. One tensor is one
            # RPC on one stream: since X >= (M - 1) L_j for the shard j holding the largest tensor,
            # X / (M - 1) >= S_max, so that tensor never costs less than S_max * c however many peers share
            # the work (tensorflow/tensorflow#6116: one RecvTensor stream at ~0.5 GB/s)
            # ... and one tensor is one RPC, served on one stream whatever else runs beside it: the largest tensor
            # costs at least S_big * c_stream per phase (c_stream = `<stack>_stream_ns_per_byte`, the published
            # single-tensor RecvTensor rates; VGG16's 411 MB fc6 about 1 s at 2.5 ns/B)
            # (2016-17 gRPC: one stream's time grows as S², so per byte at least k·S_big beside c_1)
            c_one = np.maximum(L["c_stream"][p], L["k_stream"][p] * S_big)
            rpc_copy = np.maximum(X * c_copy[p] / np.maximum(Mi - 1.0, 1.0), S_big * c_one)
            # the RPC threads serialise while the NIC sends (pipelined: the slower stage sets the phase); the
            # device <-> host staging of GPU-held tensors comes before encoding and after decoding, in series
            nic_phase = np.where(Mi > 1, np.maximum(X / B_wire[p], rpc_copy) + X * stage[p], 0.0)
            cp = cpu[p]
            Gp = G[p]
            host_copy = np.where(cp, S / B_pcie[p], np.where(Mi > 1, S / L["B_pcie_one"][p], 0.0))
            local = np.where(cp, 0.0, (Gp - 1) / Gp * S / B_intra[p])
            # distributed_replicated (module docstring): the pull rides in the backward-overlapped stream, so
            # per stage push + pull (the wire: both directions of both phases; the host: the updated value read
            # on the worker CPU and written into all G local copies)
            dr = replicated[p]
            t_nic[p] = np.where(dr, 2.0 * nic_phase, nic_phase)
            t_host[p] = np.where(dr, host_copy + S / B_pcie[p], host_copy)
            t_local[p] = local
            t_red[p] = np.where(cp, (Gp - 1) * S / B_red[p], 0.0)
            # variables on the host apply at host-memory speed, on a GPU at that GPU's memory bandwidth
            apply_rate = np.where(cp, B_hmem[p], L["B_gpu_mem"][p])
            pull = np.maximum(np.maximum(nic_phase + a_ps * remote, host_copy), local)
            # W = M workers each apply their averaged gradient to the shard as it arrives (TF PS, no
            # accumulation): the applies are a pipelined stage of the push (stream), and only the last
            # worker's apply of the largest shard is left after the push ends
            apply_all = Mi * largest * 3.0 / apply_rate
            t_red[p] = np.maximum(t_red[p], apply_all)
            t_apply = largest * 3.0 / apply_rate
            # when the pull runs depends on the TF variable_update mode (module docstring):
            # parameter_server: every variable is read from its shard at step start with no other input, so the
            # pulls run while the forward computes and only what the forward cannot hide is exposed:
            #   exposed pull = max(pull - w·T_f, 0), w = pull_overlap
            # distributed_replicated: after its apply (and a barrier), each variable is copied back into the
            # worker's GPU-local copies, one variable after another as their gradients arrive: nothing before
            # the forward (its pull is in the stream above)
            exposed_pull = np.maximum(pull - _param(params, "ps_pull_overlap", n)[p] * T_f[p], 0.0)
            exposed_pull = np.where(dr, 0.0, exposed_pull)
            t_serial[p] = exposed_pull + t_apply
            busiest[p] = 2.0 * X

    # bandwidth time of the overlappable stream: pipelined stages → the slowest stage,
    # except hierarchical (sequential phases) and CPU all-reduce (unpipelined 2017-style MPI)
    summed = t_nic + t_host + t_local + t_red
    slowest = np.maximum(np.maximum(t_nic, t_host), np.maximum(t_local, t_red))
    stream_bw = np.where(is_hier | is_cpu_ar, summed, slowest) / _param(params, "overlap_efficiency", n)

    bucket_bytes, bucket_ready, bucket_count = _buckets(tensors, float(params.bucket_mb) * 1e6)
    n_buckets = len(bucket_bytes)
    # PS pays the per-tensor request cost on the remote share of its tensors
    per_tensor = np.where(p, (a_nic + us_to_s(_param(params, "ps_tensor_overhead_us", n)))
                          * np.where(multi, (M - 1) / M, 0.0), 0.0)
    # distributed_replicated: each variable's pull request rides in the stream too
    per_tensor = np.where(replicated, 2.0 * per_tensor, per_tensor)
    t_stream = stream_bw + lam * n_buckets + per_tensor * tensors.n_trainable

    # backward compute that runs while the stack communicates is stretched (communication kernels take
    # SMs and memory bandwidth; host-staged stacks take PCIe and memory bandwidth): costopt/perf/stacks.py
    slowdown = np.where(one, 0.0, per_stack(params, "compute_slowdown", stack))
    if overlap == "none":
        t_after = T_b + t_stream
    elif overlap == "full":
        T_b = T_b + slowdown * np.minimum(T_b, t_stream)
        t_after = np.maximum(T_b, t_stream)
    else:
        T_b = T_b + slowdown * np.minimum(T_b, t_stream)
        beta = stream_bw / S
        suffix_bytes = np.cumsum(bucket_bytes[::-1])[::-1]
        suffix_tensors = np.cumsum(bucket_count[::-1])[::-1]
        end = np.zeros(n)
        term = np.empty(n)
        tmp = np.empty(n)
        for k in range(n_buckets):  # loop over buckets of one model; each step is a vector op over designs
            np.multiply(T_b, bucket_ready[k], out=term)
            np.multiply(beta, suffix_bytes[k], out=tmp)
            term += tmp
            np.multiply(lam, float(n_buckets - k), out=tmp)
            term += tmp
            np.multiply(per_tensor, suffix_tensors[k], out=tmp)
            term += tmp
            np.maximum(end, term, out=end)
        t_after = np.maximum(T_b, end)

    cv = _param(params, "straggler_cv", n)
    if (cv > 0).any():
        n_int = N.astype(np.int64)
        uniq, inv = np.unique(n_int, return_inverse=True)
        e_max = np.array([expected_max_normal(int(k)) for k in uniq])[np.asarray(inv).reshape(-1)]
        t_serial = t_serial + cv * t_compute * e_max

    a_gpu, a_worker = _param(params, "sync_us_per_gpu", n), _param(params, "sync_us_per_worker", n)
    if (a_gpu > 0).any() or (a_worker > 0).any():
        # all-reduce: every GPU is a rank of the collective; PS: one worker process per node whose G
        # GPUs are towers of that process, so the barrier runs over M workers and (G - 1) per node
        gpu_peers = np.where(strat == PS, G - 1.0, N - 1.0)
        worker_peers = np.where(strat == PS, M - 1.0, 0.0)
        t_serial = t_serial + np.where(one, 0.0, us_to_s(a_gpu) * gpu_peers + us_to_s(a_worker) * worker_peers)

    if gpus_per_process is not None:
        # one process schedules the operators of all its g GPUs each step: (g - 1) x h more host time per step
        extra_gpus = np.asarray(gpus_per_process, dtype=np.float64) - 1.0
        if (extra_gpus > 0).any():
            t_serial = t_serial + us_to_s(_param(params, "process_step_us_per_gpu", n)) * extra_gpus

    # per-step synchronisation of the stack: c_s x g_s (log2 N for NCCL's trees, per worker for gRPC,
    # per rank for MPI and Gloo; costopt/perf/stacks.py)
    t_serial = t_serial + us_to_s(per_stack(params, "sync_us", stack)) * sync_growth(stack, G, M, host_hier)

    t_iter = T_f + t_after + T_step + t_serial
    t_comm = t_stream + t_serial
    exposed = t_iter - t_compute
    throughput = N * batch_per_gpu / t_iter
    single = batch_per_gpu / t_compute
    efficiency = throughput / (N * single)

    # bottleneck: the largest communication component (first wins ties), unless exposed communication is small
    which = np.zeros(n, dtype=np.int64)
    best = t_nic.copy()
    for k, comp in ((1, t_host), (2, t_local), (3, t_red)):
        bigger = comp > best
        which[bigger] = k
        np.maximum(best, comp, out=best)
    label_of = np.array([BOTTLENECKS.index(x) for x in ("network", "pcie", "intra-node", "host-cpu")])
    bottleneck = label_of[which]
    intra_over_pcie = (which == 2) & (B_intra <= L["B_pcie_one"] * 1.0001)
    bottleneck[intra_over_pcie] = BOTTLENECKS.index("pcie")
    bottleneck[p & (t_serial > 0) & (which == 0) & ps_shard_pinned] = BOTTLENECKS.index("ps-shard")
    bottleneck[p & (which == 3) & ~cpu] = BOTTLENECKS.index("ps-shard")  # W applies on a GPU-held shard
    bottleneck[exposed <= _COMPUTE_BOUND_FRACTION * t_iter] = BOTTLENECKS.index("compute")
    mem_ok = compute.memory_ok[space.gpu_idx]
    supported = compute.supported[space.gpu_idx]
    bottleneck[~mem_ok] = BOTTLENECKS.index("memory")
    bottleneck[~supported] = BOTTLENECKS.index("precision")

    return Timing(
        t_compute_s=t_compute,
        t_comm_s=t_comm,
        t_exposed_comm_s=exposed,
        t_iter_s=t_iter,
        throughput_samples_per_s=throughput,
        scaling_efficiency=efficiency,
        busiest_nic_bytes=busiest,
        bottleneck=bottleneck,
        feasible=mem_ok & supported,
        stack=stack,
    )
