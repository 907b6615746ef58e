"""Compile fingerprint gate: pipelining facts of every Triton kernel, ahead of time, with no GPU.

Its modules, in the order data flows (suite, compile, extract, rules, changes, gate, reporting;
`facts` and `record` for the explanation of a measured case): docs/architecture.md's layout
table; the gate itself: docs/fingerprint.md. This package imports neither tilegate.harness nor
anything above it: the harness imports it.
"""
