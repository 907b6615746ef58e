"""The measuring side: what runs on the GPU runner, next to CUDA torch and Triton.

Its modules: docs/architecture.md's layout table. The gate (`tilegate compare` and friends)
never imports this package: it judges JSON files on any machine. Modules here import torch
lazily, inside the functions that need it.
"""
