"""Print the README's accuracy table (markdown): `python tools/accuracy_table.py [dataset]`.

Per source and per strategy: median / p90 / max absolute error of the uncalibrated defaults and of
leave-one-source-out calibration (each source predicted by parameters fitted on the other sources),
over all rows and over the multi-node rows of the shipped `published` dataset.
"""

from __future__ import annotations

import sys

from costopt.calibrate import calibrate
from costopt.validate import error_stats


def _cell(s: dict) -> str:
    if not s["n"]:
        return "–"
    return f"{s['median_abs_error_pct']:.1f} / {s['p90_abs_error_pct']:.1f} / {s['max_abs_error_pct']:.1f}"


def main(dataset: str = "published") -> None:
    res = calibrate(dataset)
    df = res.frame
    out = [f"Dataset `{dataset}` ({len(df)} rows). Cells: median / p90 / max absolute error, %.", "",
           "| group | rows | uncalibrated | LOSO calibrated | multi-node rows | multi-node uncalibrated | multi-node LOSO |",
           "|---|---:|---:|---:|---:|---:|---:|"]

    def line(name, g):
        m = g[g.nodes > 1]
        out.append(f"| {name} | {len(g)} | {_cell(error_stats(g.error_uncalibrated_pct))} | "
                   f"{_cell(error_stats(g.error_loso_pct))} | {len(m)} | {_cell(error_stats(m.error_uncalibrated_pct))} | "
                   f"{_cell(error_stats(m.error_loso_pct))} |")

    for s, g in df.groupby("source", sort=True):
        line(s, g)
    for s, g in df.groupby("strategy", sort=True):
        line(f"strategy {s}", g)
    line("**all**", df)
    out += ["", "Fitted on all rows (for reference; not used in the LOSO columns):", "",
            "| parameter | default | fitted | ± 1 sd | note |", "|---|---:|---:|---:|---|"]
    for r in res.fit.table():
        sd = "–" if r["sigma"] is None else f"{r['sigma']:.3g}"
        out.append(f"| {r['parameter']} | {r['start']:.4g} | {r['fitted']:.4g} | {sd} | {r['note']} |")
    worst = df.reindex(df.error_uncalibrated_pct.abs().sort_values(ascending=False).index).head(6)
    out += ["", "Largest uncalibrated misses:", "", "| source | model | gpu | GPUs x nodes | strategy | measured | predicted | error % |",
            "|---|---|---|---|---|---:|---:|---:|"]
    for _, r in worst.iterrows():
        out.append(f"| {r.source} | {r.model} | {r.gpu} | {r.gpus_per_node} x {r.nodes} | {r.strategy}/{r.reduce_on} | "
                   f"{float(r.measured_samples_per_s):g} | {r.predicted_uncalibrated:.0f} | {r.error_uncalibrated_pct:+.1f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main(*sys.argv[1:2])
