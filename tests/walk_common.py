"""What the option-walk tests share (tests/test_option_walk*.py)."""

from __future__ import annotations


MODEL_TOML = ('name = "tiny_gpt"\nlayers = 12\nhidden = 768\nheads = 12\nffn_hidden = 3072\nvocab = 50257\n'
              'seq_len = 1024\nsource = "GPT-2 small shape (Radford et al. 2019), for this test"\n')
# a system file: the shipped defaults with slower networks (changes the communication time)
SYSTEM_TOML = "[network]\ntcp_efficiency = 0.3\nrdma_efficiency = 0.3\n"


def write_model_and_system(d) -> dict[str, str]:
    """model.toml (MODEL_TOML) and system.toml (SYSTEM_TOML) in folder `d`; their paths as MODEL and SYSTEM."""
    (d / "model.toml").write_text(MODEL_TOML)
    (d / "system.toml").write_text(SYSTEM_TOML)
    return {"MODEL": str(d / "model.toml"), "SYSTEM": str(d / "system.toml")}


def overlay_toml(name: str, gpus: list[str]) -> str:
    """An overlay of the reference catalog that offers only `gpus` (the walks' catalogs where a part matters)."""
    listed = ", ".join(f'"{g}"' for g in gpus)
    return (f'[catalog]\nname = "{name}"\nbase = "reference-2026"\ndescription = "{", ".join(gpus)} only, for this '
            f'test"\ndate = "2026-12-01"\n\n[availability]\ngpu = [{listed}]\n')


def check_decision(param, decision: str, extra: list[str], rc: int, out: str, changed: bool, where: str,
                   ok_codes: tuple[int, ...] = (0, 1)) -> None:
    """One option-walk verdict: "refused" is exit 2 with a line naming the option (one of `param`'s flags) and
    no traceback; "changes" is an exit in `ok_codes` and `changed` (the output differs from the base's)."""
    name = param.name
    if decision == "refused":
        flags = list(param.opts) + list(param.secondary_opts or [])
        assert rc == 2, f"{name}: expected a refusal (exit 2), got {rc}:\n{out[-2000:]}"
        assert any(f in out for f in flags), f"{name}: the refusal does not name the option:\n{out[-2000:]}"
        assert "Traceback" not in out
    else:
        assert rc in ok_codes, f"{name}: exit {rc}:\n{out[-2000:]}"
        assert changed, f"{name}: {extra} changed nothing in {where}: silently ignored"


def merge_options(base: list[str], extra: list[str]) -> list[str]:
    """`base` with `extra`'s options replacing the base's value of the same option (each option in `base`
    takes one value), then `extra` appended."""
    flags = {a for a in extra if a.startswith("--")}
    out, i = [], 0
    while i < len(base):
        if base[i] in flags:
            i += 2
            continue
        out.append(base[i])
        i += 1
    return out + extra


# the whole-cost options (costopt/cli/ownership.py), each with a value chosen by hand so that it matters
# (a price unlike the built-in default; --facility own drops the colocation line)
OWNERSHIP = {
    "facility": ["--facility", "own"],
    "colocation_usd_per_kw_month": ["--colocation-usd-per-kw-month", "100"],
    "electricity_usd_per_kwh": ["--electricity-usd-per-kwh", "0.2"],
    "pue": ["--pue", "1.2"],
    "liquid_pue": ["--liquid-pue", "1.5"],
    "support_pct_per_year": ["--support-pct-per-year", "10"],
    "storage_tb": ["--storage-tb", "100"],
    "storage_usd_per_tb": ["--storage-usd-per-tb", "500"],
    "staff_usd_per_gpu_year": ["--staff-usd-per-gpu-year", "2000"],
    "cost_of_capital_pct": ["--cost-of-capital-pct", "0"],
    "residual_pct_at_3_years": ["--residual-pct-at-3-years", "0"],
}
TCO = ["--tco-years", "3"]  # the context that prices them (capex alone prices none: refused without it)
