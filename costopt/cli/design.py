"""`costopt solve`, `costopt predict` and `costopt models`: the design commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from costopt.search import api
from costopt.core.units import plain_number
from costopt.core.errors import CostoptError, InfeasibleError, InputError
from costopt.perf.intervals import compute_kind, compute_label, range_phrase
from costopt.perf.workload import list_models, load_workload
from costopt.cli.common import (Fmt, PredictFmt, _bom_table, _console, _design_table, _fail, _fmt_money, _fmt_number,
                                _json_dump, only_for, res_tco_years)
from costopt.cli.ownership import ownership_options

app = typer.Typer()

# DESIGN fields that only mean something for a design that runs (left out when predict refuses one)
_AS_OF = typer.Option(None, "--as-of", help="YYYY-MM-DD that price ages are counted to (default: today); the "
                      "date used is printed, so a rerun with it gives the same output.")
_RUN_FIELDS = ("throughput_samples_per_s", "usd_per_sample_per_s", "scaling_efficiency", "t_iter_s", "t_compute_s",
               "t_comm_s", "t_exposed_comm_s", "busiest_nic_bytes_per_iter", "time_to_train_h")


def _is_llm(model, model_config, strategy, tokens) -> bool:
    from costopt.search.engine import is_llm

    return is_llm(model, model_config, strategy, tokens)


def _refuse(options: dict[str, tuple[bool, str]]) -> None:
    """Exit 2 on the first option given that this path cannot honour: `--name: why` (never ignored)."""
    for name, (given, why) in options.items():
        if given:
            raise InputError(f"{name}: {why}", field=name.lstrip("-").split(" ")[0].replace("-", "_"))


def _single_design_only(given: dict[str, bool]) -> None:
    """Refuse, naming them, the options of a one-model solve that a --workload mix has no place for: its
    answer is one design per job and the shared purchase (no ranked table to cut or widen, no bill of one
    design, no price ages), each job's stack and batch as the mix file and the measured profile give them,
    and support priced by the catalog's [facility] only."""
    names = [k for k, v in given.items() if v]
    if names:
        raise InputError(f"{', '.join(names)}: not for a --workload mix (one design per job and one shared purchase: "
                         "no ranked table, bill of one design, price ages, stack, gradient accumulation or support "
                         "bought up front); give them to a one-model solve (docs/several-jobs.md)",
                         field=names[0].lstrip("-").replace("-", "_"))


