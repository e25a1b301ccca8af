"""Row by row: what the timing model charges each shipped multi-node parameter-server row, beside what it measured.

    python tools/ps_breakdown.py [--system PATH] [--source ID]     (a few seconds)

For every multi-node `ps` row of the shipped measurement files (costopt/data/validation/, the same rows as
tools/fit_defaults.py): measured and predicted throughput, and the time beyond one GPU's compute,

    exposed = N·b / throughput − t_1        (t_1 = b / the row's measured 1-GPU rate: its compute calibration)

measured and predicted, with the row's TensorFlow variable_update mode (parameter_server: the pull runs before
and during the forward; distributed_replicated: in the stream beside the push, costopt/perf/timing.py). Then what each term adds to the predicted iteration, by ablation: t_iter with the
defaults minus t_iter with that one term switched off, the others kept. Pipelined stages are a max, so a term
hidden under another shows as 0, and the deltas need not add up to the exposed time:

    wire     the NIC free (tcp and rdma efficiency x 1e6)
    copy     grpc_copy_ns_per_byte = 0          (per-connection serialisation, beside the wire)
    stream   grpc_stream_ns_per_byte = 0        (one tensor is one RPC stream)
    pcie     pcie_efficiency x 1e6              (host copies of reduce_on=cpu, GPU staging of reduce_on=gpu)
    sync     grpc_sync_us = 0, ps_tensor_overhead_us = 0 (barrier and per-tensor request costs)
    wait     straggler_cv = 0                   (the wait for the slowest GPU)

Predictions use the shipped defaults (fitted on these rows: in-sample) or `--system`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from costopt.perf.system import SystemParams, load_system  # noqa: E402
from costopt.measure.validate import Row, prepare, read_measurements  # noqa: E402

FREE = 1e6  # efficiency multiplier that makes a link's time negligible


def ablations(p: SystemParams) -> dict[str, SystemParams]:
    """One parameter set per term, with that term switched off."""
    return {
        "wire": p.with_updates(tcp_efficiency=p.tcp_efficiency * FREE, rdma_efficiency=p.rdma_efficiency * FREE),
        "copy": p.with_updates(grpc_copy_ns_per_byte=0.0),
        "stream": p.with_updates(grpc_stream_ns_per_byte=0.0),
        "pcie": p.with_updates(pcie_efficiency=p.pcie_efficiency * FREE),
        "sync": p.with_updates(grpc_sync_us=0.0, ps_tensor_overhead_us=0.0),
        "wait": p.with_updates(straggler_cv=0.0),
    }


def ps_rows(source: str | None = None) -> list[Row]:
    """The shipped multi-node parameter-server rows (optionally one source's)."""
    from fit_defaults import measurement_datasets

    rows: list[Row] = []
    for name in measurement_datasets():
        rows += read_measurements(name)[1]
    return [r for r in rows if r.strategy == "ps" and r.nodes > 1 and (source is None or r.source == source)]


def breakdown(rows: list[Row], system: SystemParams) -> list[dict]:
    """Per row: measured and predicted throughput and exposed time (s), and each term's ablation delta (s)."""
    prep = prepare(rows)
    n = np.array([r.total_gpus for r in rows], dtype=np.float64)
    samples = n * np.array([r.batch_per_gpu for r in rows], dtype=np.float64)  # per iteration, all GPUs
    t_1 = np.array([r.batch_per_gpu / r.single_gpu_samples_per_s if r.single_gpu_samples_per_s else np.nan
                    for r in rows])
    pred = prep.predict(system)
    t_iter = samples / pred
    out = [{"row": r, "measured": r.measured_samples_per_s, "predicted": float(pred[i]),
            "exposed_measured_s": float(samples[i] / r.measured_samples_per_s - t_1[i]),
            "exposed_predicted_s": float(t_iter[i] - t_1[i])} for i, r in enumerate(rows)]
    for term, params in ablations(system).items():
        t_off = samples / prep.predict(params)
        for i in range(len(rows)):
            out[i][term] = float(t_iter[i] - t_off[i])
    return out


def table(items: list[dict]) -> list[str]:
    terms = list(ablations(load_system(None)))
    lines = ["| source | system | model | G x M | PS | variable_update | vars on | Gb/s | measured | predicted | error % | "
             "exposed measured s | exposed predicted s | " + " | ".join(f"{t} s" for t in terms) + " |",
             "|" + "---|" * 7 + "---:|" * (6 + len(terms))]
    for d in items:
        r = d["row"]
        err = (d["predicted"] - d["measured"]) / d["measured"] * 100.0
        lines.append(f"| {r.source} | {r.raw.get('system', '')} | {r.model} | {r.gpus_per_node} x {r.nodes} | "
                     f"{r.num_ps or r.nodes} | {r.variable_update} | {r.reduce_on} | {r.nic_gbps:g} | {d['measured']:g} | "
                     f"{d['predicted']:.1f} | {err:+.1f} | {d['exposed_measured_s']:.3f} | "
                     f"{d['exposed_predicted_s']:.3f} | " + " | ".join(f"{d[t]:.3f}" for t in terms) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default=None, help="system parameters TOML (default: the shipped defaults)")
    ap.add_argument("--source", default=None, help="only this source's rows")
    a = ap.parse_args()
    print("\n".join(table(breakdown(ps_rows(a.source), load_system(a.system)))))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
