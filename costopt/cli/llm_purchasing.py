"""The large-model paths of `compare`, `rent-vs-buy` and `export` (a transformer: llama3_70b, a
--model-config file, or --tokens). The commands live in purchasing.py and hand over here; an option of
theirs that only means something for a data-parallel job is refused with exit 2 and a reason."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from costopt.cli.common import _console, _rate_money, print_rent_buy_costs, _fail, _fmt_money, _json_dump
from costopt.core.errors import CostoptError, InputError

DP_ONLY_HINT = "not available on the large-model path (a transformer's job is --tokens; its layout is searched)"


def refuse(given: dict[str, Any]) -> None:
    """InputError naming the data-parallel options given (a value that is not None / False)."""
    named = [k for k, v in given.items() if v is not None and v is not False and v != []]
    if named:
        raise InputError(f"{', '.join(named)}: {DP_ONLY_HINT}")


def job(model, model_config, tokens, seq_len, global_batch, precision, strategy, max_nodes, include, exclude_gpu,
        max_instances, objective="throughput", today=None):
    from costopt.purchase.llm_purchasing import LlmJob

    return LlmJob(model=model, model_config=model_config, tokens=tokens, seq_len=seq_len, global_batch=global_batch,
                  precision="amp_bf16" if precision == "auto" else precision, strategies=strategy or None,
                  max_nodes=max_nodes, include=include or None, exclude_gpus=exclude_gpu or None,
                  max_instances=max_instances, objective=objective, today=today)


def _layout(d: dict) -> str:
    return (f"{d['strategy']} tp{d['tp']} pp{d['pp']} mb{d['micro_batch']} ckpt {d['activation_checkpointing']}")


def _design(d: dict) -> str:
    nic = f", {d['nics_per_node']} x {d['nic']}" if d.get("nic") else ""
    return f"{d['total_gpus']} x {d['gpu']} ({d['gpus_per_node']}/node x {d['nodes']}{nic})"


def _tokens(d: dict) -> str:
    lo, hi = d.get("tokens_per_s_low"), d.get("tokens_per_s_high")
    span = f" (80% range {lo:,.0f}-{hi:,.0f})" if lo is not None and hi is not None else ""
    return f"{d['tokens_per_s']:,.0f} tokens/s{span}"


def run_compare(catalogs, j, budget: float, *, hours, tco_years, years, utilization, price_cut, fmt: str) -> None:
    from costopt.purchase.llm_purchasing import compare_llm

    try:
        cmp = compare_llm(catalogs, j, budget, hours=hours, tco_years=tco_years, years=years,
                          utilization=utilization, price_cuts=price_cut)
    except CostoptError as exc:
        _fail(exc, fmt)
        return
    if fmt == "json":
        typer.echo(_json_dump(cmp.to_json_dict()))
        return
    c = _console()
    c.print(f"costopt compare: model {cmp.model} (large-model path), budget {_fmt_money(cmp.budget_usd)}, objective "
            f"{cmp.objective}, global batch {'' if cmp.exact_batch else 'about '}{cmp.global_batch_sequences:,} sequences"
            + (f", {cmp.tokens:,.3g} tokens to train" if cmp.tokens else ""))
    t = Table(title="Best design per catalog", title_justify="left")
    t.add_column("")
    for a in cmp.answers:
        t.add_column(a.label + (" (winner)" if a is cmp.answers[cmp.winner] else ""))

    def row(name, fn):
        t.add_row(name, *[fn(a) if a.best else (a.error[:60] if name == "design" else "-") for a in cmp.answers])
    row("catalog", lambda a: f"{a.catalog.catalog.name} ({a.catalog.catalog.kind})")
    row("design", lambda a: _design(a.best))
    row("node", lambda a: a.best["chassis"])
    row("layout", lambda a: _layout(a.best))
    row("cost", lambda a: f"{_rate_money(a.best['cost_usd'], a.catalog.is_cloud and not (hours or cmp.tokens))} "
                          f"({a.cost_basis})")
    row("capex", lambda a: _rate_money(a.best["capex_usd"]) if not a.catalog.is_cloud else "- (rented)")
    row("tokens/s", lambda a: _tokens(a.best))
    row("MFU", lambda a: f"{a.best['mfu']:.1%}")
    row("USD per 1e9 tokens", lambda a: f"{_rate_money(a.best['usd_per_1e9_tokens'], True)} ({a.best['usd_per_1e9_tokens_basis']})")
    row("memory per GPU", lambda a: f"{a.best['memory_per_gpu_gb']:.1f} of {a.best['gpu_memory_gb']:g} GB")
    if cmp.tokens:
        row("time to train", lambda a: f"{a.best['hours_to_train']:,.0f} h "
                                       f"({a.best['hours_to_train_low']:,.0f}-{a.best['hours_to_train_high']:,.0f})")
    c.print(t)
    parts = next((a.result["parts_offered"] for a in cmp.answers if a.result), None)
    if parts:
        c.print(f"Parts: {parts} (--include consumer,legacy,eol opens the rest)")
    for a in cmp.answers:
        cap = a.result.get("capacity") if a.result else None
        if cap and cap.get("bound"):
            c.print(f"{a.label}: {cap['sentence']}")
    w = cmp.answers[cmp.winner]
    if cmp.margin:
        m = cmp.margin
        c.print(f"Winner: {w.label} — {m['throughput_gain']:+.1%} tokens/s vs {m['runner_up']} "
                f"({m['cost_difference_usd']:+,.0f} USD cost, {m['usd_per_token_per_s_ratio'] - 1:+.1%} cost per token/s)")
    if cmp.held_equal:
        c.print(cmp.held_equal)
    for warning in cmp.price_warnings:
        c.print(f"Warning: {warning}")
    for pc in cmp.price_cuts:
        unit = "USD per hour" if pc.part_kind == "instance" else "USD per unit"
        if pc.needed_price is None:
            c.print(f"{pc.catalog}: {pc.note}")
        else:
            d = pc.design_at_needed_price
            c.print(f"{pc.catalog}: {pc.part_kind} {pc.part_id} must drop from {_rate_money(pc.current_price, True)} to "
                    f"{_rate_money(pc.needed_price, True)} {unit} (-{pc.cut_fraction:.1%}) to match the winner; it would "
                    f"then buy {_design(d)}, {_layout(d)}, for {d['tokens_per_s']:,.0f} tokens/s")


def run_rent_vs_buy(j, budget: float, cloud, catalog, *, years, utilization, hours, fmt: str) -> None:
    from costopt.purchase.llm_purchasing import rent_vs_buy_json, rent_vs_buy_llm

    try:
        r = rent_vs_buy_llm(j, budget, cloud, catalog, years=years, utilization=utilization, hours=hours)
    except CostoptError as exc:
        _fail(exc, fmt)
        return
    if fmt == "json":
        typer.echo(_json_dump(rent_vs_buy_json(r)))
        return
    c = _console()
    b, k = r.buy, r.rent
    c.print(f"costopt rent-vs-buy: model {r.model} (large-model path), budget {_fmt_money(r.budget_usd)}, {r.years:g} "
            f"years; the same job on both sides: sequences of {b['seq_len']:,} tokens"
            + (f", {r.samples:,.3g} tokens to train" if r.samples else ""))
    c.print(f"Buy  ({r.owned_catalog}): {_design(b)}, {_layout(b)}: {_tokens(b)}")
    if getattr(r, "parts_offered", None):
        c.print(f"Parts: {r.parts_offered} (--include consumer,legacy,eol opens the rest)")
    c.print(f"Rent ({r.cloud_catalog}): {k['nodes']} x {k['chassis']} ({k['total_gpus']} x {k['gpu']}), {_layout(k)}: "
            f"{_tokens(k)}")
    print_rent_buy_costs(c, r)


def run_export(catalog, j, budget: float, fmt: str, out, inputs: list, *, hours, tco_years, stdout) -> None:
    from costopt.purchase.llm_purchasing import export_llm

    try:
        text = export_llm(catalog, j, budget, fmt, out, inputs, hours=hours, tco_years=tco_years)
    except CostoptError as exc:
        _fail(exc, "json" if fmt == "json" and out is None else "table")
        return
    if text is not None:
        stdout.write((text + ("\n" if fmt == "json" else "")).encode("utf-8"))
        stdout.flush()
    else:
        typer.echo(f"wrote {out}", err=True)
