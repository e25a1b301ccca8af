#!/usr/bin/env python3
"""A real distributed rig that checks costopt's communication model (Linux, root, PyTorch).

W worker processes, each in its own network namespace with one veth "NIC" joined to a bridge;
every host's link is shaped with `tc` (tbf, both directions: egress inside the namespace, and the
bridge-side egress, which is the host's ingress), optionally with added latency (netem, where the
kernel has it). The workers synchronise a model's gradients over torch.distributed (gloo, TCP):

  ring  gloo all-reduce of each DDP-sized gradient bucket in turn;
  ps    parameter server: one shard per host, whole tensors placed greedily by size in creation
        order (as costopt.perf.placement), push the gradients to their owners, then pull the updates.

It prints the measured communication time per iteration beside costopt's prediction for the same
bytes, bandwidth and latency, and the error. Predictions use costopt's formulas (costopt/perf/timing.py):

  ring  t = Σ_buckets 2(W-1)/W · s_k / B  +  n_buckets · t_small
  ps    t = 2 · X(W) / B  +  α_msg · (R(W) + n·(W-1)/W)  +  W · S_max · 3 / B_hmem
        X(W), R(W), S_max from costopt.perf.placement.ps_busiest_bytes_table (busiest NIC bytes per phase,
        remote tensors per worker, largest shard); push and pull are one phase each. The rig's PS
        runs its phases one after another (all pushes, then the W applies, then the pulls), so the
        apply term is the serial W·S_max·3/B_hmem; costopt's timing model pipelines those W applies
        with the push, as TensorFlow applies each worker's gradient when it arrives.

  B       = shaped rate × (MTU - 52) / (MTU + 14): TCP/IPv4 payload per Ethernet frame as tbf counts
            it (20 B IP + 32 B TCP with timestamps; 14 B Ethernet header). Computed, not fitted.
  t_small = measured time of a 4-byte all-reduce (the 2(W-1)·α term of one bucket);
  α_msg   = measured per-message cost in a burst of 64 concurrent 4-byte messages.
  B_hmem  = measured speed of an in-place add on a worker, 3·4·n bytes / time (costopt's
            host_memory_gb_per_s, which `costopt calibrate` would fit; the default 40 GB/s is a
            server's figure, a shared 2-core VM reaches far less).

Gradient sizes come from the zoo (PyTorch tensor sets). By default every tensor is scaled by
--scale (0.1) so that the whole table runs in a few minutes on a 2-core machine; the bucket size
is scaled by the same factor, so bucket and tensor counts and the PS placement stay the model's.

Traffic stays inside the namespaces this script creates: the only address of each namespace is
in one private /24 on its veth, there is no default route, and the bridge has no address in the
host's namespace. Everything it creates carries a unique name (netns `costopt-rig-<pid>-w<i>`,
links `cr<pid36>...`) and is removed on exit, Ctrl-C, SIGTERM or error; `--cleanup-stale` removes
what a killed run left. Where namespaces or tc cannot be set up, it prints why and exits 0.

Usage (as root):  python benchmarks/rig/rig.py [--models alexnet,vgg16,resnet50,inception_v3]
                  [--workers 2,3,4] [--gbit 1,2] [--latency-ms 0] [--scale 0.1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # run from a checkout without installing

from costopt.perf.placement import ps_busiest_bytes_table  # noqa: E402
from costopt.perf.system import load_system  # noqa: E402
from costopt.perf.workload import GRADIENT_BYTES_PER_PARAM, TensorSet, load_workload  # noqa: E402

NS_PREFIX = "costopt-rig-"
MTU = 1500
DEFAULT_MODELS = ("alexnet", "vgg16", "resnet50", "inception_v3")


class RigUnavailable(Exception):
    """Namespaces, tc or torch cannot be used here: the reason, for the user."""


# ------------------------------------------------------------------------------------------------
# model side (no root, no torch): sizes, buckets, placement, predictions
# ------------------------------------------------------------------------------------------------


def wire_efficiency(mtu: int = MTU) -> float:
    return (mtu - 52) / (mtu + 14)


def scaled_tensors(model: str, scale: float) -> TensorSet:
    """The zoo's PyTorch tensors of `model`, every size multiplied by `scale` (at least 1 element)."""
    ts = load_workload(model).tensors("pytorch")
    keep = ts.trainable
    numel = np.maximum(1, np.round(ts.numel[keep] * scale)).astype(np.int64)
    return TensorSet(name=ts.name, source=ts.source, names=tuple(n for n, k in zip(ts.names, keep) if k),
                     numel=numel, ready_fraction=ts.ready_fraction[keep], trainable=np.ones(len(numel), bool))


