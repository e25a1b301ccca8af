"""Buyer sweep: 6 models x budgets $50k-$5M x 2 precisions, default solves on the built-in catalog.

Prints, for every solve, the chosen GPU with its segment and lifecycle, and fails (exit 1) when a
default solve picks a consumer or end-of-life part (issue 12's acceptance check). Also prints the
best left-out design's GPU, so a reader sees what the part filter kept out.

    python tools/sweep_part_classes.py            # the 48 solves
"""

from __future__ import annotations

import sys
import time

import costopt
from costopt.catalog import load_catalog
from costopt.errors import InfeasibleError

MODELS = ("resnet50", "inception_v3", "vgg16", "alexnet", "bert_base", "gpt2")
BUDGETS = (50_000, 200_000, 1_000_000, 5_000_000)
PRECISIONS = ("fp32", "amp_bf16")


def main() -> int:
    cat = load_catalog()
    bad, n, t0 = [], 0, time.perf_counter()
    print(f"{'model':<13}{'budget':>11} {'precision':<9} {'best gpu':<14}{'segment':<12}{'lifecycle':<12}"
          f"{'GPUs':>6} {'best left out':<16}")
    for model in MODELS:
        for precision in PRECISIONS:
            for budget in BUDGETS:
                n += 1
                try:
                    res = costopt.solve(budget, model, precision=precision, top=3)
                except InfeasibleError as exc:
                    print(f"{model:<13}{budget:>11,} {precision:<9} infeasible: {str(exc)[:70]}")
                    continue
                b = res.best
                g = cat.gpus[b["gpu"]]
                left = res.excluded.get("best") or {}
                print(f"{model:<13}{budget:>11,} {precision:<9} {b['gpu']:<14}{g.segment:<12}{g.lifecycle:<12}"
                      f"{b['total_gpus']:>6} {left.get('gpu', '-'):<16}")
                if g.segment == "consumer" or g.lifecycle == "end_of_life":
                    bad.append((model, budget, precision, b["gpu"]))
    print(f"{n} solves in {time.perf_counter() - t0:.0f} s; consumer or end-of-life picks: {len(bad)}")
    for row in bad:
        print("  ", row)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
