"""Large-model purchasing (issue 22 item 2): compare, rent-vs-buy, export and the report's rent-or-buy section
for `--model llama3_70b --tokens N`. Every check is a property a buyer can verify by hand from the printed
numbers: the pick of each catalog is within that catalog's budget, both sides of rent vs buy train the same
job, the break-even formula holds on the printed rows, the export is the solve's designs."""

import json
from pathlib import Path

import numpy as np
import pytest
from hand_tco import whole_cost_without_power

from costopt.core.units import HOURS_PER_YEAR
from costopt.hardware.catalog import load_catalog
from costopt.purchase import llm_purchasing as L

ROOT = Path(__file__).resolve().parents[1]
VENDOR_A = ROOT / "catalogs" / "vendor-a-datacenter-2026.toml"
VENDOR_B = ROOT / "catalogs" / "vendor-b-whitebox-2026.toml"
AWS = ROOT / "catalogs" / "aws-on-demand-2025.toml"
BUDGET = 5_000_000.0
TOKENS = 1e12


def run_cli(*args):
    from typer.testing import CliRunner

    from costopt.cli import app

    r = CliRunner().invoke(app, [*map(str, args)])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def _energy_per_year(cat, power_kw: float, gpu: str | None = None) -> float:
    """Electricity per year at full use, by hand: nameplate kW x average draw x PUE x USD/kWh x 8,766 h; the
    PUE is the site's liquid PUE (1.2) when the GPU's TDP is above 1,000 W (e.g. MI355X, 1,400 W: liquid cooled)."""
    s = cat.site
    liquid = gpu is not None and cat.gpus[gpu].tdp_w > 1000.0
    return power_kw * s.average_draw_fraction * (1.2 if liquid else s.pue) * s.electricity_usd_per_kwh * HOURS_PER_YEAR


@pytest.fixture(scope="module")
def vendors():
    return L.compare_llm([VENDOR_A, VENDOR_B], L.LlmJob(model="llama3_70b", tokens=TOKENS), BUDGET)


@pytest.fixture(scope="module")
def owned_vs_cloud():
    return L.compare_llm([VENDOR_A, AWS], L.LlmJob(model="llama3_70b", tokens=TOKENS), BUDGET)


def test_compare_vendor_quotes_best_per_catalog_within_its_budget(vendors):
    assert [a.error for a in vendors.answers] == ["", ""]
    for a in vendors.answers:
        b = a.best
        assert b["capex_usd"] <= BUDGET  # the budget buys the cluster
        assert b["cost_usd"] == b["capex_usd"]  # two owned quotes: compared on capex
        assert a.cost_basis == "USD capex (one-off purchase)"
        assert b["model"] == "llama3_70b" and b["tokens_to_train"] == TOKENS
        assert b["tokens_per_s_low"] < b["tokens_per_s"] < b["tokens_per_s_high"]
        # hours to train 1e12 tokens, by hand
        assert b["hours_to_train"] == pytest.approx(TOKENS / b["tokens_per_s"] / 3600.0, rel=1e-12)
        # a vendor quote sells only what its [availability] lists
        assert b["gpu"] in a.catalog.gpus
    # vendor B sells no B200/H100 SXM (its availability list), so its pick is another GPU
    assert vendors.answers[1].best["gpu"] not in ("b200", "h100-sxm", "h200-sxm")
    w, r = vendors.answers[vendors.winner].best, vendors.answers[1 - vendors.winner].best
    assert w["tokens_per_s"] >= r["tokens_per_s"]  # objective throughput
    assert vendors.margin["throughput_gain"] == pytest.approx(w["tokens_per_s"] / r["tokens_per_s"] - 1, rel=1e-12)
    assert vendors.margin["cost_difference_usd"] == pytest.approx(w["cost_usd"] - r["cost_usd"])


def test_compare_price_cut_makes_the_loser_reach_the_winner(vendors):
    (pc,) = vendors.price_cuts
    loser = vendors.answers[1 - vendors.winner]
    winner = vendors.answers[vendors.winner].best
    assert pc.catalog == loser.label and pc.part_kind == "gpu" and pc.part_id == loser.best["gpu"]
    assert pc.current_price == load_catalog(VENDOR_B).gpus[pc.part_id].price_usd
    assert 0 < pc.needed_price < pc.current_price
    assert pc.cut_fraction == pytest.approx(1 - pc.needed_price / pc.current_price, rel=1e-9)
    d = pc.design_at_needed_price
    assert d["gpu"] == pc.part_id
    assert d["tokens_per_s"] >= winner["tokens_per_s"] * (1 - 1e-9)  # it matches the winner...
    assert d["capex_usd"] <= BUDGET  # ...within the same budget, at the cut price