def greedy_owners(creation_bytes: np.ndarray, shards: int) -> np.ndarray:
    """Shard of each tensor (creation order): smallest load so far, ties to the lowest index."""
    load = np.zeros(shards)
    owner = np.zeros(len(creation_bytes), dtype=np.int64)
    for k, size in enumerate(creation_bytes):
        p = int(np.argmin(load))
        owner[k] = p
        load[p] += size
    return owner


@dataclass
class ModelPlan:
    name: str
    tensors: TensorSet
    bucket_bytes: np.ndarray
    creation_numel: list[int]
    owner: list[int]

    @property
    def total_bytes(self) -> float:
        return self.tensors.total_gradient_bytes


def plan_model(model: str, scale: float, world: int, bucket_mb: float) -> ModelPlan:
    ts = scaled_tensors(model, scale)
    bucket_bytes, _, _ = ts.buckets(bucket_mb * 1e6 * scale)
    creation_numel = ts.numel[::-1]
    owner = greedy_owners(creation_numel * GRADIENT_BYTES_PER_PARAM, world)
    return ModelPlan(model, ts, bucket_bytes, [int(x) for x in creation_numel], [int(x) for x in owner])


def predict_ring_s(bucket_bytes: np.ndarray, world: int, bw_bytes_per_s: float, t_small_s: float) -> float:
    w = float(world)
    return float(np.sum(2 * (w - 1) / w * bucket_bytes / bw_bytes_per_s) + len(bucket_bytes) * t_small_s)


def predict_ps_s(ts: TensorSet, world: int, bw_bytes_per_s: float, alpha_msg_s: float, hmem_bytes_per_s: float) -> dict:
    creation_bytes, trainable = ts.creation_order_bytes()
    table = ps_busiest_bytes_table(creation_bytes, world, trainable)
    x = float(table["busiest_bytes"][world])
    remote = float(table["max_remote_tensors"][world])
    largest = float(table["largest_shard_bytes"][world])
    n = ts.n_trainable
    t = 2 * x / bw_bytes_per_s + alpha_msg_s * (remote + n * (world - 1) / world) + world * largest * 3 / hmem_bytes_per_s
    return {"seconds": float(t), "busiest_bytes": x}


# ------------------------------------------------------------------------------------------------
# namespaces, links, shaping
# ------------------------------------------------------------------------------------------------


def _b36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        n, r = divmod(n, 36)
        s = digits[r] + s
        if n == 0:
            return s


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def stale_names(netns: list[str], links: list[str], alive=_pid_alive) -> tuple[list[str], list[str]]:
    """Namespaces and links left by rig runs whose process is gone."""
    ns_out, link_out = [], []
    for name in netns:
        if name.startswith(NS_PREFIX):
            pid = name[len(NS_PREFIX):].split("-", 1)[0]
            if pid.isdigit() and not alive(int(pid)):
                ns_out.append(name)
    for name in links:
        if name.startswith("cr") and name.endswith("br") and len(name) <= 9:
            try:
                pid = int(name[2:-2], 36)
            except ValueError:
                continue
            if not alive(pid):
                link_out.append(name)
    return ns_out, link_out


def cleanup_stale() -> None:
    netns = [ln.split()[0] for ln in _run(["ip", "netns", "list"], check=False).stdout.splitlines() if ln.strip()]
    links = [ln.split(":")[1].strip().split("@")[0] for ln in _run(["ip", "-o", "link", "show"], check=False).stdout.splitlines()
             if ln.count(":") >= 2]
    ns, ln = stale_names(netns, links)
    for n in ns:
        _run(["ip", "netns", "del", n], check=False)
    for link in ln:
        _run(["ip", "link", "del", link], check=False)
    print(f"removed {len(ns)} stale namespaces, {len(ln)} stale bridges")


