"""The map is checked against the code (STYLE 24): docs/architecture.md names only modules that
exist, and every module of tilegate/ has its row in its layout table; every `[tool.tilegate]`
key a docstring or a document shows is one tilegate.config accepts."""

from __future__ import annotations

import re
from pathlib import Path

from tilegate.config import KEYS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tilegate"
MAP = ROOT / "docs" / "architecture.md"


def _modules() -> set[str]:
    """Every module of the package as its path (`tilegate/judge/ab.py`), packages' __init__
    and __main__ left out (their package's row names them)."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }


def _layout_rows() -> list[str]:
    text = MAP.read_text(encoding="utf-8")
    table = text[text.index("## Layout") :]
    table = table[: table.index("\n## ", 1)]
    return [line for line in table.splitlines() if line.startswith("| `tilegate/")]


def _row_modules(row: str) -> set[str]:
    """The modules a layout row gives: paths in its first cell, siblings written `name.py`
    after a path there, and a package's modules written `name` in a row for `tilegate/pkg/`."""
    first = row.split(" | ")[0]
    out, folder = set(), None
    for token in re.findall(r"`([^`]+)`", first):
        if token.startswith("tilegate/"):
            folder = token if token.endswith("/") else token.rsplit("/", 1)[0] + "/"
            out.add(token.rstrip("/"))
        elif folder and token.endswith(".py"):
            out.add(folder + token)
    if first.strip("| `").endswith("/"):  # a package's row: its modules by name
        out |= {folder + f"{name}.py" for name in re.findall(r"`(\w+)`", row)}
    return out


def _unresolved(text: str) -> list[str]:
    """The module paths (`tilegate/x/y.py`) and dotted names (`tilegate.x.y[.name]`) of `text`
    that do not exist: a dotted name's longest module prefix must define what follows it."""
    missing = [p for p in sorted(set(re.findall(r"(?<![\w.])tilegate/[\w/]+(?:\.py)?", text)))]
    missing = [p for p in missing if not (ROOT / p).exists()]
    # not a schema name ("tilegate.ab-noise/1", "tilegate.bisect/1") nor a dunder (`tilegate.__file__`)
    for name in sorted(
        set(
            re.findall(
                r"(?<![\w.])tilegate(?:\.(?!ya?ml\b|json\b|toml\b)[a-z]\w*)+(?![\w/-])", text
            )
        )
    ):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            base = ROOT.joinpath(*parts[:i])
            source = base.with_suffix(".py")
            source = source if source.exists() else base / "__init__.py"
            if source.exists():
                break
        rest = parts[i:]
        if not source.exists() or (
            rest and not re.search(rf"\b{rest[0]}\b", source.read_text(encoding="utf-8"))
        ):
            missing.append(name)
    return missing


def test_every_module_the_map_names_exists() -> None:
    missing = _unresolved(MAP.read_text(encoding="utf-8"))
    assert missing == [], f"docs/architecture.md names what does not exist: {missing}"


def test_every_module_a_docstring_names_exists() -> None:
    """A docstring or comment of tilegate/ that points at a module points at one that exists
    (judge/gate.py's pointed at the deleted tilegate.report.gate)."""
    missing = {
        p.relative_to(ROOT).as_posix(): bad
        for p in sorted(PACKAGE.rglob("*.py"))
        if (bad := _unresolved(p.read_text(encoding="utf-8")))
    }
    assert missing == {}


def test_every_module_has_its_row_in_the_map() -> None:
    named: set[str] = set()
    for row in _layout_rows():
        named |= _row_modules(row)
    rowless = sorted(_modules() - named)
    assert rowless == [], f"modules without a row in docs/architecture.md's layout: {rowless}"


def _shown_keys(text: str) -> list[str]:
    """The keys of every `[tool.tilegate]` table `text` shows: the `key =` lines after the
    header (indented as in a docstring or not), up to the first line that is not one."""
    keys = []
    for block in re.split(r"(?m)^[ \t]*\[tool\.tilegate\][ \t]*\n", text)[1:]:
        for line in block.splitlines():
            m = re.match(r"\s*([A-Za-z_][\w-]*)\s*=", line)
            if not m:
                if line.strip().startswith("#"):
                    continue
                break
            keys.append(m.group(1))
    return keys


def test_every_tool_tilegate_key_shown_is_accepted() -> None:
    """declare.py's docstring showed `benchmark = ...`, a key tilegate.config rejects."""
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *PACKAGE.rglob("*.py")]
    files += [*ROOT.glob("examples/**/*.md"), *ROOT.glob("examples/**/pyproject.toml")]
    files.append(ROOT / "pyproject.toml")
    unknown = {
        f"{p.relative_to(ROOT)}: {k}"
        for p in files
        for k in _shown_keys(p.read_text(encoding="utf-8"))
        if k not in KEYS
    }
    assert sorted(unknown) == []


def test_every_tool_says_who_runs_it() -> None:
    """tools/ holds only what a user, CI or a documented GPU check runs: each entry has its row
    in tools/README.md (a probe whose question is answered leaves, its figures in docs/)."""
    readme = (ROOT / "tools" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([\w.-]+/?)`", readme))
    entries = {
        p.name + ("/" if p.is_dir() else "")
        for p in (ROOT / "tools").iterdir()
        if p.name != "README.md" and p.name != "__pycache__"
    }
    assert sorted(entries - listed) == []
