#!/usr/bin/env python3
"""Re-profile the zoo on one GPU: phase times and profiler GPU-busy time per phase, eager and compiled.

    python tools/profile_zoo.py --gpu-id h200-sxm --out zoo_h200/ [--models resnet50,bert_large]
        [--modes eager,compiled] [--precisions fp32,amp_bf16] [--batches 8,16,32,64,128,256,512]
        [--time-budget-s 540] [--repeat 10] [--warmup 3]

What it measures, per (model, precision, mode, batch), on one CUDA device (PyTorch, costopt's own model
definitions via costopt.measure.profile.build_zoo_model; random inputs):

- forward, backward and optimizer-step time: CUDA events around each phase, median of --repeat steps after
  --warmup untimed ones (what the zoo's `forward_ms`, `backward_ms`, `step_ms` hold);
- GPU-busy time per phase: one extra step under torch.profiler (CUDA activity); the union of the kernel
  intervals that fall inside each phase's window (record_function ranges), so overlapping kernels count
  once. GPU-busy time is what the host/GPU split of costopt/perf/compute.py calls k + b g; wall time minus
  busy time is the host's share. Written as `gpu_busy_forward_ms`, `gpu_busy_backward_ms`,
  `gpu_busy_step_ms`;
- peak memory (torch.cuda.max_memory_allocated).

Modes: `eager` (plain PyTorch) and `compiled` (torch.compile(mode="reduce-overhead"): Inductor kernels
launched through CUDA graphs); the record's `framework` is `eager` or `cuda-graphs`, the names of
`--framework` (data/compute_defaults.toml). Batches run from small to large and stop at the first that
runs out of memory. The whole run keeps to --time-budget-s (default 540 s, under 10 minutes): a
(model, precision, mode) sweep is started only while time is left, and what is done is written.

Output: one zoo-format file per model (`<out>/<model>.json`: `model`, `profiles`, `flops` and
`tensor_sets` copied from the shipped zoo file so the file loads with `--profile`), plus
`<out>/run.json` (environment, what was skipped and why). Nothing is written into costopt/data: a new
zoo measurement lands through tools/build_zoo.py after review.

The pure parts (batch list, interval union, phase assignment, record assembly, the time budget) import
no torch and are tested on the CPU (tests/test_profile_zoo.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_BATCHES = (8, 16, 32, 64, 128, 256, 512)
MODES = {"eager": "eager", "compiled": "cuda-graphs"}
PHASES = ("forward", "backward", "step")


# ---------------------------------------------------------------------------------------------------
# pure parts (no torch)


def parse_batches(text: str) -> list[int]:
    """'8,16,32' -> [8, 16, 32], sorted, unique, each in 1..4096."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= 4096:
            raise ValueError(f"--batches: '{part}' is not a whole number in 1..4096")
        out.append(int(part))
    if not out:
        raise ValueError("--batches: give at least one batch size")
    return sorted(set(out))


