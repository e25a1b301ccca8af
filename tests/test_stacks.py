"""Communication stacks: per-stack formulas by hand on small cases, the default inference, the CSV
column and the `--stack` option."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import costopt
from costopt.cli import app
from costopt.perf.stacks import infer_stack, sync_growth
from costopt.perf.system import default_system
from costopt.measure.validate import COLUMNS, read_measurements, validate

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
runner = CliRunner()

# every stack term off, so one term at a time can be switched on and checked by hand
QUIET = dict(bucket_mb=1e9, straggler_cv=0.0, overlap_efficiency=1.0, sync_us_per_gpu=0.0, sync_us_per_worker=0.0,
             **{f"{s}_{k}": 0.0 for s in ("nccl", "mpi", "grpc", "gloo") for k in ("sync_us", "compute_slowdown", "copy_ns_per_byte", "stream_ns_per_byte")},
             **{f"{s}_link_fraction": 1.0 for s in ("nccl", "mpi", "grpc", "gloo")}, grpc_stream_ns_per_byte_per_gb=0.0)


def _p(**kw):
    return default_system().with_updates(**{**QUIET, **kw})


def _pred(system, **kw):
    args = dict(model="inception_v3", gpu="halfcard", gpus_per_node=4, nodes=2, nic="eth10", strategy="ring",
                catalog=MINI, batch_per_gpu=64, overlap="none")
    args.update(kw)
    return costopt.predict(args.pop("model"), args.pop("gpu"), args.pop("gpus_per_node"), args.pop("nodes"),
                           args.pop("nic"), args.pop("strategy"), system=system, **args)


@pytest.mark.parametrize("stack,g,m,strategy,growth", [
    ("nccl", 4, 2, "ring", 3.0),            # log2(8)
    ("nccl", 4, 4, "hierarchical", 4.0),    # log2(16)
    ("grpc", 4, 3, "ps", 2.0 + 2.0),        # log2(4) + (3 - 1) workers
    ("grpc", 1, 4, "ps", 0.0 + 3.0),        # log2(1) + 3 workers
    ("mpi", 4, 2, "ring", 7.0),             # N - 1
    ("gloo", 1, 4, "ring", 3.0),            # N - 1
    ("gloo", 4, 3, "hierarchical", 2.0),    # M - 1: only one leader per node is a rank of the host collective
    ("mpi", 4, 2, "hierarchical", 1.0),     # M - 1
])
def test_sync_cost_per_stack_by_hand(stack, g, m, strategy, growth):
    base = _pred(_p(), gpus_per_node=g, nodes=m, strategy=strategy, stack=stack)
    more = _pred(_p(**{f"{stack}_sync_us": 1000.0}), gpus_per_node=g, nodes=m, strategy=strategy, stack=stack)
    assert more["t_iter_s"] - base["t_iter_s"] == pytest.approx(growth * 1e-3, rel=1e-6, abs=1e-12)
    assert base["stack"] == stack


def test_sync_growth_single_gpu_is_zero():
    for s in range(4):
        assert sync_growth(np.array([s]), np.array([1.0]), np.array([1.0]))[0] == 0.0


def test_nccl_per_step_cost_does_not_grow_linearly_with_peers():
    """A 1.5 ms per-step NCCL cost (the size calibration used to give one GPU) at 152 nodes x 8 GPUs costs
    1.5 ms x log2(1216) = 15.4 ms, not 1.5 ms x 1215 = 1.8 s."""
    g = sync_growth(np.array([0]), np.array([8.0]), np.array([152.0]))[0]
    assert g == pytest.approx(math.log2(1216))
    assert 1.5e-3 * g < 0.02


def test_large_nccl_hierarchical_resnet50_keeps_high_scaling_with_the_defaults():
    """Published large NCCL runs keep ResNet-50 well above 50% scaling efficiency at ~1,000 GPUs (e.g.
    Mikami et al. 2018, 2,176 V100 with NCCL); with the shipped defaults 152 x 8 H100 over NDR must too."""
    d = costopt.predict("resnet50", "h100-sxm", 8, 152, "ib-ndr", "hierarchical", nics_per_node=8)
    assert d["stack"] == "nccl"
    assert d["scaling_efficiency"] > 0.5


def test_link_fraction_scales_the_nic_time_by_hand():
    # flat ring over 10 GbE: the NIC is the slowest link; grpc at fraction 0.5 doubles the bandwidth term
    a = _pred(_p(), stack="grpc")
    b = _pred(_p(grpc_link_fraction=0.5), stack="grpc")
    V = 2 * 7 / 8 * 27_161_264 * 4
    b_nic = 10e9 / 8 * default_system().tcp_efficiency
    assert b["t_comm_s"] - a["t_comm_s"] == pytest.approx(V / (0.5 * b_nic) - V / b_nic, rel=1e-6)


def test_mpi_and_gloo_take_the_host_memory_path():
    """mpi/gloo all-reduce goes through host memory whatever reduce_on says: the same time as reduce_on=cpu."""
    p = _p()
    host = _pred(p, reduce_on="cpu", stack="mpi")
    for stack in ("mpi", "gloo"):
        d = _pred(p, reduce_on="gpu", stack=stack)
        assert d["t_comm_s"] == pytest.approx(host["t_comm_s"], rel=1e-9)
    assert _pred(p, stack="nccl")["t_comm_s"] < host["t_comm_s"]


def test_compute_slowdown_by_hand_overlap_full():
    """overlap full, one node: t_iter = T_f + max(T_b', t_stream) + T_step, T_b' = T_b + k min(T_b, t_stream)."""
    kw = dict(gpus_per_node=4, nodes=1, nic=None, overlap="full")
    base = _pred(_p(), **kw)
    slow = _pred(_p(nccl_compute_slowdown=0.2), **kw)
    t_stream = base["t_comm_s"]
    t_b = base["t_iter_s"] - base["t_compute_s"]  # unknown split: recover T_b from the zoo instead
    from costopt.hardware.catalog import load_catalog
    from costopt.perf.workload import load_workload
    cat = load_catalog(MINI)
    est = load_workload("inception_v3").compute(cat.gpus["halfcard"], "fp32", 64, cat)
    t_b = est.backward_s
    assert t_stream < t_b  # communication hidden: the slowdown is what shows
    expect = est.forward_s + max(t_b + 0.2 * min(t_b, t_stream), t_stream) + est.step_s
    assert slow["t_iter_s"] == pytest.approx(expect, rel=1e-6)
    none = _pred(_p(nccl_compute_slowdown=0.2), **{**kw, "overlap": "none"})
    assert none["t_iter_s"] == pytest.approx(est.forward_s + t_b + t_stream + est.step_s, rel=1e-6)


def test_default_stack_inference():
    # strategy codes: ring 0, hierarchical 1, ps 2; reduce_on: gpu 0, cpu 1 -> nccl 0, mpi 1, grpc 2
    got = infer_stack(np.array([0, 1, 2, 0, 2]), np.array([0, 0, 0, 1, 1]))
    assert got.tolist() == [0, 0, 2, 1, 2]
    assert _pred(default_system(), strategy="ps")["stack"] == "grpc"
    assert _pred(default_system(), reduce_on="cpu")["stack"] == "mpi"
    assert _pred(default_system())["stack"] == "nccl"


def _csv(tmp_path, line, extra_header=""):
    p = tmp_path / "m.csv"
    p.write_text(",".join(COLUMNS) + extra_header + "\n" + line + "\n")
    return p


def test_csv_stack_column_given_and_inferred(tmp_path):
    row = "T,inception_v3,p100-pcie,1,4,64,fp32,ring,10,tcp,,gpu,200,300"
    p = _csv(tmp_path, row + ",mpi\n" + row + ",\n" + row.replace(",ring,", ",ps,") + ",", ",stack")
    _, rows, _ = read_measurements(p)
    assert [(r.stack, r.stack_basis) for r in rows] == [("mpi", "column"), ("nccl", "inferred"), ("grpc", "inferred")]
    res = validate(p)
    assert res.frame["stack"].tolist() == ["mpi", "nccl", "grpc"]
    assert res.frame["predicted_samples_per_s"].iloc[0] < res.frame["predicted_samples_per_s"].iloc[1]
    # --stack predicts every row as that stack
    forced = validate(p, stack="gloo").frame
    assert set(forced["stack"]) == {"gloo"}


def test_csv_unknown_stack_names_the_column(tmp_path):
    p = _csv(tmp_path, "T,inception_v3,p100-pcie,1,4,64,fp32,ring,10,tcp,,gpu,200,300,ucx", ",stack")
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 2
    assert "column 'stack'" in r.output and "ucx" in r.output and "Traceback" not in r.output


def test_cli_stack_option_and_bad_value():
    r = runner.invoke(app, ["predict", "--model", "resnet50", "--gpu", "halfcard", "--gpus-per-node", "4", "--nodes",
                            "2", "--nic", "eth10", "--strategy", "ring", "--catalog", str(MINI), "--stack", "gloo",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["stack"] == "gloo"
    r = runner.invoke(app, ["predict", "--model", "resnet50", "--gpu", "halfcard", "--gpus-per-node", "4", "--nodes",
                            "2", "--nic", "eth10", "--strategy", "ring", "--catalog", str(MINI), "--stack", "ucx"])
    assert r.exit_code == 2 and "unknown stack 'ucx'" in r.output


def test_shipped_dataset_names_a_stack_on_every_row():
    _, rows, _ = read_measurements("published")
    assert all(r.stack_basis == "column" for r in rows)
    # tf_cnn_benchmarks `replicated (with NCCL)` rows are nccl, parameter servers grpc (published_throughput_sources.md)
    assert {r.stack for r in rows if r.strategy == "ps"} == {"grpc"}


def _tcp_equivalent(e: float, line_bytes_per_s: float, extra_s_per_byte: float) -> float:
    """The TCP efficiency e' whose wire alone costs what the wire plus `extra_s_per_byte` costs:
    1/(line·e') = 1/(line·e) + extra  ->  e' = e / (1 + extra·line·e)."""
    return e / (1.0 + extra_s_per_byte * line_bytes_per_s * e)


@pytest.mark.parametrize("strategy,reduce_on,nodes,streams,slower", [
    ("ring", "gpu", 2, 1, True),   # a ring neighbour is one stream: 0.5 GB/s of copying < 0.875 GB/s of wire
    ("ps", "cpu", 2, 1, True),     # PS on 2 nodes: one peer, one stream
    ("ps", "cpu", 3, 2, False),    # 3 nodes: 2 peers' streams, 2 x 0.5 = 1.0 GB/s > 0.875 GB/s: the wire is slower
    ("ps", "cpu", 4, 3, False),    # 4 nodes: 3 peers' threads, 1.5 GB/s: the copy hides under the wire
])
def test_grpc_copy_cost_is_a_pipelined_stage_by_hand(strategy, reduce_on, nodes, streams, slower):
    """The stack's copy runs beside the wire (pipelined, tensorflow#4498: the same 162 MB/s with and without a
    wire): a per-byte cost c on `streams` parallel streams costs exactly what a wire at min(line x e,
    streams / c) costs. 10 GbE = 1.25e9 B/s at e = 0.7: 0.875e9 B/s; c = 2 ns/byte: 0.5e9 B/s per stream."""
    line = 10e9 / 8
    e = 0.7
    c = 2e-9
    e_equivalent = min(e, streams / c / line)  # 0.4 for one stream, 0.7 (the wire itself) for 2 or 3
    assert e_equivalent == pytest.approx(0.4 if streams == 1 else 0.7, rel=1e-12)
    kw = dict(strategy=strategy, reduce_on=reduce_on, nodes=nodes, stack="grpc", chassis="pcie4x4")
    with_copy = _pred(_p(tcp_efficiency=e, grpc_copy_ns_per_byte=2.0), **kw)
    equivalent_wire = _pred(_p(tcp_efficiency=e_equivalent, grpc_copy_ns_per_byte=0.0), **kw)
    no_copy = _pred(_p(tcp_efficiency=e, grpc_copy_ns_per_byte=0.0), **kw)
    assert with_copy["t_iter_s"] == pytest.approx(equivalent_wire["t_iter_s"], rel=1e-9)
    assert (with_copy["t_iter_s"] > no_copy["t_iter_s"]) == slower


def test_grpc_copy_cost_does_not_scale_with_the_link():
    """At 2 ns/byte the copy cost caps one gRPC stream at 0.5 GB/s whatever the wire: the ring's NIC time is
    V·max(1/B_wire, c), so over 10 GbE at 0.7 (1/B_wire = 1.143 ns/byte) the copy adds V·(2 - 1.143) ns, and
    however fast the wire the stream never beats V·c."""
    V = 2 * 7 / 8 * 27_161_264 * 4  # ring volume of inception_v3's gradients over 8 GPUs (bytes)
    a = _pred(_p(tcp_efficiency=0.7, grpc_copy_ns_per_byte=2.0), stack="grpc", reduce_on="gpu", chassis="pcie4x4")
    b = _pred(_p(tcp_efficiency=0.7, grpc_copy_ns_per_byte=0.0), stack="grpc", reduce_on="gpu", chassis="pcie4x4")
    assert a["t_comm_s"] - b["t_comm_s"] == pytest.approx(V * (2e-9 - 1.0 / (10e9 / 8 * 0.7)), rel=1e-6)
    fast_wire = _pred(_p(tcp_efficiency=1e3, grpc_copy_ns_per_byte=2.0), stack="grpc", reduce_on="gpu", chassis="pcie4x4")
    free = _pred(_p(tcp_efficiency=1e3, grpc_copy_ns_per_byte=0.0), stack="grpc", reduce_on="gpu", chassis="pcie4x4")
    assert fast_wire["t_comm_s"] - free["t_comm_s"] == pytest.approx(V * (2e-9 - 1.0 / (10e9 / 8 * 1e3)), rel=1e-6)


def test_grpc_stages_gpu_tensors_through_the_host_by_hand():
    """reduce_on=gpu: TF's RecvTensor copies a GPU tensor to the host before encoding it (and back on arrival),
    in series with the RPC: per byte 1/B_pcie_one, B_pcie_one = PCIe Gen4 x16 31 GB/s x pcie_efficiency.
    So a grpc ring on GPU buffers costs what an nccl ring (no staging) costs on a wire slower by that much."""
    p = _p()
    staged = 1.0 / (31e9 * p.pcie_efficiency)
    line = 10e9 / 8
    kw = dict(strategy="ring", reduce_on="gpu", chassis="pcie4x4")
    grpc = _pred(p, stack="grpc", **kw)
    nccl_slower = _pred(p.with_updates(tcp_efficiency=_tcp_equivalent(p.tcp_efficiency, line, staged)),
                        stack="nccl", **kw)
    assert grpc["t_iter_s"] == pytest.approx(nccl_slower["t_iter_s"], rel=1e-9)


def test_hierarchical_over_a_host_stack_reduces_inside_the_node_first_by_hand():
    """gloo, hierarchical, 2 nodes x 4 halfcards (PCIe Gen4 box, 31 GB/s x PCIe efficiency for the GPUs' links
    and for one GPU's host link), 10 GbE: intra reduce-scatter + all-gather on the GPUs, the node's buffer down
    to the host and back, the inter-node all-reduce on host memory at min(B_nic x cpu_eff, host memory), the
    host reduction of the other node's half; phases in series (Goyal et al. 2017 §4). One bucket, no sync."""
    p = _p()
    S = 27_161_264 * 4  # inception_v3 gradient bytes
    b = 31e9 * p.pcie_efficiency
    b_nic = 10e9 / 8 * p.tcp_efficiency
    cpu_rate = min(b_nic * p.cpu_network_efficiency, p.host_memory_gb_per_s * 1e9)
    bw = 2 * 3 / 4 * S / b + 2 * S / b + 2 * 1 / 2 * S / cpu_rate + 1 / 2 * S / (p.host_reduce_gb_per_s * 1e9)
    lat = 2 * 3 * p.intra_message_overhead_us * 1e-6 + 2 * 1 * (10 + p.tcp_message_overhead_us) * 1e-6
    d = _pred(p, strategy="hierarchical", stack="gloo", chassis="pcie4x4")
    assert d["t_comm_s"] == pytest.approx(bw + lat, rel=1e-6)
    # the flat host path (every GPU a rank of the host all-reduce) is what a ring over gloo still pays
    flat = _pred(p, strategy="ring", stack="gloo", chassis="pcie4x4")
    assert flat["t_comm_s"] > d["t_comm_s"]


def test_nccl_socket_transport_caps_the_wire_by_hand():
    """NCCL over transport tcp runs its socket transport: the NIC rate is min(line x eff(tcp), B_sock).
    10 GbE at eff 0.7 = 0.875e9 B/s; a 0.5 GB/s socket ceiling makes the ring's NIC time V / 0.5e9 instead of
    V / 0.875e9 (V = 2·7/8 · inception_v3's 27,161,264 fp32 parameters · 4 bytes = 190,128,848 bytes): +0.1629 s."""
    V = 2 * 7 / 8 * 27_161_264 * 4
    free = _pred(_p(tcp_efficiency=0.7, nccl_socket_gb_per_s=1e6), stack="nccl")
    capped = _pred(_p(tcp_efficiency=0.7, nccl_socket_gb_per_s=0.5), stack="nccl")
    assert capped["t_comm_s"] - free["t_comm_s"] == pytest.approx(V / 0.5e9 - V / 0.875e9, rel=1e-6)
    assert V / 0.5e9 - V / 0.875e9 == pytest.approx(0.16298, rel=1e-4)
    # a ceiling above the wire's rate changes nothing: the wire is the slower stage
    above = _pred(_p(tcp_efficiency=0.7, nccl_socket_gb_per_s=2.0), stack="nccl")
    assert above["t_comm_s"] == pytest.approx(free["t_comm_s"], rel=1e-12)


@pytest.mark.parametrize("kw", [
    dict(nic="ib100", stack="nccl"),             # IB verbs: GPUDirect, no socket transport
    dict(stack="grpc", chassis="pcie4x4"),       # not NCCL: its own per-byte cost, not this ceiling
    dict(nodes=1, nic=None, stack="nccl"),       # one node: no NIC
])
def test_nccl_socket_ceiling_only_for_nccl_over_tcp(kw):
    a = _pred(_p(nccl_socket_gb_per_s=1e6), **kw)
    b = _pred(_p(nccl_socket_gb_per_s=0.01), **kw)
    assert a["t_iter_s"] == pytest.approx(b["t_iter_s"], rel=1e-12)


def test_nccl_socket_prior_is_the_geometric_mean_of_its_two_sources():
    """system_priors.toml: 2.4 GB/s (NVIDIA/nccl#209, 60% of 32 Gb/s) and 5 GB/s (#450, 100 Gb/s TCP)."""
    from costopt.perf.system import prior_system
    assert prior_system().nccl_socket_gb_per_s == pytest.approx(math.sqrt(0.6 * 32 / 8 * 5.0), abs=0.005)


def test_stack_mechanisms_tool_stays_under_the_hardware():
    """tools/stack_mechanisms.py (issue 10's out-of-sample behaviours, configurations only): the busiest NIC can
    never run above its line rate, and a host all-reduce of S bytes can never beat the wire: S / t_comm below
    the line rate in bytes/s (25 Gb/s = 3.125 GB/s, 40 Gb/s = 5 GB/s, 100 Gb/s = 12.5 GB/s). Rows of both tables are
    present."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import stack_mechanisms

    grpc = [r for r in stack_mechanisms.grpc_vgg16(default_system()) if r.startswith("| cpu") or r.startswith("| gpu")]
    assert len(grpc) == 8
    for r in grpc:
        share = float(r.strip("|").split("|")[-1].strip().rstrip("%"))
        assert 0.0 < share <= 100.0
    mpi = [r for r in stack_mechanisms.mpi_host(default_system()) if r.startswith("| ") and "Gb/s" in r]
    assert len(mpi) == 24
    rate = {}
    for r in mpi:
        cells = [c.strip() for c in r.strip("|").split("|")]
        line_gb_per_s = float(cells[2].split()[0]) / 8.0
        assert 0.0 < float(cells[-1]) < line_gb_per_s
        rate[(cells[0], cells[1], cells[2])] = float(cells[-1])
    # a faster RDMA link never slows the host all-reduce (the per-rank ceiling caps it, it does not reverse it)
    for (m, g, link), v in rate.items():
        if link == "100 Gb/s rdma":
            assert v >= rate[(m, g, "40 Gb/s rdma")]


def test_grpc_largest_tensor_is_one_stream_by_hand():
    """One tensor is one RPC on one stream: per PS phase the RPC cost is max(X·c/(M − 1), S_big·c_1), pipelined
    with the wire. VGG16 (tf_cnn_benchmarks set): fc6 is 25088 x 4096 fp32 = 411,041,792 bytes. At c_1 = 5 and
    10 ns/byte that tensor alone takes 2.06 and 4.11 s per phase, far above the wire's time for the whole phase
    (X <= S = 553 MB at 10 GbE x 0.7: under 0.64 s), so the pull (before forward) and the push (overlap none)
    each grow by 411,041,792 x 5e-9 s from the first to the second."""
    s_big = 25088 * 4096 * 4
    assert 138_357_544 * 4 / (10e9 / 8 * 0.7) < 0.64 < s_big * 5e-9  # VGG16's 138,357,544 parameters
    kw = dict(model="vgg16", tensor_set="tensorflow", strategy="ps", reduce_on="cpu", nodes=2, stack="grpc",
              chassis="pcie4x4", batch_per_gpu=32)
    base = _pred(_p(), **kw)
    five = _pred(_p(grpc_stream_ns_per_byte=5.0), **kw)
    ten = _pred(_p(grpc_stream_ns_per_byte=10.0), **kw)
    assert ten["t_iter_s"] - five["t_iter_s"] == pytest.approx(2 * s_big * 5e-9, rel=1e-9)
    assert five["t_iter_s"] > base["t_iter_s"]
    # when the per-peer cost already exceeds the single-stream floor (2 peers: X·2 ns >= S_big·1 ns) it adds nothing
    a = _pred(_p(grpc_copy_ns_per_byte=2.0, grpc_stream_ns_per_byte=1.0), **kw)
    b = _pred(_p(grpc_copy_ns_per_byte=2.0), **kw)
    assert a["t_iter_s"] == pytest.approx(b["t_iter_s"], rel=1e-12)
    # stacks without an RPC layer have no single-stream floor in the shipped priors
    p = default_system()
    assert (p.nccl_stream_ns_per_byte, p.mpi_stream_ns_per_byte, p.gloo_stream_ns_per_byte) == (0.0, 0.0, 0.0)
    assert p.grpc_stream_ns_per_byte == 2.5  # median of six published single-tensor RecvTensor rates (394 MB/s)


def test_grpc_one_stream_slows_with_the_tensor_size_by_hand():
    """2016-17 gRPC: one stream's time grows as S² for large tensors, so the single-stream floor per byte is
    max(c_1, k·S_big). VGG16's fc6 (411,041,792 bytes) at k = 9.33 ns/B per GB: 9.33e-18 x 411,041,792 =
    3.835 ns/B > c_1 = 2.5, so the pull and the push (overlap none) each grow by S_big x (3.835 - 2.5) ns;
    AlexNet's fc6 (9216 x 4096 fp32 = 150,994,944 bytes): 1.409 ns/B < 2.5, nothing changes."""
    s_big = 25088 * 4096 * 4
    kw = dict(model="vgg16", tensor_set="tensorflow", strategy="ps", reduce_on="cpu", nodes=2, stack="grpc",
              chassis="pcie4x4", batch_per_gpu=32)
    flat = _pred(_p(grpc_stream_ns_per_byte=2.5), **kw)
    grown = _pred(_p(grpc_stream_ns_per_byte=2.5, grpc_stream_ns_per_byte_per_gb=9.33), **kw)
    assert 9.33e-18 * s_big == pytest.approx(3.835e-9, rel=1e-3)
    assert grown["t_iter_s"] - flat["t_iter_s"] == pytest.approx(2 * s_big * (9.33e-18 * s_big - 2.5e-9), rel=1e-9)
    kw["model"] = "alexnet"
    assert 9.33e-18 * 9216 * 4096 * 4 < 2.5e-9
    a = _pred(_p(grpc_stream_ns_per_byte=2.5), **kw)
    b = _pred(_p(grpc_stream_ns_per_byte=2.5, grpc_stream_ns_per_byte_per_gb=9.33), **kw)
    assert a["t_iter_s"] == b["t_iter_s"]
    # the prior reproduces TF's single-tensor benchmark (tensorflow#6256's gist, 2016-12-11) at 512 and 1024 MB:
    # S² x k against S / rate, 512e6 B at 202.46 MB/s = 2.529 s, 1024e6 B at 106.29 MB/s = 9.634 s
    k = default_system().grpc_stream_ns_per_byte_per_gb * 1e-18
    assert k == pytest.approx(9.33e-18)
    assert (512e6) ** 2 * k == pytest.approx(512e6 / 202.46e6, rel=0.05)
    assert (1024e6) ** 2 * k == pytest.approx(1024e6 / 106.29e6, rel=0.05)
    # only gRPC has the growth: an all-reduce stack's designs ignore it
    n0 = _pred(_p(), model="vgg16", stack="nccl", nodes=2)
    n1 = _pred(_p(grpc_stream_ns_per_byte_per_gb=9.33), model="vgg16", stack="nccl", nodes=2)
    assert n0["t_iter_s"] == n1["t_iter_s"]


def test_dlperf_bert_rows_over_nccl_sockets_say_why_and_keep_their_figures():
    """The eight DLPERF_2020 BERT multi-node rows that ran NCCL's socket transport carry the reason in their
    notes, keep the stated 100 Gb/s EDR link, and keep the report's figures (DLPerf report v1 @28c5854b, BERT
    batch 32: PaddlePaddle 1116.02 / 2073.6, MXNet 1136.44 / 1895.5 sentences/s at 16 / 32 GPUs)."""
    import csv
    path = Path(costopt.__file__).parent / "data" / "validation" / "published.csv"
    rows = [r for r in csv.DictReader(open(path, encoding="utf-8"))
            if r["source"] == "DLPERF_2020" and r["transport"] == "tcp"]
    assert len(rows) == 8
    for r in rows:
        assert r["model"] == "bert_base" and r["nic_gbps"] == "100" and int(r["nodes"]) > 1
        assert "NCCL_IB_DISABLE=1" in r["notes"] or "InfiniBand user-space driver" in r["notes"]
    b32 = {(r["nodes"], "PaddlePaddle" in r["notes"]): float(r["measured_samples_per_s"])
           for r in rows if r["batch_per_gpu"] == "32"}
    assert b32 == {("2", True): 1116.02, ("4", True): 2073.6, ("2", False): 1136.44, ("4", False): 1895.5}


@pytest.mark.parametrize("transport,link,params,ceiling,cap_gb,host_path_gb,ring_s,hier_s,above_gb", [
    # tcp: 10 GbE at eff 0.7 and cpu_eff 0.5: 1.25e9 x 0.7 x 0.5 = 0.4375e9 B/s; a 0.2 GB/s thread ceiling
    ("tcp", {}, dict(tcp_efficiency=0.7, cpu_network_efficiency=0.5),
     "mpi_host_gb_per_s", 0.2, 0.4375, 0.51606, 0.29489, 0.5),
    # rdma: 100 Gb/s at eff 0.8 and cpu_eff 0.5: 12.5e9 x 0.8 x 0.5 = 5e9 B/s; a 2 GB/s ceiling (the TCP one set
    # absurdly low, 0.01, to show it does not touch an RDMA design)
    ("rdma", dict(nic="ib100"), dict(rdma_efficiency=0.8, cpu_network_efficiency=0.5, mpi_host_gb_per_s=0.01),
     "mpi_host_rdma_gb_per_s", 2.0, 5.0, 0.057039, 0.032594, 6.0),
])
def test_mpi_host_ring_ceiling_by_hand(transport, link, params, ceiling, cap_gb, host_path_gb, ring_s, hier_s,
                                       above_gb):
    """MPI over a NIC: one thread per rank drives the host-memory ring (over tcp it also copies every byte through
    the sockets; over rdma the adapter moves the bytes but the thread still waits, reduces and posts in series), so
    the ring's network term runs at min(B_nic x cpu_eff, host memory, B_host) per rank, B_host the transport's
    ceiling. A ceiling below the host path's rate makes the flat ring's network time V / B_host instead of
    V / B_path, V = 2·7/8 · 108,645,056 bytes (inception_v3's 27,161,264 fp32 gradients, 8 ranks) = 190,128,848
    bytes: tcp +0.51606 s, rdma +0.057039 s. Hierarchical over mpi (2 nodes): only the nodes' ring goes through the
    host, 2·1/2 · S bytes: tcp +0.29489 s, rdma +0.032594 s. A ceiling above the host path's rate changes nothing."""
    S = 27_161_264 * 4
    V = 2 * 7 / 8 * S
    kw = dict(strategy="ring", reduce_on="cpu", chassis="pcie4x4", stack="mpi", **link)
    free = _pred(_p(**params, **{ceiling: 1e6}), **kw)
    capped = _pred(_p(**params, **{ceiling: cap_gb}), **kw)
    ring_delta = V / (cap_gb * 1e9) - V / (host_path_gb * 1e9)
    assert capped["t_comm_s"] - free["t_comm_s"] == pytest.approx(ring_delta, rel=1e-6)
    assert ring_delta == pytest.approx(ring_s, rel=1e-4)
    kw_h = dict(kw, strategy="hierarchical", reduce_on="gpu")
    free_h = _pred(_p(**params, **{ceiling: 1e6}), **kw_h)
    capped_h = _pred(_p(**params, **{ceiling: cap_gb}), **kw_h)
    hier_delta = S / (cap_gb * 1e9) - S / (host_path_gb * 1e9)
    assert capped_h["t_comm_s"] - free_h["t_comm_s"] == pytest.approx(hier_delta, rel=1e-6)
    assert hier_delta == pytest.approx(hier_s, rel=1e-4)
    above = _pred(_p(**params, **{ceiling: above_gb}), **kw)
    assert above["t_comm_s"] == pytest.approx(free["t_comm_s"], rel=1e-12)


@pytest.mark.parametrize("ceiling,kw", [
    # the TCP ceiling (mpi_host_gb_per_s) touches only MPI over kernel TCP
    ("mpi_host_gb_per_s", dict(nic="ib100", stack="mpi", reduce_on="cpu")),   # RDMA: its own ceiling
    ("mpi_host_gb_per_s", dict(stack="gloo", reduce_on="cpu")),               # Gloo: not MPI's one-thread ring
    ("mpi_host_gb_per_s", dict(stack="nccl", reduce_on="gpu")),               # NCCL: its own socket ceiling
    ("mpi_host_gb_per_s", dict(nodes=1, nic=None, stack="mpi", reduce_on="cpu")),  # one node: no sockets
    # the RDMA ceiling (mpi_host_rdma_gb_per_s) touches only MPI over RDMA
    ("mpi_host_rdma_gb_per_s", dict(stack="mpi", reduce_on="cpu")),                # TCP: the kernel-socket ceiling
    ("mpi_host_rdma_gb_per_s", dict(nic="ib100", stack="gloo", reduce_on="cpu")),  # Gloo: not MPI's ring
    ("mpi_host_rdma_gb_per_s", dict(nic="ib100", stack="nccl", reduce_on="gpu")),  # NCCL: GPUDirect, no host ring
    ("mpi_host_rdma_gb_per_s", dict(nodes=1, nic=None, stack="mpi", reduce_on="cpu")),  # one node: no adapter
])
def test_mpi_host_ceilings_touch_only_their_own_transport(ceiling, kw):
    a = _pred(_p(**{ceiling: 1e6}), chassis="pcie4x4", **kw)
    b = _pred(_p(**{ceiling: 0.01}), chassis="pcie4x4", **kw)
    assert a["t_iter_s"] == pytest.approx(b["t_iter_s"], rel=1e-12)


def test_mpi_host_rdma_prior_is_the_lassen_osu_allreduce_measurement():
    """system_priors.toml: osu_allreduce on LLNL Lassen, host buffers, one rank per node (converged-computing/
    metrics-operator-experiments, osu_allreduce-groups-2-to-128.csv, mean of 20 runs): 1,048,576 B in 573.574 us on
    4 nodes and 686.58 us on 8 nodes. Ring traffic per rank 2(N - 1)/N x 1,048,576 B: 1.5 x and 1.75 x, i.e.
    2.742 and 2.673 GB/s, mean 2.707 GB/s."""
    from costopt.perf.system import prior_system
    per_rank = [1.5 * 1_048_576 / 573.574e-6, 1.75 * 1_048_576 / 686.58e-6]
    assert per_rank[0] / 1e9 == pytest.approx(2.742, abs=0.001) and per_rank[1] / 1e9 == pytest.approx(2.673, abs=0.001)
    assert prior_system().mpi_host_rdma_gb_per_s == pytest.approx(sum(per_rank) / 2 / 1e9, abs=0.01)
    # above the kernel-TCP one-thread figure (1.07 GB/s): RDMA's host ring is faster, not the same
    assert prior_system().mpi_host_rdma_gb_per_s > 2 * prior_system().mpi_host_gb_per_s


def test_mpi_host_prior_is_the_one_thread_host_ring_measurement():
    """system_priors.toml: pytorch/gloo#248, 2 ranks, 20 MB float32 at 1.073 GB/s; each rank's ring traffic per
    all-reduce is 2(N - 1)/N x 20 MB = 20 MB, so 1.073 GB/s of ring traffic per rank."""
    from costopt.perf.system import prior_system
    assert prior_system().mpi_host_gb_per_s == pytest.approx(2 * (2 - 1) / 2 * 20e6 / (20e6 / 1.073e9) / 1e9, abs=0.005)


def _mpi_host_rates(system, model="vgg16", gpus=16):
    """S / t_comm (GB/s) of the MPI host all-reduce per link, from tools/stack_mechanisms.py's table."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import stack_mechanisms
    out = {}
    for r in stack_mechanisms.mpi_host(system):
        cells = [c.strip() for c in r.strip("|").split("|")]
        if len(cells) == 7 and cells[0] == model and cells[1] == str(gpus):
            out[cells[2]] = float(cells[-1])
    return out


def test_mpi_host_ceiling_makes_the_rate_independent_of_the_tcp_link():
    """When the one-thread ceiling binds (1.07 GB/s per rank, the prior, below 25 GbE TCP's host path
    3.125 GB/s x eff 0.7 x cpu_eff 0.5 = 1.09 GB/s and 40 GbE's 1.75 GB/s) the host all-reduce rate S / t_comm moves
    by less than 5% from 25 to 40 GbE TCP (tools/stack_mechanisms.py's designs, 16 and 64 GPUs). Without the ceiling
    the same designs gain more than 30% (the wire set the rate)."""
    pinned = default_system().with_updates(tcp_efficiency=0.7, cpu_network_efficiency=0.5)
    for gpus in (16, 64):
        on = _mpi_host_rates(pinned.with_updates(mpi_host_gb_per_s=1.07), gpus=gpus)
        off = _mpi_host_rates(pinned.with_updates(mpi_host_gb_per_s=1e6), gpus=gpus)
        assert len(on) == 4 and len(off) == 4
        assert abs(on["40 Gb/s tcp"] / on["25 Gb/s tcp"] - 1.0) < 0.05
        assert off["40 Gb/s tcp"] / off["25 Gb/s tcp"] > 1.3


def test_ps_breakdown_tool_by_hand_and_bounds():
    """tools/ps_breakdown.py on the shipped multi-node PS rows (34: TF_BENCH_2017 15, EBUG_DISTTF_2017 18,
    TFB_ISSUE29_M40 1). Measured exposed time by hand for EBUG_DISTTF_2017 p2.xlarge, 8 nodes (report table
    tab:peak-perf-p2: 228.41 img/s on 8 GPUs, 30.55 img/s on 1, batch 64): 8·64/228.41 − 64/30.55 = 0.1467 s.
    Switching a cost off never slows an iteration, and no term adds more than the whole predicted exposed time."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import ps_breakdown

    items = ps_breakdown.breakdown(ps_breakdown.ps_rows(), default_system())
    assert len(items) == 34
    p2 = [d for d in items if d["row"].raw.get("system") == "AWS p2.xlarge" and d["row"].nodes == 8]
    assert len(p2) == 1
    assert p2[0]["exposed_measured_s"] == pytest.approx(8 * 64 / 228.41 - 64 / 30.55, rel=1e-9)
    assert 8 * 64 / 228.41 - 64 / 30.55 == pytest.approx(0.1467, abs=5e-5)
    for d in items:
        for term in ("wire", "copy", "stream", "pcie", "sync", "wait"):
            assert -1e-9 <= d[term] <= d["exposed_predicted_s"] + 1e-9, (term, d["row"].source, d["row"].nodes)
    lines = ps_breakdown.table(items)
    assert len(lines) == 2 + 34
