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

import base64
import html
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from costopt.search import api
from costopt.hardware.catalog import Catalog
from costopt.core.neutral import markdown_cell, markdown_json, markdown_text
from costopt.core.checks import count, output_path, write_bytes_atomic, write_text
from costopt.search.design_space import NO_NIC, STRATEGIES, DesignSpace, enumerate_designs
from costopt.core.errors import InputError
from costopt.core.files import json_safe
from costopt.hardware.cost import within_budget
from costopt.hardware.part_filter import KEPT, PartFilter
from costopt.purchase.purchasing import Options, _as_catalog, check_budget, evaluate_catalog_bounded, solve_catalog
from costopt.search.solver import pareto_front
from costopt.core.units import format_usd

TARGET_EFFICIENCY = 0.9
RATE_GRID_GBPS = np.geomspace(1.0, 3200.0, 49)  # line rates tried for the bandwidth requirement
STRATEGY_COLORS = {"ring": "#1f77b4", "hierarchical": "#2ca02c", "ps": "#d62728"}
SECTIONS = ("recommended", "gputypes", "pareto", "scaling", "bandwidth", "budget", "breakdown")  # always present
OPTIONAL_SECTIONS = ("time", "rentbuy")  # with epochs and dataset size; with a cloud catalog


@dataclass
class Figure:
    name: str  # file stem / element id suffix
    title: str
    png: bytes


@dataclass
class Section:
    id: str
    title: str
    intro: str
    tables: list[tuple[list[str], list[list[str]]]] = field(default_factory=list)  # (header, rows)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    title: str
    subtitle: str
    solve_json: dict[str, Any]
    sections: list[Section]
    data: dict[str, Any] = field(default_factory=dict)  # more JSON embedded as <script id="costopt-KEY">

    def section(self, sid: str) -> Section:
        return next(s for s in self.sections if s.id == sid)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    _plt().close(fig)
    return buf.getvalue()


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


def _recommended(res: api.SolveResult, basis: str, cloud: bool) -> Section:
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
             f"Why: {res.why}. Strategy: {res.why_strategy}.")
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
                   [Figure("gputypes", "Best design per GPU type", _png(fig))])


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
            pieces: bool = False) -> Section:
    plt = _plt()
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable
    cloud = ev.catalog.is_cloud
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.scatter(c.cost_usd[ok], t.throughput_samples_per_s[ok], s=4, color="#cccccc", label="all feasible designs")
    rows = []
    gpu_ids = [g.id for g in s.gpus]
    for name in [g for g in colors if g in gpu_ids]:
        m = np.flatnonzero(ok & (s.gpu_idx == gpu_ids.index(name)))
        if len(m) == 0:
            continue
        front = m[pareto_front(c.cost_usd[m], t.throughput_samples_per_s[m], np.arange(len(m)))]
        ax.step(c.cost_usd[front], t.throughput_samples_per_s[front], where="post", color=colors[name],
                marker="o", ms=3, lw=1.2, label=name)
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
    intro = ("Every feasible design (grey) and, per GPU type, the designs no cheaper design of that type beats "
             "on throughput. The star is the recommendation.")
    if pieces:
        intro = ("The design space was too large to hold at once and was evaluated in pieces: grey are the feasible "
                 "designs kept from the pieces (every GPU type's front and the search's candidates), not every "
                 "design. Per GPU type, the designs no cheaper design of that type beats on throughput. The star "
                 "is the recommendation.")
    return Section("pareto", "Cost-throughput Pareto front by GPU type", intro,
                   [(["GPU", "front size", "best cost within budget", "samples/s", "design"], rows)],
                   [Figure("pareto", "Pareto front", _png(fig))])


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
            ax.plot(x, y, marker=".", label=f"{per_node}x {n.id} ({n.line_rate_gbps:g} Gb/s {n.transport})")
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
                   [Figure("scaling", "Scaling curves", _png(fig))])


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


