"""Print the errors of the fine-tuning predictions on the published fine-tuning runs, in and out of sample.

    python tools/finetune_errors.py

Rows: costopt/data/validation/llm_finetune.csv (never fitted); maths and the two readings in
costopt/measure/llm_finetune_errors.py. About 3 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costopt.measure.llm_finetune_errors import finetune_errors, summary  # noqa: E402


def main() -> int:
    recs = finetune_errors()
    print(f"{'line':>4} {'source':<13} {'model':<17} {'gpu':<9} {'measured':>9} {'in':>8} {'err%':>7} {'out':>8} {'err%':>7}")
    for r in recs:
        print(f"{r['line']:>4} {r['source']:<13} {r['model']:<17} {r['gpu']:<9} {r['measured_tokens_per_s_per_gpu']:>9,.0f} "
              f"{r['predicted_in_sample']:>8,.0f} {r['error_in_sample_pct']:>+7.1f} {r['predicted_out_of_sample']:>8,.0f} "
              f"{r['error_out_of_sample_pct']:>+7.1f}")
    for key, label in (("error_in_sample_pct", "in sample"), ("error_out_of_sample_pct", "out of sample (LOSO fold)")):
        s = summary(recs, key)
        print(f"{label}: " + "; ".join(f"{k} {v['n']} rows median |error| {v['median']:.1f}%, p90 {v['p90']:.1f}%"
                                        for k, v in s.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
