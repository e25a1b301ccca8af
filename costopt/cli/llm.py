"""Rendering of the large-model paths of `predict`, `solve` and `validate` (transformers described by
their architecture; see docs/large-models.md). The commands themselves live in design.py and
accuracy.py and hand over here when the request is a large-model one."""

from __future__ import annotations


import numpy as np
import typer
from rich.table import Table

from costopt.core.errors import CostoptError
from costopt.cli.common import _cell, _console, _fail, _fmt_money, _json_dump, designs_table

_PREDICT_FIELDS = (
    ("model", "model", "{}"), ("gpu", "GPU", "{}"), ("total_gpus", "GPUs", "{}"), ("nic", "NIC", "{}"),
    ("finetune_basis", "fine-tune", "{}"), ("trainable_params", "trainable parameters", "{:,}"),
    ("strategy", "strategy", "{}"), ("strategy_rule", "  layout", "{}"), ("tp", "tensor parallel", "{}"),
    ("pp", "pipeline parallel", "{}"), ("vp", "  virtual stages per GPU (interleaved)", "{}"),
    ("cp", "context parallel", "{}"), ("dp", "data parallel", "{}"),
    ("shard_group", "  states sharded over (replicas)", "{}"), ("shard_groups", "  replicated over (groups)", "{}"), ("ep", "expert parallel", "{}"), ("expert_data_parallel", "  expert data parallel", "{}"),
    ("micro_batch", "micro-batch (sequences)", "{}"),
    ("grad_accum", "gradient accumulation", "{}"), ("global_batch_sequences", "global batch (sequences)", "{:,}"),
    ("seq_len", "sequence length", "{:,}"), ("activation_checkpointing", "activation checkpointing", "{}"),
    ("tokens_per_s", "tokens/s", "{:,.0f}"), ("tokens_per_s_range", "  80% range", "{}"),
    ("tokens_per_s_per_gpu", "tokens/s per GPU", "{:,.0f}"), ("tokens_per_s_per_gpu_range", "  80% range", "{}"),
    ("mfu", "MFU", "{:.1%}"), ("mfu_range", "  80% range", "{}"), ("mfu_basis", "  MFU basis", "{}"),
    ("memory_per_gpu_gb", "memory per GPU (GB)", "{:.1f}"),
    ("memory_model_states_gb", "  of which weights, gradients, Adam (GB)", "{:.1f}"),
    ("memory_weights_gb", "    weights (bf16, low-precision copies, gathered layers) (GB)", "{:.1f}"),
    ("memory_gradients_gb", "    gradients (GB)", "{:.1f}"), ("memory_optimizer_states_gb", "    Adam: fp32 master, m, v (GB)", "{:.1f}"),
    ("memory_expert_states_gb", "    of which routed experts (GB)", "{:.1f}"),
    ("memory_frozen_weights_gb", "    frozen weights (GB)", "{:.1f}"),
    ("memory_adapters_gb", "    adapters: weights, gradients (GB)", "{:.2f}"),
    ("memory_optimizer_gb", "    adapters' Adam states (GB)", "{:.2f}"),
    ("memory_activations_gb", "  of which activations, logits (GB)", "{:.1f}"), ("memory_limit_gb", "usable (GB)", "{:.1f}"),
    ("gpu_memory_gb", "GPU memory (GB)", "{:g}"), ("t_step_s", "step time (s)", "{:.3f}"),
    ("t_compute_s", "  compute (s)", "{:.3f}"), ("t_pipeline_bubble_s", "  pipeline bubble (s)", "{:.3f}"),
    ("t_pipeline_p2p_s", "  pipeline point-to-point (s)", "{:.3f}"), ("t_tensor_parallel_s", "  tensor-parallel all-reduces (s)", "{:.3f}"),
    ("t_data_parallel_exposed_s", "  data-parallel, exposed (s)", "{:.3f}"),
    ("t_context_parallel_exposed_s", "  context-parallel ring, exposed (s)", "{:.3f}"), ("t_optimizer_s", "  optimizer update (s)", "{:.3f}"),
    ("t_expert_parallel_exposed_s", "  expert all-to-all (s)", "{:.3f}"), ("bottleneck", "largest time term", "{}"),
    ("moe_basis", "  experts", "{}"), ("cost_usd", "cost (USD)", "money"),
    ("hours_per_1e9_tokens", "hours per 1e9 tokens", "{:,.2f}"), ("hours_per_1e9_tokens_range", "  80% range", "{}"),
    ("usd_per_1e9_tokens", "USD per 1e9 tokens", "cents"), ("usd_per_1e9_tokens_range", "  80% range", "{}"),
    ("usd_per_1e9_tokens_basis", "  basis", "{}"), ("hours_to_train", "hours to train", "{:,.1f}"),
    ("hours_to_train_range", "  80% range", "{}"), ("cost_to_train_usd", "cost to train (USD)", "money"),
    ("cost_to_train_usd_range", "  80% range", "{}"), ("range_basis", "range from", "{}"),
    ("compute_basis", "compute", "{}"),
)
# the point field of each range row, with the format of its ends
_RANGED = {"tokens_per_s": "{:,.0f}", "tokens_per_s_per_gpu": "{:,.0f}", "mfu": "{:.1%}",
           "hours_per_1e9_tokens": "{:,.2f}", "usd_per_1e9_tokens": "cents", "hours_to_train": "{:,.1f}",
           "cost_to_train_usd": "money"}



