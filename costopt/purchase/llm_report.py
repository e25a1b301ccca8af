"""The purchasing report for a large transformer (`costopt report --model llama3_70b --budget ... --tokens ...`).

Same file formats as the data-parallel report (costopt/purchase/report.py: one HTML file with the plots
embedded, or Markdown with a PNG folder); sections, each an element with a stable id:

    recommended  the design `costopt solve` picks and the best design of each other GPU type: tokens/s
                 with its 80% range (ranges.py; near ties marked), tokens/s per GPU, MFU, memory per GPU, hours and USD per 1e9 tokens, and with --tokens
                 the time and cost to train them (the same numbers as `solve --format json`)
    memory       feasible layouts by GPU memory size (feasibility.py): for each memory size in the search,
                 which strategy / tp / pp fit and their best tokens/s per dollar; the ones that do not fit
                 marked with the memory term that binds ("model states" or "activations and logits")
    pareto       tokens/s against cost of every design that fits, one colour per GPU type
    breakdown    the winner's step time (compute, pipeline bubble, exposed data-parallel, tensor-parallel,
                 pipeline point-to-point) and its memory per GPU (model states, activations, reserve, free)
    rentbuy      (with a cloud catalog) buy the recommendation or rent the same job: the same model, sequence
                 length, global batch and tokens on both sides (purchase/llm_purchasing.rent_vs_buy_llm: the
                 break-even arithmetic of every rent vs buy)

USD per 1e9 tokens (api._add_costs, the same field as `solve --format json`): an owned cluster's capex
spread over `years` (default 3) of continuous use plus the electricity it draws, an estimate that
assumes the cluster is busy all the time; on a cloud catalog the rent per hour × hours. The solve JSON is embedded as `<script id="costopt-solve">`, the memory grid as
`<script id="costopt-memory-grid">`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from costopt.hardware.catalog import Catalog
from costopt.core.checks import count, positive
from costopt.core.version import __version__
from costopt.core.errors import CostoptError
from costopt.purchase.report import Report, Section, _dollar_axis, MARKERS, _gpu_colors, _gpu_markers, _money, _plt, _progress, rent_buy_rows
from costopt.purchase.report_parts import figure, refuse_rent_terms_without_cloud
from costopt.search.llm_search import LlmSearch, choose_llm, search_llm
from costopt.perf.llm.feasibility import memory_grid
from costopt.perf.llm.memory import LLM_STRATEGIES

LLM_SECTIONS = ("summary", "recommended", "sensitivity", "assumptions", "memory", "pareto", "breakdown")
LLM_OPTIONAL_SECTIONS = ("rentbuy",)  # with a cloud catalog


def _layout(d: dict) -> str:
    return f"{d['strategy']} tp{d['tp']} pp{d['pp']} mb{d['micro_batch']} ckpt {d['activation_checkpointing']}"


def _nics(d: dict) -> str:
    return "none (one node)" if not d["nic"] else f"{d['nics_per_node']}x {d['nic']}"


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _recommended(res: dict, found: LlmSearch, years: float) -> Section:
    cloud = found.catalog.is_cloud
    designs = [res["best"], *res["best_per_gpu"]]
    tokens = res.get("tokens_to_train")
    rows = []
    for i, d in enumerate(designs, 1):
        row = [str(i), d["gpu"], f"{d['gpus_per_node']}x{d['nodes']}={d['total_gpus']}", _nics(d), _layout(d),
               f"{d['tokens_per_s']:,.0f}", _span(d, "tokens_per_s", "{:,.0f}") + (" (near tie)" if d.get("near_tie") else ""),
               f"{d['tokens_per_s_per_gpu']:,.0f}", f"{d['mfu']:.1%}",
               f"{d['memory_per_gpu_gb']:.1f} / {d['memory_limit_gb']:.1f} / {d['gpu_memory_gb']:g}",
               _num(d["hours_per_1e9_tokens"], "{:,.2f}"), _money(d['usd_per_1e9_tokens'], True),
               _money(d["cost_usd"], cloud)]
        if tokens:
            row += [_num(d.get("hours_to_train"), "{:,.0f}"), _span(d, "hours_to_train", "{:,.0f}"),
                    _num((d.get("hours_to_train") or math.nan) / 24, "{:,.1f}"), _money(d["cost_to_train_usd"], cloud)]
        rows.append(row)
    header = ["#", "GPU", "GPUs (G x M = N)", "NICs per node", "layout", "tokens/s", "tokens/s 80% range",
              "tokens/s per GPU", "MFU",
              "memory per GPU GB (used / usable / card)", "hours per 1e9 tokens", "USD per 1e9 tokens",
              f"cost (USD{' per hour' if cloud else ''})"]
    if tokens:
        header += [f"hours to train {tokens:,.3g} tokens", "hours 80% range", "days", "cost to train (USD)"]
    b = res["best"]
    per_1e9 = b["usd_per_1e9_tokens"]
    intro = (f"Recommended: {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']} per node x {b['nodes']} nodes, "
             f"{b['chassis']}), {_nics(b)} per node, {_layout(b)}: {_tokens_phrase(b)}, "
             f"{b['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, MFU {b['mfu']:.1%}, {b['memory_per_gpu_gb']:.1f} GB "
             f"per GPU of {b['memory_limit_gb']:.1f} GB usable ({b['gpu_memory_gb']:g} GB card); "
             f"{b['hours_per_1e9_tokens']:,.2f} hours and {_money(per_1e9, True)} per 1e9 tokens")
    if tokens:
        intro += (f"; {tokens:,.0f} tokens in {b['hours_to_train']:,.0f} hours ({b['hours_to_train'] / 24:,.1f} days"
                  + (f"; 80% range {_span(b, 'hours_to_train', '{:,.0f}')} hours" if b.get("hours_to_train_low") else "")
                  + f") for {_money(b['cost_to_train_usd'], cloud)}")
    intro += f". Why: {res['why']}"
    sec = Section("recommended", "Recommended design and the best of each GPU type", intro, [(header, rows)])
    if not cloud:
        sec.notes.append(f"USD per 1e9 tokens of an owned cluster: its capex spread over {years:g} years of continuous "
                         f"use plus electricity (average draw {found.catalog.site.average_draw_fraction:g} of nameplate, "
                         f"PUE {found.catalog.site.pue:g}, {found.catalog.site.electricity_usd_per_kwh:g} USD/kWh) - "
                         "an estimate that assumes the cluster is always busy. Cost to train is the purchase.")
    sec.notes.append(f"Compute: {b['compute_basis']}.")
    ties = res["solver"].get("near_ties", 0)
    sec.notes.append("80% ranges: from the out-of-sample errors of published training runs (tokens/s per GPU of each "
                     "run predicted by a fit without its own source, or, for a GPU with no published run, without its "
                     "own GPU; costopt/perf/llm/ranges.py). Hours run against tokens/s: the low end of tokens/s is the high "
                     f"end of hours. {ties} of the other GPU types' best designs are near ties: their range overlaps "
                     "the recommendation's.")
    sec.notes.append(f"{res['candidates_evaluated']:,} hardware designs x {res['layouts_per_design']:,} layouts; "
                     f"{res['solver']['feasible_hardware_designs']:,} hardware designs fit the model with some layout; "
                     f"Pareto front of {res['solver']['pareto_front_size']}. Parts: {res['parts_offered']} "
                     f"({res['designs_left_out_by_part_filter']:,} hardware designs left out).")
    return sec


def _span(d: dict, key: str, fmt: str) -> str:
    """'50,619-67,251': a record's 80% range of `key`, '-' without one."""
    lo, hi = d.get(f"{key}_low"), d.get(f"{key}_high")
    return "-" if lo is None or hi is None else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _tokens_phrase(d: dict) -> str:
    from costopt.perf.intervals import range_phrase

    return range_phrase(d["tokens_per_s"], d.get("tokens_per_s_low"), d.get("tokens_per_s_high"),
                        f"from the {d.get('range_basis')}", unit="tokens/s")


