"""`compare`, `export` and `report` evaluate a large design space in pieces (issue 13, bounded memory),
through the one mechanism `solve` uses (`api.evaluate_bounded`): with a piece size far below the space,
every answer is the same as with the whole space at once.

The reference is each command's own answer on the whole space (CHUNK_DESIGNS large), in the same test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costopt.search import api
from costopt.purchase import purchasing as P
from costopt.purchase import report as R
from costopt.hardware.catalog import load_catalog
from costopt.hardware.cost import CostBasis
from costopt.search.design_space import count_designs

MINI = Path(__file__).parent / "fixtures" / "mini.toml"
PIECE = 37  # designs per piece: the mini catalog's spaces (about 200-1,500 designs) in many pieces


@pytest.fixture()
def dearer_mini(tmp_path):
    p = tmp_path / "mini-dearer.toml"
    p.write_text(MINI.read_text().replace('name = "mini-test"', 'name = "mini-dearer"')
                 .replace("price_usd = 30000", "price_usd = 36000"), encoding="utf-8")
    return p


def test_the_spaces_are_larger_than_a_piece():
    cat = load_catalog(MINI)
    assert count_designs(cat, **api._space_kwargs(cat, 300_000, CostBasis())) > 5 * PIECE


def test_compare_in_pieces_is_compare_whole(monkeypatch, dearer_mini):
    def run():
        cmp = P.compare([MINI, dearer_mini], "resnet50", 300_000, P.Options())
        return json.dumps(cmp.to_json_dict(), sort_keys=True), [a.result.to_json_dict() for a in cmp.answers]

    whole = run()
    monkeypatch.setattr(api, "CHUNK_DESIGNS", PIECE)
    assert run() == whole


@pytest.mark.parametrize("objective", ["throughput", "cost-per-throughput"])
def test_export_table_in_pieces_is_the_whole_table(monkeypatch, objective):
    opts = P.Options(objective=objective)
    keep = lambda piece: P.table_rows(piece, 300_000)  # noqa: E731
    ev, counts = P.evaluate_catalog_bounded(MINI, "resnet50", 300_000, opts, keep=keep)
    assert counts is None
    whole = P.ranked_table(ev, 300_000, objective).to_csv()
    monkeypatch.setattr(api, "CHUNK_DESIGNS", PIECE)
    ev, counts = P.evaluate_catalog_bounded(MINI, "resnet50", 300_000, opts, keep=keep)
    assert counts is not None and counts[0] > len(ev)  # pieces, and not every design kept
    assert P.ranked_table(ev, 300_000, objective).to_csv() == whole


def test_report_in_pieces_has_the_same_numbers(monkeypatch):
    monkeypatch.setattr(R, "_png", lambda fig: b"")  # the figures' pixels are not compared: no rendering

    def run():
        rep = R.build_report("resnet50", 300_000, MINI, P.Options(), top=5, progress=False)
        return rep, {s.id: (s.tables, s.notes, s.intro) for s in rep.sections}

    rep, whole = run()
    monkeypatch.setattr(api, "CHUNK_DESIGNS", PIECE)
    rep2, pieces = run()
    assert rep2.solve_json == rep.solve_json
    assert pieces.keys() == whole.keys()
    for sid in whole:
        tables, notes, intro = pieces[sid]
        assert (tables, notes) == whole[sid][:2], sid
        if sid == "pareto":  # the grey cloud is what was kept, and the text says so
            assert "evaluated in pieces" in intro and "evaluated in pieces" not in whole[sid][2]
        else:
            assert intro == whole[sid][2], sid
