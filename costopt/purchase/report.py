"""What-if report for a purchase: one self-contained HTML file (plots embedded as PNG) or Markdown.

Sections (each an element with a stable id, which the tests look for):

    recommended  the recommended design and the top alternatives (the same numbers as `costopt solve`),
                 its bill of materials (when the design carries `bom`) and what the part filter left
                 out (when the solve carries `excluded`)
    gputypes     the best design of every GPU type, table and bar chart coloured by GPU type
    pareto       cost-throughput Pareto front of every feasible design, one line per GPU type
    scaling      throughput vs GPUs for ring, hierarchical and PS at each NIC the winner's node takes,
                 with the winner's NIC adapters per node
    bandwidth    the NIC line rate each top design needs for 90% scaling efficiency (the thesis's
                 "network bandwidth requirement"): each design is re-evaluated over a range of line
                 rates with its own transport, and the lowest rate reaching 0.9 is reported
    budget       best throughput vs budget, overall and per strategy
    time         time to train (`epochs` x `dataset_size` samples) of the top designs (only with epochs)
    rentbuy      buy the recommended cluster or rent the same work (only with a cloud catalog)
    breakdown    the winner's iteration: forward, backward, optimizer step, exposed communication

Money axes are in dollars; colours follow the GPU type (one colour per type, the same in every plot).

The data behind the recommendation is embedded as JSON (`<script id="costopt-solve">`), so the
report can be checked against `costopt solve --format json`; `Report.data` adds more JSON blocks
(`<script id="costopt-KEY">`). A transformer request gets the large-model report instead
(costopt/purchase/llm_report.py: layouts, memory per GPU, feasible strategies by GPU memory), in these formats.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from costopt.search import api
from costopt.hardware.catalog import Catalog
from costopt.core.checks import count
from costopt.search.design_space import NO_NIC, STRATEGIES, DesignSpace, enumerate_designs
from costopt.core.errors import InputError
from costopt.hardware.cost import within_budget
from costopt.hardware.part_filter import KEPT, PartFilter
from costopt.purchase import decision
from costopt.purchase.purchasing import Options, _as_catalog, check_budget, evaluate_catalog_bounded, solve_catalog
from costopt.purchase.report_parts import (FIGURE_DIR_MARK, Figure, Report, Section, _plt, _png,  # noqa: F401
                                           check_figure_dir, figure, figure_dir_for, refuse_rent_terms_without_cloud,
                                           to_html, to_markdown, write_report)
from costopt.search.solver import pareto_front
from costopt.core.units import format_usd

TARGET_EFFICIENCY = 0.9
RATE_GRID_GBPS = np.geomspace(1.0, 3200.0, 49)  # line rates tried for the bandwidth requirement
STRATEGY_COLORS = {"ring": "#1f77b4", "hierarchical": "#2ca02c", "ps": "#d62728"}
SECTIONS = ("summary", "recommended", "sensitivity", "assumptions", "gputypes", "pareto", "scaling", "bandwidth", "budget",
            "breakdown")  # always present
OPTIONAL_SECTIONS = ("time", "rentbuy")  # with epochs and dataset size; with a cloud catalog


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _money(v: float, cloud_rate: bool = False) -> str:
    return format_usd(v, cents=cloud_rate)


def _dollar_axis(axis, cloud_rate: bool = False) -> None:
    """Tick labels in dollars ($200,000), never in scientific notation."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: _money(v, cloud_rate)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))


def _gpu_colors(gpus: list[str]) -> dict[str, Any]:
    """One colour per GPU type, in the order given (tab10, then tab20 beyond ten types)."""
    plt = _plt()
    cmap = plt.get_cmap("tab10" if len(gpus) <= 10 else "tab20")
    return {g: cmap(i % cmap.N) for i, g in enumerate(gpus)}


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">", "p", "*", "8", "d", "H")


def _gpu_markers(gpus: list[str]) -> dict[str, str]:
    """One marker per GPU type, in the order given: with `_gpu_colors`, every (colour, marker) pair is unique,
    so two GPU types that get similar colours are still told apart."""
    return {g: MARKERS[i % len(MARKERS)] for i, g in enumerate(gpus)}


def _nics(d: dict[str, Any]) -> str:
    return "none" if d["nic"] == "none" else f"{max(int(d.get('nics_per_node') or 1), 1)}x {d['nic']}"


def _design_label(d: dict[str, Any]) -> str:
    strat = d["strategy"] + ("" if d["reduce_on"] == "gpu" else "/cpu")
    return f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {_nics(d)}, {strat}"


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    # no bar (and no stray blank line) when stderr is a file or pipe: errors stay one line there
    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), console=console, transient=True,
                    disable=not enabled or not console.is_terminal)


# ------------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------------


