"""`export` and `rent-vs-buy` in bounded memory (issue 13): the table is written a block of rows at a time
from a design space evaluated in pieces (costopt/purchase/export_stream.py, costopt/core/sorted_runs.py), atomically,
never over an input; the cloud space of rent-vs-buy is evaluated in pieces too. With a piece far smaller
than the space, every byte is the same as with the whole space at once.
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import numpy as np
import pytest

from costopt.purchase import export_stream as X
from costopt.purchase import purchasing as P
from costopt.core.errors import InfeasibleError, InputError
from costopt.core.sorted_runs import SortedRuns

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
AWS = Path(__file__).resolve().parents[1] / "catalogs" / "aws-on-demand-2025.toml"
PIECE = 37  # designs per piece: the mini catalog's space (hundreds of designs) in many pieces

HEADER = ("rank,gpu,segment,lifecycle,chassis,gpus_per_node,nodes,total_gpus,nic,nics_per_node,transport,strategy,"
          "reduce_on,stack,batch_per_gpu,grad_accum,precision,overlap,cost_usd,usd_per_hour,cost_basis,capex_usd,"
          "energy_usd_per_year,power_kw,rack_units,throughput_samples_per_s,throughput_low_samples_per_s,"
          "throughput_high_samples_per_s,usd_per_sample_per_s,scaling_efficiency,t_iter_s,t_compute_s,t_comm_s,"
          "t_exposed_comm_s,bottleneck,busiest_nic_bytes_per_iter,time_to_train_h,compute_source,feasible")


def _export(tmp_path: Path, name: str, fmt: str, chunk: int | None, budget: float = 150_000, **opts) -> bytes:
    out = tmp_path / name
    X.export_ranked(MINI, "resnet50", budget, P.Options(**opts), fmt, out, [MINI], chunk_designs=chunk)
    return out.read_bytes()


def test_sorted_runs_merge_is_one_global_sort(tmp_path):
    """Runs of random keys (many ties on the first field), merged in small steps, come out in the order
    of Python's own sort of the key tuples."""
    rng = random.Random(7)
    dtype = [("a", "<f8"), ("b", "<i8")]
    runs = SortedRuns(tmp_path, dtype, ("a", "b"), rows_per_step=600)  # about 100-150 rows per run per step
    every = []
    for r in range(6):
        n = rng.choice([0, 1, 500, 2500])
        keys = np.zeros(n, dtype=dtype)
        keys["a"] = [rng.choice([0.5, 1.0, 2.0]) for _ in range(n)]
        keys["b"] = rng.sample(range(r * 10_000, r * 10_000 + 5000), n)  # unique over all runs
        keys = keys[runs.sort(keys)]
        recs = [f"{a}/{b}".encode() for a, b in keys.tolist()]
        runs.write_run([(keys[:n // 2], recs[:n // 2]), (keys[n // 2:], recs[n // 2:])])
        every += keys.tolist()
    got = [rec for _, recs in runs.merged() for rec in recs]
    assert got == [f"{a}/{b}".encode() for a, b in sorted(every)]


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("objective", ["throughput", "cost-per-throughput"])
def test_export_in_pieces_is_the_whole_table_byte_for_byte(tmp_path, monkeypatch, fmt, objective):
    monkeypatch.setattr(X, "FORMAT_ROWS", 5)  # many blocks per run too
    monkeypatch.setattr(X, "MERGE_ROWS", 7)  # and many merge steps: each run read a few rows at a time
    whole = _export(tmp_path, f"whole.{fmt}", fmt, None, objective=objective)
    runs = []
    write_run = SortedRuns.write_run
    monkeypatch.setattr(SortedRuns, "write_run", lambda self, blocks: (runs.append(1), write_run(self, blocks)))
    pieces = _export(tmp_path, f"pieces.{fmt}", fmt, PIECE, objective=objective)
    assert len(runs) >= 4  # several pieces, each its own run
    assert pieces == whole and len(whole) > 10_000
    if fmt == "csv":
        assert (tmp_path / "pieces.legend.csv").read_bytes() == (tmp_path / "whole.legend.csv").read_bytes()


def test_export_csv_header_rows_and_a_row_by_hand(tmp_path):
    text = _export(tmp_path, "d.csv", "csv", PIECE).decode()
    lines = text.splitlines()
    assert lines[0] == HEADER
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    thr = [float(r["throughput_samples_per_s"]) for r in rows]
    assert thr == sorted(thr, reverse=True)  # objective throughput: fastest first
    assert all(float(r["cost_usd"]) <= 150_000 for r in rows)
    # rank 1 by hand from tests/fixtures/mini.toml: 4 nodes of the 4-slot PCIe server with 4 half-speed cards
    # and one 100 Gb/s NIC: per node 15,000 + 4 x 5,000 + NIC 1,000 + cable 100 = 36,100, and one whole 4-port
    # switch 4 x 500 = 2,000: 4 x 36,100 + 2,000 + one rack (1,000) and its two PDUs (2 x 500) = 148,400 USD.
    # Power per node 4 x 300 W + 1,000 W overhead + 20 W NIC = 2.22 kW; 4 nodes 8.88 kW + the switch's
    # 4 ports x 15 W = 8.94 kW; 4 x 4 RU + 1 RU switch = 17 RU.
    first = rows[0]
    assert (first["gpu"], first["chassis"], first["nodes"], first["total_gpus"], first["nic"]) == \
        ("halfcard", "pcie4x4", "4", "16", "ib100")
    assert (first["cost_usd"], first["capex_usd"], first["power_kw"], first["rack_units"], first["cost_basis"]) == \
        ("148400", "148400", "8.94", "17", "capex")


def test_export_json_records_by_hand(tmp_path):
    data = json.loads(_export(tmp_path, "d.json", "json", PIECE))
    assert [d["rank"] for d in data] == list(range(1, len(data) + 1))
    assert list(data[0])[:3] == ["rank", "gpu", "segment"] and "compute_basis" in data[0]
    assert (data[0]["gpu"], data[0]["nodes"], data[0]["cost_usd"], data[0]["cost_basis"]) == \
        ("halfcard", 4, 148400.0, "USD capex (one-off purchase)")


def test_export_to_stdout_is_the_file(tmp_path):
    for fmt in ("csv", "json"):
        buf = io.BytesIO()
        X.export_ranked(MINI, "resnet50", 150_000, P.Options(), fmt, None, [MINI], stdout=buf, chunk_designs=PIECE)
        file = _export(tmp_path, f"d.{fmt}", fmt, None)
        assert buf.getvalue() == file + (b"\n" if fmt == "json" else b"")  # as typer.echo ended the json text


def test_export_failure_leaves_no_partial_file(tmp_path, monkeypatch):
    out = tmp_path / "d.csv"
    out.write_text("the user's old table\n")
    calls = []

    def breaks_midway(self):
        for block in original(self):
            calls.append(1)
            yield block
            raise OSError(28, "No space left on device")

    original = SortedRuns.merged
    monkeypatch.setattr(SortedRuns, "merged", breaks_midway)
    with pytest.raises(InputError, match="cannot write: No space left"):
        X.export_ranked(MINI, "resnet50", 150_000, P.Options(), "csv", out, [MINI], chunk_designs=PIECE)
    assert calls  # it failed after writing a block
    assert out.read_text() == "the user's old table\n"  # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]  # no temporary file, no run folder left


def test_export_runs_that_cannot_be_written_are_a_clean_error(tmp_path, monkeypatch):
    def disk_full(self, blocks):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SortedRuns, "write_run", disk_full)
    with pytest.raises(InputError, match="d.csv: cannot write: No space left"):
        X.export_ranked(MINI, "resnet50", 150_000, P.Options(), "csv", tmp_path / "d.csv", [MINI], chunk_designs=PIECE)
    assert list(tmp_path.iterdir()) == []


def test_export_never_writes_over_an_input(tmp_path):
    cat = tmp_path / "c.toml"
    cat.write_text(MINI.read_text())
    before = cat.read_bytes()
    for fmt, out in (("csv", cat), ("json", cat), ("csv", tmp_path / "c.legend.csv")):
        if out.name == "c.legend.csv":  # the legend of c.csv would be written over an input
            (tmp_path / "c.legend.csv").write_bytes(before)
            with pytest.raises(InputError, match="one of this command's inputs"):
                X.export_ranked(cat, "resnet50", 150_000, P.Options(), "csv", tmp_path / "c.csv",
                                [cat, tmp_path / "c.legend.csv"])
            continue
        with pytest.raises(InputError, match="one of this command's inputs"):
            X.export_ranked(cat, "resnet50", 150_000, P.Options(), fmt, out, [cat])
    assert cat.read_bytes() == before
    assert not (tmp_path / "c.csv").exists()


def test_xlsx_above_its_row_cap_is_refused_with_the_csv_way(tmp_path, monkeypatch):
    monkeypatch.setattr(X, "XLSX_MAX_ROWS", 20)
    out = tmp_path / "d.xlsx"
    with pytest.raises(InputError, match=r"over the 20 an xlsx export holds.*--format csv"):
        X.export_ranked(MINI, "resnet50", 150_000, P.Options(), "xlsx", out, [MINI], chunk_designs=PIECE)
    assert not out.exists()


def test_export_nothing_within_budget_is_infeasible(tmp_path):
    with pytest.raises(InfeasibleError):
        X.export_ranked(MINI, "resnet50", 1_000, P.Options(), "csv", tmp_path / "d.csv", [MINI], chunk_designs=PIECE)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("budget,kw", [(200_000, {}), (1_000_000, {"max_instances": 1})])
def test_rent_vs_buy_cloud_space_in_pieces_is_the_whole(budget, kw):
    """The cloud space in pieces of 37 designs gives the same answer, field for field; and with a cap of one
    instance, where no rented design is as fast as the owned one, the fastest-design fallback."""
    opts = dict(epochs=90, dataset_size=1_281_167, **kw)
    whole = P.rent_vs_buy("resnet50", budget, AWS, MINI, opts=P.Options(**opts))
    pieces = P.rent_vs_buy("resnet50", budget, AWS, MINI, opts=P.Options(**opts), chunk_designs=PIECE)
    assert json.dumps(pieces.to_json_dict(), sort_keys=True) == json.dumps(whole.to_json_dict(), sort_keys=True)
    if kw:  # the fallback: the rented design is slower than the owned one
        assert whole.rent["throughput_samples_per_s"] < whole.buy["throughput_samples_per_s"]
