"""Parameter-server shard placement: greedy by byte size, whole tensors, in creation order.

TensorFlow's `GreedyLoadBalancingStrategy(num_ps, byte_size_load_fn)` (tf_cnn_benchmarks
`parameter_server` mode, docs/sources.md §12c (thesis §4.1)) walks the variables in creation
order and puts each one on the shard with the smallest load so far (ties: lowest index), then adds
its bytes to that shard. Non-trainable variables that pass through the setter (batch-norm moving
statistics) add load too but carry no gradient traffic. A tensor is never split, so a shard can
never hold less than the largest tensor: VGG16's 411 MB fc6 pins the busiest shard at any P.

For P shards colocated one per worker node (W = P = M), in every pull phase (and again, mirrored,
in the push phase) node j sends its shard to the W-1 other workers and receives every other shard:

    tx(j) = (W - 1) * S_j          rx(j) = S - S_j
    busiest NIC bytes per phase = max_j max(tx(j), rx(j))

`ps_node_traffic` evaluates that for one (nodes, shards) pair; the timing model caches it per
distinct pair, so there is no loop per design.
"""

from __future__ import annotations

import heapq

import numpy as np


def greedy_shard_loads(
    creation_bytes: np.ndarray, num_shards: int, trainable: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Place tensors greedily; return (trainable bytes per shard, tensor count per shard).

    `creation_bytes[k]` is the size of the k-th variable in creation order; `trainable[k]` False
    marks load-only variables (moving statistics) that count for balancing but move no bytes.
    The least-loaded shard (ties: lowest index, as numpy's argmin in TensorFlow) comes off a heap of
    (load, index) pairs, so a placement costs O(K log P) rather than O(K·P).
    """
    if num_shards < 1:
        raise ValueError("num_shards must be >= 1")
    sizes = np.asarray(creation_bytes, dtype=np.float64)
    train = np.ones(sizes.shape, dtype=bool) if trainable is None else np.asarray(trainable, dtype=bool)
    trainable_bytes = np.zeros(num_shards)
    count = np.zeros(num_shards, dtype=np.int64)
    n_vars = len(sizes)
    if num_shards >= n_vars and np.all(sizes > 0):
        # every variable finds an empty shard, and the lowest-index empty one is the next in line
        trainable_bytes[:n_vars] = np.where(train, sizes, 0.0)
        count[:n_vars] = train
        return trainable_bytes, count
    heap = [(0.0, p) for p in range(num_shards)]  # already a valid heap: all loads equal, indices ascending
    shard_bytes, shard_count = [0.0] * num_shards, [0] * num_shards  # Python lists: the loop runs per variable
    for size, is_trainable in zip(sizes.tolist(), train.tolist()):
        load, p = heap[0]
        heapq.heapreplace(heap, (load + size, p))
        if is_trainable:
            shard_bytes[p] += size
            shard_count[p] += 1
    trainable_bytes[:] = shard_bytes
    count[:] = shard_count
    return trainable_bytes, count


def ps_node_traffic(
    creation_bytes: np.ndarray, trainable: np.ndarray | None, nodes: int, shards: int
) -> tuple[float, float, float]:
    """(busiest NIC bytes per phase, largest node's shard bytes, most remote tensors of a worker).

    `shards` PS tasks, shard k on node k mod `nodes` (one per node when shards == nodes). Node j
    holding L_j bytes sends L_j to each of the other nodes' workers and receives S - L_j.
    """
    sizes = np.asarray(creation_bytes, dtype=np.float64)
    train = np.ones(sizes.shape, dtype=bool) if trainable is None else np.asarray(trainable, dtype=bool)
    shard, count = greedy_shard_loads(sizes, shards, train)
    node = np.arange(shards) % nodes
    load = np.bincount(node, weights=shard, minlength=nodes)
    tensors_on = np.bincount(node, weights=count.astype(np.float64), minlength=nodes)
    if nodes <= 1:
        return 0.0, float(load.max()), 0.0
    total = float(shard.sum())
    busiest = float(np.max(np.maximum((nodes - 1) * load, total - load)))
    return busiest, float(load.max()), float(train.sum() - tensors_on.min())


def ps_busiest_bytes_table(
    creation_bytes: np.ndarray, max_nodes: int, trainable: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """For M = 0..max_nodes colocated shards (one per node): `ps_node_traffic` as arrays indexed by M.

    Index 0 is unused (zeros) so callers can index with M directly.
    """
    rows = np.zeros((max_nodes + 1, 3))
    for m in range(1, max_nodes + 1):
        rows[m] = ps_node_traffic(creation_bytes, trainable, m, m)
    return {
        "busiest_bytes": rows[:, 0],
        "largest_shard_bytes": rows[:, 1],
        "max_remote_tensors": rows[:, 2],
    }
