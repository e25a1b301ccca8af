"""The layouts a large-model search offers a mixture-of-experts model: every layout of the search once per
expert-parallel degree ep (perf/llm/moe.py), ep in 1, 2, 4, ..., 64 dividing the model's experts E. Whether an ep
also divides a design's t·c·d ranks is judged per design (evaluate.py refuses it there, as for any degree that
does not divide the GPUs). A dense model keeps the layouts as they are (ep 1)."""

from __future__ import annotations

import numpy as np

from costopt.perf.llm.arch import TransformerConfig
from costopt.perf.llm.evaluate import Layout
from costopt.perf.llm.moe import EP_CHOICES

SEARCH_EP_MAX = 64  # the largest expert-parallel degree searched (Megatron-Bridge's MoE recipes run 8-64)


def expert_parallel_choices(cfg: TransformerConfig) -> tuple[int, ...]:
    """ep degrees searched for `cfg`: (1,) for a dense model, else those of EP_CHOICES up to SEARCH_EP_MAX dividing E."""
    if not cfg.is_moe:
        return (1,)
    return tuple(e for e in EP_CHOICES if e <= SEARCH_EP_MAX and cfg.num_experts % e == 0)


def with_expert_parallel(layouts: Layout, cfg: TransformerConfig) -> Layout:
    """`layouts` repeated for each ep of `expert_parallel_choices(cfg)` (ep-major: ep 1 first, so among equally fast
    layouts the search keeps the lower ep); unchanged for a dense model."""
    eps = expert_parallel_choices(cfg)
    if eps == (1,):
        return layouts
    n = len(layouts.tp)
    tile = lambda a: None if a is None else np.tile(a, len(eps))  # noqa: E731
    return Layout(tile(layouts.strategy), tile(layouts.tp), tile(layouts.pp), tile(layouts.micro_batch),
                  tile(layouts.ckpt), vp=tile(layouts.vp), cp=tile(layouts.cp),
                  ep=np.repeat(np.array(eps, dtype=np.int64), n), shard=tile(layouts.shard))