def _recommended(res: api.SolveResult, basis: str, cloud: bool, network: str | None = None) -> Section:
    rows = []
    for i, d in enumerate([res.best] + res.alternatives, 1):
        rows.append([str(i), d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}={d['total_gpus']}", _nics(d),
                     d["strategy"] + ("" if d["reduce_on"] == "gpu" else "/cpu"), _money(d["cost_usd"], cloud),
                     f"{d['throughput_samples_per_s']:,.1f}", _money(d["usd_per_sample_per_s"]),
                     f"{d['power_kw']:,.1f}", f"{d['rack_units']:,.0f}", f"{d['scaling_efficiency']:.3f}",
                     f"{d['t_iter_s'] * 1e3:,.1f}", d["bottleneck"], d["compute_source"]])
    b = res.best
    intro = (f"Recommended: {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']} per node x {b['nodes']} nodes, "
             f"{b['chassis']}), {_nics(b)} per node, {b['strategy']} - cost {_money(b['cost_usd'], cloud)} ({basis}), "
             f"throughput {_throughput_phrase(b, res.model)}, {b['power_kw']:,.1f} kW, {b['rack_units']:,.0f} RU. "
             f"Why: {res.why}. Strategy: {res.why_strategy}." + (f" Network: {network}" if network else ""))
    header = ["#", "GPU", "GPUs (G x M = N)", "NICs per node", "strategy", f"cost (USD; {basis})", "samples/s",
              "USD per sample/s", "power kW", "rack units", "scaling eff.", "t_iter ms", "bottleneck", "compute"]
    designs = [res.best] + res.alternatives
    if any(d.get("throughput_low_samples_per_s") is not None for d in designs):  # predictions with a range
        header.insert(7, "80% range samples/s")
        for r, d in zip(rows, designs):
            lo, hi = d.get("throughput_low_samples_per_s"), d.get("throughput_high_samples_per_s")
            r.insert(7, "-" if lo is None or hi is None else f"{lo:,.0f} - {hi:,.0f}"
                     + (" (near tie)" if d.get("near_tie") else ""))
    sec = Section("recommended", "Recommended design and alternatives", intro, [(header, rows)])
    sec.notes += [f"Warning: {w}" for w in res.warnings]
    if res.capacity:  # a rented pick: its instance type's cap, and whether it bound
        sec.notes.append(res.capacity["sentence"])
    bom = b.get("bom")
    if bom:
        total = sum(float(x["subtotal_usd"]) for x in bom)
        brows = [[str(x["item"]), str(x.get("part_id", "")), _money(float(x["unit_price_usd"]), True),
                  f"{x['quantity']:,g}", _money(float(x["subtotal_usd"]), True), str(x.get("source", ""))] for x in bom]
        brows.append(["total", "", "", "", _money(total, True), ""])
        sec.tables.append((["bill of materials: item", "part", "unit price USD", "quantity", "subtotal USD", "source"],
                           brows))
        sec.notes.append(f"Bill of materials of the recommended design: {len(bom)} line items summing to "
                         f"{_money(total, True)}; capex {_money(b['capex_usd'], True)}.")
    if b.get("oldest_price_date"):
        sec.notes.append(f"Oldest price in the recommended design: {b['oldest_price_date']} (ages counted to "
                         f"{res.as_of}, --as-of)" + (f"; warning: {b['price_warning']}." if b.get("price_warning")
                                                    else "."))
    excluded = res.to_json_dict().get("excluded")
    if excluded:
        counts = excluded.get("counts") or {}
        text = ", ".join(f"{n:,} {why}" for why, n in counts.items()) or "nothing"
        eb = excluded.get("best")
        line = f"Part filter: left out {text}."
        if excluded.get("sentence"):  # the solve's own wording (part_filter.excluded_sentence), counts included
            line = excluded["sentence"]
        elif eb:
            ratio = (eb["throughput_samples_per_s"] / eb["cost_usd"]) / (b["throughput_samples_per_s"] / b["cost_usd"])
            line += (f" The best excluded design: {eb['total_gpus']} x {eb['gpu']} ({eb.get('segment', '')} "
                     f"{eb.get('lifecycle', '')}), {eb['throughput_samples_per_s']:,.1f} samples/s for "
                     f"{_money(eb['cost_usd'], cloud)}: {ratio:.2f}x the recommended design's throughput per dollar.")
        sec.notes.append(line)
    sec.notes.append(f"{res.candidates_evaluated:,} designs evaluated; Pareto front of {res.solver['pareto_front_size']} "
                     f"designs; solver {res.solver['solver']} ({res.solver['status']}). Compute basis of the winner: "
                     f"{b['compute_source']} - {b['compute_basis']}")
    return sec


def _throughput_phrase(d: dict, model: str) -> str:
    """'1,234 samples/s (80% range 1,050-1,300; compute ... (estimate))' (costopt/perf/intervals.py)."""
    from costopt.perf.intervals import compute_label, range_phrase

    label = compute_label(d["compute_source"], model, d.get("compute_basis"), d["gpu"])
    return range_phrase(d["throughput_samples_per_s"], d.get("throughput_low_samples_per_s"),
                        d.get("throughput_high_samples_per_s"), label)


def _gpu_types(res: api.SolveResult, colors: dict[str, Any], cloud: bool, basis: str) -> Section:
    """The best design of every GPU type (the solve's `best_per_gpu`), as a table and a bar chart."""
    plt = _plt()
    per = res.best_per_gpu or [res.best]
    w = res.best
    rows = []
    for d in per:
        rows.append([d["gpu"], _design_label(d), _money(d["cost_usd"], cloud), f"{d['throughput_samples_per_s']:,.1f}",
                     f"{d['throughput_samples_per_s'] / w['throughput_samples_per_s']:.2f}",
                     _money(d["usd_per_sample_per_s"]), f"{d['power_kw']:,.1f}", f"{d['rack_units']:,.0f}",
                     d["compute_source"]])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.9 + 0.38 * len(per)), layout="constrained", sharey=True)
    names = [d["gpu"] for d in per][::-1]
    ax1.barh(names, [d["throughput_samples_per_s"] for d in per][::-1], color=[colors[n] for n in names])
    ranged = [(i, d) for i, d in enumerate(per[::-1]) if d.get("throughput_low_samples_per_s") is not None]
    if ranged:
        ax1.errorbar([d["throughput_samples_per_s"] for _, d in ranged], [i for i, _ in ranged],
                     xerr=[[d["throughput_samples_per_s"] - d["throughput_low_samples_per_s"] for _, d in ranged],
                           [d["throughput_high_samples_per_s"] - d["throughput_samples_per_s"] for _, d in ranged]],
                     fmt="none", ecolor="black", elinewidth=1, capsize=3, label="80% range of throughput")
        ax1.legend(fontsize=7, loc="lower right")
    ax1.set_xlabel("throughput of its best design (samples/s)")
    ax2.barh(names, [d["usd_per_sample_per_s"] for d in per][::-1], color=[colors[n] for n in names])
    ax2.set_xlabel("USD per sample/s of that design")
    _dollar_axis(ax2.xaxis)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, axis="x")
    fig.suptitle("Best design of each GPU type within the budget")
    intro = (f"The best design ({res.objective}) of each of the {len(per)} GPU types the search allowed, "
             f"within the budget; cost is {basis}. The first row is the recommendation.")
    return Section("gputypes", "Best design per GPU type", intro,
                   [(["GPU", "design", "cost", "samples/s", "vs recommended", "USD per sample/s", "power kW",
                      "rack units", "compute"], rows)],
                   [figure("gputypes", "Best design per GPU type", fig)])


