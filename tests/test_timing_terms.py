"""Timing model terms one at a time, on a made-up model whose every number is worked out by hand.

The model has four trainable tensors (backward order: 1, 2, 3, 4 million fp32 parameters, i.e. 4, 8,
12, 16 MB of gradient, ready at 25/50/75/100% of the backward pass) and fixed compute times
(forward 0.1 s, backward 0.2 s, optimizer step 0.01 s), so nothing here depends on the zoo or on
compute scaling. System parameters are set explicitly (communication stacks at full link rate, with
no per-step cost or compute slowdown), so only the formulas of costopt/perf/timing.py's docstring are under test. Links (tests/fixtures/mini.toml):
  eth10: 10 Gb/s x 0.5 (TCP efficiency set here) = 0.625e9 B/s; α_nic = 10 µs adapter + 30 µs stack = 40 µs
  halfcard in a 1-slot PCIe Gen4 box: 31 GB/s x PCIe efficiency (set per test); GPU memory 2400 GB/s
"""

from pathlib import Path

import numpy as np
import pytest

from costopt.hardware.catalog import load_catalog
from costopt.search.design_space import single_design
from costopt.perf.system import default_system
from costopt.perf.timing import VARIABLE_UPDATES, GpuCompute, evaluate
from costopt.perf.workload import TensorSet

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
T_F, T_B, T_STEP = 0.1, 0.2, 0.01
COMPUTE = T_F + T_B + T_STEP
S = 40e6  # gradient bytes: (1 + 2 + 3 + 4) million parameters x 4 bytes
B_NIC = 10e9 / 8 * 0.5
A_NIC = 40e-6
HALFCARD_MEM = 2400e9  # memory_bandwidth_gbs of the halfcard in mini.toml


def four_tensors() -> TensorSet:
    return TensorSet(name="four", source="made up for hand calculation", names=("d", "c", "b", "a"),
                     numel=np.array([1_000_000, 2_000_000, 3_000_000, 4_000_000], dtype=np.int64),
                     ready_fraction=np.array([0.25, 0.5, 0.75, 1.0]), trainable=np.ones(4, dtype=bool))


def params(**kw):
    base = dict(tcp_efficiency=0.5, tcp_message_overhead_us=30.0, pcie_efficiency=0.5, intra_message_overhead_us=5.0,
                host_reduce_gb_per_s=8.0, host_memory_gb_per_s=40.0, cpu_network_efficiency=0.5,
                ps_pull_overlap=0.0, ps_tensor_overhead_us=60.0, bucket_mb=1e9, overlap_efficiency=1.0,
                straggler_cv=0.0, sync_us_per_gpu=0.0, sync_us_per_worker=0.0)
    for stack in ("nccl", "mpi", "grpc", "gloo"):  # stacks at full link rate, no per-step cost, no slowdown
        base.update({f"{stack}_link_fraction": 1.0, f"{stack}_sync_us": 0.0, f"{stack}_compute_slowdown": 0.0,
                     f"{stack}_copy_ns_per_byte": 0.0, f"{stack}_stream_ns_per_byte": 0.0})
    base.update(kw)
    return default_system().with_updates(**base)


def t_iter(strategy, reduce_on="gpu", overlap="none", nodes=2, gpus_per_node=1, gpu="halfcard",
           gpus_per_process=None, variable_update=None, **kw) -> float:
    cat = load_catalog(MINI)
    space = single_design(cat, gpu, gpus_per_node, nodes, "eth10", strategy, reduce_on)
    n = len(space.gpus)
    compute = GpuCompute(forward_s=np.full(n, T_F), backward_s=np.full(n, T_B), step_s=np.full(n, T_STEP),
                         memory_ok=np.ones(n, bool), supported=np.ones(n, bool), source=["measured"] * n,
                         basis=[""] * n)
    per_process = None if gpus_per_process is None else np.array([gpus_per_process], dtype=np.int64)
    mode = None if variable_update is None else np.array([VARIABLE_UPDATES.index(variable_update)], dtype=np.int64)
    t = evaluate(space, compute, four_tensors(), params(**kw), batch_per_gpu=32, overlap=overlap,
                 gpus_per_process=per_process, variable_update=mode)
    return float(t.t_iter_s[0])


