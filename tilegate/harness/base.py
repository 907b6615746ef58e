"""The base side of an A/B run: another commit's tree, checked out where its process runs it.

`materialise` writes REF's whole tree (`git archive`: no build products) into `dest_root/<sha>/`,
with `tilegate-source.json` beside it saying where its code and protocol are (the base commit's
own `[tool.tilegate]` decides, else the head's); its process (tilegate.harness.sides) imports
it by its own name. A tree with build products (a compiled extension) is built in place by
`[tool.tilegate] build`; the head's tree is measured as the repository's CI built it.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tilegate.errors import InputError
from tilegate.judge.integrity import FETCH_HINT

SOURCE_FILE = "tilegate-source.json"  # beside the base's tree: its source, protocol, registry
TREE_DIR = "tree"  # the base commit's tree, under dest_root/<sha>/


@dataclass(frozen=True)
class Base:
    """A materialised base (`protocol` None: it has none of its own, the head's measures it)."""

    ref: str
    sha: str
    path: Path  # dest_root/<sha>: the tree and SOURCE_FILE
    source: str
    protocol: str | None
    registry: str | None

    @property
    def tree(self) -> Path:
        return self.path / TREE_DIR


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def _base_config(repo: Path, sha: str) -> dict[str, str | None] | None:
    """The base commit's own [tool.tilegate] facts, or None (none, or none this tilegate reads)."""
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
        config = parse(table, tmp)
    except InputError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return {k: getattr(config, k) for k in ("source", "protocol", "registry", "build")}


def materialise(
    ref: str,
    repo: Path,
    dest_root: Path,
    *,
    source: str,
    protocol: str | None = None,
    registry: str | None = None,
    build: str | None = None,
) -> Base:
    """Check out REF's tree under dest_root/<sha>/ (and build it); InputError naming REF when it
    cannot. `source` ... `build`: the head's [tool.tilegate], where the base commit has none."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise InputError(
            f"A/B base {ref!r} is not a commit of {repo} (missing, or not fetched). {FETCH_HINT}"
        )
    sha = found.stdout.decode().strip()
    own = _base_config(repo, sha)
    cfg = own or {"source": source, "protocol": None, "registry": registry, "build": build}
    source = str(cfg["source"])
    dest = dest_root / sha
    staging = dest_root / f".{sha}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / TREE_DIR).mkdir(parents=True)
    try:
        archive = _git(repo, "archive", "--format=tar", sha)
        if archive.returncode != 0:
            why = archive.stderr.decode(errors="replace").strip()
            raise InputError(f"A/B base {ref} ({sha[:12]}): its tree cannot be checked out: {why}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(staging / TREE_DIR, filter="data")
        if not (staging / TREE_DIR / source).is_dir():
            where = "its [tool.tilegate] source" if own else "the head's [tool.tilegate] source"
            raise InputError(
                f"A/B base {ref} ({sha[:12]}) has no {source}/ ({where}): there is no code of "
                "the base to measure; pick a base that has it, or measure without --ab"
            )
        base_protocol = cfg["protocol"]
        if base_protocol is not None and not (staging / TREE_DIR / base_protocol).is_dir():
            raise InputError(
                f"A/B base {ref} ({sha[:12]}) has no {base_protocol}/ (its [tool.tilegate] "
                "protocol): there is no protocol of the base to measure the pull request under"
            )
        facts = {"source": source, "protocol": base_protocol, "registry": cfg["registry"]}
        (staging / SOURCE_FILE).write_text(json.dumps(facts) + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    staging.replace(dest)
    if cfg.get("build"):
        try:
            build_tree(str(cfg["build"]), dest / TREE_DIR, f"A/B base {ref} ({sha[:12]})")
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)  # nothing half-built is left
            raise
    return Base(ref, sha, dest, source, base_protocol, cfg["registry"])


BUILD_TIMEOUT_S = 3600


def build_tree(command: str, tree: Path, what: str) -> None:
    """Run `[tool.tilegate] build` in `tree` (this Python first on PATH and as $PYTHON), its output
    in `<tree>/../build.log`; InputError naming `what`, the command and its output's end."""
    import os
    import sys

    log = tree.parent / "build.log"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PYTHON": sys.executable, "PATH": path}
    try:
        done = subprocess.run(
            command,
            shell=True,
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        out, why = done.stdout.decode(errors="replace"), f"exit {done.returncode}"
        failed = done.returncode != 0
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode(errors="replace")
        why, failed = f"still running after {BUILD_TIMEOUT_S} s", True
    log.write_text(out)
    if failed:
        tail = " | ".join(out.strip().splitlines()[-3:]) or "no output"
        raise InputError(
            f"{what}: its [tool.tilegate] build `{command}` failed ({why}): {tail}. Fix the "
            "build or the command (it runs in the base's tree, a `git archive` of its commit)"
        )


def read_base(path: Path, ref: str = "", sha: str = "") -> Base:
    """A base materialise() wrote, read back from its directory (InputError when it is not)."""
    try:
        facts = json.loads((path / SOURCE_FILE).read_text())
        source, protocol, registry = (
            str(facts["source"]),
            facts.get("protocol"),
            facts.get("registry"),
        )
        return Base(ref or path.name, sha or path.name, path, source, protocol, registry)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"A/B base {path} was not materialised by tilegate (no readable {SOURCE_FILE})"
        ) from err


# --- one process for both sides, where the package allows it -------------------------------------


def package_name(sha: str) -> str:
    """The name a base's package is imported under beside the head's, in one process."""
    return f"tilegate_base_{sha[:12]}"


def imports_by_name(tree: Path, source: str, limit: int | None = None) -> list[str]:
    """The files of the source package that import it by its own name (`import pkg`, `from pkg
    import`, or a string naming it, as `importlib.import_module("pkg.x")` takes): [] when it
    imports itself relatively only, so two versions of it can live in one process. `limit`: no
    more files parsed (Liger-Kernel's src/liger_kernel takes about a second a side)."""
    import ast

    package = Path(source).name
    root = tree / source
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if limit is not None and len(found) >= limit:
            break
        try:
            nodes = ast.walk(ast.parse(path.read_bytes()))
        except (OSError, SyntaxError, ValueError):
            found.append(str(path.relative_to(tree)))  # unreadable: not shown to be relative
            continue
        for node in nodes:
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value] if node.value.startswith(f"{package}.") else []
            if any(n == package or n.startswith(f"{package}.") for n in names):
                found.append(str(path.relative_to(tree)))
                break
    return found


