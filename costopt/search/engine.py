"""The public `solve` and `predict`: one entry for every workload kind.

A data-parallel zoo model goes to search/api.py (`api.solve`, `api.predict`); a transformer described
by its architecture (a zoo transformer such as llama3_70b, `model_config=FILE.toml`, a sharded
strategy, or `tokens=`) goes to search/llm_search.py. Both results are built from the one result
interface (search/evaluation.py) under the same limits (search/limits.py). An argument a path cannot
honour is refused with an InputError (exit 2) naming it — never ignored:

    import costopt
    r = costopt.solve(5_000_000, "llama3_70b", tokens=1e12, max_power_kw=500)   # LlmSolveResult
    r.best["gpu"], r.best["tokens_per_s"], r.best["bom"]
    d = costopt.predict("llama3_70b", "b200", 8, 8, "ib-ndr", "fsdp", tp=2, tokens=1e12)   # dict
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costopt.core.errors import InputError
from costopt.perf.stacks import AUTO
from costopt.search import api

_DP_DEFAULTS_SOLVE = {  # data-parallel arguments -> (their default, why a transformer cannot use them)
    "batch_per_gpu": (None, "the large-model path sizes its micro-batch per layout; set the global batch with "
                            "--global-batch (sequences)"),
    "grad_accum": (1, "the large-model path derives gradient accumulation from --global-batch / (dp x micro-batch)"),
    "reduce_on": (None, "the large-model path reduces gradients on the GPUs (NCCL collectives)"),
    "stack": (AUTO, "the large-model path models NCCL collectives only"),
    "overlap": ("wfbp", "the large-model path overlaps data-parallel communication by its fitted overlap fraction "
                        "(data/llm_defaults.toml)"),
    "system": (None, "the large-model path uses its own fitted defaults (data/llm_defaults.toml), not "
                     "data-parallel system parameters"),
    "profile": (None, "a zoo profile is data-parallel; describe a transformer with --model-config FILE.toml"),
    "epochs": (None, "a transformer's work is --tokens (tokens to train), not epochs"),
    "dataset_size": (None, "a transformer's work is --tokens (tokens to train)"),
    "tensor_set": ("pytorch", "tensor sets (pytorch/tensorflow gradient lists) are data-parallel; a transformer's "
                              "tensors come from its architecture"),
}
_DP_PREDICT_ONLY = {**{k: v for k, v in _DP_DEFAULTS_SOLVE.items() if k not in ("epochs", "dataset_size")},
                    "reduce_on": ("gpu", _DP_DEFAULTS_SOLVE["reduce_on"][1]),
}
_LLM_ONLY = {  # transformer arguments -> what a data-parallel model has instead (refuse_transformer_only)
    "seq_len": "a data-parallel sample has no sequence length",
    "global_batch": "a data-parallel model's global batch is --batch-per-gpu x --grad-accum x GPUs",
}
_FINETUNE_ONLY = {k: (None, "applies to LoRA/QLoRA fine-tunes of transformers (--model llama3_70b --strategy lora); "
                            "a data-parallel zoo model has no adapters") for k in ("lora_rank", "lora_targets")}
_LLM_PREDICT_ONLY = {"tp": 1, "pp": 1, "micro_batch": 1, "checkpointing": None,
                     "vp": 1, "cp": 1, "ep": 1, "shard_group": 0}


def _llm_framework(framework: str | None, strategy: Any = None) -> str:
    """--framework on the large-model path: megatron | fsdp | deepspeed | torchtitan (perf/llm/evaluate.py);
    not given (or the data-parallel default 'eager'): megatron, and fsdp for QLoRA (the PyTorch FSDP stacks that
    train NF4 base weights: bitsandbytes with PEFT, FSDP-QLoRA), which refuses megatron and deepspeed.
    Another value is refused there (exit 2)."""
    from costopt.perf.llm.evaluate import DEFAULT_FRAMEWORK, FRAMEWORKS

    qlora = "qlora" in (strategy.split(",") if isinstance(strategy, str) else list(strategy or []))
    if framework in (None, "eager"):
        return "fsdp" if qlora else DEFAULT_FRAMEWORK
    if qlora and framework in ("megatron", "deepspeed"):
        raise InputError(f"--framework {framework}: it has no NF4 (QLoRA) base-weight path; QLoRA runs on PyTorch FSDP "
                         "stacks (--framework fsdp, the default for --strategy qlora, or torchtitan)", field="framework")
    if framework not in FRAMEWORKS:
        raise InputError(f"--framework '{framework}' for a transformer: choose from {', '.join(FRAMEWORKS)} "
                         "(eager | cuda-graphs | vendor-tuned are the data-parallel stacks)", field="framework")
    return framework


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-").replace("today", "as-of")


def _refuse_given(given: dict[str, Any], table: dict[str, tuple[Any, str]]) -> None:
    """InputError naming the first argument of `table` that `given` sets (not its default, None or empty)."""
    for name, (default, why) in table.items():
        v = given.get(name, default)
        if not (v is None or v == default or (isinstance(v, (list, tuple)) and len(v) == 0)):
            raise InputError(f"{_flag(name)}: {why}", field=name)


def refuse_transformer_only(model: str | None, **given: Any) -> None:
    """The one rule for the transformer-only options `seq_len` and `global_batch` (every command, both
    paths: solve, predict, compare, rent-vs-buy, export): given for a data-parallel zoo model, an InputError
    naming the option (exit 2), `--global-batch: applies only to transformers (...); 'resnet50' is a
    data-parallel zoo model: ...`."""
    for name, why in _LLM_ONLY.items():
        if given.get(name) is not None:
            raise InputError(f"{_flag(name)}: applies only to transformers (--model llama3_70b, --model-config "
                             f"FILE.toml); '{model}' is a data-parallel zoo model: {why}", field=name)


def is_llm(model: str | None, model_config: Any = None, strategy: Any = None, tokens: Any = None) -> bool:
    """The request takes the large-model path (perf/llm/__init__.py::is_llm_request). `tokens` with a
    data-parallel zoo model (and no `model_config`) is refused: its work is epochs x dataset size."""
    from costopt.perf.llm import is_llm_request
    from costopt.perf.workload import list_models

    dp_models = list_models()
    if tokens is not None and model_config is None and model in dp_models:
        from costopt.perf.llm.arch import is_llm_model

        if not is_llm_model(model):
            raise InputError(f"--tokens: applies to transformers (see costopt models); '{model}' is a data-parallel zoo "
                             "model, whose work is --epochs x --dataset-size", field="tokens")
    return is_llm_request(model, model_config, strategy, tokens, dp_models)


@dataclass
class LlmSolveResult:
    """A large-model solve (search/llm_search.py::solve_llm's dict) with the attributes of a SolveResult:
    `best`, `alternatives` (the best design of each other GPU type), `why`, `solver`; `to_json_dict()`
    is the JSON `costopt solve --format json` prints; `result[key]` reads the dict."""

    data: dict[str, Any]

    @property
    def best(self) -> dict[str, Any]:
        return self.data["best"]

    @property
    def alternatives(self) -> list[dict[str, Any]]:
        return self.data["best_per_gpu"]

    best_per_gpu = alternatives

    @property
    def why(self) -> str:
        return self.data["why"]

    @property
    def solver(self) -> dict[str, Any]:
        return self.data["solver"]

    @property
    def model(self) -> str:
        return self.data["model"]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def to_json_dict(self) -> dict[str, Any]:
        return self.data


def _site_terms(kw: dict[str, Any]) -> None:
    """The whole-cost terms given (hardware/site_terms.py: colocation_usd_per_kw_month=..., the catalog's
    [site] field names) taken out of `kw`, its catalog replaced by one whose site holds them; refused
    without `tco_years` (capex alone prices none of them)."""
    from costopt.hardware.site_terms import pop_terms, with_site_terms

    terms = pop_terms(kw)
    if terms:
        kw["catalog"] = with_site_terms(kw.get("catalog"), terms, priced=bool(kw.get("tco_years")))


def solve(budget: float | None, model: str | None = None, *, tokens: float | None = None,
          model_config: Any = None, seq_len: int | None = None, global_batch: int | None = None,
          strategies: list[str] | None = None, lora_rank: int | None = None, lora_targets: str | None = None,
          **kw: Any) -> api.SolveResult | LlmSolveResult:
    """Best design for the money for any workload: `api.solve`'s arguments, plus for transformers
    `tokens` (tokens to train), `model_config`, `seq_len`, `global_batch` (held exactly) and
    `confidence`; for either, the whole-cost terms of hardware/site_terms.py (the catalog's [site] fields,
    e.g. colocation_usd_per_kw_month=150, with tco_years). Returns a SolveResult (data-parallel) or an
    LlmSolveResult (transformer)."""
    _site_terms(kw)
    if is_llm(model, model_config, strategies, tokens):
        from costopt.search.llm_search import solve_llm

        _refuse_given(kw, _DP_DEFAULTS_SOLVE)
        for k in _DP_DEFAULTS_SOLVE:  # at their defaults (checked above): nothing to hand over
            kw.pop(k, None)
        precision = kw.pop("precision", api.DEFAULT_PRECISION)
        return LlmSolveResult(solve_llm(
            budget, model, tokens=tokens, model_config=model_config, seq_len=seq_len, global_batch=global_batch,
            strategies=strategies, precision="amp_bf16" if precision == api.DEFAULT_PRECISION else precision,
            framework=_llm_framework(kw.pop("framework", None), strategies), lora_rank=lora_rank, lora_targets=lora_targets,
            **kw))
    _refuse_given({"lora_rank": lora_rank, "lora_targets": lora_targets}, _FINETUNE_ONLY)
    refuse_transformer_only(model, seq_len=seq_len, global_batch=global_batch)
    return api.solve(budget, model, strategies=strategies, **kw)


def predict(model: str | None, gpu: str, gpus_per_node: int, nodes: int, nic: str | None, strategy: str, *,
            tokens: float | None = None, model_config: Any = None, seq_len: int | None = None,
            global_batch: int | None = None, tp: int = 1, pp: int = 1, micro_batch: int = 1,
            checkpointing: str | None = None, vp: int = 1, cp: int = 1, ep: int = 1, lora_rank: int | None = None,
            lora_targets: str | None = None, shard_group: int = 0, **kw: Any) -> dict[str, Any]:
    """One named design for any workload: `api.predict`'s arguments, plus for transformers `tokens`,
    `model_config`, `seq_len`, `global_batch`, `tp`, `pp`, `micro_batch`, `checkpointing`, `vp`; the
    whole-cost terms of hardware/site_terms.py as in `solve`."""
    _site_terms(kw)
    if is_llm(model, model_config, strategy, tokens):
        from costopt.search.llm_search import predict_llm

        _refuse_given(kw, _DP_PREDICT_ONLY)
        precision = kw.get("precision", api.DEFAULT_PRECISION)
        return predict_llm(model, gpu, gpus_per_node, nodes, nic, strategy, tp=tp, pp=pp, micro_batch=micro_batch,
                           checkpointing=checkpointing, seq_len=seq_len, global_batch=global_batch,
                           precision="amp_bf16" if precision == api.DEFAULT_PRECISION else precision,
                           nics_per_node=kw.get("nics_per_node", 1), chassis=kw.get("chassis"),
                           catalog=kw.get("catalog"), model_config=model_config, tokens=tokens, vp=vp, cp=cp,
                           framework=_llm_framework(kw.get("framework"), strategy), ep=ep, lora_rank=lora_rank,
                           lora_targets=lora_targets, shard_group=shard_group, tco_years=kw.get("tco_years", 0.0),
                           support_years=kw.get("support_years", 0.0), today=kw.get("today"))
    _refuse_given({"lora_rank": lora_rank, "lora_targets": lora_targets}, _FINETUNE_ONLY)
    if not isinstance(strategy, str):  # the CLI's repeatable --strategy: a data-parallel design has one
        if len(strategy) != 1:
            raise InputError(f"--strategy: a data-parallel predict takes one strategy, got {', '.join(strategy) or 'none'}",
                             field="strategy")
        strategy = strategy[0]
    refuse_transformer_only(model, seq_len=seq_len, global_batch=global_batch)
    given = {"tp": tp, "pp": pp, "micro_batch": micro_batch, "checkpointing": checkpointing, "vp": vp, "cp": cp,
             "ep": ep, "shard_group": shard_group}
    _refuse_given(given, {k: (d, f"applies to transformers (--model llama3_70b, --model-config); '{model}' is a "
                                 "data-parallel zoo model") for k, d in _LLM_PREDICT_ONLY.items()})
    if kw.get("support_years"):  # a catalog with no support price cannot honour it: refused (limits.py)
        from costopt.hardware.catalog import Catalog, load_catalog
        from costopt.search.limits import check_cost_options

        c = kw.get("catalog")
        check_cost_options(c if isinstance(c, Catalog) else load_catalog(c), kw["support_years"])
    return api.predict(model, gpu, gpus_per_node, nodes, nic, strategy, **kw)


__all__ = ["LlmSolveResult", "is_llm", "predict", "refuse_transformer_only", "solve"]
