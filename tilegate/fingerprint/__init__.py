"""Compile fingerprint gate: pipelining facts of every Triton kernel, ahead of time, with no GPU
(docs/fingerprint.md). It imports neither tilegate.harness nor anything above it."""