@dataclass
class Fabric:
    """W hosts (netns) on one bridge; everything named after this process so cleanup is exact."""

    hosts: int
    tag: str = field(default_factory=lambda: _b36(os.getpid()))
    subnet: str = ""
    namespaces: list[str] = field(default_factory=list)
    bridge: str = ""
    netem: bool = False
    queue_ms: float = 20.0  # tbf queue limit, as time at the link rate (a switch port's buffer)

    def ns(self, i: int) -> str:
        return f"{NS_PREFIX}{os.getpid()}-w{i}"

    def host_if(self, i: int) -> str:
        return f"cr{self.tag}h{i}"

    def addr(self, i: int) -> str:
        return f"{self.subnet}.{i + 1}"

    def _pick_subnet(self) -> str:
        used = _run(["ip", "-4", "route", "show", "table", "all"], check=False).stdout + \
            _run(["ip", "-4", "addr"], check=False).stdout
        rng = random.Random(os.getpid())
        for _ in range(200):
            s = f"10.{rng.randint(200, 254)}.{rng.randint(0, 255)}"
            if f"{s}." not in used:
                return s
        raise RigUnavailable("no free private /24 found for the rig")

    def up(self) -> None:
        self.subnet = self._pick_subnet()
        self.bridge = f"cr{self.tag}br"
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        _run(["ip", "link", "set", self.bridge, "up"])
        for i in range(self.hosts):
            ns = self.ns(i)
            _run(["ip", "netns", "add", ns])
            self.namespaces.append(ns)
            h, peer = self.host_if(i), f"cr{self.tag}n{i}"
            _run(["ip", "link", "add", h, "type", "veth", "peer", "name", peer])
            _run(["ip", "link", "set", peer, "netns", ns])
            _run(["ip", "link", "set", h, "master", self.bridge])
            _run(["ip", "link", "set", h, "mtu", str(MTU), "up"])
            _run(["ip", "netns", "exec", ns, "ip", "link", "set", peer, "name", "eth0"])
            _run(["ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "mtu", str(MTU), "up"])
            _run(["ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.addr(i)}/24", "dev", "eth0"])
            _run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])

    def shape(self, gbit: float, latency_ms: float) -> str:
        """tbf at `gbit` on both directions of every host link; netem delay first when asked."""
        rate = f"{int(gbit * 1000)}mbit"
        burst = str(max(64 * 1024, int(gbit * 1e9 / 8 / 250)))  # ≥ 4 ms of tokens at HZ=250
        note = ""
        for i in range(self.hosts):
            for where, dev in ((["ip", "netns", "exec", self.ns(i)], "eth0"), ([], self.host_if(i))):
                _run(where + ["tc", "qdisc", "del", "dev", dev, "root"], check=False)
                tbf = ["tbf", "rate", rate, "burst", burst, "latency", f"{self.queue_ms:g}ms"]
                if latency_ms > 0 and where:  # delay on the host's egress only: one-way latency per hop
                    p = _run(where + ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
                                      f"{latency_ms}ms", "limit", "100000"], check=False)
                    if p.returncode == 0:
                        self.netem = True
                        _run(where + ["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"] + tbf)
                        continue
                    note = f"netem unavailable ({p.stderr.strip()}): no added latency"
                _run(where + ["tc", "qdisc", "add", "dev", dev, "root"] + tbf)
        return note

    def down(self) -> None:
        for ns in self.namespaces:
            _run(["ip", "netns", "del", ns], check=False)
        self.namespaces = []
        if self.bridge:
            _run(["ip", "link", "del", self.bridge], check=False)
            self.bridge = ""


