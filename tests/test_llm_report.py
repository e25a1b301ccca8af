"""The large-model report: which layouts fit at which GPU memory (checked by hand), numbers equal to
`costopt solve`, every section and plot present, renders in headless Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from test_report import _Collect, _chromium, assert_renders_in_chromium  # one parser, one Chromium check

from costopt.hardware.cost import within_budget
from costopt.perf.llm.feasibility import memory_grid
from costopt.search.llm_search import _add_costs, search_llm
from costopt.purchase.llm_report import LLM_SECTIONS, build_llm_report
from costopt.purchase.report import write_report

CLI = [sys.executable, "-c", "from costopt.cli import main; main()"]
LLAMA3_8B_PARAMS = 8_030_261_248  # Meta's config: 32 layers, hidden 4096, 8 KV heads, FFN 14336, vocab 128256, untied


def _cell(grid, memory_gb, strategy, tp, pp):
    (c,) = [c for c in grid["cells"] if (c["memory_gb"], c["strategy"], c["tp"], c["pp"]) == (memory_gb, strategy, tp, pp)]
    return c


@pytest.fixture(scope="module")
def grid_8b():
    found = search_llm(10_000_000, "llama3_8b", gpus=["h100-sxm", "b200"], max_nodes=2)
    return found, memory_grid(found)


def test_memory_grid_llama3_8b_by_hand(grid_8b):
    _, grid = grid_8b
    assert grid["memory_sizes_gb"] == [80.0, 180.0]
    assert grid["gpus_by_memory_gb"] == {"80": ["h100-sxm"], "180": ["b200"]}
    # A plain data-parallel replica holds 2 (bf16 weights) + 2 (gradients) + 12 (fp32 Adam) = 16 bytes per
    # parameter: 16 x 8.030e9 = 128.48 GB of model states on every GPU, more than an 80 GB card holds
    # whatever the cluster; the binding term is the model states.
    ddp = _cell(grid, 80.0, "ddp", 1, 1)
    assert ddp["fits"] is False
    assert ddp["binding"]["term"] == "model states"
    assert ddp["binding"]["model_states_gb"] == pytest.approx(16 * LLAMA3_8B_PARAMS / 1e9, rel=1e-9)
    assert ddp["binding"]["needed_gb"] > ddp["binding"]["usable_gb"]
    assert ddp["binding"]["usable_gb"] < 80.0
    # FSDP over 8 GPUs: 16 x 8.03e9 / 8 = 16.06 GB of states + 2 gathered layers (2 x 2 bytes x 8.03e9 / 32
    # = 1.0 GB) + at most ~7.5 GB of activations and logits (micro-batch 1, full recompute): fits in 80 GB
    assert _cell(grid, 80.0, "fsdp", 1, 1)["fits"] is True
    # tensor parallel 2 halves the replica: 64.2 GB of states + 3.7 GB of activations fits in 80 GB
    assert _cell(grid, 80.0, "ddp", 2, 1)["fits"] is True
    # the whole replica (128.5 + 7.5 GB) fits a 180 GB B200
    assert _cell(grid, 180.0, "ddp", 1, 1)["fits"] is True
    # hybrid sharding needs two nodes: the 2-node designs run it
    assert _cell(grid, 80.0, "hsdp", 1, 1)["fits"] is True


def test_memory_grid_layout_reason_and_best_is_the_search_best(grid_8b):
    found, grid = grid_8b
    # tp 8 with pp 16 needs 128 GPUs per data-parallel replica: no design of at most 2 nodes x 8 GPUs can run it
    # (the 8-GPU nodes pass the tensor-degree check and fail on the GPU count)
    c = _cell(grid, 80.0, "fsdp", 8, 16)
    assert c["fits"] is False and c["binding"]["term"] == "layout"
    assert "divide" in c["binding"]["reason"]
    # per memory size, the best cell over all layouts equals the best tokens/s per USD 1,000 of the designs
    # of that size with their fastest layout (the solve's search): the grid picks among the same layouts
    ok = found.ok & within_budget(found.costs, found.budget)
    mem = np.array([g.memory_gb for g in found.space.gpus])[found.space.gpu_idx]
    value = found.ev.timing.tokens_per_s / found.costs.cost_usd * 1000.0
    for m in grid["memory_sizes_gb"]:
        best_cell = max(c["best"]["value"] for c in grid["cells"] if c["fits"] and c["memory_gb"] == m)
        # (a family's fastest layout is never faster than the design's fastest, so equal, not just >=)
        assert best_cell == pytest.approx(value[ok & (mem == m)].max(), rel=1e-12)
        for c in grid["cells"]:  # each value is its design's tokens/s per USD 1,000
            if c["fits"] and c["memory_gb"] == m:
                assert c["best"]["value"] == pytest.approx(c["best"]["tokens_per_s"] / c["best"]["cost_usd"] * 1000)


def test_memory_grid_names_the_catalog_gpus_it_leaves_out(grid_8b):
    _, grid = grid_8b  # asked for h100-sxm and b200 only
    left = grid["left_out_by_memory_gb"]
    assert {g["gpu"] for gs in left.values() for g in gs} >= {"h200-sxm", "a100-sxm-80gb", "mi300x"}
    assert all(g["why"] == "not among the GPUs asked for" for gs in left.values() for g in gs)
    # the default part filter leaves the H100 (a legacy part in the reference catalog) out of the 80 GB
    # column and says how to bring it back; --include legacy brings the 80 GB size in
    found = search_llm(1_000_000, "llama3_8b", max_nodes=1)
    grid = memory_grid(found)
    assert 80.0 not in grid["memory_sizes_gb"]
    (h100,) = [g for g in grid["left_out_by_memory_gb"]["80"] if g["gpu"] == "h100-sxm"]
    assert "legacy" in h100["why"] and "--include legacy" in h100["why"]
    grid = memory_grid(search_llm(1_000_000, "llama3_8b", max_nodes=1, include=["legacy"]))
    assert 80.0 in grid["memory_sizes_gb"] and "h100-sxm" in grid["gpus_by_memory_gb"]["80"]


def test_usd_per_1e9_tokens_owned_and_rented_by_hand():
    # owned: capex $3,000,000 over 3 years, plus 100 kW x 0.75 draw x PUE 1.5 x $0.0826/kWh = $9.2925/h
    # (as energy per year: x 8,766 h); 1e9 tokens at 138,888.9 tokens/s take 2 h:
    # 2 x (1e6 / 8,766 + 9.2925) = 2 x 123.3696 = $246.739
    energy_per_year = 100 * 0.75 * 1.5 * 0.0826 * 8766
    costs = SimpleNamespace(cost_usd=np.array([3e6]), capex_usd=np.array([3e6]), power_kw=np.array([100.0]),
                            rack_units=np.array([10.0]), usd_per_hour=np.array([0.0]),
                            energy_usd_per_year=np.array([energy_per_year]))
    rec = _add_costs({"tokens_per_s": 1e9 / 7200, "feasible": True}, costs, 0, 1e11)
    assert rec["hours_per_1e9_tokens"] == pytest.approx(2.0, rel=1e-12)
    assert rec["usd_per_1e9_tokens"] == pytest.approx(246.739, abs=1e-3)
    assert "capex over 3 years" in rec["usd_per_1e9_tokens_basis"] and "estimate" in rec["usd_per_1e9_tokens_basis"]
    assert rec["cost_to_train_usd"] == 3e6  # an owned cluster: the purchase
    # rented at $400 per hour: 2 h x $400 = $800 per 1e9 tokens; 1e11 tokens: 200 h x $400 = $80,000
    costs.usd_per_hour = np.array([400.0])
    costs.cost_usd = np.array([400.0])
    rec = _add_costs({"tokens_per_s": 1e9 / 7200, "feasible": True}, costs, 0, 1e11)
    assert rec["usd_per_1e9_tokens"] == pytest.approx(800.0, rel=1e-12)
    assert rec["cost_to_train_usd"] == pytest.approx(80_000.0, rel=1e-12)
    assert rec["usd_per_1e9_tokens_basis"] == "rent per hour x hours"


@pytest.fixture(scope="module")
def llm_report(tmp_path_factory):
    rep = build_llm_report("llama3_8b", 2_000_000, tokens=1e10, max_nodes=4, progress=False)
    path = tmp_path_factory.mktemp("llmreport") / "report.html"
    write_report(rep, path)
    return rep, path


def test_llm_report_sections_and_numbers_equal_solve(llm_report):
    rep, path = llm_report
    doc = _Collect()
    doc.feed(path.read_text(encoding="utf-8"))
    for sid in LLM_SECTIONS:
        assert sid in doc.ids
    for fig in ("memory", "memory-strategies", "pareto", "breakdown"):
        assert f"fig-{fig}" in doc.ids
    assert len(doc.imgs) == 4 and all(s.startswith("data:image/png;base64,") for s in doc.imgs)
    embedded = json.loads(doc.scripts["costopt-solve"])
    grid = json.loads(doc.scripts["costopt-memory-grid"])
    assert grid["cells"] and grid["memory_sizes_gb"]
    p = subprocess.run(CLI + ["solve", "--budget", "2000000", "--model", "llama3_8b", "--tokens", "1e10",
                              "--max-nodes", "4", "--top", "8", "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    solved = json.loads(p.stdout)
    assert embedded == solved
    b = solved["best"]
    intro = rep.section("recommended").intro
    for text in (f"{b['tokens_per_s']:,.0f} tokens/s", f"{b['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU",
                 f"MFU {b['mfu']:.1%}", f"{b['memory_per_gpu_gb']:.1f} GB per GPU",
                 f"{b['hours_per_1e9_tokens']:,.2f} hours", f"{b['hours_to_train']:,.0f} hours"):
        assert text in intro
    # the recommended layout is one the memory grid marks as fitting at its GPU's memory
    c = _cell(grid, b["gpu_memory_gb"], b["strategy"], b["tp"], b["pp"])
    assert c["fits"] is True


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
def test_llm_report_renders_in_headless_chromium(llm_report, tmp_path):
    assert_renders_in_chromium(llm_report[1], tmp_path)


def test_llm_report_refuses_data_parallel_options(tmp_path):
    p = subprocess.run(CLI + ["report", "--model", "llama3_70b", "--budget", "5000000", "--epochs", "3",
                              "--out", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "--epochs" in p.stderr and "large-model report" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r.html").exists()


def test_part_filter_options_are_checked_in_data_parallel_reports_too(tmp_path):
    # the data-parallel report takes solve's part filter as well (purchasing.Options.part_filter); a GPU id
    # no catalog lists, or an unknown part class, is refused before any work, and no file is written
    for extra, msg in ((["--exclude-gpu", "no-such-gpu"], "--exclude-gpu: unknown gpu 'no-such-gpu'"),
                       (["--include", "cheap"], "--include: unknown part class 'cheap'")):
        p = subprocess.run(CLI + ["report", "--model", "resnet50", "--budget", "200000", *extra,
                                  "--out", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert not (tmp_path / "r.html").exists()


def test_llm_report_states_each_range(llm_report):
    rep, _ = llm_report
    sec = rep.section("recommended")
    b = rep.solve_json["best"]
    header, rows = sec.tables[0]
    assert "tokens/s 80% range" in header and "hours 80% range" in header
    col = header.index("tokens/s 80% range")
    span = f"{b['tokens_per_s_low']:,.0f}-{b['tokens_per_s_high']:,.0f}"
    assert f"80% range {span}" in sec.intro and rows[0][col] == span
    assert b["tokens_per_s_low"] < b["tokens_per_s"] < b["tokens_per_s_high"]
    assert "errors of 309 published runs" in sec.intro and any("near ties" in n for n in sec.notes)


def test_infeasible_llm_report_explains_the_nearest_design(tmp_path):
    # a budget below every design that can hold llama3_8b: no report, exit 1, and the nearest feasible design
    # (the cheapest that can) named with its cost; the same design `solve` names
    args = ["--budget", "20000", "--model", "llama3_8b", "--tokens", "1e10", "--max-nodes", "4"]
    s = subprocess.run(CLI + ["solve", *args, "--format", "json"], capture_output=True, text=True, timeout=60)
    assert s.returncode == 1
    nearest = json.loads(s.stdout)["nearest"]
    assert nearest["cost_usd"] > 20000 and nearest["tokens_per_s_low"] <= nearest["tokens_per_s"]
    p = subprocess.run(CLI + ["report", *args, "--out", str(tmp_path / "r.html")], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "COLUMNS": "160"})
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr + p.stdout and not (tmp_path / "r.html").exists()
    assert "nearest feasible design" in p.stderr and f"${nearest['cost_usd']:,.0f}" in p.stderr
    assert f"{nearest['total_gpus']} x {nearest['gpu']}" in p.stderr
    assert "Nearest feasible design" in p.stdout and nearest["gpu"] in p.stdout


def test_llm_report_names_the_amd_risk_for_an_amd_pick_only(tmp_path):
    # the efficiency fit holds no AMD run (docs/accuracy.md), so a report that recommends an AMD GPU must say
    # so among its risks, and one that recommends an NVIDIA GPU must not; the pick's vendor is read from the
    # catalog here, not from the report
    from costopt.hardware.catalog import load_catalog

    cat = load_catalog()
    nvidia = sorted(g.id for g in cat.gpus.values() if g.vendor == "nvidia")
    amd = sorted(g.id for g in cat.gpus.values() if g.vendor == "amd")
    assert amd and nvidia
    line = "No AMD run is in the efficiency fit"
    for excluded, vendor in ((nvidia, "amd"), (amd, "nvidia")):
        rep = build_llm_report("llama3_8b", 2_000_000, tokens=1e10, max_nodes=2, exclude_gpus=excluded,
                               progress=False)
        path = tmp_path / f"{vendor}.html"
        write_report(rep, path)
        html = path.read_text(encoding="utf-8")
        pick = json.loads(_collect(html).scripts["costopt-solve"])["best"]["gpu"]
        assert cat.gpus[pick].vendor == vendor
        assert (line in html) == (vendor == "amd"), (vendor, pick)


def _collect(html):
    doc = _Collect()
    doc.feed(html)
    return doc