# PS on 2 nodes, one shard per node. Greedy placement in creation order (16, 12, 8, 4 MB): 16 -> shard 0,
# 12 -> shard 1, 8 -> shard 1 (12 < 16), 4 -> shard 0: 20 MB each. Busiest NIC per phase
# X = max((M-1)·L, S-L) = 20 MB; largest shard 20 MB; a worker's remote tensors: 4 - 2 = 2.
X = 20e6
LARGEST = 20e6
REMOTE = 2
A_PS = A_NIC + 60e-6  # adapter + stack + per-tensor request cost
PER_TENSOR = A_PS * (2 - 1) / 2  # paid on the remote share (M-1)/M of each of the 4 tensors


def test_ps_with_gpu_variables_pull_push_requests_and_apply():
    # variables on the GPUs: gRPC copies each tensor device -> host before sending it (and back on arrival),
    # in series with the wire: X over PCIe at 31e9 x 0.5 B/s = 0.00129 s more per phase
    nic = X / B_NIC + X / (31e9 * 0.5)  # 0.032 + 0.00129 s per phase
    pull = nic + A_PS * REMOTE  # request latency of the remote tensors
    apply_last = LARGEST * 3 / HALFCARD_MEM  # read var, read grad, write var at GPU memory speed
    stream = nic + PER_TENSOR * 4  # slowest pipelined stage (the NIC), plus the per-tensor cost
    expect = COMPUTE + stream + pull + apply_last
    assert t_iter("ps") == pytest.approx(expect, rel=1e-9)
    assert expect == pytest.approx(0.31 + 2 * (0.0322 + 20e6 / 15.5e9) + 0.000025, rel=1e-12)


def test_parameter_server_pull_hides_under_the_forward_up_to_w():
    # gpu variables, 2 nodes: pull = X/B_NIC + X/(31e9 x 0.5) + A_PS x 2 remote = 0.032 + 0.00129032 + 0.0002
    # = 0.03349032 s. w = 0.2: 0.02 s of it hides under the 0.1 s forward, 0.01349032 s is exposed;
    # w = 0.87: 0.087 s > the pull, nothing exposed. Stream (push) 0.03329032 + 4 x 50 us; last apply 25 us
    serial = 0.31 + 0.03329032258 + 0.0002 + 0.000025
    assert t_iter("ps", ps_pull_overlap=0.2) == pytest.approx(serial + 0.01349032258, rel=1e-9)
    assert t_iter("ps", ps_pull_overlap=0.87) == pytest.approx(serial, rel=1e-9)
    assert t_iter("ps", ps_pull_overlap=0.2, variable_update="parameter_server") == t_iter("ps", ps_pull_overlap=0.2)


def test_distributed_replicated_pull_rides_in_the_backward_stream():
    # distributed_replicated, gpu variables, 2 nodes x 1 GPU, one bucket per tensor (bucket_mb 1), wfbp: each
    # variable is pushed, applied and pulled back as its gradient is ready, so the stream carries both phases:
    # NIC 2 x 0.03329032 = 0.06658065 s (beta = 1.66451613e-9 s/B); host S/B_pcie_one + S/B_pcie = 2 x 0.00258 s
    # (slower than the NIC: hidden); per-tensor cost 2 x 50 us. Buckets (4, 8, 12, 16 MB at 0.25..1 of T_b):
    # costs 0.00675806, 0.01341613, 0.02007419, 0.02673226 s; ends r_k x 0.2 + suffix: 0.11798065, 0.16022258,
    # 0.19680645, 0.22673226 -> E = 0.22673226. No pull before the forward; the last apply (25 us) stays serial.
    dr = t_iter("ps", overlap="wfbp", bucket_mb=1.0, variable_update="distributed_replicated")
    assert dr == pytest.approx(0.1 + 0.22673226 + 0.01 + 0.000025, abs=1e-8)
    # parameter_server on the same design with w = 0: stream 0.03329032 with 50 us per tensor ends at
    # 0.2 + 0.01336613; then the whole 0.03349032 s pull before the forward
    ps = t_iter("ps", overlap="wfbp", bucket_mb=1.0, variable_update="parameter_server")
    assert ps == pytest.approx(0.1 + 0.21336613 + 0.01 + 0.03349032 + 0.000025, abs=1e-8)
    # no overlap at all: both modes move the same bytes and requests in series (DR: 2 x 0.03329032 + 8 x 50 us
    # in the stream; PS: the same split between the push stream and the serial pull)
    assert t_iter("ps", variable_update="distributed_replicated") == pytest.approx(t_iter("ps"), rel=1e-12)


