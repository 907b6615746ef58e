"""The base side of an A/B run: another commit's kernel source, materialised and imported beside ours.

`materialise(ref, repo)` resolves REF in the repository (a pull request's base is `HEAD^1` of
GitHub's merge commit), extracts that commit's source path (`[tool.tilegate] source`: the base
commit's own configuration decides, else the head's) with `git archive` into
`.perf/ab/<sha>/<package>/`, and its protocol into `.perf/ab/<sha>/protocol/` (what coverage is
checked against: tilegate.judge.coverage), and `load(path)` imports it under a package name of its own,
`tilegate_base_<sha12>`, so that both versions of every Triton kernel are compiled and live side
by side in one process. The package must use relative imports only (tests/test_ab.py checks
this repository's), which is what lets it be imported under another name.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
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
from tilegate.judge.integrity import FETCH_HINT

SOURCE_FILE = "tilegate-source.json"  # in the base's directory: its package and protocol
PROTOCOL_DIR = "protocol"  # the base's protocol directory, beside its package


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


def _base_config(repo: Path, sha: str) -> dict[str, str | None] | None:
    """source, protocol, registry (or a legacy `benchmark` inside the source) of the base
    commit's own [tool.tilegate], or None if it has none."""
    from tilegate.config import parse, read_table

    shown = _git(repo, "show", f"{sha}:./pyproject.toml")
    if shown.returncode != 0:
        return None
    tmp = Path(repo) / ".perf" / "ab" / f".{sha}.pyproject.toml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(shown.stdout)
    try:
        table = read_table(tmp)
        if table is None:
            return None
        if isinstance(table.get("benchmark"), str) and isinstance(table.get("source"), str):
            # a base from before the protocol left the source (its benchmark inside it)
            return {
                "source": table["source"].strip().rstrip("/"),
                "protocol": None,
                "registry": None,
                "benchmark": table["benchmark"].strip(),
            }
        config = parse(table, tmp)
    except InputError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return {
        "source": config.source,
        "protocol": config.protocol,
        "registry": config.registry,
        "benchmark": None,
    }


def _extract(repo: Path, sha: str, path: str, staging: Path) -> bool:
    archive = _git(repo, "archive", "--format=tar", sha, f"{path}/")
    if archive.returncode != 0:
        return False
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    return True


def materialise(
    ref: str,
    repo: Path,
    dest_root: Path,
    *,
    source: str,
    protocol: str | None = None,
    registry: str | None = None,
) -> Base:
    """Extract REF's source path and its protocol under dest_root/<sha>/; InputError naming REF
    when it cannot. `source`, `protocol`, `registry` are the head's [tool.tilegate]; the base
    commit's own win (its protocol is what a pull request is measured under)."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise InputError(
            f"A/B base {ref!r} is not a commit of {repo} (missing, or not fetched). {FETCH_HINT}"
        )
    sha = found.stdout.decode().strip()
    own = _base_config(repo, sha)
    cfg = own or {
        "source": source,
        "protocol": protocol,
        "registry": registry,
        "benchmark": None,
    }
    source = str(cfg["source"])
    dest = dest_root / sha
    staging = dest_root / f".{sha}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    archive = _git(repo, "archive", "--format=tar", sha, f"{source}/")
    if archive.returncode != 0:
        why = archive.stderr.decode().strip()
        raise InputError(f"A/B base {ref} ({sha[:12]}) has no {source}/ to measure: {why}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    package = Path(source).name
    if Path(source).parent != Path():  # src/mypkg: the package directly under the base dir
        (staging / source).replace(staging / package)
    base_protocol = cfg["protocol"]
    if base_protocol is not None:
        (staging / PROTOCOL_DIR).mkdir()
        if not _extract(repo, sha, base_protocol, staging / PROTOCOL_DIR) and own is None:
            base_protocol = None  # a base without a configuration of its own: its code only
        elif not (staging / PROTOCOL_DIR / base_protocol).is_dir():
            raise InputError(
                f"A/B base {ref} ({sha[:12]}) has no {base_protocol}/ (its [tool.tilegate] "
                "protocol): there is no protocol of the base to measure the pull request under"
            )
    (staging / SOURCE_FILE).write_text(
        json.dumps(
            {
                "package": package,
                "protocol": base_protocol,
                "registry": cfg["registry"],
                "benchmark": cfg["benchmark"],
            }
        )
        + "\n"
    )
    shutil.rmtree(dest, ignore_errors=True)
    staging.replace(dest)
    return Base(ref, sha, dest, package_name(sha))


def _source(path: Path) -> dict[str, Any]:
    """package, protocol, registry, benchmark of a materialised base."""
    try:
        facts = json.loads((path / SOURCE_FILE).read_text())
        str(facts["package"])
        return dict(facts)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"A/B base {path} was not materialised by tilegate (no readable {SOURCE_FILE})"
        ) from err


def load(path: Path, package: str) -> ModuleType:
    """Import the base's package as `package`; InputError naming it when the base does not import."""
    if package in sys.modules:
        return sys.modules[package]
    source = str(_source(path)["package"])
    init = path / source / "__init__.py"
    if not init.is_file():
        raise InputError(f"A/B base {path} has no {source}/__init__.py")
    spec = importlib.util.spec_from_file_location(
        package, init, submodule_search_locations=[str(path / source)]
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
    return module


def load_benchmark(path: Path, package: str) -> Any:
    """The base's benchmark: its protocol evaluated with its own source (its variants), or, for a
    base from before the protocol left the source, its [tool.tilegate] benchmark there."""
    from tilegate.declare import Benchmark
    from tilegate.protocol import load_base_protocol

    module = load(path, package)
    facts = _source(path)
    source = str(facts["package"])
    if facts.get("protocol"):
        try:
            where = path / PROTOCOL_DIR / str(facts["protocol"])
            return load_base_protocol(where, source, package, facts.get("registry"))
        except InputError as err:
            raise InputError(f"A/B base {path}: its protocol: {err}") from err
    benchmark = facts.get("benchmark")
    if not benchmark:
        raise InputError(f"A/B base {path}: no protocol and no [tool.tilegate] benchmark to load")
    mod_name, _, attr = str(benchmark).partition(":")
    if mod_name != source and not mod_name.startswith(f"{source}."):
        raise InputError(
            f"A/B base {path}: benchmark {benchmark!r} is not inside the source package "
            f"{source!r}, so the base's version of it cannot be imported beside the head's"
        )
    inner = package + mod_name[len(source) :]
    try:
        found = getattr(importlib.import_module(inner) if inner != package else module, attr, None)
    except Exception as err:
        raise InputError(
            f"A/B base {path}: importing {mod_name} failed: {type(err).__name__}: {err}"
        ) from err
    if not isinstance(found, Benchmark):
        raise InputError(f"A/B base {path}: {benchmark} is not a tilegate.declare.Benchmark")
    return found


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
            and {v: k for k, v in out.items()}.get(_twin(base[n]) or "", _twin(base[n])) == twin
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
