"""`[tool.tilegate]` in a project's pyproject.toml: where its code, protocol and baselines are.

Its keys, their defaults and what each means are `KEYS`, written once: the parser (`parse`), the
messages, `tilegate init`'s table (`table`) and this docstring (below) are made from them.

The protocol is a directory of pytest modules (`perf_tests/test_*.py`); the one that defines a
module-level `BENCHMARK` (a tilegate.declare.Benchmark) declares what is measured: the grid, the
profiles, inputs, reference, tolerance, work and expectations (tilegate.protocol loads it).

The root is the nearest directory, from the working directory up, whose pyproject.toml has a
[tool.tilegate] table. Every problem is an InputError (exit 2) naming the key and the file.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import read_text
from tilegate.peaks import check as check_peaks

# key: (its default, None when required; what it is, with {package} for the package's name)
KEYS: dict[str, tuple[str | None, str]] = {
    "source": (None, "the code: what a pull request changes (A/B: the base's)"),
    "registry": (None, "optional: its variants (module:attribute inside source)"),
    "protocol": ("perf_tests", "how it is measured: the base's judges a pull request"),
    "baselines": ("baselines", "<gpu-slug>.json, <gpu-slug>.ab.json, tolerances.toml"),
    "build": (None, "optional: a shell command that builds an A/B base's tree (extensions)"),
    "peaks": (None, "optional: a GPU's peaks added or overridden (tilegate.peaks)"),
}
EXAMPLE = {"source": "{package}", "registry": "{package}.kernels:VARIANTS"}
COMMENTED = {  # shown, not set, by `tilegate init`
    "build": '"python setup.py build_ext --inplace"',
    "peaks": '{"nvidia-h200" = {hbm_gbs = 4800}}',
}


def table(package: str = "mypkg") -> str:
    """A [tool.tilegate] table for `package`, every key with its meaning (`tilegate init`); the
    COMMENTED ones shown commented out."""
    values = {k: EXAMPLE.get(k, d or "").format(package=package) for k, (d, _) in KEYS.items()}
    shown = {
        k: f"# {k} = {COMMENTED[k]}" if k in COMMENTED else f'{k} = "{v}"'
        for k, v in values.items()
    }
    width = max(len(t) for t in shown.values()) + 2
    lines = [t.ljust(width) + f"# {KEYS[k][1]}" for k, t in shown.items()]
    return "[tool.tilegate]\n" + "\n".join(lines) + "\n"


__doc__ = (
    (__doc__ or "")
    + "\nThe table, as `tilegate init` writes it::\n\n"
    + "".join(f"    {line}\n" for line in table().splitlines())
)

# one line: every cannot-judge message is one line of cause (tests/test_reliability.py)
HOW_TO_ADD = (
    "Run `tilegate init` in the repository root to write one with a starter benchmark, or add a "
    '[tool.tilegate] table with source = "mypkg" (the package of your kernels; the other keys: '
    f"{', '.join(k for k in KEYS if k != 'source')}) to its pyproject.toml."
)


def _toml() -> Any:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the `tomli` dependency
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


@dataclass(frozen=True)
class Config:
    root: Path
    file: Path
    source: str
    protocol: str = "perf_tests"
    baselines: str = "baselines"
    registry: str | None = None  # module:attribute of the source's variants
    build: str | None = None  # a shell command run in an A/B base's tree before it is measured
    peaks: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # tilegate.peaks

    @property
    def baselines_dir(self) -> Path:
        return self.root / self.baselines

    @property
    def protocol_dir(self) -> Path:
        return self.root / self.protocol

    @property
    def import_roots(self) -> list[str]:
        """Where the source package is imported from: the directory holding it (the root, or
        its src/ in a src layout), then the root (the protocol's own helpers)."""
        return list(dict.fromkeys([str((self.root / self.source).parent), str(self.root)]))

    def put_on_path(self) -> None:
        """The import roots on sys.path, before anything else (an installed copy of the
        package must not shadow the repository's)."""
        for where in reversed(self.import_roots):
            if where in sys.path:
                sys.path.remove(where)
            sys.path.insert(0, where)

    @property
    def benchmark(self) -> str:
        """How the benchmark is found, for messages: the protocol directory's BENCHMARK."""
        return f"{self.protocol}/: BENCHMARK"

    def load_benchmark(self) -> Any:
        return load_benchmark(self)


def read_table(pyproject: Path) -> dict[str, Any] | None:
    """The [tool.tilegate] table of `pyproject` (None when it has none); InputError when broken."""
    toml = _toml()
    try:
        data = toml.loads(read_text(pyproject, "pyproject.toml"))
    except toml.TOMLDecodeError as err:
        raise InputError(f"{pyproject} is not valid TOML: {err}") from err
    table = data.get("tool", {}).get("tilegate")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InputError(f"{pyproject}: [tool.tilegate] must be a table")
    return table


def _inside(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def parse(table: dict[str, Any], pyproject: Path) -> Config:
    if "benchmark" in table:
        raise InputError(
            f"{pyproject}: [tool.tilegate] benchmark = {table['benchmark']!r} is no longer read: "
            "the benchmark is declared by the protocol, a module-level BENCHMARK in "
            'perf_tests/test_<name>.py (protocol = "perf_tests"), its variants stay in the source. '
            'Move the declaration there and drop the key (docs/plugin.md, "Layout").'
        )
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InputError(
            f"{pyproject}: unknown key(s) {unknown} in [tool.tilegate]; known: {list(KEYS)}"
        )
    if not isinstance(table.get("source"), str) or not table["source"].strip():
        raise InputError(f"{pyproject}: [tool.tilegate] source is missing or not a string")
    paths = {}
    for key in ("protocol", "baselines"):
        default = KEYS[key][0]
        value = table.get(key, default)
        if not isinstance(value, str) or not value.strip().strip("/"):
            raise InputError(f"{pyproject}: [tool.tilegate] {key} must be a directory name")
        paths[key] = value.strip().rstrip("/")
    source = table["source"].strip().rstrip("/")
    for key, path in paths.items():
        if _inside(path, source) or _inside(source, path):
            raise InputError(
                f"{pyproject}: [tool.tilegate] {key} = {path!r} and source = {source!r} "
                f"overlap: the {key} directory must lie outside the code a pull request "
                f'changes, e.g. {key} = "{KEYS[key][0]}" beside source'
            )
    registry = table.get("registry")
    if registry is not None and (not isinstance(registry, str) or ":" not in registry):
        raise InputError(
            f"{pyproject}: [tool.tilegate] registry = {registry!r}: expected "
            "'module:attribute' of the source's variants, e.g. 'mypkg.registry:VARIANTS'"
        )
    build = table.get("build")
    if build is not None and (not isinstance(build, str) or not build.strip()):
        raise InputError(
            f"{pyproject}: [tool.tilegate] build = {build!r}: expected a shell command that "
            "builds the source in place, e.g. 'python setup.py build_ext --inplace'"
        )
    return Config(
        peaks=check_peaks(table.get("peaks", {}), pyproject),
        root=pyproject.parent.resolve(),
        file=pyproject,
        source=source,
        protocol=paths["protocol"],
        baselines=paths["baselines"],
        registry=registry.strip() if registry else None,
        build=build.strip() if build else None,
    )


def find(start: Path | None = None) -> Config:
    """The configuration of the repository holding `start` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        pyproject = d / "pyproject.toml"
        if pyproject.is_file():
            table = read_table(pyproject)
            if table is not None:
                config = parse(table, pyproject)
                source = config.root / config.source
                if not source.is_dir() and not source.with_suffix(".py").is_file():
                    raise InputError(
                        f"{pyproject}: [tool.tilegate] source = {config.source!r}: no directory "
                        f"{source} (the package of the kernels, relative to {config.root})"
                    )
                return config
    raise InputError(f"no [tool.tilegate] configuration in {here} or above. {HOW_TO_ADD}")


def load_benchmark(config: Config) -> Any:
    """The protocol's benchmark, validated against the registry; InputError naming the file."""
    from tilegate.protocol import load_protocol

    config.put_on_path()
    registry = load_registry(config) if config.registry else None
    return load_protocol(config.protocol_dir, registry=registry, registry_name=config.registry)


def load_registry(config: Config) -> tuple[Any, ...]:
    """The variants `registry` names (a sequence of tilegate.declare.Variant)."""
    from tilegate.declare import Variant

    assert config.registry is not None
    module_name, _, attr = config.registry.partition(":")
    where = f"{config.file}: [tool.tilegate] registry = {config.registry!r}"
    config.put_on_path()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and module_name.startswith(err.name):
            raise InputError(f"{where}: no module {err.name!r} under {config.root}") from err
        raise InputError(f"{where}: importing {module_name} failed: {err}") from err
    except Exception as err:
        raise InputError(
            f"{where}: importing {module_name} failed: {type(err).__name__}: {err}"
        ) from err
    found = getattr(module, attr, None)
    variants = tuple(found.values() if isinstance(found, dict) else found or ())
    if not variants or not all(isinstance(v, Variant) for v in variants):
        raise InputError(
            f"{where}: {attr} must be a sequence of tilegate.declare.Variant "
            f"(found {type(found).__name__})"
        )
    return variants
