"""Performance models: a workload's compute per GPU, the data-parallel timing model (stacks,
placement, system parameters), prediction ranges, and the large-model model in `perf/llm/`."""
