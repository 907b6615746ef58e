"""Compile fingerprint gate: pipelining facts of every Triton kernel, ahead of time, with no GPU.

Modules, in the order data flows:

* `suite`: which kernels (registry variant x dtype x layout x architecture of a perf profile),
  planned exactly as the suite plans them, with one kernel per distinct compiled specialization.
* `compile`: the JIT's own specialization of a `KernelLaunch`, `triton.compile` for cuda:90 /
  cuda:120, the ptxas report, a cache keyed by Triton's compile key.
* `extract`: facts read from TTGIR and ptxas: fusion, per-operand buffering, wgmma wait, shared
  memory, registers, spills; MLIR text without its locations (`strip_locations`).
* `rules`: rules as data (baselines/fingerprints/rules.json) with named exceptions.
* `store`: fingerprint files per (Triton version, architecture) and their diff.
* `gate`, `report`: check / record / upgrade report, the Markdown report.

The compile facts of one kernel the measurement launched, for the explanation of a case
(tilegate.explain): `facts` reads them out of TTGIR / PTX / metadata, `record` records them per
launch inside tilegate.harness.identity's capture.

Beside it: `tilegate.commands.fingerprint` (the command line: `tilegate fingerprint`),
`tilegate.warnlog` (Triton's warnings while compiling, recorded, not raised) and
`tilegate.run.tritonenv` (the packages of a venv with any Triton, for the nox sessions). This
package imports neither tilegate.harness nor anything above it: the harness imports it.

See docs/fingerprint.md.
"""
