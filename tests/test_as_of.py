"""`--as-of DATE`: the price-age warning counts to a stated day, printed in the output, so the same
inputs give the same bytes on any day the command is run (costopt/search/api.py `choose`, `predict`)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from typer.testing import CliRunner

import costopt.search.api as api_mod
from costopt.core.errors import InputError
from costopt.cli.main import app

# a small space: one GPU type, 8 per node (the A100 80 GB board; its oldest part price is from 2024-2026)
SOLVE = ["solve", "--budget", "200000", "--model", "resnet50", "--gpu", "a100-sxm-80gb", "--gpus-per-node", "8",
         "--strategy", "ring", "--top", "2"]


class _Clock(dt.date):
    """`date` whose today() is set by the test (the clock the command would otherwise read)."""

    day = dt.date(2026, 12, 1)

    @classmethod
    def today(cls):
        return cls.day


def _run(monkeypatch, clock_day: dt.date, *args: str) -> str:
    _Clock.day = clock_day
    monkeypatch.setattr(api_mod, "date", _Clock)
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    return r.output


def test_as_of_makes_solve_byte_identical_on_another_day(monkeypatch):
    # the same command on two clock days, once without and once with --as-of
    a = _run(monkeypatch, dt.date(2026, 12, 1), *SOLVE, "--format", "json")
    b = _run(monkeypatch, dt.date(2031, 6, 1), *SOLVE, "--format", "json")
    assert a != b  # without --as-of the price age follows the clock (what the option fixes)
    assert json.loads(a)["as_of"] == "2026-12-01" and json.loads(b)["as_of"] == "2031-06-01"
    fixed = [_run(monkeypatch, day, *SOLVE, "--format", "json", "--as-of", "2027-03-15")
             for day in (dt.date(2026, 12, 1), dt.date(2031, 6, 1))]
    assert fixed[0] == fixed[1]
    out = json.loads(fixed[0])
    assert out["as_of"] == "2027-03-15"
    # the age the warning quotes is counted to the stated day: oldest price date -> 2027-03-15
    oldest = out["best"]["oldest_price_date"]
    y, m, d = (list(map(int, oldest.split("-"))) + [1, 1])[:3]
    age_years = (dt.date(2027, 3, 15) - dt.date(y, m, d)).days / 365.25
    if age_years > 365 / 365.25:
        assert f"{age_years:.1f} years old" in out["best"]["price_warning"]
    else:
        assert out["best"]["price_warning"] == ""


def test_as_of_table_output_names_the_day_and_is_identical(monkeypatch):
    runs = [_run(monkeypatch, day, *SOLVE, "--as-of", "2030-01-01") for day in (dt.date(2026, 1, 1), dt.date(2035, 1, 1))]
    assert runs[0] == runs[1]
    assert "age counted to 2030-01-01" in runs[0]


def test_as_of_on_predict_and_bom(monkeypatch):
    args = ["--gpu", "h100-sxm", "--gpus-per-node", "8", "--nodes", "2", "--nic", "ib-ndr", "--format", "json",
            "--as-of", "2028-02-29"]
    p = [_run(monkeypatch, day, "predict", "--model", "resnet50", "--strategy", "ring", *args)
         for day in (dt.date(2026, 1, 1), dt.date(2040, 1, 1))]
    assert p[0] == p[1] and json.loads(p[0])["as_of"] == "2028-02-29"
    b = _run(monkeypatch, dt.date(2040, 1, 1), "bom", *args)
    assert json.loads(b)["as_of"] == "2028-02-29"


@pytest.mark.parametrize("bad", ["2027-02-30", "tomorrow", "2027-03"])
def test_as_of_bad_date_is_exit_2(bad):
    r = CliRunner().invoke(app, [*SOLVE, "--as-of", bad])
    assert r.exit_code == 2 and "--as-of" in r.output and "Traceback" not in r.output


def test_as_of_reaches_the_report_pipeline(monkeypatch):
    # report, compare and rent-vs-buy solve through purchasing.Options: the stated day, not the clock's
    from costopt.purchase import purchasing as P
    from costopt.purchase.report import _recommended

    _Clock.day = dt.date(2040, 1, 1)
    monkeypatch.setattr(api_mod, "date", _Clock)
    res, _ = P.solve_catalog(None, "resnet50", 200_000, P.Options(as_of="2027-03-15"), top=1)
    assert res.as_of == "2027-03-15"
    notes = " ".join(_recommended(res, "USD capex", False).notes)
    assert "ages counted to 2027-03-15" in notes
    with pytest.raises(InputError, match="as-of"):
        P.solve_catalog(None, "resnet50", 200_000, P.Options(as_of="2027-02-30"), top=1)
