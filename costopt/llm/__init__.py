"""Large transformer models: architecture, memory, sharded / tensor / pipeline-parallel step time,
layout search and validation (docs/large-models.md). `is_llm_request` tells the commands which path a
request takes; it imports only the light modules, so data-parallel commands pay nothing for the rest."""

from __future__ import annotations

from typing import Any

from .arch import is_llm_model
from .memory import LLM_STRATEGIES


def is_llm_request(model: str | None, model_config: Any, strategy: str | list[str] | None, tokens: Any = None,
                   dp_models: list[str] | None = None) -> bool:
    """A transformer-by-architecture request: a model config file, a sharded strategy, `--tokens`, or a
    zoo transformer that has no data-parallel profile (llama3_8b, ...)."""
    strategies = [strategy] if isinstance(strategy, str) else list(strategy or [])
    if model_config is not None or tokens is not None:
        return True
    if any(s in LLM_STRATEGIES for s in strategies):
        return True
    return model is not None and is_llm_model(model) and model not in (dp_models or [])


__all__ = ["is_llm_request"]
