"""PS shard placement (costopt/perf/placement.py) on small cases worked out by hand."""

import numpy as np
import pytest

from costopt.perf.placement import greedy_shard_loads, ps_node_traffic


def test_greedy_placement_counts_load_only_variables():
    # creation order 10, 8 (a moving statistic: load, no gradient), 6, 4 MB on 2 shards, least-loaded first:
    # 10 -> s0 (load 10); 8 -> s1 (8); 6 -> s1, the lighter (14); 4 -> s0 (14)
    sizes = np.array([10e6, 8e6, 6e6, 4e6])
    train = np.array([True, False, True, True])
    shard_bytes, count = greedy_shard_loads(sizes, 2, train)
    assert shard_bytes.tolist() == [14e6, 6e6]  # trainable bytes only
    assert count.tolist() == [2, 1]


def test_more_shards_than_variables_one_each():
    # 3 variables on 4 shards: one per shard in order; the load-only one moves no bytes
    shard_bytes, count = greedy_shard_loads(np.array([10.0, 5.0, 3.0]), 4, np.array([True, False, True]))
    assert shard_bytes.tolist() == [10.0, 0.0, 3.0, 0.0]
    assert count.tolist() == [1, 0, 1, 0]


def test_node_traffic_hand_computed():
    # 30, 4, 2 MB on 2 nodes (one shard each): 30 -> node 0; 4 and 2 -> node 1 (6 MB).
    # node 0 sends 30 to the other worker and receives 6; node 1 sends 6 and receives 30: busiest 30 MB.
    # Worker 0 holds 1 tensor, so 2 of the 3 are remote to it.
    busiest, largest, remote = ps_node_traffic(np.array([30e6, 4e6, 2e6]), None, 2, 2)
    assert (busiest, largest, remote) == (30e6, 30e6, 2.0)
    # 3 nodes: loads 30, 4, 2: node 0 sends 2 x 30 = 60 MB; node 2 receives 34: busiest 60 MB; node 2 holds 1
    busiest, largest, remote = ps_node_traffic(np.array([30e6, 4e6, 2e6]), None, 3, 3)
    assert (busiest, largest, remote) == (60e6, 30e6, 2.0)
    # one shard on 3 nodes (shard 0 on node 0): node 0 sends 2 x 36 MB; the others hold nothing: all 3 remote
    busiest, largest, remote = ps_node_traffic(np.array([30e6, 4e6, 2e6]), None, 3, 1)
    assert (busiest, largest, remote) == (72e6, 36e6, 3.0)


def test_one_node_moves_nothing():
    assert ps_node_traffic(np.array([30e6, 4e6]), None, 1, 1) == (0.0, pytest.approx(34e6), 0.0)
