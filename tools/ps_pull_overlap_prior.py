"""Print the prior of `[parameter_server] pull_overlap` from the mechanism: `python tools/ps_pull_overlap_prior.py`.

In TensorFlow 1.x's parameter_server mode (tf_cnn_benchmarks `--variable_update=parameter_server`,
VariableMgrDistributedFetchFromPS in scripts/tf_cnn_benchmarks/variable_mgr.py) the towers read every variable
from its PS shard through a caching device; the read has no input but the variable, so all pulls are issued
when the step starts and the forward of layer k waits only for its own variables. The timing model charges
the pull's exposed part as max(pull − w·T_f, 0) (costopt/perf/timing.py); this tool derives w from that dataflow.

Per tensor k (bytes s_k, S = Σ s_k) of a model's `tensorflow` tensor set:
- the forward reaches the layer of tensor k at a_k·T_f, a_k = 1 − r_k, where r_k is the tensor's gradient-ready
  fraction of the backward (the zoo's timeline; the forward visits the layers in the reverse order);
- the pulls share one transfer rate: gRPC multiplexes the concurrent RecvTensor streams of one connection over
  HTTP/2, so a tensor finishes when every tensor has received min(s_j, s_k) bytes (processor sharing):
  F_k = Σ_j min(s_j, s_k) / S of the pull time P.
The forward then ends at T_f + max(0, max_k(P·F_k − a_k·T_f)), so with ρ = P / T_f the exposed pull is
T_f·g(ρ), g(ρ) = max(0, max_k(ρ·F_k − a_k)), and the w that gives the same exposure is w(ρ) = ρ − g(ρ)
(for ρ > 1, where the pull cannot hide whole). Printed for ρ = 1.5, 2 and 4; the prior is the median over
the models at ρ = 2. Two bounds beside it: the pulls in forward order (TicTac's target, Hashemi et al., MLSys
2019) give w near 1; one pull at a time in a random order (TicTac: TF fixes no order) gives w near 0, hence
the prior's width (costopt/measure/calibrate.py PRIOR).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costopt.perf.workload import load_workload  # noqa: E402

MODELS = ("alexnet", "inception_v3", "resnet50", "vgg16")  # the zoo models with a `tensorflow` tensor set
RHOS = (1.5, 2.0, 4.0)
PRIOR_RHO = 2.0


def overlap_at(sizes: np.ndarray, ready: np.ndarray, rho: float, in_order: bool = False) -> float:
    """w(ρ) = ρ − g(ρ) for tensors of `sizes` bytes whose gradients are ready at `ready` of the backward."""
    total = sizes.sum()
    start = 1.0 - ready  # forward fraction at which each tensor's layer starts
    if in_order:  # one pull at a time, in the order the forward needs them
        order = np.argsort(start, kind="stable")
        done = np.empty_like(sizes)
        done[order] = np.cumsum(sizes[order]) / total
    else:  # processor sharing: tensor k is done when each tensor has moved min(s_j, s_k)
        done = np.minimum(sizes[None, :], sizes[:, None]).sum(axis=1) / total
    exposed = max(0.0, float((rho * done - start).max()))
    return rho - exposed


def main() -> int:
    at_prior = []
    print("w(rho) = rho - exposed/T_f, pulls issued at step start (processor sharing; in forward order in brackets)")
    for model in MODELS:
        ts = load_workload(model).tensors("tensorflow")
        sizes = ts.gradient_bytes[ts.trainable]
        ready = ts.ready_fraction[ts.trainable]
        cells = []
        for rho in RHOS:
            w = overlap_at(sizes, ready, rho)
            cells.append(f"rho {rho:g}: {w:.3f} [{overlap_at(sizes, ready, rho, in_order=True):.3f}]")
            if rho == PRIOR_RHO:
                at_prior.append(w)
        print(f"  {model:13s} {len(sizes):3d} tensors  " + "  ".join(cells))
    print(f"prior pull_overlap = median over {len(at_prior)} models at rho {PRIOR_RHO:g} = {statistics.median(at_prior):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
