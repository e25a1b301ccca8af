"""Build costopt/data/validation/published.csv from shared/research/published_throughput.csv.

    python tools/build_validation.py [--shared ../shared] [--check]

Reads the published measurements collected in `shared/research/published_throughput.csv` (setups in
`published_throughput_sources.md`) and writes one row per multi-GPU or multi-node measurement that
states enough to predict it, in costopt's measurement format (see costopt/measure/validate.py). `--check`
compares with the shipped file instead of writing it (exit 1 when they differ).

What goes in, and the assumptions written into each row's `notes`:

- TF_BENCH_2017 (TensorFlow benchmarks page, May 2017): the DGX-1 (P100), GCE K80, AWS p2.8xlarge
  single-node scaling tables and the AWS distributed K80 table, synthetic data only (real-data rows
  repeat the same runs with an input pipeline costopt does not model). The batch-32 "Other Results"
  single-node rows are left out: the page does not restate their variable_update. Each row's compute
  calibration is the same table's 1-GPU figure.
- EBUG_DISTTF_2017 (CSCS report, Aug 2017): Piz Daint, p2.xlarge and p2.8xlarge InceptionV3 tables,
  synthetic rows, with the reported PS count. Piz Daint has no synthetic 1-GPU row: its real-data
  1-GPU figure (138.23, Lustre input) is used as the compute calibration.
- TFB_ISSUE29_M40: 4 x M40 single node (PS) and 2 x 4 M40 over 9.3 Gb/s measured Ethernet.
Left out: every NVIDIA DeepLearningExamples README table (NV_DLE_*: a held-out source, never shipped or fitted;
its ResNet-50 rows were shipped until 2026-12-02), TF_ISSUE5683_P2 (batch size not stated), GOYAL_2017_SECONDARY (no throughput figure),
LAMBDA_PT_V1 (per-GPU compute calibration data, no stated all-reduce method).

Network speeds the sources do not state are taken from published_throughput_sources.md "Network
speeds the sources do not state" (AWS documentation of the time): p2.8xlarge 10 Gb/s. AWS's instance-type
pages list p2.xlarge only as "High"; AWS's own figure for it is 1.25 Gb/s: the table "P2 GPU Instances"
(column "Network Bandwidth*", "*In a placement group": p2.xlarge 1.25Gbps, p2.8xlarge 10Gbps, p2.16xlarge
20Gbps) in Jamie Kinney (AWS Principal Product Manager, HPC), "Accelerated Computing on AWS", March 2017,
shown at JAWS AI x HPC on 2017-03-31 (speakerdeck.com/porcaro33/gpu-fpga-briefing-plus-march-plus-2017,
read 2026-12-01), five months before the report's runs. It is the provider's stated figure, not a
measurement; the report does not say whether its instances were in a placement group. No public measured
p2.xlarge figure was found (2026-12-01): cloudonaut's EC2 Network Performance Cheat Sheet (iperf3, April
2018) lists p2 only in its XLSX download, which is not in hand, and widdix/ec2-network-benchmark holds the
scripts, not the results. Piz Daint's Aries bandwidth is not stated:
80 Gb/s (about Aries' per-node injection bandwidth, not in the sources) is assumed, with TCP
because TF 1.1 gRPC runs over TCP/IP. No public measurement of TCP/IP over Aries on Piz Daint (iperf or
gRPC) was found (2026-12-01: CSCS pages, Cray's XC network paper, TensorFlow/gRPC-on-Cray papers and issue
threads searched). The report's own 128-node row bounds it from below: with 116 PS, the node holding
affine0/weights moves 127 x 8.2 + 87 = 1,128 MB per step and direction in 0.889 s, at least 10.2 Gb/s
(8.4 Gb/s at 64 nodes): a floor, not a figure for the rows. All 2017 TensorFlow rows use transport tcp
(gRPC).

`nic_basis` says where each multi-node row's network speed comes from: `measured` (iperf in the
source), `provider_doc` (the cloud provider's stated figure: its documentation quoted in sources.md, or
for p2.xlarge the AWS presentation above) or `assumed` (no number anywhere in the sources: Piz Daint).
The accuracy table reports the multi-node rows without `assumed` separately. Until 2026-12-01 the
p2.xlarge rows carried an assumed 2 Gb/s (nic_basis `assumed`, so calibration did not fit on them).
The report's own rows agree with AWS's figure. In `parameter_server` mode with one PS per node (32, 64, 128
nodes) TensorFlow places each variable whole on one PS (greedy by bytes), so the node holding InceptionV3's
largest variable (affine0/weights, 8.2 MB of 95.4 MB) serves it to the N - 1 other workers and takes their
gradients, besides its own worker's traffic (95.4 - 8.2 MB each way): per step and direction 341 / 604 /
1,128 MB at 32 / 64 / 128 nodes, in steps of 2.48 / 4.11 / 7.60 s measured, i.e. 1.10 / 1.18 / 1.19 Gb/s:
the throughput levels off as that node's link reaches 94-95% of 1.25 Gb/s (the measurement never needs
more than the stated figure).

`stack` names the communication stack each source ran (costopt/perf/stacks.py): TensorFlow parameter
servers and distributed_replicated over gRPC -> grpc; tf_cnn_benchmarks `replicated (with NCCL)`,
Horovod with NCCL and PyTorch/MXNet NCCL all-reduce -> nccl; tf_cnn_benchmarks `replicated without
NCCL` (TensorFlow's own in-process copies and reductions, no NCCL) -> grpc (TensorFlow's runtime).

`measured_basis` (optional column; empty means `throughput`): `throughput` when the source states the
multi-GPU throughput; `efficiency` when it states only a scaling efficiency E at N GPUs and the row's
measured figure is E x N x the row's 1-GPU calibration figure (taken from another published 1-GPU
measurement of that GPU and model, named in the row's notes). The multi-node all-reduce rows come from
tools/sources/published_allreduce.csv (one line per published figure, with where it is in the source);
docs/accuracy.md lists those sources. The 1-GPU calibration of an `efficiency` row is taken at the run's own
per-GPU batch where a public figure exists: GOYAL_2017 and AKIBA_2017 ran 32 images per P100, so X₁ is
TF_BENCH_2017's DGX-1 P100 ResNet-50 figure at batch 32 (195 img/s, synthetic, the May 2017 page's
"Other Results" table), not its batch-64 headline (219 img/s, used until 2026-12-01: 11% too fast per
step at batch 32, which shortened the compute and inflated the communication share). MIKAMI_2018 ran about
32 images per V100 and takes LAMBDA_PT_V1's batch-256 V100 16GB fp16 figure (833 img/s; until 2026-12-02 a held-out
source's 1270 img/s): no public V100 AMP ResNet-50 1-GPU figure at batch 32 was found (2026-12-01), so its compute
is short by the batch effect.

`transport` of a multi-node all-reduce row is what the run's communication library used, which is not always
the adapter the source states: DLPERF_2020's PaddlePaddle BERT multi-node runs export NCCL_IB_DISABLE=1 in
DLPerf's own script, and its MXNet BERT column of report v1 @28c5854b ran in an NGC container without the
InfiniBand user-space driver, so NCCL used its socket transport (tcp) over the stated EDR adapter. The row's
notes give the evidence; the measured figures are unchanged.

`gpus_per_process` (GPUs one training process drives; empty = 1, one process per GPU or not checked) is what
the run's scripts show: tf_cnn_benchmarks (TF_BENCH_2017) runs one process per host with one tower per GPU
(`--num_gpus`), so every TF_BENCH_2017 row has gpus_per_node; the multi-node all-reduce lines carry it in
tools/sources/published_allreduce.csv, with the evidence per framework in PROCESS_EVIDENCE (DLPerf's
PaddlePaddle BERT, OneFlow and TensorFlow 2.3 scripts start one process per node; its PaddlePaddle ResNet-50
script starts one per GPU). The timing model charges (g - 1) x `process_step_us_per_gpu` per step.
Left empty (not checked here): EBUG_DISTTF_2017, TFB_ISSUE29_M40, GOYAL/AKIBA/MIKAMI.

`variable_update` is the tf_cnn_benchmarks mode each TensorFlow row ran, as its source states it (the strategy cell
of published_throughput.csv: TF_BENCH_2017's tables, EBUG_DISTTF_2017's per-row mode and TFB_ISSUE29_M40's issue
text): `parameter_server` or `distributed_replicated` for a ps row, `replicated` for TF_BENCH_2017's all-reduce
rows; a ps row whose mode is not stated stops the build. It sets when the PS pull runs (costopt/perf/timing.py).
Left empty (inferred) for the other sources' all-reduce rows.

`overlap` (the timing model's overlap mode) is left empty (wfbp) for every row: no source states a
mode that waits for all gradients (tf_cnn_benchmarks `--gradient_repacking`; the May 2017 page lists
variable_update and the parameter device only), and TF 1.x dataflow, Horovod and DDP all start each
tensor's reduction when it is ready.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd
from shipped_file import check_or_write, csv_text

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "costopt" / "data" / "validation" / "published.csv"

COLUMNS = [
    "source", "model", "gpu", "gpus_per_node", "nodes", "batch_per_gpu", "precision", "strategy", "nic_gbps",
    "transport", "num_ps", "reduce_on", "single_gpu_samples_per_s", "measured_samples_per_s",
    "tensor_set", "chassis", "overlap", "stack", "nic_basis", "nics_per_node", "gpus_per_process", "measured_basis",
    "variable_update", "system", "data",
    "source_line", "notes",
]

MODELS = {"InceptionV3": "inception_v3", "ResNet-50": "resnet50", "ResNet-152": "resnet152", "AlexNet": "alexnet",
          "VGG16": "vgg16", "ResNet-50 v1.5": "resnet50"}
TF_SETS = {"inception_v3", "resnet50", "alexnet", "vgg16"}  # zoo models with a `tensorflow` tensor set


def _tensor_set(model: str) -> tuple[str, str]:
    if model in TF_SETS:
        return "tensorflow", "tensorflow tensor set (tf_cnn_benchmarks definitions, thesis_method.md §5)"
    return "pytorch", "no tensorflow tensor set in the zoo for this model: pytorch definitions used"


def _row(**kw) -> dict:
    r = {c: "" for c in COLUMNS}
    r.update({k: ("" if v is None else v) for k, v in kw.items()})
    return r


def _num(v) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)  # shortest exact decimal (":g" keeps only 6 digits)


# tf_cnn_benchmarks --variable_update values this file maps (the source's strategy cell starts with one)
PS_MODES = ("parameter_server", "distributed_replicated")


def _variable_update(stated: str, strategy: str, where: str) -> str:
    """The row's `variable_update` column: the mode the source states (PS rows), `replicated` for all-reduce rows."""
    if strategy != "ps":
        return "replicated"
    if stated not in PS_MODES:
        raise SystemExit(f"{where}: PS row whose variable_update is not stated ({stated!r})")
    return stated


