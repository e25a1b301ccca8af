"""Checks on the built-in hardware catalog costopt/catalogs/reference-2026.toml."""

from __future__ import annotations

import pytest

from costopt.hardware.catalog import REFERENCE_CATALOG, load_catalog, parse_catalog
from costopt.core.errors import InputError
from costopt.core.units import gbps_to_bytes_per_s, pcie_x16_gbps

REQUIRED_GPUS = {
    "k80", "p100-pcie", "p100-sxm2", "v100-pcie-16gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4",
    "a10", "a100-pcie-40gb", "a100-sxm-80gb", "l4", "l40s", "h100-pcie", "h100-sxm", "h200-sxm",
    "b200", "rtx-4090", "mi300x",
}
REQUIRED_NICS = {
    "10gbe", "25gbe", "40gbe", "100gbe", "25gbe-roce", "100gbe-roce", "ib-edr", "ib-hdr", "ib-ndr",
}


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_default_path_is_reference(cat):
    assert cat.path == str(REFERENCE_CATALOG)
    assert cat.catalog.name == "reference-2026"
    assert cat.catalog.date == "2026-11-30"


def test_required_ids_present(cat):
    assert REQUIRED_GPUS <= set(cat.gpus)
    assert REQUIRED_NICS <= set(cat.nics)


def test_nic_transports(cat):
    for nid in ("10gbe", "25gbe", "40gbe", "100gbe"):
        assert cat.nics[nid].transport == "tcp"
    for nid in ("25gbe-roce", "100gbe-roce", "ib-edr", "ib-hdr", "ib-ndr"):
        assert cat.nics[nid].transport == "rdma"
    assert [cat.nics[n].line_rate_gbps for n in ("ib-edr", "ib-hdr", "ib-ndr")] == [100, 200, 400]


def test_every_gpu_fits_a_chassis(cat):
    for g in cat.gpu:
        assert any(cat.gpu_fits(g, ch) for ch in cat.chassis), g.id


def test_every_chassis_takes_a_gpu_and_a_nic(cat):
    for ch in cat.chassis:
        assert any(cat.gpu_fits(g, ch) for g in cat.gpu), ch.id
        nics = cat.nics_for(ch)
        assert nics, ch.id
        cap = pcie_x16_gbps(ch.pcie_gen)
        assert all(n.line_rate_gbps <= cap for n in nics), ch.id


def test_chassis_slot_counts(cat):
    assert {ch.gpu_slots for ch in cat.chassis} <= {1, 2, 4, 8}
    for gen in (3, 4, 5):
        slots = {ch.gpu_slots for ch in cat.chassis if ch.form_factor == "pcie" and ch.pcie_gen == gen}
        assert {2, 4, 8} <= slots, gen


def test_gen3_nics_exclude_200g_and_up(cat):
    gen3 = next(ch for ch in cat.chassis if ch.pcie_gen == 3)
    ids = {n.id for n in cat.nics_for(gen3)}
    assert "ib-edr" in ids and "100gbe" in ids
    assert "ib-hdr" not in ids and "ib-ndr" not in ids


def test_every_entry_has_provenance(cat):
    for e in [*cat.gpu, *cat.chassis, *cat.nic]:
        assert e.source.strip() and e.date.strip(), e.id
        assert e.price_source.strip() and e.price_date.strip(), e.id
        if e.estimates:
            assert e.notes.strip(), f"{e.id}: estimates listed but no notes explaining them"
    assert cat.site.source.strip() and cat.site.date.strip()


def test_every_gpu_has_throughput(cat):
    for g in cat.gpu:
        t = g.throughput
        assert t is not None, g.id
        assert t.model == "resnet50", g.id
        assert t.fp32_samples_per_s or t.amp_samples_per_s, g.id
        assert t.source.strip() and t.date.strip(), g.id
        if t.estimate:
            assert g.notes.strip(), g.id


def test_h200_throughput_anchor(cat):
    t = cat.gpus["h200-sxm"].throughput
    assert t.amp_samples_per_s == 3079
    assert t.fp32_samples_per_s == 2259
    assert t.estimate is False


def test_precision_support(cat):
    g = cat.gpus
    assert not g["k80"].supports("amp_fp16") and not g["k80"].supports("amp_bf16")
    for gid in ("p100-pcie", "p100-sxm2", "v100-pcie-16gb", "v100-sxm2-32gb", "t4"):
        assert g[gid].supports("amp_fp16") and not g[gid].supports("amp_bf16"), gid
    for gid in ("a10", "a100-sxm-80gb", "l4", "l40s", "h100-sxm", "h200-sxm", "b200", "rtx-4090", "mi300x"):
        assert g[gid].supports("amp_fp16") and g[gid].supports("amp_bf16"), gid
    # GeForce: the FP16-accumulate marketing figure is not the training rate.
    assert g["rtx-4090"].tflops_fp16 == g["rtx-4090"].tflops_bf16 == pytest.approx(165.2)


def test_link_values(cat):
    g = cat.gpus
    expect = {"p100-sxm2": 80, "v100-sxm2-16gb": 150, "a100-sxm-80gb": 300, "h100-sxm": 450,
              "h200-sxm": 450, "b200": 900, "mi300x": 448}
    for gid, gbs in expect.items():
        assert g[gid].gpu_link_gbs == gbs, gid
    for gid in ("k80", "t4", "a10", "l4", "l40s", "h100-pcie", "rtx-4090"):
        assert g[gid].gpu_link == "none" and g[gid].gpu_link_gbs == 0, gid


def test_k80_is_one_die(cat):
    k80 = cat.gpus["k80"]
    assert k80.memory_gb == 12 and k80.tdp_w == 150


def test_unit_sanity(cat):
    assert gbps_to_bytes_per_s(cat.nics["ib-ndr"].line_rate_gbps) == 50e9
    assert gbps_to_bytes_per_s(cat.nics["10gbe"].line_rate_gbps) == 1.25e9
    # A 400 Gb/s NIC needs a Gen5 x16 slot; a Gen4 x16 slot carries 248 Gb/s.
    assert pcie_x16_gbps(4) < cat.nics["ib-ndr"].line_rate_gbps <= pcie_x16_gbps(5)


def test_prices_and_power_positive(cat):
    for ch in cat.chassis:
        assert ch.price_usd > 0 and ch.power_overhead_w > 0 and ch.rack_units >= 1, ch.id
    for g in cat.gpu:
        assert g.price_usd > 0 and g.tdp_w > 0, g.id


def test_unknown_key_rejected():
    import tomllib

    data = tomllib.loads(REFERENCE_CATALOG.read_text(encoding="utf-8"))
    data["gpu"][0]["bogus_field"] = 1
    with pytest.raises(InputError, match="unknown key"):
        parse_catalog(data, "test")
