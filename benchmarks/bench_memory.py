"""Benchmark: peak memory of `solve` on a catalog 20x the reference, evaluated in pieces.

Prints figures; it is not a test. Target (issue 13): at most 2 GB whatever the catalog size. The
catalog is the reference one with every GPU entry cloned 20 times (ids `<id>-c01` ... `-c19`, each
clone 0.5% dearer than the one before, so no two are tied) and every chassis `accepts_gpus` list
extended with the clones: 20x the GPUs, so 20x the designs. The request is the largest the CLI
makes: no budget (objective cost), up to 1024 nodes, reduction on GPUs and on CPUs.

    python benchmarks/bench_memory.py [--copies 20]
"""

from __future__ import annotations

import argparse
import copy
import resource
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from costopt.catalog import REFERENCE_CATALOG, load_catalog
from costopt.design_space import count_designs

BYTES_PER_DESIGN = 470  # measured: 1.76 M designs evaluated at once peak at about 0.83 GB


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def _table(name: str, d: dict) -> str:
    lines = [name]
    subs = []
    for k, v in d.items():
        if isinstance(v, dict):
            subs.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for k, v in subs:
        lines.append(f"{k} = {{ " + ", ".join(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()) + " }")
    return "\n".join(lines)


def big_catalog(copies: int) -> str:
    data = tomllib.loads(REFERENCE_CATALOG.read_text())
    gpus = []
    for g in data["gpu"]:
        gpus.append(g)
        for i in range(1, copies):
            c = copy.deepcopy(g)
            c["id"] = f"{g['id']}-c{i:02d}"
            c["price_usd"] = round(g["price_usd"] * (1 + 0.005 * i), 2)
            gpus.append(c)
    for ch in data["chassis"]:
        if ch.get("accepts_gpus"):
            ch["accepts_gpus"] = [x for gid in ch["accepts_gpus"] for x in [gid] + [f"{gid}-c{i:02d}" for i in range(1, copies)]]
    parts = [_table("[catalog]", {**data["catalog"], "name": f"reference-x{copies}"})]
    if "site" in data:
        parts.append(_table("[site]", data["site"]))
    parts += [_table("[[gpu]]", g) for g in gpus]
    parts += [_table("[[chassis]]", c) for c in data["chassis"]]
    parts += [_table("[[nic]]", n) for n in data["nic"]]
    return "\n\n".join(parts) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.toml"
        path.write_text(big_catalog(args.copies))
        cat = load_catalog(path)
        ref = load_catalog()
        kw = dict(max_nodes=1024, reduce_on=("gpu", "cpu"))
        n_ref, n_big = count_designs(ref, **kw), count_designs(cat, **kw)
        print(f"reference catalog: {len(ref.gpu)} GPUs, {n_ref:,} designs; x{args.copies} catalog: {len(cat.gpu)} GPUs, "
              f"{n_big:,} designs ({n_big / n_ref:.1f}x)")
        print(f"evaluated at once these would need about {n_big * BYTES_PER_DESIGN / 1e9:.0f} GB "
              f"({BYTES_PER_DESIGN} bytes per design)")
        cmd = [sys.executable, "-m", "costopt.cli", "solve", "--model", "resnet50", "--objective", "cost",
               "--min-throughput", "20000", "--reduce-on", "gpu", "--reduce-on", "cpu", "--catalog", str(path),
               "--format", "json"]
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            print(out.stderr)
            raise SystemExit(out.returncode)
        peak_gb = after.ru_maxrss * 1024 / 1e9  # ru_maxrss is in KiB on Linux
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        import json

        best = json.loads(out.stdout)["best"]
        print(f"solve on the x{args.copies} catalog: peak memory {peak_gb:.2f} GB (target <= 2 GB), {wall:.0f} s wall, "
              f"{cpu:.0f} s CPU; best: {best['total_gpus']} x {best['gpu']}, {best['nic']}, {best['strategy']}, "
              f"${best['cost_usd']:,.0f}")


if __name__ == "__main__":
    main()