def _cell_text(c: dict) -> str:
    if c["fits"]:
        return f"{c['best']['value']:,.1f}"
    return {"model states": "states", "activations and logits": "activ.", "layout": "n/a"}[c["binding"]["term"]]


def _memory(grid: dict, best: dict) -> Section:
    """Heat map: rows strategy x tp, columns GPU memory; each cell the best over pp (table: every pp)."""
    plt = _plt()
    sizes = grid["memory_sizes_gb"]
    cells = grid["cells"]
    tps = sorted({c["tp"] for c in cells})
    strategies = [s for s in LLM_STRATEGIES if any(c["strategy"] == s for c in cells)]
    rows_key = [(s, t) for s in strategies for t in tps]
    val = np.full((len(rows_key), len(sizes)), np.nan)
    text = [["" for _ in sizes] for _ in rows_key]
    for r, (s, t) in enumerate(rows_key):
        for j, m in enumerate(sizes):
            group = [c for c in cells if c["strategy"] == s and c["tp"] == t and c["memory_gb"] == m]
            fitting = [c for c in group if c["fits"]]
            if fitting:
                c = max(fitting, key=lambda c: (c["best"]["value"], -c["pp"]))
                val[r, j] = c["best"]["value"]
                text[r][j] = f"{c['best']['value']:,.1f}\npp{c['pp']}"
            elif group:
                # the binding term of the family member that came closest (least memory needed)
                mem = [c for c in group if c["binding"]["term"] != "layout"]
                if mem:
                    c = min(mem, key=lambda c: c["binding"]["needed_gb"])
                    text[r][j] = f"x {_cell_text(c)}\n{c['binding']['needed_gb']:,.0f} GB"
                else:
                    text[r][j] = "x n/a"
    fig, ax = plt.subplots(figsize=(1.25 * len(sizes) + 2.6, 0.42 * len(rows_key) + 1.6), layout="constrained")
    cmap = plt.get_cmap("viridis").with_extremes(bad="#f2dede")
    im = ax.imshow(np.ma.masked_invalid(val), aspect="auto", cmap=cmap)
    for r in range(len(rows_key)):
        for j in range(len(sizes)):
            v = val[r, j]
            light = not np.isnan(v) and v < np.nanmin(val) + 0.6 * (np.nanmax(val) - np.nanmin(val)) if np.isfinite(val).any() else False
            ax.text(j, r, text[r][j], ha="center", va="center", fontsize=6.5,
                    color="white" if light else ("#8a1f1f" if np.isnan(v) else "black"))
    ax.set_xticks(range(len(sizes)), [f"{m:g} GB\n{', '.join(grid['gpus_by_memory_gb'][f'{m:g}'])}" for m in sizes],
                  fontsize=7)
    ax.set_yticks(range(len(rows_key)), [f"{s} tp{t}" for s, t in rows_key], fontsize=8)
    ax.set_xlabel("GPU memory (the catalog GPUs of that size in the search)")
    fig.colorbar(im, ax=ax, label=f"best {grid['value_unit']}")
    ax.set_title(f"{grid['model']}: layouts that fit, by GPU memory (best pipeline degree shown; "
                 "x = does not fit, with the binding term)", fontsize=9)
    # line plot: per strategy, best over tp and pp
    fig2, ax2 = plt.subplots(figsize=(8, 4.2), layout="constrained")
    for s in strategies:
        ys = []
        for m in sizes:
            vs = [c["best"]["value"] for c in cells if c["strategy"] == s and c["memory_gb"] == m and c["fits"]]
            ys.append(max(vs) if vs else np.nan)
        k = strategies.index(s)
        ax2.plot(range(len(sizes)), ys, marker=MARKERS[k % len(MARKERS)], ms=7 - k, ls=("-", "--", "-.", ":")[k % 4],
                 label=s)
    ax2.set_xticks(range(len(sizes)), [f"{m:g} GB" for m in sizes])
    ax2.set_ylabel(f"best {grid['value_unit']}")
    ax2.set_xlabel("GPU memory")
    ax2.grid(alpha=0.3)
    ax2.legend(title="strategy (best tp, pp)", fontsize=8)
    ax2.set_title("Best tokens/s per dollar of each strategy by GPU memory (missing point: nothing fits)", fontsize=9)
    rows = [[f"{s} tp{t}"] + [text[r][j].replace("\n", " ") for j in range(len(sizes))]
            for r, (s, t) in enumerate(rows_key)]
    n_fit = sum(c["fits"] for c in cells)
    intro = (f"Which parallel layouts of {grid['model']} ({grid['params'] / 1e9:.1f} B parameters, sequence "
             f"{grid['seq_len']:,}) fit in GPU memory, for each memory size among the {grid['designs']:,} hardware "
             f"designs within the budget: {n_fit} of {len(cells)} (memory size, strategy, tp, pp) cells fit. A cell "
             f"fits when some design of that memory size runs the layout with some micro-batch and activation "
             f"checkpointing; its value is the best {grid['value_unit']}. A cell that does not fit names the larger "
             f"memory term of the least memory any design of that size needs with that layout: 'states' (weights, "
             f"gradients and Adam states, 16 bytes per parameter before sharding) or 'activations and logits'. The "
             f"recommendation uses {best['memory_per_gpu_gb']:.0f} of {best['gpu_memory_gb']:g} GB per GPU "
             f"({best['strategy']} tp{best['tp']} pp{best['pp']}).")
    sec = Section("memory", "Feasible strategies by GPU memory", intro,
                  [(["layout"] + [f"{m:g} GB" for m in sizes], rows)],
                  [figure("memory", "Layouts that fit by GPU memory", fig),
                   figure("memory-strategies", "Best tokens/s per dollar of each strategy by GPU memory", fig2)])
    sec.notes.append("Table and heat map: each cell is the best pipeline degree of that strategy and tensor degree, "
                     f"with its best {grid['value_unit']}; 'x states 88 GB' means no pipeline degree fits and the "
                     "layout needs at least 88 GB per GPU, most of it model states. Every (memory, strategy, tp, pp) "
                     "cell, with the design that needs the least memory where nothing fits, is in the JSON embedded "
                     "as costopt-memory-grid.")
    left = grid.get("left_out_by_memory_gb") or {}
    if left:
        parts = []
        for m, gs in left.items():
            whys: dict[str, list[str]] = {}
            for g in gs:
                whys.setdefault(g["why"], []).append(g["gpu"])
            parts.append(f"{m} GB: " + "; ".join(f"{', '.join(ids)} ({why})" for why, ids in whys.items()))
        sec.notes.append("Catalog GPUs not in the grid: " + " | ".join(parts) + ".")
    sec.notes.append("Memory per GPU: mixed-precision Adam states per ZeRO stage, Korthikanti et al. 2022 activations "
                     "with FlashAttention, fp32 logits, and a reserve (docs/large-models.md); tokens/s are roofline "
                     "estimates, not measurements.")
    return sec


