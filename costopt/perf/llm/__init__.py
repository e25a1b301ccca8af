"""Large transformer models: architecture, memory, sharded / tensor / pipeline-parallel step time,
layout search and validation (docs/large-models.md). `is_llm_request` tells the commands which path a
request takes; it imports nothing of the rest, and a data-parallel zoo model never reaches even the
architecture module, so data-parallel commands pay nothing for it."""

from __future__ import annotations

from typing import Any


def is_llm_request(model: str | None, model_config: Any, strategy: str | list[str] | None, tokens: Any = None,
                   dp_models: list[str] | None = None) -> bool:
    """A transformer-by-architecture request: a model config file, a sharded strategy or a fine-tune
    (sft, lora, qlora), `--tokens`, or a zoo transformer that has no data-parallel profile (llama3_8b, ...)."""
    strategies = [strategy] if isinstance(strategy, str) else list(strategy or [])
    if model_config is not None or tokens is not None:
        return True
    if strategies:
        from costopt.perf.llm.memory import LLM_STRATEGIES

        from costopt.perf.llm.finetune import FINETUNES

        if any(s in LLM_STRATEGIES or s in FINETUNES for s in strategies):
            return True
    if model is None or model in (dp_models or []):
        return False
    from costopt.perf.llm.arch import is_llm_model

    return is_llm_model(model)


__all__ = ["is_llm_request"]
