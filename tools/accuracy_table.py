"""Print the README's accuracy table (markdown): `python tools/accuracy_table.py [dataset]`.

Per source and per strategy: median / p90 / max absolute error of the uncalibrated defaults and of
leave-one-source-out calibration (each source predicted by parameters fitted on the other sources),
over all rows and over the multi-node rows of the shipped `published` dataset.

First, per regime (costopt.perf.baseline), the timing model beside the one-number baseline
throughput = eta x N x one GPU's, eta fitted per regime in-sample and leave-one-source-out. The cross-GPU
regime predicts every multi-GPU row without its 1-GPU figure (the zoo's compute for that GPU, as `solve`
does) with the same parameters: defaults, the all-rows fit, and each source's LOSO fit.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from costopt.perf.baseline import REGIMES, baseline_predictions, error_pct, fit_rows, regime_of
from costopt.measure.calibrate import calibrate
from costopt.perf.system import load_system
from costopt.measure.validate import error_stats, prepare, read_measurements, validation_catalog
from costopt.perf.workload import load_workload


def _cell(s: dict) -> str:  # noqa: D103
    if not s["n"]:
        return "–"
    return f"{s['median_abs_error_pct']:.1f} / {s['p90_abs_error_pct']:.1f} / {s['max_abs_error_pct']:.1f}"


def _cross_gpu(dataset: str, res) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Zoo 1-GPU throughput per row, and model predictions per row with no 1-GPU calibration.

    Returns (x1, {"uncalibrated", "fitted", "loso"} -> predictions).
    """
    path, rows, header = read_measurements(dataset)
    bare = [dataclasses.replace(r, single_gpu_samples_per_s=None) for r in rows]
    cat = validation_catalog(bare)
    x1 = np.array([r.batch_per_gpu / load_workload(r.model).compute(cat.gpus[r.gpu], r.precision, r.batch_per_gpu,
                                                                    cat).iteration_s for r in bare])
    prep = prepare(bare, cat, path, header)
    pred = {"uncalibrated": prep.predict(load_system(None)), "fitted": prep.predict(res.fit.params)}
    loso = np.full(len(rows), np.nan)
    sources = np.array([r.source for r in rows])
    for s, params in res.loso_params.items():
        loso[sources == s] = prep.predict(params)[sources == s]
    pred["loso"] = loso
    return x1, pred


def _median(err: np.ndarray) -> float:
    st = error_stats(err)
    return float("nan") if not st["n"] else st["median_abs_error_pct"]


