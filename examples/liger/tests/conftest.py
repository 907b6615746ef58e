"""Kernels run under the Triton interpreter when there is no GPU (set before Liger is imported)."""

import os


def pytest_configure(config):
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from liger_bench import interpreter

    interpreter.install()
