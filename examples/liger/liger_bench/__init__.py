"""Benchmarks of Liger-Kernel's Triton ops against eager torch, in a user repo's layout."""
