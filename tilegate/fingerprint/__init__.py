"""Compile fingerprint gate: pipelining facts of every Triton kernel, ahead of time, with no GPU.

Modules, in the order data flows:

* `suite`: which kernels (registry variant x dtype x layout x architecture of a perf profile),
  planned exactly as the suite plans them, with one kernel per distinct compiled specialization.
* `compile`: the JIT's own specialization of a `KernelLaunch`, `triton.compile` for cuda:90 /
  cuda:120, the ptxas report, a cache keyed by Triton's compile key.
* `extract`: facts read from TTGIR and ptxas: fusion, per-operand buffering, wgmma wait, shared
  memory, registers, spills.
* `rules`: rules as data (baselines/fingerprints/rules.json) with named exceptions.
* `store`: fingerprint files per (Triton version, architecture) and their diff.
* `gate`, `report`, `cli`: check / record / upgrade report, the Markdown report, the command line.

Beside it: `tilegate.harness.warnlog` (Triton's warnings while compiling, recorded, not raised) and
`tilegate.run.tritonenv` (the packages of a venv with any Triton, for the nox sessions).

See docs/fingerprint.md.
"""