def fronts_per_gpu(ev: api.Evaluation) -> np.ndarray:
    """Designs on each GPU type's cost-throughput Pareto front among the feasible ones (ties: first in index
    order), the designs `_pareto` draws. Kept from every piece of a space evaluated in pieces: a GPU's front
    over the whole space lies in the union of the pieces' fronts."""
    c, t, s = ev.costs, ev.timing, ev.space
    ok = np.flatnonzero(t.feasible & c.buildable)
    if len(ok) == 0:
        return ok
    ok = ok[np.argsort(s.gpu_idx[ok], kind="stable")]  # grouped by GPU, index order within each
    starts = np.flatnonzero(np.concatenate(([True], s.gpu_idx[ok][1:] != s.gpu_idx[ok][:-1])))
    keep = []
    for m in np.split(ok, starts[1:]):
        keep.append(m[pareto_front(c.cost_usd[m], t.throughput_samples_per_s[m], np.arange(len(m)))])
    return np.sort(np.concatenate(keep))


def _pareto(ev: api.Evaluation, best: dict, budget: float, basis: str, colors: dict[str, Any],
            pieces: bool = False, part_filter: PartFilter | None = None) -> Section:
    """Only designs the part filter offers (default: the solve's default filter), as the recommendation."""
    plt = _plt()
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable & ((part_filter or PartFilter()).design_reasons(s) == KEPT)
    markers = _gpu_markers(list(colors))
    cloud = ev.catalog.is_cloud
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.scatter(c.cost_usd[ok], t.throughput_samples_per_s[ok], s=4, color="#cccccc", label="all offered feasible designs")
    rows = []
    gpu_ids = [g.id for g in s.gpus]
    for name in [g for g in colors if g in gpu_ids]:
        m = np.flatnonzero(ok & (s.gpu_idx == gpu_ids.index(name)))
        if len(m) == 0:
            continue
        front = m[pareto_front(c.cost_usd[m], t.throughput_samples_per_s[m], np.arange(len(m)))]
        ax.step(c.cost_usd[front], t.throughput_samples_per_s[front], where="post", color=colors[name],
                marker=markers[name], ms=4, lw=1.2, label=name)
        inb = front[within_budget(c, budget)[front]]
        if len(inb):
            j = inb[-1]
            d = ev.frame([j]).iloc[0]
            rows.append([name, str(len(front)), _money(float(d["cost_usd"]), cloud), f"{d['throughput_samples_per_s']:,.1f}",
                         f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {_nics(d)}, {d['strategy']}"])
    ax.axvline(budget, color="black", ls="--", lw=1, label=f"budget {_money(budget, cloud)}")
    ax.scatter([best["cost_usd"]], [best["throughput_samples_per_s"]], marker="*", s=250, color="gold",
               edgecolor="black", zorder=5, label="recommended")
    ax.set_xscale("log")
    _dollar_axis(ax.xaxis, cloud)
    ax.set_xlabel(f"cost ({basis})")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_title("Cost-throughput Pareto front by GPU type")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    intro = ("Every feasible design of the parts offered (grey; the part filter's exclusions are not drawn) and, per "
             "GPU type, the designs no cheaper design of that type beats on throughput. The star is the "
             "recommendation.")
    if pieces:
        intro = ("The design space was too large to hold at once and was evaluated in pieces: grey are the feasible "
                 "designs kept from the pieces (every GPU type's front and the search's candidates), not every "
                 "design. Per GPU type, the designs no cheaper design of that type beats on throughput. The star "
                 "is the recommendation.")
    return Section("pareto", "Cost-throughput Pareto front by GPU type", intro,
                   [(["GPU", "front size", "best cost within budget", "samples/s", "design"], rows)],
                   [figure("pareto", "Pareto front", fig)])


def _scaling(cat: Catalog, ev: api.Evaluation, best: dict, opts: Options) -> Section:
    plt = _plt()
    max_nodes = int(min(64, max(16, 2 * best["nodes"])))
    space = enumerate_designs(cat, max_nodes=max_nodes, gpu_ids=[best["gpu"]], chassis_ids=[best["chassis"]])
    sev = api.evaluate_space(space, catalog=cat, workload=ev.workload, tensors=ev.tensors, params=ev.params,
                             precision=ev.precision, batch_per_gpu=ev.batch_per_gpu, overlap=ev.overlap)
    t = sev.timing
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), sharey=True, layout="constrained")
    nic_rates = {i: n for i, n in enumerate(space.nics)}
    single = (space.nic_idx == NO_NIC)
    one_node_thr = float(np.max(t.throughput_samples_per_s[single])) if single.any() else math.nan
    G = best["gpus_per_node"]
    adapters = max(int(best.get("nics_per_node") or 1), 1)
    rows = []
    for ax, (k, name) in zip(axes, enumerate(STRATEGIES)):
        for ni in sorted(set(space.nic_idx[~single].tolist()), key=lambda i: nic_rates[i].line_rate_gbps):
            m = np.flatnonzero((space.nic_idx == ni) & (space.strategy == k) & (space.reduce_on == 0)
                               & (space.nics_per_node == adapters))  # the winner's adapters per node
            if len(m) == 0:  # this NIC is not offered with that many adapters: its single-adapter curve
                m = np.flatnonzero((space.nic_idx == ni) & (space.strategy == k) & (space.reduce_on == 0)
                                   & (space.nics_per_node == 1))
            if len(m) == 0:
                continue
            m = m[np.argsort(space.nodes[m])]
            x = np.concatenate([[G], space.total_gpus[m]])
            y = np.concatenate([[one_node_thr], t.throughput_samples_per_s[m]])
            n = nic_rates[ni]
            per_node = int(space.nics_per_node[m[0]])
            ax.plot(x, y, marker=MARKERS[ni % len(MARKERS)], ms=4,
                    label=f"{per_node}x {n.id} ({n.line_rate_gbps:g} Gb/s {n.transport})")
            last = m[-1]
            rows.append([name, f"{per_node}x {n.id}", f"{n.line_rate_gbps:g}", str(int(space.total_gpus[last])),
                         f"{t.throughput_samples_per_s[last]:,.1f}", f"{t.scaling_efficiency[last]:.3f}"])
        per_gpu = one_node_thr / G
        xs = np.array([G, G * max_nodes])
        ax.plot(xs, per_gpu * xs, color="black", ls=":", lw=1, label="linear (one node x nodes)")
        ax.set_title(name)
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("throughput (samples/s)")
    axes[-1].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Scaling of {G} x {best['gpu']} nodes ({best['chassis']}) at each NIC")
    intro = (f"Throughput as nodes are added (1 to {max_nodes} nodes of {G} x {best['gpu']}), for each strategy and "
             f"each NIC the chassis takes, with {adapters} adapter(s) per node as in the recommended design; the "
             f"dotted line is perfect linear scaling. The table gives the largest cluster plotted.")
    return Section("scaling", "Scaling curves by strategy and NIC", intro,
                   [(["strategy", "NICs per node", "Gb/s per adapter", "GPUs", "samples/s", "scaling eff."], rows)],
                   [figure("scaling", "Scaling curves", fig)])