def baseline_section(dataset: str, res) -> list[str]:
    """Markdown: model vs one-number baseline per regime (median / p90 / max absolute error, %)."""
    df = res.frame
    meas = df.measured_samples_per_s.astype(float).to_numpy()
    regime = regime_of(df)
    fit_mask = fit_rows(df)
    b_in, b_lo = baseline_predictions(df, fit_mask=fit_mask)
    x1z, zoo = _cross_gpu(dataset, res)
    z_in, z_lo = baseline_predictions(df, x1z, fit_mask=fit_mask)
    out = ["Model vs the one-number baseline (throughput = eta x N x one GPU's, eta fitted per regime; "
           "`costopt.perf.baseline`). In-sample: eta, and the model's parameters, fitted on all rows that calibrate fits on; the "
           "shipped defaults are such a fit (tools/fit_defaults.py), so they are in-sample too "
           "(not rows with an assumed network speed or a stated-efficiency figure; those are only predicted); LOSO: each "
           "source predicted from the other sources only (\u2013: no other source measures that regime). Cells: "
           "median / p90 / max absolute error, %.", "",
           "| regime | rows | sources | baseline in-sample | model defaults (in-sample) | model fitted (in-sample) | "
           "rows with a LOSO baseline | baseline LOSO | model LOSO (same rows) | model beats baseline (LOSO median) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]

    def line(name, mask, b_i, b_l, m_u, m_f, m_l):
        eb_i, eb_l = error_pct(b_i, meas), error_pct(b_l, meas)
        both = mask & np.isfinite(eb_l) & np.isfinite(m_l)
        cells = [_cell(error_stats(e[mask])) for e in (eb_i, m_u, m_f)]
        lo = [_cell(error_stats(e[both])) for e in (eb_l, m_l)]
        bl, ml_ = _median(eb_l[both]), _median(m_l[both])
        verdict = "–" if not both.any() else ("yes" if ml_ < bl else "**no**")
        out.append(f"| {name} | {int(mask.sum())} | {df.source[mask].nunique()} | " + " | ".join(cells)
                   + f" | {int(both.sum())} | " + " | ".join(lo) + f" | {verdict} |")

    mu, mf, ml = (df.error_uncalibrated_pct.to_numpy(), df.error_fitted_pct.to_numpy(), df.error_loso_pct.to_numpy())
    for name in REGIMES:
        line(name, regime == name, b_in, b_lo, mu, mf, ml)
    line("all multi-GPU rows", regime != "", b_in, b_lo, mu, mf, ml)
    zu, zf, zl = (error_pct(zoo[k], meas) for k in ("uncalibrated", "fitted", "loso"))
    for name in REGIMES:
        line(f"cross-GPU: {name}", regime == name, z_in, z_lo, zu, zf, zl)
    line("cross-GPU: all multi-GPU rows", regime != "", z_in, z_lo, zu, zf, zl)
    ar = regime == REGIMES[2]
    out += ["", "Multi-node all-reduce, per source (the regime `solve` recommends; measured basis `efficiency`: the source "
            "states a scaling efficiency only, so the row is predicted, not fitted):", "",
            "| source | rows | GPUs | measured basis | baseline in-sample | baseline LOSO | model defaults (in-sample) | model LOSO |",
            "|---|---:|---|---|---:|---:|---:|---:|"]
    basis = df["measured_basis"].fillna("").replace("", "throughput") if "measured_basis" in df else None
    for src in sorted(set(df.source[ar])):
        m = ar & (df.source == src).to_numpy()
        n = sorted({int(g) * int(k) for g, k in zip(df.gpus_per_node[m], df.nodes[m])})
        kinds = "/".join(sorted(set(basis[m]))) if basis is not None else "throughput"
        cells = [_cell(error_stats(e[m])) for e in (error_pct(b_in, meas), error_pct(b_lo, meas), mu, ml)]
        out.append(f"| {src} | {int(m.sum())} | {', '.join(map(str, n))} | {kinds} | " + " | ".join(cells) + " |")
    return out


def main(dataset: str = "published") -> None:
    res = calibrate(dataset)
    df = res.frame
    out = [f"Dataset `{dataset}` ({len(df)} rows). Cells: median / p90 / max absolute error, %.", ""]
    out += baseline_section(dataset, res) + [""]
    out += [
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
    if "nic_basis" in df:
        line("all, without rows whose network speed is assumed", df[df.nic_basis.fillna("") != "assumed"])
    if "measured_basis" in df:
        line("all, rows with a stated throughput (no stated-efficiency rows)",
             df[df.measured_basis.fillna("") != "efficiency"])
    out += ["", f"Fitted on all rows ({res.fit.n_rows} used; rows with an assumed network speed or a stated-efficiency figure are predicted, not fitted) "
            "for reference; not used in the LOSO columns:", "",
            "| parameter | default | fitted | ± 1 sd | note |", "|---|---:|---:|---:|---|"]
    for r in res.fit.table():
        sd = "–" if r["sigma"] is None else f"{r['sigma']:.3g}"
        out.append(f"| {r['parameter']} | {r['start']:.4g} | {r['fitted']:.4g} | {sd} | {r['note']} |")
    worst = df.reindex(df.error_loso_pct.abs().sort_values(ascending=False).index).head(8)
    out += ["", "Largest LOSO misses:", "",
            "| source | model | gpu | GPUs x nodes | strategy | network | measured | uncalibrated | LOSO | error % (uncal / LOSO) |",
            "|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for _, r in worst.iterrows():
        basis = r.get("nic_basis", "")
        net = "-" if not r.nic_gbps or str(r.nic_gbps) == "nan" else f"{r.nic_gbps} Gb/s ({basis})"
        out.append(f"| {r.source} | {r.model} | {r.gpu} | {r.gpus_per_node} x {r.nodes} | {r.strategy}/{r.reduce_on} | {net} | "
                   f"{float(r.measured_samples_per_s):g} | {r.predicted_uncalibrated:.0f} | {r.predicted_loso:.0f} | "
                   f"{r.error_uncalibrated_pct:+.1f} / {r.error_loso_pct:+.1f} |")
    # PS vs ring wherever one source measured both on one cluster (same source, system, GPU count, model, batch)
    keys = ["source", "system", "gpu", "gpus_per_node", "nodes", "model", "batch_per_gpu"]
    # Ranked by scaling efficiency (throughput / (N x the row's own 1-GPU figure)): the two strategies come
    # from tables whose 1-GPU measurements differ by more than the gap being ranked (tests/test_validate.py)
    out += ["", "PS vs ring where a source measured both on one cluster (throughput, and in brackets scaling "
            "efficiency against each row's own 1-GPU figure, which is what is ranked):", "",
            "| source | system | model | GPUs x nodes | 1-GPU ring / PS | measured ring / PS | uncalibrated ring / PS | LOSO ring / PS | agree (uncal / LOSO) |",
            "|---|---|---|---|---:|---:|---:|---:|---|"]
    for k, g in df.groupby(keys, sort=True):
        ring, ps = g[g.strategy == "ring"], g[g.strategy == "ps"]
        if len(ring) != 1 or len(ps) != 1:
            continue
        rr, pp = ring.iloc[0], ps.iloc[0]
        n = int(rr.gpus_per_node) * int(rr.nodes)
        one_r, one_p = float(rr.single_gpu_samples_per_s), float(pp.single_gpu_samples_per_s)

        def pair(a: float, b: float, fmt: str) -> tuple[str, bool]:
            ea, eb = a / (n * one_r), b / (n * one_p)
            return f"{a:{fmt}} ({100 * ea:.1f}%) / {b:{fmt}} ({100 * eb:.1f}%)", ea > eb

        meas, m_ring = pair(float(rr.measured_samples_per_s), float(pp.measured_samples_per_s), "g")
        unc, u_ring = pair(rr.predicted_uncalibrated, pp.predicted_uncalibrated, ".0f")
        los, l_ring = pair(rr.predicted_loso, pp.predicted_loso, ".0f")
        ok = ["yes" if x == m_ring else "**no**" for x in (u_ring, l_ring)]
        out.append(f"| {k[0]} | {k[1]} | {k[5]} | {k[3]} x {k[4]} | {one_r:g} / {one_p:g} | {meas} | {unc} | {los} | "
                   f"{ok[0]} / {ok[1]} |")
    print("\n".join(out))


if __name__ == "__main__":
    main(*sys.argv[1:2])