def test_grpc_copy_cost_per_byte_on_the_peers_streams():
    # the copy runs beside the wire (pipelined): on 2 nodes (one peer, one stream) a phase takes max(X/B_NIC, X·c).
    # c = 2.5 ns/byte: X·c = 0.05 s > X/B_NIC = 0.032 s, so push and pull each grow by 0.018 s;
    # c = 1 ns/byte: X·c = 0.02 s < 0.032 s, hidden under the wire: nothing changes
    base = t_iter("ps", reduce_on="cpu")
    more = t_iter("ps", reduce_on="cpu", grpc_copy_ns_per_byte=2.5)
    assert more - base == pytest.approx(2 * (X * 2.5e-9 - X / B_NIC), rel=1e-9)
    assert X * 2.5e-9 - X / B_NIC == pytest.approx(0.018, rel=1e-12)
    assert t_iter("ps", reduce_on="cpu", grpc_copy_ns_per_byte=1.0) == pytest.approx(base, rel=1e-12)


def test_grpc_single_stream_floor_of_the_largest_tensor():
    # one tensor is one RPC stream: at c_1 = 5 ns/byte the 16 MB tensor costs 0.08 s per phase, more than the
    # per-peer cost X·c/(M - 1) = 20 MB x 2.5 ns = 0.05 s and the wire's 0.032 s, so each phase takes 0.08 s
    base = t_iter("ps", reduce_on="cpu")
    peers = t_iter("ps", reduce_on="cpu", grpc_copy_ns_per_byte=2.5)
    floor = t_iter("ps", reduce_on="cpu", grpc_copy_ns_per_byte=2.5, grpc_stream_ns_per_byte=5.0)
    assert peers - base == pytest.approx(2 * (0.05 - X / B_NIC), rel=1e-9)
    assert floor - base == pytest.approx(2 * (16e6 * 5e-9 - X / B_NIC), rel=1e-9)


def test_ps_host_copies_bound_the_pull_when_pcie_is_slow():
    # variables on the host (reduce_on=cpu): each GPU copies S each way over PCIe, here 31e9 x 0.01 B/s
    b_pcie = 31e9 * 0.01
    host_copy = S / b_pcie  # 0.129 s > the NIC's 0.0322 s
    apply_all = 2 * LARGEST * 3 / 40e9  # M workers' applies at host memory speed: 0.003 s
    apply_last = LARGEST * 3 / 40e9
    stream = max(X / B_NIC, host_copy, apply_all) + PER_TENSOR * 4
    expect = COMPUTE + stream + host_copy + apply_last
    assert t_iter("ps", reduce_on="cpu", pcie_efficiency=0.01) == pytest.approx(expect, rel=1e-9)


def test_ps_applies_of_every_worker_are_a_stage_of_the_push():
    # slow host memory (1 GB/s): the 2 workers' applies of the 20 MB shard take 2 x 0.06 s, longer than the push
    apply_all = 2 * LARGEST * 3 / 1e9
    apply_last = LARGEST * 3 / 1e9
    host_copy = S / (31e9 * 0.5)
    pull = max(X / B_NIC + A_PS * REMOTE, host_copy)
    stream = max(X / B_NIC, host_copy, apply_all) + PER_TENSOR * 4
    assert stream == pytest.approx(0.12 + 0.0002)
    expect = COMPUTE + stream + pull + apply_last
    assert t_iter("ps", reduce_on="cpu", host_memory_gb_per_s=1.0) == pytest.approx(expect, rel=1e-9)


def test_cpu_allreduce_copies_through_the_host_and_reduces_there():
    # ring on host CPUs, N = 2: V = 2(N-1)/N·S = S over min(B_nic x 0.5, host memory) = 0.3125e9 B/s;
    # host copies 2·S over PCIe (31e9 x 0.5); reduction (N-1)/N·S at 8 GB/s; stages in series (unpipelined MPI);
    # latency 2(N-1)·α_nic for the one bucket
    t_net = S / (B_NIC * 0.5)
    t_host = 2 * S / (31e9 * 0.5)
    t_red = 0.5 * S / 8e9
    expect = COMPUTE + t_net + t_host + t_red + 2 * A_NIC
    assert t_iter("ring", reduce_on="cpu") == pytest.approx(expect, rel=1e-9)