def _pareto(found: LlmSearch, res: dict, colors: dict[str, Any]) -> Section:
    plt = _plt()
    ok = found.ok
    cost = found.costs.cost_usd
    thr = found.ev.timing.tokens_per_s
    space = found.space
    cloud = found.catalog.is_cloud
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    markers = _gpu_markers(list(colors))
    rows = []
    for gi, g in enumerate(space.gpus):
        sel = ok & (space.gpu_idx == gi)
        if not sel.any():
            continue
        ax.scatter(cost[sel], thr[sel], s=9, color=colors.get(g.id, "#999999"), marker=markers.get(g.id, "o"),
                   label=g.id, alpha=0.7)
        within = sel & (cost <= found.budget)
        rows.append([g.id, f"{int(sel.sum()):,}", f"{int(within.sum()):,}",
                     _num(float(thr[within].max()) if within.any() else None, "{:,.0f}")])
    b = res["best"]
    ax.scatter([b["cost_usd"]], [b["tokens_per_s"]], s=120, facecolors="none", edgecolors="black", linewidths=1.5,
               label="recommended")
    shown = [d for d in [b, *res["best_per_gpu"]] if d.get("tokens_per_s_low") is not None]
    if shown:  # the 80% range of the recommendation and of each other GPU type's best design
        ax.errorbar([d["cost_usd"] for d in shown], [d["tokens_per_s"] for d in shown],
                    yerr=[[d["tokens_per_s"] - d["tokens_per_s_low"] for d in shown],
                          [d["tokens_per_s_high"] - d["tokens_per_s"] for d in shown]],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=3, label="80% range (best of each GPU)")
    ax.axvline(found.budget, color="#888888", ls="--", lw=1, label="budget")
    ax.set_yscale("log")
    _dollar_axis(ax.xaxis, cloud)
    ax.tick_params(axis="x", labelrotation=30)  # dollar labels never run into each other
    ax.set_xlabel("cost (USD per hour)" if cloud else "cost (USD)")
    ax.set_ylabel("tokens/s (fastest layout that fits)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    intro = ("Every hardware design that fits the model with some layout, at its fastest layout: tokens/s against "
             "cost, one colour per GPU type; the ring marks the recommendation, and the bars the 80% range of it "
             "and of each other GPU type's best design.")
    return Section("pareto", "Tokens/s against cost", intro,
                   [(["GPU", "designs that fit", "within the budget", "best tokens/s within the budget"], rows)],
                   [figure("pareto", "Tokens/s against cost", fig)])