def _bandwidth(ev: api.Evaluation, designs: list[dict]) -> Section:
    plt = _plt()
    req = bandwidth_requirement(ev, designs)
    rows = []
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    for r in req:
        d = r["design"]
        have = ev.catalog.nics[d["nic"]].line_rate_gbps
        need = r["required_gbps"]
        if need is None:
            verdict = f"not reached even at {RATE_GRID_GBPS[-1]:g} Gb/s ({r['bound_at_top_rate']}-bound)"
        elif need <= have:
            verdict = f"enough ({have / need:.1f}x headroom)"
        else:
            verdict = f"short: needs {need / have:.1f}x its NIC"
        rows.append([_design_label(d), f"{have:g}", f"{d['scaling_efficiency']:.3f}",
                     "-" if need is None else f"{need:,.1f}", verdict])
        ax.plot(RATE_GRID_GBPS, r["efficiency"], label=_design_label(d))
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
                  [Figure("bandwidth", "Bandwidth requirement", _png(fig))])
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
    ax.plot(budgets, best, color="black", lw=2.5, label="best of all")
    for name, v in per.items():
        ax.plot(budgets, v, color=STRATEGY_COLORS[name], lw=1, label=name)
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
                   [Figure("budget", "Throughput vs budget", _png(fig))])


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
                   [Figure("time", "Time to train", _png(fig))])


def _rent_vs_buy(model: str, budget: float, cat: Catalog, cloud: Catalog, opts: Options, years: float,
                 utilization: float | None) -> Section:
    """`purchasing.rent_vs_buy` for the report: the owned recommendation against renting the same work."""
    from costopt.purchase.purchasing import rent_vs_buy

    r = rent_vs_buy(model, budget, cloud, cat, years=years, opts=opts, utilization=utilization)
    rows = []
    for what, v, unit in r.rows:
        if unit.startswith("USD"):
            val = _money(v, "hour" in unit or abs(v) < 100)
        elif unit.startswith("fraction"):
            val = f"{v:.1%}"
        else:
            val = f"{v:,.1f}"
        rows.append([what, val, unit])
    b, k = r.buy, r.rent
    intro = (f"Buy {b['total_gpus']} x {b['gpu']} ({_nics(b)} per node, {b['strategy']}) from "
             f"{r.owned_catalog}, or rent {k['nodes']} x {k['chassis']} ({k['total_gpus']} x {k['gpu']}) from "
             f"{r.cloud_catalog} at {_money(r.rent_usd_per_hour, True)} per hour for the same work, over "
             f"{r.years:g} years. Verdict: {r.verdict}.")
    return Section("rentbuy", "Rent or buy", intro, [(["what", "value", "unit / meaning"], rows)])


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
                   [Figure("breakdown", "Iteration breakdown", _png(fig))])


# ------------------------------------------------------------------------------------------------
# build and write
# ------------------------------------------------------------------------------------------------


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
        colors = _gpu_colors(ranked + [g.id for g in cat.gpu if g.id not in ranked])
        sections = [_recommended(res, basis, cat.is_cloud)]
        prog.advance(task)
        sections.append(_gpu_types(res, colors, cat.is_cloud, basis))
        prog.advance(task)
        sections.append(_pareto(ev, best, budget, basis, colors, pieces))
        prog.advance(task)
        sections.append(_scaling(cat, ev, best, opts))
        prog.advance(task)
        sections.append(_bandwidth(ev, designs))
        prog.advance(task)
        sections.append(_budget_sweep(cat, model, budget, opts, prog))
        prog.advance(task)
        if opts.samples is not None:
            sections.append(_time_to_train(designs, opts))
            prog.advance(task)
        if cloud_cat is not None:
            sections.append(_rent_vs_buy(model, budget, cat, cloud_cat, opts, years, utilization))
            prog.advance(task)
        sections.append(_breakdown(ev, best))
        prog.advance(task)
    title = f"costopt report: {res.model}, budget {_money(budget, cat.is_cloud)}"
    subtitle = (f"catalog {cat.catalog.name} ({cat.catalog.date}); cost = {basis}; precision {ev.precision}; "
                f"objective {res.objective}")
    return Report(title, subtitle, res.to_json_dict(), sections)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;
