"""The whole cost of owning, set per run: a catalog's [site] terms replaced by options (`costopt solve
--colocation-usd-per-kw-month 150 ...`, or `costopt.solve(..., colocation_usd_per_kw_month=150)`).

Each option is a field of the catalog's [site] table (catalog_schema.Site, the same name and unit; the
defaults and their sources: records.Site.source / tco_source, docs/sources.md §11). `with_site_terms`
checks the new values with the catalog's own rules (catalog_schema.Site: a negative price, a PUE below 1,
a percentage over 100 are refused naming the option) and returns a new catalog whose site holds them;
every cost is then priced by cost.py as for a catalog file that said the same (no second cost path).
The fields given are listed in `Site.given_on_command_line`, so the whole-cost lines (bom.tco_lines)
say their rate came from the command line rather than from the catalog's source.

The terms price the whole cost of owning (cost.tco_terms): a run that prices a purchase alone (capex,
no `--tco-years`, no amortisation beside a rented design) cannot use them, so they are refused there
(exit 2, naming the option), never ignored; so are they for a catalog that rents every node.
"""

from __future__ import annotations

from typing import Any

from costopt.core.errors import InputError

# site field -> (flag, help). The field names are catalog_schema.Site's (units in the names).
SITE_TERMS: dict[str, tuple[str, str]] = {
    "facility": ("--facility", "colocation | own: rent space and power per kW-month, or your own building (PUE "
                 "only, no colocation line)."),
    "colocation_usd_per_kw_month": ("--colocation-usd-per-kw-month", "Colocation price, USD per kW of IT power "
                                    "per month."),
    "electricity_usd_per_kwh": ("--electricity-usd-per-kwh", "Electricity price, USD per kWh."),
    "pue": ("--pue", "Power usage effectiveness of air-cooled nodes (facility kW / IT kW, 1-3)."),
    "liquid_pue": ("--liquid-pue", "Power usage effectiveness of liquid-cooled nodes (GPUs over the catalog's "
                   "liquid_above_tdp_w, 1000 W built in; 1-3)."),
    "support_pct_per_year": ("--support-pct-per-year", "Hardware support, % of the hardware price per year "
                             "(beyond the years --support-years buys up front)."),
    "storage_tb": ("--storage-tb", "Usable TB of shared storage bought (default: sized to the job, "
                   "storage_tb_per_gpu per GPU)."),
    "storage_usd_per_tb": ("--storage-usd-per-tb", "Storage price, USD per usable TB, bought once (0: none)."),
    "staff_usd_per_gpu_year": ("--staff-usd-per-gpu-year", "Operations staff, USD per GPU per year."),
    "cost_of_capital_pct": ("--cost-of-capital-pct", "Cost of capital, % per year: capex + storage paid by a loan "
                            "over the horizon (0: paid in cash)."),
    "residual_pct_at_3_years": ("--residual-pct-at-3-years", "Resale value after 36 months, % of the hardware "
                                "price (straight line to the horizon)."),
}


def flag(name: str) -> str:
    return SITE_TERMS[name][0]


def given_terms(values: dict[str, Any]) -> dict[str, Any]:
    """The site terms among `values` that were given (not None); an unknown one is a TypeError."""
    return {k: v for k, v in values.items() if k in SITE_TERMS and v is not None}


def pop_terms(kw: dict[str, Any]) -> dict[str, Any]:
    """Take the site terms out of a keyword dict (engine.solve/predict's **kw); those given."""
    return given_terms({k: kw.pop(k) for k in list(kw) if k in SITE_TERMS})


def refuse_unpriced(terms: dict[str, Any], why: str = "give --tco-years") -> None:
    """Exit 2 on the first term given where the run prices no whole cost of owning."""
    if terms:
        name = next(iter(terms))
        raise InputError(f"{flag(name)} {_text(terms[name])}: prices the whole cost of owning, and this run prices "
                         f"the purchase alone (capex); {why}", field=name)


def _text(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def with_site_terms(catalog: Any, terms: dict[str, Any], *, priced: bool = True, why: str = "give --tco-years"):
    """`catalog` (a Catalog, a path, a built-in name or None) with its [site] terms replaced by `terms`
    (site field -> value; None values left out). No terms: `catalog` unchanged (not loaded). `priced`
    False (the run prices capex alone): refused, naming the first term, with `why`."""
    terms = given_terms(terms)
    if not terms:
        return catalog
    from costopt.hardware.catalog import Catalog, load_catalog
    from costopt.hardware.records import Site

    cat = catalog if isinstance(catalog, Catalog) else load_catalog(catalog)
    site = check_site(cat.site.model_dump(), terms)  # an out-of-range value is named first
    refuse_unpriced(terms, why) if not priced else None
    if cat.is_cloud:
        name = next(iter(terms))
        raise InputError(f"{flag(name)}: catalog {cat.path or cat.catalog.name} rents every node (a cloud catalog); "
                         "the whole cost of owning prices owned designs", field=name)
    return cat.model_copy(update={"site": Site(**site)})


def check_site(site: dict[str, Any], terms: dict[str, Any]) -> dict[str, Any]:
    """`site` (a Site's fields) with `terms` in, checked by the catalog's rules (catalog_schema.Site); an
    out-of-range value is one InputError naming its option and the allowed range."""
    from pydantic import ValidationError

    from costopt.hardware.catalog_schema import Site as SiteSchema

    if "storage_tb" in terms and not (isinstance(terms["storage_tb"], (int, float)) and terms["storage_tb"] > 0):
        raise InputError(f"--storage-tb {_text(terms['storage_tb'])}: give the usable TB (> 0); leave it out to size "
                         "storage to the job, or give --storage-usd-per-tb 0 for no storage", field="storage_tb")
    data = {**site, **terms}
    data["given_on_command_line"] = sorted(set(site.get("given_on_command_line", [])) | set(terms))
    try:
        return SiteSchema(**data).model_dump(mode="json")
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err.get("loc") else next(iter(terms))
        shown = flag(name) if name in SITE_TERMS else name
        value = terms.get(name, data.get(name))
        raise InputError(f"{shown} {_text(value)}: {err['msg'].lower()}", field=name) from None


def describe(site: Any) -> dict[str, Any]:
    """The site terms a run priced with, for JSON: each field's value and whether it came from the
    command line or the catalog (with the catalog's source and date)."""
    given = set(getattr(site, "given_on_command_line", []) or [])
    out = {name: getattr(site, name) for name in SITE_TERMS}
    out["storage_tb_per_gpu"] = site.storage_tb_per_gpu
    out["given_on_command_line"] = sorted(given)
    out["source"] = site.tco_source
    out["date"] = site.tco_date
    out["electricity_source"] = site.source
    out["electricity_date"] = site.date
    return out


__all__ = ["SITE_TERMS", "check_site", "describe", "flag", "given_terms", "pop_terms", "refuse_unpriced",
           "with_site_terms"]