def test_compare_owned_against_cloud_on_one_job(owned_vs_cloud):
    """Owned beside rented: both priced for the job of 1e12 tokens (cost.CostBasis): rented = rent per hour x
    hours to train; owned = hours x (the whole cost of owning but electricity over 3 years (hand_tco.py) /
    (3 years x 8,766 h x 100% use) + electricity per hour)."""
    own, cloud = owned_vs_cloud.answers
    cat = load_catalog(VENDOR_A)
    b = own.best
    h = TOKENS / b["tokens_per_s"] / 3600.0
    assert b["capex_usd"] <= BUDGET
    fixed = whole_cost_without_power(b["capex_usd"], b["power_kw"], b["total_gpus"], 3)
    want = h * (fixed / (3 * HOURS_PER_YEAR) + _energy_per_year(cat, b["power_kw"], b["gpu"]) / HOURS_PER_YEAR)
    assert b["cost_usd"] == pytest.approx(want, rel=1e-7)
    k = cloud.best
    rate = load_catalog(AWS).chassis_by_id[k["chassis"]].usd_per_hour * k["nodes"]
    assert k["cost_usd"] == pytest.approx(rate * TOKENS / k["tokens_per_s"] / 3600.0, rel=1e-9)
    assert k["cost_usd"] <= BUDGET  # the budget limits the rent of the job
    assert cloud.cost_basis == "USD per training job (rent x time to train)"
    assert k["nodes"] <= 64  # AWS's Capacity Block cap per instance type (the catalog's max_instances)
    # the owned loser's price cut: at that GPU price a design within the same budget (capex) matches the rent
    if owned_vs_cloud.answers[owned_vs_cloud.winner] is cloud:
        (pc,) = owned_vs_cloud.price_cuts
        d = pc.design_at_needed_price
        assert 0 < pc.needed_price < pc.current_price
        assert d["capex_usd"] <= BUDGET and d["tokens_per_s"] >= k["tokens_per_s"] * (1 - 1e-9)


def test_compare_cloud_needs_the_job_or_hours():
    with pytest.raises(Exception, match="priced per hour"):
        L.compare_llm([VENDOR_A, AWS], L.LlmJob(model="llama3_70b"), BUDGET)


@pytest.fixture(scope="module")
def rvb():
    return L.rent_vs_buy_llm(L.LlmJob(model="llama3_70b", tokens=TOKENS), BUDGET, AWS, years=3)


def test_rent_vs_buy_same_job_both_sides(rvb):
    b, k = rvb.buy, rvb.rent
    for key in ("model", "seq_len", "tokens_to_train", "precision"):
        assert b[key] == k[key], key
    assert b["tokens_to_train"] == TOKENS
    for d in (b, k):
        assert d["micro_batch"] * d["grad_accum"] * d["dp"] == d["global_batch_sequences"]
    assert b["capex_usd"] <= BUDGET
    assert k["tokens_per_s"] >= b["tokens_per_s"]  # the cheapest rented design at least as fast


def test_rent_vs_buy_holds_a_given_global_batch_on_both_sides():
    r = L.rent_vs_buy_llm(L.LlmJob(model="llama3_70b", tokens=TOKENS, global_batch=512), BUDGET, AWS)
    for d in (r.buy, r.rent):  # dp x micro-batch x accumulation = 512 sequences on each side
        assert d["global_batch_sequences"] == 512
        assert d["dp"] * d["micro_batch"] * d["grad_accum"] == 512
    assert "global batch (512 sequences, held exactly)" in r.held_equal


def test_rent_vs_buy_says_when_the_default_batch_is_rounded(rvb):
    if rvb.buy["global_batch_sequences"] != rvb.rent["global_batch_sequences"]:
        assert "--global-batch holds one exactly" in rvb.held_equal
        assert f"{rvb.rent['global_batch_sequences']:,} rented" in rvb.held_equal