@app.command()
@ownership_options
def solve(
    budget: Optional[float] = typer.Option(None, help="Budget in USD (capex, or TCO with --tco-years)."),
    model: Optional[str] = typer.Option(None, help="Zoo model (see `costopt models`)."),
    catalog: Optional[Path] = typer.Option(None, help="Catalog TOML (default: built-in reference-2026)."),
    objective: str = typer.Option("throughput", help="throughput | cost-per-throughput | cost"),
    precision: str = typer.Option(api.DEFAULT_PRECISION, help="auto | fp32 | amp_bf16 | amp_fp16 (auto: the best each GPU trains in: bf16 AMP on Ampere and later, fp16 AMP on Volta/Turing, else fp32); transformers also fp8 | mxfp8 | nvfp4 (docs/large-models.md)"),
    batch_per_gpu: Optional[int] = typer.Option(None, help="Per-GPU batch (default: the model's reference batch)."),
    strategy: Optional[list[str]] = typer.Option(None, help="ring | hierarchical | ps (repeatable; default all); "
                                                 "transformers: ddp | zero1 | zero2 | fsdp | hsdp and/or a fine-tune "
                                                 "sft | lora | qlora (docs/large-models.md)."),
    reduce_on: Optional[list[str]] = typer.Option(None, help="gpu | cpu (repeatable; default gpu)."),
    stack: str = typer.Option("auto", help="Communication stack: auto | nccl | mpi | grpc | gloo (auto: ps -> grpc, "
                              "all-reduce on the CPU -> mpi, else nccl)."),
    top: int = typer.Option(10, help="Rows in the ranked table."),
    fmt: Fmt = typer.Option(Fmt.table, "--format", help="table | json | csv"),
    max_power_kw: Optional[float] = typer.Option(None, help="Power envelope (kW, nameplate)."),
    max_nodes: Optional[int] = typer.Option(None, help="Most nodes."),
    max_rack_units: Optional[float] = typer.Option(None, help="Most rack units."),
    min_throughput: Optional[float] = typer.Option(None, help="Throughput target in the workload's unit: samples/s, or "
                                                   "tokens/s for a transformer; every design shown meets it."),
    deadline_hours: Optional[float] = typer.Option(None, help="Train --epochs over --dataset-size (a transformer: --tokens) "
                                                   "within this time, at --confidence."),
    epochs: Optional[float] = typer.Option(None, help="Epochs (time to train, deadline)."),
    dataset_size: Optional[float] = typer.Option(None, help="Samples per epoch."),
    tco_years: float = typer.Option(0.0, help="Price owned designs by their whole cost of owning over this many "
                                    "years (capex, storage, financing, colocation, electricity, support, staff, less "
                                    "resale; the terms: --colocation-usd-per-kw-month ...); 0: capex alone."),
    hours: Optional[float] = typer.Option(None, help="Cloud catalog: price rented designs for this many hours "
                                          "(else per job with --epochs and --dataset-size, else per hour)."),
    overlap: str = typer.Option("wfbp", help="wfbp | none | full"),
    system: Optional[Path] = typer.Option(None, help="System parameters TOML (from `costopt calibrate`)."),
    profile: Optional[Path] = typer.Option(None, help="Profile JSON (zoo format) overriding built-in compute."),
    gpu: Optional[list[str]] = typer.Option(None, help="Only these GPUs (repeatable; a named GPU is offered whatever "
                                            "its class)."),
    exclude_gpu: Optional[list[str]] = typer.Option(None, "--exclude-gpu", help="Leave this GPU out (repeatable)."),
    include: Optional[list[str]] = typer.Option(None, help="Also offer these part classes: consumer, legacy, eol (comma "
                                                "separated or repeated; default: current data-centre and "
                                                "workstation parts only)."),
    nic: Optional[list[str]] = typer.Option(None, help="Only these NICs (repeatable)."),
    gpus_per_node: Optional[list[int]] = typer.Option(None, help="Only these GPUs-per-node counts (repeatable)."),
    support_years: float = typer.Option(0.0, help="Buy this many years of hardware support up front (catalog "
                                        "[facility] support_pct_per_year); it is part of capex."),
    bom: bool = typer.Option(False, "--bom", help="Print the best design's bill of materials."),
    workload: Optional[Path] = typer.Option(None, help="Workload mix TOML: several jobs, one design each, shared "
                                             "limits (see examples/mix.toml). Objectives: throughput | fair | cost."),
    time_limit: Optional[float] = typer.Option(None, help="With --workload: seconds for the whole solve (default "
                                               "60); at the limit the best answer found is reported with the "
                                               "best bound proven and its gap (\"stopped at the time limit 60 s; "
                                               "best found X, bound Y, gap Z%\")."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="With --workload: progress "
                                            "lines on stderr (default: when stderr is a terminal)."),
    timings: bool = typer.Option(False, "--timings", help="With --workload: also print solve times (they vary run to "
                                 "run, so they are off by default)."),
    wide: bool = typer.Option(False, "--wide", help="Every column in the tables (the default fits 120 columns)."),
    mixed_nics: Optional[bool] = typer.Option(None, "--mixed-nics/--one-nic-type", help="With --workload: allow a "
                                              "different NIC type per job (default: one NIC type for the fabric)."),
    grad_accum: int = typer.Option(1, help="Micro-batches of --batch-per-gpu per synchronisation (gradient accumulation)."),
    framework: str = typer.Option("eager", help="Software stack whose host time the compute carries: eager "
                                  "(PyTorch eager, as measured; default) | cuda-graphs (compiled / CUDA graphs) | "
                                  "vendor-tuned (fused optimizer, DALI); see docs/compute.md. Transformers: megatron "
                                  "(default) | fsdp | deepspeed | torchtitan (docs/large-models.md)."),
    model_config: Optional[Path] = typer.Option(None, help="Transformer described by its architecture (TOML: layers, "
                                                "hidden, heads, ffn_hidden, vocab, seq_len, source; see docs/large-models.md)."),
    seq_len: Optional[int] = typer.Option(None, help="Transformers: sequence length (default: the model's)."),
    global_batch: Optional[int] = typer.Option(None, help="Transformers: global batch in sequences (default: 4M tokens)."),
    tokens: Optional[float] = typer.Option(None, help="Transformers: tokens to train (time and cost to train them)."),
    as_of: Optional[str] = _AS_OF,
    max_instances: Optional[int] = typer.Option(None, "--max-instances", help="Cloud catalog: rent at most this many "
                                                "instances of any one type (default: the catalog's cap per type, "
                                                "e.g. AWS's 64-instance Capacity Block)."),
    lora_rank: Optional[int] = typer.Option(None, "--lora-rank", help="Transformers, --strategy lora|qlora: adapter "
                                            "rank r (default 32, NeMo's; said in the output)."),
    lora_targets: Optional[str] = typer.Option(None, "--lora-targets", help="Transformers, --strategy lora|qlora: "
                                               "qkv | attention | all-linear (default all-linear)."),
    confidence: Optional[float] = typer.Option(None, "--confidence", help="Meet the throughput target (--deadline-hours, "
                                               "--min-throughput) with this probability, from each design's 80% range: "
                                               "0.5 = the point estimate, 0.9 = the low end (p10). Default: 0.9 with a "
                                               "deadline, else 0.5."),
    ownership: Optional[dict] = None,
) -> None:
    """Best design for the money, with ranked alternatives and why the winner wins."""
    mix_only = {"--time-limit": time_limit is not None, "--progress/--no-progress": progress is not None,
                "--timings": timings, "--mixed-nics/--one-nic-type": mixed_nics is not None}
    try:  # options a path cannot honour are refused, never ignored (a negative value named as such first)
        for name, v in (("--time-limit", time_limit), ("--global-batch", global_batch), ("--seq-len", seq_len)):
            only_for(name, v, True, "", positive=True)
        if workload is None and any(mix_only.values()):
            name = next(k for k, v in mix_only.items() if v)
            raise InputError(f"{name} applies to several jobs: use it with --workload mix.toml", field=name)
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if workload is not None:
        from costopt.search import multijob

        try:
            per_job = {"--hours": hours, "--model": model, "--batch-per-gpu": batch_per_gpu, "--min-throughput": min_throughput,
                       "--deadline-hours": deadline_hours, "--epochs": epochs, "--dataset-size": dataset_size,
                       "--profile": profile, "--gpu": gpu, "--nic": nic, "--gpus-per-node": gpus_per_node,
                       "--precision": None if precision == api.DEFAULT_PRECISION else precision,
                       "--tokens": tokens, "--model-config": model_config, "--seq-len": seq_len,
                       "--global-batch": global_batch, "--lora-rank": lora_rank, "--lora-targets": lora_targets,
                       "--confidence": confidence, "--max-instances": max_instances}
            given = [k for k, v in per_job.items() if v]
            if given:
                raise InputError(f"{', '.join(given)}: set per job in the mix file, not with --workload")
            _single_design_only({"--top": top != 10, "--wide": wide, "--bom": bom, "--stack": stack != "auto",
                                 "--support-years": support_years != 0, "--grad-accum": grad_accum != 1,
                                 "--as-of": as_of is not None})
            if fmt is Fmt.csv:
                raise InputError("--workload supports --format table or json")
            if framework != "eager":
                raise InputError("--framework: a --workload mix runs every job as measured (eager); give --framework "
                                 "to a single-model solve", field="framework")
            show = sys.stderr.isatty() if progress is None else progress
            from costopt.hardware.site_terms import with_site_terms

            catalog = with_site_terms(catalog, ownership or {}, priced=bool(tco_years))
            mres = multijob.solve_mix(
                workload, catalog=catalog, objective=objective, budget=budget, max_power_kw=max_power_kw,
                max_rack_units=max_rack_units, max_nodes=max_nodes, mixed_nics=mixed_nics,
                time_limit=multijob.DEFAULT_TIME_LIMIT_S if time_limit is None else time_limit,
                tco_years=tco_years, overlap=overlap, system=system, strategies=strategy, reduce_on=reduce_on,
                progress=(lambda line: typer.echo(f"[mix] {line}", err=True)) if show else None,
                include=include, exclude_gpus=exclude_gpu)
        except InfeasibleError as exc:
            if fmt is Fmt.json:
                typer.echo(_json_dump({"status": "Infeasible", "error": str(exc), "reason": exc.reason,
                                       "binding": exc.nearest or []}))
            else:
                typer.echo(f"infeasible: {exc}", err=True)
            raise typer.Exit(exc.exit_code)
        except CostoptError as exc:
            _fail(exc, fmt.value)
            return
        if fmt is Fmt.json:
            typer.echo(_json_dump(mres.to_json_dict(timings=timings)))
        else:
            multijob.render(mres, _console(), timings=timings)
        return
    from costopt.search import engine

    try:
        if engine.is_llm(model, model_config, strategy, tokens):
            _refuse({"--format csv": (fmt is Fmt.csv, "large-model solves support --format table or json"),
                     "--wide": (wide, "the large-model table has one width (every column); --format json has "
                                "every field")})
        res = engine.solve(
            budget, model, tokens=tokens, model_config=model_config, seq_len=seq_len, global_batch=global_batch,
            objective=objective, catalog=catalog, precision=precision, batch_per_gpu=batch_per_gpu,
            strategies=strategy, reduce_on=reduce_on, top=top, max_power_kw=max_power_kw, max_nodes=max_nodes,
            max_rack_units=max_rack_units, min_throughput=min_throughput, deadline_hours=deadline_hours,
            epochs=epochs, dataset_size=dataset_size, tco_years=tco_years, overlap=overlap, system=system,
            profile=profile, gpus=gpu, nics=nic, gpus_per_node=gpus_per_node, hours=hours, grad_accum=grad_accum,
            stack=stack, include=include, exclude_gpus=exclude_gpu, support_years=support_years, today=as_of,
            max_instances=max_instances, confidence=confidence, lora_rank=lora_rank, lora_targets=lora_targets,
            **({} if framework == "eager" else {"framework": framework}), **(ownership or {}),
        )
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if isinstance(res, engine.LlmSolveResult):
        from costopt.cli.llm import print_solve

        print_solve(res.data, fmt.value, bom=bom)
        return
    if fmt is Fmt.json:
        typer.echo(_json_dump(res.to_json_dict()))
        return
    if fmt is Fmt.csv:
        from costopt.core.neutral import spreadsheet_frame

        typer.echo(spreadsheet_frame(res.table).to_csv(index=False, float_format=plain_number), nl=False)
        return
    c = _console()
    budget_s = _fmt_money(res.budget_usd) if res.budget_usd is not None else "none"
    c.print(f"costopt solve: model {res.model}, budget {budget_s}, objective {res.objective}, "
            f"{res.candidates_evaluated:,} designs evaluated, Pareto front {res.solver['pareto_front_size']}, "
            f"solver {res.solver['status']}")
    rows = [res.best] + res.alternatives
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    c.print(_design_table(rows, "Ranked designs (best of each gpu / chassis / nic / strategy family)", wide))
    if res.best_per_gpu:
        c.print(_design_table(res.best_per_gpu, "Best design per GPU type", wide, legend=False))
    b = res.best
    nics = "no network (one node)" if b["nic"] == "none" else f"{max(int(b['nics_per_node']), 1)} x {b['nic']} per node"
    label = compute_label(b["compute_source"], res.model, b["compute_basis"], b["gpu"])
    thr = range_phrase(b["throughput_samples_per_s"], b.get("throughput_low_samples_per_s"),
                       b.get("throughput_high_samples_per_s"), label)
    c.print(f"Best: {b['total_gpus']} x {b['gpu']} ({b['gpus_per_node']} per node x {b['nodes']} nodes, {b['chassis']}), "
            f"{nics}, {b['strategy']}; {_fmt_money(b['cost_usd'])} ({b['cost_basis']}); "
            f"throughput {thr}; {b['power_kw']:,.1f} kW, {b['rack_units']:,.0f} RU; "
            f"batch {b['batch_per_gpu']}/GPU {b['precision']}")
    c.print(f"Why: {res.why}")
    c.print(f"Strategy: {res.why_strategy}")
    sv = res.solver
    if "robustness" in sv:
        ties = sum(1 for r in res.alternatives if r.get("near_tie"))
        c.print(f"How sure: estimated throughput {b['throughput_samples_per_s']:,.1f} samples/s, 80% range "
                f"{b['throughput_low_samples_per_s']:,.1f} to {b['throughput_high_samples_per_s']:,.1f}; the best design "
                f"stays best in {sv['robustness']:.0%} of {sv['robustness_resamples']} resamples of the fitted system "
                f"parameters and of each GPU's compute (by its evidence kind's out-of-sample spread); {ties} of the ranked alternatives are near-ties (ranges overlap the best's, marked ≈)")
    for w in res.warnings:
        c.print(f"Warning: {w}")
    if res.capacity:
        c.print(res.capacity["sentence"])
    c.print(f"Compute: {b['compute_source']} — {b['compute_basis']}")
    if b.get("time_to_train_h") is not None:
        rng = (f" (80% range {_fmt_number(b['time_to_train_low_h'])}-{_fmt_number(b['time_to_train_high_h'])} h)"
               if b.get("time_to_train_low_h") is not None else "")
        c.print(f"Time to train: {_fmt_number(b['time_to_train_h'])} h{rng}")
    if res.solver.get("target_rule"):
        c.print(f"Target: {res.solver['target_rule']}.")
    c.print(f"Parts: {b['segment']}, {b['lifecycle']}; oldest price in the design {b['oldest_price_date']} (age "
            f"counted to {res.as_of})" + (f" — warning: {b['price_warning']}" if b.get("price_warning") else ""))
    if res.excluded.get("sentence"):
        c.print(res.excluded["sentence"])
    if bom:
        c.print(_bom_table(b["bom"], f"Bill of materials ({b['cost_basis']}, total = capex "
                                     f"{_fmt_money(b['capex_usd'])})"))
        if b.get("tco"):
            c.print(_bom_table(b["tco"], f"Whole cost of owning over {res_tco_years(b)} (= cost_usd "
                                         f"{_fmt_money(b['cost_usd'])})"))


