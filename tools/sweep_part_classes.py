"""Buyer sweep: 6 models x budgets $50k-$5M x 2 precisions, default solves on the built-in catalog.

Prints, for every solve, the chosen GPU with its segment and lifecycle, and fails (exit 1) when a
default solve picks a consumer or end-of-life part (issue 12's acceptance check). Also prints the
best left-out design's GPU, so a reader sees what the part filter kept out, and checks every Why line
against the numbers of the designs it names (`why_claims_hold`, written here from the rules in
costopt/purchase/why.py's docstring, not by calling it): a Why line that says something false fails the sweep.

    python tools/sweep_part_classes.py            # the 48 solves
"""

from __future__ import annotations

import sys
import time

import costopt
from costopt.hardware.catalog import load_catalog
from costopt.core.errors import InfeasibleError

MODELS = ("resnet50", "inception_v3", "vgg16", "alexnet", "bert_base", "gpt2")
BUDGETS = (50_000, 200_000, 1_000_000, 5_000_000)
PRECISIONS = ("fp32", "amp_bf16")


def why_claims_hold(res) -> list[str]:
    """What is false in a throughput solve's Why line (empty: every claim checks out).

    Claims (objective throughput): the other GPU type's design is the best design of a GPU type other
    than the winner's (the second row of the per-GPU table), no faster than the winner, and the line
    quotes "+X% throughput" with X = round(100 (tau_w / tau_o - 1)); a near tie, when named, costs less
    than the winner, reaches at least 95% of its throughput, and the line quotes both figures; an
    estimated compute time is called an estimate."""
    b, f, why, bad = res.best, res.why_facts, res.why, []
    tw = b["throughput_samples_per_s"]
    other = f.get("other_gpu")
    if other is not None:
        if other["gpu"] == b["gpu"]:
            bad.append("other GPU design has the winner's GPU")
        second = res.best_per_gpu[1] if len(res.best_per_gpu) > 1 else None
        if second is None or second["gpu"] != other["gpu"] or \
                abs(second["throughput_samples_per_s"] - other["throughput_samples_per_s"]) > 1e-6 * tw:
            bad.append("other GPU design is not the best of another GPU type")
        to = other["throughput_samples_per_s"]
        if to > tw * (1 + 1e-9):
            bad.append("the other GPU type's design is faster than the winner")
        if f"+{(tw / to - 1) * 100:.0f}% throughput" not in why:
            bad.append(f"throughput gain not quoted as +{(tw / to - 1) * 100:.0f}%")
    near = f.get("near_cheaper")
    if near is not None:
        if not (near["cost_usd"] < b["cost_usd"] and near["throughput_samples_per_s"] >= 0.95 * tw * (1 - 1e-12)):
            bad.append("near tie is not cheaper or not within 5% of the throughput")
        if f"{(near['throughput_samples_per_s'] / tw - 1) * 100:+.1f}% throughput" not in why:
            bad.append("near tie's throughput change not quoted")
    if b["compute_source"] != "measured" and "estimate" not in why:
        bad.append("estimated compute not called an estimate")
    return bad


def main() -> int:
    cat = load_catalog()
    bad, wrong, n, t0 = [], [], 0, time.perf_counter()
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
                false = why_claims_hold(res)
                if false:
                    wrong.append((model, budget, precision, "; ".join(false), res.why))
    print(f"{n} solves in {time.perf_counter() - t0:.0f} s; consumer or end-of-life picks: {len(bad)}; "
          f"Why lines with a false claim: {len(wrong)}")
    for row in bad + wrong:
        print("  ", row)
    return 1 if bad or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