def test_rent_vs_buy_break_even_holds_on_the_rows(rvb):
    rows = {what: v for what, v, _ in rvb.rows}
    capex, energy = rows["buy: capex"], rows["buy: electricity at full use"]
    rate, t_own, t_rent = rows["rent: price"], rows["buy: throughput"], rows["rent: throughput"]
    assert energy == pytest.approx(_energy_per_year(load_catalog(None), rvb.buy["power_kw"], rvb.buy["gpu"]), rel=1e-9)
    gap = rate * t_own / t_rent - energy / HOURS_PER_YEAR
    # the owned side: the whole cost of owning but electricity over 3 years (hand_tco.py), not capex alone
    fixed = whole_cost_without_power(capex, rvb.buy["power_kw"], rvb.buy["total_gpus"], 3)
    assert rows["buy: whole cost of owning but electricity"] == pytest.approx(fixed, rel=1e-9)
    assert rows["break-even utilisation"] == pytest.approx(fixed / (3 * HOURS_PER_YEAR * gap), rel=1e-9)
    assert rows["break-even at full use"] == pytest.approx(fixed / (HOURS_PER_YEAR / 12 * gap), rel=1e-9)
    # the job: 1e12 tokens on each side
    assert rows["job: time to train, owned"] == pytest.approx(TOKENS / t_own / 3600, rel=1e-12)
    assert rows["job: time to train, rented"] == pytest.approx(TOKENS / t_rent / 3600, rel=1e-12)
    assert rows["job: rent"] == pytest.approx(rate * TOKENS / t_rent / 3600, rel=1e-12)
    assert rate == pytest.approx(load_catalog(AWS).chassis_by_id[rvb.rent["chassis"]].usd_per_hour * rvb.rent["nodes"])


def test_rent_vs_buy_cli_json_names_tokens():
    rc, out, _ = run_cli("rent-vs-buy", "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000",
                         "--cloud", AWS, "--format", "json")
    assert rc == 0
    d = json.loads(out)
    assert d["kind"] == "large-model" and d["tokens_to_train"] == TOKENS
    assert d["buy"]["tokens_to_train"] == d["rent"]["tokens_to_train"] == TOKENS


def test_export_round_trips_the_solve(tmp_path):
    rc, out, _ = run_cli("solve", "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--format", "json")
    assert rc == 0
    solve = json.loads(out)
    rc, out, _ = run_cli("export", "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--format", "json")
    assert rc == 0
    rows = json.loads(out)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    thr = np.array([r["tokens_per_s"] for r in rows])
    assert (np.diff(thr) <= 0).all()  # ranked by tokens/s
    assert all(r["cost_usd"] <= BUDGET for r in rows)
    keys = ("gpu", "chassis", "gpus_per_node", "nodes", "nic", "nics_per_node", "strategy", "tp", "pp", "micro_batch",
            "activation_checkpointing", "global_batch_sequences")
    nums = ("tokens_per_s", "tokens_per_s_low", "tokens_per_s_high", "cost_usd", "capex_usd", "mfu",
            "memory_per_gpu_gb", "usd_per_1e9_tokens", "hours_per_1e9_tokens", "hours_to_train", "cost_to_train_usd")
    first = {}
    for r in rows:
        first.setdefault(r["gpu"], r)
    for d in [solve["best"], *solve["best_per_gpu"]]:
        e = first[d["gpu"]]  # each GPU type's best design is its first row in the export
        assert {k: e[k] for k in keys} == {k: d[k] for k in keys}
        for k in nums:
            assert e[k] == pytest.approx(d[k], rel=1e-8), k
    assert rows[0]["gpu"] == solve["best"]["gpu"]
    # csv and xlsx hold the same rows
    xlsx = tmp_path / "t.xlsx"
    rc, _, _ = run_cli("export", "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--format",
                       "xlsx", "--out", xlsx)
    assert rc == 0
    import openpyxl

    ws = openpyxl.load_workbook(xlsx)["designs"]
    head = [c.value for c in ws[1]]
    assert ws.max_row - 1 == len(rows)
    second = {h.split(" [")[0]: c.value for h, c in zip(head, ws[2])}
    assert second["gpu"] == rows[0]["gpu"] and second["nodes"] == rows[0]["nodes"]
    assert second["tokens_per_s"] == pytest.approx(rows[0]["tokens_per_s"], rel=1e-9)
    csv = tmp_path / "t.csv"
    rc, _, _ = run_cli("export", "--model", "llama3_70b", "--tokens", "1e12", "--budget", "5000000", "--out", csv)
    assert rc == 0
    import pandas as pd

    df = pd.read_csv(csv)
    assert len(df) == len(rows) and df["gpu"].tolist() == [r["gpu"] for r in rows]
    assert (tmp_path / "t.legend.csv").exists()


