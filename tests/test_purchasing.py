"""Purchasing workflows: overlay and cloud catalogs, hourly pricing, compare, rent vs buy, exports, import."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hand_tco import whole_cost_without_power

import costopt
from costopt.purchase import purchasing as P
from costopt.hardware.catalog import REFERENCE_CATALOG, load_catalog
from costopt.core.errors import InputError
from costopt.core.units import HOURS_PER_YEAR

# `python -m costopt.cli` would not load the sub-command modules (they import costopt.cli, a second copy)
CLI = [sys.executable, "-c", "from costopt.cli import main; main()"]
ROOT = Path(__file__).resolve().parents[1]
VENDOR_A = ROOT / "catalogs" / "vendor-a-datacenter-2026.toml"
VENDOR_B = ROOT / "catalogs" / "vendor-b-whitebox-2026.toml"
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"
SAMPLE_CSV = ROOT / "catalogs" / "aws-vms-sample.csv"
MINI = Path(__file__).parent / "fixtures" / "mini.toml"


def run_cli(*args, cwd=None):
    """The CLI in-process (exit code, stdout, stderr); `run_cli_subprocess` for a real process."""
    from typer.testing import CliRunner

    from costopt.cli import app

    r = CliRunner().invoke(app, [*map(str, args)])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def run_cli_subprocess(*args):
    p = subprocess.run(CLI + [*map(str, args)], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def overlay(tmp_path, body, name="quote.toml"):
    path = tmp_path / name
    path.write_text('[catalog]\nname = "q"\ndate = "2026-01-01"\nbase = "reference-2026"\n' + body)
    return path


# ---- catalogs ---------------------------------------------------------------------------------------


def test_reference_and_mini_unchanged():
    ref = load_catalog(None)
    assert not ref.is_cloud and ref.catalog.base == "" and not ref.unavailable_gpu
    assert all(c.usd_per_hour is None for c in ref.chassis)
    assert load_catalog(MINI).catalog.kind == "owned"
    assert load_catalog("reference-2026").gpus.keys() == ref.gpus.keys()  # a built-in name works too


def test_overlay_overrides_prices_and_availability():
    ref, a = load_catalog(REFERENCE_CATALOG), load_catalog(VENDOR_A)
    assert a.gpus["h100-sxm"].price_usd == 27900 != ref.gpus["h100-sxm"].price_usd
    assert a.gpus["h100-sxm"].memory_gb == ref.gpus["h100-sxm"].memory_gb  # specs stay the base's
    assert "illustrative" in a.gpus["h100-sxm"].price_source
    assert a.gpus["a100-sxm-80gb"].price_usd == ref.gpus["a100-sxm-80gb"].price_usd  # untouched part
    offered = {g.id for g in a.gpu}
    assert "rtx-4090" not in offered and "h200-sxm" in offered
    assert {n.id for n in a.nic} == {"100gbe", "100gbe-roce", "ib-hdr", "ib-ndr"}
    b = load_catalog(VENDOR_B)
    assert "h200-sxm" not in {g.id for g in b.gpu} and "h200-sxm" in {g.id for g in b.unavailable_gpu}
    # chassis that could only take GPUs the vendor does not sell are gone
    assert all(c.form_factor == "pcie" for c in b.chassis)


def test_unavailable_gpu_never_in_a_design_but_scales_compute():
    res = costopt.solve(200_000, "resnet50", catalog=VENDOR_B, top=50)
    assert {r["gpu"] for r in [res.best] + res.alternatives} <= {"rtx-4090", "l40s", "a100-pcie-80gb", "h100-pcie"}
    # the H200 is off the offer, but its measurement still anchors every other GPU's estimate
    assert "h200-sxm measurement" in res.best["compute_basis"]
    assert res.best["compute_source"] in ("published", "roofline")


def test_vendor_quotes_change_the_answer():
    a = costopt.solve(300_000, "vgg16", catalog=VENDOR_A, precision="amp_bf16")
    b = costopt.solve(300_000, "vgg16", catalog=VENDOR_B, precision="amp_bf16")
    assert a.best["gpu"] != b.best["gpu"]


@pytest.mark.parametrize("body, pattern", [
    ('[[gpu]]\nid = "h100-sxmm"\nprice_usd = 1\nprice_source = "q"\nprice_date = "2026"\n',
     r"quote.toml: gpu\[0\] \(id 'h100-sxmm'\): unknown gpu in base catalog 'reference-2026'"),
    ('[[chassis]]\nid = "nope"\nprice_usd = 1\nprice_source = "q"\nprice_date = "2026"\n',
     r"chassis\[0\] \(id 'nope'\): unknown chassis"),
    ('[[nic]]\nid = "ib-ndr"\nprice_usd = -5\nprice_source = "q"\nprice_date = "2026"\n',
     r"nic\[0\] \(id 'ib-ndr'\), field 'price_usd': Input should be greater than 0"),
    ('[[gpu]]\nid = "h100-sxm"\nprice_usd = 1\n', r"gpu\[0\] \(id 'h100-sxm'\), field 'price_source'"),
    ('[[gpu]]\nid = "h100-sxm"\nprise_usd = 1\n', r"field 'prise_usd': unknown key"),
    ('[availability]\ngpu = ["h100-sxm", "h900"]\n', r"\[availability\], field 'gpu': unknown gpu 'h900'"),
    ('[availability]\nexclude_switch = ["x"]\n', r"\[availability\], field 'exclude_switch': unknown key"),
])
def test_bad_overlay_names_file_entry_field(tmp_path, body, pattern):
    path = overlay(tmp_path, body)
    with pytest.raises(InputError, match=pattern):
        load_catalog(path)
    rc, out, err = run_cli("catalog", "show", path)
    assert rc == 2 and "Traceback" not in err and "quote.toml" in err


def test_bad_base(tmp_path):
    p = tmp_path / "q.toml"
    p.write_text('[catalog]\nname = "q"\ndate = "2026"\nbase = "no-such-catalog"\n')
    with pytest.raises(InputError, match=r"\[catalog\], field 'base': no built-in catalog or file 'no-such-catalog'"):
        load_catalog(p)


def test_cloud_catalog_instances():
    aws = load_catalog(AWS)
    assert aws.is_cloud and len(aws.instance) >= 15
    p5 = aws.chassis_by_id["p5.48xlarge"]
    assert p5.usd_per_hour == 98.32 and p5.gpu_slots == 8 and p5.accepts_gpus == ["h100-sxm"]
    assert aws.nics_for(p5)[0].line_rate_gbps == 3200 and aws.nics_for(p5)[0].transport == "rdma"
    assert aws.chassis_by_id["p3.16xlarge"].intra_fabric == "nvlink-bridge"
    assert aws.nics_for(aws.chassis_by_id["p3.16xlarge"])[0].line_rate_gbps == 25
    for fam in ("p3.", "p4d.", "p5.", "g5.", "g6."):
        assert any(i.id.startswith(fam) for i in aws.instance), fam
    # the GPU's price is the cheapest USD per GPU-hour: labelled, not a purchase price
    assert aws.gpus["h100-sxm"].price_usd == pytest.approx(98.32 / 8)


def test_bad_instance(tmp_path):
    p = overlay(tmp_path, 'kind = "cloud"\n[[instance]]\nid = "x1"\ngpu = "h900"\ngpu_count = 8\nnetwork_gbps = 100\n'
                          'usd_per_hour = 10\nsource = "s"\ndate = "2026"\nprice_source = "p"\nprice_date = "2026"\n'
                .replace('kind = "cloud"\n', ""))
    with pytest.raises(InputError, match=r"instance\[0\] \(id 'x1'\), field 'gpu': unknown gpu 'h900'"):
        load_catalog(p)


# ---- hourly pricing ---------------------------------------------------------------------------------


def test_hourly_cost_is_rate_times_hours():
    aws = load_catalog(AWS)
    d = costopt.predict("resnet50", "h100-sxm", 8, 3, "p5.48xlarge-net", "ring", catalog=aws)
    assert d["cost_usd"] == pytest.approx(3 * 98.32) and d["capex_usd"] == 0 and d["energy_usd_per_year"] == 0
    ev = P.evaluate_catalog(aws, "resnet50", 5000, P.Options(hours=10))
    i = np.flatnonzero((ev.space.nodes == 3) & (np.array([c.id for c in ev.space.chassis])[ev.space.chassis_idx] == "p5.48xlarge"))[0]
    assert ev.costs.usd_per_hour[i] == pytest.approx(3 * 98.32)
    assert ev.costs.cost_usd[i] == pytest.approx(3 * 98.32 * 10)


def test_per_job_rent_uses_each_designs_time_to_train():
    aws = load_catalog(AWS)
    opts = P.Options(epochs=2, dataset_size=1e6)
    ev = P.evaluate_catalog(aws, "resnet50", 2000, opts)
    hours = 2e6 / ev.timing.throughput_samples_per_s / 3600
    assert np.allclose(ev.costs.cost_usd, ev.costs.usd_per_hour * hours)


def test_owned_costs_identical_with_hours():
    ref = load_catalog(None)
    a = P.evaluate_catalog(ref, "resnet50", 100_000, P.Options())
    b = P.evaluate_catalog(ref, "resnet50", 100_000, P.Options(hours=1234))
    assert np.array_equal(a.costs.cost_usd, b.costs.cost_usd)
    res = costopt.solve(100_000, "resnet50")
    assert P.solve_catalog(ref, "resnet50", 100_000, P.Options())[0].best == res.best


# ---- compare ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vgg_compare():
    return P.compare([VENDOR_A, VENDOR_B], "vgg16", 300_000, P.Options(precision="amp_bf16", epochs=90,
                                                                         dataset_size=1_281_167))


def test_compare_winner_margin_and_bests(vgg_compare):
    cmp = vgg_compare
    for a, path in zip(cmp.answers, (VENDOR_A, VENDOR_B)):
        assert a.best == costopt.solve(300_000, "vgg16", catalog=path, precision="amp_bf16", top=5, epochs=90,
                                       dataset_size=1_281_167).best
    w, l = cmp.answers[cmp.winner].best, cmp.answers[1 - cmp.winner].best
    assert w["throughput_samples_per_s"] >= l["throughput_samples_per_s"]
    assert cmp.margin["throughput_gain"] == pytest.approx(w["throughput_samples_per_s"] / l["throughput_samples_per_s"] - 1)


def test_price_cut_is_the_break_even_price(vgg_compare):
    cmp = vgg_compare
    (cut,) = cmp.price_cuts
    assert cut.part_kind == "gpu" and 0 < cut.cut_fraction < 1
    target = cmp.answers[cmp.winner].best["throughput_samples_per_s"]
    loser = cmp.answers[1 - cmp.winner]
    cat = loser.catalog

    def best_at(price):
        over = cat.model_copy(update={"gpu": [g.model_copy(update={"price_usd": price}) if g.id == cut.part_id else g
                                              for g in cat.gpu]})
        over.__dict__.pop("gpus", None)
        return costopt.solve(300_000, "vgg16", catalog=over, precision="amp_bf16").best["throughput_samples_per_s"]

    assert best_at(cut.needed_price * 0.999) >= target  # just below the price: the loser wins
    assert best_at(cut.needed_price * 1.01) < target  # a bit above: it does not
    assert cut.design_at_needed_price["throughput_samples_per_s"] >= target


def test_compare_cli_json_and_table():
    rc, out, err = run_cli("compare", VENDOR_A, VENDOR_B, "--model", "vgg16", "--budget", "300000", "--precision",
                           "amp_bf16", "--format", "json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["winner"] in ("vendor-a-datacenter-2026.toml", "vendor-b-whitebox-2026.toml")
    assert d["catalogs"][0]["cost_basis"].startswith("USD capex") and len(d["price_cuts"]) == 1
    rc, out, err = run_cli("compare", VENDOR_A, VENDOR_B, "--model", "resnet50", "--budget", "200000")
    assert rc == 0, err
    assert "Winner:" in out and "must drop from" in out and "per sample/s" in out


def test_compare_cloud_needs_hours_or_job():
    with pytest.raises(InputError, match="cloud catalog is priced per hour"):
        P.compare([VENDOR_A, AWS], "resnet50", 100_000)
    cmp = P.compare([VENDOR_A, AWS], "resnet50", 100_000, P.Options(hours=2000), price_cuts=False)
    cloud = cmp.answers[1]
    assert cloud.cost_basis == "USD for 2000 h of rent" and cloud.best["cost_usd"] <= 100_000


def test_compare_bad_catalog_exit_2(tmp_path):
    bad = overlay(tmp_path, '[[gpu]]\nid = "h100-sxmm"\nprice_usd = 1\nprice_source = "q"\nprice_date = "2026"\n')
    rc, out, err = run_cli_subprocess("compare", VENDOR_A, bad, "--model", "resnet50", "--budget", "100000")
    assert rc == 2 and "h100-sxmm" in err and "Traceback" not in err


# ---- rent vs buy ------------------------------------------------------------------------------------


def test_rent_vs_buy_break_even_formula():
    r = P.rent_vs_buy("resnet50", 200_000, AWS, VENDOR_B, years=3, opts=P.Options(epochs=90, dataset_size=1_281_167))
    assert r.buy == costopt.solve(200_000, "resnet50", catalog=VENDOR_B, top=1, epochs=90, dataset_size=1_281_167).best
    assert r.rent["throughput_samples_per_s"] >= r.buy["throughput_samples_per_s"]  # same work per hour at least
    gap = r.rent_usd_per_hour * r.work_ratio - r.energy_usd_per_year_full_use / HOURS_PER_YEAR
    # the owned side is the whole cost of owning over 3 years (hand_tco.py), not the purchase alone
    fixed = whole_cost_without_power(r.capex_usd, r.buy["power_kw"], r.buy["total_gpus"], 3)
    assert r.breakeven_utilization == pytest.approx(fixed / (3 * HOURS_PER_YEAR * gap), rel=1e-7)
    # at the break-even utilisation owning and renting cost the same
    u = r.breakeven_utilization
    own = fixed + 3 * u * r.energy_usd_per_year_full_use
    rent = 3 * u * HOURS_PER_YEAR * r.rent_usd_per_hour * r.work_ratio
    assert own == pytest.approx(rent)
    assert r.breakeven_months_full_use == pytest.approx(u * 36)
    units = {what: unit for what, _, unit in r.rows}
    assert units["rent: price"] == "USD per hour" and units["buy: capex"] == "USD, one-off"
    assert units["job: rent"].startswith("USD per job") and "per year" in units["buy: electricity at full use"]


def test_rent_vs_buy_cli():
    rc, out, err = run_cli("rent-vs-buy", "--model", "resnet50", "--budget", "200000", "--cloud", AWS, "--catalog",
                           VENDOR_B, "--years", "3", "--hours", "5000")
    assert rc == 0, err
    assert "break-even utilisation" in out and "USD per hour" in out and "Verdict:" in out
    rc, out, err = run_cli("rent-vs-buy", "--model", "resnet50", "--budget", "200000", "--cloud", VENDOR_A)
    assert rc == 2 and "not a cloud catalog" in err


# ---- exports ----------------------------------------------------------------------------------------


def test_export_full_ranked_table(tmp_path):
    ev = P.evaluate_catalog(MINI, "resnet50", 150_000, P.Options())
    df = P.ranked_table(ev, 150_000)
    ok = ev.timing.feasible & ev.costs.buildable & (ev.costs.cost_usd <= 150_000)
    assert len(df) == ok.sum() and list(df["rank"]) == list(range(1, len(df) + 1))
    assert (np.diff(df["throughput_samples_per_s"].to_numpy()) <= 0).all()
    res = costopt.solve(150_000, "resnet50", catalog=MINI)
    assert df.iloc[0]["throughput_samples_per_s"] == pytest.approx(res.best["throughput_samples_per_s"])
    assert df.iloc[0]["cost_usd"] == pytest.approx(res.best["cost_usd"])
    for fmt in ("csv", "json", "xlsx"):
        out = tmp_path / f"t.{fmt}"
        rc, _, err = run_cli("export", "--model", "resnet50", "--budget", "150000", "--catalog", MINI, "--format", fmt,
                             "-o", out)
        assert rc == 0, err
        back = {"csv": pd.read_csv, "json": pd.read_json, "xlsx": pd.read_excel}[fmt](out)
        back.columns = [c.split(" [")[0] for c in back.columns]  # xlsx headers carry the unit: "cost_usd [USD]"
        assert len(back) == len(df) and "usd_per_hour" in back.columns and "cost_basis" in back.columns
        assert back["throughput_samples_per_s"].iloc[0] == pytest.approx(df["throughput_samples_per_s"].iloc[0], rel=1e-5)


# ---- import -----------------------------------------------------------------------------------------


def test_import_vms_csv(tmp_path):
    out = tmp_path / "aws.toml"
    rc, stdout, err = run_cli("catalog", "import", SAMPLE_CSV, "-o", out, "--price-date", "2025-03-17")
    assert rc == 0, err
    assert 'price_date = "2025-03-17"' in out.read_text()
    again = tmp_path / "again" / "aws.toml"
    again.parent.mkdir()
    assert run_cli("catalog", "import", SAMPLE_CSV, "-o", again, "--price-date", "2025-03-17")[0] == 0
    assert again.read_bytes() == out.read_bytes()
    assert "Inferentia2" in err  # skipped with a warning
    cat = load_catalog(out)
    assert cat.is_cloud and cat.chassis_by_id["p4d.24xlarge"].usd_per_hour == pytest.approx(32.7726)
    assert cat.nics_for(cat.chassis_by_id["p4d.24xlarge"])[0].line_rate_gbps == 400
    # g5.xlarge's sustained network is in costopt/data/cloud_instances.toml (2.5 Gb/s baseline), so it is
    # no longer an assumed figure (tests/test_cloud_catalog.py checks import and shipped catalog agree)
    assert cat.instances["g5.xlarge"].estimates == []
    rc, _, err = run_cli("solve", "--catalog", out, "--budget", "100", "--model", "resnet50")
    assert rc == 0, err


def test_import_wrong_columns(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Instance,GPU,Price\np5,H100,98\n")
    rc, out, err = run_cli("catalog", "import", bad, "-o", tmp_path / "x.toml", "--price-date", "2025-03-17")
    assert rc == 2 and "missing column(s) InstanceType" in err and "Traceback" not in err
    assert not (tmp_path / "x.toml").exists()


# --- QA sweep: bad numbers, output paths, impossible budgets ---------------------------------------------

@pytest.mark.parametrize("args,pattern", [
    (["compare", VENDOR_A, VENDOR_B, "--model", "vgg16", "--budget", "300000", "--tco-years", "nan"],
     r"TCO years must be a finite number >= 0, got nan"),
    (["compare", VENDOR_A, VENDOR_B, "--model", "vgg16", "--budget", "300000", "--max-nodes", "0"],
     r"max nodes must be >= 1, got 0"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "nan", "--cloud", AWS],
     r"budget must be a positive number of USD, got nan"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "-1", "--cloud", AWS],
     r"budget must be a positive number of USD, got -1"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "200000", "--cloud", AWS, "--hours", "10", "--utilization", "0.5"],
     r"give --utilization or --hours .*not both"),
    (["rent-vs-buy", "--model", "resnet50", "--budget", "200000", "--cloud", AWS, "--hours", "1e12"],
     r"--hours 1e\+12 is more than the 26,298 hours in 3 years"),
    (["export", "--model", "resnet50", "--budget", "inf"], r"budget must be a positive number of USD, got inf"),
    (["export", "--model", "resnet50", "--budget", "200000", "--tco-years", "-2"], r"TCO years must be >= 0"),
    (["export", "--model", "resnet50", "--budget", "200000", "--format", "xlsx", "-o", "x.csv"],
     r"--out must end in .xlsx, got 'x.csv'"),
    (["report", "--model", "resnet50", "--budget", "200000", "--out", "r.html", "--all", "x.pdf"],
     r"--all must end in .csv, .xlsx or .json, got 'x.pdf'"),
    (["report", "--model", "resnet50", "--budget", "200000", "--out", "r.html", "--top", "0"], r"top must be >= 1, got 0"),
    (["catalog", "import", SAMPLE_CSV, "-o", "c.toml", "--price-date", "2025-03-17", "--default-network-gbps", "nan"],
     r"--default-network-gbps\) must be a finite number > 0, got nan"),
    (["catalog", "import", SAMPLE_CSV, "-o", "c.toml"], r"--price-date YYYY-MM-DD is required"),
    (["catalog", "import", SAMPLE_CSV, "-o", "c.toml", "--price-date", "17/03/2025"], r"--price-date '17/03/2025': use YYYY-MM-DD"),
])
def test_purchasing_bad_numbers_exit_2_one_line(tmp_path, monkeypatch, args, pattern):
    import re

    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(*args)
    assert rc == 2, (out, err)
    assert re.search(pattern, err), err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "c.toml").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("cmd", [
    ["report", "--model", "resnet50", "--budget", "200000", "--out"],
    ["export", "--model", "resnet50", "--budget", "200000", "-o"],
    ["catalog", "import", SAMPLE_CSV, "--price-date", "2025-03-17", "-o"],
])
def test_output_paths_checked_before_work(tmp_path, cmd):
    suffix = {"report": "r.html", "export": "x.csv", "catalog": "c.toml"}[cmd[0]]
    for out, words in ((tmp_path / "nodir" / suffix, "does not exist"), (tmp_path, "is a directory")):
        if cmd[0] == "report" and out == tmp_path:
            out, words = tmp_path / "sub.html", "is a directory"
            out.mkdir()
        rc, _, err = run_cli(*cmd, out)
        assert rc == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_export_impossible_budget_exits_1_with_nearest():
    rc, out, err = run_cli("export", "--model", "resnet50", "--budget", "1", "--format", "json")
    assert rc == 1
    data = json.loads(out)
    assert data["reason"] == "budget" and data["nearest"]["cost_usd"] > 1


def test_xlsx_export_is_byte_reproducible(tmp_path):
    a, b = tmp_path / "a.xlsx", tmp_path / "b.xlsx"
    for p in (a, b):
        rc, _, err = run_cli("export", "--model", "alexnet", "--budget", "20000", "--format", "xlsx", "-o", p)
        assert rc == 0, err
    assert a.read_bytes() == b.read_bytes()
    assert len(pd.read_excel(a)) > 0


def test_import_rows_all_unusable_says_why(tmp_path):
    lines = SAMPLE_CSV.read_text().splitlines()
    head = lines[0].split(",")
    i = head.index("Price")
    rows = []
    for ln in lines[1:]:
        cells = ln.split(",")
        cells[i] = "abc"
        rows.append(",".join(cells))
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([lines[0], *rows]) + "\n")
    with pytest.raises(InputError, match=r"could be imported: row 2 .*not numbers"):
        P.import_vms_csv(bad)