# tf_cnn_benchmarks runs one process per host; its GPUs are towers of that process's one graph
TF_BENCH_PROCESS = ("one process per host drives its GPUs: tf_cnn_benchmarks builds one tower per GPU in one "
                    "process (--num_gpus per worker; github.com/tensorflow/benchmarks scripts/tf_cnn_benchmarks)")


def _tf_bench(d: pd.DataFrame) -> list[dict]:
    out = []
    x = d[(d.source_id == "TF_BENCH_2017") & (d.data == "synthetic") & d.strategy.notna()]
    systems = {
        "Tesla P100 (DGX-1)": ("p100-sxm2", "NVIDIA DGX-1 (P100)"),
        "Tesla K80 (GCE n1-standard-32-k80x8)": ("k80", "GCE n1-standard-32-k80x8"),
        "Tesla K80 (AWS p2.8xlarge)": ("k80", "AWS p2.8xlarge"),
    }
    for idx, r in x.iterrows():
        if r.total_gpus < 2:
            continue
        gpu, system = systems[r.gpu]
        model = MODELS[r.model]
        strat_text = str(r.strategy)
        same = x[(x.gpu == r.gpu) & (x.model == r.model) & (x.batch_per_gpu == r.batch_per_gpu)
                 & (x.strategy == r.strategy) & (x.total_gpus == 1)]
        if len(same) != 1:
            raise SystemExit(f"TF_BENCH_2017 line {idx + 2}: no unique 1-GPU row in the same table")
        single = same.throughput_samples_per_s.iloc[0]
        ts, ts_note = _tensor_set(model)
        notes = [f"1-GPU calibration: same table's 1-GPU row ({single:g} img/s)", ts_note,
                 "precision not stated: fp32 presumed (sources.md)"]
        nic, transport, num_ps, basis = "", "", "", ""
        stack = "grpc"  # TensorFlow's runtime unless NCCL is stated
        mode = strat_text.split(" ")[0].split(",")[0]  # the page's variable_update as stated
        if strat_text.startswith("parameter_server"):
            strategy = "ps"
            reduce_on = "cpu" if "local_parameter_device=cpu" in strat_text else "gpu"
            notes.append(f"parameter_server, variables on {'host CPU' if reduce_on == 'cpu' else 'GPUs'} (as stated)")
        elif strat_text.startswith("replicated (with NCCL)"):
            strategy, reduce_on, stack = "ring", "gpu", "nccl"
            notes.append("replicated with NCCL: modelled as a ring all-reduce on GPUs")
        elif strat_text.startswith("replicated without NCCL"):
            strategy, reduce_on = "ring", "gpu"
            notes.append("replicated without NCCL (per-tensor reduce on a GPU over PCIe): modelled as a GPU all-reduce over PCIe")
        elif strat_text.startswith("distributed_replicated"):
            strategy = "ps"
            reduce_on = "gpu"
            notes.append("distributed_replicated: PS shards on the worker instances, local aggregation first; "
                         "local_parameter_device not stated: tf_cnn_benchmarks default gpu assumed")
            if r.nodes > 1:
                nic, transport, basis = 10, "tcp", "provider_doc"
                notes.append("network not stated: p2.8xlarge 10 Gb/s from AWS documentation (sources.md), gRPC over TCP")
            note = str(r.notes)
            num_ps = int(r.nodes)
            if r.nodes == 8 and model == "inception_v3" and r.batch_per_gpu == 64:
                num_ps = 6
            elif r.nodes == 8 and model == "resnet50" and r.batch_per_gpu == 32:
                num_ps = 4
            elif r.nodes == 8 and model == "resnet152":
                num_ps = 4
            if "PS count for bs32 not restated" in note and model == "inception_v3":
                notes.append("PS count not restated for this batch: one per instance assumed")
            else:
                notes.append(f"{num_ps} PS (page: PS count = worker count except listed cases)")
        else:
            raise SystemExit(f"TF_BENCH_2017 line {idx + 2}: unknown strategy {strat_text!r}")
        notes.append(TF_BENCH_PROCESS)
        out.append(_row(
            source="TF_BENCH_2017", model=model, gpu=gpu, gpus_per_node=int(r.gpus_per_node), nodes=int(r.nodes),
            gpus_per_process=int(r.gpus_per_node),
            batch_per_gpu=int(r.batch_per_gpu), precision="fp32", strategy=strategy, nic_gbps=nic, transport=transport,
            num_ps=num_ps, reduce_on=reduce_on, single_gpu_samples_per_s=_num(single),
            measured_samples_per_s=_num(r.throughput_samples_per_s), tensor_set=ts, stack=stack, nic_basis=basis,
            variable_update=_variable_update(mode, strategy, f"TF_BENCH_2017 line {idx + 2}"),
            system=system,
            data="synthetic",
            source_line=idx + 2, notes="; ".join(notes),
        ))
    return out


