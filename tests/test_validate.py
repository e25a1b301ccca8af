"""`costopt validate`: measurement-file errors, a row reproduced by hand, the shipped dataset."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costopt.cli import app
from costopt.hardware.catalog import load_catalog
from costopt.core.errors import InputError
from costopt.measure.validate import COLUMNS, read_measurements, validate

runner = CliRunner()
HEADER = ",".join(COLUMNS)
GOOD = "T,resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,384"


def _csv(tmp_path: Path, *lines: str, header: str = HEADER) -> Path:
    p = tmp_path / "m.csv"
    p.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("line, column, words", [
    ("T,resnet50,k80,8,1,sixty,fp32,ring,,,,gpu,51.5,384", "batch_per_gpu", "not a number"),
    ("T,resnet99,k80,8,1,64,fp32,ring,,,,gpu,51.5,384", "model", "unknown model"),
    ("T,resnet50,k80,8,1,64,fp32,allreduce,,,,gpu,51.5,384", "strategy", "unknown value"),
    ("T,resnet50,k80,8,2,64,fp32,ring,,,,gpu,51.5,384", "nic_gbps", "empty"),
    ("T,resnet50,k80,8,2,64,fp32,ring,10,udp,,gpu,51.5,384", "transport", "unknown value"),
    ("T,resnet50,k80,8,1,64,fp32,ring,,,,gpu,51.5,-3", "measured_samples_per_s", "positive"),
    ("T,resnet50,k80,8,1,64,fp32,ps,,,1e30,gpu,51.5,384", "num_ps", "at most 1,000,000,000"),
    ("T,resnet50,k80,8,1,1e30,fp32,ring,,,,gpu,51.5,384", "batch_per_gpu", "at most 1,000,000,000"),
])
def test_format_errors_name_line_and_column(tmp_path, line, column, words):
    p = _csv(tmp_path, GOOD, line)
    with pytest.raises(InputError) as exc:
        read_measurements(p)
    msg = str(exc.value)
    assert "line 3" in msg and f"column '{column}'" in msg and words in msg


def test_missing_column_and_unknown_gpu(tmp_path):
    p = _csv(tmp_path, GOOD, header=HEADER.replace(",num_ps", ""))
    with pytest.raises(InputError, match="missing column.*'num_ps'"):
        read_measurements(p)
    p = _csv(tmp_path, GOOD.replace(",k80,", ",z9000,"))
    with pytest.raises(InputError, match="line 2, column 'gpu': unknown gpu 'z9000'"):
        validate(p)


def test_cli_format_error_exits_2_without_traceback(tmp_path):
    p = _csv(tmp_path, GOOD.replace(",64,", ",6x4,"))
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 2
    assert "line 2" in r.output and "batch_per_gpu" in r.output and "Traceback" not in r.output


def test_row_reproduced_by_hand(tmp_path):
    """2 nodes x 1 P100 (PCIe Gen3), flat ring over 10 Gb/s TCP, compute calibrated to 200 img/s."""
    from costopt.perf.system import default_system
    from costopt.perf.workload import load_workload
    p = _csv(tmp_path, "T,inception_v3,p100-pcie,1,2,64,fp32,ring,10,tcp,,gpu,200,300")
    sysf = tmp_path / "s.toml"
    sysf.write_text("[overlap]\nbucket_mb = 1e9\n")  # one bucket: one latency term
    res = validate(p, system=sysf)
    pred = res.frame["predicted_samples_per_s"].iloc[0]
    d = default_system()
    S = load_workload("inception_v3").tensors("pytorch").total_gradient_bytes
    t_compute = 64 / 200.0  # one GPU runs at exactly the given 200 img/s
    V = 2 * (2 - 1) / 2 * S
    t_bw = V / (10e9 / 8 * d.tcp_efficiency) / d.overlap_efficiency  # the NIC is the slowest ring link
    lat = 2 * (2 - 1) * (7.5e-6 + d.tcp_message_overhead_us * 1e-6)  # ad-hoc TCP NIC: 7.5 us adapter
    ts = load_workload("inception_v3").tensors("pytorch")
    # one bucket, ready at fraction r of backward: t_iter = T_f + max(T_b, r*T_b + stream) + T_step
    r = float(ts.buckets(1e18)[1][-1])
    est = load_workload("inception_v3").compute(load_catalog().gpus["p100-pcie"], "fp32", 64, load_catalog())
    t_b = est.backward_s * t_compute / est.iteration_s  # zoo phases scaled to the calibrated 1-GPU time
    # nccl stack (the default for a GPU all-reduce): backward stretched by k x the overlapped stream,
    # and a per-step sync cost c x log2(N), N = 2 (costopt/perf/stacks.py)
    t_b2 = t_b + d.nccl_compute_slowdown * min(t_b, t_bw + lat)
    # and the wait for the slower of 2 GPUs: cv x t_compute x E[max of 2 standard normals] = 1/sqrt(pi)
    t_iter = (t_compute - t_b + max(t_b2, r * t_b2 + t_bw + lat) + d.nccl_sync_us * 1e-6 * 1.0
              + d.straggler_cv * t_compute * 0.5641895835)
    assert pred == pytest.approx(2 * 64 / t_iter, rel=1e-6)
    assert res.frame["error_pct"].iloc[0] == pytest.approx((pred - 300) / 300 * 100)


def test_shipped_dataset_json_and_gate():
    r = runner.invoke(app, ["validate", "published", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["summary"]["n"] == len(d["rows"]) > 50
    row = d["rows"][0]
    assert {"source", "notes", "predicted_samples_per_s", "error_pct"} <= set(row)
    assert set(d["summary"]) == {"n", "median_abs_error_pct", "p90_abs_error_pct", "max_abs_error_pct",
                                 "inside_80pct_range_share"}
    assert 0.0 <= d["summary"]["inside_80pct_range_share"] <= 1.0
    for row in d["rows"]:
        assert row["predicted_low_samples_per_s"] <= row["predicted_samples_per_s"] <= row["predicted_high_samples_per_s"]
    assert "TF_BENCH_2017" in d["by_source"] and "ps" in d["by_strategy"]
    r = runner.invoke(app, ["validate", "published", "--max-median-error", "0.01"])
    assert r.exit_code == 1


def test_uncalibrated_accuracy_target_on_the_shipped_multi_node_rows():
    """Issue target, uncalibrated defaults: median |error| <= 10% on the shipped multi-node rows
    (costopt/data/validation/published.csv: TF_BENCH_2017 AWS distributed K80 table, EBUG_DISTTF_2017
    Piz Daint / p2.xlarge / p2.8xlarge tables, TFB_ISSUE29_M40). README Accuracy reports 5.0%."""
    from costopt.measure.validate import error_stats
    f = validate("published").frame
    # the PS sources named above (the multi-node all-reduce rows added later are scored per regime against the
    # one-number baseline in tools/accuracy_table.py and tests/test_validation_regimes.py)
    multi = f[(f.nodes > 1) & f.source.isin(["TF_BENCH_2017", "EBUG_DISTTF_2017", "TFB_ISSUE29_M40"])]
    assert len(multi) == 34
    assert error_stats(multi.error_pct)["median_abs_error_pct"] <= 10.0
    assert runner.invoke(app, ["validate", "published", "--max-median-error", "10"]).exit_code == 0


@pytest.mark.xfail(strict=True, reason=(
    "known miss, published form: on 8 K80 in one AWS p2.8xlarge the model ranks ResNet-50 PS (GPU variables, "
    "one PS, distributed_replicated) ahead of `replicated` without NCCL, 392.2 vs 386.0 img/s predicted with the "
    "defaults fitted on 190 rows with the PS pull placed per variable_update mode (2026-12-01; 391.9 vs 385.2 before "
    "it, 393.4 vs 386.7 before the p2.xlarge rows were fitted, 416.2 vs 411.2 before the straggler wait and host "
    "cost), where TF_BENCH_2017 measured ring 384 vs PS 378; ResNet-152 is ranked right (148.1 vs 145.6; measured "
    "149 vs 146). "
    "One node: "
    "no gRPC transfer, so the stack terms do not move it. Stays failing until the model ranks both as measured."))
def test_ps_vs_ring_ranking_matches_where_measured_on_one_cluster():
    """AWS p2.8xlarge, 8 K80 on one instance (costopt/data/validation/published.csv, source TF_BENCH_2017):
    measured `replicated` (ring rows) ahead of distributed_replicated with one PS (GPU variables) for
    ResNet-50 (384 vs 378 img/s) and ResNet-152 (149 vs 146). Each row is predicted as published, with
    its own table's 1-GPU figure (ResNet-50 51.5 ring / 52.4 PS, ResNet-152 19.7 / 19.4)."""
    f = validate("published").frame
    f = f[(f.source == "TF_BENCH_2017") & (f.gpu == "k80") & (f.nodes == 1) & (f.gpus_per_node == 8)
          & (f.system == "AWS p2.8xlarge")]
    pairs = 0
    for (model, batch), g in f.groupby(["model", "batch_per_gpu"]):
        ring = g[g.strategy == "ring"]
        ps = g[(g.strategy == "ps") & (g.reduce_on == "gpu") & (g.num_ps.astype(str) != "")]
        if len(ring) != 1 or len(ps) != 1:
            continue
        pairs += 1
        measured_ring_ahead = float(ring.measured_samples_per_s.iloc[0]) > float(ps.measured_samples_per_s.iloc[0])
        predicted_ring_ahead = float(ring.predicted_samples_per_s.iloc[0]) > float(ps.predicted_samples_per_s.iloc[0])
        assert measured_ring_ahead  # both pairs: ring measured ahead (384 > 378, 149 > 146)
        assert predicted_ring_ahead == measured_ring_ahead, (model, batch)
    assert pairs == 2