background:#fff;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #1f77b4;padding-bottom:.2em;margin-top:2em}
.sub{color:#555}table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#eef3fa}
tr:nth-child(even) td{background:#fafafa}img{max-width:100%;border:1px solid #eee}.note{color:#666;font-size:.85em}
nav a{margin-right:1em}
"""


def to_html(rep: Report) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(rep.title)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(rep.title)}</h1>", f'<p class="sub">{e(rep.subtitle)}</p>',
           "<nav>" + "".join(f'<a href="#{s.id}">{e(s.title)}</a>' for s in rep.sections) + "</nav>"]
    for s in rep.sections:
        out.append(f'<section id="{s.id}"><h2>{e(s.title)}</h2><p>{e(s.intro)}</p>')
        for header, rows in s.tables:
            out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr></thead><tbody>")
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
            out.append("</tbody></table>")
        for f in s.figures:
            b64 = base64.b64encode(f.png).decode("ascii")
            out.append(f'<figure id="fig-{f.name}"><img alt="{e(f.title)}" src="data:image/png;base64,{b64}"></figure>')
        out.extend(f'<p class="note">{e(n)}</p>' for n in s.notes)
        out.append("</section>")
    data = json.dumps(json_safe(rep.solve_json)).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="costopt-solve">{data}</script>')
    for key, value in rep.data.items():
        extra = json.dumps(json_safe(value)).replace("</", "<\\/")
        out.append(f'<script type="application/json" id="costopt-{e(key)}">{extra}</script>')
    out.append("</body></html>")
    return "\n".join(out)


# A folder of figures is ours when it holds this file: `report` writes images only into a folder it
# created (and marked) itself, never into a folder of the user's that happens to have the same name.
FIGURE_DIR_MARK = ".costopt-report"


def figure_dir_for(out: str | Path) -> Path:
    """Where a Markdown report's PNGs go: `<stem>_files/` beside it."""
    out = Path(out)
    return out.parent / f"{out.stem}_files"


def check_figure_dir(figure_dir: Path) -> None:
    """Refuse a figure folder that exists and is not marked as made by `costopt report`."""
    if figure_dir.exists() and not (figure_dir.is_dir() and (figure_dir / FIGURE_DIR_MARK).is_file()):
        raise InputError(f"--out: {figure_dir} already exists and was not made by costopt report; refusing to write "
                         f"figures into it (move it away or choose another --out name)", field="--out")


def _own_figure_dir(figure_dir: Path) -> None:
    check_figure_dir(figure_dir)
    if not figure_dir.exists():
        figure_dir.mkdir()
        (figure_dir / FIGURE_DIR_MARK).write_text("figures written by costopt report; safe to overwrite\n",
                                                  encoding="utf-8")


def to_markdown(rep: Report, figure_dir: Path, rel: str) -> str:
    """Markdown with figures written as PNG files into `figure_dir` (linked as `rel/<name>.png`).

    `figure_dir` must be new or one this function made before (it holds FIGURE_DIR_MARK)."""
    _own_figure_dir(figure_dir)
    # catalog text (names, sources) is third-party: HTML-escaped, one line per cell (core/neutral.py)
    md, cell = markdown_text, markdown_cell
    out = [f"# {md(rep.title)}", "", md(rep.subtitle), ""]
    for s in rep.sections:
        out += [f'## {md(s.title)} <a id="{md(s.id)}"></a>', "", md(s.intro), ""]
        for header, rows in s.tables:
            out.append("| " + " | ".join(map(cell, header)) + " |")
            out.append("|" + "---|" * len(header))
            out.extend("| " + " | ".join(map(cell, r)) + " |" for r in rows)
            out.append("")
        for f in s.figures:
            write_bytes_atomic(figure_dir / f"{f.name}.png", f.png, "--out")
            out += [f"![{cell(f.title).replace('[', '(').replace(']', ')')}]({rel}/{f.name}.png)", ""]
        out += [f"_{md(n)}_" for n in s.notes] + ([""] if s.notes else [])
    out += ["<details><summary>solve JSON</summary>", "", "```json",
            markdown_json(json.dumps(json_safe(rep.solve_json), indent=1)), "```", "</details>", ""]
    for key, value in rep.data.items():
        out += [f"<details><summary>{md(key)} JSON</summary>", "", "```json",
                markdown_json(json.dumps(json_safe(value), indent=1)), "```", "</details>", ""]
    return "\n".join(out)


def write_report(rep: Report, out: str | Path, inputs: list = ()) -> list[Path]:
    """Write `.html` (self-contained) or `.md` (+ a `<stem>_files/` folder of PNGs); returns the files.

    Never over one of `inputs`; every file is written atomically; the PNG folder must be new or marked
    as made by an earlier report."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix in (".html", ".htm"):
        write_text(out, to_html(rep), "--out", inputs)
        return [out]
    if suffix == ".md":
        output_path(out, "--out", inputs)
        d = figure_dir_for(out)
        try:
            text = to_markdown(rep, d, d.name)
        except OSError as exc:
            raise InputError(f"--out {out}: cannot write the figures into {d}: {exc.strerror or exc}") from None
        write_text(out, text, "--out", inputs)
        return [out] + sorted(d.glob("*.png"))
    raise InputError(f"--out must end in .html or .md, got '{out.name}'")


__all__ = ["build_report", "write_report", "to_html", "to_markdown", "bandwidth_requirement", "Report", "SECTIONS",
           "OPTIONAL_SECTIONS"]
