"""`costopt bom`: the bill of materials of one named design (the same design `predict` takes)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from costopt.search import api
from costopt.core.errors import CostoptError, InputError
from costopt.cli.common import PredictFmt, _bom_table, _console, _fail, _fmt_money, _json_dump, res_tco_years
from costopt.cli.ownership import ownership_options

app = typer.Typer()


@app.command()
@ownership_options
def bom(
    gpu: str = typer.Option(..., help="GPU id from the catalog."),
    gpus_per_node: int = typer.Option(..., help="GPUs per node."),
    nodes: int = typer.Option(..., help="Number of nodes."),
    nic: Optional[str] = typer.Option(None, help="NIC id (needed for more than one node)."),
    nics_per_node: int = typer.Option(1, help="NIC adapters per node."),
    chassis: Optional[str] = typer.Option(None, help="Chassis id (default: cheapest that fits)."),
    model: Optional[str] = typer.Option("resnet50", help="Zoo model (only for the throughput shown beside the bill)."),
    strategy: str = typer.Option("ring", help="ring | hierarchical | ps (does not change the bill)."),
    catalog: Optional[Path] = typer.Option(None, help="Catalog TOML (default: built-in reference-2026)."),
    support_years: float = typer.Option(0.0, help="Years of hardware support bought up front (part of capex)."),
    tco_years: float = typer.Option(0.0, help="Also list the whole cost of owning over this many years, term by "
                                    "term (the terms: --colocation-usd-per-kw-month ...); 0: the bill (capex) alone."),
    fmt: PredictFmt = typer.Option(PredictFmt.table, "--format", help="table | json"),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="YYYY-MM-DD that price ages are counted to (default: "
                                        "today); the date used is printed, so a rerun with it gives the same output."),
    ownership: Optional[dict] = None,
) -> None:
    """Bill of materials of one design: line items with unit price, quantity, subtotal and source, summing to capex."""
    try:
        from costopt.perf.llm.arch import is_llm_model

        if model is not None and is_llm_model(model):
            raise InputError(f"--model {model}: bom shows a data-parallel zoo model's throughput beside the bill; for "
                             f"a transformer run `costopt predict --model {model} ...`, which prints the same bill "
                             "with its tokens/s", field="model")
        from costopt.hardware.catalog import load_catalog
        from costopt.search.limits import check_cost_options

        from costopt.hardware.site_terms import with_site_terms

        cat = with_site_terms(load_catalog(catalog), ownership or {}, priced=bool(tco_years))
        check_cost_options(cat, support_years)  # --support-years on a catalog with no support price: refused
        if tco_years and cat.is_cloud:
            raise InputError(f"--tco-years {tco_years:g}: catalog {cat.path or cat.catalog.name} rents every node; "
                             "the whole cost of owning prices owned designs", field="tco_years")
        d = api.predict(model, gpu, gpus_per_node, nodes, nic, strategy, catalog=cat, chassis=chassis,
                        nics_per_node=nics_per_node, support_years=support_years, today=as_of, tco_years=tco_years)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is PredictFmt.json:
        keys = ("gpu", "segment", "lifecycle", "chassis", "gpus_per_node", "nodes", "total_gpus", "nic", "nics_per_node",
                "capex_usd", "cost_basis", "power_kw", "rack_units", "oldest_price_date", "price_warning", "as_of", "bom",
                "model", "strategy", "throughput_samples_per_s") + (("tco", "cost_usd") if d.get("tco") else ())
        typer.echo(_json_dump({k: d[k] for k in keys}))
        return
    c = _console()
    c.print(f"costopt bom: {d['total_gpus']} x {d['gpu']} ({d['segment']}, {d['lifecycle']}), {d['gpus_per_node']} per "
            f"node x {d['nodes']} nodes, {d['chassis']}, {d['nics_per_node']} x {d['nic']}; capex "
            f"{_fmt_money(d['capex_usd'])}; {d['power_kw']:,.1f} kW; {d['rack_units']:,.0f} U")
    c.print(_bom_table(d["bom"], "Bill of materials"))
    if d.get("tco"):
        c.print(_bom_table(d["tco"], f"Whole cost of owning over {res_tco_years(d)} (= {_fmt_money(d['cost_usd'])})"))
    thr = d.get("throughput_samples_per_s")
    c.print(f"Throughput beside the bill: {d['model']} with {d['strategy']}, "
            + (f"{thr:,.1f} samples/s" if thr is not None and d.get("feasible", True) else
               f"cannot run ({d.get('infeasible_reason') or 'infeasible'})"))
    c.print(f"Oldest price: {d['oldest_price_date']} (age counted to {d['as_of']})" + (f" — warning: {d['price_warning']}" if d["price_warning"] else ""))