def bandwidth_requirement(ev: api.Evaluation, designs: list[dict], rates: np.ndarray = RATE_GRID_GBPS,
                          target: float = TARGET_EFFICIENCY) -> list[dict[str, Any]]:
    """For each multi-node design: scaling efficiency over `rates` (its own NIC type, line rate varied) and
    the lowest line rate reaching `target` (log-interpolated between grid points; None if never)."""
    cat = ev.catalog
    multi = [d for d in designs if d["nodes"] > 1]
    if not multi:
        return []
    gpu_pos = {g.id: i for i, g in enumerate(cat.gpu)}
    ch_pos = {c.id: i for i, c in enumerate(cat.chassis)}
    nics, g_i, c_i, nodes, strat, red, nic_i, per_node = [], [], [], [], [], [], [], []
    for d in multi:
        base = cat.nics[d["nic"]]
        for r in rates:
            nic_i.append(len(nics))
            nics.append(base.model_copy(update={"line_rate_gbps": float(r)}))
            g_i.append(gpu_pos[d["gpu"]])
            c_i.append(ch_pos[d["chassis"]])
            nodes.append(d["nodes"])
            strat.append(STRATEGIES.index(d["strategy"]))
            red.append(0 if d["reduce_on"] == "gpu" else 1)
            per_node.append(max(int(d.get("nics_per_node") or 1), 1))  # the rate varied is per adapter
    a = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    space = DesignSpace(list(cat.gpu), list(cat.chassis), nics, a(g_i), a(c_i), a(nic_i), a(nodes), a(strat), a(red),
                        a(per_node))
    sev = api.evaluate_space(space, catalog=cat, workload=ev.workload, tensors=ev.tensors, params=ev.params,
                             precision=ev.precision, batch_per_gpu=ev.batch_per_gpu, overlap=ev.overlap)
    eff = sev.timing.scaling_efficiency.reshape(len(multi), len(rates))
    bn = np.array(sev.timing.bottleneck).reshape(len(multi), len(rates))
    from costopt.perf.timing import BOTTLENECKS

    out = []
    for k, d in enumerate(multi):
        e = eff[k]
        hit = np.flatnonzero(e >= target)
        need = None
        if len(hit):
            j = int(hit[0])
            if j == 0:
                need = float(rates[0])
            else:  # interpolate on log(rate) between the bracketing grid points
                r0, r1, e0, e1 = math.log(rates[j - 1]), math.log(rates[j]), e[j - 1], e[j]
                w = (target - e0) / (e1 - e0) if e1 != e0 else 1.0
                need = float(math.exp(r0 + w * (r1 - r0)))
        out.append({"design": d, "efficiency": e, "required_gbps": need,
                    "bound_at_top_rate": BOTTLENECKS[int(bn[k, -1])]})
    return out


def network_verdict(ev: api.Evaluation, r: dict) -> tuple[str, bool]:
    """The bandwidth section's verdict for one requirement row, and whether the NIC is short."""
    d = r["design"]
    have = ev.catalog.nics[d["nic"]].line_rate_gbps
    need = r["required_gbps"]
    if need is None:
        bound = r["bound_at_top_rate"]
        if bound != "network":  # no line rate reaches 90%: the limit is inside the node, not the NIC
            return (f"not reached at any line rate up to {RATE_GRID_GBPS[-1]:,.0f} Gb/s ({bound}-bound: the NIC "
                    "is not the limit)"), False
        return f"not reached even at {RATE_GRID_GBPS[-1]:,.0f} Gb/s (network-bound)", True
    if need <= have:
        return f"enough ({have / need:.1f}x headroom)", False
    return f"short: needs {need / have:.1f}x its NIC", True


