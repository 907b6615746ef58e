"""The layer rule (docs/architecture.md): lower layers never reach up. The judge returns facts and
imports neither the report nor the run; no two layers of tilegate import each other, directly or
through others. Every import counts: top-level, inside a function, under TYPE_CHECKING."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tilegate"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The tilegate modules `name` imports (a name resolved to the module that holds it)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([node.module] if node.module else [])])
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> str:
    """tilegate.judge.abcase -> judge; tilegate.cli -> cli; tilegate -> tilegate."""
    return name.split(".")[1] if "." in name else name


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    """The parser itself: a TYPE_CHECKING import, and a function-level one count."""
    assert "tilegate.report.upgrade" in GRAPH["tilegate.run.upgrade"]  # top level
    assert "tilegate.run.loop" in GRAPH["tilegate.commands.perf"]  # inside a function
    assert (
        "tilegate.report.plots" in GRAPH["tilegate.run.gate"]
    )  # `from tilegate.report import plots`
    assert "tilegate.fingerprint.compile" in GRAPH["tilegate.fingerprint.rules"]  # `from .compile`
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_judge_imports_neither_the_report_nor_the_run() -> None:
    reaching_up = {
        name: sorted(t for t in targets if _layer(t) in ("report", "run"))
        for name, targets in GRAPH.items()
        if _layer(name) == "judge"
    }
    assert {k: v for k, v in reaching_up.items() if v} == {}


def test_no_two_layers_import_each_other() -> None:
    layers: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        for target in targets:
            if _layer(target) != _layer(name):
                layers.setdefault(_layer(name), set()).add(_layer(target))
    assert _cycles(layers) == []
    # the floors docs/architecture.md names, bottom up: none imports one above it
    floors = ["judge", "store", "fingerprint", "harness", "explain", "report", "run"]
    for i, low in enumerate(floors):
        assert not layers.get(low, set()) & set(floors[i + 1 :]), f"{low} reaches up"


COMMANDS = PACKAGE / "commands"


def _command_modules() -> set[str]:
    return {_module(p) for p in COMMANDS.glob("*.py") if not p.name.startswith("_")}


def test_one_module_per_command_and_only_the_cli_imports_them() -> None:
    """asv's shape: tilegate/commands/<name>.py each owns its arguments and its run; the
    command line (tilegate.cli) only dispatches."""
    commands = _command_modules()
    assert {"tilegate.commands.perf", "tilegate.commands.compare"} <= commands
    importers = {
        name: sorted(t for t in targets if t in commands)
        for name, targets in GRAPH.items()
        if name != "tilegate.cli"
    }
    assert {k: v for k, v in importers.items() if v} == {}
    assert commands <= GRAPH["tilegate.cli"]
    for name in commands:
        text = MODULES[name].read_text(encoding="utf-8")
        assert "\nNAME = " in text and "\nHELP = " in text and "\ndef run(" in text, name
    assert len(MODULES["tilegate.cli"].read_text(encoding="utf-8").splitlines()) <= 60


def _top_imports(path: Path) -> set[str]:
    """Every module name `path` imports, absolute, first component (a relative import: '.')."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add("." if node.level else (node.module or "").split(".")[0])
    return out


def test_nothing_in_the_package_imports_this_repositorys_kernels() -> None:
    """The wheel holds tilegate/ alone: another repository has no `kernels` to import."""
    reaching = sorted(n for n, p in MODULES.items() if "kernels" in _top_imports(p))
    assert reaching == []


def test_the_judge_and_the_history_know_no_benchmark_of_their_own() -> None:
    """judge/ and history/ know a benchmark through the results and the declaration only: they
    import neither this repository's kernels nor the fingerprint's matmul plans."""
    matmul = {"tilegate.fingerprint.suite", "tilegate.fingerprint.compile"}
    for name, targets in GRAPH.items():
        if _layer(name) in ("judge", "history"):
            assert not targets & matmul, (name, sorted(targets & matmul))
            assert "kernels" not in _top_imports(MODULES[name]), name
        if _layer(name) == "judge":  # a case's parameters are its `params`, named by the protocol
            tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
            defined = [
                n.name
                for n in ast.walk(tree)
                if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and "matmul" in n.name.lower()
            ]
            assert defined == [], (name, defined)


def _declared_parameters() -> set[str]:
    """The parameter names of this repository's declaration (perf_tests/): every profile's axes
    and fixed values (the matmul benchmark's dtype, layout, K; M, N)."""
    from tilegate.protocol import find_benchmarks

    out: set[str] = set()
    for _, bench in find_benchmarks(ROOT / "perf_tests"):
        for profile in bench.profiles:
            out |= {a.name for a in profile.axes} | set(profile.fixed)
    return out


MATMUL_WORDS = ("matmul", "cublas", "gemm")


def _matmul_names(path: Path, params: set[str]) -> list[str]:
    """What `path` names of the matmul benchmark outside its docstrings: a parameter name as a
    key (`x["K"]`, `{"K": ...}`), a column of a list or tuple (`("dtype", "layout", "K")`), a
    qualified column of SQL (`c.K`), or a word of a string (a name of more than one letter:
    `dtype`, `layout`; one-letter words are everyday text, "the latest N runs"); a word of
    MATMUL_WORDS; a variable, argument or attribute named after a parameter (`dtype` as an
    attribute excepted: numpy's arrays have one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }

    def named(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in params

    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value)
            hits = [
                w
                for w in words
                if (w in params and len(w) > 1) or any(m in w.lower() for m in MATMUL_WORDS)
            ]
            qualified = re.findall(r"\b[A-Za-z_]\w*\.([A-Za-z_]\w*)\b", node.value)
            hits += [w for w in qualified if w in params]
            found += [f"{where} string {node.value[:60]!r} ({w})" for w in hits]
        elif isinstance(node, ast.Subscript) and named(node.slice):
            found.append(f"{where} key {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            found += [f"{where} key {k.value!r}" for k in node.keys if k is not None and named(k)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            found += [f"{where} column {e.value!r}" for e in node.elts if named(e)]
        elif isinstance(node, ast.Name) and node.id in params:
            found.append(f"{where} name {node.id}")
        elif isinstance(node, ast.arg) and node.arg in params:
            found.append(f"{where} argument {node.arg}")
        elif isinstance(node, ast.Attribute) and node.attr in params - {"dtype"}:
            found.append(f"{where} attribute .{node.attr}")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and any(
            m in node.name.lower() for m in MATMUL_WORDS
        ):
            found.append(f"{where} {node.name}")
    return found


def test_the_history_knows_no_parameter_of_this_repositorys_benchmark(tmp_path: Path) -> None:
    """Issue 40: "nothing in history/ knows matmul ... except through the declaration". The
    history store keeps a case's parameters in its `params` (the names the declaration gives
    them): no module of history/ names a parameter of this repository's declaration, or
    matmul, cuBLAS or GEMM (`_matmul_names`), and a new store has no column named after one."""
    import duckdb

    from tilegate.store.historydb import open_store

    params = _declared_parameters()
    assert {"dtype", "layout", "K", "M", "N"} <= params, params  # the test reads the declaration
    found = [
        hit
        for name, path in MODULES.items()
        if _layer(name) == "history"
        for hit in _matmul_names(path, params)
    ]
    assert found == [], "\n".join(found)
    with open_store(tmp_path / "h.duckdb", write=True):
        pass
    con = duckdb.connect(str(tmp_path / "h.duckdb"), read_only=True)
    columns = {
        str(r[0]) for r in con.execute("SELECT column_name FROM duckdb_columns()").fetchall()
    }
    con.close()
    assert not columns & params, sorted(columns & params)
