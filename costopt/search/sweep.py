"""Scenario sweeps: a grid of scenarios through the one solve engine, on local processes or a Dask cluster.

A sweep file (TOML) names the axes of the grid; every combination is one scenario, solved by
`costopt.search.engine.solve` exactly as `costopt solve` would (data-parallel zoo models and
transformers alike), and the answers are one table, one row per scenario, in grid order:

    [sweep]
    models = ["llama3_70b", "inception_v3"]          # zoo models (data-parallel or transformer)
    budgets_usd = [1_000_000, 5_000_000]
    catalogs = ["reference-2026", "vendor-a.toml"]   # built-in names or paths (relative to this file)
    objective = "throughput"                         # optional: throughput | cost-per-throughput | cost
    tokens = 1e12                                    # optional: tokens to train (the transformers' work)
    epochs = 90                                      # optional, with dataset_size: the data-parallel work
    dataset_size = 1_281_167

    [[limits]]                                       # optional; each is one value of the limits axis
    name = "no limit"
    [[limits]]
    name = "100 kW"
    max_power_kw = 100                               # max_power_kw, max_rack_units, max_nodes,
                                                     # min_throughput, deadline_hours, tco_years, support_years

Scenarios = models x budgets x catalogs x limits. `tokens` is given to the transformers of the grid and
`epochs` / `dataset_size` to its data-parallel models (the work is what differs between the two kinds);
a work setting no model of the grid can use is refused, as is anything the engine refuses for a
scenario (the whole file then exits 2, naming the scenario). A scenario nothing satisfies is a row with
status `infeasible` and the engine's reason. Same file, same table (timings are not in it).

Where scenarios run:

- local processes by default (`concurrent.futures.ProcessPoolExecutor`, `workers` of them; one worker
  runs in this process);
- a Dask distributed cluster when given a scheduler address (`scheduler="tcp://host:8786"`) or a
  `distributed.Client`. Dask distributed is the engine chosen: it installs with pip alone
  (`pip install 'costopt[sweep]'`, no daemon or cluster manager to run first), its `LocalCluster` starts
  a real scheduler and workers inside a test, and its futures API (`client.map`, `as_completed`) is the
  same shape as the local executor's, so both paths share one loop. Ray would do the job too, but
  brings its own runtime and object store, more than independent solves of a few seconds need.

Either way a progress bar (rich) counts scenarios on stderr. The worker function `run_scenario` takes
and returns plain dicts, so nothing but the costopt package has to exist on a Dask worker.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from costopt.core.errors import InfeasibleError, InputError
from costopt.core.files import read_toml

SWEEP_KEYS = ("models", "budgets_usd", "catalogs", "objective", "tokens", "epochs", "dataset_size", "name")
LIMIT_KEYS = ("max_power_kw", "max_rack_units", "max_nodes", "min_throughput", "deadline_hours", "tco_years",
              "support_years")
OBJECTIVES = ("throughput", "cost-per-throughput", "cost")
COLUMNS = ("scenario", "model", "kind", "budget_usd", "catalog", "limits", "status", "reason", "gpu", "chassis",
           "gpus_per_node", "nodes", "total_gpus", "nic", "nics_per_node", "strategy", "throughput",
           "throughput_unit", "throughput_low", "throughput_high", "cost_usd", "power_kw", "hours_to_train")


@dataclass(frozen=True)
class Scenario:
    """One point of the grid, as plain data (what a worker receives)."""

    index: int
    model: str
    kind: str  # "data-parallel" | "transformer"
    budget_usd: float
    catalog: str  # a built-in name or an absolute path
    catalog_label: str
    limits_name: str
    limits: dict[str, float]
    objective: str
    work: dict[str, float]  # tokens, or epochs and dataset_size

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "model": self.model, "kind": self.kind, "budget_usd": self.budget_usd,
                "catalog": self.catalog, "catalog_label": self.catalog_label, "limits_name": self.limits_name,
                "limits": dict(self.limits), "objective": self.objective, "work": dict(self.work)}


@dataclass
class SweepSpec:
    path: str
    scenarios: list[Scenario]
    name: str = ""


@dataclass
class SweepResult:
    spec: SweepSpec
    rows: list[dict[str, Any]]
    engine: str  # "in-process" | "processes" | "dask"
    workers: int
    seconds: float = 0.0
    per_scenario_seconds: list[float] = field(default_factory=list)

    @property
    def scenarios_per_s(self) -> float:
        return len(self.rows) / self.seconds if self.seconds > 0 else math.inf


def _fail(where: str, msg: str, key: str | None = None) -> InputError:
    return InputError(f"{where}: {msg}", field=key)


def _number_list(where: str, key: str, v: Any) -> list[float]:
    if not isinstance(v, list) or not v:
        raise _fail(where, f"[sweep] {key} must be a non-empty list of numbers, got {v!r}", key)
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
            raise _fail(where, f"[sweep] {key}: every value must be a positive number, got {x!r}", key)
    return [float(x) for x in v]


def _string_list(where: str, key: str, v: Any) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
        raise _fail(where, f"[sweep] {key} must be a non-empty list of strings, got {v!r}", key)
    if len(set(v)) != len(v):
        raise _fail(where, f"[sweep] {key} lists a value twice", key)
    return list(v)


def _positive(where: str, key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise _fail(where, f"{key} must be a positive number, got {v!r}", key)
    return float(v)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file (module docstring); InputError names the file and the key."""
    p = Path(path)
    data = read_toml(p, "sweep file")
    where = str(p)
    extra = sorted(set(data) - {"sweep", "limits"})
    if extra:
        raise _fail(where, f"unknown table(s) {', '.join(extra)} (a sweep file has [sweep] and [[limits]])")
    sw = data.get("sweep")
    if not isinstance(sw, dict):
        raise _fail(where, "no [sweep] table (it lists models, budgets_usd and catalogs)")
    unknown = sorted(set(sw) - set(SWEEP_KEYS))
    if unknown:
        raise _fail(where, f"[sweep]: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(SWEEP_KEYS)})")
    for key in ("models", "budgets_usd", "catalogs"):
        if key not in sw:
            raise _fail(where, f"[sweep] needs {key}", key)
    models = _string_list(where, "models", sw["models"])
    budgets = _number_list(where, "budgets_usd", sw["budgets_usd"])
    catalogs = _string_list(where, "catalogs", sw["catalogs"])
    objective = sw.get("objective", "throughput")
    if objective not in OBJECTIVES:
        raise _fail(where, f"[sweep] objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}", "objective")
    name = sw.get("name", "")
    if not isinstance(name, str):
        raise _fail(where, f"[sweep] name must be a string, got {name!r}", "name")

    from costopt.perf.llm.arch import is_llm_model
    from costopt.perf.workload import list_models

    known = list_models()
    bad = [m for m in models if m not in known and not is_llm_model(m)]
    if bad:
        raise _fail(where, f"[sweep] models: unknown model {', '.join(repr(b) for b in bad)} (see `costopt models`)",
                    "models")
    kinds = {m: "transformer" if is_llm_model(m) else "data-parallel" for m in models}
    tokens = _positive(where, "[sweep] tokens", sw["tokens"]) if "tokens" in sw else None
    epochs = _positive(where, "[sweep] epochs", sw["epochs"]) if "epochs" in sw else None
    dataset = _positive(where, "[sweep] dataset_size", sw["dataset_size"]) if "dataset_size" in sw else None
    if tokens is not None and "transformer" not in kinds.values():
        raise _fail(where, "[sweep] tokens: no transformer among the models (tokens are a transformer's work)", "tokens")
    if (epochs is None) != (dataset is None):
        raise _fail(where, "[sweep] epochs and dataset_size go together (samples to train = epochs x dataset size)",
                    "epochs")
    if epochs is not None and "data-parallel" not in kinds.values():
        raise _fail(where, "[sweep] epochs / dataset_size: no data-parallel model among the models", "epochs")

    limits_list = data.get("limits", [{"name": "none"}])
    if not isinstance(limits_list, list) or not limits_list:
        raise _fail(where, "[[limits]] must be one or more tables")
    limit_sets: list[tuple[str, dict[str, float]]] = []
    for i, lim in enumerate(limits_list):
        at = f"[[limits]] #{i + 1}"
        if not isinstance(lim, dict):
            raise _fail(where, f"{at} must be a table")
        unknown = sorted(set(lim) - set(LIMIT_KEYS) - {"name"})
        if unknown:
            raise _fail(where, f"{at}: unknown key(s) {', '.join(unknown)} (allowed: name, {', '.join(LIMIT_KEYS)})")
        lname = lim.get("name", f"limits {i + 1}")
        if not isinstance(lname, str) or not lname.strip():
            raise _fail(where, f"{at}: name must be a non-empty string", "name")
        vals = {}
        for k in LIMIT_KEYS:
            if k in lim:
                if k in ("tco_years", "support_years") and lim[k] == 0:
                    vals[k] = 0.0
                    continue
                vals[k] = _positive(where, f"{at} {k}", lim[k])
        if "max_nodes" in vals:
            if vals["max_nodes"] != int(vals["max_nodes"]):
                raise _fail(where, f"{at} max_nodes must be a whole number, got {lim['max_nodes']!r}", "max_nodes")
            vals["max_nodes"] = int(vals["max_nodes"])
        limit_sets.append((lname, vals))
    if len({n for n, _ in limit_sets}) != len(limit_sets):
        raise _fail(where, "[[limits]]: two sets have the same name")

    cats = [(_catalog_ref(c, p.parent, where), c) for c in catalogs]
    scenarios = []
    for i, (m, b, (cref, clabel), (lname, lim)) in enumerate(itertools.product(models, budgets, cats, limit_sets)):
        work = ({"tokens": tokens} if tokens is not None else {}) if kinds[m] == "transformer" else \
            ({"epochs": epochs, "dataset_size": dataset} if epochs is not None else {})
        scenarios.append(Scenario(i, m, kinds[m], b, cref, clabel, lname, lim, objective, work))
    return SweepSpec(where, scenarios, name)