def network_sentence(ev: api.Evaluation, req: list[dict], best: dict) -> str | None:
    """What the bandwidth section says of the recommendation's NIC, as a sentence for the Why line and the
    risks (None: single node, or not short)."""
    for r in req:
        d = r["design"]
        if all(d.get(k) == best.get(k) for k in ("gpu", "gpus_per_node", "nodes", "nic", "nics_per_node", "strategy")):
            verdict, short = network_verdict(ev, r)
            if not short:
                return None
            have = ev.catalog.nics[d["nic"]].line_rate_gbps
            need = r["required_gbps"]
            return (f"its NIC is short of 90% scaling efficiency ({verdict}: {_nics(d)} at {have:g} Gb/s per adapter"
                    + (f", 90% needs {need:,.0f} Gb/s" if need else "") + f"); at its scaling efficiency "
                    f"{d['scaling_efficiency']:.2f} it still gives the most throughput for the money (NIC bandwidth "
                    "section).")
    return None


def _bandwidth(ev: api.Evaluation, designs: list[dict], req: list[dict] | None = None) -> Section:
    plt = _plt()
    req = bandwidth_requirement(ev, designs) if req is None else req
    rows = []
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    for r in req:
        d = r["design"]
        have = ev.catalog.nics[d["nic"]].line_rate_gbps
        need = r["required_gbps"]
        verdict = network_verdict(ev, r)[0]
        rows.append([_design_label(d), f"{have:g}", f"{d['scaling_efficiency']:.3f}",
                     "-" if need is None else f"{need:,.1f}", verdict])
        ax.plot(RATE_GRID_GBPS, r["efficiency"], marker=MARKERS[len(rows) % len(MARKERS)], ms=3, markevery=4,
                label=f"#{len(rows)} {_design_label(d)}")
    ax.axhline(TARGET_EFFICIENCY, color="black", ls="--", lw=1, label="90% scaling efficiency")
    ax.set_xscale("log")
    ax.set_xlabel("NIC line rate (Gb/s)")
    ax.set_ylabel("scaling efficiency")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("Network bandwidth requirement")
    intro = ("The line rate each multi-node design needs for 90% scaling efficiency: the design is re-evaluated "
             f"at {len(RATE_GRID_GBPS)} line rates from {RATE_GRID_GBPS[0]:g} to {RATE_GRID_GBPS[-1]:g} Gb/s with its own "
             "NIC's transport and latency, and the lowest rate reaching 0.9 is interpolated. Single-node designs "
             "need no network and are left out.")
    sec = Section("bandwidth", "NIC bandwidth needed for 90% scaling efficiency", intro,
                  [(["design", "its NIC Gb/s", "scaling eff. now", "needed Gb/s", "verdict"], rows)],
                  [figure("bandwidth", "Bandwidth requirement", fig)])
    if not req:
        sec.notes.append("No multi-node design among the top designs.")
    return sec


def sweep_designs(ev: api.Evaluation, budgets: np.ndarray, part_filter: PartFilter | None = None) -> np.ndarray:
    """Designs `_budget_sweep` reads: at each budget, the fastest feasible design within it that the part
    filter offers (None: the default search, as `solve`; the first in index order on ties) and the fastest
    of each strategy. Kept from every piece of a space evaluated in pieces, the pieces in index order, they
    give the same picks as the whole space."""
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable & ((part_filter or PartFilter()).design_reasons(s) == KEPT)
    thr = t.throughput_samples_per_s
    keep = []
    for b in budgets:
        m = ok & within_budget(c, float(b))
        for sel in (m, *(m & (s.strategy == k) for k in range(len(STRATEGIES)))):
            if sel.any():
                j = np.flatnonzero(sel)
                keep.append(int(j[np.argmax(thr[j])]))
    return np.unique(np.array(keep, dtype=np.int64))


