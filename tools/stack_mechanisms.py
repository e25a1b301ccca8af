"""Print what the shipped defaults predict for the two stack behaviours issue 10 describes out of sample.

    python tools/stack_mechanisms.py [--system PATH]     (a few seconds)

No measured number enters here: the designs are configurations only, predicted with the shipped defaults
(costopt/data/system_defaults.toml) or `--system`. Compute is the zoo's estimate for the GPU (no 1-GPU
calibration), so the figures to read are the shares and rates, not the absolute throughput.

1. gRPC parameter servers on big tensors. VGG16 (tf_cnn_benchmarks tensor set, 411 MB fc6) with one PS
   shard per node, 4 P100 per node over 25 GbE TCP, variables on the CPU and on the GPUs. For each design:

       NIC share = busiest NIC bytes per iteration / (t_iter x line rate)

   the share of line rate the busiest adapter runs at on costopt's own byte count. Issue 10 describes TF 1.x
   gRPC reaching about 6% here (36% at best for smaller tensors).
2. MPI all-reduce on host memory (stack `mpi`, reduce_on=cpu, flat ring) for Inception-v3, ResNet-101 and
   VGG16 on 4 P100 per node, 4 and 16 nodes, over 25 and 40 GbE TCP and 40 and 100 Gb/s RDMA:

       host all-reduce rate = S / t_comm        (S gradient bytes per replica, t_comm the stack's time)

   Issue 10 describes 2017 MPI on host memory at a near-fixed 0.4-0.8 GB/s whatever the link (25 vs 40 GbE,
   TCP vs RDMA alike), losing rate from 16 to 64 GPUs.
   One thread per rank drives MPI's host ring, so a rank's ring traffic has a ceiling whatever the link:
   over TCP `[mpi] host_gb_per_s` (1.07 GB/s, a one-thread host ring on 40 GbE, pytorch/gloo#248) binds on 25 and
   40 GbE alike; over RDMA `[mpi] host_rdma_gb_per_s` (2.7 GB/s, osu_allreduce on host buffers, one rank per node,
   LLNL Lassen) is above the 40 Gb/s host path (5 GB/s x 0.85 x cpu_eff 0.5 = 2.1 GB/s), so 40 Gb/s RDMA rows
   follow the wire and stay faster than TCP; it binds on the 100 Gb/s RDMA rows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costopt.perf.system import load_system  # noqa: E402
from costopt.measure.validate import Row, prepare  # noqa: E402

GPU = "p100-pcie"
GPUS_PER_NODE = 4


def _row(line: int, model: str, tensor_set: str, batch: int, nodes: int, strategy: str, reduce_on: str,
         nic_gbps: float, transport: str, stack: str) -> Row:
    return Row(line=line, source="mechanism", model=model, gpu=GPU, gpus_per_node=GPUS_PER_NODE, nodes=nodes,
               batch_per_gpu=batch, precision="fp32", strategy=strategy, nic_gbps=nic_gbps, transport=transport,
               num_ps=None, reduce_on=reduce_on, single_gpu_samples_per_s=None, measured_samples_per_s=1.0,
               tensor_set=tensor_set, stack=stack, stack_basis="column")


def _timings(rows: list[Row], system) -> list[dict]:
    """Per row: throughput, t_iter, t_compute, t_comm, busiest NIC bytes and S."""
    prep = prepare(rows)
    out: list[dict] = [{} for _ in rows]
    for g in prep.groups:
        t = g.timing(system)
        for j, i in enumerate(g.rows.tolist()):
            d = int(g.inverse[j]) if g.inverse is not None else j
            out[i] = {"throughput": float(t.throughput_samples_per_s[d]), "t_iter": float(t.t_iter_s[d]),
                      "t_compute": float(t.t_compute_s[d]), "t_comm": float(t.t_comm_s[d]),
                      "busiest": float(t.busiest_nic_bytes[d]), "S": float(g.tensors.total_gradient_bytes)}
    return out


def grpc_vgg16(system) -> list[str]:
    rows = [_row(k, "vgg16", "tensorflow", 32, m, "ps", ro, 25.0, "tcp", "grpc")
            for k, (ro, m) in enumerate((ro, m) for ro in ("cpu", "gpu") for m in (2, 4, 8, 16))]
    out = ["gRPC PS, VGG16 (tensorflow tensor set), 4 x P100 per node, 25 GbE TCP, one PS shard per node:", "",
           "| variables on | nodes | GPUs | scaling efficiency | busiest NIC GB / iteration | NIC share of line rate |",
           "|---|---:|---:|---:|---:|---:|"]
    for r, t in zip(rows, _timings(rows, system)):
        share = t["busiest"] / (t["t_iter"] * r.nic_gbps * 1e9 / 8.0)
        out.append(f"| {r.reduce_on} | {r.nodes} | {r.total_gpus} | {t['t_compute'] / t['t_iter']:.0%} | "
                   f"{t['busiest'] / 1e9:.2f} | {share:.0%} |")
    return out


def mpi_host(system) -> list[str]:
    links = ((25.0, "tcp"), (40.0, "tcp"), (40.0, "rdma"), (100.0, "rdma"))
    models = (("inception_v3", "tensorflow", 64), ("resnet101", "pytorch", 64), ("vgg16", "tensorflow", 32))
    rows = [_row(k, m, ts, b, n, "ring", "cpu", g, tr, "mpi")
            for k, (m, ts, b, n, g, tr) in enumerate(
                (m, ts, b, n, g, tr) for (m, ts, b) in models for n in (4, 16) for (g, tr) in links)]
    out = ["MPI all-reduce on host memory (stack mpi, flat ring, reduce_on=cpu), 4 x P100 per node:", "",
           "| model | GPUs | link | scaling efficiency | gradient MB | t_comm s | host all-reduce rate GB/s |",
           "|---|---:|---|---:|---:|---:|---:|"]
    for r, t in zip(rows, _timings(rows, system)):
        out.append(f"| {r.model} | {r.total_gpus} | {r.nic_gbps:g} Gb/s {r.transport} | "
                   f"{t['t_compute'] / t['t_iter']:.0%} | {t['S'] / 1e6:.0f} | {t['t_comm']:.3f} | "
                   f"{t['S'] / t['t_comm'] / 1e9:.2f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default=None, help="system parameters TOML (default: the shipped defaults)")
    a = ap.parse_args()
    system = load_system(a.system)
    print("\n".join(grpc_vgg16(system) + [""] + mpi_host(system)))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
