"""Write costopt/data/system_defaults.toml: the shipped defaults, fitted on every shipped row.

    python tools/fit_defaults.py [--date YYYY-MM-DD] [--check]

1. Read every shipped measurement dataset (costopt/data/validation/*.csv in the measurement format).
2. Fit `costopt.measure.calibrate.DEFAULT_FIT` on all of them (MAP on log error, Huber loss, prior centred on
   costopt/data/system_priors.toml with the widths of `costopt.measure.calibrate.PRIOR`; rows whose network
   speed is assumed are predicted, not fitted). Parameters not fitted keep their prior.
3. Leave-one-source-out: for every source, the same fit on the other sources' rows predicts that
   source. Its residuals, each read as the error of the time beyond compute with the exposed share of its
   prediction, give the 80% ranges per stack (costopt/perf/intervals.py) and the out-of-sample errors recorded
   in [fit].
4. Write the defaults: every value with its prior and the prior's source beside it, [fit] (rows,
   sources, date, tool version, errors), [uncertainty] (one standard deviation per fitted parameter:
   what `solve` resamples for its robustness share) and [interval].

`--check` compares with the shipped file instead of writing (exit 1 when they differ). The output
depends only on the shipped rows, the priors and `--date` (default: the date in the shipped file).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costopt import __version__  # noqa: E402
from costopt.measure.calibrate import DEFAULT_FIT, PRIOR, calibrate_rows  # noqa: E402
from costopt.perf.intervals import MIN_ROWS, MIN_SOURCES, RHO_FLOOR, SHARE_MIN, coverage, exposed_share, quantile_table  # noqa: E402
from costopt.perf.system import DEFAULTS_PATH, FIELD_TO_KEY, PRIORS_PATH, SystemParams, prior_system  # noqa: E402
from costopt.measure.validate import COLUMNS, VALIDATION_DIR, error_stats, list_datasets, read_measurements  # noqa: E402


def measurement_datasets() -> list[str]:
    """Shipped datasets in the data-parallel measurement format (costopt/measure/validate.py columns); other files
    in the folder (e.g. llm_training.csv, large-model runs scored by costopt/llm) are not part of this fit."""
    out = []
    for name in list_datasets():
        header = (VALIDATION_DIR / f"{name}.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
        if all(c in header for c in COLUMNS):
            out.append(name)
    return out


def _prior_comments() -> tuple[dict[tuple[str, str], str], list[str]]:
    """(section, key) -> the comment after the value in the priors file; and the section order."""
    out: dict[tuple[str, str], str] = {}
    order: list[str] = []
    section = ""
    for line in PRIORS_PATH.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\[(\w+)\]", line)
        if m:
            section = m.group(1)
            order.append(section)
            continue
        m = re.match(r"^(\w+)\s*=\s*[^#]+#\s*(.*)$", line)
        if m and section:
            out[(section, m.group(1))] = m.group(2).strip()
    return out, order


def _shipped_date() -> str:
    if DEFAULTS_PATH.exists():
        m = re.search(r'^date = "([0-9-]+)"', DEFAULTS_PATH.read_text(encoding="utf-8"), re.M)
        if m:
            return m.group(1)
    return "unknown"


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def build(date: str, names: tuple[str, ...] = DEFAULT_FIT) -> tuple[str, dict]:
    """The defaults file's text and a report of the fit. `names`: the parameters fitted (default: all of
    calibrate.DEFAULT_FIT); the others keep their priors (what-if runs of tools/stack_table.py --hold)."""
    rows, header = [], []
    for name in measurement_datasets():
        _, r, h = read_measurements(name)
        rows += r
        header += [c for c in h if c not in header]
    res = calibrate_rows(rows, path=VALIDATION_DIR, header=header, system=prior_system(), start=prior_system(),
                         names=names)
    df = res.frame
    fitted: SystemParams = res.fit.params
    prior = prior_system()
    measured = df["measured_samples_per_s"].astype(float).to_numpy()
    loso_pred = df["predicted_loso"].to_numpy()
    fit_pred = df["predicted_fitted"].to_numpy()
    r = np.log(measured / loso_pred)
    stack = df["stack"].to_numpy()
    # exposed share x = 1 - X / X_perfect of each row's leave-one-source-out prediction: every row's compute is
    # calibrated to its own 1-GPU figure s (costopt.measure.validate.prepare), so X_perfect = N s exactly
    single = df["single_gpu_samples_per_s"].astype(float).to_numpy()
    if not np.isfinite(single).all():
        sys.exit("error: every shipped measurement row needs single_gpu_samples_per_s (the exposed share of its prediction)")
    share = exposed_share(loso_pred, (df["gpus_per_node"] * df["nodes"]).to_numpy() * single)
    df["exposed_share_loso"] = share
    table = quantile_table(r, share, stack, df["source"].to_numpy())
    inside = coverage(r, share, stack, df["source"].to_numpy())

    comments, order = _prior_comments()
    text = ["# SHIPPED DEFAULTS of the timing model's system parameters, FITTED on every shipped measurement row.",
            "# Written by tools/fit_defaults.py; do not edit by hand (edit the priors, system_priors.toml, and re-run).",
            "# Each value: the fit (or the prior where the rows do not inform it), then the prior and its source.",
            "# Units are in the key names; prior widths in costopt/measure/calibrate.py PRIOR.", ""]
    by_section: dict[str, list[str]] = {}
    for f in fields(SystemParams):
        section, key = FIELD_TO_KEY[f.name]
        v, p0 = getattr(fitted, f.name), getattr(prior, f.name)
        src = comments.get((section, key), "")
        if f.name in res.fit.fitted:
            kind, w = PRIOR[f.name]
            width = f"x/÷ e^{w:g}" if kind == "log" else f"± {w:g}"
            note = f"fitted; prior {_fmt(p0)} ({width}): {src}"
        else:
            note = f"prior (not fitted): {src}"
        by_section.setdefault(section, []).append(f"{key} = {_fmt(v)}  # {note}")
    for section in order + [s for s in by_section if s not in order]:
        if section in by_section:
            text += [f"[{section}]"] + by_section.pop(section) + [""]

    def stats(pred: np.ndarray, mask: np.ndarray) -> dict:
        return error_stats(((pred - measured) / measured * 100.0)[mask])

    everything = np.ones(len(df), dtype=bool)
    summary = {"in_sample": stats(fit_pred, everything), "loso": stats(loso_pred, everything)}
    per_stack = {s: {"in_sample": stats(fit_pred, stack == s), "loso": stats(loso_pred, stack == s)}
                 for s in sorted(set(stack.tolist()))}
    sources = sorted(set(df["source"].tolist()))
    text += ["[fit]", f'date = "{date}"', f'tool = "tools/fit_defaults.py (costopt {__version__})"',
             'method = "MAP on log error, Huber loss, row sigma 0.1, prior centred on system_priors.toml"',
             f'datasets = [{", ".join(chr(34) + n + chr(34) for n in measurement_datasets())}]',
             f"rows = {len(df)}", f"rows_fitted = {res.fit.n_rows}",
             f'sources = [{", ".join(chr(34) + s + chr(34) for s in sources)}]',
             f'fitted = [{", ".join(chr(34) + n + chr(34) for n in res.fit.fitted)}]',
             f"in_sample_median_abs_error_pct = {summary['in_sample']['median_abs_error_pct']}",
             f"in_sample_p90_abs_error_pct = {summary['in_sample']['p90_abs_error_pct']}",
             f"loso_median_abs_error_pct = {summary['loso']['median_abs_error_pct']}",
             f"loso_p90_abs_error_pct = {summary['loso']['p90_abs_error_pct']}",
             f"loso_interval_coverage = {float(inside.mean()):.4g}", ""]
    text += ["[uncertainty]", "# one standard deviation of each fitted parameter (linearised at the optimum, MAP curvature)"]
    for n in res.fit.fitted:
        if n in res.fit.sigma:
            text.append(f"{n} = {_fmt(res.fit.sigma[n])}")
    text.append("")
    text += ["[interval]",
             "# the communication part of every 80% range (costopt/perf/intervals.py): rho = measured / predicted time beyond",
             "# compute per row, (exp(-r) - (1 - x)) / x for r = ln(measured / predicted) and x = (t_iter - t_compute) / t_iter",
             "# the exposed share of that row's leave-one-source-out prediction; <stack>_p10/p90_exposed_ratio: the 10th /",
             "# 90th percentile of rho (Weibull positions) over the stack's rows (basis \"all rows\" where a stack has fewer",
             f"# than {MIN_ROWS} rows or {MIN_SOURCES} sources; rows with x < {SHARE_MIN:g} not counted, rho at least {RHO_FLOOR:g}).",
             "# A design with exposed share x: measured / predicted throughput between 1 / (1 - x + x * max(p90, 1)) and",
             "# 1 / (1 - x + x * min(p10, 1)).",
             f'date = "{date}"', f"rows = {len(df)}",
             f"loso_coverage = {float(inside.mean()):.4g}"]
    for s, t in table.items():
        text += [f"{s}_p10_exposed_ratio = {_fmt(t['p10_exposed_ratio'])}",
                 f"{s}_p90_exposed_ratio = {_fmt(t['p90_exposed_ratio'])}",
                 f"{s}_rows = {t['rows']}", f"{s}_sources = {t['sources']}", f'{s}_basis = "{t["basis"]}"']
        m = stack == s
        if m.any():
            text.append(f"{s}_loso_coverage = {float(inside[m].mean()):.4g}")
    report = {"summary": summary, "per_stack": per_stack, "coverage": float(inside.mean()), "table": table,
              "frame": df, "fit": res.fit, "inside": inside}
    return "\n".join(text) + "\n", report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", default=None, help="date recorded in [fit] (default: the shipped file's)")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, do not write")
    a = ap.parse_args()
    text, rep = build(a.date or _shipped_date())
    if a.check:
        same = DEFAULTS_PATH.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{DEFAULTS_PATH} differs from a fresh fit")
        sys.exit(0 if same else 1)
    DEFAULTS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {DEFAULTS_PATH}")
    print(f"all rows: in-sample {rep['summary']['in_sample']}; LOSO {rep['summary']['loso']}; "
          f"interval coverage (LOSO) {rep['coverage']:.3f}")
    for s, v in rep["per_stack"].items():
        print(f"  {s}: in-sample {v['in_sample']}; LOSO {v['loso']}")


if __name__ == "__main__":
    main()