def _budget_sweep(cat: Catalog, model: str, budget: float, opts: Options, progress) -> Section:
    plt = _plt()
    budgets = np.geomspace(budget / 16.0, budget * 2.0, 25)
    pf = opts.part_filter(cat)
    ev, _ = evaluate_catalog_bounded(cat, model, float(budgets[-1]), opts,
                                     keep=lambda piece: sweep_designs(piece, budgets, pf))
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable & (pf.design_reasons(s) == KEPT)
    task = progress.add_task("budget sweep", total=len(budgets))
    best = np.full(len(budgets), np.nan)
    per = {name: np.full(len(budgets), np.nan) for name in STRATEGIES}
    labels = []
    for i, b in enumerate(budgets):
        m = ok & within_budget(c, float(b))
        if m.any():
            j = int(np.flatnonzero(m)[np.argmax(t.throughput_samples_per_s[m])])
            best[i] = t.throughput_samples_per_s[j]
            d = ev.frame([j]).iloc[0]
            labels.append(f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {d['nic']}, {d['strategy']}")
        else:
            labels.append("-")
        for k, name in enumerate(STRATEGIES):
            mk = m & (s.strategy == k)
            if mk.any():
                per[name][i] = t.throughput_samples_per_s[mk].max()
        progress.advance(task)
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    ax.plot(budgets, best, color="black", lw=2.5, marker=MARKERS[0], ms=3, label="best of all")
    for name, v in per.items():
        ax.plot(budgets, v, color=STRATEGY_COLORS[name], lw=1, marker=MARKERS[STRATEGIES.index(name) + 1], ms=3,
                label=name)
    ax.axvline(budget, color="grey", ls="--", lw=1, label="your budget")
    ax.set_xscale("log")
    _dollar_axis(ax.xaxis, cat.is_cloud)
    ax.set_xlabel(f"budget ({opts.basis().label(cat.is_cloud)})")
    ax.set_ylabel("best throughput (samples/s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax.set_title("Best throughput vs budget")
    rows = [[_money(float(b), cat.is_cloud), "-" if math.isnan(v) else f"{v:,.1f}", lab]
            for b, v, lab in zip(budgets[::3], best[::3], labels[::3])]
    intro = (f"The most throughput any design reaches at {len(budgets)} budgets from {_money(budgets[0])} to "
             f"{_money(budgets[-1])} (every third shown in the table).")
    return Section("budget", "Best throughput vs budget", intro, [(["budget", "best samples/s", "design"], rows)],
                   [figure("budget", "Throughput vs budget", fig)])


def _time_to_train(designs: list[dict], opts: Options) -> Section:
    plt = _plt()
    samples = opts.samples  # the section is built only for a stated job (epochs x dataset size)
    what, unit = f"{opts.epochs:g} epochs x {opts.dataset_size:,.0f} samples", "hours"
    hours = [samples / d["throughput_samples_per_s"] / 3600.0 for d in designs]
    rows = [[str(i), _design_label(d), f"{d['throughput_samples_per_s']:,.1f}", f"{h:,.2f}", f"{h / 24:,.2f}"]
            for i, (d, h) in enumerate(zip(designs, hours), 1)]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * len(designs)), layout="constrained")
    labels = [f"#{i} {_design_label(d)}" for i, d in enumerate(designs, 1)]
    ax.barh(labels[::-1], hours[::-1], color="#1f77b4")
    ax.set_xlabel(unit)
    ax.set_title(f"Time to train: {what}")
    ax.grid(alpha=0.3, axis="x")
    intro = f"Time to train {what} on each of the top designs."
    return Section("time", "Time to train", intro, [(["#", "design", "samples/s", unit, "days"], rows)],
                   [figure("time", "Time to train", fig)])


def rent_buy_rows(r) -> list[list[str]]:
    """A rent-vs-buy answer's cost rows as report cells (what, value, unit), for every workload."""
    rows = []
    for what, v, unit in r.rows:
        if unit.startswith("USD"):
            val = _money(v, "hour" in unit or abs(v) < 100)
        elif unit.startswith("fraction"):
            val = f"{v:.1%}"
        else:
            val = f"{v:,.1f}"
        rows.append([what, val, unit])
    return rows


def _rent_vs_buy(model: str, budget: float, cat: Catalog, cloud: Catalog, opts: Options, years: float,
                 utilization: float | None) -> Section:
    """`purchasing.rent_vs_buy` for the report: the owned recommendation against renting the same work."""
    from costopt.purchase.purchasing import rent_vs_buy

    r = rent_vs_buy(model, budget, cloud, cat, years=years, opts=opts, utilization=utilization)
    rows = rent_buy_rows(r)
    b, k = r.buy, r.rent
    intro = (f"Buy {b['total_gpus']} x {b['gpu']} ({_nics(b)} per node, {b['strategy']}) from "
             f"{r.owned_catalog}, or rent {k['nodes']} x {k['chassis']} ({k['total_gpus']} x {k['gpu']}) from "
             f"{r.cloud_catalog} at {_money(r.rent_usd_per_hour, True)} per hour for the same work, over "
             f"{r.years:g} years. Verdict: {r.verdict}.")
    return Section("rentbuy", "Rent or buy", intro, [(["what", "value", "unit / meaning"], rows)]), r


def _breakdown(ev: api.Evaluation, best: dict) -> Section:
    plt = _plt()
    gi = [g.id for g in ev.space.gpus].index(best["gpu"])
    f, b, st = (float(x[gi]) for x in (ev.compute.forward_s, ev.compute.backward_s, ev.compute.step_s))
    exposed = best["t_exposed_comm_s"]
    comm = best["t_comm_s"]
    total = best["t_iter_s"]
    parts = [("forward", f), ("backward", b), ("optimizer step", st), ("exposed communication", exposed)]
    other = total - sum(v for _, v in parts)
    if abs(other) > 1e-6 * total:
        parts.append(("other (PS pull, host copies)", other))
    fig, ax = plt.subplots(figsize=(8, 2.6), layout="constrained")
    left = 0.0
    colors = ["#4c72b0", "#55a868", "#8172b2", "#c44e52", "#937860"]
    for (name, v), col in zip(parts, colors):
        ax.barh(["iteration"], [v * 1e3], left=left * 1e3, color=col, label=f"{name} {v * 1e3:,.1f} ms")
        left += v
    hidden = max(0.0, comm - exposed)
    ax.barh(["communication"], [comm * 1e3], left=(f + max(0.0, b - hidden)) * 1e3 if comm > 0 else 0,
            color="#dd8452", label=f"all communication {comm * 1e3:,.1f} ms ({hidden * 1e3:,.1f} ms hidden behind backward)")
    ax.set_xlabel("ms")
    fig.legend(fontsize=7, loc="outside lower center", ncol=2)
    ax.set_title(f"Iteration of the recommended design: {total * 1e3:,.1f} ms")
    rows = [[name, f"{v * 1e3:,.2f}", f"{v / total:.1%}"] for name, v in parts]
    rows.append(["all communication (partly overlapped)", f"{comm * 1e3:,.2f}", f"{comm / total:.1%}"])
    rows.append(["iteration (t_iter)", f"{total * 1e3:,.2f}", "100.0%"])
    intro = (f"Where the recommended design's {total * 1e3:,.1f} ms iteration goes (batch {best['batch_per_gpu']} per GPU, "
             f"{best['precision']}, overlap {best['overlap']}); bottleneck: {best['bottleneck']}.")
    return Section("breakdown", "Iteration-time breakdown of the winner", intro, [(["phase", "ms", "share"], rows)],
                   [figure("breakdown", "Iteration breakdown", fig)])


