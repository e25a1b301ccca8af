#!/usr/bin/env python3
"""Write costopt/data/residuals.json: the out-of-sample residuals behind every 80% range.

    python tools/build_residuals.py [--date YYYY-MM-DD] [--shared DIR] [--check]

Every residual is r = ln(observed / predicted) of a prediction made WITHOUT the observation's own
source (communication) or GPU (compute), with the row it comes from:

communication   every shipped measurement row (costopt/data/validation, measurement format), predicted
                by `tools/fit_defaults.py`'s leave-one-source-out fit (parameters fitted on the other
                sources' rows). The rows are calibrated to their own 1-GPU figure, so r is the error of
                the communication model (and of everything beyond one GPU's compute). Each row carries
                `exposed_share`, x = (t_iter - t_compute) / t_iter of that prediction: the ranges scale
                r / x by a design's own x (costopt/perf/intervals.py).
compute         per evidence kind of costopt/perf/compute.py:
  measured      every H200 record of shared/data/h200/train_step.jsonl: the iteration costopt predicts on
                the measured GPU (forward + backward + step of the host + GPU fit of the zoo's sweep)
                against the iteration timed whole in the same run: r = ln(predicted / iteration).
  published     (i) same-class transfer: within one Lambda table and precision, the ratio GPU/reference of
                one BERT variant standing in for the other's (bert_base_squad <-> bert_large_squad), as the
                zoo's gpt2 -> bert_base and resnet101/152 -> resnet50 use a same-class ratio;
                (ii) cross-table transfer: a GPU pair's ratio in one Lambda table (v1, 2024) standing in for
                the same pair's ratio in the other (v2, 2025), both directions (another container and
                software stack: what a ratio from one harness meets in a buyer's).
  roofline      the leave-one-GPU-out cells of tools/compute_loo.py (fractions refitted without the GPU), and
                the TensorFlow 2017 single-GPU figures of K80 and P100 predicted with their GPU left out
                (`absolute_checks`: another harness and era, the only Kepler/Pascal evidence).

It also records the coverage of the 80% ranges those residuals give (costopt/perf/intervals.py), each
figure out of sample: communication per left-out source (overall and per stack), compute per left-out
GPU (published, roofline) or model (measured).

`--check` compares with the shipped file instead of writing (exit 1 when they differ). The output
depends only on the shipped rows, the priors, the published tables, the H200 records and `--date`
(default: the date in the shipped file), and is written with sorted keys and 6 significant digits
(same inputs, same bytes). Takes about 1.5 min (the leave-one-source-out fit).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from costopt import __version__  # noqa: E402
from costopt.hardware.catalog import load_catalog  # noqa: E402
from costopt.perf.compute import ABSOLUTE_PATH, _TABLE_FIT_REFERENCE, load_published  # noqa: E402
from costopt.perf.intervals import RESIDUALS_PATH, coverage_by_group, coverage  # noqa: E402
from costopt.perf.workload import load_workload  # noqa: E402
from shipped_file import check_or_write, in_repo  # noqa: E402

DEFAULT_SHARED = ROOT.parent / "shared"
TRAIN_STEP = Path("data") / "h200" / "train_step.jsonl"
TRAIN_STEP_DATE = "2026-11-30"
# Lambda models of one class (a published ratio of one stands for the other's: costopt/perf/compute.py (b))
SAME_CLASS = (("bert_base_squad", "bert_large_squad"),)


def _f(v: float) -> float:
    return float(f"{float(v):.6g}")


def communication(date: str) -> list[dict]:
    import fit_defaults

    _, rep = fit_defaults.build(date)
    df = rep["frame"]
    out = []
    for rec in df.to_dict(orient="records"):
        meas, pred = float(rec["measured_samples_per_s"]), float(rec["predicted_loso"])
        out.append({"source": rec["source"], "line": int(rec["line"]), "stack": rec["stack"], "model": rec["model"],
                    "gpu": rec["gpu"], "total_gpus": int(rec["gpus_per_node"]) * int(rec["nodes"]),
                    "strategy": rec["strategy"], "measured_samples_per_s": _f(meas),
                    "predicted_loso_samples_per_s": _f(pred), "log_residual": _f(math.log(meas / pred)),
                    "exposed_share": _f(rec["exposed_share_loso"])})
    return out


def measured(shared: Path) -> list[dict]:
    path = shared / TRAIN_STEP
    if not path.exists():
        sys.exit(f"error: {path} is missing: give the shared folder with --shared DIR")
    out = []
    cat = load_catalog()
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        d = json.loads(line)
        # the iteration costopt predicts for a measured profile (the host + GPU fit of the zoo's sweep,
        # costopt/perf/compute.py) against the iteration timed whole in the same run
        est = load_workload(d["model"]).compute(cat.gpus["h200-sxm"], d["precision"], int(d["batch"]), cat)
        phases = est.iteration_s * 1e3
        out.append({"kind": "measured", "group": d["model"], "gpu": "h200-sxm", "model": d["model"],
                    "precision": d["precision"], "batch": int(d["batch"]),
                    "observed": _f(d["iteration_ms"]), "predicted": _f(phases), "unit": "ms per iteration",
                    "log_residual": _f(math.log(phases / d["iteration_ms"])),
                    "source": in_repo(f"shared/{TRAIN_STEP.as_posix()}") + f" line {i}", "date": TRAIN_STEP_DATE})
    return out


def published() -> list[dict]:
    pub = load_published()
    out = []
    # (i) same-class transfer inside one table
    for c in pub.cells:
        j = _TABLE_FIT_REFERENCE.get(c.table)
        if j is None or c.gpu == j:
            continue
        for a, b in SAME_CLASS:
            for own, other in ((a, b), (b, a)):
                if c.lambda_model != own:
                    continue
                xj_own = pub.value(c.table, c.precision, j, own)
                xk_oth, xj_oth = (pub.value(c.table, c.precision, c.gpu, other),
                                  pub.value(c.table, c.precision, j, other))
                if not (xj_own and xk_oth and xj_oth):
                    continue
                obs, pred = c.samples_per_s / xj_own, xk_oth / xj_oth
                out.append({"kind": "published", "group": c.gpu, "gpu": c.gpu, "model": own,
                            "precision": c.precision, "how": f"same class: {other} ratio for {own}",
                            "reference": j, "observed": _f(obs), "predicted": _f(pred), "unit": "ratio to reference",
                            "log_residual": _f(math.log(obs / pred)),
                            "source": f"{pub.tables[c.table]['source']}", "date": pub.tables[c.table]["date"]})
    # (ii) cross-table transfer: every GPU pair in both tables
    tables = sorted(pub.tables)
    for t_obs, t_pred in itertools.permutations(tables, 2):
        gpus_obs = {c.gpu for c in pub.cells if c.table == t_obs}
        gpus_pred = {c.gpu for c in pub.cells if c.table == t_pred}
        both = sorted(gpus_obs & gpus_pred)
        for k, j in itertools.permutations(both, 2):
            if k > j:  # one direction per pair and table order; the other order gives -r
                continue
            for c in pub.cells:
                if c.table != t_obs or c.gpu != k:
                    continue
                xj = pub.value(t_obs, c.precision, j, c.lambda_model)
                pk, pj = (pub.value(t_pred, c.precision, k, c.lambda_model),
                          pub.value(t_pred, c.precision, j, c.lambda_model))
                if not (xj and pk and pj):
                    continue
                obs, pred = c.samples_per_s / xj, pk / pj
                out.append({"kind": "published", "group": k, "gpu": k, "model": c.lambda_model,
                            "precision": c.precision, "how": f"cross-table: {t_pred} ratio for {t_obs}",
                            "reference": j, "observed": _f(obs), "predicted": _f(pred), "unit": "ratio to reference",
                            "log_residual": _f(math.log(obs / pred)),
                            "source": f"{pub.tables[t_obs]['source']}; {pub.tables[t_pred]['source']}",
                            "date": max(pub.tables[t_obs]["date"], pub.tables[t_pred]["date"])})
    return out


def roofline() -> list[dict]:
    import compute_loo

    pub = load_published()
    out = []
    for r in compute_loo.cells_errors(load_catalog(), True):
        obs, pred = r["observed"], r["predicted"]
        out.append({"kind": "roofline", "group": r["gpu"], "gpu": r["gpu"], "model": r["model"],
                    "precision": r["precision"], "reference": r["reference"], "observed": _f(obs),
                    "predicted": _f(pred), "unit": "samples/s", "log_residual": _f(math.log(obs / pred)),
                    "how": "leave one GPU out (tools/compute_loo.py)",
                    "source": pub.tables[r["table"]]["source"], "date": pub.tables[r["table"]]["date"]})
    # TensorFlow 2017 single-GPU figures (K80, P100: the only Kepler/Pascal evidence), each predicted by the
    # product with its whole GPU left out of the fit (another harness and era: what an old GPU's roofline meets)
    meta = json.loads(ABSOLUTE_PATH.read_text(encoding="utf-8"))
    for r in compute_loo.absolute_checks(load_catalog()):
        held = r["gpu_out"]
        if not str(held["source"]).startswith("roofline"):
            continue
        obs, pred = r["observed"], held["predicted"]
        out.append({"kind": "roofline", "group": r["gpu"], "gpu": r["gpu"], "model": r["model"],
                    "precision": "fp32", "reference": "h200-sxm", "observed": _f(obs), "predicted": _f(pred),
                    "unit": "samples/s", "log_residual": _f(math.log(obs / pred)),
                    "how": "TensorFlow 2017 single-GPU figure, GPU left out of the fit (tools/compute_loo.py absolute_checks)",
                    "source": meta["source"], "date": meta["date"]})
    return out


def build(date: str, shared: Path) -> tuple[str, dict]:
    comm = communication(date)
    comp = measured(shared) + published() + roofline()
    r = np.array([c["log_residual"] for c in comm])
    stack = np.array([c["stack"] for c in comm])
    src = np.array([c["source"] for c in comm])
    share = np.array([c["exposed_share"] for c in comm])
    inside = coverage(r, share, stack, src)
    cov: dict = {"communication": {"all": {"rows": len(r), "inside": _f(inside.mean())}},
                 "compute": {}}
    for s in sorted(set(stack.tolist())):
        m = stack == s
        cov["communication"][s] = {"rows": int(m.sum()), "inside": _f(inside[m].mean())}
    for kind in ("measured", "published", "roofline"):
        rows = [c for c in comp if c["kind"] == kind]
        ins = coverage_by_group(np.array([c["log_residual"] for c in rows]), np.array([c["group"] for c in rows]))
        cov["compute"][kind] = {"rows": len(rows), "groups": len({c["group"] for c in rows}),
                                "inside": _f(ins.mean())}
    data = {
        "built_by": f"tools/build_residuals.py (costopt {__version__})",
        "date": date,
        "description": ("ln(observed / predicted) of out-of-sample predictions: communication rows predicted by the "
                        "leave-one-source-out fit of tools/fit_defaults.py; compute residuals per evidence kind "
                        "(measured, published, roofline; see the tool's docstring). costopt/perf/intervals.py combines "
                        "them into each prediction's 80% range."),
        "communication": comm,
        "compute": comp,
        "coverage": cov,
    }
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", cov


def _shipped_date() -> str:
    if RESIDUALS_PATH.exists():
        return json.loads(RESIDUALS_PATH.read_text(encoding="utf-8")).get("date", "unknown")
    import fit_defaults

    return fit_defaults._shipped_date()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", default=None, help="date recorded (default: the shipped file's)")
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="shared folder holding data/h200/")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, do not write")
    a = ap.parse_args()
    text, cov = build(a.date or _shipped_date(), a.shared)
    check_or_write(RESIDUALS_PATH, text, a.check)
    print(f"wrote {RESIDUALS_PATH}")
    print("80% range coverage, out of sample:")
    for s, v in cov["communication"].items():
        print(f"  communication {s:<6} rows {v['rows']:>4}  inside {v['inside']:.1%}")
    for k, v in cov["compute"].items():
        print(f"  compute {k:<10} rows {v['rows']:>4} ({v['groups']} groups)  inside {v['inside']:.1%}")


if __name__ == "__main__":
    main()
