"""The compute fits, kept across runs: fitted once per content of the data they come from, not once per run.

The compute estimate of a GPU (perf/compute.py) rests on two fits over shipped data: the roofline
fractions of each precision class (`_fit_class`: least squares over the zoo's H200 sweeps, the published
tables and the TensorFlow 2017 figures) and the host/GPU split of one measured sweep (`reference_split`,
a grid search per phase, perf/host_gpu.py). Both are pure functions of that data and their arguments, and
together they were about 0.45 s of the headline command's 1.2 s of CPU, every run
(benchmarks/bench_startup.py).

An entry lives in the validated-catalog cache (hardware/validated_cache.py) and has its trust model: the
folder and entry must be the user's own and writable by no one else, the entry's digest must match,
and a miss of any kind (no entry, a changed file, a tampered or foreign entry, data that does not build)
is computed again, the same numbers, and rewritten. The key is a SHA-256 of the costopt version, the
source of the fitting modules (`FIT_MODULES`), the fit's name and arguments, the settings of
data/compute_defaults.toml as the process holds them, and that file's bytes; every other file a fit reads (`fit_inputs`: the zoo, the published tables,
data/llm_defaults.toml, the reference catalog) is listed in the entry with its digest and checked on
read. Floats are kept as JSON numbers (repr), so a hit returns exactly the fitted values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

from costopt.core.paths import DATA_DIR

T = TypeVar("T")
FIT_MODULES = ("perf/compute.py", "perf/host_gpu.py", "perf/bounded_lsq.py", "perf/fit_cache.py")


def fit_inputs() -> list[Path]:
    """Every file the fits read, data/compute_defaults.toml first (the key is made from it)."""
    from costopt.hardware.catalog import REFERENCE_CATALOG

    return [DATA_DIR / "compute_defaults.toml", *sorted((DATA_DIR / "zoo").glob("*.json")),
            DATA_DIR / "published" / "lambda_single_gpu.json", DATA_DIR / "published" / "tf_bench_2017_single_gpu.json",
            DATA_DIR / "llm_defaults.toml", Path(REFERENCE_CATALOG)]


def cached(name: str, args: str, compute: Callable[[], T], dump: Callable[[T], Any], load: Callable[[Any], T]) -> T:
    """`compute()`, or what the cache keeps for (`name`, `args`: a deterministic text of the arguments);
    `dump` makes it JSON-able, `load` turns the JSON back (an error in `load` is a miss)."""
    import json

    from costopt.hardware import validated_cache
    from costopt.perf.host_gpu import defaults

    files = fit_inputs()
    # the settings as this process holds them (a tool may change one, e.g. tools/compute_logo.py's exponent)
    settings = json.dumps(defaults(), sort_keys=True, default=str)
    k = validated_cache.key("fit", files[0], FIT_MODULES, extra=f"{name}\n{args}\n{settings}")
    hit = validated_cache.get(k, load)
    if hit is not None:
        return hit
    out = compute()
    validated_cache.put(k, files, dump(out))
    return out
