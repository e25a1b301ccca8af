"""One rig worker: runs inside its own network namespace, started by rig.py.

Reads a plan (JSON) and, over torch.distributed with the gloo backend, times per iteration:

- ring: an all-reduce of each gradient bucket in turn (gloo's ring all-reduce on CPU tensors);
- ps: parameter-server synchronisation with whole tensors placed on shards (one shard per worker,
  the plan says which rank owns each tensor): push (every worker sends each gradient to its owner,
  the owner sums them and applies SGD), then pull (the owner sends the updated tensor back).

Each timed iteration starts after a barrier; its time is the slowest rank's. Also measured: the
latency of a 4-byte all-reduce, the per-message cost of a burst of 4-byte messages, and rank 0's speed
of an in-place tensor add (host memory speed for the PS apply term). Rank 0 writes the
results to the plan's output file. Buffers are random, never zeros.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def _slowest(seconds: float) -> float:
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _timed(fn, warmup: int, repeat: int) -> list[float]:
    out = []
    for i in range(warmup + repeat):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        dt = _slowest(time.perf_counter() - t0)
        if i >= warmup:
            out.append(dt)
    return out


def small_allreduce_s(n: int = 30) -> float:
    x = torch.ones(1)
    for _ in range(5):
        dist.all_reduce(x)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        dist.all_reduce(x)
        times.append(time.perf_counter() - t0)
    return _slowest(statistics.median(times))


def message_cost_s(rank: int, n_msgs: int = 64, reps: int = 7) -> float:
    """Per-message cost of a burst of `n_msgs` 4-byte tensors from rank 0 to rank 1, all posted at
    once as the PS posts its tensors (the per-tensor term of the PS formula)."""
    xs = [torch.ones(1) for _ in range(n_msgs)]
    times = []
    for i in range(reps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        if rank in (0, 1):
            reqs = [dist.isend(x, 1, tag=k) if rank == 0 else dist.irecv(x, 0, tag=k) for k, x in enumerate(xs)]
            for q in reqs:
                q.wait()
        if i >= 2:
            times.append((time.perf_counter() - t0) / n_msgs)
    return _slowest(statistics.median(times) if rank in (0, 1) else 0.0)


def host_memory_bytes_per_s(numel: int, n: int = 7) -> float:
    """Speed of an in-place add (read, read, write) on this host: 3·4·numel bytes / time."""
    a, b = torch.randn(numel), torch.randn(numel)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        a.add_(b, alpha=1e-3)
        times.append(time.perf_counter() - t0)
    return 12 * numel / statistics.median(times[2:])


def ring_iteration(buckets: list[torch.Tensor]) -> None:
    for b in buckets:
        dist.all_reduce(b)


class PSState:
    """Buffers of one rank for parameter-server synchronisation."""

    def __init__(self, numel: list[int], owner: list[int], rank: int, world: int, lr: float = 1e-3):
        self.rank, self.world, self.lr = rank, world, lr
        self.owner = owner
        self.grads = [torch.randn(n) for n in numel]
        self.params = [torch.randn(n) for n in numel]  # local replica (owned ones are the master copy)
        self.own = [k for k, o in enumerate(owner) if o == rank]
        self.inbox = {k: [torch.empty(numel[k]) for _ in range(world - 1)] for k in self.own}
        self.phase_s = {"push": [], "apply": [], "pull": []}
        # One connection set per direction (lower -> higher rank, higher -> lower): a gloo pair moves
        # large messages one direction at a time, so two tensors crossing on one pair take twice as
        # long (measured: 41 MB each way on one pair at 1 Gbit/s, 682 ms vs 342 ms one way).
        self.up = dist.new_group(list(range(world)))
        self.down = dist.new_group(list(range(world)))

    def _group(self, src: int, dst: int):
        return self.up if src < dst else self.down

    def iteration(self) -> None:
        r, w = self.rank, self.world
        others = [q for q in range(w) if q != r]
        t0 = time.perf_counter()
        # push: gradients to their owners
        reqs = []
        for k, o in enumerate(self.owner):
            if o != r:
                reqs.append(dist.isend(self.grads[k], o, group=self._group(r, o), tag=k))
        for k in self.own:
            for slot, q in enumerate(others):
                reqs.append(dist.irecv(self.inbox[k][slot], q, group=self._group(q, r), tag=k))
        for q in reqs:
            q.wait()
        t1 = time.perf_counter()
        # reduce and apply on the owner, in place, after the whole push: W-1 additions and one update,
        # i.e. W passes of (read, read, write) over each owned tensor, the serial W·S_max·3/B_hmem
        # (costopt's timing model pipelines these W applies with the push, as TF does per arrival)
        for k in self.own:
            acc = self.inbox[k][0] if self.inbox[k] else self.grads[k]
            for buf in self.inbox[k][1:]:
                acc.add_(buf)
            if self.inbox[k]:
                acc.add_(self.grads[k])
            self.params[k].add_(acc, alpha=-self.lr / w)
        t2 = time.perf_counter()
        # pull: updated tensors from their owners
        reqs = []
        for k in self.own:
            for q in others:
                reqs.append(dist.isend(self.params[k], q, group=self._group(r, q), tag=k))
        for k, o in enumerate(self.owner):
            if o != r:
                reqs.append(dist.irecv(self.params[k], o, group=self._group(o, r), tag=k))
        for q in reqs:
            q.wait()
        t3 = time.perf_counter()
        for name, dt in (("push", t1 - t0), ("apply", t2 - t1), ("pull", t3 - t2)):
            self.phase_s[name].append(dt)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--rank", type=int, required=True)
    args = ap.parse_args()
    with open(args.plan) as fh:
        plan = json.load(fh)
    rank, world = args.rank, plan["world"]
    torch.set_num_threads(1)
    torch.manual_seed(rank + 1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://{plan['master']}:{plan['port']}", rank=rank, world_size=world,
        timeout=timedelta(seconds=plan["op_timeout_s"]),
    )
    res: dict = {"world": world, "models": {}}
    res["allreduce_4b_s"] = small_allreduce_s()
    res["message_4b_s"] = message_cost_s(rank)
    res["host_memory_bytes_per_s"] = host_memory_bytes_per_s(plan["hmem_probe_numel"])
    for m in plan["models"]:
        out = {}
        if "ring" in plan["strategies"]:
            buckets = [torch.randn(n) for n in m["bucket_numel"]]
            out["ring"] = _timed(lambda: ring_iteration(buckets), plan["warmup"], plan["repeat"])
            del buckets
        if "ps" in plan["strategies"]:
            st = PSState(m["numel"], m["owner"], rank, world)
            out["ps"] = _timed(st.iteration, plan["warmup"], plan["repeat"])
            out["ps_phases_s"] = {k: _slowest(statistics.median(v[plan["warmup"]:])) for k, v in st.phase_s.items()}
            del st
        res["models"][m["name"]] = out
    dist.barrier()
    if rank == 0:
        tmp = plan["result"] + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(res, fh)
        os.replace(tmp, plan["result"])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
