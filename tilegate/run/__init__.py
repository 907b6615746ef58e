"""Running: the perf loop, shards over GPUs, upgrade runs, crash handling, Triton environments."""