def _ebug(d: pd.DataFrame) -> list[dict]:
    out = []
    x = d[d.source_id == "EBUG_DISTTF_2017"]
    systems = {
        "Tesla P100 (Piz Daint, 1 GPU/node)": ("p100-pcie", "Piz Daint (Cray XC50)", 80, "assumed",
                                                 "Aries bandwidth not stated: 80 Gb/s assumed (Aries per-node injection is about 10 GB/s; not in the sources), TCP because TF 1.1 gRPC runs over TCP/IP"),
        "Tesla K80 (AWS p2.xlarge, 1 GPU/node)": ("k80", "AWS p2.xlarge", 1.25, "provider_doc",
                                                  "network not stated: p2.xlarge 1.25 Gb/s, AWS's stated figure ('Network "
                                                  "Bandwidth*: 1.25Gbps', *in a placement group; AWS instance-type pages say "
                                                  "only 'High'): J. Kinney (AWS), 'Accelerated Computing on AWS', March 2017, "
                                                  "slide 'P2 GPU Instances' (speakerdeck.com/porcaro33/gpu-fpga-briefing-plus-"
                                                  "march-plus-2017); not a measurement; placement group not stated in the report"),
        "Tesla K80 (AWS p2.8xlarge, 8 GPUs/node)": ("k80", "AWS p2.8xlarge", 10, "provider_doc",
                                                    "network not stated: p2.8xlarge 10 Gb/s from AWS documentation (sources.md)"),
    }
    for idx, r in x.iterrows():
        if r.total_gpus < 2 or r.data != "synthetic":
            continue
        gpu, system, gbps, basis, net_note = systems[r.gpu]
        ones = x[(x.gpu == r.gpu) & (x.total_gpus == 1)]
        syn = ones[ones.data == "synthetic"]
        base = syn if len(syn) else ones
        single = float(base.throughput_samples_per_s.iloc[0])
        cal = f"1-GPU calibration: same table's 1-GPU row ({single:g} img/s, {base.data.iloc[0]})"
        m = re.search(r"\((\d+) PS;", str(r.strategy))
        num_ps = int(m.group(1)) if m else ""
        kind = str(r.strategy).split(" ")[0]
        ts, ts_note = _tensor_set("inception_v3")
        notes = [cal, ts_note, f"{kind} with {num_ps} PS colocated on worker nodes, local_parameter_device=cpu (as stated)",
                 "best configuration over PS counts as reported", "precision not stated: fp32 presumed"]
        multi = r.nodes > 1
        if multi:
            notes.append(net_note + "; gRPC over TCP")
        out.append(_row(
            source="EBUG_DISTTF_2017", model="inception_v3", gpu=gpu, gpus_per_node=int(r.gpus_per_node),
            nodes=int(r.nodes), batch_per_gpu=int(r.batch_per_gpu), precision="fp32", strategy="ps",
            nic_gbps=gbps if multi else "", transport="tcp" if multi else "", num_ps=num_ps, reduce_on="cpu",
            single_gpu_samples_per_s=_num(single), measured_samples_per_s=_num(r.throughput_samples_per_s),
            tensor_set=ts, stack="grpc", nic_basis=basis if multi else "", system=system, data="synthetic",
            variable_update=_variable_update(kind, "ps", f"EBUG_DISTTF_2017 line {idx + 2}"),
            source_line=idx + 2,
            notes="; ".join(notes),
        ))
    return out