def _breakdown(b: dict) -> Section:
    plt = _plt()
    total = b["t_step_s"]
    compute = b["t_compute_s"]
    parts = [("compute (all micro-batches)", compute), ("pipeline bubble", b["t_pipeline_bubble_s"]),
             ("exposed data-parallel communication", b["t_data_parallel_exposed_s"]),
             ("tensor-parallel all-reduces", b["t_tensor_parallel_s"]),
             ("pipeline point-to-point", b["t_pipeline_p2p_s"])]
    states, acts, limit, card = (b["memory_model_states_gb"], b["memory_activations_gb"], b["memory_limit_gb"],
                                 b["gpu_memory_gb"])
    mem = [("weights, gradients, Adam states", states), ("activations and logits", acts),
           ("free (usable)", max(limit - states - acts, 0.0)), ("reserve", card - limit)]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 3.4), layout="constrained")
    colors = ["#4c72b0", "#dd8452", "#c44e52", "#8172b2", "#937860"]
    left = 0.0
    for (name, v), col in zip(parts, colors):
        ax1.barh(["step"], [v], left=left, color=col, label=f"{name} {v:,.2f} s")
        left += v
    ax1.set_xlabel("seconds per optimizer step")
    ax1.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    left = 0.0
    for (name, v), col in zip(mem, ["#55a868", "#dd8452", "#dddddd", "#999999"]):
        ax2.barh(["memory"], [v], left=left, color=col, label=f"{name} {v:,.1f} GB")
        left += v
    ax2.set_xlabel("GB per GPU")
    ax2.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    rows = [[name, f"{v:,.3f}", f"{v / total:.1%}"] for name, v in parts]
    rows.append(["step (t_step)", f"{total:,.3f}", "100.0%"])
    mrows = [[name, f"{v:,.1f}", f"{v / card:.1%}"] for name, v in mem]
    intro = (f"The recommended design's optimizer step: {total:,.2f} s for {b['global_batch_sequences']:,} sequences "
             f"of {b['seq_len']:,} tokens ({b['grad_accum']} micro-batches of {b['micro_batch']} per data-parallel "
             f"rank); largest term: {b['bottleneck']}. Its memory per GPU: {states + acts:,.1f} GB of "
             f"{card:g} GB.")
    return Section("breakdown", "Step time and memory of the recommended design", intro,
                   [(["step term", "seconds", "share"], rows), (["memory term", "GB per GPU", "share of the card"], mrows)],
                   [figure("breakdown", "Step time and memory of the recommended design", fig)])