def test_report_has_rent_or_buy_section():
    from costopt.purchase.llm_report import build_llm_report

    rep = build_llm_report("llama3_70b", BUDGET, tokens=TOKENS, cloud=AWS, progress=False)
    sec = rep.section("rentbuy")
    rvb = rep.data["rent-vs-buy"]
    assert rvb["buy"]["gpu"] == rep.solve_json["best"]["gpu"]  # the recommendation is what is bought
    assert rvb["buy"]["nodes"] == rep.solve_json["best"]["nodes"]
    assert rvb["tokens_to_train"] == TOKENS
    (header, rows), = sec.tables
    assert [r[0] for r in rows] == [row["what"] for row in rvb["rows"]]
    assert "Verdict" in sec.intro and "same job" in sec.intro


@pytest.mark.parametrize("args, named", [
    (["compare", VENDOR_A, VENDOR_B, "--model", "llama3_70b", "--budget", "5e6", "--epochs", "1"], "--epochs"),
    (["compare", VENDOR_A, VENDOR_B, "--model", "llama3_70b", "--budget", "5e6", "--batch-per-gpu", "4"],
     "--batch-per-gpu"),
    (["compare", VENDOR_A, VENDOR_B, "--model", "llama3_70b", "--budget", "5e6", "--overlap", "none"], "--overlap"),
    (["rent-vs-buy", "--model", "llama3_70b", "--budget", "5e6", "--cloud", AWS, "--dataset-size", "9"],
     "--dataset-size"),
    (["rent-vs-buy", "--model", "llama3_70b", "--budget", "5e6", "--cloud", AWS, "--system", VENDOR_A], "--system"),
    (["export", "--model", "llama3_70b", "--budget", "5e6", "--batch-per-gpu", "4"], "--batch-per-gpu"),
    (["export", "--model", "llama3_70b", "--budget", "5e6", "--max-instances", "4"], "--max-instances"),
    (["export", "--model", "llama3_70b", "--budget", "5e6", "--hours", "100"], "--hours"),
    (["compare", VENDOR_A, VENDOR_B, "--model", "llama3_70b", "--budget", "5e6", "--hours", "100"], "--hours"),
    (["compare", VENDOR_A, VENDOR_B, "--model", "llama3_70b", "--budget", "5e6", "--utilization", "0.5"],
     "--utilization"),
    (["report", "--model", "llama3_70b", "--budget", "5e6", "--hours", "4", "--out", "x.html"], "--hours"),
    (["report", "--model", "llama3_70b", "--budget", "5e6", "--overlap", "full", "--out", "x.html"], "--overlap"),
    (["report", "--model", "llama3_70b", "--budget", "5e6", "--max-instances", "8", "--out", "x.html"],
     "--max-instances"),
    # transformer options on a data-parallel model
    (["compare", VENDOR_A, VENDOR_B, "--model", "resnet50", "--budget", "5e5", "--seq-len", "1024"], "--seq-len"),
    (["export", "--model", "resnet50", "--budget", "5e5", "--global-batch", "64"], "--global-batch"),
])
def test_options_the_path_cannot_honour_are_refused(args, named):
    rc, out, err = run_cli(*args)
    assert rc == 2, (out, err)
    assert named in err and len(err.strip().splitlines()) == 1


def test_compare_with_a_model_config_file(tmp_path):
    """--model-config FILE takes the large-model path of compare like a zoo transformer."""
    cfg = tmp_path / "my8b.toml"
    cfg.write_text((ROOT / "costopt" / "data" / "llm" / "llama3_8b.toml").read_text())
    rc, out, err = run_cli("compare", VENDOR_A, VENDOR_B, "--model-config", cfg, "--tokens", "1e11", "--budget",
                           "1000000", "--format", "json", "--no-price-cut")
    assert rc == 0, err
    d = json.loads(out)
    assert d["kind"] == "large-model" and d["tokens_to_train"] == 1e11
    for c in d["catalogs"]:
        assert c["best"]["capex_usd"] <= 1_000_000
        assert c["best"]["hours_to_train"] == pytest.approx(1e11 / c["best"]["tokens_per_s"] / 3600, rel=1e-8)
    assert d["price_cuts"] == []
