"""Text report of a mix result (the CLI prints these): rich tables from `MixResult` data."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from costopt.search.multijob.pipeline import MixResult


def render(res: MixResult, console, timings: bool = False) -> None:
    """Print a mix result as rich tables on `console` (solve times only with `timings`, so the same
    inputs print the same bytes)."""
    from rich import box
    from rich.table import Table

    lim = res.limits
    shown = ", ".join(f"{k} {v:,.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in lim.items() if v is not None)
    gap = "n/a" if res.gap is None else f"{res.gap:.2%}"
    console.print(f"costopt solve --workload: mix '{res.name}', objective {res.objective}, {shown}")
    took = f", solve {res.solve_time_s:.2f} s (total {res.total_time_s:.2f} s)" if timings else ""
    console.print(f"solver CBC: {res.status}, gap {gap}{took}, objective value {res.objective_value:,.6g}")
    if res.note:
        console.print(res.note)
    # 120 columns without a cut cell: a light box, short headers, and a cell too wide folds onto a second line
    t = Table(title="One design per job", title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True,
              pad_edge=False)
    # a mix with a large-model job: throughput in each job's unit (samples/s, tokens/s), said in the cell
    mixed = any(j.get("kind") == "large-model" for j in res.jobs)
    unit = (lambda j: " tok" if j.get("kind") == "large-model" else " smp") if mixed else (lambda j: "")  # noqa: E731
    for col, just in (("job", "left"), ("model", "left"), ("gpu", "left"), ("GPUs", "right"), ("nic", "left"),
                      ("strategy", "left"), ("list cost", "right"), ("per s" if mixed else "samples/s", "right"),
                      ("target", "right"),
                      ("ratio", "right"), ("kW", "right"), ("RU", "right"), ("designs", "right")):
        t.add_column(col, justify=just, overflow="fold", no_wrap=col != "designs")  # only the long one wraps
    for j in res.jobs:
        d = j["design"]
        c = j["candidates"]
        how = (f"{d['strategy']} tp{d['tp']} pp{d['pp']}" if j.get("kind") == "large-model" else
               {"hierarchical": "hier"}.get(d["strategy"], d["strategy"]) + ("" if d["reduce_on"] == "gpu" else "/cpu"))
        t.add_row(j["name"], j["model"], d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}={d['total_gpus']}",
                  d["nic"] or "none", how, f"${d['cost_usd']:,.0f}", f"{j['throughput']:,.0f}{unit(j)}",
                  "-" if j["target"] is None else f"{j['target']:,.0f}{unit(j)}",
                  "-" if j["target_ratio"] is None else f"{j['target_ratio']:.2f}", f"{d['power_kw']:,.1f}",
                  f"{d['rack_units']:g}",
                  f"{c.get('feasible', 0):,} > {c.get('within_limits', 0):,} > {c.get('after_pruning', 0):,}")
    console.print(t)
    console.print("designs: feasible > within the per-design limits > kept after pruning (per job)")
    if res.parts:
        t = Table(title="Shared parts (inventory, stock, volume tiers)", title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("part", "used", "owned", "bought", "spare", "stock", "unit price", "cost"):
            t.add_column(col, justify="left" if col == "part" else "right", overflow="fold")
        for p in res.parts:
            t.add_row(f"{p['kind']} {p['id']}", str(p["used"]), str(p["owned"]), str(p["bought"]), str(p["spare"]),
                      "-" if p["stock"] is None else str(p["stock"]),
                      "-" if p["unit_price_usd"] is None else f"${p['unit_price_usd']:,.0f}", f"${p['cost_usd']:,.0f}")
        console.print(t)
    tot = res.totals
    console.print(f"Total: ${tot['cost_usd']:,.0f} (list price of the designs ${tot['list_price_usd']:,.0f}), "
                  f"{tot['power_kw']:,.1f} kW, {tot['rack_units']:g} RU, {tot['nodes']} nodes, {tot['gpus']} GPUs, "
                  f"NIC types: {', '.join(tot['nic_types']) or 'none (single nodes)'}; "
                  f"GPU types: {', '.join(tot.get('gpu_types', []))}")
    if res.binding:
        t = Table(title="Limits at the answer (binds: changing one job's design would improve the answer but "
                        "needs more of this limit)",
                  title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("limit", "used", "allowed", "slack", "binds", "what more of it would allow"):
            t.add_column(col, justify="left" if col in ("limit", "binds", "what more of it would allow") else "right",
                         overflow="fold")
        for b in res.binding:
            t.add_row(b["limit"], _amount(b["used"], b["unit"]), _amount(b["allowed"], b["unit"]),
                      _amount(b["slack"], b["unit"]), "yes" if b["binds"] else ("at limit" if b["at_limit"] else "no"),
                      _blocked(b, res.objective))
        console.print(t)
    ex = res.excluded or {}
    if ex.get("sentence"):
        console.print(ex["sentence"])
        for info in ex.get("jobs", {}).values():
            if info.get("sentence"):
                console.print(f"  {info['sentence']}")
    for p in res.parts:
        why = p.get("owned_unused")
        if why:
            console.print(f"Owned {p['kind']} {p['id']}: {why['units']} of {p['owned']} unused: {_unused(why, res.objective)}")


def _amount(v: float, unit: str) -> str:
    if unit == "USD":
        return f"${v:,.0f}"
    if unit in ("types", "units", "nodes"):
        return f"{v:,.0f}"
    return f"{v:,.4g} {unit}"


def _change(rel: float, objective: str) -> str:
    what = {"throughput": "weighted throughput", "fair": "least throughput/target", "cost": "cost"}[objective]
    return f"{what} {rel:+.2%}"


def _blocked(b: dict, objective: str) -> str:
    c = b.get("blocked_change")
    if not c:
        return "no one-job improvement needs more of it"
    return (f"{_amount(c['over_by'], b['unit'])} more: job '{c['job']}' on {c['design']}, "
            f"{_change(c['objective_change'], objective)}")


def _unused(why: dict, objective: str) -> str:
    if why["reason"] == "no_candidate":
        return ("no candidate design of any job uses more of it (designs with it break a per-design limit, do not "
                "fit the model, or cost, run and draw no better than one without it)")
    if why["reason"] == "worse":
        return (f"the best one-job change that uses more (job '{why['job']}' on {why['design']}) gives "
                f"{_change(why['objective_change'], objective)}")
    return (f"every one-job change that uses more breaks a limit; the closest (job '{why['job']}' on "
            f"{why['design']}) is over the {why['limit']} limit by {why['over_by']:,.4g}")