@app.command()
@ownership_options
def predict(
    model: Optional[str] = typer.Option(None, help="Zoo model."),
    gpu: str = typer.Option(..., help="GPU id from the catalog."),
    gpus_per_node: int = typer.Option(..., help="GPUs per node."),
    nodes: int = typer.Option(..., help="Number of nodes."),
    nic: Optional[str] = typer.Option(None, help="NIC id (needed for more than one node)."),
    strategy: list[str] = typer.Option([], help="ring | hierarchical | ps; transformers: ddp | zero1 | zero2 | fsdp "
                                       "| hsdp, and/or a fine-tune sft | lora | qlora (repeat: --strategy lora "
                                       "--strategy fsdp; a transformer without a layout named takes the fastest that "
                                       "fits)."),
    reduce_on: str = typer.Option("gpu", help="gpu | cpu: where gradients are reduced / variables live."),
    stack: str = typer.Option("auto", help="Communication stack: auto | nccl | mpi | grpc | gloo (auto: ps -> grpc, "
                              "all-reduce on the CPU -> mpi, else nccl)."),
    batch_per_gpu: Optional[int] = typer.Option(None, help="Per-GPU batch."),
    precision: str = typer.Option(api.DEFAULT_PRECISION, help="auto | fp32 | amp_bf16 | amp_fp16 (auto: the best each GPU trains in: bf16 AMP on Ampere and later, fp16 AMP on Volta/Turing, else fp32); transformers also fp8 | mxfp8 | nvfp4 (docs/large-models.md)"),
    overlap: str = typer.Option("wfbp", help="wfbp | none | full"),
    catalog: Optional[Path] = typer.Option(None, help="Catalog TOML."),
    system: Optional[Path] = typer.Option(None, help="System parameters TOML."),
    profile: Optional[Path] = typer.Option(None, help="Profile JSON (zoo format)."),
    chassis: Optional[str] = typer.Option(None, help="Chassis id (default: cheapest that fits)."),
    tco_years: float = typer.Option(0.0, help="Price the design by its whole cost of owning over this many years "
                                    "(the terms: --colocation-usd-per-kw-month ...); 0: capex alone."),
    tensor_set: str = typer.Option("pytorch", help="pytorch | tensorflow (tf_cnn_benchmarks definitions, CNNs)."),
    nics_per_node: int = typer.Option(1, help="NIC adapters per node (one per GPU rail on DGX/HGX nodes)."),
    fmt: PredictFmt = typer.Option(PredictFmt.table, "--format", help="table | json"),
    grad_accum: int = typer.Option(1, help="Micro-batches of --batch-per-gpu per synchronisation (gradient accumulation)."),
    framework: str = typer.Option("eager", help="Software stack whose host time the compute carries: eager "
                                  "(PyTorch eager, as measured; default) | cuda-graphs (compiled / CUDA graphs) | "
                                  "vendor-tuned (fused optimizer, DALI); see docs/compute.md. Transformers: megatron "
                                  "(default) | fsdp | deepspeed | torchtitan (docs/large-models.md)."),
    model_config: Optional[Path] = typer.Option(None, help="Transformer described by its architecture (TOML: layers, "
                                                "hidden, heads, ffn_hidden, vocab, seq_len, source; see docs/large-models.md)."),
    seq_len: Optional[int] = typer.Option(None, help="Transformers: sequence length (default: the model's)."),
    global_batch: Optional[int] = typer.Option(None, help="Transformers: global batch in sequences (default: 4M tokens)."),
    tp: int = typer.Option(1, help="Transformers: tensor-parallel degree (inside a node)."),
    pp: int = typer.Option(1, help="Transformers: pipeline-parallel degree."),
    vp: int = typer.Option(1, help="Transformers: virtual pipeline stages per GPU (interleaved 1F1B; 1: plain 1F1B)."),
    cp: int = typer.Option(1, help="Transformers: context-parallel degree (ring attention over the sequence)."),
    ep: int = typer.Option(1, help="Mixture-of-experts transformers: expert-parallel degree (experts split over ep "
                           "data-parallel ranks; divides the experts)."),
    shard_group: int = typer.Option(0, help="Transformers, zero1 | zero2 | hsdp: shard the weights, gradients and "
                                    "optimizer over groups of this many data x context-parallel ranks, replicated "
                                    "across groups (HSDP with a chosen group, partial ZeRO); 0: the strategy's own."),
    micro_batch: int = typer.Option(1, help="Transformers: micro-batch in sequences per data-parallel rank."),
    checkpointing: Optional[str] = typer.Option(None, help="Transformers: none | selective | full (default: the "
                                                "fastest that fits)."),
    tokens: Optional[float] = typer.Option(None, help="Transformers: tokens to train (time and cost to train them)."),
    as_of: Optional[str] = _AS_OF,
    lora_rank: Optional[int] = typer.Option(None, "--lora-rank", help="Transformers, --strategy lora|qlora: adapter "
                                            "rank r (default 32, NeMo's; said in the output)."),
    lora_targets: Optional[str] = typer.Option(None, "--lora-targets", help="Transformers, --strategy lora|qlora: "
                                               "qkv | attention | all-linear (default all-linear)."),
    ownership: Optional[dict] = None,
) -> None:
    """Predict one design's iteration time, throughput and cost."""
    from costopt.search import engine

    try:
        llm = engine.is_llm(model, model_config, strategy, tokens)
        d = engine.predict(model, gpu, gpus_per_node, nodes, nic, strategy, tokens=tokens, model_config=model_config,
                           seq_len=seq_len, global_batch=global_batch, tp=tp, pp=pp, micro_batch=micro_batch,
                           checkpointing=checkpointing, vp=vp, cp=cp, ep=ep, shard_group=shard_group,
                           batch_per_gpu=batch_per_gpu, precision=precision,
                           reduce_on=reduce_on, overlap=overlap, catalog=catalog, system=system, profile=profile,
                           chassis=chassis, tco_years=tco_years, tensor_set=tensor_set, nics_per_node=nics_per_node,
                           grad_accum=grad_accum, stack=stack, today=as_of, lora_rank=lora_rank,
                           lora_targets=lora_targets, **({} if framework == "eager" else {"framework": framework}),
                           **(ownership or {}))
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if llm:
        from costopt.cli.llm import print_predict

        print_predict(d, fmt.value)
        return
    why = api.infeasible_reason(d)
    if why is not None:  # no throughput for a design that cannot run: exit 1 with the reason
        design = {k: v for k, v in d.items() if k not in _RUN_FIELDS}
        _fail(InfeasibleError(f"this design cannot run: {why[1]}", nearest=design, reason=why[0]), fmt.value,
              show_nearest=False)
        return
    if fmt is PredictFmt.json:
        typer.echo(_json_dump(d))
        return
    c = _console()
    from rich.table import Table

    t = Table(title=f"costopt predict: {d['model']}", title_justify="left")
    t.add_column("field")
    t.add_column("value")
    for k, v in d.items():
        if k in ("bom", "tco"):  # their own tables below
            continue
        if isinstance(v, float) or v is None:
            v = _fmt_money(v) if "usd" in k and v is not None else _fmt_number(v)
        t.add_row(k, str(v))
    c.print(t)
    if d.get("bom"):
        c.print(_bom_table(d["bom"], f"Bill of materials ({d['cost_basis']})"))
    if d.get("tco"):
        c.print(_bom_table(d["tco"], f"Whole cost of owning over {res_tco_years(d)} (= cost_usd "
                                     f"{_fmt_money(d['cost_usd'])})"))
    label = compute_label(d["compute_source"], d.get("model"), d["compute_basis"], d["gpu"])
    c.print(f"Estimated throughput {range_phrase(d['throughput_samples_per_s'], d['throughput_low_samples_per_s'], d['throughput_high_samples_per_s'], label)}. "
            f"The range combines the leave-one-source-out errors of the {d['stack']} stack's published measurements "
            f"in the time beyond compute, weighed by this design's share of it ({_exposed_pct(d)} of the iteration), "
            f"with the out-of-sample compute errors of this evidence kind ({compute_kind(d['compute_source'])}).")


