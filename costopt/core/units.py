"""One unit convention for the whole code base: SI, decimal.

1 GB = 1e9 bytes, 1 GB/s = 1e9 bytes/s, 1 Gb/s = 1e9 bit/s = 1.25e8 bytes/s. Field names carry
their unit (`memory_gb`, `line_rate_gbps`, `latency_us`, `price_usd`). Converting happens here and
only here, so a mix of 1e9 and 2**30 cannot creep in.
"""

from __future__ import annotations

BYTES_PER_GB = 1e9
BITS_PER_BYTE = 8.0
HOURS_PER_YEAR = 8766.0  # 365.25 days


def gbps_to_bytes_per_s(gbps):
    """Network line rate in Gb/s (1e9 bit/s) to bytes per second."""
    return gbps * 1e9 / BITS_PER_BYTE


def gb_per_s_to_bytes_per_s(gb_per_s):
    """Bandwidth in GB/s (1e9 bytes/s) to bytes per second."""
    return gb_per_s * BYTES_PER_GB


def gb_to_bytes(gb):
    return gb * BYTES_PER_GB


def bytes_to_gb(n_bytes):
    return n_bytes / BYTES_PER_GB


def ms_to_s(ms):
    return ms / 1e3  # division keeps round inputs exact (12.5 ms -> 0.0125 s)


def us_to_s(us):
    return us / 1e6


# PCIe x16 bandwidth per direction, GB/s (spec), by generation.
# Source: docs/sources.md §3b (stas00/ml-engineering 744d01e, 2026-08).
PCIE_X16_GB_PER_S = {3: 16.0, 4: 31.0, 5: 63.0, 6: 121.0}


def pcie_x16_gbps(gen: int) -> float:
    """Line capacity of a PCIe x16 slot in Gb/s, to check that a NIC fits the slot."""
    return PCIE_X16_GB_PER_S[gen] * BITS_PER_BYTE


def format_usd(v: float | None, cents: bool = False) -> str:
    """USD for people, never in scientific notation: whole dollars from $100 ($1,265,920), cents below
    (or always with `cents`), and two significant digits under a cent ($0.000065)."""
    import math

    if v is None or not math.isfinite(v):
        return "-"
    if abs(v) >= 100 and not cents:
        return f"${v:,.0f}"
    if abs(v) >= 0.01 or v == 0:
        return f"${v:,.2f}"
    decimals = -math.floor(math.log10(abs(v))) + 1
    return f"${v:.{decimals}f}"


def plain_number(v: float, significant: int = 6) -> str:
    """A number for CSV cells: `significant` digits, positional, never in scientific notation
    (1265920.4 -> 1265920, 6.5e-05 -> 0.000065, 187418000.0 -> 187418000)."""
    import numpy as np

    return np.format_float_positional(float(v), precision=significant, unique=True, fractional=False, trim="-")
