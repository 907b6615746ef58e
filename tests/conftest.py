"""Shared test setup: tests marked `interpreter` run Triton kernels in the CPU interpreter."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# pytest-xdist (`nox -s tests` runs `-n auto --dist loadgroup`) marks its workers with these
# variables, and every process a test starts would inherit them: pytest-benchmark then takes the
# perf suite's own pytest (`tilegate perf`, tests/test_pipeline_smoke.py) for an xdist worker and
# disables its benchmarks. The processes tests start are not workers.
for _name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
    del os.environ[_name]

# Under pytest-xdist's loadgroup, the tests that use one of these module- or session-scoped
# fixtures run on one worker, which builds it once (seconds to a minute each: two smoke runs of
# the suite, a synthetic history store, AOT compiles, the repositories `tilegate init` made for
# tests/test_installed.py and tests/test_newcomer.py, pytest-benchmark's own results, the GPU
# image's wheels); every other test goes to whichever worker is free.
SHARED_FIXTURES = (
    "smoke_runs",
    "step_history",
    "aa_history",
    "toy_page",
    "recorded",
    "recorded_ws",
    "toy",
    "newbie",  # its SIGINT test then finds the earlier run it needs
    "results",
    "wheelhouse",
)


# The modules whose tests start tilegate or perf-suite processes (5-80 s each on a CI core), the
# longest first: they run first, so that the session ends on short tests spread over every
# worker, not on one long test while the other workers idle.
HEAVY_FIRST = (
    "test_pipeline_smoke.py",
    "test_ci.py",
    "test_installed.py",
    "test_shard.py",
    "test_explain.py",
    "test_escapes.py",
    "test_confirm.py",
    "test_history_dashboard.py",
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    heavy = {name: i for i, name in enumerate(HEAVY_FIRST)}  # the longest first
    items.sort(key=lambda item: heavy.get(item.path.name, len(heavy)))  # stable within a module
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        used = [f for f in SHARED_FIXTURES if f in getattr(item, "fixturenames", ())]
        if used:
            item.add_marker(pytest.mark.xdist_group(used[0]))


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
    """A SYNTHETIC 60-commit A/A history: the same code at every commit. Without verdicts: its
    one test reads its change points, which the verdicts do not enter (step_history's runs are
    stored with theirs)."""
    from tests._synthetic_history import build_store

    return build_store(
        tmp_path_factory.mktemp("aa-history"), step=False, seed=7, salt="aa", verdicts=False
    )


@pytest.fixture(scope="session")
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tilegate's wheel, built from this checkout and installed with pip --target
    (tests/test_installed.py, tests/test_newcomer.py): built once per session, by whichever
    pytest-xdist worker asks first (under a file lock in the directory the workers share)."""
    from filelock import FileLock

    from tests.test_installed import build_site

    root = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # an xdist worker: its basetemp's parent is shared
        root = root.parent
    target, built = root / "tilegate-site", root / "tilegate-site.built"
    with FileLock(str(root / "tilegate-site.lock")):
        if not built.is_file():
            for partial in (target, root / "tilegate-wheel"):  # a failed build's, if any
                shutil.rmtree(partial, ignore_errors=True)
            build_site(root / "tilegate-wheel", target)
            built.touch()
    assert (target / "tilegate" / "cli.py").is_file()
    assert not (target / "kernels").exists(), "this repository's benchmark is not in the wheel"
    return target
