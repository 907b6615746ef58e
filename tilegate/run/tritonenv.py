"""The packages of a CPU environment with a given Triton (nox's fingerprint, kernels and upgrade
sessions: `--triton pinned | newest | X.Y.Z`).

The pins are pyproject.toml's [dependency-groups]: `kernels` (torch's CPU build, the pinned
Triton, its NumPy) and `triton-newest` (the newest Triton and the NumPy CI runs it with). Another
Triton gets `kernels` with its own `triton==X.Y.Z` and a NumPy its interpreter works with: Triton
3.6's breaks on NumPy 2.4, 3.7.1 and later work with it (docs/pitfalls.md), so one older than
NUMPY_24_FROM keeps `kernels`' NumPy, a newer one `triton-newest`'s. Only `packaging` is imported:
nox's own interpreter runs this.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

PINNED = "pinned"
NEWEST = "newest"
NUMPY_24_FROM = Version("3.7")  # the first Triton whose interpreter runs on NumPy 2.4


class EnvError(ValueError):
    """A Triton version or a dependency group this module cannot make an environment from."""


def _name(req: str) -> str:
    try:
        return Requirement(req).name.lower()
    except InvalidRequirement as err:
        raise EnvError(f"not a requirement: {req!r} ({err})") from None


def pinned_version(group: Sequence[str], name: str) -> str:
    """X.Y.Z of the `name==X.Y.Z` pin in `group` (a ValueError if it is not pinned exactly)."""
    for req in group:
        if _name(req) == name:
            m = re.fullmatch(rf"\s*{re.escape(name)}\s*==\s*([^\s;,]+)\s*", req, re.IGNORECASE)
            if m:
                return m.group(1)
            raise EnvError(f"{req!r}: {name} must be pinned exactly (==)")
    raise EnvError(f"{name} is not in the dependency group {list(group)}")


def resolve(triton: str, kernels: Sequence[str], newest: Sequence[str]) -> str:
    """The Triton version `triton` stands for: `pinned`, `newest` or a release such as 3.8.0."""
    if triton == PINNED:
        return pinned_version(kernels, "triton")
    if triton == NEWEST:
        return pinned_version(newest, "triton")
    try:
        v = Version(triton)
    except InvalidVersion:
        raise EnvError(
            f"--triton {triton!r}: give {PINNED!r}, {NEWEST!r} or a Triton release such as 3.9.0"
        ) from None
    if v.local is not None:
        raise EnvError(f"--triton {triton!r}: a release from PyPI, without a local part")
    return triton


def requirements(kernels: Sequence[str], newest: Sequence[str], triton: str) -> list[str]:
    """The `kernels` group (or a group that includes it) with Triton `triton` and its NumPy."""
    version = Version(resolve(triton, kernels, newest))
    numpy = (
        pinned_version(kernels, "numpy")
        if version < NUMPY_24_FROM
        else pinned_version(newest, "numpy")
    )
    swapped = {"triton": f"triton=={version}", "numpy": f"numpy=={numpy}"}
    names = [_name(r) for r in kernels]
    missing = [n for n in swapped if n not in names]
    if missing:
        raise EnvError(f"the dependency group lacks {missing}: {list(kernels)}")
    return [swapped.get(n, r) for n, r in zip(names, kernels, strict=True)]
