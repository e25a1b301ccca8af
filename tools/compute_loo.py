#!/usr/bin/env python3
"""Leave-one-GPU-out check of the compute roofline (evidence (c) of costopt/perf/compute.py).

For every GPU k with published single-GPU cells (data/published/lambda_single_gpu.json) other than
the measured reference, the achieved fractions are refitted WITHOUT any of k's figures (k's own
published evidence (b) withheld, and, when k is a table's fit reference, that whole table), then each
of k's cells is predicted from its table's reference GPU j:

    X_k,pred = X_j * smax(r_j, h_l) / smax(r_k, h_l)    r = F / (P e_mm) + B / (W e_bw) per sample, h_l
                                                        the fitted host time per sample of Lambda model l,
                                                        smax as in the fit (costopt/perf/compute.py)

and compared with the published X_k. The same table with the fractions fitted on all cells (in
sample) is printed after it. Cells whose reference is k itself (H100 SXM in the v1 tables) are
skipped. Prints per-cell rows, per-GPU medians, and the median and 90th percentile of |error|.

`--json PATH` writes the per-cell rows (leave-one-GPU-out and in-sample: gpu, table, precision,
model, reference, observed, predicted, error = predicted / observed - 1) as data, e.g. for
prediction ranges built from the leave-one-GPU-out residuals.

Usage:  python tools/compute_loo.py [--catalog NAME_OR_PATH] [--quiet] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from costopt.hardware.catalog import load_catalog
from costopt.perf.compute import (_FIT_ZOO_MODEL, _TABLE_FIT_REFERENCE, _zoo_costs, fit_fractions, host_p,
                                  load_absolute, load_published)
from costopt.perf.host_gpu import smax
from costopt.perf.workload import load_workload

REFERENCE = "h200-sxm"


def _precision(pc: str) -> str:
    return "fp32" if pc == "fp32" else "amp_bf16"


def cells_errors(cat, withhold_each: bool) -> list[dict]:
    pub = load_published()
    costs = _zoo_costs()
    gpus = sorted({c.gpu for c in pub.cells if c.gpu in cat.gpus and c.gpu != REFERENCE})
    rows = []
    for k in gpus:
        fr = fit_fractions(cat, REFERENCE, frozenset({k}) if withhold_each else frozenset())
        for c in pub.cells:
            if c.gpu != k or c.lambda_model not in _FIT_ZOO_MODEL:
                continue
            j = _TABLE_FIT_REFERENCE[c.table]
            if j == k:
                continue
            xj = pub.value(c.table, c.precision, j, c.lambda_model)
            if not xj:
                continue
            cost = costs[_FIT_ZOO_MODEL[c.lambda_model]]
            gk, gj = cat.gpus[k], cat.gpus[j]
            prec = _precision(c.precision)
            if gk.peak_flops(prec) is None:
                prec = "amp_fp16"
            pj = prec if gj.peak_flops(prec) is not None else "amp_bf16"
            um, ub, note = fr.for_gpu(gk, prec)
            h = fr.host[c.precision].get(c.lambda_model, 0.0)
            q = host_p()
            pred = xj * float(smax(fr.roofline_s(cost, gj, pj), h, q) / smax(fr.roofline_s(cost, gk, prec), h, q))
            rows.append({"gpu": k, "table": c.table, "precision": c.precision, "model": c.lambda_model,
                         "reference": j, "observed": c.samples_per_s, "predicted": pred,
                         "error": pred / c.samples_per_s - 1.0, "fractions": note})
    return rows


def absolute_checks(cat) -> list[dict]:
    """TensorFlow 2017 single-GPU figures (K80, P100 SXM2; data/published/tf_bench_2017_single_gpu.json)
    against what the product predicts (compute.estimate from the H200 measurement, fp32, the figure's
    batch): fitted on every cell, with that one cell left out of the fit ('gpu/model'), and with the
    whole GPU left out (its generation then borrows the nearest one's fractions)."""
    rows = []
    for c in load_absolute():
        g = cat.gpus.get(c["gpu"])
        if g is None:
            continue
        w = load_workload(c["model"])
        row = {"gpu": c["gpu"], "model": c["model"], "batch": c["batch_per_gpu"], "observed": c["samples_per_s"],
               "in_fit": c["in_fit"]}
        for label, held in (("in_sample", frozenset()), ("cell_out", frozenset({f"{c['gpu']}/{c['model']}"})),
                            ("gpu_out", frozenset({c["gpu"]}))):
            est = w.compute(g, "fp32", c["batch_per_gpu"], cat, withhold=held)
            pred = c["batch_per_gpu"] / est.iteration_s
            row[label] = {"predicted": pred, "error": pred / c["samples_per_s"] - 1.0, "source": est.source}
        rows.append(row)
    return rows


def print_absolute(rows: list[dict]) -> None:
    print("## TensorFlow 2017 single-GPU figures (Kepler, Pascal): the product's prediction, fp32")
    print(f"{'gpu':<11}{'model':<14}{'batch':>6}{'published':>10}   {'in sample':>16}   {'cell left out':>16}   "
          f"{'GPU left out':>16}  source (in sample)")
    for r in rows:
        cells = "   ".join(f"{r[k]['predicted']:>7.1f} ({r[k]['error']:>+5.0%})" for k in ("in_sample", "cell_out", "gpu_out"))
        print(f"{r['gpu']:<11}{r['model']:<14}{r['batch']:>6}{r['observed']:>10.1f}   {cells}  {r['in_sample']['source']}"
              f"{'' if r['in_fit'] else '  (not fitted)'}")
    for k in ("in_sample", "cell_out", "gpu_out"):
        e = np.abs([r[k]["error"] for r in rows if r["in_fit"]])
        print(f"{k:>10}: median |error| {np.median(e):.1%} over the {len(e)} fitted cells")
    print()


def summary(rows: list[dict]) -> tuple[float, float]:
    e = np.abs([r["error"] for r in rows])
    return float(np.median(e)), float(np.percentile(e, 90))


def print_table(title: str, rows: list[dict], quiet: bool) -> None:
    print(f"## {title}")
    if not quiet:
        print(f"{'gpu':<16}{'table':<11}{'prec':<6}{'model':<18}{'vs':<10}{'published':>10}{'predicted':>11}{'error':>8}  fractions")
        for r in rows:
            print(f"{r['gpu']:<16}{r['table']:<11}{r['precision']:<6}{r['model']:<18}{r['reference']:<10}"
                  f"{r['observed']:>10.1f}{r['predicted']:>11.1f}{r['error']:>+8.1%}  {r['fractions']}")
    print(f"\n{'gpu':<16}{'cells':>6}{'median |err|':>14}{'max |err|':>11}")
    for g in sorted({r["gpu"] for r in rows}):
        e = np.abs([r["error"] for r in rows if r["gpu"] == g])
        print(f"{g:<16}{len(e):>6}{np.median(e):>14.1%}{e.max():>11.1%}")
    med, p90 = summary(rows)
    print(f"\nall {len(rows)} cells: median |error| {med:.1%}, p90 |error| {p90:.1%}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", default=None)
    ap.add_argument("--quiet", action="store_true", help="only the per-GPU and overall summaries")
    ap.add_argument("--json", default=None, help="write the per-cell rows of both tables to this JSON file")
    args = ap.parse_args(argv)
    cat = load_catalog(args.catalog)
    loo, ins = cells_errors(cat, True), cells_errors(cat, False)
    print_table("Leave one GPU out (the GPU's published figures withheld from the fit)", loo, args.quiet)
    print_table("In sample (fractions fitted on every cell)", ins, True)
    absolute = absolute_checks(cat)
    print_absolute(absolute)
    if args.json:
        med, p90 = summary(loo)
        doc = {"what": "compute roofline residuals per published single-GPU cell (tools/compute_loo.py)",
               "error": "predicted / published - 1", "catalog": cat.catalog.name,
               "leave_one_gpu_out": {"median_abs_error": med, "p90_abs_error": p90, "rows": loo},
               "in_sample": {"median_abs_error": summary(ins)[0], "p90_abs_error": summary(ins)[1], "rows": ins},
               "tf_bench_2017": absolute}
        Path(args.json).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