def _rent_or_buy(job, budget: float, catalog, cloud, years: float, utilization: float | None) -> tuple[Section, dict]:
    """The owned recommendation against renting the same job (llm_purchasing.rent_vs_buy_llm)."""
    from costopt.purchase.llm_purchasing import rent_vs_buy_json, rent_vs_buy_llm

    r = rent_vs_buy_llm(job, budget, cloud, catalog, years=years, utilization=utilization)
    rows = rent_buy_rows(r)
    b, k = r.buy, r.rent
    intro = (f"Buy {b['total_gpus']} x {b['gpu']} ({_nics(b)} per node, {_layout(b)}) from {r.owned_catalog}, "
             f"{_tokens_phrase(b)}; or rent {k['nodes']} x {k['chassis']} ({k['total_gpus']} x {k['gpu']}, "
             f"{_layout(k)}) from {r.cloud_catalog} at {_money(r.rent_usd_per_hour, True)} per hour, "
             f"{_tokens_phrase(k)}, for the same job (sequences of {b['seq_len']:,} tokens"
             + (f", {r.samples:,.0f} tokens" if r.samples else "") + f"), over {r.years:g} years. Verdict: {r.verdict}.")
    sec = Section("rentbuy", "Rent or buy", intro, [(["what", "value", "unit / meaning"], rows)])
    sec.notes.append(r.held_equal + ".")
    sec.notes.append("Break-even utilisation u* = capex / (years x 8,766 h x (rent per hour x T_own / T_rent - "
                     "electricity per hour)): the rented side is scaled by the ratio of tokens/s so both do the same "
                     "work (purchase/purchasing.py, rent_buy_arithmetic).")
    return sec, rent_vs_buy_json(r)


