"""The base side of an A/B run: another commit's `kernels/`, materialised and imported beside ours.

`materialise(ref)` resolves REF in the repository (a pull request's base is `HEAD^1` of
GitHub's merge commit), extracts that commit's `kernels/` with `git archive` into
`.perf/ab/<sha>/kernels/` and `load(path)` imports it under a package name of its own,
`tilegate_base_<sha12>`, so that both versions of every Triton kernel are compiled and live side
by side in one process. The kernels package uses relative imports only (tests/test_ab.py checks
it), which is what lets it be imported under another name.
"""

from __future__ import annotations

import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tilegate.errors import InputError

PACKAGE = "kernels"
FETCH_HINT = (
    "In GitHub Actions check out with `fetch-depth: 2` (a pull request's merge commit and its "
    "parents: the base is HEAD^1), or `fetch-depth: 0` for any other ref; locally, "
    "`git fetch origin <ref>`."
)


@dataclass(frozen=True)
class Base:
    """A materialised base: the ref as given, its commit, where its kernels/ lies, its package."""

    ref: str
    sha: str
    path: Path  # the directory holding kernels/
    package: str

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "sha": self.sha, "package": self.package}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def package_name(sha: str) -> str:
    return f"tilegate_base_{sha[:12]}"


def materialise(ref: str, repo: Path, dest_root: Path) -> Base:
    """Extract REF's kernels/ under dest_root/<sha>/; InputError naming REF when it cannot."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise InputError(
            f"A/B base {ref!r} is not a commit of {repo} (missing, or not fetched). {FETCH_HINT}"
        )
    sha = found.stdout.decode().strip()
    archive = _git(repo, "archive", "--format=tar", sha, f"{PACKAGE}/")
    if archive.returncode != 0:
        why = archive.stderr.decode().strip()
        raise InputError(f"A/B base {ref} ({sha[:12]}) has no {PACKAGE}/ to measure: {why}")
    dest = dest_root / sha
    staging = dest_root / f".{sha}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    shutil.rmtree(dest, ignore_errors=True)
    staging.replace(dest)
    return Base(ref, sha, dest, package_name(sha))


def load(path: Path, package: str) -> ModuleType:
    """Import path/kernels/ as `package`; InputError naming it when the base does not import."""
    if package in sys.modules:
        return sys.modules[package]
    init = path / PACKAGE / "__init__.py"
    if not init.is_file():
        raise InputError(f"A/B base {path} has no {PACKAGE}/__init__.py")
    spec = importlib.util.spec_from_file_location(
        package, init, submodule_search_locations=[str(path / PACKAGE)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[package]
        raise InputError(
            f"the A/B base's kernels ({path}) fail to import: {type(err).__name__}: {err}"
        ) from err
    if not hasattr(module, "VARIANTS"):
        raise InputError(f"the A/B base's kernels ({path}) have no VARIANTS registry")
    return module


# --- variant identity across the change ------------------------------------------------------


def _switches(variant: Any) -> tuple[Any, ...] | None:
    """(plan function, switches but the name, family, twin) of a Triton variant; None otherwise."""
    plan = getattr(variant, "plan", None)
    func, keywords = getattr(plan, "func", None), getattr(plan, "keywords", None)
    if func is None or keywords is None:
        return None
    switches = tuple(sorted((k, repr(v)) for k, v in keywords.items() if k != "variant"))
    where = (getattr(func, "__module__", "").rsplit(".", 1)[-1], func.__qualname__)
    return (where, switches, getattr(variant, "family", None))


def _twin(variant: Any) -> str | None:
    return getattr(variant, "twin_of", None) or getattr(variant, "xtile_twin_of", None)


def renames(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, str]:
    """{head name: base name} for every variant the head renamed.

    A rename is what the registry says (`Variant.renamed_from`), or a base-only and a head-only
    variant of the same family, plan, switches and twin (one of each: no guessing between two).
    A base variant absent from the head and not renamed is removed (the gate fails it while the
    baseline still holds its rows or expectations: tilegate.judge.verdict).
    """
    out: dict[str, str] = {}
    for name, variant in head.items():
        if name in base:
            continue
        for old in getattr(variant, "renamed_from", ()) or ():
            if old in base and old not in head and old not in out.values():
                out[name] = old
                break
    base_only = [n for n in base if n not in head and n not in out.values()]
    head_only = [n for n in head if n not in base and n not in out]
    for name in head_only:
        key = _switches(head[name])
        if key is None:
            continue
        twin = _twin(head[name])
        same = [
            n
            for n in base_only
            if _switches(base[n]) == key
            and {v: k for k, v in out.items()}.get(_twin(base[n]), _twin(base[n]))
            == twin
        ]
        if len(same) == 1 and not any(_switches(head[o]) == key for o in head_only if o != name):
            out[name] = same[0]
            base_only.remove(same[0])
    return out


def paired_base(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, Any]:
    """The base's variants keyed by the head's names: a renamed variant under its new name."""
    moved = renames(base, head)
    paired = {n: v for n, v in base.items() if n not in moved.values()}
    paired.update({new: base[old] for new, old in moved.items()})
    return paired


def registry_facts(
    head: Mapping[str, Any], base: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What the results file records about the head's registry: every name (a baseline row of
    a variant not in it was removed, not left out), and the renames {new: [old, ...]}."""
    renamed: dict[str, list[str]] = {}
    for name, variant in head.items():
        for old in getattr(variant, "renamed_from", ()) or ():
            renamed.setdefault(name, []).append(old)
    for new, old in renames(base or {}, head).items():
        if old not in renamed.setdefault(new, []):
            renamed[new].append(old)
    return {"registry": list(head), "renamed": renamed}
