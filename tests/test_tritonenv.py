"""Which packages an environment with a given Triton gets (nox's `--triton pinned|newest|X.Y.Z`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from dependency_groups import resolve as resolve_groups

from tilegate.run import tritonenv
from tilegate.run.tritonenv import EnvError, requirements, resolve

KERNELS = ["torch==2.13.0", "triton==3.6.0", "numpy==2.3.5", "packaging==26.4"]
NEWEST = ["triton==3.9.0", "numpy==2.4.6"]


@pytest.mark.parametrize(
    "triton, expect_triton, expect_numpy",
    [
        ("pinned", "3.6.0", "2.3.5"),
        ("newest", "3.9.0", "2.4.6"),
        ("3.8.0", "3.8.0", "2.4.6"),  # 3.7.1 on: the interpreter works with NumPy 2.4
        ("3.7.1", "3.7.1", "2.4.6"),
        ("3.6.1", "3.6.1", "2.3.5"),  # 3.6's interpreter breaks on NumPy 2.4
        ("3.10.0", "3.10.0", "2.4.6"),
    ],
)
def test_a_triton_gets_its_own_pin_and_the_numpy_its_interpreter_runs_on(
    triton: str, expect_triton: str, expect_numpy: str
) -> None:
    assert requirements(KERNELS, NEWEST, triton) == [
        "torch==2.13.0",
        f"triton=={expect_triton}",
        f"numpy=={expect_numpy}",
        "packaging==26.4",
    ]


@pytest.mark.parametrize(
    "triton, match",
    [("latest", "a Triton release such as 3.9.0"), ("3.9.0+cu130", "without a local part")],
)
def test_a_triton_that_pypi_cannot_give_is_refused(triton: str, match: str) -> None:
    with pytest.raises(EnvError, match=match):
        resolve(triton, KERNELS, NEWEST)


def test_groups_that_do_not_pin_exactly_are_refused() -> None:
    with pytest.raises(EnvError, match="triton must be pinned exactly"):
        requirements(["torch==2.13.0", "triton>=3.6", "numpy==2.3.5"], NEWEST, "pinned")
    with pytest.raises(EnvError, match="lacks \\['numpy'\\]"):
        requirements(["torch==2.13.0", "triton==3.6.0"], NEWEST, "3.9.0")


def test_the_repos_groups_resolve() -> None:
    """pyproject.toml's groups are what the sessions read: pinned = the GPU image's 3.6.0."""
    groups = tomllib.loads(Path("pyproject.toml").read_text())["dependency-groups"]
    kernels = list(resolve_groups(groups, "kernels"))
    newest = list(resolve_groups(groups, "triton-newest"))
    assert resolve(tritonenv.PINNED, kernels, newest) == "3.6.0"
    assert tritonenv.Version(resolve("newest", kernels, newest)) >= tritonenv.NUMPY_24_FROM
    test = list(resolve_groups(groups, "test"))
    assert requirements(test, newest, "pinned") == test  # the test group includes the kernels'
