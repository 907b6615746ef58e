#!/usr/bin/env python3
"""Put tilegate onto a Liger-Kernel work tree, as a maintainer's first tilegate pull request would.

    python examples/liger-repo/graft.py LIGER_TREE

Adds, and changes nothing under src/:

* ``perf_tests/test_liger_repo.py``: the protocol, a module-level ``BENCHMARK`` whose variants
  are calls into ``liger_kernel`` (imported by its own name) beside eager torch, and its test;
* ``perf_tests/pytest.ini``: the suite's own pytest configuration (Liger's
  [tool.pytest.ini_options] adds coverage options for its unit tests);
* ``baselines/README.md``: so every clone has baselines/;
* a ``[tool.tilegate]`` table appended to pyproject.toml (source = "src/liger_kernel", no
  registry: the variants live in the protocol);
* ``.perf/`` (tilegate's output) appended to .gitignore.

The files are those under graft_files/ beside this script. Exit 0 when written; 2 (nothing
written) when LIGER_TREE is not a Liger-Kernel tree or already has any of it. Standard library
only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK, EXIT_REFUSED = 0, 2
FILES = Path(__file__).resolve().parent / "graft_files"
SOURCE = "src/liger_kernel"
TABLE = f"""
[tool.tilegate]
source = "{SOURCE}"    # the code a pull request changes (each side of an A/B: its own)
protocol = "perf_tests"           # how it is measured: a pull request is measured by its base's
baselines = "baselines"           # baselines/<gpu-slug>.json, <gpu-slug>.ab.json, tolerances.toml
"""
IGNORE = "\n# tilegate's output (results, reports, an A/B's base)\n.perf/\n"


class Refused(Exception):
    """The tree cannot take the graft: the message says why (exit 2)."""


def planned(tree: Path) -> dict[Path, str]:
    """{path in the tree: its new full text} of every file the graft writes; Refused if the tree
    is no Liger-Kernel tree or already has a part of the graft."""
    if not (tree / SOURCE / "__init__.py").is_file():
        raise Refused(f"{tree} has no {SOURCE}/__init__.py: not a Liger-Kernel work tree")
    pyproject = tree / "pyproject.toml"
    if not pyproject.is_file():
        raise Refused(f"{tree} has no pyproject.toml")
    text = pyproject.read_text(encoding="utf-8")
    if "[tool.tilegate]" in text:
        raise Refused(f"{pyproject} already has a [tool.tilegate] table")
    out: dict[Path, str] = {}
    for src in sorted(p for p in FILES.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        dest = tree / src.relative_to(FILES)
        if dest.exists():
            raise Refused(f"{dest} already exists")
        out[dest] = src.read_text(encoding="utf-8")
    out[pyproject] = text + ("" if text.endswith("\n") else "\n") + TABLE
    ignore = tree / ".gitignore"
    old = ignore.read_text(encoding="utf-8") if ignore.is_file() else ""
    if ".perf/" not in old.split():
        out[ignore] = old + ("" if not old or old.endswith("\n") else "\n") + IGNORE
    for dest in out:
        if dest.resolve().is_relative_to((tree / "src").resolve()):
            raise Refused(f"the graft would write {dest}, inside src/")  # never: a bug here
    return out


def graft(tree: Path) -> list[Path]:
    """Write the graft into `tree`; the paths written."""
    files = planned(tree)
    for dest, text in files.items():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.graft.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(dest)
    return sorted(files)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="graft.py", description=__doc__.split("\n\n")[0])
    p.add_argument("tree", type=Path, help="a Liger-Kernel work tree (its root)")
    args = p.parse_args(argv)
    tree = args.tree.resolve()
    try:
        written = graft(tree)
    except (Refused, OSError) as err:
        print(f"graft.py: {err}; nothing written", file=sys.stderr)
        return EXIT_REFUSED
    for path in written:
        print(path.relative_to(tree))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