def _catalog_ref(name: str, base: Path, where: str) -> str:
    """A built-in catalog name (`costopt catalog list`) as it is, else a path made absolute (relative to
    the sweep file); loaded once here, so a bad catalog stops the sweep before any scenario runs."""
    from costopt.hardware.catalog import builtin_catalogs, load_catalog

    p = base / name
    ref = name if (name in builtin_catalogs() and not p.exists()) else str(p.resolve())
    try:
        load_catalog(ref)
    except InputError as exc:
        raise _fail(where, f"[sweep] catalogs: {name!r}: {exc}", "catalogs") from None
    return ref


def run_scenario(s: dict[str, Any]) -> dict[str, Any]:
    """Solve one scenario (a `Scenario.as_dict()`); a plain dict back: its row, its seconds, and
    `input_error` when the engine refused it. Module-level so processes and Dask workers can run it."""
    from costopt.search.engine import solve

    t0 = time.perf_counter()
    row: dict[str, Any] = {"scenario": s["index"], "model": s["model"], "kind": s["kind"],
                           "budget_usd": s["budget_usd"], "catalog": s["catalog_label"], "limits": s["limits_name"]}
    try:
        res = solve(s["budget_usd"], s["model"], catalog=s["catalog"], objective=s["objective"], **s["limits"], **s["work"])
        row.update(status="ok", reason="", **_design_columns(res.best, s["kind"]))
    except InfeasibleError as exc:
        row.update(status="infeasible", reason=str(exc).split("\n")[0], **_design_columns(None, s["kind"]))
    except InputError as exc:
        return {"row": row, "seconds": time.perf_counter() - t0, "input_error": str(exc)}
    return {"row": {c: row.get(c) for c in COLUMNS}, "seconds": time.perf_counter() - t0, "input_error": None}