def _describe(d: dict) -> str:
    return (f"{d['total_gpus']} x {d['gpu']} ({d['gpus_per_node']} per node x {d['nodes']} nodes, {d['chassis']}, "
            f"{_nics(d)} per node, {_layout(d)})")


def _with_energy(d: dict, site) -> dict:
    """The design with its electricity per year, energy_usd_per_year = power_kw x average draw x PUE x USD/kWh x
    8,766 h (the data-parallel path's formula, cost.py), for the decision sections' TCO."""
    if d.get("energy_usd_per_year") is not None or d.get("power_kw") is None:
        return d
    kwh = d["power_kw"] * site.average_draw_fraction * site.pue * 8766.0
    return {**d, "energy_usd_per_year": kwh * site.electricity_usd_per_kwh}


def _tco_lines(found: LlmSearch, years: float):
    """The whole cost of owning of a hardware design of `found` over `years` (hardware/bom.py tco_lines), found
    by its hardware (GPU, chassis, NIC, GPUs per node, nodes, adapters); None when it is not in the search."""
    from costopt.hardware.bom import tco_lines

    s = found.space
    gpu = {g.id: i for i, g in enumerate(s.gpus)}
    ch = {c.id: i for i, c in enumerate(s.chassis)}
    nic = {n.id: i for i, n in enumerate(s.nics)}

    def lines(d: dict) -> list | None:
        if d["gpu"] not in gpu or d["chassis"] not in ch:
            return None
        m = ((s.gpu_idx == gpu[d["gpu"]]) & (s.chassis_idx == ch[d["chassis"]]) & (s.nodes == d["nodes"])
             & (s.gpus_per_node == d["gpus_per_node"]))
        if d["nic"]:
            m &= (s.nic_idx == nic.get(d["nic"], -2)) & (s.nics_per_node == d["nics_per_node"])
        idx = np.flatnonzero(m)
        return tco_lines(found.catalog, found.costs, int(idx[0]), years) if len(idx) else None
    return lines


