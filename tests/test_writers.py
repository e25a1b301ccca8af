"""Structured files are written by writers, never by string formatting (issue 26, item 1).

Each writer gets hostile strings (newlines, quotes, brackets, `=`, a NUL, TOML's triple quotes, an escape
sequence) and the file is read back with an independent reader (tomllib, the csv module, json): it holds
exactly the rows written, each string intact. The exploit this guards against: `catalog import` built its
TOML with f-strings, so a newline in a price list's Region field (or in the file's name) added tables,
e.g. a fake instance at $0.01/h that `solve` then recommended.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib

import pandas as pd
import pytest
from typer.testing import CliRunner

from costopt.cli.main import app

HOSTILE = [
    'us-east-1"\n[[instance]]\nid = "fake"\ngpu = "h100-sxm"\ngpu_count = 8\nusd_per_hour = 0.01\n',
    "x'''\n[catalog]\nname = 'evil'",
    'a = "b" ] [ [[x]] # comment',
    "nul\x00here",
    "esc \x1b[31m red \x1b]0;title\x07",
    "tab\tand\r\ncrlf \\ backslash \\u0041",
]
HEADER = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
          "SpotPrice", "Region", "AvailabilityZone"]


def _cli(*args):
    r = CliRunner().invoke(app, [*map(str, args)])
    return r.exit_code, r.output


@pytest.mark.parametrize("region", HOSTILE)
def test_catalog_import_region_is_one_string(tmp_path, region):
    # one row: an 8-GPU H100 instance at $98.32/h; its Region is hostile. The catalog written must hold
    # exactly that one instance, its region the hostile text byte for byte, and no other table.
    prices = tmp_path / "vms.csv"
    with open(prices, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerow(["p5.48xlarge", "H100", "8", "192", "2048", "", "98.32", "", region, "a"])
    out = tmp_path / "out.toml"
    rc, text = _cli("catalog", "import", prices, "-o", out, "--price-date", "2025-03-17", "--region", region)
    if "\x00" in region:  # a NUL makes the price list a binary file: refused where it is read (core/files.py)
        assert rc == 2 and "a NUL byte" in text and len(text.strip().splitlines()) == 1, text
        assert not out.exists()
        return
    assert rc == 0, text
    doc = tomllib.loads(out.read_text(encoding="utf-8"))
    assert set(doc) == {"catalog", "instance"}
    assert len(doc["instance"]) == 1
    inst = doc["instance"][0]
    assert inst["id"] == "p5.48xlarge" and inst["usd_per_hour"] == 98.32 and inst["gpu_count"] == 8
    assert inst["region"] == region
    assert doc["catalog"]["name"] == "vms" and doc["catalog"]["kind"] == "cloud"


def test_catalog_import_file_name_and_name_option_stay_strings(tmp_path):
    # the file's name and --name reach the catalog's description, source texts and name: each stays a string
    name = 'vms\n[[instance]]\nid = "fake" = ]'
    prices = tmp_path / (name + ".csv")
    with open(prices, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerow(["g6.xlarge", "L4", "1", "4", "16", "", "0.8048", "", "us-east-1", "a"])
    out = tmp_path / "out.toml"
    rc, text = _cli("catalog", "import", prices, "-o", out, "--price-date", "2025-03-17")
    assert rc == 0, text
    doc = tomllib.loads(out.read_text(encoding="utf-8"))
    assert [i["id"] for i in doc["instance"]] == ["g6.xlarge"]
    assert doc["instance"][0]["price_source"] == f"{name}.csv row 2 (Price, us-east-1)"
    assert doc["catalog"]["description"] == f"Imported from {name}.csv, region us-east-1"
    # no line of the file outside a string starts a table other than the two written
    tables = [ln for ln in out.read_text(encoding="utf-8").splitlines() if ln.startswith("[")]
    assert tables == ["[catalog]", "[[instance]]"]


def test_catalog_import_hostile_instance_type_is_refused_or_exact(tmp_path):
    # an instance type is an id: a hostile one is refused with one line (exit 2), never split into tables
    prices = tmp_path / "vms.csv"
    with open(prices, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerow(['p5"\n[[instance]]\nid = "fake', "H100", "8", "192", "2048", "", "98.32", "", "us-east-1", "a"])
    out = tmp_path / "out.toml"
    rc, text = _cli("catalog", "import", prices, "-o", out, "--price-date", "2025-03-17")
    assert rc == 2, text
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert not out.exists()


def test_csv_export_reads_back_exactly(tmp_path):
    # the csv writer (pandas / the csv module) quotes what needs quoting: read back with csv.reader
    from costopt.purchase.export import export_table

    texts = [s.replace("\x00", "") for s in HOSTILE]  # NUL: csv has no escape for it (stripped on write)
    df = pd.DataFrame({"gpu": texts, "bottleneck": list(reversed(texts)), "cost_usd": [1.5] * len(texts)})
    out = tmp_path / "t.csv"
    export_table(df, "csv", out)
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["gpu", "bottleneck", "cost_usd"]
    assert len(rows) == 1 + len(texts)
    for row, a, b in zip(rows[1:], texts, reversed(texts)):
        assert row[:2] == [a, b]


def test_json_writers_read_back_exactly():
    from costopt.cli.common import _json_dump
    from costopt.core.files import json_with_columns

    head = {"title": HOSTILE[0]}
    cols = {"name": list(HOSTILE), "n": list(range(len(HOSTILE)))}
    doc = json.loads(json_with_columns(head, "rows", cols, {"tail": HOSTILE[1]}))
    assert doc["title"] == HOSTILE[0] and doc["tail"] == HOSTILE[1]
    assert doc["rows"] == [{"name": s, "n": i} for i, s in enumerate(HOSTILE)]
    assert json.loads(_json_dump({"x": HOSTILE})) == {"x": HOSTILE}


def test_json_export_reads_back_exactly():
    from costopt.purchase.export import export_table

    df = pd.DataFrame({"gpu": HOSTILE, "cost_usd": [2.0] * len(HOSTILE)})
    rows = json.loads(export_table(df, "json", None))
    assert [r["gpu"] for r in rows] == HOSTILE and len(rows) == len(HOSTILE)


def test_csv_legend_reads_back_exactly():
    from costopt.purchase.export import _legend_csv

    texts = [s.replace("\x00", "") for s in HOSTILE]
    rows = [("input", t, t[::-1], "m") for t in texts]
    back = list(csv.reader(io.StringIO(_legend_csv(rows), newline="")))
    assert back[0] == ["kind", "name", "value", "meaning"]
    assert [tuple(r) for r in back[1:]] == rows


def test_toml_writer_round_trips_every_hostile_string():
    # the writer catalog import uses (tomli-w), NUL and escape sequences included: tomllib reads back each
    import tomli_w

    doc = {"catalog": {"name": HOSTILE[1], "description": HOSTILE[3]},
           "instance": [{"id": f"i{i}", "region": s, "source": s[::-1]} for i, s in enumerate(HOSTILE)]}
    assert tomllib.loads(tomli_w.dumps(doc)) == doc