def _exposed_pct(d: dict) -> str:
    """(t_iter - t_compute) / t_iter as a percentage, the share of the iteration the communication error weighs on."""
    t_iter, t_c = d.get("t_iter_s"), d.get("t_compute_s")
    if not t_iter or t_c is None:
        return "none"
    return f"{max(0.0, 1.0 - t_c / t_iter):.0%}"


@app.command()
def models(fmt: PredictFmt = typer.Option(PredictFmt.table, "--format", help="table | json")) -> None:
    """List the workload zoo (json: id, reference_batch, param_count, flops_per_sample per model)."""
    rows = []
    try:
        for name in list_models():
            w = load_workload(name)
            ts = w.tensors("pytorch")
            fl = w.flops or {}
            other = fl.get("train_other_bytes_per_sample", {})
            rows.append({
                "id": name, "description": w.description, "sample_unit": w.sample_unit,
                "reference_batch": w.default_batch, "param_count": int(ts.numel[ts.trainable].sum()),
                "gradient_bytes": ts.total_gradient_bytes, "tensors": ts.n_trainable, "precisions": w.precisions(),
                "flops_per_sample": fl.get("train_matmul_flops_per_sample"),
                "forward_flops_per_sample": fl.get("forward_matmul_flops_per_sample"),
                "other_bytes_per_sample": {"fp32": other.get("fp32"), "amp": other.get("amp_bf16")} if other else None,
                "flops_method": fl.get("method"),
            })
    except CostoptError as exc:
        _fail(exc, fmt.value)
        return
    if fmt is PredictFmt.json:
        typer.echo(_json_dump(rows))
        return
    from rich.table import Table

    c = _console()
    t = Table(title="Workload zoo (GFLOP/sample: one training step, forward + backward matmuls)", title_justify="left")
    for col in ("model", "parameters", "gradient MB", "tensors", "default batch", "GFLOP/sample", "precisions",
                "description"):
        t.add_column(col)
    for r in rows:
        gf = f"{r['flops_per_sample'] / 1e9:,.1f}" if r["flops_per_sample"] else "-"
        t.add_row(r["id"], f"{r['param_count']:,}", f"{r['gradient_bytes'] / 1e6:,.1f}", str(r["tensors"]),
                  str(r["reference_batch"]), gf, ", ".join(r["precisions"]), r["description"])
    c.print(t)
    _print_transformers(c)


def _print_transformers(c) -> None:
    """The transformers described by their architecture (large-model path: fsdp, tp, pp, ...)."""
    from rich.table import Table

    from costopt.perf.llm.arch import list_llm_models, load_llm_model

    t = Table(title="Transformers by architecture (large-model path: predict/solve --strategy fsdp|hsdp|zero1|zero2|ddp)",
              title_justify="left")
    for col in ("model", "parameters", "layers", "hidden", "heads/kv", "seq", "GFLOP/token", "source"):
        t.add_column(col)
    for name in list_llm_models():
        m = load_llm_model(name)
        size = f"{m.params / 1e9:.2f} B" + (f" ({m.active_params / 1e9:.1f} B active: {m.num_experts} experts, top "
                                             f"{m.top_k})" if m.is_moe else "")
        t.add_row(name, size, str(m.layers), str(m.hidden), f"{m.heads}/{m.kv_heads}",
                  str(m.seq_len), f"{m.model_flops_per_token / 1e9:,.1f}", m.source)
    c.print(t)