def _case(res: dict, found: LlmSearch, cloud_cat, years: float, tokens: float | None, rent, repick):
    """The large-model recommendation as the decision sections read it (purchase/decision.py)."""
    from costopt.purchase import decision

    site = found.catalog.site
    b = _with_energy(res["best"], site)
    others = [_with_energy(d, site) for d in res["best_per_gpu"]]
    risks, verify = [], []
    if "estimate" in str(b.get("compute_basis", "")):
        risks.append(f"Tokens/s on {b['gpu']} are a roofline estimate, not a measurement: the 80% range is "
                     f"{_span(b, 'tokens_per_s', '{:,.0f}')} tokens/s ({b.get('range_basis')}).")
    vendor = next(g.vendor for g in found.space.gpus if g.id == b["gpu"])
    if vendor == "amd":  # the Why says the same (llm_search._why): no AMD run in the fit
        risks.append("No AMD run is in the efficiency fit: the efficiency assumed on this GPU is NVIDIA's (an "
                     "estimate, less sure); AMD's MLPerf Training results (v5.0, v5.1) agree with it as ratios "
                     "within 15% on three of four comparisons (docs/accuracy.md).")
    used, usable = b["memory_per_gpu_gb"], b["memory_limit_gb"]
    if used > 0.9 * usable:
        risks.append(f"Memory: the layout uses {used:,.0f} of {usable:,.0f} GB usable per GPU; a longer sequence or "
                     "a framework with more overhead may not fit (Feasible strategies section).")
    ties = res["solver"].get("near_ties", 0)
    if ties:
        risks.append(f"{ties} other GPU types' best designs are near ties (ranges overlap).")
    if b.get("price_warning"):
        risks.append(f"Prices: {b['price_warning']}.")
    verify.append(f"Rent one {b['gpus_per_node']}-GPU {b['gpu']} node for a day and run a short training run of "
                  f"{res['model']} in this layout ({_layout(b)}, sequence {res['seq_len']:,}): compare its tokens/s "
                  f"per GPU with the {b['tokens_per_s_per_gpu']:,.0f} predicted (`costopt profile` measures a zoo "
                  "model's step the same way).")
    if b["nodes"] > 1:
        verify.append(f"On two rented nodes, measure the all-reduce bandwidth over {_nics(b)} (nccl-tests or "
                      "rccl-tests) against the data-parallel and pipeline traffic of the step breakdown.")
    est = sorted({str(x.get("part_id")) for x in (b.get("bom") or []) if "estimate" in str(x.get("source", "")).lower()})
    verify.append("Get written quotes" + (f" for {', '.join(est)} (priced by estimate)" if est else
                                          f" for {b['gpu']}, {b['chassis']}, {b['nic'] or 'no NIC'}")
                  + " and re-run the report with them as a quote overlay (--catalog).")
    extra = [["model", f"{res['model']} ({res['params'] / 1e9:.1f} B parameters), sequence {res['seq_len']:,}, global "
                       f"batch {res['global_batch_sequences']:,} sequences", "--model, --seq-len, --global-batch"],
             ["precision", b["precision"], "--precision"], ["objective", res["objective"], "--objective"],
             ["parts offered", str(res.get("parts_offered")), "--include / --exclude-gpu"],
             ["USD per 1e9 tokens", str(b.get("usd_per_1e9_tokens_basis")), "api._add_costs"],
             ["electricity per year", "power_kw x average draw x PUE x USD/kWh x 8,766 h", "cost.py formula"],
             ["80% ranges", str(b.get("range_basis")), "docs/large-models.md"]]
    cats = [f"{found.catalog.catalog.name} ({found.catalog.catalog.date})"]
    if cloud_cat is not None:
        cats.append(f"{cloud_cat.catalog.name} ({cloud_cat.catalog.date})")
    return decision.Case(
        model=res["model"], unit="tokens/s", best=b, others=others,
        throughput=lambda d: (d["tokens_per_s"], d.get("tokens_per_s_low"), d.get("tokens_per_s_high")),
        describe=_describe, years=years, as_of=str(res.get("as_of")), catalogs=cats, site=site,
        cloud=found.catalog.is_cloud, work=tokens, work_label=(f"{tokens:,.0f} tokens" if tokens else ""),
        risks=risks, verify=verify, assumptions=extra, repick=repick, rent=rent,
        tco_lines=None if found.catalog.is_cloud else _tco_lines(found, years))


