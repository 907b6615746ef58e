"""Kernels run under the Triton interpreter when there is no GPU (set before Liger is imported)."""

import os
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parents[1])  # liger_bench, also when run from elsewhere
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def pytest_configure(config):
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from liger_bench import interpreter

    interpreter.install()
