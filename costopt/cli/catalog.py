"""`costopt catalog show` and `costopt catalog import`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.table import Table

from costopt.purchase import purchasing as P
from costopt.hardware.catalog import load_catalog
from costopt.core.checks import output_path, write_text
from costopt.core.errors import CostoptError, InputError
from costopt.core.checks import force_overwrite
from costopt.cli.common import FORCE, PredictFmt, one_line, _console, _fail, _fmt_money, _json_dump

app = typer.Typer(no_args_is_help=True, help="Inspect hardware catalogs.")


@app.command("show")
def catalog_show(
    path: Optional[Path] = typer.Argument(None, help="Catalog TOML (default: built-in)."),
    fmt: PredictFmt = typer.Option(PredictFmt.table, "--format", help="table | json (every field of every entry)"),
) -> None:
    """Validate a catalog and list its GPUs, chassis and NICs: prices, price dates, estimated fields."""
    try:
        cat = load_catalog(path)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is PredictFmt.json:
        out = {"catalog": cat.catalog.model_dump(mode="json"), "path": cat.path, "site": cat.site.model_dump(mode="json"),
               "gpus": [g.model_dump(mode="json") for g in cat.gpu],
               "chassis": [ch.model_dump(mode="json") for ch in cat.chassis],
               "nics": [n.model_dump(mode="json") for n in cat.nic]}
        if cat.unavailable_gpu:
            out["unavailable_gpus"] = [g.model_dump(mode="json") for g in cat.unavailable_gpu]
        if cat.is_cloud:
            out["instances"] = [i.model_dump(mode="json") for i in cat.instance]
        typer.echo(_json_dump(out))
        return
    c = _console()
    c.print(f"catalog {cat.catalog.name} ({cat.catalog.date}): {cat.path}")
    if cat.is_cloud:
        _instance_table(c, cat)
    t = Table(title="GPUs", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("id", "name", "arch", "mem GB", "mem GB/s", "fp32 TF", "bf16 TF", "auto", "link GB/s", "TDP W", "price",
                "price date", "estimates"):
        t.add_column(col, overflow="fold")  # 120 columns: a long cell folds, none is cut
    for g in cat.gpu:
        t.add_row(g.id, g.name, g.architecture or "-", f"{g.memory_gb:,g}", f"{g.memory_bandwidth_gbs:,g}",
                  f"{g.tflops_fp32:,g}", f"{g.tflops_bf16 or 0:,g}", g.best_training_precision(), f"{g.gpu_link_gbs:,g}",
                  f"{g.tdp_w:,g}", _fmt_money(g.price_usd), g.price_date, ", ".join(g.estimates))
    c.print(t)
    if cat.is_cloud:  # its chassis and NICs are built from the instances above
        return
    t = Table(title="Chassis (price excludes GPUs and NIC)", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("id", "slots", "form", "fabric", "PCIe", "price", "overhead W", "RU", "estimates"):
        t.add_column(col, overflow="fold")
    for ch in cat.chassis:
        t.add_row(ch.id, str(ch.gpu_slots), ch.form_factor, ch.intra_fabric, f"Gen{ch.pcie_gen}",
                  _fmt_money(ch.price_usd), f"{ch.power_overhead_w:,g}", str(ch.rack_units), ", ".join(ch.estimates))
    c.print(t)
    t = Table(title="NICs", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("id", "name", "Gb/s", "transport", "latency us", "adapter", "switch port", "ports", "estimates"):
        t.add_column(col, overflow="fold")
    for n in cat.nic:
        t.add_row(n.id, n.name, f"{n.line_rate_gbps:,g}", n.transport, f"{n.latency_us:,g}", _fmt_money(n.price_usd),
                  _fmt_money(n.switch_port_price_usd), str(n.switch_ports), ", ".join(n.estimates))
    c.print(t)
    s = cat.site
    c.print(f"site: ${s.electricity_usd_per_kwh:g}/kWh, PUE {s.pue:g}, average draw {s.average_draw_fraction:g} ({s.source})")


def _terms(i) -> str:
    """How an instance is sold, short: 'on-demand', 'spot', 'block 24 h', 'reserved 8,766 h' (minimum term)."""
    name = {"capacity-block": "block", "on-demand": "on-demand"}.get(i.pricing, i.pricing)
    lo = i.min_rental_hours
    if lo >= 1:
        return f"{name} {lo:,.4g} h"
    return name


def _instance_table(c, cat) -> None:
    """A cloud catalog's instances as rented: price per hour and per GPU-hour, network, capacity cap
    (fits 120 columns: short headers, no cell cut; a long estimates list folds)."""
    regions = sorted({i.region for i in cat.instance if i.region})
    t = Table(title=f"Instances ({', '.join(regions) or 'region not given'}); network and cap: the entry's own, "
              "else costopt/data/cloud_instances.toml", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("instance", "GPU", "GPUs", "USD/h", "USD/GPU-h", "net Gb/s", "transport", "max inst.", "terms",
                "price date", "est."):
        right = col in ("GPUs", "USD/h", "USD/GPU-h", "net Gb/s", "max inst.")
        t.add_column(col, justify="right" if right else "left", no_wrap=col not in ("est.", "terms"), overflow="fold")
    short = {"network_gbps": "network", "usd_per_hour": "price", "max_instances": "cap"}
    for i in cat.instance:
        ch = cat.chassis_by_id[i.id]
        est = [short.get(e, e) for e in list(i.estimates) + (["max_instances"] if "max_nodes" in ch.estimates else [])]
        t.add_row(i.id, i.gpu, str(i.gpu_count), f"${i.usd_per_hour:,.2f}", f"${i.usd_per_hour / i.gpu_count:,.3f}",
                  f"{i.network_gbps:,g}", str(i.transport), "-" if ch.max_nodes is None else f"{ch.max_nodes:,}",
                  _terms(i), i.price_date, ", ".join(est) or "-")
    c.print(t)


@app.command("import")
def catalog_import(
    csv: Path = typer.Argument(..., help="Price list with SkyPilot vms.csv columns."),
    out: Path = typer.Option(..., "--out", "-o", help="Cloud catalog TOML to write."),
    base: str = typer.Option("reference-2026", help="Catalog whose GPU specs the instances use."),
    region: Optional[str] = typer.Option(None, help="Region to import (default us-east-1, else the first)."),
    gpu_map: Optional[list[str]] = typer.Option(None, "--map", help="ACCELERATOR=gpu-id (repeatable)."),
    default_network_gbps: float = typer.Option(25.0, help="Network (Gb/s) for instance types costopt/data/"
                                               "cloud_instances.toml has no figure for (marked an estimate)."),
    provider: str = typer.Option("aws", help="Whose price list it is: instance types its facts table knows take "
                                 "their network and capacity cap from it (the shipped catalog's source)."),
    name: Optional[str] = typer.Option(None, help="Catalog name (default: from the file name)."),
    price_date: Optional[str] = typer.Option(None, "--price-date",
                                             help="YYYY-MM-DD the prices were taken (required: stamped on every entry)."),
    pricing: str = typer.Option("on-demand", help="on-demand (Price; SpotPrice kept as spot_usd_per_hour) | spot "
                                "(SpotPrice is the price, with the interruption terms)."),
    force: bool = FORCE,
) -> None:
    """Import a cloud price list (SkyPilot vms.csv columns) as a cloud catalog TOML."""
    force_overwrite(force)  # --force: a read-only --out may be replaced
    try:
        mapping = {}
        for m in gpu_map or []:
            if "=" not in m:
                raise InputError(f"--map '{m}': use ACCELERATOR=gpu-id")
            k, v = m.split("=", 1)
            mapping[k.strip()] = v.strip()
        if price_date is None:  # a price without its date is not a catalog entry; today's date would be a guess
            raise InputError("catalog import: --price-date YYYY-MM-DD is required (the date the prices in "
                             f"{csv} were taken; it is stamped on every entry)")
        inputs = [csv, base]
        output_path(out, "--out", inputs)
        base_ref = base
        if Path(base).exists():  # a file: refer to it from where the new catalog lives
            base_ref = os.path.relpath(Path(base).resolve(), out.resolve().parent)
        text, warnings = P.import_vms_csv(csv, base=base, region=region, gpu_map=mapping,
                                          default_network_gbps=default_network_gbps, name=name, date=price_date,
                                          base_ref=base_ref, provider=provider, pricing=pricing)
        # check the new catalog before it replaces anything: written beside --out, loaded, then renamed
        # (so a relative base resolves as it will from --out)
        probe = out.parent / f".{out.name}.check.toml"
        write_text(probe, text, "--out", inputs)
        try:
            cat = load_catalog(probe)
        except CostoptError as exc:
            raise InputError(str(exc).replace(str(probe), str(out))) from None
        finally:
            probe.unlink(missing_ok=True)
        write_text(out, text, "--out", inputs)
    except CostoptError as exc:
        _fail(exc)
        return
    for w in warnings:  # price-list text (accelerator names, instance types): one line, no control characters
        typer.echo(f"warning: {one_line(w)}", err=True)
    typer.echo(f"wrote {one_line(str(out))}: {len(cat.instance)} instance(s), GPUs {', '.join(g.id for g in cat.gpu)}")
