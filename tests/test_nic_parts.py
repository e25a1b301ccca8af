"""NICs as parts (issue 22 item 3): adapters per node are a design variable (1, 2, 4, 8 up to what the
chassis takes; one per GPU is the rail-optimised DGX/HGX node), on the data-parallel and the
large-model path; NICs carry `segment` and `lifecycle` like GPUs, and the default part filter leaves an
end-of-life NIC (InfiniBand EDR) out and says so."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

import costopt
from costopt.hardware.catalog import Catalog, load_catalog
from costopt.hardware.catalog_schema import Catalog as CatalogSchema
from costopt.hardware.part_filter import KEPT, REASONS, PartFilter
from costopt.search.design_space import enumerate_designs, nic_counts

REF = Path(costopt.__file__).parent / "catalogs" / "reference-2026.toml"


@pytest.fixture(scope="module")
def cat():
    return load_catalog(None)


def test_nic_counts_are_powers_of_two_up_to_the_chassis_and_its_own_maximum():
    assert nic_counts(1) == [1]
    assert nic_counts(4) == [1, 2, 4]
    assert nic_counts(8) == [1, 2, 4, 8]
    assert nic_counts(6) == [1, 2, 4, 6]  # a chassis that takes 6: every power of two below, and 6


@pytest.mark.parametrize("strategies", [("ring", "hierarchical", "ps"), ("ring",)])  # data-parallel, large-model
def test_design_space_offers_every_adapter_count_the_chassis_takes(cat, strategies):
    space = enumerate_designs(cat, max_nodes=4, strategies=strategies, gpu_ids=["h100-sxm", "h100-pcie"])
    for ch_id, want in (("sxm8-h100", {1, 2, 4, 8}), ("pcie5-8gpu", {1, 2, 4}), ("pcie5-4gpu", {1, 2})):
        ci = [c.id for c in space.chassis].index(ch_id)
        sel = (space.chassis_idx == ci) & (space.nodes > 1)
        assert set(space.nics_per_node[sel].tolist()) == want, ch_id
        for n in (2, 3):  # every node count has every adapter count
            assert set(space.nics_per_node[sel & (space.nodes == n)].tolist()) == want


def test_every_reference_nic_states_segment_and_lifecycle_source():
    raw = tomllib.loads(REF.read_text())
    for n in raw["nic"]:
        assert n.get("segment") in ("datacenter", "workstation", "consumer"), n["id"]
        if n.get("lifecycle", "current") != "current":
            assert n.get("lifecycle_source", "").strip(), n["id"]
    edr = next(n for n in raw["nic"] if n["id"] == "ib-edr")
    assert edr["lifecycle"] == "end_of_life" and edr["end_of_life_date"]
    # no end-of-sale notice was found: the source says it is an estimate, and so does the estimates list
    assert edr["lifecycle_source"].startswith("estimate") and "end_of_life_date" in edr["estimates"]


def test_default_filter_leaves_end_of_life_nic_out_and_include_eol_opens_it(cat):
    space = enumerate_designs(cat, max_nodes=3, strategies=("ring",), gpu_ids=["h100-pcie"])
    edr = np.array([n.id for n in space.nics] + ["none"])[np.where(space.nic_idx < 0, len(space.nics),
                                                                    space.nic_idx)] == "ib-edr"
    assert edr.any()
    default = PartFilter.from_options(None, None, ["h100-pcie"], cat).design_reasons(space)
    assert np.all(default[edr] == REASONS.index("end_of_life"))
    assert np.all(default[~edr] == KEPT)  # named GPU, current chassis and NICs: kept
    opened = PartFilter.from_options(["eol"], None, ["h100-pcie"], cat).design_reasons(space)
    assert np.all(opened == KEPT)


def test_consumer_nic_is_left_out_like_a_consumer_gpu():
    data = tomllib.loads(REF.read_text())
    for n in data["nic"]:
        if n["id"] == "10gbe":
            n["segment"] = "consumer"
    cat = Catalog.from_data(CatalogSchema.model_validate(data).model_dump())
    space = enumerate_designs(cat, max_nodes=2, strategies=("ring",), gpu_ids=["l40s"])
    ten = (space.nic_idx >= 0) & (np.array([n.id for n in space.nics], dtype=object)[np.maximum(space.nic_idx, 0)]
                                  == "10gbe")
    assert ten.any()
    reasons = PartFilter.from_options(None, None, None, cat).design_reasons(space)
    assert np.all(reasons[ten] == REASONS.index("consumer"))
    assert np.all(PartFilter.from_options(["consumer"], None, None, cat).design_reasons(space)[ten] == KEPT)


def test_solve_leaves_edr_out_and_the_sentence_names_the_nic(cat):
    from costopt.hardware.part_filter import excluded_sentence
    from costopt.search.api import solve

    r = solve(200000, "inception_v3", gpus=["h100-pcie"], max_nodes=4)
    assert r.best["nic"] != "ib-edr" and r.excluded["counts"].get("end_of_life", 0) > 0
    # a design left out for its NIC (the GPU itself only legacy): the sentence says which part is end-of-life
    best = {"total_gpus": 16, "gpu": "h100-pcie", "chassis": "pcie5-8gpu", "nic": "ib-edr", "cost_usd": 190000.0,
            "excluded_reason": "end_of_life"}
    text = excluded_sentence({"counts": {"end_of_life": 3}, "offered": "current parts", "best": best}, "throughput",
                             None, cat)
    assert "16 x h100-pcie (datacenter, legacy, on NIC ib-edr: end-of-life since 2022) for $190,000" in text


def test_large_model_search_offers_adapters_per_node(cat):
    # 70B pre-training on 8-GPU PCIe nodes: 1, 2 and 4 adapters per node are all searched (the 8-GPU
    # PCIe servers take one per PCIe switch pair of GPUs), as 1-8 are on HGX nodes
    from costopt.search.llm_search import search_llm

    found = search_llm(2e6, "llama3_70b", catalog=cat, gpus=["rtx-pro-6000", "b200"], prune=False)
    s = found.space
    for ch_id, want in (("pcie5-8gpu", {1, 2, 4}), ("sxm8-b200", {1, 2, 4, 8})):
        ci = [c.id for c in s.chassis].index(ch_id)
        sel = (s.chassis_idx == ci) & (s.nodes > 1) & found.ev.fits
        assert set(s.nics_per_node[sel].tolist()) == want, ch_id
