"""Validation that covers what the solver recommends: multi-node all-reduce rows, the one-number baseline per
regime, and a scale check against published large ResNet-50 runs."""

import math

import numpy as np
import pandas as pd
import pytest

from costopt.search.api import predict
from costopt.perf.baseline import baseline_predictions, fit_eta, regime_of
from costopt.measure.calibrate import calibrate
from costopt.perf.system import default_system
from costopt.measure.validate import resolve_dataset

# Sources the project must never use (HELPERS.md / DEVELOPERS.md held-out list), as they would appear in a
# source id or a note of the shipped dataset.
HELD_OUT = ("NV_DLE_PT_BERT", "NV_DLE_TF_BERT", "NV_DLE_TF_RN50", "NV_DLE_PT_RN50", "NV_DLE_MX_RN50",
            "horovod/horovod", "Horovod README", "torchtitan", "BLOOM",
            "deep learning AMI", "DLAMI")


def _frame(rows):
    cols = ["source", "gpus_per_node", "nodes", "strategy", "single_gpu_samples_per_s", "measured_samples_per_s"]
    return pd.DataFrame(rows, columns=cols)


def test_regimes_by_nodes_and_strategy():
    f = _frame([("A", 1, 1, "single", 100, 100), ("A", 8, 1, "ring", 100, 700), ("A", 4, 1, "ps", 100, 350),
                ("A", 8, 2, "ps", 100, 1200), ("A", 8, 2, "ring", 100, 1400), ("A", 8, 4, "hierarchical", 100, 3000)])
    assert list(regime_of(f)) == ["", "single node", "single node", "multi-node PS", "multi-node all-reduce",
                                  "multi-node all-reduce"]


def test_eta_is_the_geometric_mean_efficiency():
    # efficiencies 0.9 and 0.4 -> eta = sqrt(0.36) = 0.6 (least squares on log error)
    assert fit_eta(np.array([720.0, 320.0]), np.array([8, 8]), np.array([100.0, 100.0])) == pytest.approx(0.6)
    assert math.isnan(fit_eta(np.array([]), np.array([]), np.array([])))


def test_baseline_loso_never_uses_its_own_source():
    # regime multi-node all-reduce: source A at efficiency 0.9, B at 0.5, C at 0.8 (16 GPUs, 1-GPU 100/s)
    f = _frame([("A", 8, 2, "ring", 100, 1440), ("B", 8, 2, "ring", 100, 800), ("C", 8, 2, "ring", 100, 1280),
                ("A", 8, 1, "ring", 100, 760)])  # single node: the only row of its regime
    ins, loso = baseline_predictions(f)
    eta_all = (0.9 * 0.5 * 0.8) ** (1 / 3)
    assert ins[0] == pytest.approx(eta_all * 1600)
    assert loso[0] == pytest.approx(math.sqrt(0.5 * 0.8) * 1600)  # A from B and C only
    assert loso[1] == pytest.approx(math.sqrt(0.9 * 0.8) * 1600)
    assert ins[3] == pytest.approx(760) and math.isnan(loso[3])  # no other source measures that regime


def test_cross_gpu_baseline_uses_the_given_one_gpu_figure():
    f = _frame([("A", 8, 2, "ring", 100, 1440), ("B", 8, 2, "ring", 100, 800)])
    ins, _ = baseline_predictions(f, np.array([50.0, 50.0]))
    # against 50/s per GPU the efficiencies are 1440/800 = 1.8 and 800/800 = 1.0: eta = sqrt(1.8)
    assert ins == pytest.approx(np.array([1.0, 1.0]) * math.sqrt(1.8) * 16 * 50)


def test_shipped_dataset_has_multi_node_all_reduce_rows_with_their_provenance():
    d = pd.read_csv(resolve_dataset("published"), dtype=str, keep_default_na=False)
    nodes = d.nodes.astype(int)
    ar = d[(nodes > 1) & d.strategy.isin(["ring", "hierarchical"])]
    assert len(ar) >= 20
    for _, r in ar.iterrows():
        assert r.source_line and r.notes and r.nic_gbps and r.transport and r.nic_basis
        assert "1-GPU calibration" in r.notes
    text = " ".join(d.source) + " " + " ".join(d.notes)
    for banned in HELD_OUT:
        assert banned.lower() not in text.lower(), banned


# Published scaling efficiency of data-parallel ResNet-50 on ImageNet, all-reduce on GPUs, at 256-2,176 GPUs,
# as tabulated in NVIDIA's blog on Mikami et al. 2018 ("SONY Breaks ResNet-50 Training Record with NVIDIA V100
# Tensor Core GPUs", developer.nvidia.com/blog, Nov 2018): Goyal et al. 256 x P100 over 50 Gb/s Ethernet ~90%;
# Akiba et al. 1,024 x P100 over InfiniBand FDR 80%; Jia et al. 2,048 x P40 over 100 Gb/s Ethernet 87.9%;
# Mikami et al. 1,088 x V100 over 2 x InfiniBand EDR 91.62%. NDR (400 Gb/s) carries 2-8x those links, so an
# NCCL ResNet-50 run on 1,024 H100 below 50% would contradict every one of them. Efficiency here is the
# model's own: throughput / (N x its 1-GPU throughput at the same batch).
N_NODES, GPUS_PER_NODE, BATCH, PRECISION = 128, 8, 128, "amp_bf16"
MIN_EFFICIENCY = 0.50


def _efficiency(system, strategy):
    d = predict("resnet50", "h100-sxm", GPUS_PER_NODE, N_NODES, "ib-ndr", strategy, batch_per_gpu=BATCH,
                precision=PRECISION, system=system)
    return d["scaling_efficiency"]