# ------------------------------------------------------------------------------------------------
# build and write
# ------------------------------------------------------------------------------------------------


def _repick(cat: Catalog, model: str, budget: float, opts: Options) -> dict | None:
    """The solve's pick at another budget (a price factor f: budget / f); None when nothing fits."""
    from costopt.core.errors import InfeasibleError

    try:
        return solve_catalog(cat, model, budget, opts, top=1)[0].best
    except InfeasibleError:
        return None


def _tco_lines(model: str, cat: Catalog, opts: Options, years: float):
    """The whole cost of owning of a solved design over `years`, term by term: `predict` of that design with
    tco_years (hardware/bom.py tco_lines); None for a rented one or when it cannot be priced."""
    memo: dict[tuple, list | None] = {}

    def lines(d: dict) -> list | None:
        key = tuple(d.get(k) for k in ("gpu", "gpus_per_node", "nodes", "nic", "strategy", "chassis", "nics_per_node",
                                        "reduce_on", "batch_per_gpu", "precision", "overlap", "stack", "grad_accum"))
        if key not in memo:
            try:
                p = api.predict(model, d["gpu"], d["gpus_per_node"], d["nodes"], d["nic"], d["strategy"], catalog=cat,
                                system=opts.system, chassis=d["chassis"], nics_per_node=d["nics_per_node"],
                                reduce_on=d["reduce_on"], batch_per_gpu=d["batch_per_gpu"], precision=d["precision"],
                                overlap=d["overlap"], stack=d.get("stack"), grad_accum=d.get("grad_accum", 1),
                                tco_years=years)
                memo[key] = p.get("tco") if abs(p["capex_usd"] - d["capex_usd"]) < 0.5 else None
            except Exception:  # noqa: BLE001 - a design predict cannot price: capex + electricity instead
                memo[key] = None
        return memo[key]
    return lines


def _describe(d: dict) -> str:
    strat = {"ring": "ring all-reduce", "hierarchical": "hierarchical all-reduce", "ps": "parameter server"}
    return (f"{d['total_gpus']} x {d['gpu']} ({d['gpus_per_node']} per node x {d['nodes']} nodes, {d['chassis']}, "
            f"{_nics(d)} per node, {strat.get(d['strategy'], d['strategy'])})")


def _case(res: api.SolveResult, cat: Catalog, cloud_cat: Catalog | None, opts: Options, years: float,
          network: str | None, rented, repick) -> "decision.Case":
    """The data-parallel recommendation as the decision sections read it (purchase/decision.py)."""
    from costopt.perf.intervals import compute_label

    b = res.best
    lo, hi = b.get("throughput_low_samples_per_s"), b.get("throughput_high_samples_per_s")
    risks, verify = [], []
    if b["compute_source"] != "measured":
        risks.append(f"Throughput is an estimate for {b['gpu']}, not a measurement on it "
                     f"({compute_label(b['compute_source'], res.model, b.get('compute_basis'), b['gpu'])})"
                     + (f": the 80% range is {lo:,.0f}-{hi:,.0f} samples/s." if lo and hi else "."))
    rb, n = res.solver.get("robustness"), res.solver.get("robustness_resamples")
    ties = sum(bool(d.get("near_tie")) for d in res.alternatives + res.best_per_gpu)
    if rb is not None and rb < 0.8:
        risks.append(f"A fragile pick: it stays best in only {rb:.0%} of {n} resamples of the fitted system "
                     f"parameters; {ties} alternatives are near ties (ranges overlap).")
    elif ties:
        risks.append(f"{ties} alternatives are near ties (their 80% ranges overlap the recommendation's).")
    if network:
        risks.append("Network: " + network)
    bom = b.get("bom") or []
    est = sorted({str(x.get("part_id")) for x in bom if "estimate" in str(x.get("source", "")).lower()})
    old = sorted({str(x.get("part_id")) for x in bom if str(x.get("price_date", "9999"))[:4].isdigit()
                  and int(str(x["price_date"])[:4]) < int(res.as_of[:4]) - 1})
    if est or b.get("price_warning"):
        risks.append("Prices: " + (f"{', '.join(est)} priced by estimate, not a quote" if est else "")
                     + ("; " if est and b.get("price_warning") else "") + (b.get("price_warning") or "") + ".")
    precision = "amp_bf16" if str(b.get("precision", "")).startswith("amp") else "fp32"
    verify.append(f"Rent one {b['gpus_per_node']}-GPU {b['gpu']} node for a day and run `costopt profile --model "
                  f"{res.model} --gpu-id {b['gpu']} --batch {b['batch_per_gpu']} --precision {precision} -o "
                  f"{b['gpu']}.json`, then `costopt predict --profile {b['gpu']}.json` on this design: its compute "
                  f"then rests on a measurement (now: {b['compute_source']}).")
    if b["nodes"] > 1:
        verify.append(f"On two rented nodes, measure the all-reduce bandwidth over {_nics(b)} (nccl-tests) and "
                      "compare with the NIC bandwidth section's requirement.")
    quote = est + [p for p in old if p not in est]
    verify.append("Get written quotes" + (f" for {', '.join(quote)} (estimated or over a year old)" if quote else
                                          " for every line of the bill of materials") + " and re-run "
                  "`costopt compare` with them as a quote overlay.")
    excluded = (res.to_json_dict().get("excluded") or {})
    extra = [["objective", res.objective, "--objective"], ["cost basis", opts.basis().label(cat.is_cloud),
                                                          "--tco-years (0: capex)"],
             ["precision, batch, overlap, stack", f"{b['precision']}, {b['batch_per_gpu']} per GPU, "
              f"{b['overlap']}, {b.get('stack', '-')}", "--precision, --batch-per-gpu, --overlap, --stack"],
             ["parts offered", str(excluded.get("offered", "current data-centre and workstation parts")),
              "--include / --exclude-gpu"],
             ["system parameters", "fitted defaults (costopt/data/system_defaults.toml)" if opts.system is None
              else str(opts.system), "--system"],
             ["80% ranges", "leave-one-source-out errors of published measurements", "docs/accuracy.md"]]
    rent = None
    if rented is not None:
        k = rented.rent
        rent = {"usd_per_hour": rented.rent_usd_per_hour, "throughput": k["throughput_samples_per_s"],
                "name": f"{k['nodes']} x {k['chassis']}"}
        extra.append(["cloud", f"{cloud_cat.catalog.name} ({cloud_cat.catalog.date})", "--cloud"])
    return decision.Case(
        model=res.model, unit="samples/s", best=b, others=res.best_per_gpu or [b],
        throughput=lambda d: (d["throughput_samples_per_s"], d.get("throughput_low_samples_per_s"),
                              d.get("throughput_high_samples_per_s")),
        describe=_describe, years=years, as_of=res.as_of,
        catalogs=[f"{c.catalog.name} ({c.catalog.date})" for c in [cat] + ([cloud_cat] if cloud_cat else [])],
        site=cat.site, cloud=cat.is_cloud, work=opts.samples,
        work_label=(f"{opts.epochs:g} epochs x {opts.dataset_size:,.0f} samples" if opts.samples else ""),
        risks=risks, verify=verify, assumptions=extra, repick=repick, rent=rent,
        tco_lines=None if cat.is_cloud else _tco_lines(res.model, cat, opts, years))