def _m40(d: pd.DataFrame) -> list[dict]:
    out = []
    x = d[d.source_id == "TFB_ISSUE29_M40"]
    single = float(x[x.total_gpus == 1].throughput_samples_per_s.iloc[0])
    ts, ts_note = _tensor_set("resnet50")
    for idx, r in x.iterrows():
        if r.total_gpus < 2:
            continue
        multi = r.nodes > 1
        notes = [f"1-GPU calibration: the issue's 1-GPU figure ({single:g} img/s)", ts_note,
                 "precision not stated: fp32 (tf_cnn_benchmarks default)",
                 "local_parameter_device not stated: tf_cnn_benchmarks default gpu assumed"]
        if multi:
            notes.append("distributed_replicated, one PS per machine assumed; Ethernet 9.3 Gb/s measured by iperf "
                         "(10 Gb/s line rate inferred from it; the issue names no adapter), TCP")
        else:
            notes.append("parameter_server on one machine")
        out.append(_row(
            source="TFB_ISSUE29_M40", model="resnet50", gpu="m40", gpus_per_node=int(r.gpus_per_node),
            nodes=int(r.nodes), batch_per_gpu=int(r.batch_per_gpu), precision="fp32", strategy="ps",
            nic_gbps=10 if multi else "", transport="tcp" if multi else "", num_ps=int(r.nodes) if multi else "",
            reduce_on="gpu", single_gpu_samples_per_s=_num(single),
            measured_samples_per_s=_num(r.throughput_samples_per_s), tensor_set=ts, stack="grpc",
            variable_update=_variable_update(str(r.strategy), "ps", f"TFB_ISSUE29_M40 line {idx + 2}"),
            nic_basis="measured" if multi else "", system="4 x Tesla M40 machines", data="not stated (tf_cnn_benchmarks default synthetic)",
            source_line=idx + 2, notes="; ".join(notes),
        ))
    return out