def load_aliased(tree: Path, source: str, alias: str) -> ModuleType:
    """Import the package at tree/source as `alias` (its relative imports follow it)."""
    import importlib.util
    import sys

    if alias in sys.modules:
        return sys.modules[alias]
    init = tree / source / "__init__.py"
    if not init.is_file():
        raise InputError(f"A/B base {tree}: no {source}/__init__.py")
    spec = importlib.util.spec_from_file_location(
        alias, init, submodule_search_locations=[str(tree / source)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[alias]
        raise InputError(
            f"its package {Path(source).name!r} ({tree / source}) fails to import: "
            f"{type(err).__name__}: {err}"
        ) from err
    return module


# --- variant identity across the change ------------------------------------------------------


def _switches(variant: Any) -> tuple[Any, ...] | None:
    """(plan function, switches but the name, family) of a Triton variant, else None (another
    process's VariantFacts brings its own)."""
    if hasattr(variant, "switches_key"):
        key = variant.switches_key
        return tuple(key) if key is not None else None
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
    """{head name: base name} for every variant the head renamed: `Variant.renamed_from`, or a
    base-only and a head-only variant of the same family, plan, switches and twin (one of each:
    no guessing). A base variant neither in the head nor renamed is removed (judge.verdict)."""
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
    """The head's registry as the results file records it: every name, the renames {new: [old]}."""
    renamed: dict[str, list[str]] = {}
    for name, variant in head.items():
        for old in getattr(variant, "renamed_from", ()) or ():
            renamed.setdefault(name, []).append(old)
    for new, old in renames(base or {}, head).items():
        if old not in renamed.setdefault(new, []):
            renamed[new].append(old)
    return {"registry": list(head), "renamed": renamed}
