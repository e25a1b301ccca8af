"""`costopt profile`: measure one device's training step and write a zoo-format profile.

PyTorch is an optional extra (`pip install 'costopt[profile]'`). Nothing here imports torch at
module import time: `torch` is imported inside the functions, so the core package and the CLI load
without it.

What is measured, per batch size (after `warmup` untimed steps, the median of `repeat` steps, on
random inputs drawn from a normal distribution or uniform token ids, never zeros):

- forward (including the loss), backward and optimizer-step time: CUDA events around each phase on
  a GPU, `time.perf_counter` on the CPU (where every op is synchronous);
- peak memory: `torch.cuda.max_memory_allocated` on a GPU (weights, gradients, optimizer state and
  activations). On the CPU there is no allocator counter, so the figure is the growth of the
  process's resident set size (sampled every millisecond during the steps) over its size before
  the model was built: an estimate that includes the allocator's cached pages, and, because freed
  pages are not always handed back, later (larger) batches can inherit an earlier batch's peak;
- the gradient-ready time of every parameter tensor, in a separate pass with per-tensor hooks
  (`register_post_accumulate_grad_hook`), so that the hooks' own cost does not touch the timings
  above; ready fractions are ready times divided by the hooked pass's backward time, median of 3;
- host<->device copy bandwidth (256 MiB, pinned and pageable; GPU only).

The output has the zoo's format (see `costopt/perf/workload.py`), with one extra key, `environment`,
that records the software, device and copy bandwidths; `costopt solve/predict --profile FILE`
reads it and uses its profiles for the GPU id they carry (`gpu`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Callable

from costopt.core.checks import count, write_text
from costopt.core.files import input_path
from costopt.core.errors import InputError
from costopt.perf.workload import ZOO_DIR

PRECISIONS = ("fp32", "amp_bf16")
# Models whose definitions ship in costopt.measure.torch_models (no torchvision needed).
BUILTIN_CNNS = ("resnet50", "resnet101", "resnet152", "vgg16", "alexnet")
TORCHVISION_CNNS = ("inception_v3", "googlenet", "densenet121")
TRANSFORMERS = ("bert_base", "bert_large", "gpt2", "llama_1b")
IMAGE_SIZE = {"inception_v3": 299}
SEQ_LEN = {"bert_base": 128, "bert_large": 128, "gpt2": 1024, "llama_1b": 2048}
KNOWN_MODELS = BUILTIN_CNNS + TORCHVISION_CNNS + TRANSFORMERS


@dataclass
class ModelSpec:
    """What `profile_model` needs: the model, a batch maker and a loss."""

    name: str
    model: Any  # torch.nn.Module
    make_batch: Callable[[int], Any]
    loss_fn: Callable[[Any, Any], Any]
    optimizer: str  # sgd | adamw
    sample_unit: str
    description: str
    definition: str  # where the model's code comes from


def require_torch():
    """Import torch or raise a one-line, actionable error."""
    try:
        import torch
    except ImportError:
        raise InputError("costopt profile needs PyTorch: pip install 'costopt[profile]' (or pip install torch)") from None
    return torch


def _zoo_entry(model: str) -> dict | None:
    p = ZOO_DIR / f"{model}.json"
    if not p.exists():
        return None
    return json.loads(p.read_text(encoding="utf-8"))


def _image_spec(name: str, model, size: int, definition: str, aux_weight: float = 0.0) -> ModelSpec:
    import torch
    import torch.nn.functional as F

    def make_batch(b: int):
        x = torch.randn(b, 3, size, size)
        y = torch.randint(0, 1000, (b,))
        return x, y

    def loss_fn(m, batch):
        x, y = batch
        out = m(x)
        if isinstance(out, tuple):  # inception/googlenet training outputs: (logits, aux...)
            main, *aux = [o for o in out if o is not None]
            loss = F.cross_entropy(main, y)
            for a in aux:
                loss = loss + aux_weight * F.cross_entropy(a, y)
            return loss
        return F.cross_entropy(out, y)

    zoo = _zoo_entry(name)
    desc = zoo["description"] if zoo and size == IMAGE_SIZE.get(name, 224) else f"{name} ({definition}), {size}x{size} images, SGD momentum 0.9"
    return ModelSpec(name, model, make_batch, loss_fn, "sgd", f"{size}x{size} image", desc, definition)


def _text_spec(name: str, model, seq: int, vocab: int, definition: str) -> ModelSpec:
    import torch

    def make_batch(b: int):
        ids = torch.randint(1, vocab, (b, seq))
        return ids

    def loss_fn(m, ids):
        return m(input_ids=ids, labels=ids).loss

    zoo = _zoo_entry(name)
    desc = zoo["description"] if zoo and seq == SEQ_LEN[name] else f"{name} ({definition}), sequence length {seq}, AdamW"
    return ModelSpec(name, model, make_batch, loss_fn, "adamw", f"{seq} tokens", desc, definition)


def build_zoo_model(name: str, input_size: int | None = None) -> ModelSpec:
    """A zoo model with random weights, built locally (no downloads)."""
    count("--input-size", input_size)
    torch = require_torch()
    if name in BUILTIN_CNNS:
        from costopt.measure import torch_models

        size = input_size or 224
        return _image_spec(name, torch_models.BUILDERS[name](), size,
                           f"costopt.measure.torch_models, torchvision-identical parameters, torch {torch.__version__}")
    if name in TORCHVISION_CNNS:
        try:
            import torchvision.models as tvm
            import torchvision
        except Exception as exc:  # ImportError, or a torchvision built for another torch
            raise InputError(f"model '{name}' needs torchvision beside torch ({type(exc).__name__}: {exc}); "
                             f"built in without it: {', '.join(BUILTIN_CNNS)}") from None
        size = input_size or IMAGE_SIZE.get(name, 224)
        if name == "inception_v3":
            model = tvm.inception_v3(weights=None, aux_logits=True, init_weights=False)
        elif name == "googlenet":
            model = tvm.googlenet(weights=None, aux_logits=True, init_weights=False)
        else:
            model = tvm.densenet121(weights=None)
        return _image_spec(name, model, size, f"torchvision {torchvision.__version__}", aux_weight=0.4)
    if name in TRANSFORMERS:
        try:
            import transformers
        except Exception as exc:
            raise InputError(f"model '{name}' needs the transformers package ({type(exc).__name__}: {exc})") from None
        seq = input_size or SEQ_LEN[name]
        if name in ("bert_base", "bert_large"):
            kw = {} if name == "bert_base" else dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                                     intermediate_size=4096)
            cfg = transformers.BertConfig(max_position_embeddings=max(512, seq), **kw)
            model = transformers.BertForMaskedLM(cfg)
        elif name == "gpt2":
            cfg = transformers.GPT2Config(n_positions=max(1024, seq))
            model = transformers.GPT2LMHeadModel(cfg)
        else:
            cfg = transformers.LlamaConfig(
                vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                rope_theta=500000.0, tie_word_embeddings=True, rms_norm_eps=1e-5,
            )
            model = transformers.LlamaForCausalLM(cfg)
        return _text_spec(name, model, seq, cfg.vocab_size, f"transformers {transformers.__version__}, random init from config")
    raise InputError(f"unknown model '{name}' (known: {', '.join(KNOWN_MODELS)}; or use --model-module pkg.mod:build_fn)")


def load_user_model(target: str, name: str | None = None) -> ModelSpec:
    """`pkg.mod:build_fn` or `path/to/file.py:build_fn`.

    Contract: `build_fn()` returns `(model, make_batch, loss_fn)`:
      - `model`: a `torch.nn.Module` (costopt moves it to the device);
      - `make_batch(batch_size)`: inputs for one step: a tensor, or a tuple/list/dict of tensors
        (costopt moves tensors to the device); random data, not zeros;
      - `loss_fn(model, inputs)`: the scalar loss of one forward pass.
    It may return a 4th item, a dict with any of `optimizer` ("sgd" | "adamw"), `sample_unit`,
    `description`.
    """
    require_torch()
    if ":" not in target:
        raise InputError(f"--model-module wants 'pkg.mod:build_fn' or 'file.py:build_fn', got '{target}'")
    mod_name, fn_name = target.rsplit(":", 1)
    try:
        if mod_name.endswith(".py"):
            path = input_path(mod_name, "model module file").resolve()  # a FIFO or device is not opened
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(mod_name)
    except (ImportError, FileNotFoundError) as exc:
        raise InputError(f"cannot import '{mod_name}': {exc}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InputError(f"'{mod_name}' has no callable '{fn_name}'")
    out = fn()
    if not isinstance(out, tuple) or len(out) not in (3, 4):
        raise InputError(f"{target} must return (model, make_batch, loss_fn[, options dict])")
    model, make_batch, loss_fn = out[:3]
    opts = out[3] if len(out) == 4 and isinstance(out[3], dict) else {}
    label = name or fn_name
    return ModelSpec(label, model, make_batch, loss_fn, str(opts.get("optimizer", "sgd")),
                     str(opts.get("sample_unit", "sample")),
                     str(opts.get("description", f"user model {target}")), f"user module {target}")


# ------------------------------------------------------------------------------------------------
# measurement
# ------------------------------------------------------------------------------------------------


def _to_device(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: fall back to the lifetime peak
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


class _RssPeak:
    """Samples the resident set size in a thread while a block runs."""

    def __init__(self, interval_s: float = 0.001):
        self.interval_s = interval_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(self.interval_s)

    def __enter__(self):
        self.peak = _rss_bytes()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


class _Clock:
    """Phase timer: CUDA events on a GPU, perf_counter on the CPU. Times in ms."""

    def __init__(self, device):
        import torch

        self.cuda = device.type == "cuda"
        self.torch = torch

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def elapsed_ms(self, a, b) -> float:
        if self.cuda:
            return float(a.elapsed_time(b))
        return (b - a) * 1e3

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def _make_optimizer(kind: str, params):
    import torch

    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-5)
    return torch.optim.SGD(params, lr=1e-4, momentum=0.9)


def _autocast(device, precision: str):
    import contextlib

    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def _step_times(spec: ModelSpec, opt, batch, device, precision: str, clock: _Clock) -> tuple[float, float, float]:
    opt.zero_grad(set_to_none=True)
    a = clock.mark()
    with _autocast(device, precision):
        loss = spec.loss_fn(spec.model, batch)
    b = clock.mark()
    loss.backward()
    c = clock.mark()
    opt.step()
    d = clock.mark()
    clock.sync()
    return clock.elapsed_ms(a, b), clock.elapsed_ms(b, c), clock.elapsed_ms(c, d)


def _grad_ready(spec: ModelSpec, opt, batch, device, precision: str, clock: _Clock, passes: int = 3):
    """Per-parameter ready times (ms since backward start) and the hooked backward time, medians."""
    named = [(n, p) for n, p in spec.model.named_parameters() if p.requires_grad]
    stamps: dict[str, Any] = {}
    handles = []
    for n, p in named:
        def hook(_p, _n=n):
            stamps[_n] = clock.mark()
        handles.append(p.register_post_accumulate_grad_hook(hook))
    ready: dict[str, list[float]] = {n: [] for n, _ in named}
    backward: list[float] = []
    try:
        for _ in range(passes):
            stamps.clear()
            opt.zero_grad(set_to_none=True)
            with _autocast(device, precision):
                loss = spec.loss_fn(spec.model, batch)
            clock.sync()
            start = clock.mark()
            loss.backward()
            end = clock.mark()
            clock.sync()
            backward.append(clock.elapsed_ms(start, end))
            for n, s in stamps.items():
                ready[n].append(clock.elapsed_ms(start, s))
    finally:
        for h in handles:
            h.remove()
        opt.zero_grad(set_to_none=True)
    t_b = statistics.median(backward)
    return {n: (statistics.median(v) if v else None) for n, v in ready.items()}, t_b


def _copy_bandwidth(torch, device, mib: int = 256, reps: int = 5) -> dict[str, float]:
    """Host<->device copy bandwidth, GB/s (1e9 bytes/s), pinned and pageable."""
    n = mib * 2**20
    dev = torch.empty(n, dtype=torch.uint8, device=device)
    out: dict[str, float] = {}
    for kind in ("pinned", "pageable"):
        host = torch.empty(n, dtype=torch.uint8, pin_memory=(kind == "pinned"))
        host.random_(0, 255)
        for direction in ("h2d", "d2h"):
            times = []
            for _ in range(reps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                if direction == "h2d":
                    dev.copy_(host, non_blocking=(kind == "pinned"))
                else:
                    host.copy_(dev, non_blocking=(kind == "pinned"))
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            out[f"{direction}_{kind}_gb_per_s"] = round(n / statistics.median(times) / 1e9, 3)
    return out


def _num(x: float) -> float:
    return float(f"{float(x):.6g}")


def profile_model(
    spec: ModelSpec, batches: list[int], *, precision: str = "fp32", device: str = "cpu", gpu_id: str | None = None,
    warmup: int = 3, repeat: int = 10, log: Callable[[str], None] = lambda s: None,
) -> dict:
    """Measure `spec` at every batch size; return a zoo-format dict."""
    torch = require_torch()
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got '{precision}'")
    if not batches or min(batches) < 1:
        raise InputError("give at least one --batch >= 1")
    if warmup < 0 or repeat < 1:
        raise InputError("--warmup must be >= 0 and --repeat >= 1")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: torch sees no CUDA device (torch.cuda.is_available() is False)")
    if device not in ("cpu", "cuda"):
        raise InputError(f"--device must be cpu or cuda, got '{device}'")
    dev = torch.device(device)
    if gpu_id is None:
        gpu_id = "cpu" if device == "cpu" else _slug(torch.cuda.get_device_name(dev))
    torch.manual_seed(0)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    base_rss = _rss_bytes()
    model = spec.model.to(dev)
    model.train()
    if dev.type == "cuda" and precision != "fp32" and spec.sample_unit.endswith(" image"):
        model = model.to(memory_format=torch.channels_last)
    spec.model = model
    opt = _make_optimizer(spec.optimizer, [p for p in model.parameters() if p.requires_grad])
    clock = _Clock(dev)
    today = date.today().isoformat()
    device_name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else (platform.processor() or platform.machine())
    src = (f"costopt profile: torch {torch.__version__}, {device} ({device_name}), "
           f"{'CUDA events' if dev.type == 'cuda' else 'perf_counter, ' + str(torch.get_num_threads()) + ' threads'}, "
           f"median of {repeat} after {warmup} warm-up")
    profiles = []
    ready_record = None
    for b in sorted(set(batches)):
        try:
            batch = _to_device(spec.make_batch(b), dev)
            if dev.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats(dev)
            with _RssPeak() as rss:
                for _ in range(warmup):
                    _step_times(spec, opt, batch, dev, precision, clock)
                times = [_step_times(spec, opt, batch, dev, precision, clock) for _ in range(repeat)]
        except InputError:
            raise
        except Exception as exc:  # the model code (user's or zoo's) cannot run this input: one line, not a crash
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise InputError(f"{spec.name} at batch {b} ({precision}, {device}): {type(exc).__name__}: {first}") from None
        if dev.type == "cuda":
            peak = int(torch.cuda.max_memory_allocated(dev))
            mem_note = "torch.cuda.max_memory_allocated"
        else:
            peak = max(int(rss.peak - base_rss), 1)
            mem_note = "RSS growth over the pre-model baseline (CPU estimate)"
        f, bw, st = (statistics.median(t[i] for t in times) for i in range(3))
        log(f"batch {b}: forward {f:.2f} ms, backward {bw:.2f} ms, step {st:.2f} ms, peak memory {peak / 1e9:.3f} GB")
        profiles.append({
            "backward_ms": _num(bw), "batch": b, "date": today, "forward_ms": _num(f), "gpu": gpu_id,
            "peak_mem_bytes": peak, "precision": precision, "source": f"{src}; memory: {mem_note}",
            "step_ms": _num(max(st, 0.0)),
        })
        ready_record = (b, batch)
    # gradient-ready timeline: a separate hooked pass, at the largest batch
    b_ready, batch = ready_record
    ready, t_b_hooked = _grad_ready(spec, opt, batch, dev, precision, clock)
    log(f"gradient-ready pass (batch {b_ready}): backward with hooks {t_b_hooked:.2f} ms")
    tensors = []
    order = []
    for n, p in model.named_parameters():
        r = ready.get(n)
        frac = 1.0 if r is None or t_b_hooked <= 0 else min(max(r / t_b_hooked, 0.0), 1.0)
        order.append((frac, n, int(p.numel()), bool(p.requires_grad)))
    order.sort(key=lambda t: t[0])  # stable sort: ties (e.g. tensors without a gradient) keep creation order
    running = 0.0
    for frac, n, numel, trainable in order:
        running = max(running, frac)
        tensors.append({"name": n, "numel": numel, "ready_fraction": _num(running), "trainable": trainable})
    env = {
        "torch": torch.__version__, "python": platform.python_version(), "device": device, "device_name": device_name,
        "threads": torch.get_num_threads(), "precision": precision, "warmup": warmup, "repeat": repeat,
        "definition": spec.definition, "grad_ready_batch": b_ready,
        "backward_ms_with_hooks": _num(t_b_hooked),
        "peak_memory_method": "torch.cuda.max_memory_allocated" if dev.type == "cuda" else
        "CPU estimate: resident set growth over the pre-model baseline, sampled every 1 ms",
    }
    if dev.type == "cuda":
        env["copy_bandwidth"] = _copy_bandwidth(torch, dev)
        log("host<->device copy GB/s: " + ", ".join(f"{k} {v}" for k, v in env["copy_bandwidth"].items()))
    else:
        env["copy_bandwidth"] = "not measured: no host<->device copy on the CPU"
    return {
        "default_batch": max(batches),
        "description": spec.description,
        "environment": env,
        "model": spec.name,
        "optimizer": spec.optimizer,
        "profiles": profiles,
        "sample_unit": spec.sample_unit,
        "tensor_sets": {
            "pytorch": {
                "order": "backward",
                "source": f"{src}; gradient-ready pass with hooks at batch {b_ready}, {precision}",
                "tensors": tensors,
            }
        },
    }


def _slug(text: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-") or "gpu"


def write_profile(data: dict, path: str | Path, inputs: list = ()) -> Path:
    """Write a profile JSON atomically, never over one of `inputs` (the files the command read)."""
    return write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n", "--out", inputs)