def _design_columns(d: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    llm = kind == "transformer"
    unit = "tokens/s" if llm else "samples/s"
    if d is None:
        return {"throughput_unit": unit}
    thr, lo, hi = (("tokens_per_s", "tokens_per_s_low", "tokens_per_s_high") if llm else
                   ("throughput_samples_per_s", "throughput_low_samples_per_s", "throughput_high_samples_per_s"))
    return {"gpu": d.get("gpu"), "chassis": d.get("chassis"), "gpus_per_node": d.get("gpus_per_node"),
            "nodes": d.get("nodes"), "total_gpus": d.get("total_gpus"), "nic": d.get("nic"),
            "nics_per_node": d.get("nics_per_node"), "strategy": d.get("strategy"), "throughput": d.get(thr),
            "throughput_unit": unit, "throughput_low": d.get(lo), "throughput_high": d.get(hi),
            "cost_usd": d.get("cost_usd"), "power_kw": d.get("power_kw"),
            "hours_to_train": d.get("hours_to_train") if llm else d.get("time_to_train_h")}


def _progress(enabled: bool, total: int):
    from contextlib import nullcontext

    if not enabled:
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)


def run_sweep(spec: SweepSpec, *, workers: int | None = None, scheduler: str | None = None, client: Any = None,
              progress: bool = True) -> SweepResult:
    """Every scenario of `spec` (module docstring). `scheduler` (an address) or `client` (a
    `distributed.Client`): on that Dask cluster; else `workers` local processes (default: the CPUs, at
    most one per scenario; 1: in this process). Rows come back in grid order whatever finishes first."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"--workers must be a whole number >= 1, got {workers!r}", field="workers")
    if scheduler is not None and client is not None:
        raise InputError("give a scheduler address or a client, not both", field="scheduler")
    if (scheduler is not None or client is not None) and workers is not None:
        raise InputError("--workers: a Dask cluster has its own workers (start them with the cluster)",
                         field="workers")
    tasks = [s.as_dict() for s in spec.scenarios]
    results: dict[int, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with _progress(progress, len(tasks)) as bar:
        task = bar.add_task("sweep", total=len(tasks)) if bar is not None else None
        done = lambda r: (results.__setitem__(r["row"]["scenario"], r),  # noqa: E731
                          _check(spec, r), bar.advance(task) if bar is not None else None)
        if scheduler is not None or client is not None:
            engine, n = "dask", _run_dask(tasks, scheduler, client, done)
        else:
            n = min(workers or os.cpu_count() or 1, len(tasks))
            engine = "in-process" if n == 1 else "processes"
            if n == 1:
                for t in tasks:
                    done(run_scenario(t))
            else:
                with ProcessPoolExecutor(max_workers=n) as pool:
                    futures = [pool.submit(run_scenario, t) for t in tasks]
                    try:
                        for f in as_completed(futures):
                            done(f.result())
                    except BaseException:
                        for f in futures:
                            f.cancel()
                        raise
    seconds = time.perf_counter() - t0
    ordered = [results[i] for i in range(len(tasks))]
    return SweepResult(spec, [r["row"] for r in ordered], engine, n, seconds, [r["seconds"] for r in ordered])


def _check(spec: SweepSpec, r: dict[str, Any]) -> None:
    if r.get("input_error"):
        row = r["row"]
        raise InputError(f"{spec.path}: scenario {row['scenario'] + 1} ({row['model']}, ${row['budget_usd']:,.0f}, "
                         f"{row['catalog']}, limits {row['limits']!r}): {r['input_error']}")


def _run_dask(tasks: list[dict[str, Any]], scheduler: str | None, client: Any, done) -> int:
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise InputError("--scheduler needs Dask distributed: pip install 'costopt[sweep]'",
                         field="scheduler") from None
    own = client is None
    if own:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({exc})",
                             field="scheduler") from None
    try:
        n = max(len(client.scheduler_info().get("workers", {})), 1)
        futures = client.map(run_scenario, tasks, pure=False)
        try:
            for f in dask_completed(futures):
                done(f.result())
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        if own:
            client.close()
    return n


def table(result: SweepResult):
    """The rows as a pandas DataFrame, columns in COLUMNS order."""
    import pandas as pd

    return pd.DataFrame(result.rows, columns=list(COLUMNS))


def write_table(result: SweepResult, out: str | Path, fmt: str, inputs: Iterable[Any] = ()) -> Path:
    """csv or json (one object per scenario), written atomically; never over an input."""
    from costopt.core.checks import write_text
    from costopt.core.files import json_safe
    import json

    df = table(result)
    if fmt == "csv":
        text = df.to_csv(index=False, lineterminator="\n")
    elif fmt == "json":
        text = json.dumps([json_safe(r) for r in result.rows], indent=1, sort_keys=False) + "\n"
    else:
        raise InputError(f"--format must be csv or json, got {fmt!r}", field="format")
    return write_text(out, text, "sweep table", inputs)


def write_plot(result: SweepResult, out: str | Path, inputs: Iterable[Any] = ()) -> Path:
    """A PNG: the best throughput against the budget, one line per (model, catalog, limits), one panel
    per throughput unit (samples/s, tokens/s); infeasible scenarios are left out of the lines."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from costopt.core.checks import write_bytes_atomic

    rows = [r for r in result.rows if r["status"] == "ok"]
    units = sorted({r["throughput_unit"] for r in rows}) or ["samples/s"]
    fig, axes = plt.subplots(1, len(units), figsize=(6.5 * len(units), 4.5), squeeze=False, layout="constrained")
    for ax, unit in zip(axes[0], units):
        lines: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        for r in rows:
            if r["throughput_unit"] == unit:
                lines.setdefault((r["model"], r["catalog"], r["limits"]), []).append((r["budget_usd"], r["throughput"]))
        for (m, c, lim), pts in lines.items():
            pts.sort()
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"{m} / {c} / {lim}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("budget (USD)")
        ax.set_ylabel(f"best design's throughput ({unit})")
        ax.grid(alpha=0.3, which="both")
        if lines:
            ax.legend(fontsize=7)
    fig.suptitle(f"costopt sweep: {result.spec.name or Path(result.spec.path).name}", fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return write_bytes_atomic(out, buf.getvalue(), "sweep plot", inputs)