def print_predict(d: dict, fmt: str) -> None:
    if fmt == "json":
        typer.echo(_json_dump(d))
        return
    t = Table(title=f"costopt predict: {d['model']} (large-model path)", title_justify="left")
    t.add_column("field")
    t.add_column("value")
    shown = {**d, **{f"{k}_range": f"{_cell(d[k + '_low'], f)} to {_cell(d[k + '_high'], f)}"
                     for k, f in _RANGED.items() if d.get(k + "_low") is not None}}
    if shown.get("cost_to_train_usd_low") is not None and shown["cost_to_train_usd_low"] == shown["cost_to_train_usd_high"]:
        shown.pop("cost_to_train_usd_range")  # an owned cluster's cost to train is its purchase: no range
    for key, label, f in _PREDICT_FIELDS:
        if key in shown:
            t.add_row(label, _cell(shown[key], f))
    c = _console()
    c.print(t)
    if d.get("tokens_per_s_low") is not None:
        c.print(f"Estimated {range_sentence(d)}.")


def range_sentence(d: dict) -> str:
    """'59,969 tokens/s (80% range 50,619-67,251; from the leave-one-source-out errors of ...), 4.6-5.5 hours
    per 1e9 tokens': what a buyer reads about how sure a large-model prediction is."""
    from costopt.perf.intervals import range_phrase

    text = range_phrase(d["tokens_per_s"], d.get("tokens_per_s_low"), d.get("tokens_per_s_high"),
                        f"from the {d.get('range_basis')}", unit="tokens/s")
    if d.get("hours_to_train_low") is not None:
        text += (f"; {d['tokens_to_train']:,.0f} tokens in {d['hours_to_train']:,.0f} hours "
                 f"(80% range {d['hours_to_train_low']:,.0f}-{d['hours_to_train_high']:,.0f})")
    return text


def print_solve(res: dict, fmt: str, bom: bool = False) -> None:
    if fmt == "json":
        typer.echo(_json_dump(res))
        return
    c = _console()
    c.print(f"costopt solve: {res['model']} ({res['params'] / 1e9:.1f} B parameters, sequence {res['seq_len']:,}), "
            f"budget {_fmt_money(res['budget_usd'])}, {res['candidates_evaluated']:,} hardware designs x "
            f"{res['layouts_per_design']} layouts, Pareto front {res['solver']['pareto_front_size']}")
    c.print(f"Parts: {res['parts_offered']} ({res['designs_left_out_by_part_filter']:,} hardware designs left out; "
            "--include consumer,legacy,eol opens them)")
    gb = (f"global batch {res['global_batch_sequences']:,} sequences held exactly" if res.get("global_batch_rule", "")
          .startswith("held") else f"global batch about {res['global_batch_sequences']:,} sequences")
    c.print(designs_table([res["best"], *res["best_per_gpu"]], f"Best design of each GPU type (large-model path, {gb})",
                          bool(res.get("tokens_to_train"))))
    if res.get("finetune_basis"):
        c.print(f"Fine-tune: {res['finetune_basis']}.")
    c.print(f"Why: {res['why']}")
    b = res["best"]
    if b.get("tokens_per_s_low") is not None:
        ties = res["solver"].get("near_ties", 0)
        c.print(f"How sure: {range_sentence(b)}; range: the 80% range of tokens/s against the prediction; "
                f"{ties} of the other GPU types' best designs are near-ties (ranges overlap the best's, marked ≈).")
    if res.get("capacity"):
        c.print(res["capacity"]["sentence"])
    c.print(f"USD per 1e9 tokens ($/1e9 tok): {res['best']['usd_per_1e9_tokens_basis']}.")
    c.print(f"Global batch: {res['global_batch_rule']}.")
    c.print(f"Cost: {res['cost_basis']}" + (f"; limits: {', '.join(f'{k} {v:g}' for k, v in res['limits'].items())}"
                                            if res.get("limits") else "") + ".")
    if res["solver"].get("target_rule"):
        t = f"Target: {res['solver']['target_rule']}"
        if b.get("hours_to_train_at_confidence") is not None:
            t += (f"; the pick trains {res['tokens_to_train']:,.3g} tokens in {b['hours_to_train_at_confidence']:,.0f} "
                  f"hours at that confidence")
        c.print(t + ".")
    if b.get("oldest_price_date"):
        c.print(f"Parts: oldest price in the design {b['oldest_price_date']} (age counted to {res['as_of']})"
                + (f" — warning: {b['price_warning']}" if b.get("price_warning") else ""))
    if bom and b.get("bom"):
        from costopt.cli.common import _bom_table

        c.print(_bom_table(b["bom"], f"Bill of materials ({res['cost_basis']}, total = capex "
                                     f"{_fmt_money(b['capex_usd'])})"))



