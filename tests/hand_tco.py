"""The whole cost of owning at the default [site] rates, written out by hand (a reference for tests, not the
product's code): storage 1 TB usable per GPU at $200 per TB; a loan of capex + storage at 7% a year repaid
over the years; colocation $194.95 per kW-month of the design's power; support 6% of the hardware a year;
operations staff $800 per GPU-year; resale 30% of the hardware after 3 years, straight line
(1 - years x 0.7 / 3, at least 0). Hardware = capex when no support is bought up front."""

HOURS_IN_A_YEAR = 365.25 * 24


def whole_cost_without_power(capex: float, power_kw: float, gpus: int, years: float) -> float:
    storage = gpus * 1.0 * 200.0
    loan = capex + storage
    financing = years * loan * 0.07 / (1 - 1.07 ** -years) - loan if years > 0 else 0.0
    colo = years * 12 * 194.95 * power_kw
    support = years * 0.06 * capex
    staff = years * 800.0 * gpus
    resale = capex * max(0.0, 1 - years * 0.7 / 3)
    return capex + storage + financing + colo + support + staff - resale