def union_ms(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals (same unit in, ms if given in ms): overlapping kernels
    (several streams) count once."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted((s, e) for s, e in intervals if e > s):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def busy_per_phase(windows: dict[str, tuple[float, float]], kernels: list[tuple[float, float]]) -> dict[str, float]:
    """GPU-busy time per phase: each kernel interval clipped to each phase window, then the union per phase.

    `windows`: phase -> (start, end) of its record_function range on the GPU timeline; `kernels`: (start, end)
    of every CUDA kernel and memcpy. Same time unit throughout."""
    out = {}
    for name, (ws, we) in windows.items():
        clipped = [(max(s, ws), min(e, we)) for s, e in kernels if e > ws and s < we]
        out[name] = union_ms(clipped)
    return out


def profile_record(gpu_id: str, precision: str, mode: str, batch: int, wall_ms: dict[str, float],
                   busy_ms: dict[str, float] | None, peak_mem_bytes: int, source: str, day: str) -> dict:
    """One zoo `profiles` entry (the fields costopt/perf/workload.py reads, plus the busy times and the stack)."""
    rec = {"gpu": gpu_id, "precision": precision, "batch": int(batch), "framework": MODES[mode],
           "forward_ms": round(float(wall_ms["forward"]), 6), "backward_ms": round(float(wall_ms["backward"]), 6),
           "step_ms": round(max(float(wall_ms["step"]), 0.0), 6), "peak_mem_bytes": int(peak_mem_bytes),
           "source": source, "date": day}
    if busy_ms is not None:
        for ph in PHASES:
            rec[f"gpu_busy_{ph}_ms"] = round(float(busy_ms.get(ph, 0.0)), 6)
    return rec


class Budget:
    """Wall-clock budget: `start_next(estimate_s)` is True while the next piece of work still fits."""

    def __init__(self, seconds: float, clock=time.monotonic):
        self.clock = clock
        self.t0 = clock()
        self.seconds = float(seconds)

    def left(self) -> float:
        return self.seconds - (self.clock() - self.t0)

    def start_next(self, estimate_s: float) -> bool:
        return self.left() >= estimate_s


def zoo_file(model: str, profiles: list[dict], shipped: dict | None) -> dict:
    """The zoo-format document for one model: its measured profiles, and the shipped file's tensors and
    FLOP counts (so `--profile FILE` loads it)."""
    doc = {"model": model, "profiles": sorted(profiles, key=lambda p: (p["framework"], p["precision"], p["batch"]))}
    if shipped:
        for k in ("description", "sample_unit", "optimizer", "default_batch", "flops", "tensor_sets"):
            if k in shipped:
                doc[k] = shipped[k]
    doc.setdefault("default_batch", min(p["batch"] for p in profiles) if profiles else 1)
    doc.setdefault("tensor_sets", {})
    return doc


# ---------------------------------------------------------------------------------------------------
# measurement (torch, one CUDA device)


def _measure(torch, spec, opt, batch, precision, repeat, warmup):
    from costopt.measure.profile import _autocast

    dev = torch.device("cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        with torch.profiler.record_function("costopt:forward"):
            with _autocast(dev, precision):
                loss = spec.loss_fn(spec.model, batch)
        ev[1].record()
        with torch.profiler.record_function("costopt:backward"):
            loss.backward()
        ev[2].record()
        with torch.profiler.record_function("costopt:step"):
            opt.step()
        ev[3].record()
        torch.cuda.synchronize()
        return [ev[i].elapsed_time(ev[i + 1]) for i in range(3)]

    for _ in range(warmup):
        step()
    times = sorted(step() for _ in range(repeat))
    wall = {ph: sorted(t[i] for t in times)[len(times) // 2] for i, ph in enumerate(PHASES)}
    busy = None
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
        windows, kernels = {}, []
        for e in prof.events():
            dt = getattr(e, "device_type", None)
            on_gpu = dt is not None and "CUDA" in str(dt)
            if e.name.startswith("costopt:") and on_gpu:
                windows[e.name.split(":", 1)[1]] = (e.time_range.start / 1e3, e.time_range.end / 1e3)
            elif on_gpu and not e.name.startswith("costopt:"):
                kernels.append((e.time_range.start / 1e3, e.time_range.end / 1e3))
        if set(windows) == set(PHASES):
            busy = busy_per_phase(windows, kernels)
    except Exception as exc:  # the profiler is optional evidence; the wall times stand without it
        print(f"  profiler failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
    return wall, busy


def run(args) -> int:
    import torch

    from costopt.measure.profile import _make_optimizer, _to_device, build_zoo_model

    if not torch.cuda.is_available():
        print("error: no CUDA device (torch.cuda.is_available() is False): this tool measures a GPU", file=sys.stderr)
        return 2
    budget = Budget(args.time_budget_s)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    day = date.today().isoformat()
    name = torch.cuda.get_device_name(0)
    src = f"tools/profile_zoo.py: torch {torch.__version__}, {name}, CUDA events, median of {args.repeat} after {args.warmup}"
    skipped, per_model = [], {}
    torch.backends.cudnn.benchmark = True
    for model in args.models:
        for precision in args.precisions:
            for mode in args.modes:
                if not budget.start_next(20.0):
                    skipped.append(f"{model} {precision} {mode}: time budget spent")
                    continue
                spec = build_zoo_model(model)
                m = spec.model.cuda().train()
                if precision != "fp32" and spec.sample_unit.endswith(" image"):
                    m = m.to(memory_format=torch.channels_last)
                if mode == "compiled":
                    m = torch.compile(m, mode="reduce-overhead")
                spec.model = m
                opt = _make_optimizer(spec.optimizer, [p for p in m.parameters() if p.requires_grad])
                for b in args.batches:
                    if not budget.start_next(5.0):
                        skipped.append(f"{model} {precision} {mode} batch {b}+: time budget spent")
                        break
                    try:
                        torch.cuda.reset_peak_memory_stats()
                        batch = _to_device(spec.make_batch(b), torch.device("cuda"))
                        wall, busy = _measure(torch, spec, opt, batch, precision, args.repeat, args.warmup)
                    except torch.cuda.OutOfMemoryError:
                        skipped.append(f"{model} {precision} {mode} batch {b}+: out of memory")
                        torch.cuda.empty_cache()
                        break
                    rec = profile_record(args.gpu_id, precision, mode, b, wall, busy,
                                         torch.cuda.max_memory_allocated(), f"{src} ({mode})", day)
                    per_model.setdefault(model, []).append(rec)
                    print(f"{model} {precision} {mode} b{b}: " + ", ".join(
                        f"{ph} {rec[ph + '_ms']:.2f} ms" + (f" (busy {rec['gpu_busy_' + ph + '_ms']:.2f})" if busy else "")
                        for ph in PHASES), flush=True)
                del spec, m, opt
                torch.cuda.empty_cache()
    for model, profiles in per_model.items():
        shipped_path = ROOT / "costopt" / "data" / "zoo" / f"{model}.json"
        shipped = json.loads(shipped_path.read_text(encoding="utf-8")) if shipped_path.exists() else None
        (out / f"{model}.json").write_text(json.dumps(zoo_file(model, profiles, shipped), indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
    (out / "run.json").write_text(json.dumps({"device": name, "torch": torch.__version__, "gpu_id": args.gpu_id,
                                              "date": day, "skipped": skipped,
                                              "seconds": round(args.time_budget_s - budget.left(), 1)},
                                             indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(per_model)} model file(s) to {out}; skipped {len(skipped)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from costopt.perf.workload import list_models

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-id", required=True, help="catalog GPU id the profiles are for (e.g. h200-sxm)")
    ap.add_argument("--out", required=True, help="folder for the zoo-format files")
    ap.add_argument("--models", default=",".join(m for m in list_models() if m != "llama_1b"))
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--precisions", default="fp32,amp_bf16")
    ap.add_argument("--batches", default=",".join(map(str, DEFAULT_BATCHES)))
    ap.add_argument("--time-budget-s", type=float, default=540.0)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        args.batches = parse_batches(args.batches)
        args.models = [m for m in args.models.split(",") if m]
        args.modes = [m for m in args.modes.split(",") if m]
        args.precisions = [p for p in args.precisions.split(",") if p]
        bad = [m for m in args.models if m not in list_models()] + [m for m in args.modes if m not in MODES]
        bad += [p for p in args.precisions if p not in ("fp32", "amp_bf16")]
        if bad:
            raise ValueError(f"unknown: {', '.join(bad)} (models: {', '.join(list_models())}; modes: eager, compiled; "
                             f"precisions: fp32, amp_bf16)")
        if args.repeat < 1 or args.warmup < 0 or args.time_budget_s <= 0:
            raise ValueError("--repeat >= 1, --warmup >= 0, --time-budget-s > 0")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
