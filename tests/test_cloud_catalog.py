"""Cloud catalogs: one source for instance network speed and capacity caps (costopt/hardware/cloud_facts.py,
costopt/data/cloud_instances.toml), shared by the shipped AWS catalog and `catalog import`; the cap
bounds rented designs and the output says when it bound; `catalog show` lists instances with $/h."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import costopt
from costopt.hardware.catalog import load_catalog
from costopt.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"
SAMPLE_CSV = ROOT / "catalogs" / "aws-vms-sample.csv"

# Sustained (baseline) network, Gb/s, as AWS's DescribeInstanceTypes data gives it (tabulated in
# aws/karpenter-provider-aws zz_generated.bandwidth.go, commit 01a436f, in Mb/s): written here by hand.
PUBLISHED_GBPS = {"p3.2xlarge": 2.5, "p3.8xlarge": 10, "p3.16xlarge": 25, "p3dn.24xlarge": 100, "p4d.24xlarge": 400,
                  "p4de.24xlarge": 400, "p5.48xlarge": 3200, "g5.xlarge": 2.5, "g5.24xlarge": 50, "g6.xlarge": 2.5,
                  "g6e.12xlarge": 100}


def cli(*args, columns=120):
    r = CliRunner().invoke(app, [*map(str, args)], env={"COLUMNS": str(columns)})
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("imp") / "aws.toml"
    rc, text = cli("catalog", "import", SAMPLE_CSV, "-o", out, "--price-date", "2025-03-17")
    assert rc == 0, text
    return out


def test_import_and_shipped_catalog_agree_on_network(imported):
    imp, shipped = load_catalog(imported), load_catalog(AWS)
    common = sorted(set(imp.instances) & set(shipped.instances))
    assert set(PUBLISHED_GBPS) <= set(common)  # every instance of the sample price list is in both
    for iid in common:
        a, b = imp.instances[iid], shipped.instances[iid]
        assert (a.network_gbps, a.transport) == (b.network_gbps, b.transport), iid
        net_a = imp.nics_for(imp.chassis_by_id[iid])[0]
        net_b = shipped.nics_for(shipped.chassis_by_id[iid])[0]
        assert net_a.line_rate_gbps == net_b.line_rate_gbps and net_a.source == net_b.source, iid
    for iid, gbps in PUBLISHED_GBPS.items():
        assert shipped.instances[iid].network_gbps == gbps, iid
    assert shipped.instances["p5.48xlarge"].transport == "rdma" and shipped.instances["g5.xlarge"].transport == "tcp"


def test_one_source_neither_file_states_a_known_network():
    facts = tomllib.loads((ROOT / "costopt" / "data" / "cloud_instances.toml").read_text())["aws"]
    known = {e["id"] for e in facts["instance"]}
    for e in facts["instance"]:  # every figure carries its source and date
        assert e["source"].strip() and str(e["date"]).strip() and e["network_gbps"] > 0, e["id"]
    raw = tomllib.loads(AWS.read_text())
    assert raw["catalog"]["provider"] == "aws"
    for inst in raw["instance"]:
        assert "network_gbps" not in inst and "max_instances" not in inst, inst["id"]
        assert inst["id"] in known, inst["id"]


def test_import_of_an_unknown_type_is_an_estimate(tmp_path):
    csv = tmp_path / "vms.csv"
    csv.write_text(SAMPLE_CSV.read_text().splitlines()[0] + "\ng6.2xlarge,L4,1,8,32,,0.9776,,us-east-1,us-east-1a\n")
    out = tmp_path / "x.toml"
    rc, text = cli("catalog", "import", csv, "-o", out, "--price-date", "2025-03-17", "--default-network-gbps", "7")
    assert rc == 0, text
    inst = load_catalog(out).instances["g6.2xlarge"]
    assert inst.network_gbps == 7 and inst.estimates == ["network_gbps"]
    assert "network_gbps = 7" in out.read_text()


def test_cap_defaults_documented_or_estimated():
    cat = load_catalog(AWS)
    p5e, g5 = cat.chassis_by_id["p5e.48xlarge"], cat.chassis_by_id["g5.xlarge"]
    # AWS EC2 User Guide: at most 64 instances per Capacity Block; p5e is sold as Capacity Blocks, g5 is not
    assert p5e.max_nodes == 64 and "max_nodes" not in p5e.estimates and "Capacity Block" in p5e.max_nodes_source
    assert g5.max_nodes == 64 and "max_nodes" in g5.estimates and "estimate" in g5.max_nodes_source


@pytest.fixture(scope="module")
def per_job():
    # AWS, per job (90 epochs of ImageNet-1k): before the cap this picked 256 x p5e.48xlarge = 2,048 H200s
    return costopt.solve(200_000, "inception_v3", catalog=AWS, epochs=90, dataset_size=1_281_167, gpus=["h200-sxm"],
                         top=3)


def test_capacity_cap_binds_and_output_says_so(per_job):
    b = per_job.best
    assert b["chassis"] == "p5e.48xlarge" and b["nodes"] == 64 and b["total_gpus"] == 64 * 8
    assert all(d["nodes"] <= 64 for d in [b] + per_job.alternatives + per_job.best_per_gpu)
    cap = per_job.to_json_dict()["capacity"]
    assert cap["bound"] is True and cap["max_instances"] == 64 and cap["estimate"] is False
    assert "the cap bound" in cap["sentence"] and "Capacity Block" in cap["sentence"]


def test_max_instances_option_and_catalog_override(tmp_path):
    res = costopt.solve(200_000, "inception_v3", catalog=AWS, epochs=90, dataset_size=1_281_167, gpus=["h200-sxm"],
                        top=1, max_instances=16)
    assert res.best["nodes"] == 16 and res.capacity["bound"] and res.capacity["source"] == "--max-instances 16"
    own = tmp_path / "cap.toml"
    own.write_text(AWS.read_text().replace(
        'id = "p5e.48xlarge"', 'id = "p5e.48xlarge"\nmax_instances = 8\nmax_instances_source = "our account quota, 2026"'))
    cat = load_catalog(own)
    assert cat.chassis_by_id["p5e.48xlarge"].max_nodes == 8
    res = costopt.solve(200_000, "inception_v3", catalog=cat, epochs=90, dataset_size=1_281_167, gpus=["h200-sxm"],
                        top=1)
    assert res.best["nodes"] == 8 and "our account quota" in res.capacity["sentence"]
    own.write_text(AWS.read_text().replace('id = "p5e.48xlarge"', 'id = "p5e.48xlarge"\nmax_instances = 8'))
    rc, text = cli("catalog", "show", own)
    assert rc == 2 and "max_instances_source" in text


def test_cli_solve_prints_the_cap_and_rejects_it_on_owned():
    rc, text = cli("solve", "--budget", "200000", "--model", "inception_v3", "--catalog", AWS, "--epochs", "90",
                   "--dataset-size", "1281167", "--gpu", "h200-sxm", "--top", "2")
    assert rc == 0, text
    assert "8x64=512" in text and "Capacity: the pick rents 64 x p5e.48xlarge" in " ".join(text.split())
    rc, text = cli("solve", "--budget", "200000", "--model", "inception_v3", "--max-instances", "4")
    assert rc == 2 and "not a cloud catalog" in text


def test_catalog_show_cloud_lists_instances_with_hourly_price():
    rc, text = cli("catalog", "show", AWS)
    assert rc == 0, text
    assert "USD/h" in text and "net Gb/s" in text and "max inst." in text
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("p5e.48xlarge")]
    # numbers with a thousands separator, like every table (3,200 Gb/s)
    assert lines and "$84.80" in lines[0] and "3,200" in lines[0] and "rdma" in lines[0] and " 64 " in lines[0]
    table = text.split("GPUs")[0]
    assert "…" not in table  # nothing cut at 120 columns
    rc, js = cli("catalog", "show", AWS, "--format", "json")
    p5e = next(i for i in json.loads(js)["instances"] if i["id"] == "p5e.48xlarge")
    assert p5e["network_gbps"] == 3200 and p5e["max_instances"] == 64


def test_rent_vs_buy_says_when_the_rented_side_sits_on_its_cap():
    # 2 instances at most: no rented design matches the owned cluster, so the fastest one (2 x p5e) is used
    from costopt.purchase import purchasing as P

    r = P.rent_vs_buy("inception_v3", 1_000_000, AWS, opts=P.Options(max_instances=2))
    assert r.rent["nodes"] <= 2 and r.capacity["bound"] is True and r.capacity["label"] == "your limit"
    assert r.work_ratio > 1 and "capacity cap" in r.verdict and f"{r.work_ratio:.2f} rented hours" in r.verdict
    free = P.rent_vs_buy("inception_v3", 1_000_000, AWS)
    assert free.rent["nodes"] <= 64 and (free.capacity["bound"] or "capacity cap" not in free.verdict)


def test_compare_owned_vs_cloud_per_job_rent_by_hand():
    # per job: rented cost = instances x USD/h (the catalog file's price) x the design's own time to train,
    # time to train = epochs x dataset / throughput; the rented side stays within its capacity cap
    from costopt.purchase import purchasing as P

    samples = 1 * 1_281_167
    cmp = P.compare([ROOT / "catalogs" / "vendor-a-datacenter-2026.toml", AWS], "resnet50", 100_000,
                    P.Options(epochs=1, dataset_size=1_281_167, years=5, utilization=0.4), price_cuts=False)
    rent = cmp.answers[1].best
    price = {i["id"]: i["usd_per_hour"] for i in tomllib.loads(AWS.read_text())["instance"]}[rent["chassis"]]
    hours = samples / rent["throughput_samples_per_s"] / 3600.0
    assert rent["time_to_train_h"] == pytest.approx(hours, rel=1e-8)
    assert rent["cost_usd"] == pytest.approx(rent["nodes"] * price * hours, rel=1e-8)
    assert rent["nodes"] <= 64 and cmp.to_json_dict()["catalogs"][1]["capacity"]["max_instances"] == 64


def test_large_model_solve_on_cloud_respects_and_names_the_cap():
    from costopt.search.llm_search import solve_llm

    res = solve_llm(100_000, "llama3_8b", tokens=1e11, catalog=AWS, gpus=["h200-sxm"], top=1)
    assert res["best"]["nodes"] == 64 and res["capacity"]["bound"] is True  # before the cap: 256 x p5e
    small = solve_llm(100_000, "llama3_8b", tokens=1e11, catalog=AWS, gpus=["h200-sxm"], top=1, max_instances=16)
    assert small["best"]["nodes"] <= 16 and small["capacity"]["max_instances"] == 16
