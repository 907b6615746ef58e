"""The measuring side: what runs on the GPU runner, next to CUDA torch and Triton.

* `timing`: CUDA-event and host timers, interleaved rounds, the L2 policy.
* `measure`: a run's groups: inputs, correctness first, then interleaved timed sweeps.
* `correctness`: the one correctness check (poisoned output, higher-precision reference),
  shared by the suite, the tests and the tools.
* `device`: what the GPU is (name, slug, SMs, capability, versions).
* `gpu_state`: what the GPU does (clocks, power, temperature, throttling) from NVML, read only.
* `bench`: the adapter to pytest-benchmark's private API that lets it hold device times.

The gate (`tilegate compare` and friends) never imports this package: it judges JSON files on
any machine. Modules here import torch lazily, inside the functions that need it.
"""
