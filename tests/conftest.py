"""Shared test setup: tests marked `interpreter` run Triton kernels in the CPU interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _triton_interpreter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set TRITON_INTERPRET=1 for the duration of each test marked `interpreter`.

    Per test rather than for the whole process: `kernels` picks the interpreter at launch, so
    the other tests (the AOT fingerprint's) see real JIT functions and a GPU-like environment.
    """
    if request.node.get_closest_marker("interpreter") is not None:
        monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def step_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A SYNTHETIC 60-commit history (resampled from the real H200 baseline) in a history store,
    with a +3 % step of three cases at a known commit (tests/_synthetic_history.py)."""
    from tests._synthetic_history import build_store

    return build_store(tmp_path_factory.mktemp("step-history"), step=True, seed=2026, salt="step")


@pytest.fixture(scope="session")
def aa_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A SYNTHETIC 60-commit A/A history: the same code at every commit."""
    from tests._synthetic_history import build_store

    return build_store(tmp_path_factory.mktemp("aa-history"), step=False, seed=7, salt="aa")
