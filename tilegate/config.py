"""`[tool.tilegate]` in a project's pyproject.toml: where its benchmark, source and baselines are.

    [tool.tilegate]
    benchmark = "kernels.registry:BENCHMARK"   # module:attribute, imported with the root on sys.path
    source = "kernels"                          # the kernels' source path (what A/B takes from the base)
    baselines = "baselines"                     # default: "baselines"

The root is the nearest directory, from the working directory up, whose pyproject.toml has a
[tool.tilegate] table. Every problem is an InputError (exit 2) naming the key and the file.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import read_text

KEYS = ("benchmark", "source", "baselines")
# one line: every cannot-judge message is one line of cause (tests/test_reliability.py)
HOW_TO_ADD = (
    "Run `tilegate init` in the repository root to write one with a starter benchmark, or add "
    '[tool.tilegate] with benchmark = "mypkg.perf:BENCHMARK" and source = "mypkg" to its '
    "pyproject.toml (docs/plugin.md)."
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
    benchmark: str
    source: str
    baselines: str = "baselines"

    @property
    def baselines_dir(self) -> Path:
        return self.root / self.baselines

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


def parse(table: dict[str, Any], pyproject: Path) -> Config:
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InputError(
            f"{pyproject}: unknown key(s) {unknown} in [tool.tilegate]; known: {list(KEYS)}"
        )
    for key in ("benchmark", "source"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise InputError(f"{pyproject}: [tool.tilegate] {key} is missing or not a string")
    if ":" not in table["benchmark"]:
        raise InputError(
            f"{pyproject}: [tool.tilegate] benchmark = {table['benchmark']!r}: expected "
            "'module:attribute', e.g. 'mypkg.perf:BENCHMARK'"
        )
    baselines = table.get("baselines", "baselines")
    if not isinstance(baselines, str) or not baselines:
        raise InputError(f"{pyproject}: [tool.tilegate] baselines must be a directory name")
    return Config(
        root=pyproject.parent.resolve(),
        file=pyproject,
        benchmark=table["benchmark"].strip(),
        source=table["source"].strip().rstrip("/"),
        baselines=baselines,
    )


def find(start: Path | None = None) -> Config:
    """The configuration of the repository holding `start` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        pyproject = d / "pyproject.toml"
        if pyproject.is_file():
            table = read_table(pyproject)
            if table is not None:
                return parse(table, pyproject)
    raise InputError(f"no [tool.tilegate] configuration in {here} or above. {HOW_TO_ADD}")


def load_benchmark(config: Config) -> Any:
    """Import the configured benchmark and validate it; InputError naming the key and the file."""
    from tilegate.declare import Benchmark

    module_name, _, attr = config.benchmark.partition(":")
    where = f"{config.file}: [tool.tilegate] benchmark = {config.benchmark!r}"
    root = str(config.root)
    if root not in sys.path:
        sys.path.insert(0, root)
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
    bench = getattr(module, attr, None)
    if bench is None:
        raise InputError(f"{where}: module {module_name} has no attribute {attr!r}")
    if not isinstance(bench, Benchmark):
        raise InputError(
            f"{where}: {attr} is a {type(bench).__name__}, not a tilegate.declare.Benchmark"
        )
    problems = bench.problems()
    if problems:
        raise InputError(f"{where}: " + "; ".join(problems))
    return bench