ALLREDUCE_SOURCES = ROOT / "tools" / "sources" / "published_allreduce.csv"
# source GPU name -> (catalog gpu id, system description)
ALLREDUCE_GPUS = {
    "Tesla V100-SXM2-16GB": ("v100-sxm2-16gb", "8 x V100-SXM2-16GB servers (NVLink), 1 x EDR InfiniBand per node"),
    "Tesla P100-SXM2 (Big Basin, NVLink)": ("p100-sxm2", "Facebook Big Basin servers, 8 x P100 (NVLink), 50 Gb/s Ethernet"),
    "Tesla P100 PCIe (MN-1)": ("p100-pcie", "PFN MN-1: 8 x P100 PCIe per node, 2 x FDR InfiniBand"),
    "Tesla V100-SXM2-16GB (ABCI)": ("v100-sxm2-16gb", "AIST ABCI: 4 x V100-SXM2 per node, 2 x EDR InfiniBand"),
}
# framework (prefix of the `framework` cell) -> how many processes its run started, with the evidence; appended to
# the notes of every line whose `gpus_per_process` is filled
PROCESS_EVIDENCE = {
    "PaddlePaddle 1.8.3 (ParallelExecutor": (
        "one process per node drives its GPUs: DLPerf PaddlePaddle/bert/scripts/single_node_train.sh runs one "
        "'python -u ./train.py --is_distributed false' with CUDA_VISIBLE_DEVICES listing every GPU and "
        "multi_node_train.sh one 'train.py --is_distributed true' per node (worker_endpoints: one per node); "
        "PaddlePaddle/models release/1.8 BERT train.py drives them from one ParallelExecutor "
        "(CompiledProgram.with_data_parallel, num_threads = device count; nccl2 mode, num_trainers = nodes)"),
    "PaddlePaddle 1.8.3 (fleet collective)": (
        "one process per GPU: DLPerf PaddlePaddle/resnet50v1.5/scripts/multi_node_train.sh starts train.py through "
        "'python3 -m paddle.distributed.launch' (one trainer process per GPU)"),
    "OneFlow": ("one process per node drives its GPUs: DLPerf OneFlow scripts (rn50_train.sh, bert_base_pretrain.sh) "
                "run one python3 process per node with --gpu_num_per_node"),
    "TensorFlow 2.3": ("one process per node drives its GPUs: DLPerf TensorFlow/resnet50v1.5/scripts "
                       "single_node_train.sh and multi_node_train.sh run one classifier_trainer.py per node with "
                       "runtime.num_gpus = the node's GPUs"),
    "TensorFlow 1.15.2": "one process per GPU (Horovod runs one rank per GPU)",
    "MXNet 1.6.0": "one process per GPU (Horovod runs one rank per GPU)",
    "PyTorch 1.5.0": "one process per GPU (DistributedDataParallel, one rank per GPU)",
}
ALLREDUCE_MODELS = {"ResNet-50 v1.5": "resnet50", "ResNet-50": "resnet50", "BERT-base pretraining": "bert_base"}
# tf_cnn_benchmarks/Keras variable definitions (the zoo's `tensorflow` ResNet-50 set) for TensorFlow stacks
TF_FRAMEWORKS = ("TensorFlow",)


