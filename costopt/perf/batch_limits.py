"""Is the chosen design's global batch one the model is known to train at?

    global batch B = batch per GPU b x GPUs N          (samples per optimizer step; b counts every
                                                        micro-batch a GPU accumulates before a step)

`data/batch_limits.toml` lists, per model and optimizer, the largest B published to reach the model's
usual accuracy (with its source). The warning compares B with the limit for the model's own optimizer
(the zoo's `optimizer`), else with the largest limit known for any optimizer, and names the larger
limits other optimizers reach. No entry, no warning: the data does not say.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache

from costopt.core.errors import InputError
from costopt.core.paths import DATA_DIR


@dataclass(frozen=True)
class BatchLimit:
    model: str
    optimizer: str
    max_global_batch: int
    cite: str  # short citation for the sentence
    source: str
    date: str


@lru_cache(maxsize=1)
def load_limits() -> tuple[BatchLimit, ...]:
    text = (DATA_DIR / "batch_limits.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    out = []
    for i, e in enumerate(raw.get("limit", [])):
        unknown = set(e) - {"model", "optimizer", "max_global_batch", "cite", "source", "date"}
        if unknown:
            raise InputError(f"data/batch_limits.toml: limit[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
        if not (isinstance(e.get("max_global_batch"), int) and e["max_global_batch"] > 0 and e.get("source") and e.get("cite")):
            raise InputError(f"data/batch_limits.toml: limit[{i}] needs max_global_batch > 0, cite and source")
        out.append(BatchLimit(e["model"], e["optimizer"], e["max_global_batch"], e["cite"], e["source"], str(e["date"])))
    return tuple(out)


def batch_warning(model: str, optimizer: str | None, batch_per_gpu: int, gpus: int) -> str | None:
    """A sentence when b x N is above what `model` is published to train at; None otherwise."""
    limits = [x for x in load_limits() if x.model == model]
    if not limits:
        return None
    b = batch_per_gpu * gpus
    own = [x for x in limits if x.optimizer == (optimizer or "").lower()]
    ref = max(own or limits, key=lambda x: x.max_global_batch)
    if b <= ref.max_global_batch:
        return None
    how = f"with {ref.optimizer}" + (" (its optimizer here)" if own else "")
    text = (f"global batch {b:,} ({batch_per_gpu:,} per GPU x {gpus:,} GPUs) is above the largest batch {model} is "
            f"published to train at {how}: {ref.max_global_batch:,} ({ref.cite})")
    better = [x for x in limits if x.max_global_batch > ref.max_global_batch]
    if better:
        top = max(better, key=lambda x: x.max_global_batch)
        text += f"; {top.optimizer} reaches {top.max_global_batch:,} ({top.cite})"
    return text + "; expect more epochs or lower accuracy, or choose fewer GPUs or a smaller batch per GPU"
