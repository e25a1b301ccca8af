"""Using costopt from Python: solve for a budget, then look closer at two designs.

    python examples/api_example.py
"""

import costopt

# The best cluster for Inception-v3 with $200,000 on the built-in reference catalog.
res = costopt.solve(200_000, "inception_v3", top=5)
best = res.best
print(f"best: {best['total_gpus']} x {best['gpu']} over {best['nic']} ({best['strategy']}), "
      f"${best['cost_usd']:,.0f}, {best['throughput_samples_per_s']:,.0f} images/s")
print("why:", res.why)
print(res.table[["rank", "gpu", "total_gpus", "nic", "strategy", "cost_usd", "throughput_samples_per_s"]])

# The thesis's classic pitfall: VGG16 on a parameter server is pinned by its 411 MB fc6 tensor.
for strategy in ("ps", "ring"):
    d = costopt.predict("vgg16", "v100-sxm2-16gb", 8, 4, "25gbe", strategy)
    print(f"vgg16 4 x 8 V100 over 25 GbE, {strategy:4s}: {d['throughput_samples_per_s']:7.1f} images/s, "
          f"scaling efficiency {d['scaling_efficiency']:.2f}, bottleneck {d['bottleneck']}")
