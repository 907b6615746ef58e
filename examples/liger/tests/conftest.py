"""Kernels run under the Triton interpreter when there is no GPU (set before Liger is imported)."""

import os
import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parents[1])  # liger_bench, also when run from elsewhere
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# pytest-xdist (`nox -s liger` runs `-n auto --dist loadgroup`) marks its workers with these
# variables, which every `tilegate perf` a test starts would inherit: pytest-benchmark would then
# take the perf suite's pytest for an xdist worker and disable its benchmarks.
for _name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
    del os.environ[_name]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's loadgroup, the tests of the two smoke runs (a module fixture, most of
    this suite's time) run on one worker, which makes them once."""
    if getattr(config.option, "loadgroup", False):
        for item in items:
            if "smoke_runs" in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group("smoke_runs"))


def pytest_configure(config):
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from liger_bench import interpreter

    interpreter.install()