def run_validate(file: str, fmt: str, max_median_error: float | None) -> None:
    from costopt.measure.llm_validate import SHIPPED_LLM_DATASETS, add_ranges, predict_rows, read_llm_csv

    try:
        rows = read_llm_csv(SHIPPED_LLM_DATASETS.get(file, file))
        recs = predict_rows(rows)
        ranged = add_ranges(recs)
    except CostoptError as exc:
        _fail(exc, fmt)
        return
    errs = np.array([r["error_pct"] for r in recs if r.get("error_pct") is not None])
    summary = {"rows": len(recs), "predicted": int(len(errs)), "skipped": int(sum(1 for r in recs if r["skipped"])),
               "median_abs_error_pct": float(np.median(np.abs(errs))) if len(errs) else None,
               "p90_abs_error_pct": float(np.percentile(np.abs(errs), 90)) if len(errs) else None}
    by_source: dict[str, list[float]] = {}
    for r in recs:
        if r.get("error_pct") is not None:
            by_source.setdefault(r["source"], []).append(r["error_pct"])
    summary["by_source"] = {k: {"n": len(v), "median_abs_error_pct": float(np.median(np.abs(v)))}
                            for k, v in sorted(by_source.items())}
    summary.update(ranged)
    if fmt == "json":
        typer.echo(_json_dump({"path": str(file), "kind": "large-model", "rows": recs, "summary": summary}))
    else:
        c = _console()
        t = Table(title=f"costopt validate (large-model rows): {file}", title_justify="left")
        for col in ("line", "source", "model", "gpu", "GPUs", "layout", "measured tok/s/GPU", "predicted", "err %", "note"):
            t.add_column(col, justify="right" if col in ("line", "GPUs", "measured tok/s/GPU", "predicted", "err %") else "left")
        for r in recs:
            err = r.get("error_pct")
            t.add_row(str(r["line"]), r["source"], r["model"][:28], r["gpu"], str(r["total_gpus"]),
                      f"{r['strategy']} tp{r['tp']} pp{r['pp']}" + (f" ep{r['ep']}" if r.get("ep", 1) > 1 else ""), _cell(r["measured_tokens_per_s_per_gpu"], "{:,.0f}"),
                      _cell(r.get("predicted_tokens_per_s_per_gpu"), "{:,.0f}"), "-" if err is None else f"{err:+.1f}",
                      r["skipped"] or r["assumed"] or "")
        c.print(t)
        c.print(f"{summary['predicted']} rows predicted, {summary['skipped']} skipped; median |error| "
                f"{_cell(summary['median_abs_error_pct'], '{:.1f}')}%, p90 {_cell(summary['p90_abs_error_pct'], '{:.1f}')}%")
        for k, v in summary["by_source"].items():
            c.print(f"  {k}: {v['n']} rows, median |error| {v['median_abs_error_pct']:.1f}%")
        if ranged:
            cov = ranged["range_coverage_out_of_sample"]
            c.print(f"80% ranges: {ranged['rows_inside_range_share']:.1%} of the predicted rows lie inside theirs (in "
                    f"sample); out of sample, with each group's range built from the other groups' errors, "
                    f"{cov['by_source']:.1%} (leave-one-source-out) and {cov['by_gpu']:.1%} (leave-one-GPU-out) "
                    "of the shipped rows")
    med = summary["median_abs_error_pct"]
    if max_median_error is not None and med is not None and med > max_median_error:
        typer.echo(f"median absolute error {med:.2f}% is above --max-median-error {max_median_error:g}%", err=True)
        raise typer.Exit(1)
