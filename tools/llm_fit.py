"""Fit the large-model compute parameters on the shipped LLM rows, print in-sample and out-of-sample
errors (per source and per GPU), and write the out-of-sample residuals behind every large-model range.

    python tools/llm_fit.py [--date YYYY-MM-DD] [--check]

The fitted values go into costopt/data/llm_defaults.toml by hand, with this run's date and row count.
The residuals are written to costopt/data/llm_residuals.json (`--check` compares a fresh build with it
instead, exit 1 when they differ: tools/shipped_file.py). Each residual is r = ln(measured / predicted)
tokens/s per GPU of a shipped row (costopt/data/validation/llm_training.csv) predicted WITHOUT its own:

by_source   source: the fit of costopt/measure/llm_fit.py on the other sources' rows (leave-one-source-out)
by_gpu      GPU: the fit on the other GPUs' rows (leave-one-GPU-out; what a GPU with no published run meets)

with the row it comes from (line, source, publication date of the source, model, GPU, layout), each
fold's fitted values, and the out-of-sample coverage of the 80% ranges they give (costopt/perf/llm/ranges.py):
a row counts as inside when its residual lies in the range built from the OTHER groups' residuals only.
The output depends only on the shipped rows, the defaults and `--date` (default: the shipped file's), and
is written with sorted keys and 6 significant digits (same inputs, same bytes). About 15 s.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from costopt import __version__  # noqa: E402
from costopt.perf.llm.evaluate import default_llm_params  # noqa: E402
from costopt.measure.llm_fit import fit, framework_values, leave_one_group_out  # noqa: E402
from costopt.perf.llm.ranges import LLM_RESIDUALS_PATH, SAMPLES, group_coverage  # noqa: E402
from costopt.measure.llm_validate import LLM_DATASET, predict_rows, read_llm_csv  # noqa: E402
from shipped_file import check_or_write  # noqa: E402

# Publication date of each source's numbers (costopt/data/validation/llm_training_sources.md and
# shared/research/llm_training_throughput_sources.md: the commit or post that holds the table)
SOURCE_DATES = {"LLMF_BENCH": "2024-04-22", "MLM_README_2020": "2020-09-11", "MLM_SC21_T1": "2021-04-08",
                "MLM_SC21_T2": "2021-04-08", "MLM_README_2022_SP": "2022-05-19", "MCORE_README_2024": "2024-07-15",
                "DS_AZURE_2022": "2022-07-26", "NEMO_2407": "2024-09-09", "MBRIDGE": "2026-08-11"}
GROUP_OF = {"by_source": lambda r: r.source, "by_gpu": lambda r: r.gpu}
GROUP_FIELD = {"by_source": "source", "by_gpu": "gpu"}


def _f(v: float) -> float:
    return float(f"{float(v):.6g}")


def _rounded(v):
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return _f(v) if isinstance(v, float) else v


def _table(title: str, recs: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{'group':<28}{'n':>5}{'median |err| %':>16}{'p90 |err| %':>13}{'median err %':>14}")
    groups: dict[str, list[float]] = {}
    for r in recs:
        if r.get("error_pct") is None:
            continue
        for key in ("all", f"source {r['source']}", f"gpu {r['gpu']}", f"framework {r.get('framework')}",
                    f"precision {r.get('precision')}"):
            groups.setdefault(key, []).append(r["error_pct"])
    for k in sorted(groups, key=lambda s: (s != "all", s)):
        e = np.array(groups[k])
        print(f"{k:<28}{len(e):>5}{np.median(np.abs(e)):>16.1f}{np.percentile(np.abs(e), 90):>13.1f}{np.median(e):>14.1f}")


def _residual_rows(recs: list[dict]) -> list[dict]:
    out = []
    for r in recs:
        if r.get("error_pct") is None:
            continue
        meas, pred = float(r["measured_tokens_per_s_per_gpu"]), float(r["predicted_tokens_per_s_per_gpu"])
        if r["source"] not in SOURCE_DATES:
            sys.exit(f"error: source '{r['source']}' has no publication date in tools/llm_fit.py SOURCE_DATES")
        out.append({"line": int(r["line"]), "source": r["source"], "date": SOURCE_DATES[r["source"]],
                    "model": r["model"], "gpu": r["gpu"], "total_gpus": int(r["total_gpus"]),
                    "strategy": r["strategy"], "tp": int(r["tp"]), "pp": int(r["pp"]),
                    "precision": r["precision"], "framework": r["framework"],
                    "measured_tokens_per_s_per_gpu": _f(meas), "predicted_tokens_per_s_per_gpu": _f(pred),
                    "log_residual": _f(math.log(meas / pred))})
    return out


def build(date: str, rows=None) -> tuple[str, dict, dict]:
    """The residual file's text, its coverage block and the held-out predictions per sample."""
    rows = rows if rows is not None else read_llm_csv(LLM_DATASET)
    data: dict = {
        "built_by": f"tools/llm_fit.py (costopt {__version__})",
        "date": date,
        "dataset": f"costopt/data/validation/{LLM_DATASET.name}",
        "description": ("ln(measured / predicted) tokens/s per GPU of the shipped large-model rows, each predicted "
                        "by the fit of costopt/measure/llm_fit.py without its own source (by_source) or its own GPU "
                        "(by_gpu); costopt/perf/llm/ranges.py turns them into each large-model prediction's 80% range."),
        "coverage": {}, "folds": {},
    }
    held: dict[str, list[dict]] = {}
    for sample in SAMPLES:
        recs, folds = leave_one_group_out(rows, GROUP_OF[sample])
        held[sample] = recs
        res = _residual_rows(recs)
        data[sample] = res
        data["folds"][sample] = [_rounded(fd) for fd in folds]
        r = np.array([x["log_residual"] for x in res])
        grp = np.array([x[GROUP_FIELD[sample]] for x in res])
        inside = group_coverage(r, grp)
        cov = {"all": {"rows": len(r), "inside": _f(inside.mean())}}
        for g in sorted(set(grp.tolist())):
            m = grp == g
            cov[g] = {"rows": int(m.sum()), "inside": _f(inside[m].mean())}
        data["coverage"][sample] = cov
    data["sources"] = {s: {"rows": sum(1 for x in data["by_source"] if x["source"] == s), "date": SOURCE_DATES[s]}
                       for s in sorted({x["source"] for x in data["by_source"]})}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", data["coverage"], held


