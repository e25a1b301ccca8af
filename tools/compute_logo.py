#!/usr/bin/env python3
"""Leave-one-GPU-out error of the compute model on every shipped single-GPU cell, and its property checks.

Cells (all shipped, each at its own batch):
  - Lambda single-GPU cells (data/published/lambda_single_gpu.json): the fractions refitted without any of
    the GPU's figures, the cell predicted from its table's reference GPU (tools/compute_loo.py
    `cells_errors`);
  - TensorFlow 2017 single-GPU cells (K80, P100; data/published/tf_bench_2017_single_gpu.json, the fitted
    ones): the product's own prediction from the H200 measurement with the whole GPU left out
    (tools/compute_loo.py `absolute_checks`, `gpu_out`).
Error = predicted / published - 1; printed: median, p90 and worst of |error| and the worst ratio
max(pred/obs, obs/pred), overall and per table.

Properties, over every zoo model x reference-catalog GPU x precision the model has x batch 1..1024
(powers of two and the midpoints between them):
  - monotone: iteration time never falls as the batch grows (count of violating steps);
  - same silicon: pairs of one die (V100 16/32 GB, A100 40/80 GB, B200/B300, H100 SXM/H200 not: other
    memory) predicted within their spec ratio: t_a / t_b inside [min(1, P_b/P_a, W_b/W_a),
    max(1, P_b/P_a, W_b/W_a)] (host time is the same on both, so 1 is inside) (count of violations).

`BEFORE` holds the figures this script printed on main at be01ff2 (2026-12-02, before the host/GPU split
of costopt/perf/compute.py); the run prints them beside the current ones.

`--clock GPU=MHZ[/BOOST]` (repeatable) is a what-if: the GPU's sustained clock under load set to MHZ against its
rated boost (the catalog's `boost_clock_mhz`, or BOOST when the catalog has none), so its peaks scale by
MHZ / BOOST. The Lambda cells see it in the refitted fractions and in the cell predicted; the TensorFlow 2017
cells go through the product's own path, whose fractions are always fitted on the built-in catalog
(compute.fit_fractions), so there it reaches only the GPU predicted. Nothing is written but the fit cache. An
unknown GPU, a clock that is not a positive number, or a GPU with no rated boost and no BOOST exits 2.

`--sweep` also prints, for smooth-max exponents p = 2, 3, 4, 6, 8 (data/compute_defaults.toml), the
in-sample error of the H200 sweep fit (every record of shared/data/h200/train_step.jsonl: predicted
iteration against the iteration timed whole) and the leave-one-GPU-out figures: how p was chosen.

Usage:  python tools/compute_logo.py [--json PATH] [--sweep] [--shared DIR] [--clock GPU=MHZ[/BOOST] ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from costopt.core.errors import InputError  # noqa: E402
from costopt.hardware.catalog import load_catalog  # noqa: E402
from costopt.perf.workload import list_models, load_workload  # noqa: E402

import compute_loo  # noqa: E402

SAME_SILICON = (("v100-sxm2-16gb", "v100-sxm2-32gb"), ("v100-pcie-16gb", "v100-pcie-32gb"),
                ("a100-sxm-40gb", "a100-sxm-80gb"), ("a100-pcie-40gb", "a100-pcie-80gb"), ("b200", "b300"))
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
# printed by this script at be01ff2 (before the host/GPU split)
BEFORE = {"lambda": {"cells": 66, "median": 0.067, "p90": 0.196, "worst_ratio": 1.33},
          "tf2017": {"cells": 6, "median": 0.229, "p90": 0.515, "worst_ratio": 1.77},
          "all": {"cells": 72, "median": 0.070, "p90": 0.226, "worst_ratio": 1.77},
          "monotone_violations": 1447, "same_silicon_violations": 200}


def _stats(err: list[float]) -> dict:
    e = np.abs(np.array(err, dtype=float))
    ratio = np.maximum(1.0 + np.array(err), 1.0 / (1.0 + np.array(err)))
    return {"cells": int(len(e)), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
            "worst_ratio": float(ratio.max())}


def logo(cat) -> dict:
    lam = compute_loo.cells_errors(cat, True)
    tf = [r for r in compute_loo.absolute_checks(cat) if r["in_fit"]]
    e_l = [r["error"] for r in lam]
    e_t = [r["gpu_out"]["error"] for r in tf]
    return {"lambda": _stats(e_l), "tf2017": _stats(e_t), "all": _stats(e_l + e_t),
            "rows": [{"table": r["table"], "gpu": r["gpu"], "model": r["model"], "precision": r["precision"],
                      "error": r["error"]} for r in lam]
            + [{"table": "tf2017", "gpu": r["gpu"], "model": r["model"], "precision": "fp32",
                "error": r["gpu_out"]["error"]} for r in tf]}


def with_clocks(cat, clocks: dict[str, tuple[float, float | None]]):
    """A copy of `cat` with each named GPU's sustained clock set (what-if; `--clock`): {gpu: (MHz, rated boost MHz
    or None for the catalog's)}. Raises InputError on an unknown GPU or a GPU with no rated boost given."""
    unknown = sorted(set(clocks) - {g.id for g in cat.gpu})
    if unknown:
        raise InputError(f"--clock: unknown GPU {unknown[0]!r} (not in {cat.catalog.name})")
    gpus = []
    for g in cat.gpu:
        if g.id in clocks:
            mhz, boost = clocks[g.id]
            boost = boost if boost is not None else g.boost_clock_mhz
            if boost is None:
                raise InputError(f"--clock {g.id}: the catalog gives no rated boost clock for it; write MHZ/BOOST")
            g = g.model_copy(update={"boost_clock_mhz": float(boost), "sustained_clock_mhz": float(mhz)})
        gpus.append(g)
    out = cat.model_copy(update={"gpu": gpus})
    out.__dict__.pop("gpus", None)  # cached lookups must see the copied list
    return out


