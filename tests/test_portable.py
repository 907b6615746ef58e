"""Docs, examples and tools run as written on any machine: no tracked text file holds an absolute
path of the machine it was written on (its checkout, its home, its virtualenvs). Scratch
directories under /tmp are everyone's; a path into a person's machine is not."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# machine-specific roots (a checkout or a venv under them is one machine's), spelled so that
# this file does not hold them itself
_ROOTS = ("work", "root", "home", "Users")
MACHINE_PATH = re.compile(r"(?<![\w.~$/-])/(?:" + "|".join(_ROOTS) + r")/[\w.+-]+")


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / name for name in out.split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:  # a tracked file deleted in the working tree
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _machine_paths() -> list[str]:
    here = {str(ROOT), str(Path.home()), sys.prefix, sys.base_prefix} - {"/", ""}
    found = []
    for path in _tracked():
        text = _text(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            hits = MACHINE_PATH.findall(line) + [h for h in here if h in line]
            if hits:
                found.append(f"{path.relative_to(ROOT)}:{n}: {sorted(set(hits))}")
    return found


def test_the_pattern_finds_a_machine_path_and_spares_portable_ones() -> None:
    home = "/" + "home/ci/venv/bin/python"
    assert MACHINE_PATH.search(f"PYTHONPATH={home} python")
    assert MACHINE_PATH.search("export PYTHONPATH=/tmp/l:/" + "work/main")
    for portable in ("/tmp/liger-0.8.5", "$HOME/x", "~/src", "docs/ci.md", ".venv39/bin/python"):
        assert not MACHINE_PATH.search(portable), portable


def test_no_tracked_file_holds_a_path_of_this_machine() -> None:
    assert _tracked(), "git ls-files listed nothing: run from a checkout"
    assert _machine_paths() == []
