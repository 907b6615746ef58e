"""Shared test setup: tests marked `interpreter` run Triton kernels in the CPU interpreter."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _triton_interpreter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set TRITON_INTERPRET=1 for the duration of each test marked `interpreter`.

    Per test rather than for the whole process: `kernels` picks the interpreter at launch, so
    the other tests (the AOT fingerprint's) see real JIT functions and a GPU-like environment.
    """
    if request.node.get_closest_marker("interpreter") is not None:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
