"""Atomic file writes and strict JSON reads, shared by everything that writes under .perf/ or baselines/."""

from __future__ import annotations

import glob
import json
import math
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, TypeGuard

from tilegate.errors import InputError


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text to path so that readers see the old file or the new one, never half of it. A
    target that is a directory, or in one this user may not write, is an InputError naming it."""
    target = Path(path)
    if target.is_dir():
        raise InputError(
            f"cannot write {target}: it is a directory; give the path of a file (e.g. "
            f"{target / 'report.md'} for a report, {target / 'nvidia-h200.json'} for a baseline)"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(target)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
        )
    except (PermissionError, FileExistsError, NotADirectoryError) as err:
        raise InputError(
            f"cannot write {target}: {err.strerror or err}. Check that {target.parent} is a "
            "directory this user may write (`ls -ld`), or give another path"
        ) from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file owner-only (0600); keep the old file's mode, or the usual 0644
        Path(tmp).chmod(stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


STALE_AFTER_S = 3600.0  # a temp file without a writer's pid (an older tilegate's) is this old


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files that killed writers of `target` left beside it; return them.

    A writer killed before its rename (SIGKILL, OOM, a cancelled CI job) leaves
    `.<name>.<pid>.<random>.tmp`: the next write removes those whose process is gone (one without
    a pid once older than STALE_AFTER_S). They are git-ignored too (`.*.tmp`)."""
    target = Path(target)
    removed = []
    for tmp in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        middle = tmp.name[len(target.name) + 2 : -len(".tmp")]
        pid = middle.split(".", 1)[0]
        try:
            stale = (
                not _alive(int(pid))
                if pid.isdigit() and "." in middle
                else time.time() - tmp.stat().st_mtime > STALE_AFTER_S
            )
            if stale:
                tmp.unlink()
                removed.append(tmp)
        except OSError:  # gone already, or not ours to remove: not this write's concern
            continue
    return removed


def format_json(data: Any, *, inline_scalar_lists: bool = False) -> str:
    """Stable, reviewable JSON: sorted keys, 2-space indent, no NaN, a final newline; with
    `inline_scalar_lists` a list of numbers or strings on one line (one diff line, not forty)."""
    if not inline_scalar_lists:
        return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"

    def encode(obj: Any, depth: int) -> str:
        pad, inner = "  " * depth, "  " * (depth + 1)
        if isinstance(obj, dict) and obj:
            items = [
                f"{inner}{json.dumps(str(k))}: {encode(obj[k], depth + 1)}" for k in sorted(obj)
            ]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(obj, list) and any(isinstance(x, (dict, list)) for x in obj):
            return "[\n" + ",\n".join(inner + encode(x, depth + 1) for x in obj) + "\n" + pad + "]"
        return json.dumps(obj, allow_nan=False, separators=(", ", ": "))

    return encode(data, 0) + "\n"


def atomic_write_json(
    path: str | os.PathLike[str], data: Any, *, inline_scalar_lists: bool = False
) -> None:
    """Write data as stable, reviewable JSON (see `format_json`), atomically."""
    atomic_write_text(path, format_json(data, inline_scalar_lists=inline_scalar_lists))


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not valid JSON here")


REMEDY = "restore it from git or regenerate it"  # what to do about a damaged file, by default


def read_text(path: str | os.PathLike[str], what: str, *, remedy: str = REMEDY) -> str:
    """Read a UTF-8 text file; a missing, unreadable or non-UTF-8 file is an InputError naming it
    (`remedy`: what to do about a damaged one)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p} is a directory, not a file: give the path of the file itself")
    if not p.is_file():
        raise InputError(f"{what} {p} does not exist")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:  # a ValueError, not an OSError: it would escape as a crash
        raise InputError(
            f"{what} {p} is not UTF-8 text (byte {err.start}: {err.reason}). tilegate writes "
            f"UTF-8: {remedy}; if an editor or a shell redirect "
            "re-encoded it (UTF-16 from PowerShell, Latin-1), save it as UTF-8"
        ) from err
    except PermissionError as err:
        raise InputError(
            f"{what} {p} cannot be read: permission denied. Make it readable for this user "
            f"(`ls -l {p}`, `chmod a+r`), or run as its owner"
        ) from err
    except OSError as err:
        raise InputError(f"{what} {p} cannot be read: {err}") from err


def read_json(
    path: str | os.PathLike[str], what: str, *, allow_nan: bool = False, remedy: str = REMEDY
) -> Any:
    """Read a JSON file; a missing, unreadable, non-UTF-8 or corrupt file is an InputError naming it.
    `allow_nan` accepts Python's NaN / Infinity (pytest-benchmark writes them): the caller names
    the row that holds one instead of rejecting the whole file."""
    p = Path(path)
    text = read_text(p, what, remedy=remedy)
    try:
        return json.loads(text) if allow_nan else json.loads(text, parse_constant=_reject_constant)
    except ValueError as err:
        raise InputError(f"{what} {p} is not valid JSON ({err}); {remedy}") from err


def is_finite_number(x: Any) -> TypeGuard[int | float]:
    """A real, finite JSON/TOML number (not a bool, NaN or infinity)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_finite_positive(x: Any) -> TypeGuard[int | float]:
    return is_finite_number(x) and x > 0
