"""Benchmark: peak memory of `solve`, `export` and `rent-vs-buy` on a catalog 20x the reference, in pieces.

Prints figures; it is not a test. Target (issue 13): at most 2 GB whatever the catalog size. The
catalog is the reference one with every GPU entry cloned 20 times (ids `<id>-c01` ... `-c19`, each
clone 0.5% dearer than the one before, so no two are tied) and every chassis `accepts_gpus` list
extended with the clones: 20x the GPUs, so 20x the designs. The request is the largest the CLI
makes: no budget (objective cost), up to 1024 nodes, reduction on GPUs and on CPUs.

`export` writes every design within the budget (at 1e7 USD about 2.7 M rows on the x20 catalog);
`rent-vs-buy` adds a cloud catalog 20x the shipped AWS one (every instance type cloned) with up to 1024
instances of a type, so its cloud space is larger than one piece too. Each command runs in its own
process, which reports its own CPU time and peak resident memory (ru_maxrss) at exit.

    python benchmarks/bench_memory.py [--copies 20] [--export-budget 1e6 --export-budget 1e7] [--skip-solve]
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from costopt.hardware.catalog import REFERENCE_CATALOG, load_catalog

CLOUD_CATALOG = Path(__file__).resolve().parents[1] / "catalogs" / "aws-on-demand-2025.toml"
from costopt.search.design_space import count_designs

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


def big_cloud_catalog(copies: int) -> str:
    """The shipped AWS cloud catalog with every instance type cloned `copies` times (ids `<id>-c01` ...,
    each clone 0.5% dearer than the one before), each clone stating the network its original loads from
    the provider's facts table (which knows only the original ids)."""
    from costopt.hardware.catalog import load_catalog as load

    path = CLOUD_CATALOG
    data = tomllib.loads(path.read_text())
    resolved = load(path).instances
    out = []
    for ins in data["instance"]:
        out.append(ins)
        facts = resolved[ins["id"]]
        for i in range(1, copies):
            c = copy.deepcopy(ins)
            c["id"] = f"{ins['id']}-c{i:02d}"
            c["usd_per_hour"] = round(ins["usd_per_hour"] * (1 + 0.005 * i), 4)
            c["network_gbps"], c["transport"] = facts.network_gbps, facts.transport
            out.append(c)
    parts = [_table("[catalog]", {**data["catalog"], "name": f"{data['catalog']['name']}-x{copies}"})]
    parts += [_table("[[instance]]", ins) for ins in out]
    return "\n\n".join(parts) + "\n"


# A child that runs the CLI in-process and reports its own CPU time and peak memory at exit on stderr.
CHILD = ("import atexit, resource, sys\n"
         "def _report():\n"
         "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
         "    sys.stderr.write(f'\\n@@bench {r.ru_utime + r.ru_stime:.3f} {r.ru_maxrss}\\n')\n"
         "atexit.register(_report)\n"
         "sys.argv = ['costopt'] + sys.argv[1:]\n"
         "from costopt.cli import main\n"
         "main()\n")


def run_cli(args: list[str], stdout_path: Path | None = None) -> dict:
    """One CLI command in a child process: wall, CPU and peak memory of that process, exit code."""
    t0 = time.perf_counter()
    with open(stdout_path or "/dev/null", "w") as out:
        p = subprocess.run([sys.executable, "-c", CHILD, *args], stdout=out, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    line = [ln for ln in p.stderr.splitlines() if ln.startswith("@@bench ")]
    cpu, rss_kb = (float(x) for x in line[-1].split()[1:]) if line else (float("nan"), float("nan"))
    err = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("@@bench")]
    return {"rc": p.returncode, "wall_s": wall, "cpu_s": cpu, "peak_gb": rss_kb * 1024 / 1e9, "stderr": err[-3:]}


def show(name: str, r: dict, target: str) -> None:
    print(f"  {name:<34} {r['cpu_s']:7.1f} s CPU {r['wall_s']:7.1f} s wall  peak {r['peak_gb']:5.2f} GB  "
          f"exit {r['rc']}   ({target})")
    if r["rc"] not in (0,):
        for ln in r["stderr"]:
            print(f"      {ln}")


def export_and_rent_vs_buy(copies: int, budgets: list[float], tmp: Path, big: Path) -> None:
    """Peak memory of `export` (csv, each budget: the larger the budget, the longer the table) and of
    `rent-vs-buy` on the x`copies` catalogs (owned: `big`; cloud: `big_cloud_catalog`, up to 1024 instances
    of a type), each in its own process."""
    cloud = tmp / "big-cloud.toml"
    cloud.write_text(big_cloud_catalog(copies))
    from costopt.search import api
    from costopt.hardware.cost import CostBasis

    ccat = load_catalog(cloud).with_max_instances(1024)
    n_cloud = count_designs(ccat, **api._space_kwargs(ccat, None, CostBasis(), max_nodes=1024))
    print(f"export and rent-vs-buy on the x{copies} catalogs (target <= 2 GB each); cloud x{copies}: "
          f"{len(ccat.instances)} instance types, {n_cloud:,} designs with up to 1024 instances")
    for budget in budgets:
        csv_out = tmp / "all.csv"
        r = run_cli(["export", "--model", "resnet50", "--budget", f"{budget:g}", "--catalog", str(big), "--out",
                     str(csv_out)])
        show(f"export --format csv --budget {budget:g}", r, "target <= 2 GB")
        if csv_out.exists():
            with csv_out.open() as fh:
                rows = sum(1 for _ in fh) - 1
            print(f"      {rows:,} designs within the budget, {csv_out.stat().st_size / 1e6:,.0f} MB")
            csv_out.unlink()
    r = run_cli(["rent-vs-buy", "--model", "resnet50", "--budget", f"{budgets[0]:g}", "--catalog", str(big),
                 "--cloud", str(cloud), "--max-instances", "1024", "--max-nodes", "1024", "--format", "json"])
    show(f"rent-vs-buy --budget {budgets[0]:g}", r, "target <= 2 GB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--export-budget", type=float, action="append",
                    help="export at this budget (repeat; default 1e6 and 1e7: about 0.26 M and 2.7 M rows at x20)")
    ap.add_argument("--skip-solve", action="store_true", help="only export and rent-vs-buy")
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
        if not args.skip_solve:
            solve_part(args.copies, path, Path(tmp))
        export_and_rent_vs_buy(args.copies, args.export_budget or [1e6, 1e7], Path(tmp), path)


def solve_part(copies: int, path: Path, tmp: Path) -> None:
    out = tmp / "solve.json"
    r = run_cli(["solve", "--model", "resnet50", "--objective", "cost", "--min-throughput", "20000", "--reduce-on", "gpu",
                 "--reduce-on", "cpu", "--catalog", str(path), "--format", "json"], out)
    show(f"solve on the x{copies} catalog", r, "target <= 2 GB")
    if r["rc"] == 0:
        best = json.loads(out.read_text())["best"]
        print(f"      best: {best['total_gpus']} x {best['gpu']}, {best['nic']}, {best['strategy']}, "
              f"${best['cost_usd']:,.0f}")


if __name__ == "__main__":
    main()
