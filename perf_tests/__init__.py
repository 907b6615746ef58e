"""The protocol: how the kernels of kernels/ are measured (pytest-benchmark suites; docs/plugin.md)."""