def _allreduce(path: Path = ALLREDUCE_SOURCES) -> list[dict]:
    """Multi-GPU all-reduce rows transcribed from published sources (tools/sources/published_allreduce.csv).

    Two kinds of line, told apart by which figure the source states (column `measured_basis` of the output):
    - `throughput`: the source states the throughput. The compute calibration is the same table's 1-GPU
      figure for the same framework, model, batch and precision; a row without one is an error.
    - `efficiency`: the source states only a scaling efficiency E at N GPUs. The compute calibration X₁ is
      another published 1-GPU figure for that GPU and model (named in the line's `single_gpu_ref`), and the
      measured figure is E × N × X₁: the row checks the model's efficiency at the compute speed X₁.
    """
    d = pd.read_csv(path, dtype={"notes": "string", "nic_basis": "string", "transport": "string", "stack": "string",
                                 "single_gpu_ref": "string", "chassis": "string"})
    out = []
    keys = ["source_id", "framework", "model", "batch_per_gpu", "precision", "gpu"]
    for idx, r in d.iterrows():
        n = int(r.gpus_per_node) * int(r.nodes)
        if n < 2:
            continue
        gpu, system = ALLREDUCE_GPUS[r.gpu]
        model = ALLREDUCE_MODELS[r.model]
        stated_eff = pd.notna(r.scaling_efficiency)
        if stated_eff:
            single = float(r.single_gpu_samples_per_s)
            measured = round(float(r.scaling_efficiency) * n * single, 1)
            basis = "efficiency"
            cal = (f"1-GPU calibration: not in the source; {single:g} samples/s from {r.single_gpu_ref} (an estimate for "
                   f"this run); measured = stated scaling efficiency {float(r.scaling_efficiency):g} x {n} GPUs x "
                   f"{single:g} = {_num(measured)} (derived, not a stated throughput)")
        else:
            same = d
            for k in keys:
                same = same[same[k] == r[k]]
            one = same[(same.gpus_per_node == 1) & (same.nodes == 1)]
            if len(one) != 1:
                raise SystemExit(f"{path.name} line {idx + 2}: no unique 1-GPU row for {r.framework} {r.model} "
                                 f"batch {r.batch_per_gpu}")
            single = float(one.throughput_samples_per_s.iloc[0])
            measured = float(r.throughput_samples_per_s)
            basis = "throughput"
            cal = (f"1-GPU calibration: same table's 1-GPU figure for this framework and batch ({single:g} samples/s, "
                   f"line {one.index[0] + 2})")
        if model == "resnet50" and str(r.framework).startswith(TF_FRAMEWORKS):
            ts, ts_note = "tensorflow", "tensorflow tensor set (ResNet-50 v1 variables; v1.5 has the same tensors)"
        else:
            ts, ts_note = "pytorch", "pytorch tensor set"
        multi = int(r.nodes) > 1
        notes = [cal, f"{r.framework}; {r.framework_stack}: all-reduce on GPUs, modelled as {r.strategy}", ts_note,
                 f"where: {r['where']}", f"reference: {r.reference}"]
        if multi:
            notes.append(f"network as stated: {int(r.nics_per_node)} x {float(r.nic_gbps):g} Gb/s per node, transport {r.transport}")
        if isinstance(r.notes, str) and r.notes:
            notes.append(r.notes)
        per_process = ""
        if pd.notna(r.gpus_per_process):
            per_process = int(r.gpus_per_process)
            why = [v for k, v in PROCESS_EVIDENCE.items() if str(r.framework).startswith(k)]
            if len(why) != 1:
                raise SystemExit(f"{path.name} line {idx + 2}: gpus_per_process given, no evidence for {r.framework!r}")
            notes.append(f"gpus_per_process {per_process}: {why[0]}")
        row = _row(
            source=r.source_id, model=model, gpu=gpu, gpus_per_node=int(r.gpus_per_node), nodes=int(r.nodes),
            batch_per_gpu=int(r.batch_per_gpu), precision=r.precision, strategy=r.strategy,
            nic_gbps=_num(r.nic_gbps) if multi else "", nics_per_node=int(r.nics_per_node) if multi else "",
            transport=r.transport if multi else "", reduce_on="gpu", gpus_per_process=per_process,
            single_gpu_samples_per_s=_num(single), measured_samples_per_s=_num(measured),
            tensor_set=ts, chassis=(r.chassis if isinstance(r.chassis, str) else ""),
            nic_basis=(r.nic_basis if multi else ""), measured_basis=basis, system=system, data=r.data,
            source_line=f"{path.name}:{idx + 2}", notes="; ".join(notes),
        )
        if "stack" in COLUMNS and isinstance(r.stack, str):
            row["stack"] = r.stack
        out.append(row)
    return out


def build(shared: Path) -> str:
    src = shared / "research" / "published_throughput.csv"
    if not src.exists():
        raise SystemExit(f"not found: {src}")
    d = pd.read_csv(src, dtype={"strategy": "string", "notes": "string"})
    rows = _tf_bench(d) + _ebug(d) + _m40(d) + _allreduce()
    return csv_text(rows, COLUMNS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, do not write")
    a = ap.parse_args()
    text = build(a.shared)
    check_or_write(OUT, text, a.check)
    print(f"wrote {OUT} ({text.count(chr(10)) - 1} rows)")


if __name__ == "__main__":
    main()