def test_wfbp_overlap_with_four_buckets():
    # ring on 2 GPUs over eth10, 1 MB buckets: each tensor is its own bucket (4, 8, 12, 16 MB, ready at
    # 0.25, 0.5, 0.75, 1.0 of T_b). β = 1/B_nic; λ = 2(N-1)·max(α_nic, α_intra) = 80 µs per bucket.
    # E = max_k (r_k·T_b + β·Σ_{j>=k} s_j + λ·(buckets left)):
    #   k=0: 0.05 + 0.064 + 4λ;  k=1: 0.1 + 0.0576 + 3λ;  k=2: 0.15 + 0.0448 + 2λ;  k=3: 0.2 + 0.0256 + λ
    lam = 2 * A_NIC
    ends = [0.25 * T_B + 40e6 / B_NIC + 4 * lam, 0.5 * T_B + 36e6 / B_NIC + 3 * lam,
            0.75 * T_B + 28e6 / B_NIC + 2 * lam, 1.0 * T_B + 16e6 / B_NIC + lam]
    E = max(ends)
    assert E == pytest.approx(0.22568, rel=1e-12)
    assert t_iter("ring", overlap="wfbp", bucket_mb=1.0) == pytest.approx(T_F + max(T_B, E) + T_STEP, rel=1e-9)
    # one bucket (no overlap possible before the last gradient): the whole stream after the backward pass
    assert t_iter("ring", overlap="wfbp") == pytest.approx(T_F + T_B + S / B_NIC + lam + T_STEP, rel=1e-9)


def test_wfbp_overlap_with_four_buckets_ps():
    # PS: β = (X / B_nic) / S; each bucket also pays the per-tensor cost of the tensors still to send;
    # the pull and the last apply follow (serial)
    # (GPU variables: the NIC phase includes staging X over PCIe at 31e9 x 0.5 B/s, in series)
    nic = X / B_NIC + X / (31e9 * 0.5)
    beta = nic / S
    ends = [0.25 * T_B + beta * 40e6 + PER_TENSOR * 4, 0.5 * T_B + beta * 36e6 + PER_TENSOR * 3,
            0.75 * T_B + beta * 28e6 + PER_TENSOR * 2, 1.0 * T_B + beta * 16e6 + PER_TENSOR * 1]
    E = max(ends)
    assert E == pytest.approx(0.2 + 0.4 * (0.032 + 20e6 / 15.5e9) + 0.00005, rel=1e-12)
    serial = nic + A_PS * REMOTE + LARGEST * 3 / HALFCARD_MEM
    assert t_iter("ps", overlap="wfbp", bucket_mb=1.0) == pytest.approx(T_F + max(T_B, E) + T_STEP + serial, rel=1e-9)


def test_ps_cpu_variables_local_reduce_of_the_node_gpus():
    # 2 nodes x 4 halfcards (4-slot PCIe Gen4 box, one GPU per PCIe switch), variables on the host: the CPU
    # sums the 4 local gradients, (G-1)·S at 2 GB/s = 0.06 s, the slowest stage of the push
    t_red = 3 * S / 2e9
    host_copy = S / (31e9 * 0.5)
    pull = max(X / B_NIC + A_PS * REMOTE, host_copy)
    stream = max(X / B_NIC, host_copy, t_red, 2 * LARGEST * 3 / 40e9) + PER_TENSOR * 4
    assert stream == pytest.approx(0.06 + 0.0002)
    expect = COMPUTE + stream + pull + LARGEST * 3 / 40e9
    assert t_iter("ps", reduce_on="cpu", gpus_per_node=4, host_reduce_gb_per_s=2.0) == pytest.approx(expect, rel=1e-9)


def test_one_process_driving_the_node_gpus_adds_its_host_steps():
    # the 2 x 4 halfcard PS case above, with ONE process per node driving its 4 GPUs and h = 2.5 ms per extra
    # GPU: t_proc = (g - 1)·h = 3 x 2.5 ms = 7.5 ms, a serial term on top of the same iteration
    t_red = 3 * S / 2e9
    host_copy = S / (31e9 * 0.5)
    pull = max(X / B_NIC + A_PS * REMOTE, host_copy)
    stream = max(X / B_NIC, host_copy, t_red, 2 * LARGEST * 3 / 40e9) + PER_TENSOR * 4
    expect = COMPUTE + stream + pull + LARGEST * 3 / 40e9 + (4 - 1) * 2.5e-3
    got = t_iter("ps", reduce_on="cpu", gpus_per_node=4, host_reduce_gb_per_s=2.0, gpus_per_process=4,
                 process_step_us_per_gpu=2500.0)
    assert got == pytest.approx(expect, rel=1e-9)
    # two GPUs per process (two processes per node): (2 - 1) x 2.5 ms
    two = t_iter("ps", reduce_on="cpu", gpus_per_node=4, host_reduce_gb_per_s=2.0, gpus_per_process=2,
                 process_step_us_per_gpu=2500.0)
    assert two == pytest.approx(expect - 2 * 2.5e-3, rel=1e-9)


