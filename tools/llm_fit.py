"""Fit the large-model compute parameters on the shipped LLM rows and print in-sample and
leave-one-source-out errors (per source and per GPU). The fitted values go into
costopt/data/llm_defaults.toml by hand, with this run's date and row count.

    python tools/llm_fit.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costopt.llm.evaluate import default_llm_params  # noqa: E402
from costopt.llm.fit import fit, leave_one_source_out  # noqa: E402
from costopt.llm.validate import LLM_DATASET, predict_rows, read_llm_csv  # noqa: E402


def _table(title: str, recs: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{'group':<28}{'n':>5}{'median |err| %':>16}{'p90 |err| %':>13}{'median err %':>14}")
    groups: dict[str, list[float]] = {}
    for r in recs:
        if r.get("error_pct") is None:
            continue
        for key in ("all", f"source {r['source']}", f"gpu {r['gpu']}"):
            groups.setdefault(key, []).append(r["error_pct"])
    for k in sorted(groups, key=lambda s: (s != "all", s)):
        e = np.array(groups[k])
        print(f"{k:<28}{len(e):>5}{np.median(np.abs(e)):>16.1f}{np.percentile(np.abs(e), 90):>13.1f}{np.median(e):>14.1f}")


def main() -> None:
    rows = read_llm_csv(LLM_DATASET)
    used = [r for r in rows if not r.skip]
    print(f"{len(rows)} rows, {len(used)} with a measured tokens/s per GPU that the model covers")
    fitted = fit(rows)
    print(f"fitted: matmul share of MAMF {fitted.matmul_share_of_mamf:.3f}"
          + f"; element-wise bytes per token per layer per hidden unit {fitted.elementwise_bytes_per_token_per_hidden:.1f}")
    _table("shipped defaults, in sample", predict_rows(rows, default_llm_params()))
    _table("this fit, in sample", predict_rows(rows, fitted))
    _table("leave-one-source-out", leave_one_source_out(rows))


if __name__ == "__main__":
    main()
