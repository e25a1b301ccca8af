"""Purchasing commands: `compare`, `rent-vs-buy`, `report`, `export`.

Mounted by `costopt/cli/main.py`. Every
cost printed says what it is (one-off capex, USD per hour, per job, per year, per unit throughput).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from costopt.purchase import purchasing as P
from costopt.core.checks import output_path
from costopt.core.checks import force_overwrite
from costopt.cli.common import FORCE, _console, _rate_money, print_rent_buy_costs, _fail, _fmt_money, _fmt_number, _json_dump

from costopt.core.errors import CostoptError, InputError
from costopt.cli.ownership import compare_catalogs, ownership_options
from costopt.hardware.site_terms import with_site_terms

app = typer.Typer()


class CmpFmt(str, Enum):
    table = "table"
    json = "json"


class ExportFmt(str, Enum):
    csv = "csv"
    xlsx = "xlsx"
    json = "json"


def _opts(precision, batch_per_gpu, overlap, strategy, max_nodes, hours, epochs, dataset_size, tco_years=0.0,
          objective="throughput", system=None, years=3.0, utilization=1.0, as_of=None,
          max_instances=None, include=None, exclude_gpu=None) -> P.Options:
    return P.Options(precision=precision, batch_per_gpu=batch_per_gpu, overlap=overlap, strategies=strategy or None,
                     max_nodes=max_nodes, hours=hours, epochs=epochs, dataset_size=dataset_size, tco_years=tco_years,
                     objective=objective, system=system, years=years, utilization=utilization, as_of=as_of,
                     max_instances=max_instances, include=include or None, exclude_gpus=exclude_gpu or None)


_PRECISION = typer.Option("auto", help="auto | fp32 | amp_bf16 | amp_fp16 (auto: fp32 if the model has it)")
_BATCH = typer.Option(None, help="Per-GPU batch (default: the model's reference batch).")
_OVERLAP = typer.Option("wfbp", help="wfbp | none | full")
_STRATEGY = typer.Option(None, help="ring | hierarchical | ps (repeatable; default all).")
_MAX_NODES = typer.Option(None, help="Most nodes.")
_HOURS = typer.Option(None, help="Hours of use: a cloud design costs USD/hour x this.")
_EPOCHS = typer.Option(None, help="Epochs of the training job (time to train; cloud cost per job).")
_DATASET = typer.Option(None, help="Samples per epoch.")
_SYSTEM = typer.Option(None, help="System parameters TOML.")
_MAX_INSTANCES = typer.Option(None, "--max-instances", help="Cloud catalogs: rent at most this many instances of "
                              "any one type (default: each catalog's cap per type, e.g. AWS's 64-instance Capacity "
                              "Block).")
_INCLUDE = typer.Option(None, help="Also offer these part classes: consumer, legacy, eol (comma separated or "
                        "repeated; all), as in solve.")
_EXCLUDE_GPU = typer.Option(None, "--exclude-gpu", help="Leave this GPU out (repeatable), as in solve.")
_TOKENS = typer.Option(None, help="Transformers: tokens to train (the job: time and cost to train them).")
_MODEL_CONFIG = typer.Option(None, help="Transformer described by its architecture (TOML; see docs/large-models.md).")
_SEQ_LEN = typer.Option(None, help="Transformers: sequence length (default: the model's).")
_GLOBAL_BATCH = typer.Option(None, help="Transformers: global batch in sequences (default: 4M tokens).")
_MODEL = typer.Option(None, help="Zoo model (a data-parallel one, or a transformer such as llama3_70b).")


def _llm(model, model_config, strategy, tokens) -> bool:
    """A large-model request (perf/llm.is_llm_request): a transformer, a model config, or --tokens. --tokens
    with a data-parallel zoo model exits 2 naming it (its work is --epochs x --dataset-size)."""
    from costopt.perf.llm import is_llm_request
    from costopt.perf.workload import list_models

    dp = list_models()
    if tokens is not None and model_config is None and model in dp:
        from costopt.perf.llm.arch import is_llm_model

        if not is_llm_model(model):
            _fail(InputError(f"--tokens: {model} is a data-parallel model; its job is --epochs x --dataset-size",
                             field="tokens"))
    return is_llm_request(model, model_config, strategy, tokens, dp)


def _dp_model(model: str | None, llm_only: dict) -> str:
    """A data-parallel request: --model is needed, and the transformer options are refused."""
    from costopt.search.engine import refuse_transformer_only

    if model is None:
        raise InputError("give --model (see `costopt models`) or --model-config FILE.toml", field="model")
    refuse_transformer_only(model, **llm_only)
    return model


_AS_OF = typer.Option(None, "--as-of", help="YYYY-MM-DD that price ages are counted to (default: today); the "
                      "date used is printed, so a rerun with it gives the same output.")


@app.command()
@ownership_options
def compare(
    catalogs: list[Path] = typer.Argument(..., help="Two or more catalogs (full, overlay or cloud TOML)."),
    model: Optional[str] = _MODEL,
    budget: float = typer.Option(..., help="Budget in USD (capex for owned catalogs; rent for cloud ones)."),
    objective: str = typer.Option("throughput", help="throughput | cost-per-throughput"),
    precision: str = _PRECISION, batch_per_gpu: Optional[int] = _BATCH, overlap: str = _OVERLAP,
    strategy: Optional[list[str]] = _STRATEGY, max_nodes: Optional[int] = _MAX_NODES,
    hours: Optional[float] = _HOURS, epochs: Optional[float] = _EPOCHS, dataset_size: Optional[float] = _DATASET,
    tco_years: float = typer.Option(0.0, help="Price owned designs by their whole cost of owning over this many years "
                                    "(the terms: --colocation-usd-per-kw-month ...); 0: capex alone."),
    years: float = typer.Option(3.0, help="Owned beside cloud: the purchase is amortised over this many years..."),
    utilization: float = typer.Option(1.0, help="...at this fraction of the time busy (0-1), so both sides are "
                                      "priced for the same --hours or the same job."),
    price_cut: bool = typer.Option(True, help="Solve for the price cut each loser's key part needs to win."),
    system: Optional[Path] = _SYSTEM,
    fmt: CmpFmt = typer.Option(CmpFmt.table, "--format", help="table | json"),
    max_instances: Optional[int] = _MAX_INSTANCES,
    include: Optional[list[str]] = _INCLUDE, exclude_gpu: Optional[list[str]] = _EXCLUDE_GPU,
    tokens: Optional[float] = _TOKENS, model_config: Optional[Path] = _MODEL_CONFIG,
    seq_len: Optional[int] = _SEQ_LEN, global_batch: Optional[int] = _GLOBAL_BATCH,
    as_of: Optional[str] = _AS_OF,
    ownership: Optional[dict] = None,
) -> None:
    """The best design under each catalog side by side, the winner, and the price cut a loser needs."""
    try:  # the whole-cost terms into the owned catalogs (refused where nothing prices them)
        catalogs = compare_catalogs(catalogs, ownership or {}, tco_years)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if _llm(model, model_config, strategy, tokens):
        from costopt.cli import llm_purchasing as L

        try:
            L.refuse({"--batch-per-gpu": batch_per_gpu, "--overlap": None if overlap == "wfbp" else overlap,
                      "--epochs": epochs, "--dataset-size": dataset_size, "--system": system})
            j = L.job(model, model_config, tokens, seq_len, global_batch, precision, strategy, max_nodes, include,
                      exclude_gpu, max_instances, objective, as_of)
        except CostoptError as exc:
            _fail(exc, fmt.value)
            return
        L.run_compare(catalogs, j, budget, hours=hours, tco_years=tco_years, years=years, utilization=utilization,
                      price_cut=price_cut, fmt=fmt.value)
        return
    try:
        model = _dp_model(model, {"seq_len": seq_len, "global_batch": global_batch})
        cmp = P.compare(catalogs, model, budget, _opts(precision, batch_per_gpu, overlap, strategy, max_nodes, hours,
                                                       epochs, dataset_size, tco_years, objective, system, years,
                                                       utilization, as_of=as_of, max_instances=max_instances,
                                                       include=include, exclude_gpu=exclude_gpu),
                        price_cuts=price_cut)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is CmpFmt.json:
        typer.echo(_json_dump(cmp.to_json_dict()))
        return
    c = _console()
    c.print(f"costopt compare: model {cmp.model}, budget {_fmt_money(cmp.budget_usd)}, objective {cmp.objective}")
    t = Table(title="Best design per catalog", title_justify="left")
    t.add_column("")
    for a in cmp.answers:
        t.add_column(a.label + (" (winner)" if a is cmp.answers[cmp.winner] else ""))
    def row(name, fn):
        t.add_row(name, *[fn(a) if a.best else (a.error[:60] if name == "design" else "-") for a in cmp.answers])
    row("catalog", lambda a: f"{a.catalog.catalog.name} ({a.catalog.catalog.kind})")
    row("design", lambda a: f"{a.best['total_gpus']} x {a.best['gpu']} ({a.best['gpus_per_node']}/node x {a.best['nodes']})")
    row("node", lambda a: a.best["chassis"])
    row("network", lambda a: a.best["nic"])
    row("strategy", lambda a: a.best["strategy"])
    row("cost", lambda a: f"{_rate_money(a.best['cost_usd'])} ({a.cost_basis})")
    row("throughput", lambda a: f"{a.best['throughput_samples_per_s']:,.1f} samples/s")
    row("cost per unit throughput", lambda a: f"{_rate_money(a.best['usd_per_sample_per_s'])} per sample/s")
    row("scaling efficiency", lambda a: f"{a.best['scaling_efficiency']:.3f}")
    row("bottleneck", lambda a: a.best["bottleneck"])
    if epochs and dataset_size:
        row("time to train", lambda a: f"{_fmt_number(a.best['time_to_train_h'])} h per job")
    c.print(t)
    for a in cmp.answers:
        if a.result is not None and a.result.capacity and a.result.capacity["bound"]:
            c.print(f"{a.label}: {a.result.capacity['sentence']}")
    w = cmp.answers[cmp.winner]
    if cmp.margin:
        m = cmp.margin
        c.print(f"Winner: {w.label} — {m['throughput_gain']:+.1%} throughput vs {m['runner_up']} "
                f"({m['cost_difference_usd']:+,.0f} USD cost, {m['usd_per_sample_per_s_ratio'] - 1:+.1%} cost per sample/s)")
    if cmp.held_equal:
        c.print(cmp.held_equal)
    for w in cmp.price_warnings:
        c.print(f"Warning: {w}")
    for pc in cmp.price_cuts:
        unit = "USD per hour" if pc.part_kind == "instance" else "USD per unit"
        if pc.needed_price is None:
            c.print(f"{pc.catalog}: {pc.note}")
        else:
            d = pc.design_at_needed_price
            c.print(f"{pc.catalog}: {pc.part_kind} {pc.part_id} must drop from {_rate_money(pc.current_price)} to "
                    f"{_rate_money(pc.needed_price)} {unit} (-{pc.cut_fraction:.1%}) to match the winner; it would then buy "
                    f"{d['total_gpus']} x {d['gpu']} ({d['nic']}, {d['strategy']}) for "
                    f"{d['throughput_samples_per_s']:,.1f} samples/s")


@app.command("rent-vs-buy")
@ownership_options
def rent_vs_buy(
    model: Optional[str] = _MODEL,
    budget: float = typer.Option(..., help="Purchase budget in USD (capex)."),
    cloud: Path = typer.Option(..., help="Cloud catalog (hourly instance prices)."),
    catalog: Optional[Path] = typer.Option(None, help="Owned catalog (default: built-in reference-2026)."),
    years: float = typer.Option(3.0, help="Years the purchase is used (amortisation horizon)."),
    utilization: Optional[float] = typer.Option(None, help="Fraction of the time the owned cluster is busy (0-1)."),
    hours: Optional[float] = typer.Option(None, help="Hours of use over the years (sets the utilisation)."),
    epochs: Optional[float] = _EPOCHS, dataset_size: Optional[float] = _DATASET,
    precision: str = _PRECISION, batch_per_gpu: Optional[int] = _BATCH, overlap: str = _OVERLAP,
    strategy: Optional[list[str]] = _STRATEGY, max_nodes: Optional[int] = _MAX_NODES, system: Optional[Path] = _SYSTEM,
    fmt: CmpFmt = typer.Option(CmpFmt.table, "--format", help="table | json"),
    max_instances: Optional[int] = _MAX_INSTANCES,
    include: Optional[list[str]] = _INCLUDE, exclude_gpu: Optional[list[str]] = _EXCLUDE_GPU,
    tokens: Optional[float] = _TOKENS, model_config: Optional[Path] = _MODEL_CONFIG,
    seq_len: Optional[int] = _SEQ_LEN, global_batch: Optional[int] = _GLOBAL_BATCH,
    as_of: Optional[str] = _AS_OF,
    ownership: Optional[dict] = None,
) -> None:
    """Buy the best cluster for the budget, or rent the same work by the hour? Break-even utilisation and months."""
    try:  # the owned side is priced by its whole cost of owning over --years: every term applies
        catalog = with_site_terms(catalog, ownership or {})
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if _llm(model, model_config, strategy, tokens):
        from costopt.cli import llm_purchasing as L

        try:
            L.refuse({"--batch-per-gpu": batch_per_gpu, "--overlap": None if overlap == "wfbp" else overlap,
                      "--epochs": epochs, "--dataset-size": dataset_size, "--system": system})
            j = L.job(model, model_config, tokens, seq_len, global_batch, precision, strategy, max_nodes, include,
                      exclude_gpu, max_instances, today=as_of)
        except CostoptError as exc:
            _fail(exc, fmt.value)
            return
        L.run_rent_vs_buy(j, budget, cloud, catalog, years=years, utilization=utilization, hours=hours, fmt=fmt.value)
        return
    try:
        model = _dp_model(model, {"seq_len": seq_len, "global_batch": global_batch})
        r = P.rent_vs_buy(model, budget, cloud, catalog, years=years, utilization=utilization,
                          opts=_opts(precision, batch_per_gpu, overlap, strategy, max_nodes, hours, epochs, dataset_size,
                                     system=system, as_of=as_of, max_instances=max_instances, include=include,
                                     exclude_gpu=exclude_gpu))
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is CmpFmt.json:
        typer.echo(_json_dump(r.to_json_dict()))
        return
    c = _console()
    b, k = r.buy, r.rent
    c.print(f"costopt rent-vs-buy: model {r.model}, budget {_fmt_money(r.budget_usd)}, {r.years:g} years")
    c.print(f"Buy  ({r.owned_catalog}): {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']}/node x {b['nodes']}), "
            f"{b['nic']}, {b['strategy']}: {b['throughput_samples_per_s']:,.1f} samples/s")
    c.print(f"Rent ({r.cloud_catalog}): {k['nodes']} x {k['chassis']} ({k['total_gpus']} x {k['gpu']}), {k['strategy']}: "
            f"{k['throughput_samples_per_s']:,.1f} samples/s")
    print_rent_buy_costs(c, r)


@app.command()
@ownership_options
def report(
    model: Optional[str] = typer.Option(None, help="Zoo model (a data-parallel one, or a transformer such as llama3_70b)."),
    budget: float = typer.Option(..., help="Budget in USD."),
    out: Path = typer.Option(..., "--out", "-o", help="report.html (self-contained) or report.md (+ PNG folder)."),
    catalog: Optional[Path] = typer.Option(None, help="Catalog TOML (default: built-in reference-2026)."),
    epochs: Optional[float] = _EPOCHS, dataset_size: Optional[float] = _DATASET, hours: Optional[float] = _HOURS,
    precision: str = _PRECISION, batch_per_gpu: Optional[int] = _BATCH, overlap: str = _OVERLAP,
    strategy: Optional[list[str]] = _STRATEGY, max_nodes: Optional[int] = _MAX_NODES, system: Optional[Path] = _SYSTEM,
    top: int = typer.Option(8, help="Designs in the recommendation table."),
    all_designs: Optional[Path] = typer.Option(None, "--all", help="Also export the full ranked table (.csv/.xlsx/.json)."),
    progress: bool = typer.Option(True, help="Progress bar on stderr."),
    cloud: Optional[Path] = typer.Option(None, help="Cloud catalog: add a rent-or-buy section against it."),
    years: float = typer.Option(3.0, help="Years the purchase is used (with --cloud: rent or buy; transformers: USD "
                                "per 1e9 tokens)."),
    utilization: Optional[float] = typer.Option(None, help="With --cloud: fraction of the time the owned cluster is busy."),
    tokens: Optional[float] = typer.Option(None, help="Transformers: tokens to train (time and cost to train them)."),
    model_config: Optional[Path] = typer.Option(None, help="Transformer described by its architecture (TOML; see "
                                                "docs/large-models.md)."),
    seq_len: Optional[int] = typer.Option(None, help="Transformers: sequence length (default: the model's)."),
    global_batch: Optional[int] = typer.Option(None, help="Transformers: global batch in sequences (default: 4M tokens)."),
    as_of: Optional[str] = _AS_OF,
    max_instances: Optional[int] = _MAX_INSTANCES,
    include: Optional[list[str]] = _INCLUDE, exclude_gpu: Optional[list[str]] = _EXCLUDE_GPU,
    force: bool = FORCE,
    ownership: Optional[dict] = None,
) -> None:
    """Write a what-if purchasing report with plots (HTML or Markdown). For a transformer (llama3_70b, a
    --model-config file, or with --tokens) the large-model report: layouts, memory per GPU, and which
    strategies fit at which GPU memory size."""
    force_overwrite(force)  # --force: a read-only --out may be replaced
    from costopt.purchase import report as R

    try:  # the report prices an owned purchase by its whole cost of owning over --years (its cost-basis section)
        priced_catalog = with_site_terms(catalog, ownership or {})
    except CostoptError as exc:
        _fail(exc)
        return
    if _llm(model, model_config, strategy, tokens):
        _llm_report(model, budget, out, catalog, priced_catalog, tokens, model_config, seq_len, global_batch, precision, strategy,
                    max_nodes, top, years, progress, include, exclude_gpu, cloud, utilization,
                    {"--epochs": epochs, "--dataset-size": dataset_size, "--hours": hours, "--batch-per-gpu": batch_per_gpu,
                     "--system": system, "--all": all_designs, "--overlap": None if overlap == "wfbp" else overlap},
                    max_instances, as_of)
        return
    try:
        model = _dp_model(model, {"seq_len": seq_len, "global_batch": global_batch})
        inputs = [catalog, system, cloud]
        if out.suffix.lower() not in (".html", ".htm", ".md"):
            raise InputError(f"--out must end in .html or .md, got '{out.name}'")
        output_path(out, "--out", inputs)
        if out.suffix.lower() == ".md":
            R.check_figure_dir(R.figure_dir_for(out))  # before minutes of work
        if all_designs is not None:
            fmt = all_designs.suffix.lower().lstrip(".")
            if fmt not in ("csv", "xlsx", "json"):
                raise InputError(f"--all must end in .csv, .xlsx or .json, got '{all_designs.name}'")
            output_path(all_designs, "--all", inputs + [out])
        opts = _opts(precision, batch_per_gpu, overlap, strategy, max_nodes, hours, epochs, dataset_size, system=system,
                     as_of=as_of, max_instances=max_instances, include=include, exclude_gpu=exclude_gpu)
        cat = P._as_catalog(priced_catalog)
        rep = R.build_report(model, budget, cat, opts, top=top, progress=progress, cloud=cloud, years=years,
                             utilization=utilization)
        files = R.write_report(rep, out, inputs)
        if all_designs is not None:
            from costopt.purchase.export_stream import export_ranked  # the table in bounded memory, as `export` writes it

            export_ranked(cat, model, budget, opts, fmt, all_designs, inputs + [out])
            files.append(all_designs)
    except CostoptError as exc:
        _fail(exc)
        return
    typer.echo(f"wrote {files[0]}" + (f" (+{len(files) - 1} file(s))" if len(files) > 1 else ""))


def _llm_report(model, budget, out, catalog, priced_catalog, tokens, model_config, seq_len, global_batch, precision, strategy,
                max_nodes, top, years, progress, include, exclude_gpu, cloud, utilization,
                data_parallel_only: dict, max_instances=None, as_of=None) -> None:
    from costopt.purchase import report as R
    from costopt.purchase.llm_report import build_llm_report

    try:
        given = [k for k, v in data_parallel_only.items() if v is not None]
        if given:
            raise InputError(f"{', '.join(given)}: not available in a large-model report (use --tokens for time and "
                             "cost to train)")
        inputs = [catalog, model_config, cloud]
        if out.suffix.lower() not in (".html", ".htm", ".md"):
            raise InputError(f"--out must end in .html or .md, got '{out.name}'")
        output_path(out, "--out", inputs)
        if out.suffix.lower() == ".md":
            R.check_figure_dir(R.figure_dir_for(out))
        rep = build_llm_report(model, budget, priced_catalog, tokens=tokens, model_config=model_config, seq_len=seq_len,
                               global_batch=global_batch, precision="amp_bf16" if precision == "auto" else precision,
                               strategies=strategy, max_nodes=max_nodes, top=top, years=years, include=include,
                               exclude_gpus=exclude_gpu, progress=progress, cloud=cloud, utilization=utilization,
                               max_instances=max_instances, as_of=as_of)
        files = R.write_report(rep, out, inputs)
    except CostoptError as exc:
        _fail(exc)
        return
    typer.echo(f"wrote {files[0]}" + (f" (+{len(files) - 1} file(s))" if len(files) > 1 else ""))


class _StdoutBytes:
    """The bytes `export_ranked` streams, to stdout as it is when they come: its binary buffer, or decoded
    text where it has none (a text stream put in its place)."""

    def write(self, data: bytes) -> None:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(data.decode("utf-8"))
            return
        sys.stdout.flush()
        buffer.write(data)

    def flush(self) -> None:
        sys.stdout.flush()
        getattr(sys.stdout, "buffer", sys.stdout).flush()


@app.command()
@ownership_options
def export(
    model: Optional[str] = _MODEL,
    budget: float = typer.Option(..., help="Budget in USD (only designs within it)."),
    catalog: Optional[Path] = typer.Option(None, help="Catalog TOML (default: built-in reference-2026)."),
    fmt: ExportFmt = typer.Option(ExportFmt.csv, "--format", help="csv | xlsx | json"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file (stdout for csv/json when omitted)."),
    objective: str = typer.Option("throughput", help="throughput | cost-per-throughput (ranking)."),
    epochs: Optional[float] = _EPOCHS, dataset_size: Optional[float] = _DATASET, hours: Optional[float] = _HOURS,
    tco_years: float = typer.Option(0.0, help="Price owned designs by their whole cost of owning over this many years "
                                    "(the terms: --colocation-usd-per-kw-month ...); 0: capex alone."),
    precision: str = _PRECISION, batch_per_gpu: Optional[int] = _BATCH, overlap: str = _OVERLAP,
    strategy: Optional[list[str]] = _STRATEGY, max_nodes: Optional[int] = _MAX_NODES, system: Optional[Path] = _SYSTEM,
    include: Optional[list[str]] = _INCLUDE, exclude_gpu: Optional[list[str]] = _EXCLUDE_GPU,
    tokens: Optional[float] = _TOKENS, model_config: Optional[Path] = _MODEL_CONFIG,
    seq_len: Optional[int] = _SEQ_LEN, global_batch: Optional[int] = _GLOBAL_BATCH,
    max_instances: Optional[int] = _MAX_INSTANCES,
    force: bool = FORCE,
    ownership: Optional[dict] = None,
) -> None:
    """Every feasible design within the budget, ranked, for spreadsheets (csv, xlsx, json)."""
    force_overwrite(force)  # --force: a read-only --out may be replaced
    try:  # the whole-cost terms price owned designs with --tco-years only
        priced_catalog = with_site_terms(catalog, ownership or {}, priced=bool(tco_years))
    except CostoptError as exc:
        _fail(exc, "json" if fmt is ExportFmt.json and out is None else "table")
        return
    if _llm(model, model_config, strategy, tokens):
        from costopt.cli import llm_purchasing as L

        try:
            L.refuse({"--batch-per-gpu": batch_per_gpu, "--overlap": None if overlap == "wfbp" else overlap,
                      "--epochs": epochs, "--dataset-size": dataset_size, "--system": system})
            j = L.job(model, model_config, tokens, seq_len, global_batch, precision, strategy, max_nodes, include,
                      exclude_gpu, max_instances, objective)
            inputs = [catalog, model_config]
            if out is not None:
                output_path(out, "--out", inputs)
        except CostoptError as exc:
            _fail(exc, "json" if fmt is ExportFmt.json and out is None else "table")
            return
        L.run_export(priced_catalog, j, budget, fmt.value, out, inputs, hours=hours, tco_years=tco_years,
                     stdout=_StdoutBytes())
        return
    try:
        model = _dp_model(model, {"seq_len": seq_len, "global_batch": global_batch})
        if max_instances is not None:
            raise InputError("--max-instances: only for a large-model export (a data-parallel export rents what "
                             "the cloud catalog caps)", field="max_instances")
        opts = _opts(precision, batch_per_gpu, overlap, strategy, max_nodes, hours, epochs, dataset_size, tco_years,
                     objective, system, include=include, exclude_gpu=exclude_gpu)
        inputs = [catalog, system]
        if out is not None:
            output_path(out, "--out", inputs)
        cat = P._as_catalog(priced_catalog)
        if hours is not None and not cat.is_cloud:
            raise InputError(f"--hours prices rented designs; {cat.path or cat.catalog.name} is an owned catalog",
                             field="hours")
        opts.check_exclusions([cat])
        # in bounded memory: the space in pieces, the table's rows written a block at a time (export_stream.py)
        from costopt.purchase.export_stream import export_ranked

        export_ranked(cat, model, budget, opts, fmt.value, out, inputs, stdout=_StdoutBytes())
    except CostoptError as exc:
        _fail(exc, "json" if fmt is ExportFmt.json and out is None else "table")
        return
    if out is not None:
        typer.echo(f"wrote {out}", err=True)
