"""`costopt profile`: measure a model's training step on this machine (needs the `profile` extra).

Mounted by `costopt/cli/main.py`. torch is imported only when
the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from costopt.core.checks import output_path
from costopt.core.checks import force_overwrite
from costopt.cli.common import FORCE, _fail, out_option

from costopt.core.errors import CostoptError, InputError

app = typer.Typer()


@app.command()
def profile(
    model: Optional[str] = typer.Option(None, help="Zoo model (resnet50, vgg16, alexnet, ...; see `costopt models`)."),
    model_module: Optional[str] = typer.Option(
        None, help="Your own model: 'pkg.mod:build_fn' or 'file.py:build_fn'; build_fn() returns "
                   "(model, make_batch(batch_size), loss_fn(model, inputs))."),
    name: Optional[str] = typer.Option(None, help="Model name written to the file (default: the zoo name or build_fn)."),
    batch: list[int] = typer.Option([32], help="Batch size per step (repeatable)."),
    precision: str = typer.Option("fp32", help="fp32 | amp_bf16 (torch.autocast bf16)."),
    device: str = typer.Option("cuda", help="cuda | cpu."),
    gpu_id: Optional[str] = typer.Option(
        None, help="GPU id the profile is for (a catalog id such as h200-sxm makes solve/predict use it for that "
                   "GPU); default 'cpu' on the CPU, the device name on a GPU."),
    input_size: Optional[int] = typer.Option(None, help="Image side or sequence length (default: the zoo's)."),
    warmup: int = typer.Option(3, help="Untimed steps before timing, per batch size."),
    repeat: int = typer.Option(10, help="Timed steps per batch size (the median is kept)."),
    output: Optional[Path] = typer.Option(None, "--out", "-o", help="Profile JSON to write (zoo format; required)."),
    output_alias: Optional[Path] = typer.Option(None, "--output", hidden=True, help="Old spelling of --out."),
    force: bool = FORCE,
) -> None:
    """Measure one device's training step and write a zoo-format profile for --profile."""
    force_overwrite(force)  # --force: a read-only --out may be replaced
    from costopt.measure import profile as prof  # imports torch lazily inside its functions

    try:
        if (model is None) == (model_module is None):
            raise InputError("give exactly one of --model and --model-module")
        inputs = [model_module.split(":", 1)[0]] if model_module else []
        output = out_option(output, output_alias)
        if output is None:
            raise InputError("give --out FILE.json: where to write the profile")
        output_path(output, "--out", inputs)  # before minutes of measuring
        spec = (prof.build_zoo_model(model, input_size) if model
                else prof.load_user_model(model_module, name))
        if name:
            spec.name = name
        data = prof.profile_model(spec, list(batch), precision=precision, device=device, gpu_id=gpu_id,
                                  warmup=warmup, repeat=repeat, log=lambda s: typer.echo(s, err=True))
    except CostoptError as exc:
        _fail(exc)
        return
    try:
        path = prof.write_profile(data, output, inputs)
    except CostoptError as exc:
        _fail(exc)
        return
    gpu = data["profiles"][0]["gpu"]
    typer.echo(f"wrote {path}: {data['model']}, {len(data['tensor_sets']['pytorch']['tensors'])} parameter tensors, "
               f"batches {', '.join(str(p['batch']) for p in data['profiles'])}, gpu id '{gpu}'")
    try:
        from costopt.hardware.catalog import load_catalog

        ids = sorted(g.id for g in load_catalog(None).gpu)
        if gpu not in ids:
            typer.echo(f"note: gpu id '{gpu}' is not in the built-in catalog; pass --gpu-id with one of "
                       f"{', '.join(ids)} to use this profile for that GPU in solve/predict", err=True)
    except CostoptError:
        pass
    if device == "cpu" and gpu != "cpu":
        typer.echo(f"note: measured on the CPU but labelled '{gpu}': use such a file for testing only", err=True)
