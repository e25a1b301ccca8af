"""What-if report for a purchase: one self-contained HTML file (plots embedded as PNG) or Markdown.

Sections (each an element with a stable id, which the tests look for):

    recommended  the recommended design and the top alternatives (the same numbers as `costopt solve`)
    pareto       cost-throughput Pareto front of every feasible design, one line per strategy
    scaling      throughput vs GPUs for ring, hierarchical and PS at each NIC the winner's node takes
    bandwidth    the NIC line rate each top design needs for 90% scaling efficiency (the thesis's
                 "network bandwidth requirement"): each design is re-evaluated over a range of line
                 rates with its own transport, and the lowest rate reaching 0.9 is reported
    budget       best throughput vs budget, overall and per strategy
    time         time to train (`epochs` x `dataset_size` samples) of the top designs
    breakdown    the winner's iteration: forward, backward, optimizer step, exposed communication

The data behind the recommendation is embedded as JSON (`<script id="costopt-solve">`), so the
report can be checked against `costopt solve --format json`.
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

from . import api
from .catalog import Catalog
from .checks import count, output_path, write_bytes_atomic, write_text
from .design_space import NO_NIC, STRATEGIES, DesignSpace, enumerate_designs
from .errors import InputError
from .files import json_safe
from .cost import within_budget
from .purchasing import Options, _as_catalog, _options, check_budget, evaluate_catalog, solve_catalog
from .solver import pareto_front

TARGET_EFFICIENCY = 0.9
RATE_GRID_GBPS = np.geomspace(1.0, 3200.0, 49)  # line rates tried for the bandwidth requirement
STRATEGY_COLORS = {"ring": "#1f77b4", "hierarchical": "#2ca02c", "ps": "#d62728"}
SECTIONS = ("recommended", "pareto", "scaling", "bandwidth", "budget", "time", "breakdown")


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
    if v is None or not math.isfinite(v):
        return "-"
    return f"${v:,.2f}" if cloud_rate or abs(v) < 100 else f"${v:,.0f}"


def _design_label(d: dict[str, Any]) -> str:
    strat = d["strategy"] + ("" if d["reduce_on"] == "gpu" else "/cpu")
    return f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {d['nic']}, {strat}"


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    # no bar (and no stray blank line) when stderr is a file or pipe: errors stay one line there
    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), console=console, transient=True,
                    disable=not enabled or not console.is_terminal)


def _pareto_idx(cost: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """Indices of the cost-throughput Pareto front (cheapest first): `solver.pareto_front` in design order."""
    return pareto_front(cost, thr, np.arange(len(cost)))


# ------------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------------


def _recommended(res: api.SolveResult, basis: str, cloud: bool) -> Section:
    rows = []
    for i, d in enumerate([res.best] + res.alternatives, 1):
        rows.append([str(i), d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}={d['total_gpus']}", d["nic"],
                     d["strategy"] + ("" if d["reduce_on"] == "gpu" else "/cpu"), _money(d["cost_usd"], cloud),
                     f"{d['throughput_samples_per_s']:,.1f}", f"{d['usd_per_sample_per_s']:,.4g}",
                     f"{d['scaling_efficiency']:.3f}", f"{d['t_iter_s'] * 1e3:,.1f}", d["bottleneck"]])
    b = res.best
    intro = (f"Recommended: {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']} per node x {b['nodes']} nodes, "
             f"{b['chassis']}), {b['nic']}, {b['strategy']} - cost {_money(b['cost_usd'], cloud)} ({basis}), "
             f"{b['throughput_samples_per_s']:,.1f} samples/s. Why: {res.why}.")
    header = ["#", "GPU", "GPUs", "NIC", "strategy", f"cost ({basis})", "samples/s", "cost per sample/s",
              "scaling eff.", "t_iter ms", "bottleneck"]
    sec = Section("recommended", "Recommended design and alternatives", intro, [(header, rows)])
    sec.notes.append(f"{res.candidates_evaluated:,} designs evaluated; Pareto front of {res.solver['pareto_front_size']} "
                     f"designs; solver {res.solver['solver']} ({res.solver['status']}). Compute basis of the winner: "
                     f"{b['compute_source']} - {b['compute_basis']}")
    return sec


def _pareto(ev: api.Evaluation, best: dict, budget: float, basis: str) -> Section:
    plt = _plt()
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.scatter(c.cost_usd[ok], t.throughput_samples_per_s[ok], s=4, color="#cccccc", label="all feasible designs")
    rows = []
    for k, name in enumerate(STRATEGIES):
        m = np.flatnonzero(ok & (s.strategy == k))
        if len(m) == 0:
            continue
        front = m[_pareto_idx(c.cost_usd[m], t.throughput_samples_per_s[m])]
        ax.step(c.cost_usd[front], t.throughput_samples_per_s[front], where="post", color=STRATEGY_COLORS[name],
                marker="o", ms=3, label=f"{name} front ({len(front)} designs)")
        inb = front[c.cost_usd[front] <= budget]
        if len(inb):
            j = inb[-1]
            d = ev.frame([j]).iloc[0]
            rows.append([name, str(len(front)), _money(float(d["cost_usd"])), f"{d['throughput_samples_per_s']:,.1f}",
                         f"{d['gpus_per_node']}x{d['nodes']} {d['gpu']}, {d['nic']}"])
    ax.axvline(budget, color="black", ls="--", lw=1, label=f"budget {_money(budget)}")
    ax.scatter([best["cost_usd"]], [best["throughput_samples_per_s"]], marker="*", s=250, color="gold",
               edgecolor="black", zorder=5, label="recommended")
    ax.set_xlabel(f"cost ({basis})")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_title("Cost-throughput Pareto front by strategy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    intro = ("Every feasible design (grey) and, per synchronisation strategy, the designs no cheaper design beats "
             "on throughput. The star is the recommendation.")
    return Section("pareto", "Cost-throughput Pareto front by strategy", intro,
                   [(["strategy", "front size", "best cost within budget", "samples/s", "design"], rows)],
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
    rows = []
    for ax, (k, name) in zip(axes, enumerate(STRATEGIES)):
        for ni in sorted(set(space.nic_idx[~single].tolist()), key=lambda i: nic_rates[i].line_rate_gbps):
            m = np.flatnonzero((space.nic_idx == ni) & (space.strategy == k) & (space.reduce_on == 0)
                               & (space.nics_per_node == 1))  # one adapter per node: one curve per NIC
            if len(m) == 0:
                continue
            m = m[np.argsort(space.nodes[m])]
            x = np.concatenate([[G], space.total_gpus[m]])
            y = np.concatenate([[one_node_thr], t.throughput_samples_per_s[m]])
            n = nic_rates[ni]
            ax.plot(x, y, marker=".", label=f"{n.id} ({n.line_rate_gbps:g} Gb/s {n.transport})")
            last = m[-1]
            rows.append([name, n.id, f"{n.line_rate_gbps:g}", str(int(space.total_gpus[last])),
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
             f"each NIC the chassis takes; the dotted line is perfect linear scaling. The table gives the largest "
             f"cluster plotted.")
    return Section("scaling", "Scaling curves by strategy and NIC", intro,
                   [(["strategy", "NIC", "Gb/s", "GPUs", "samples/s", "scaling eff."], rows)],
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
    from .timing import BOTTLENECKS

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


def _budget_sweep(cat: Catalog, model: str, budget: float, opts: Options, progress) -> Section:
    plt = _plt()
    budgets = np.geomspace(budget / 16.0, budget * 2.0, 25)
    ev = evaluate_catalog(cat, model, float(budgets[-1]), opts)
    c, t, s = ev.costs, ev.timing, ev.space
    ok = t.feasible & c.buildable
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
    samples = opts.samples
    if samples is not None:
        what, unit = f"{opts.epochs:g} epochs x {opts.dataset_size:,.0f} samples", "hours"
        hours = [d["time_to_train_h"] if d.get("time_to_train_h") is not None
                 else samples / d["throughput_samples_per_s"] / 3600.0 for d in designs]
    else:
        what, unit = "one million samples (give --epochs and --dataset-size for your job)", "hours per 1M samples"
        hours = [1e6 / d["throughput_samples_per_s"] / 3600.0 for d in designs]
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
                 *, top: int = 8, progress: bool = True) -> Report:
    opts = _options(opts)
    check_budget(budget)
    count("top", top)
    cat = _as_catalog(catalog)
    basis = opts.basis().label(cat.is_cloud)
    with _progress(progress) as prog:
        task = prog.add_task("report", total=len(SECTIONS))
        res, ev = solve_catalog(cat, model, budget, opts, top=top)  # the pipeline of `costopt solve`
        best = res.best
        designs = [best] + res.alternatives
        sections = [_recommended(res, basis, cat.is_cloud)]
        prog.advance(task)
        sections.append(_pareto(ev, best, budget, basis))
        prog.advance(task)
        sections.append(_scaling(cat, ev, best, opts))
        prog.advance(task)
        sections.append(_bandwidth(ev, designs))
        prog.advance(task)
        sections.append(_budget_sweep(cat, model, budget, opts, prog))
        prog.advance(task)
        sections.append(_time_to_train(designs, opts))
        prog.advance(task)
        sections.append(_breakdown(ev, best))
        prog.advance(task)
    title = f"costopt report: {res.model}, budget {_money(budget, cat.is_cloud)}"
    subtitle = (f"catalog {cat.catalog.name} ({cat.catalog.date}); cost = {basis}; precision {opts.precision}; "
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
    out = [f"# {rep.title}", "", rep.subtitle, ""]
    for s in rep.sections:
        out += [f'## {s.title} <a id="{s.id}"></a>', "", s.intro, ""]
        for header, rows in s.tables:
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out.extend("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)
            out.append("")
        for f in s.figures:
            write_bytes_atomic(figure_dir / f"{f.name}.png", f.png, "--out")
            out += [f"![{f.title}]({rel}/{f.name}.png)", ""]
        out += [f"_{n}_" for n in s.notes] + ([""] if s.notes else [])
    out += ["<details><summary>solve JSON</summary>", "", "```json", json.dumps(json_safe(rep.solve_json), indent=1),
            "```", "</details>", ""]
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


__all__ = ["build_report", "write_report", "to_html", "to_markdown", "bandwidth_requirement", "Report", "SECTIONS"]