def _clock_arg(text: str) -> tuple[str, tuple[float, float | None]]:
    gpu, sep, value = text.partition("=")
    mhz, _, boost = value.partition("/")
    try:
        nums = [float(mhz)] + ([float(boost)] if boost else [])
    except ValueError:
        nums = []
    if not sep or not gpu or not nums or not all(np.isfinite(x) and x > 0 for x in nums):
        raise argparse.ArgumentTypeError(f"{text!r}: expected GPU=MHZ or GPU=MHZ/BOOST with positive numbers")
    return gpu, (nums[0], nums[1] if len(nums) > 1 else None)


def _iteration(w, g, prec, b, cat) -> float | None:
    try:
        return w.compute(g, prec, b, cat).iteration_s
    except InputError:
        return None


def properties(cat) -> dict:
    mono, silicon, cases = 0, 0, 0
    worst_mono: tuple = (0.0, "")
    for m in list_models():
        w = load_workload(m)
        for prec in w.precisions():
            for g in cat.gpus.values():
                prev = None
                for b in BATCHES:
                    t = _iteration(w, g, prec, b, cat)
                    if t is None:
                        break
                    if prev is not None and t < prev * (1 - 1e-9):
                        mono += 1
                        if prev / t - 1 > worst_mono[0]:
                            worst_mono = (prev / t - 1, f"{m} {g.id} {prec} batch {b}")
                    prev = t
            for a, bb in SAME_SILICON:
                if a not in cat.gpus or bb not in cat.gpus:
                    continue
                ga, gb = cat.gpus[a], cat.gpus[bb]
                pa, pb = ga.peak_flops(prec), gb.peak_flops(prec)
                if not pa or not pb:
                    continue
                r = (pb / pa, gb.memory_bandwidth_gbs / ga.memory_bandwidth_gbs, 1.0)
                for b in (8, 32, 64, 128, 256):
                    ta, tb = _iteration(w, ga, prec, b, cat), _iteration(w, gb, prec, b, cat)
                    if ta is None or tb is None:
                        continue
                    cases += 1
                    if not min(r) * (1 - 1e-6) <= ta / tb <= max(r) * (1 + 1e-6):
                        silicon += 1
    return {"monotone_violations": mono, "worst_monotone": worst_mono[1],
            "same_silicon_violations": silicon, "same_silicon_cases": cases}


def sweep_error(cat, shared: Path) -> dict:
    """|ln(predicted / measured iteration)| over every H200 record: median, p90, max."""
    e = []
    for line in (shared / "data" / "h200" / "train_step.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        est = load_workload(d["model"]).compute(cat.gpus["h200-sxm"], d["precision"], int(d["batch"]), cat)
        e.append(abs(np.log(est.iteration_s * 1e3 / d["iteration_ms"])))
    return {"records": len(e), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)), "max": float(max(e))}


def _set_p(p: float) -> None:
    from costopt.perf import compute, host_gpu

    host_gpu.defaults()["phase"]["smooth_max_exponent"] = p
    compute._SPLITS.clear()
    compute._fit_cached.cache_clear()
    compute._fit_class.cache_clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--clock", action="append", type=_clock_arg, default=[], metavar="GPU=MHZ[/BOOST]",
                    help="what-if: this GPU's sustained clock (repeatable)")
    args = ap.parse_args(argv)
    cat = load_catalog()
    if args.clock:
        try:
            cat = with_clocks(cat, dict(args.clock))
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print("what-if: " + ", ".join(f"{g.id} at {g.sustained_clock_mhz:g} of {g.boost_clock_mhz:g} MHz"
                                      for g in cat.gpu if g.id in dict(args.clock)))
    if args.sweep:
        from costopt.perf.host_gpu import smooth_p

        shipped = smooth_p()
        print(f"{'p':>4}  {'H200 sweep |ln err| median / p90 / max':>40}  {'LOGO all: median / p90 / worst x':>34}")
        for p in (2.0, 3.0, 4.0, 6.0, 8.0):
            _set_p(p)
            sw, lg = sweep_error(cat, Path(args.shared)), logo(cat)["all"]
            print(f"{p:>4g}  {sw['median']:>18.1%} / {sw['p90']:.1%} / {sw['max']:.1%}"
                  f"  {lg['median']:>18.1%} / {lg['p90']:.1%} / {lg['worst_ratio']:.2f}{'  (shipped)' if p == shipped else ''}")
        _set_p(shipped)
        print()
    res = logo(cat)
    res.update(properties(cat))
    print(f"{'cells':<8}{'n':>4}  {'median':>8} {'p90':>8} {'worst x':>8}   before: median / p90 / worst x")
    for k in ("lambda", "tf2017", "all"):
        s, b = res[k], BEFORE[k]
        print(f"{k:<8}{s['cells']:>4}  {s['median']:>8.1%} {s['p90']:>8.1%} {s['worst_ratio']:>8.2f}   "
              f"{b['median']:.1%} / {b['p90']:.1%} / {b['worst_ratio']:.2f}")
    print("target (issue 24): median <= 8%, p90 <= 15%, worst <= 1.5x")
    print(f"monotone violations (batch 1-1024): {res['monotone_violations']} (before {BEFORE['monotone_violations']})"
          f"{'; worst ' + res['worst_monotone'] if res['worst_monotone'] else ''}")
    print(f"same-silicon pairs outside their spec ratio: {res['same_silicon_violations']} of "
          f"{res['same_silicon_cases']} (before {BEFORE['same_silicon_violations']})")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
