"""Print the per-stack accuracy table (markdown): `python tools/stack_table.py [--hold NAME ...]` (about 3 minutes).

For every communication stack (costopt/perf/stacks.py) on the shipped measurement rows: median / p90 / max
absolute error of
- priors: the public-measurement values of system_priors.toml, nothing fitted;
- defaults (in-sample): the shipped defaults, fitted on all rows (tools/fit_defaults.py);
- leave-one-source-out (LOSO): each source predicted by the same fit on the other sources' rows, the
  out-of-sample figure that counts;
and the share of rows inside their 80% range when that range is built from the other sources' residuals.
The same per source follows.

`--hold NAME ...`: the same tables with those fitted parameters held at their priors, in the fit on all rows and
in every fold (a what-if: docs/accuracy.md, "Two changes tried"); `defaults` is then that fit, not the shipped one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from fit_defaults import build, _shipped_date  # noqa: E402

from costopt.measure.calibrate import DEFAULT_FIT  # noqa: E402
from costopt.perf.system import prior_system  # noqa: E402
from costopt.measure.validate import error_stats, prepare  # noqa: E402


def _cell(s: dict) -> str:
    if not s["n"]:
        return "–"
    return f"{s['median_abs_error_pct']:.1f} / {s['p90_abs_error_pct']:.1f} / {s['max_abs_error_pct']:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hold", nargs="+", default=[], metavar="NAME", choices=DEFAULT_FIT,
                    help="fitted parameters to hold at their priors (a what-if; nothing is written): "
                         "in-sample and every leave-one-source-out fold refitted without them")
    a = ap.parse_args()
    names = tuple(n for n in DEFAULT_FIT if n not in a.hold)
    _, rep = build(_shipped_date(), names)
    if a.hold:
        print(f"What-if: {', '.join(a.hold)} held at the prior (system_priors.toml); the shipped defaults are "
              "unchanged.\n")
    df = rep["frame"]
    measured = df["measured_samples_per_s"].astype(float).to_numpy()
    err = {
        "defaults": df["error_fitted_pct"].to_numpy(),
        "loso": df["error_loso_pct"].to_numpy(),
    }
    from costopt.measure.validate import read_measurements
    from fit_defaults import measurement_datasets
    rows = []
    for name in measurement_datasets():
        rows += read_measurements(name)[1]
    prior_pred = prepare(rows).predict(prior_system())
    err["priors"] = (prior_pred - measured) / measured * 100.0
    inside = rep["inside"]
    out = [f"Shipped rows: {len(df)}. Cells: median / p90 / max absolute error, %. Range coverage: share of rows "
           "inside their 80% range built from the other sources' leave-one-source-out residuals.", "",
           "| stack | rows | sources | priors (nothing fitted) | defaults (fitted on all rows, in-sample) | "
           "leave-one-source-out | inside 80% range (LOSO) |", "|---|---:|---:|---:|---:|---:|---:|"]

    def line(name: str, mask: np.ndarray, key: str) -> None:
        out.append(f"| {name} | {int(mask.sum())} | {df.loc[mask, 'source'].nunique()} | "
                   f"{_cell(error_stats(err['priors'][mask]))} | {_cell(error_stats(err['defaults'][mask]))} | "
                   f"{_cell(error_stats(err['loso'][mask]))} | {inside[mask].mean():.0%} |")

    for s in sorted(set(df["stack"])):
        line(s, (df["stack"] == s).to_numpy(), "stack")
    line("**all**", np.ones(len(df), dtype=bool), "all")
    out += ["", "| source | stack | rows | priors | defaults (in-sample) | LOSO | inside 80% range (LOSO) |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for (src, st), g in df.groupby(["source", "stack"], sort=True):
        m = ((df["source"] == src) & (df["stack"] == st)).to_numpy()
        out.append(f"| {src} | {st} | {int(m.sum())} | {_cell(error_stats(err['priors'][m]))} | "
                   f"{_cell(error_stats(err['defaults'][m]))} | {_cell(error_stats(err['loso'][m]))} | "
                   f"{inside[m].mean():.0%} |")
    out += ["", "80% range of the communication error (costopt/perf/intervals.py): p10 and p90 of rho = measured / predicted "
            "time beyond compute over the LOSO residuals (x = (t_iter - t_compute) / t_iter the exposed share of each "
            "row's prediction); the factors measured / predicted throughput they give at x = 0.05, 0.2 and 0.5:", "",
            "| stack | p10 of rho | p90 of rho | x = 0.05 | x = 0.2 | x = 0.5 | residuals | basis |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    for s, t in rep["table"].items():
        lo, hi = min(t["p10_exposed_ratio"], 1.0), max(t["p90_exposed_ratio"], 1.0)
        cells = " | ".join(f"{1 / (1 - x + x * hi):.3f}-{1 / (1 - x + x * lo):.3f}" for x in (0.05, 0.2, 0.5))
        out.append(f"| {s} | {t['p10_exposed_ratio']:.3f} | {t['p90_exposed_ratio']:.3f} | {cells} | {t['rows']} | {t['basis']} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
