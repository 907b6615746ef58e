"""Atomic file writes and strict JSON reads, shared by everything that writes under .perf/ or baselines/."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from tilegate.errors import InputError


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text to path so that readers see the old file or the new one, never half of it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write data as stable, reviewable JSON (sorted keys, 2-space indent), atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not valid JSON here")


def read_json(path: str | os.PathLike[str], what: str) -> Any:
    """Read a JSON file; a missing, unreadable or corrupt file is an InputError naming it."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} {p} does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"{what} {p} cannot be read: {err}") from err
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as err:
        raise InputError(f"{what} {p} is not valid JSON ({err}); restore it from git or regenerate it") from err


def is_finite_positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