def _shipped_date() -> str:
    if LLM_RESIDUALS_PATH.exists():
        return json.loads(LLM_RESIDUALS_PATH.read_text(encoding="utf-8")).get("date", "unknown")
    return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", default=None, help="date recorded in the residual file (default: the shipped file's)")
    ap.add_argument("--check", action="store_true", help="compare the residual file with a fresh build, do not write")
    a = ap.parse_args()
    rows = read_llm_csv(LLM_DATASET)
    text, cov, held = build(a.date or _shipped_date(), rows)
    if a.check:
        check_or_write(LLM_RESIDUALS_PATH, text, True)
    used = [r for r in rows if not r.skip]
    print(f"{len(rows)} rows, {len(used)} with a measured tokens/s per GPU that the model covers")
    fitted = fit(rows)
    print(f"fitted: matmul share of MAMF {fitted.matmul_share_of_mamf:.3f}"
          + f"; element-wise bytes per token per layer per hidden unit {fitted.elementwise_bytes_per_token_per_hidden:.1f}")
    for f, v in framework_values(fitted).items():
        print(f"  framework {f}: share factor {v['matmul_share_factor']:.3f} (share "
              f"{v['matmul_share_factor'] * fitted.matmul_share_of_mamf:.3f}), element-wise bytes "
              f"{v['elementwise_bytes_per_token_per_hidden']:.1f}")
    _table("shipped defaults, in sample", predict_rows(rows, default_llm_params()))
    _table("this fit, in sample", predict_rows(rows, fitted))
    _table("leave-one-source-out", held["by_source"])
    _table("leave-one-GPU-out", held["by_gpu"])
    check_or_write(LLM_RESIDUALS_PATH, text, False)
    print(f"\nwrote {LLM_RESIDUALS_PATH}")
    print("80% range coverage, out of sample (each group's range from the other groups' residuals):")
    for sample, c in cov.items():
        for g, v in c.items():
            print(f"  {sample:<10} {g:<22} rows {v['rows']:>4}  inside {v['inside']:.1%}")


if __name__ == "__main__":
    main()