def build_llm_report(model: str | None, budget: float, catalog: str | Path | Catalog | None = None, *,
                     tokens: float | None = None, model_config: str | Path | None = None, seq_len: int | None = None,
                     global_batch: int | None = None, precision: str = "amp_bf16", strategies: list[str] | None = None,
                     max_nodes: int | None = None, top: int = 8, years: float = 3.0,
                     include: list[str] | None = None, exclude_gpus: list[str] | None = None,
                     progress: bool = True, cloud: str | Path | Catalog | None = None,
                     utilization: float | None = None, max_instances: int | None = None,
                     as_of: str | None = None) -> Report:
    """The large-model report (module docstring); its recommendation is `solve_llm`'s, number for number.
    `cloud`: a cloud catalog for the rent-or-buy section (`utilization`: how busy the purchase would be)."""
    count("top", top)
    positive("tokens", tokens)
    positive("years", years)
    from costopt.hardware.catalog import load_catalog

    catalog = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    refuse_rent_terms_without_cloud(catalog, cloud, utilization=utilization, max_instances=max_instances)
    with _progress(progress) as prog:
        task = prog.add_task("report", total=len(LLM_SECTIONS) + 1 + (cloud is not None))
        found = search_llm(budget, model, catalog=catalog, precision=precision, seq_len=seq_len,
                           global_batch=global_batch, max_nodes=max_nodes, model_config=model_config,
                           strategies=strategies, include=include, exclude_gpus=exclude_gpus,
                           max_instances=max_instances if catalog.is_cloud else None)
        res = choose_llm(found, tokens=tokens, top=top, years=years, today=as_of)
        prog.advance(task)
        ranked = [d["gpu"] for d in [res["best"], *res["best_per_gpu"]]]
        shown = [g.id for i, g in enumerate(found.space.gpus) if (found.ok & (found.space.gpu_idx == i)).any()]
        colors = _gpu_colors(ranked + [g for g in shown if g not in ranked])  # offered GPU types only
        sections = [_recommended(res, found, years)]
        prog.advance(task)
        grid = memory_grid(found)
        sections.append(_memory(grid, res["best"]))
        prog.advance(task)
        sections.append(_pareto(found, res, colors))
        prog.advance(task)
        sections.append(_breakdown(res["best"]))
        prog.advance(task)
        data: dict[str, Any] = {"memory-grid": grid}
        if cloud is not None:
            from costopt.purchase.llm_purchasing import LlmJob

            job = LlmJob(model=model, model_config=model_config, tokens=tokens, seq_len=seq_len,
                         global_batch=global_batch, precision=precision, strategies=strategies, max_nodes=max_nodes,
                         include=include, exclude_gpus=exclude_gpus, max_instances=max_instances)
            sec, data["rent-vs-buy"] = _rent_or_buy(job, budget, found.catalog, cloud, years, utilization)
            sections.append(sec)
            prog.advance(task)
        from costopt.purchase import decision
        from costopt.purchase.purchasing import _as_catalog

        def repick(f: float) -> dict | None:
            try:
                again = search_llm(budget / f, model, catalog=catalog, precision=precision, seq_len=seq_len,
                                   global_batch=global_batch, max_nodes=max_nodes, model_config=model_config,
                                   strategies=strategies, include=include, exclude_gpus=exclude_gpus)
                return choose_llm(again, tokens=tokens, top=1, years=years)["best"]
            except CostoptError:
                return None

        rv = data.get("rent-vs-buy")
        rent = None
        if rv:
            k = rv.get("rent") or {}
            if k.get("tokens_per_s") and rv.get("rent_usd_per_hour"):
                rent = {"usd_per_hour": rv["rent_usd_per_hour"], "throughput": k["tokens_per_s"],
                        "name": f"{k.get('nodes')} x {k.get('chassis')}"}
        case = _case(res, found, _as_catalog(cloud) if cloud is not None else None, years, tokens, rent, repick)
        sections = [decision.summary(case), sections[0], decision.sensitivity(case), decision.assumptions(case),
                    *sections[1:]]
    cat = found.catalog
    title = f"costopt report: {res['model']} ({res['params'] / 1e9:.1f} B parameters), budget {_money(budget, cat.is_cloud)}"
    subtitle = (f"costopt {__version__}, prices as of {res.get('as_of')}; catalog {cat.catalog.name} ({cat.catalog.date}); sequence {res['seq_len']:,}, global batch "
                f"{res['global_batch_sequences']:,} sequences; precision {precision}; objective {res['objective']}"
                + (f"; {tokens:,.0f} tokens to train" if tokens else ""))
    return Report(title, subtitle, res, sections, data=data)


__all__ = ["build_llm_report", "LLM_SECTIONS", "LLM_OPTIONAL_SECTIONS"]