def test_build_validation_is_reproducible():
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    shared = root.parent / "shared" / "research" / "published_throughput.csv"
    if not shared.exists():
        pytest.skip("shared/research not available")
    r = subprocess.run([sys.executable, str(root / "tools" / "build_validation.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_overlap_column_selects_the_timing_models_mode(tmp_path):
    header = HEADER + ",overlap"
    row = "T,inception_v3,p100-pcie,1,4,64,fp32,ring,10,tcp,,gpu,200,300"
    p = _csv(tmp_path, row + ",wfbp", row + ",none", row + ",full", row + ",", header=header)
    pred = validate(p).frame["predicted_samples_per_s"].to_numpy()
    assert pred[2] >= pred[0] > pred[1]  # full >= wfbp > none
    assert pred[3] == pytest.approx(pred[0])  # empty = wfbp
    bad = _csv(tmp_path, row + ",sometimes", header=header)
    with pytest.raises(InputError, match="line 2, column 'overlap'"):
        read_measurements(bad)


def test_straggler_term_matches_its_formula(tmp_path):
    from costopt.perf.system import default_system, prior_system
    from costopt.perf.timing import expected_max_normal
    # prior: the H200 step-to-step spread, median of 61 records (system_priors.toml); the default is fitted
    assert prior_system().straggler_cv == 0.0365
    assert 0.0 < default_system().straggler_cv < 0.1
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-4)  # exact for n = 2
    assert expected_max_normal(4) == pytest.approx(1.0293754, rel=1e-4)  # tabulated (Tippett 1925)
    p = _csv(tmp_path, "T,inception_v3,p100-pcie,1,4,64,fp32,ring,10,tcp,,gpu,200,300")
    base = validate(p, system=default_system().with_updates(straggler_cv=0.0)).frame["predicted_samples_per_s"].iloc[0]
    slow = validate(p, system=default_system().with_updates(straggler_cv=0.05)).frame["predicted_samples_per_s"].iloc[0]
    t_compute = 64 / 200.0
    assert 4 * 64 / slow == pytest.approx(4 * 64 / base + 0.05 * t_compute * 1.0293754, rel=1e-6)


def test_sync_term_is_zero_by_default_and_adds_n_minus_1_alpha(tmp_path):
    from costopt.perf.system import default_system
    assert default_system().sync_us_per_gpu == 0.0
    p = _csv(tmp_path, "T,inception_v3,p100-pcie,1,4,64,fp32,ring,10,tcp,,gpu,200,300",
             "T,inception_v3,p100-pcie,2,1,64,fp32,ring,,,,gpu,200,300")
    base = validate(p).frame["predicted_samples_per_s"].to_numpy()
    slow = validate(p, system=default_system().with_updates(sync_us_per_gpu=2000.0)).frame["predicted_samples_per_s"].to_numpy()
    # t_sync = (N - 1) · α_sync, added to the iteration as a serial term
    assert 4 * 64 / slow[0] == pytest.approx(4 * 64 / base[0] + 3 * 2e-3, rel=1e-9)
    assert 2 * 64 / slow[1] == pytest.approx(2 * 64 / base[1] + 1 * 2e-3, rel=1e-9)


def test_gpus_per_process_column_charges_one_process_per_step(tmp_path):
    from costopt.perf.system import default_system
    header = HEADER + ",gpus_per_process"
    row = "T,inception_v3,p100-pcie,4,1,64,fp32,ring,,,,gpu,200,300"
    p = _csv(tmp_path, row + ",4", row + ",1", row + ",", header=header)
    system = default_system().with_updates(process_step_us_per_gpu=3000.0)
    pred = validate(p, system=system).frame["predicted_samples_per_s"].to_numpy()
    # one process drives the 4 GPUs: (4 - 1) x 3 ms more per step than one process per GPU
    assert 4 * 64 / pred[0] == pytest.approx(4 * 64 / pred[1] + 3 * 3e-3, rel=1e-9)
    assert pred[2] == pred[1]  # empty = 1
    # without the column: the same prediction as 1 per process
    plain = validate(_csv(tmp_path, row), system=system).frame["predicted_samples_per_s"].iloc[0]
    assert plain == pred[1]


@pytest.mark.parametrize("value, words", [("0", "positive"), ("2.5", "whole number"), ("x", "not a number"),
                                          ("8", "8 GPUs per process, but the row has 4 GPUs per node")])
def test_gpus_per_process_column_rejects_bad_values(tmp_path, value, words):
    header = HEADER + ",gpus_per_process"
    p = _csv(tmp_path, "T,inception_v3,p100-pcie,4,1,64,fp32,ring,,,,gpu,200,300," + value, header=header)
    with pytest.raises(InputError) as exc:
        read_measurements(p)
    assert "line 2, column 'gpus_per_process'" in str(exc.value) and words in str(exc.value)
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 2 and "gpus_per_process" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("row, value, words", [
    ("T,inception_v3,k80,4,2,64,fp32,ps,10,tcp,2,cpu,30,200", "async", "unknown value 'async'"),
    ("T,inception_v3,k80,4,2,64,fp32,ps,10,tcp,2,cpu,30,200", "replicated", "'replicated' is an all-reduce mode"),
    ("T,inception_v3,k80,4,2,64,fp32,ring,10,tcp,,gpu,30,200", "distributed_replicated", "parameter-server mode"),
])
def test_variable_update_column_rejects_bad_values(tmp_path, row, value, words):
    header = HEADER + ",variable_update"
    p = _csv(tmp_path, row + "," + value, header=header)
    with pytest.raises(InputError) as exc:
        read_measurements(p)
    assert "line 2, column 'variable_update'" in str(exc.value) and words in str(exc.value)
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 2 and "variable_update" in r.stderr and "Traceback" not in r.stderr


def test_variable_update_column_empty_means_parameter_server(tmp_path):
    header = HEADER + ",variable_update"
    row = "T,inception_v3,k80,4,2,64,fp32,ps,10,tcp,2,cpu,30,200"
    p = _csv(tmp_path, row + ",parameter_server", row + ",", row + ",distributed_replicated", header=header)
    _, rows, _ = read_measurements(p)
    assert [r.variable_update for r in rows] == ["parameter_server", "parameter_server", "distributed_replicated"]
    pred = validate(p).frame["predicted_samples_per_s"].to_numpy()
    assert pred[0] == pred[1]
    plain = validate(_csv(tmp_path, row)).frame["predicted_samples_per_s"].iloc[0]
    assert plain == pred[0]  # no column: parameter_server


def test_a_link_no_chassis_can_take_is_blamed_on_nic_gbps(tmp_path):
    p = _csv(tmp_path, "T,resnet50,k80,8,2,64,fp32,ring,5000,tcp,,gpu,51.5,700")
    r = runner.invoke(app, ["validate", str(p)])
    assert r.exit_code == 2
    assert "line 2, column 'nic_gbps'" in r.stderr and "5000 Gb/s tcp" in r.stderr
    assert "Traceback" not in r.stderr


def test_ps_sync_counts_gpus_of_a_node_and_workers(tmp_path):
    """PS: one worker process per node (GPUs are its towers): t_sync = (G-1)·α_gpu + (M-1)·α_worker.
    An all-reduce on the same GPUs pays (N-1)·α_gpu and no worker term."""
    from costopt.perf.system import default_system
    assert default_system().sync_us_per_worker == 0.0
    p = _csv(tmp_path, "T,inception_v3,k80,4,3,64,fp32,ps,10,tcp,3,cpu,30,300",
             "T,inception_v3,k80,4,3,64,fp32,ring,10,tcp,,gpu,30,300")
    base = validate(p).frame["predicted_samples_per_s"].to_numpy()
    sysp = default_system().with_updates(sync_us_per_gpu=2000.0, sync_us_per_worker=500.0)
    slow = validate(p, system=sysp).frame["predicted_samples_per_s"].to_numpy()
    n_img = 12 * 64
    # G = 4, M = 3: PS 3·2 ms + 2·0.5 ms = 7 ms; ring (N = 12) 11·2 ms = 22 ms
    assert n_img / slow[0] == pytest.approx(n_img / base[0] + 3 * 2e-3 + 2 * 0.5e-3, rel=1e-9)
    assert n_img / slow[1] == pytest.approx(n_img / base[1] + 11 * 2e-3, rel=1e-9)


def test_ps_applies_pipeline_with_the_push_and_one_apply_follows_it(tmp_path):
    """Each of the W workers' applies runs when its gradient arrives: when the push (network) is the
    slower stage, only the last apply of the largest shard is exposed, S_max·3/B_mem."""
    from costopt.perf.system import default_system
    from costopt.perf.workload import load_workload
    # 4 nodes x 1 K80, one PS (the whole model on node 0: S_max = S), variables on the host CPU
    p = _csv(tmp_path, "T,inception_v3,k80,1,4,64,fp32,ps,10,tcp,1,cpu,30,100")
    fast = validate(p, system=default_system().with_updates(host_memory_gb_per_s=40.0)).frame
    slow = validate(p, system=default_system().with_updates(host_memory_gb_per_s=20.0)).frame
    S = load_workload("inception_v3").tensors("pytorch").total_gradient_bytes  # the file's default tensor set
    # push stage: node 0 receives 3·S over 10 Gb/s x 0.7 (0.33 s) > 4 applies of S at 20 GB/s/3 (0.057 s)
    t_fast = 4 * 64 / fast["predicted_samples_per_s"].iloc[0]
    t_slow = 4 * 64 / slow["predicted_samples_per_s"].iloc[0]
    assert t_slow - t_fast == pytest.approx(S * 3 * (1 / 20e9 - 1 / 40e9), rel=1e-6)


def test_max_median_error_must_be_a_finite_number():
    r = runner.invoke(app, ["validate", "published", "--max-median-error", "nan"])
    assert r.exit_code == 2 and "--max-median-error must be a finite number >= 0, got nan" in r.stderr


def test_calibrate_output_checked_before_the_fit(tmp_path):
    r = runner.invoke(app, ["calibrate", "published", "-o", str(tmp_path / "nodir" / "s.toml"), "--format", "json"])
    assert r.exit_code == 2 and "does not exist" in r.stderr
    assert json.loads(r.stdout)["reason"] == "input"
    r = runner.invoke(app, ["calibrate", "published", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.stderr
