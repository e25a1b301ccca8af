"""Rack-scale systems: GB200 / GB300 NVL72 in the reference catalog, an NVLink domain larger than a node
(costopt/hardware/rack_scale.py, costopt/perf/llm/step.py), whole racks in the design space and the cost.

Every timing number below is worked out by hand in the comments (step.py's equations, module docstring)."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import replace

import numpy as np
import pytest

from costopt.core.errors import InfeasibleError, InputError
from costopt.core.paths import PACKAGE_DIR
from costopt.hardware.catalog import load_catalog
from costopt.hardware.catalog_schema import validate_catalog
from costopt.hardware.cost import evaluate_costs
from costopt.perf.llm.arch import ArchArrays, TransformerConfig, load_llm_model
from costopt.perf.llm.evaluate import Layout, default_llm_params, evaluate_layouts
from costopt.perf.llm.memory import LLM_STRATEGIES
from costopt.perf.llm.step import step_time
from costopt.search.design_space import NO_NIC, enumerate_designs, single_design
from costopt.search.llm_search import predict_llm, solve_llm

TINY = TransformerConfig("tiny", layers=2, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, vocab=1000,
                         seq_len=1000, params_override=100_000_000)
REFERENCE = PACKAGE_DIR / "catalogs" / "reference-2026.toml"


def _params():
    # no overlap, no latency, no memory traffic of the collectives: each exposed term is the link time alone
    return replace(default_llm_params(), collective_latency_us=0.0, overlap_fraction=0.0,
                   collective_hbm_bytes_per_byte_all_gather=0.0, collective_hbm_bytes_per_byte_reduce_scatter=0.0,
                   collective_hbm_bytes_per_byte_all_reduce=0.0)


def _step(M=18, domain=72.0, strategy=0, tp=1, pp=1, cp=1, b=2, m=1):
    """One design of 4-GPU trays, NVLink 1e11 B/s per GPU, all NICs of a tray 1e10 B/s."""
    one = lambda v: np.array([v], dtype=float)  # noqa: E731
    return step_time(ArchArrays.of(TINY, 1), _params(), peak_flops=one(1e15), mem_bw_bytes_per_s=one(1e12),
                     matmul_fraction=one(0.5), attention_fraction=one(0.25), intra_bytes_per_s=one(1e11),
                     node_bytes_per_s=one(1e10), gpus_per_node=one(4), nodes=one(M), strategy=np.array([strategy]),
                     tp=one(tp), pp=one(pp), micro_batch=one(b), grad_accum=one(m), ckpt=np.array([0]), cp=one(cp),
                     nvlink_domain_gpus=None if domain is None else one(domain))


# ---- the data-parallel collective: inside the domain across trays, and between domains --------------------

def test_all_reduce_inside_one_rack_is_nvlink_across_trays():
    # ddp, t = p = 1, 18 trays x 4 = 72 GPUs, D = 72: g = min(d, D/t) = 72 ranks in the domain, M_d = 1
    # C = 2·(g−1)/g·X/B_intra, X = 4·P = 4e8 B: 2·71/72·4e8/1e11 = 7.888889 ms; no NIC phase
    assert _step(domain=72.0).t_dp_exposed_s[0] == pytest.approx(2 * 71 / 72 * 4e8 / 1e11, rel=1e-12)
    # the same 18 trays if NVLink stopped at the tray (D = G = 4): g = 4, M_d = 18,
    # C = 2·3/4·4e8/1e11 + 2·17/18·(4e8/4)/(1e10/4) = 6 ms + 75.5556 ms
    assert _step(domain=None).t_dp_exposed_s[0] == pytest.approx(2 * 3 / 4 * 4e-3 + 2 * 17 / 18 * 1e8 / 2.5e9,
                                                                  rel=1e-12)


def test_all_reduce_between_racks_leaves_by_the_nics():
    # two racks (M = 36, N = 144), D = 72: g = 72, M_d = 2; after the in-domain phase each GPU carries 1/72 of
    # X through its share of the tray's NICs (1e10/4 B/s): 2·71/72·4e-3 + 2·(1/2)·(4e8/72)/2.5e9 = 7.8889 + 2.2222 ms
    want = 2 * 71 / 72 * 4e-3 + 2 * 0.5 * (4e8 / 72) / 2.5e9
    assert _step(M=36).t_dp_exposed_s[0] == pytest.approx(want, rel=1e-12)


def test_hsdp_across_racks_all_reduces_each_gpus_shard():
    # hsdp on two racks, D = 72: fsdp inside the rack (g = 72, M_d = 1 for the gathers: NVLink only), then the
    # all-reduce of each GPU's shard 4P/72 across the 2 racks at its NIC share: 2·(1/2)·(4e8/72)/2.5e9 = 2.2222 ms;
    # per micro-batch (m = 1) the in-rack gathers: all-gather 2P twice and reduce-scatter 4P over 72 ranks:
    # (2·2e8 + 4e8)·71/72 / 1e11 = 7.8889 ms
    want = (2 * 2e8 + 4e8) * 71 / 72 / 1e11 + 2 * 0.5 * (4e8 / 72) / 2.5e9
    assert _step(M=36, strategy=LLM_STRATEGIES.index("hsdp")).t_dp_exposed_s[0] == pytest.approx(want, rel=1e-12)


# ---- tensor, context and pipeline parallel ----------------------------------------------------------------

def test_tensor_parallel_across_two_trays_runs_at_nvlink():
    # t = 8 on 4-GPU trays in one 72-GPU domain: 4 all-reduces per layer of b·s·h·2 bytes, 2 layers:
    # T_tp = m·L·4·2·(t−1)/t·b·s·h·2/B_intra = 2·4·2·7/8·(2·1000·1024·2)/1e11 = 0.57344 ms
    assert _step(tp=8).t_tp_s[0] == pytest.approx(2 * 4 * 2 * 7 / 8 * 4_096_000 / 1e11, rel=1e-12)


def test_context_parallel_ring_inside_the_domain():
    # t = 4, c = 8: t·c = 32 ≤ D = 72, the ring is on NVLink. K and V of s/c = 125 tokens:
    # kv = 2·125·b·h·(a_kv/a)/t·2 = 2·125·2·1024/4·2 = 256,000 B; 3·(c−1) transfers per layer, 2 layers, no overlap:
    # T_cp = 3·7·256,000·2/1e11 = 0.10752 ms (one micro-batch)
    assert _step(tp=4, cp=8).t_cp_s[0] == pytest.approx(3 * 7 * 256_000 * 2 / 1e11, rel=1e-12)
    # with the domain of a tray (D = 4) the same ring crosses trays by the NICs, 1e10/4 per GPU: 4.3008 ms
    assert _step(tp=4, cp=8, domain=None).t_cp_s[0] == pytest.approx(3 * 7 * 256_000 * 2 / 2.5e9, rel=1e-12)


def test_pipeline_point_to_point_inside_and_between_racks():
    # p = 2, t = 1, v = 1, m = 1: (v·m + p − 1) = 2 sends of 2·b·s·h·2/t = 8,192,000 B each way
    # one rack (N = 72 ≤ D): NVLink, 2·8,192,000/1e11 = 0.16384 ms
    assert _step(pp=2).t_pp_s[0] == pytest.approx(2 * 8_192_000 / 1e11, rel=1e-12)
    # two racks (N = 144 > D): the stage boundary between racks sets the pace, NIC share 2.5e9: 6.5536 ms
    assert _step(M=36, pp=2).t_pp_s[0] == pytest.approx(2 * 8_192_000 / 2.5e9, rel=1e-12)


def test_a_domain_of_one_node_is_the_old_model():
    # D = G (an HGX server) gives the same numbers as no domain at all, term by term
    a, b = _step(M=2, domain=4.0, tp=2, pp=2, cp=2, strategy=1), _step(M=2, domain=None, tp=2, pp=2, cp=2, strategy=1)
    for f in ("t_step_s", "t_dp_exposed_s", "t_tp_s", "t_pp_s", "t_cp_s"):
        assert getattr(a, f)[0] == getattr(b, f)[0]


# ---- catalog, design space, cost ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cat():
    return load_catalog(None)


def test_catalog_entries(cat):
    g2, g3 = cat.gpus["gb200"], cat.gpus["gb300"]
    assert (g2.memory_gb, g3.memory_gb) == (186, 288)
    assert (g2.tflops_bf16, g2.tflops_fp8, g2.tflops_fp4) == (2500, 5000, 10000)
    assert (g3.tflops_fp8, g3.tflops_fp4) == (5000, 15000)
    assert g2.gpu_link_gbs == 900  # NVLink 5, 1.8 TB/s per GPU both ways
    for cid in ("gb200-nvl72", "gb300-nvl72"):
        ch = cat.chassis_by_id[cid]
        assert (ch.gpu_slots, ch.nvlink_domain_gpus, ch.rack_system_nodes) == (4, 72, 18)
        assert ch.liquid_cooling_required and 120 <= ch.rack_system_power_kw <= 140
        assert "price_usd" in ch.estimates and "price_usd" in cat.gpus[cid.split("-")[0]].estimates
    assert cat.gpus["b300"] and cat.chassis_by_id["sxm8-b300"].gpu_slots == 8  # HGX B300 8-GPU


def _reference_data():
    with open(REFERENCE, "rb") as fh:
        return tomllib.load(fh)


@pytest.mark.parametrize("change, words", [
    ({"nvlink_domain_gpu": 72}, "unknown key"),
    ({"nvlink_domain_gpus": 70}, "whole multiple of gpu_slots"),
    ({"rack_system_units": None}, "go together"),
])
def test_rack_fields_are_validated_strictly(change, words):
    data = _reference_data()
    entry = next(c for c in data["chassis"] if c["id"] == "gb200-nvl72")
    for k, v in change.items():
        if v is None:
            entry.pop(k)
        else:
            entry[k] = v
    with pytest.raises(InputError, match=words):
        validate_catalog(data, "reference-2026.toml")


def test_design_space_buys_whole_racks(cat):
    s = enumerate_designs(cat, max_nodes=256, strategies=("ring",), gpu_ids=["gb200"])
    assert len(s) and set((s.nodes % 18).tolist()) == {0}
    assert s.nodes.min() == 18 and s.nodes.max() == 252  # 14 racks within 256 nodes
    assert (s.nic_idx != NO_NIC).all()


def test_one_rack_costs_by_hand(cat):
    s = single_design(cat, "gb200", 4, 18, "ib-ndr", "ring", nics_per_node=1)
    c = evaluate_costs(s, cat.site, facility=cat.facility)
    # 72 x $36,300 + 18 trays x $21,500 + 18 NICs x $1,500 + one 64-port switch 64 x $560 + 18 links x $730
    # + one facility rack ($1,500) and 2 PDUs ($3,000) for the switch (the NVL72 rack is in the tray price)
    assert c.capex_usd[0] == pytest.approx(2_613_600 + 387_000 + 27_000 + 35_840 + 13_140 + 1_500 + 3_000)
    # the rack's 132 kW (NICs inside) + 64 switch ports x 15 W; 48U + the switch's 1U
    assert c.power_kw[0] == pytest.approx(132 + 0.96)
    assert c.rack_units[0] == 49 and c.system_racks[0] == 1 and c.racks[0] == 1
    assert c.buildable[0]  # over the facility's 80 kW liquid rack, but the rack is its own
    # liquid PUE 1.2 (liquid cooling required): 132.96 kW x 0.75 x 1.2 x $0.0826 x 8,766 h
    assert c.energy_usd_per_year[0] == pytest.approx(132.96 * 0.75 * 1.2 * 0.0826 * 8766, rel=1e-9)


def test_tensor_parallel_above_the_tray_needs_the_domain(cat):
    cfg = load_llm_model("llama3_70b")
    space = single_design(cat, "gb200", 4, 18, "ib-ndr", "ring", nics_per_node=4)
    one = lambda v: np.array([v])  # noqa: E731
    lay = Layout(one(LLM_STRATEGIES.index("zero1")), one(8), one(1), one(1), one(0))
    ev = evaluate_layouts(cfg, space, lay, precision="fp8", global_batch=512)
    assert ev.valid[0]
    tray_only = dataclasses.replace(space, chassis=[c.model_copy(update={"nvlink_domain_gpus": None,
                                                                          "rack_system_nodes": None})
                                                    for c in space.chassis])
    ev2 = evaluate_layouts(cfg, tray_only, lay, precision="fp8", global_batch=512)
    assert not ev2.valid[0] and ev2.why_not[0].startswith("tensor parallel degree above")


# ---- predict and solve -------------------------------------------------------------------------------------

def test_predict_one_gb200_rack():
    rec = predict_llm("llama3_70b", "gb200", 4, 18, "ib-ndr", "zero1", tp=4, pp=2, nics_per_node=4)
    assert rec["total_gpus"] == 72 and rec["feasible"]
    peak_bf16 = 2500e12
    # hardware bound: tokens/s per GPU ≤ peak / F_model, and MFU is tokens/s per GPU x F_model / peak
    f = rec["flops_per_token"]
    assert 0 < rec["tokens_per_s_per_gpu"] < peak_bf16 / f
    assert rec["mfu"] == pytest.approx(rec["tokens_per_s_per_gpu"] * f / peak_bf16, rel=1e-9)
    assert "6·P + 12·L·h·s" in rec["mfu_basis"]
    assert rec["memory_model_states_gb"] + rec["memory_activations_gb"] == pytest.approx(rec["memory_per_gpu_gb"])
    assert rec["bottleneck"] in ("compute", "memory-bandwidth", "data-parallel", "tensor-parallel", "pipeline",
                                 "context-parallel")


def test_solve_5m_can_buy_one_rack_and_honours_power():
    out = solve_llm(5_000_000, "llama3_70b", tokens=1e12, gpus=["gb200"])
    best = out["best"]
    assert best["gpu"] == "gb200" and best["nodes"] == 18 and best["total_gpus"] == 72
    assert any(line["part_id"] == "gb200-nvl72-rack" and line["quantity"] == 1 for line in best["bom"])
    # a second rack (72 x $36,300 + 18 x $21,500 = $3.0M before its network) does not fit the rest of $5M
    assert 5_000_000 - best["cost_usd"] < 72 * 36_300 + 18 * 21_500
    with pytest.raises(InfeasibleError):
        solve_llm(5_000_000, "llama3_70b", tokens=1e12, gpus=["gb200"], max_power_kw=100)


def test_five_million_solve_prices_both_racks_to_within_one_rack():
    # the $5M llama3_70b solve over the whole reference catalog: each NVL72 system's best design is one whole rack
    # (18 trays, 72 GPUs), and what is left of the budget buys no second rack (18 x (tray + 4 GPUs) before NICs)
    cat = load_catalog(None)
    res = solve_llm(5e6, "llama3_70b", tokens=1e12, catalog=cat)
    rows = {d["gpu"]: d for d in [res["best"], *res["best_per_gpu"]]}
    for gpu in ("gb200", "gb300"):
        d = rows[gpu]
        ch = cat.chassis_by_id[d["chassis"]]
        rack = 18 * (ch.price_usd + 4 * cat.gpus[gpu].price_usd)
        assert d["nodes"] == 18 and d["total_gpus"] == 72
        assert 0 <= 5e6 - d["cost_usd"] < rack, (gpu, d["cost_usd"], rack)