def build_report(model: str, budget: float, catalog: str | Path | Catalog | None = None, opts: Options | None = None,
                 *, top: int = 8, progress: bool = True, cloud: str | Path | Catalog | None = None,
                 years: float = 3.0, utilization: float | None = None) -> Report:
    """The report's sections (see the module docstring); `cloud`: a cloud catalog for the rent-or-buy
    section (the owned catalog is `catalog`)."""
    opts = opts or Options()
    opts.check()
    check_budget(budget)
    count("top", top)
    cat = _as_catalog(catalog)
    refuse_rent_terms_without_cloud(cat, cloud, hours=opts.hours, utilization=utilization,
                                    max_instances=opts.max_instances)
    cloud_cat = _as_catalog(cloud) if cloud is not None else None
    opts.check_exclusions([cat] + ([cloud_cat] if cloud_cat is not None else []))
    if cloud_cat is not None and not cloud_cat.is_cloud:
        raise InputError(f"--cloud {cloud_cat.path}: not a cloud catalog (it has no [[instance]] entries)")
    basis = opts.basis().label(cat.is_cloud)
    steps = len(SECTIONS) + (opts.samples is not None) + (cloud_cat is not None)
    with _progress(progress) as prog:
        task = prog.add_task("report", total=steps)
        # the pipeline of `costopt solve`, in bounded memory; a space evaluated in pieces also keeps the designs
        # the Pareto section draws
        res, ev = solve_catalog(cat, model, budget, opts, top=top, keep=fronts_per_gpu)
        pieces = res.candidates_evaluated > len(ev)
        best = res.best
        designs = [best] + res.alternatives
        ranked = [d["gpu"] for d in (res.best_per_gpu or [best])]
        pf = opts.part_filter(cat)
        # colours (and markers) for the offered GPU types only: ten or fewer get ten distinct colours
        offered = [ev.space.gpus[i].id for i in np.unique(ev.space.gpu_idx[pf.design_reasons(ev.space) == KEPT])]
        colors = _gpu_colors(ranked + [g for g in offered if g not in ranked])
        req = bandwidth_requirement(ev, designs)
        network = network_sentence(ev, req, best)
        sections = [_recommended(res, basis, cat.is_cloud, network)]
        prog.advance(task)
        sections.append(_gpu_types(res, colors, cat.is_cloud, basis))
        prog.advance(task)
        sections.append(_pareto(ev, best, budget, basis, colors, pieces, pf))
        prog.advance(task)
        sections.append(_scaling(cat, ev, best, opts))
        prog.advance(task)
        sections.append(_bandwidth(ev, designs, req))
        prog.advance(task)
        sections.append(_budget_sweep(cat, model, budget, opts, prog))
        prog.advance(task)
        if opts.samples is not None:
            sections.append(_time_to_train(designs, opts))
            prog.advance(task)
        rented = None
        if cloud_cat is not None:
            sec, rented = _rent_vs_buy(model, budget, cat, cloud_cat, opts, years, utilization)
            sections.append(sec)
            prog.advance(task)
        sections.append(_breakdown(ev, best))
        prog.advance(task)
        case = _case(res, cat, cloud_cat, opts, years, network, rented,
                     lambda f: _repick(cat, model, budget / f, opts))
        sections = [decision.summary(case), *sections[:1], decision.sensitivity(case), decision.assumptions(case),
                    *sections[1:]]
        prog.advance(task, 3)
    title = f"costopt report: {res.model}, budget {_money(budget, cat.is_cloud)}"
    subtitle = (f"costopt {decision.__version__}, prices as of {res.as_of}; catalog {cat.catalog.name} "
                f"({cat.catalog.date})" + (f", cloud {cloud_cat.catalog.name} ({cloud_cat.catalog.date})" if cloud_cat
                                           else "")
                + f"; cost = {basis}; precision {ev.precision}; objective {res.objective}")
    return Report(title, subtitle, res.to_json_dict(), sections)


__all__ = ["build_report", "write_report", "to_html", "to_markdown", "bandwidth_requirement", "Report", "SECTIONS",
           "OPTIONAL_SECTIONS"]
