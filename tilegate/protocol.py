"""The protocol: how the code is measured, a pytest-benchmark suite in `perf_tests/` (docs/plugin.md).

Beside the source path (`[tool.tilegate] source`: the kernels and their registry) the protocol
directory (`protocol`, default perf_tests/) holds pytest modules `test_*.py`: one defines a
module-level ``BENCHMARK`` (a tilegate.declare.Benchmark from the registry's variants) and a test
taking `tilegate_case` and `benchmark`, which tilegate's plugin parametrizes with its cases.
`load_protocol` finds and validates that BENCHMARK (exit 2 naming the file and what to do);
`load_base_protocol` does the same for an A/B base's protocol, the base's source package standing
in while it is imported, so that it is evaluated with the base's variants.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from tilegate.errors import InputError

DOCS = 'docs/plugin.md, "Layout"'


def protocol_files(directory: Path) -> list[Path]:
    """The pytest modules of the protocol directory (test_*.py, *_test.py), sorted."""
    found = {*directory.rglob("test_*.py"), *directory.rglob("*_test.py")}
    return sorted(p for p in found if "__pycache__" not in p.parts)


def _module_name(file: Path) -> tuple[str, Path]:
    """The name pytest's default import mode gives `file`, and the directory it puts on sys.path:
    the dotted path from the first directory above without an __init__.py."""
    parts = [file.stem]
    here = file.parent
    while (here / "__init__.py").is_file():
        parts.insert(0, here.name)
        here = here.parent
    return ".".join(parts), here


def _import(file: Path, name: str | None) -> ModuleType:
    """Import `file` under `name`, by default the name pytest would give it (so that pytest finds
    it loaded); a module of that name from another file (another repository) is replaced."""
    if name is None:
        name, where = _module_name(file)
        if str(where) not in sys.path:
            sys.path.insert(0, str(where))
        known = sys.modules.get(name)
        if known is not None and Path(getattr(known, "__file__", "") or "") == file:
            return known
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def find_benchmarks(directory: Path, prefix: str | None = None) -> list[tuple[Path, Any]]:
    """(file, BENCHMARK) of each protocol module that declares one; InputError when a module
    does not import or its BENCHMARK is not a Benchmark."""
    from tilegate.declare import Benchmark

    if not directory.is_dir():
        raise InputError(
            f"no protocol directory {directory}: [tool.tilegate] protocol names the pytest-benchmark "
            "suite that measures the source (default perf_tests/). Write perf_tests/test_<name>.py "
            f"with a module-level BENCHMARK (`tilegate init` writes a starter; {DOCS})"
        )
    out = []
    for file in protocol_files(directory):
        name = None if prefix is None else f"{prefix}_{file.stem}"
        try:
            module = _import(file.resolve(), name)
        except Exception as err:
            raise InputError(
                f"{file}: importing the protocol module failed: {type(err).__name__}: {err}"
            ) from err
        found = getattr(module, "BENCHMARK", None)
        if found is None:
            continue
        if not isinstance(found, Benchmark):
            raise InputError(
                f"{file}: BENCHMARK is a {type(found).__name__}, not a tilegate.declare.Benchmark"
            )
        out.append((file, found))
    return out


def check(
    found: Sequence[tuple[Path, Any]],
    directory: Path,
    registry: Sequence[Any] | None = None,
    registry_name: str | None = None,
) -> Any:
    """The one benchmark of the protocol, or InputError naming the file and what to do."""
    if not found:
        raise InputError(
            f"{directory} declares no benchmark: none of its modules "
            f"({', '.join(p.name for p in protocol_files(directory)) or 'no test_*.py'}) defines a "
            f"module-level BENCHMARK = tilegate.declare.Benchmark(...) ({DOCS})"
        )
    names: dict[str, list[Path]] = {}
    for file, bench in found:
        names.setdefault(bench.name, []).append(file)
    for name, files in names.items():
        if len(files) > 1:
            raise InputError(
                f"two benchmarks of one name {name!r}: {', '.join(map(str, files))}; give each "
                "its own name (Benchmark(name=...)): results and baselines are keyed by it"
            )
    if len(found) > 1:
        raise InputError(
            f"{directory} declares {len(found)} benchmarks ("
            + ", ".join(f"{b.name} in {f.name}" for f, b in found)
            + "): tilegate measures one benchmark per repository; keep one BENCHMARK"
        )
    file, bench = found[0]
    problems = bench.problems()
    if registry is not None:
        known = {v.name for v in registry}
        measured = {v.name for v in bench.variants}
        for e in bench.expectations:
            for who in (e.faster, e.than):
                if who not in known:
                    problems.append(
                        f"expectation {e.faster} beats {e.than}: the registry "
                        f"({registry_name}) has no variant {who!r}"
                    )
        unmeasured = [n for n in (v.name for v in registry) if n not in measured]
        if unmeasured:
            problems.append(
                f"registry variant(s) {unmeasured} ({registry_name}) measured by no suite: build "
                "BENCHMARK's variants from the registry, or remove them from it"
            )
    if problems:
        raise InputError(f"{file}: BENCHMARK {bench.name!r}: " + "; ".join(problems))
    return bench


def load_protocol(
    directory: Path, registry: Sequence[Any] | None = None, registry_name: str | None = None
) -> Any:
    """The protocol directory's benchmark, validated (InputError naming the file)."""
    return check(find_benchmarks(directory), directory, registry, registry_name)


@contextlib.contextmanager
def standing_in(name: str, package: str) -> Iterator[None]:
    """While inside: `import name` (and `name.sub`) gives `package` (and `package.sub`)."""
    saved = {k: m for k, m in sys.modules.items() if k == name or k.startswith(f"{name}.")}
    for k in saved:
        del sys.modules[k]
    for k, m in list(sys.modules.items()):
        if k == package or k.startswith(f"{package}."):
            sys.modules[name + k[len(package) :]] = m
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def load_base_protocol(
    directory: Path, source_name: str, package: str, registry: str | None = None
) -> Any:
    """An A/B base's protocol, evaluated with the base's source (imported as `package`) in place
    of the head's `source_name`: its benchmark's variants are the base's."""
    if registry:
        module = registry.partition(":")[0]
        inner = package + module[len(source_name) :]
        with contextlib.suppress(ImportError):
            importlib.import_module(inner)
    with standing_in(source_name, package):
        found = find_benchmarks(directory, prefix=f"{package}_protocol")
    return check(found, directory)
