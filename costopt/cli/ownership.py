"""The whole-cost options, defined once for every command that prices owning (hardware/site_terms.py):
`--facility`, `--colocation-usd-per-kw-month`, `--electricity-usd-per-kwh`, `--pue`, `--liquid-pue`,
`--support-pct-per-year`,
`--storage-tb`, `--storage-usd-per-tb`, `--staff-usd-per-gpu-year`, `--cost-of-capital-pct`,
`--residual-pct-at-3-years`.

`@ownership_options` adds them to a command: its function takes one parameter `ownership` (the terms
given, site field -> value; empty when none) in their place, and hands it on (engine.solve/predict take
the same names as keywords; `with_site_terms` puts them into a catalog)."""

from __future__ import annotations

import functools
import inspect
from dataclasses import fields
from typing import Any, Callable, Optional

import typer

from costopt.hardware.site_terms import SITE_TERMS, given_terms, with_site_terms


def _default_text(name: str) -> str:
    from costopt.hardware.records import Site

    default = next(f.default for f in fields(Site) if f.name == name)
    if name == "storage_tb":
        return "sized to the job (storage_tb_per_gpu per GPU)"
    return f"{default:g}" if isinstance(default, float) else str(default)


def _param(name: str) -> inspect.Parameter:
    flag, text = SITE_TERMS[name]
    opt = typer.Option(None, flag, help=f"{text} A term of the whole cost of owning (--tco-years, or a purchase amortised beside a rent); default: the catalog's "
                       f"[site] {name} (built-in catalogs: {_default_text(name)}; docs/commands.md).")
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt,
                             annotation=Optional[str] if name == "facility" else Optional[float])


def ownership_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The command `func` with the whole-cost options in place of its `ownership` parameter."""
    sig = inspect.signature(func, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "ownership"]
    params += [_param(n) for n in SITE_TERMS]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        terms = given_terms({k: kwargs.pop(k, None) for k in SITE_TERMS})
        return func(*args, ownership=terms, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


_COMPARE_WHY = ("give --tco-years, or compare an owned catalog with a cloud one on a horizon (the purchase is then "
                "amortised: its whole cost of owning)")


def compare_catalogs(catalogs: list, ownership: dict[str, Any], tco_years: float) -> list:
    """`compare`'s catalogs with the whole-cost terms in the owned ones. Priced with --tco-years, or when
    owned catalogs are compared with cloud ones (owned designs amortised: purchasing.compare)."""
    if not ownership:
        return catalogs
    from costopt.hardware.catalog import load_catalog

    cats = [load_catalog(c) for c in catalogs]
    cloud = [c.is_cloud for c in cats]
    priced = bool(tco_years) or (any(cloud) and not all(cloud))
    if all(cloud):
        return [with_site_terms(cats[0], ownership, priced=priced, why=_COMPARE_WHY)]  # refused: no owned catalog
    return [c if c.is_cloud else with_site_terms(c, ownership, priced=priced, why=_COMPARE_WHY) for c in cats]


__all__ = ["compare_catalogs", "ownership_options"]
