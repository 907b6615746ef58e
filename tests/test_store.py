"""Storage behind one interface (tilegate.store): the judge takes objects and returns objects;
every file it judges with is read, and every file it decides is written, by the store."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from tests.test_layers import MODULES
from tilegate.judge.baseline import Baseline
from tilegate.store.files import Baselines

FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "load", "dump"}
FILEIO = {"read_json", "read_text", "atomic_write_json", "atomic_write_text", "remove_stale_temps"}


def _file_io(path: Path) -> list[str]:
    """What `path` does with files: open(), a Path's read/write, json.load(fp) / json.dump, or
    tilegate.fileio's readers and writers imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
            if name in FILE_CALLS and (name not in ("load", "dump") or _is_json(f)):
                found.append(f"{where} {ast.unparse(f)}()")
        elif isinstance(node, ast.ImportFrom) and node.module == "tilegate.fileio":
            found += [f"{where} imports fileio.{a.name}" for a in node.names if a.name in FILEIO]
    return found


def _is_json(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and ast.unparse(func.value) == "json"


def test_no_module_of_the_judge_touches_a_file() -> None:
    judge = [p for n, p in MODULES.items() if n.startswith("tilegate.judge.")]
    assert len(judge) > 10
    assert [hit for p in judge for hit in _file_io(p)] == []


def test_the_check_sees_each_kind_of_file_access(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json\nfrom tilegate.fileio import atomic_write_json, is_finite_number\n"
        "open('x')\nPath('x').read_text()\njson.load(fp)\njson.loads('1')\nd.load()\n",
        encoding="utf-8",
    )
    assert sorted(h.split(" ", 1)[1] for h in _file_io(probe)) == [
        "Path('x').read_text()",
        "imports fileio.atomic_write_json",
        "json.load()",
        "open()",
    ]


def test_the_baselines_store_loads_saves_and_queries(tmp_path: Path) -> None:
    """One baselines/ directory: the stored baseline and noise file of a GPU, found by its slug,
    loaded into the judge's objects and saved back unchanged."""
    repo = Path(__file__).resolve().parents[1] / "baselines"
    shutil.copy(repo / "nvidia-h200.json", tmp_path / "nvidia-h200.json")
    store = Baselines(tmp_path)
    assert store.query() == ["nvidia-h200"] and store.query(noise=True) == []
    assert store.load_noise("nvidia-h200") is None and store.tolerances() is None
    stored = store.load("nvidia-h200")
    assert isinstance(stored, Baseline) and stored.path == tmp_path / "nvidia-h200.json"
    out = store.save(stored, tmp_path / "copy.json")
    assert out.read_bytes() == (tmp_path / "nvidia-h200.json").read_bytes()