def test_one_gpu_per_process_or_none_given_charges_no_host_steps():
    # g = 1 (one process per GPU, every design costopt enumerates) and no array at all give the same time,
    # whatever the per-GPU cost is
    base = t_iter("ring", gpus_per_node=4, process_step_us_per_gpu=0.0)
    assert t_iter("ring", gpus_per_node=4, process_step_us_per_gpu=9000.0) == base
    assert t_iter("ring", gpus_per_node=4, gpus_per_process=1, process_step_us_per_gpu=9000.0) == base


def test_full_overlap_hides_the_stream_up_to_the_backward_pass():
    # full: t_iter = T_f + max(T_b, t_stream) + T_step; ring on 2 GPUs, one bucket: t_stream = S/B_nic + 2·α_nic
    stream = S / B_NIC + 2 * A_NIC  # 0.06408 s < T_b
    assert t_iter("ring", overlap="full") == pytest.approx(T_F + T_B + T_STEP, rel=1e-12)
    slow = S / (10e9 / 8 * 0.1) + 2 * A_NIC  # TCP efficiency 0.1: 0.32008 s > T_b
    assert t_iter("ring", overlap="full", tcp_efficiency=0.1) == pytest.approx(T_F + slow + T_STEP, rel=1e-9)
    assert t_iter("ring", overlap="none") == pytest.approx(COMPUTE + stream, rel=1e-9)


def test_gpus_behind_one_pcie_switch_share_its_bandwidth():
    # 2 nodes x 8 H200 on the sxm8 board (2 GPUs per PCIe switch, Gen5 63 GB/s x 0.01 set here): each GPU's
    # host copy of S runs at 63e9 x 0.01 / 2 B/s = 0.127 s, the slowest stage and the longest part of the pull
    host_copy = S / (63e9 * 0.01 / 2)
    t_red = 7 * S / 8e9  # the CPU sums the node's 8 gradients: 0.035 s
    stream = max(X / B_NIC, host_copy, t_red, 2 * LARGEST * 3 / 40e9) + PER_TENSOR * 4
    pull = max(X / B_NIC + A_PS * REMOTE, host_copy)
    expect = COMPUTE + stream + pull + LARGEST * 3 / 40e9
    got = t_iter("ps", reduce_on="cpu", gpus_per_node=8, gpu="h200-sxm", pcie_efficiency=0.01)
    assert got == pytest.approx(expect, rel=1e-9)


def test_pull_overlap_prior_formula_by_hand():
    """tools/ps_pull_overlap_prior.py: two tensors, 1 and 3 bytes, ready at 0.5 and 1.0 of the backward, so the
    forward reaches them at 0.5 and 0 of T_f. Pull = 2 x T_f (rho 2).
    Processor sharing: the 1-byte tensor is done when both moved 1 byte, 2/4 of the pull; the 3-byte one at 4/4.
    Exposed = max(2 x 0.5 - 0.5, 2 x 1 - 0) = 2 -> w = 2 - 2 = 0 (the tensor the forward needs first ends last).
    In forward order: the 3-byte tensor first (done at 3/4), then the 1-byte one (4/4):
    exposed = max(2 x 0.75 - 0, 2 x 1 - 0.5) = 1.5 -> w = 0.5."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from ps_pull_overlap_prior import overlap_at

    sizes, ready = np.array([1.0, 3.0]), np.array([0.5, 1.0])
    assert overlap_at(sizes, ready, 2.0) == pytest.approx(0.0, abs=1e-12)
    assert overlap_at(sizes, ready, 2.0, in_order=True) == pytest.approx(0.5, rel=1e-12)
    # rho 0.4 in forward order: the first layer still waits for its tensor, 0.4 x 0.75 = 0.3 of T_f
    # (the second is ready at 0.4 < 0.5): exposed 0.3 -> w = 0.1
    assert overlap_at(sizes, ready, 0.4, in_order=True) == pytest.approx(0.1, rel=1e-9)