def check_environment(python: str) -> None:
    if not sys.platform.startswith("linux"):
        raise RigUnavailable(f"needs Linux network namespaces (this is {sys.platform})")
    if os.geteuid() != 0:
        raise RigUnavailable("needs root to create network namespaces, veth pairs and tc qdiscs")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise RigUnavailable(f"'{tool}' not found (Debian: apt-get install iproute2)")
    p = subprocess.run([python, "-c", "import torch.distributed as d; assert d.is_available()"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RigUnavailable(f"PyTorch with torch.distributed is not importable by {python}: pip install torch")


# ------------------------------------------------------------------------------------------------
# runs
# ------------------------------------------------------------------------------------------------

_children: list[subprocess.Popen] = []


def _kill_children() -> None:
    for p in _children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # each worker leads its own process group
            except ProcessLookupError:
                pass
    for p in _children:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    _children.clear()


def run_workers(fab: Fabric, world: int, plans: list[ModelPlan], args, port: int, workdir: Path, timeout_s: float) -> dict:
    plan = {
        "world": world, "master": fab.addr(0), "port": port, "op_timeout_s": max(60, int(timeout_s)),
        "hmem_probe_numel": int(max(max(m.tensors.numel) for m in plans)),
        "warmup": args.warmup, "repeat": args.repeat, "strategies": args.strategies,
        "result": str(workdir / f"result-w{world}-{port}.json"),
        "models": [{"name": m.name, "bucket_numel": [int(b // GRADIENT_BYTES_PER_PARAM) for b in m.bucket_bytes],
                    "numel": m.creation_numel, "owner": m.owner} for m in plans],
    }
    plan_path = workdir / f"plan-w{world}-{port}.json"
    plan_path.write_text(json.dumps(plan))
    env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    logs = []
    for r in range(world):
        log = open(workdir / f"worker-w{world}-{port}-r{r}.log", "w")
        logs.append(log)
        _children.append(subprocess.Popen(
            ["ip", "netns", "exec", fab.ns(r), args.python, str(HERE / "worker.py"), "--plan", str(plan_path),
             "--rank", str(r)], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    deadline = time.monotonic() + timeout_s
    try:
        for p in list(_children):
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"W={world}: workers still running after {timeout_s:.0f} s") from None
    finally:
        _kill_children()
        for log in logs:
            log.close()
    result = Path(plan["result"])
    if not result.exists():
        tail = (workdir / f"worker-w{world}-{port}-r0.log").read_text()[-2000:]
        raise RuntimeError(f"W={world}: workers exited without a result; rank 0 log:\n{tail}")
    return json.loads(result.read_text())


def format_table(rows: list[dict]) -> str:
    head = "| model | strategy | W | Gbit/s | MB/iter | busiest NIC MB | predicted ms | measured ms | error |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['strategy']} | {r['workers']} | {r['gbit']:g} | {r['mb_per_iter']:.1f} | "
                     f"{r['busiest_mb']:.1f} | {r['predicted_ms']:.1f} | {r['measured_ms']:.1f} | {r['error_pct']:+.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--workers", default="2,3,4", help="worker counts W (comma-separated)")
    ap.add_argument("--gbit", default="1,2", help="link rates in Gbit/s (comma-separated)")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="added one-way latency per host (netem)")
    ap.add_argument("--scale", type=float, default=0.1, help="multiply every gradient tensor's size by this")
    ap.add_argument("--strategies", default="ring,ps")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1200.0, help="wall-clock limit of the whole run, seconds")
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch for the workers")
    ap.add_argument("--out", type=Path, default=None, help="write results.json and table.md here")
    ap.add_argument("--cleanup-stale", action="store_true", help="remove what killed rig runs left, then exit")
    args = ap.parse_args(argv)
    args.strategies = [s for s in args.strategies.split(",") if s]
    models = [m for m in args.models.split(",") if m]
    worlds = sorted({int(w) for w in args.workers.split(",")})
    gbits = [float(g) for g in args.gbit.split(",")]
    if min(worlds) < 2 or not set(args.strategies) <= {"ring", "ps"} or args.scale <= 0:
        ap.error("W >= 2, strategies from ring,ps, scale > 0")

    if args.cleanup_stale:
        if os.geteuid() != 0:
            print("rig: --cleanup-stale needs root")
            return 0
        cleanup_stale()
        return 0
    try:
        check_environment(args.python)
    except RigUnavailable as exc:
        print(f"rig: SKIPPED: {exc}")
        return 0

    def _on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    params = load_system(None)
    start = time.monotonic()
    fab = Fabric(hosts=max(worlds))
    rows: list[dict] = []
    notes: list[str] = []
    port = 29400 + os.getpid() % 500
    workdir = Path(tempfile.mkdtemp(prefix="costopt-rig-"))
    try:
        try:
            fab.up()
            note = fab.shape(gbits[0], args.latency_ms)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            print(f"rig: SKIPPED: cannot set up namespaces/veth/tc here: {exc}")
            return 0
        if note:
            notes.append(note)
        print(f"rig: {max(worlds)} hosts in namespaces {fab.ns(0)}..{max(worlds) - 1}, subnet {fab.subnet}.0/24, "
              f"bridge {fab.bridge}; sizes x{args.scale:g}; tbf both directions" + (f"; {note}" if note else ""),
              flush=True)
        for gbit in gbits:
            note = fab.shape(gbit, args.latency_ms)
            bw = gbit * 1e9 / 8 * wire_efficiency()
            for world in worlds:
                remaining = args.timeout - (time.monotonic() - start)
                if remaining < 10:
                    notes.append(f"time limit reached before {gbit:g} Gbit/s W={world}")
                    raise TimeoutError(notes[-1])
                plans = [plan_model(m, args.scale, world, params.bucket_mb) for m in models]
                port += 1
                res = run_workers(fab, world, plans, args, port, workdir, remaining)
                t_small, a_msg = res["allreduce_4b_s"], res["message_4b_s"]
                hmem = res["host_memory_bytes_per_s"]
                for m in plans:
                    for strat in args.strategies:
                        measured = statistics.median(res["models"][m.name][strat])
                        if strat == "ring":
                            pred = predict_ring_s(m.bucket_bytes, world, bw, t_small)
                            busiest = 2 * (world - 1) / world * m.total_bytes
                        else:
                            pp = predict_ps_s(m.tensors, world, bw, a_msg, hmem)
                            pred, busiest = pp["seconds"], 2 * pp["busiest_bytes"]
                            print("    ps phases (slowest rank, ms): " + ", ".join(
                                f"{k} {v * 1e3:.1f}" for k, v in res["models"][m.name]["ps_phases_s"].items()))
                        rows.append({
                            "model": m.name, "strategy": strat, "workers": world, "gbit": gbit,
                            "mb_per_iter": m.total_bytes / 1e6, "busiest_mb": busiest / 1e6,
                            "predicted_ms": pred * 1e3, "measured_ms": measured * 1e3,
                            "error_pct": (pred - measured) / measured * 100,
                            "measured_all_ms": [x * 1e3 for x in res["models"][m.name][strat]],
                            "t_small_allreduce_ms": t_small * 1e3, "alpha_msg_ms": a_msg * 1e3,
                            "host_memory_gb_per_s": hmem / 1e9,
                        })
                        r = rows[-1]
                        print(f"  {m.name:13s} {strat:4s} W={world} {gbit:g} Gbit/s: predicted {r['predicted_ms']:8.1f} ms, "
                              f"measured {r['measured_ms']:8.1f} ms, error {r['error_pct']:+6.1f}% "
                              f"(t_small {t_small * 1e3:.2f} ms, a_msg {a_msg * 1e3:.3f} ms, B_hmem {hmem / 1e9:.1f} GB/s)", flush=True)
    except (KeyboardInterrupt, TimeoutError) as exc:
        print(f"rig: stopped ({exc}); cleaning up", flush=True)
    finally:
        _kill_children()
        fab.down()
        shutil.rmtree(workdir, ignore_errors=True)
        for s, h in old.items():
            signal.signal(s, h)
    if not rows:
        print("rig: no measurements")
        return 1
    errs = [abs(r["error_pct"]) for r in rows]
    med = statistics.median(errs)
    table = format_table(rows)
    summary = (f"median |error| {med:.1f}% over {len(rows)} runs (max {max(errs):.1f}%); sizes x{args.scale:g}; "
               f"B = rate x {wire_efficiency():.4f} (TCP/IPv4 payload per {MTU}-byte-MTU frame)")
    print()
    print(table)
    print()
    print(summary)
    for n in notes:
        print(f"note: {n}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"rows": rows, "median_abs_error_pct": med,
                                                          "scale": args.scale, "notes": notes}, indent=1))
        (args.out / "table.md").write_text(table + "\n\n" + summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