@pytest.mark.parametrize("strategy", ["ring", "hierarchical"])
def test_default_system_scales_nccl_resnet50_to_1024_h100_over_ndr(strategy):
    assert _efficiency(default_system(), strategy) >= MIN_EFFICIENCY


@pytest.fixture(scope="module")
def calibrated_system():
    """The parameters `costopt calibrate published` writes (fit on all shipped rows)."""
    return calibrate("published", with_loso=False).fit.params


@pytest.mark.parametrize("strategy", ["ring", "hierarchical"])
def test_calibrated_system_scales_nccl_resnet50_to_1024_h100_over_ndr(calibrated_system, strategy):
    assert _efficiency(calibrated_system, strategy) >= MIN_EFFICIENCY


# ---------------------------------------------------------------------------------------------------
# the measurement-file columns the multi-node rows need

HEADER = ("source,model,gpu,gpus_per_node,nodes,batch_per_gpu,precision,strategy,nic_gbps,transport,num_ps,"
          "reduce_on,single_gpu_samples_per_s,measured_samples_per_s")


def _write(tmp_path, lines, extra_header=""):
    p = tmp_path / "m.csv"
    p.write_text("\n".join([HEADER + extra_header, *lines]) + "\n", encoding="utf-8")
    return p


def test_nics_per_node_multiplies_the_node_link(tmp_path):
    """Two 10 Gb/s TCP adapters per node are one 20 Gb/s adapter to the model (B_nic = rate x adapters), and more
    than one: 2 MN-1-shaped nodes (8 P100 PCIe, chassis val-mn1-p100-8 takes 2 adapters), ring, VGG16 (large
    gradients, so the NIC term shows)."""
    from costopt.measure.validate import validate

    def pred(gbps, k):
        row = (f"T,vgg16,p100-pcie,8,2,64,fp32,ring,{gbps},tcp,,gpu,150,1000,val-mn1-p100-8,{k}")
        p = _write(tmp_path, [row], ",chassis,nics_per_node")
        return validate(p).frame.predicted_samples_per_s.iloc[0]

    one, two, fat, empty = pred(10, 1), pred(10, 2), pred(20, 1), pred(10, "")
    assert two == pytest.approx(fat, rel=1e-12)
    assert empty == pytest.approx(one, rel=1e-12)  # empty: one adapter
    assert two > one * 1.2


@pytest.mark.parametrize("value", ["0", "two", "1.5"])
def test_bad_nics_per_node_names_the_column(tmp_path, value):
    from costopt.core.errors import InputError
    from costopt.measure.validate import read_measurements
    p = _write(tmp_path, [f"T,inception_v3,p100-pcie,1,2,64,fp32,ring,10,tcp,,gpu,200,300,{value}"], ",nics_per_node")
    with pytest.raises(InputError, match="nics_per_node"):
        read_measurements(p)


def test_stated_efficiency_rows_are_predicted_not_fitted(tmp_path):
    """A row marked measured_basis=efficiency moves no fitted parameter, however far off it is."""
    rows = [f"A,inception_v3,p100-pcie,1,{m},64,fp32,ring,10,tcp,,gpu,200,{v}" for m, v in ((2, 330), (4, 600), (8, 1100))]
    base = _write(tmp_path, [r + "," for r in rows], ",measured_basis")
    far = "B,inception_v3,p100-pcie,1,16,64,fp32,ring,10,tcp,,gpu,200,20,efficiency"
    (tmp_path / "b").mkdir()
    withrow = _write(tmp_path / "b", [r + "," for r in rows] + [far], ",measured_basis")
    kw = dict(names=("tcp_efficiency",), with_loso=False, max_iter=10)
    a = calibrate(base, **kw)
    b = calibrate(withrow, **kw)
    assert b.fit.n_rows == a.fit.n_rows == 3
    assert b.fit.params.tcp_efficiency == pytest.approx(a.fit.params.tcp_efficiency, rel=1e-9)
    c = calibrate(withrow, fit_efficiency_rows=True, **kw)
    assert c.fit.n_rows == 4 and c.fit.params.tcp_efficiency < a.fit.params.tcp_efficiency


def test_efficiency_rows_are_stated_efficiency_times_n_times_the_calibration_figure():
    """tools/sources/published_allreduce.csv: MIKAMI_2018 91.62% at 1,088 V100 (NVIDIA blog table), X1 = 833 img/s
    (LAMBDA_PT_V1 V100 16GB fp16 ResNet-50 1-GPU, batch 256); AKIBA_2017 80% at 1,024 P100, X1 = 195 (TF_BENCH_2017 P100 at the run's per-GPU
    batch 32, 'Other Results'); GOYAL_2017 ~90% at 256 P100, the same X1."""
    d = pd.read_csv(resolve_dataset("published"), dtype=str, keep_default_na=False).set_index("source")
    assert float(d.loc["MIKAMI_2018", "measured_samples_per_s"]) == pytest.approx(0.9162 * 1088 * 833, abs=0.06)
    assert float(d.loc["AKIBA_2017", "measured_samples_per_s"]) == pytest.approx(0.80 * 1024 * 195, abs=0.06)
    assert float(d.loc["GOYAL_2017", "measured_samples_per_s"]) == pytest.approx(0.90 * 256 * 195, abs=0.06)
    assert float(d.loc["GOYAL_2017", "single_gpu_samples_per_s"]) == 195 and d.loc["GOYAL_2017", "batch_per_gpu"] == "32"
    for s in ("MIKAMI_2018", "AKIBA_2017", "GOYAL_2017"):
        assert d.loc[s, "measured_basis"] == "efficiency"
        assert "derived, not a stated throughput" in d.loc[s, "notes"]
    assert int(d.loc["MIKAMI_2018", "nics_per_node"]) == 2 and d.loc["MIKAMI_2018", "nic_gbps"] == "100"
