"""Warnings from third-party packages (Triton, torch): recorded and reported, never raised.

A Triton upgrade is when new warnings appear (Triton 3.9: `TRITON_DEFAULT_FP_FUSION is unset` at
every compile, docs/pitfalls.md); under pytest's `filterwarnings = error` each would kill a sound
measurement. Inside `recording()` a warning from one of those packages' files is recorded (and
reported); any other, ours included, is re-issued unchanged when the block ends, under the filters
in force.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

THIRD_PARTY = ("triton", "torch")


@dataclass(frozen=True)
class Warned:
    """One warning a third-party package issued."""

    category: str  # "UserWarning"
    message: str
    source: str  # "triton/knobs.py:504": where the package issued it

    def to_json(self) -> dict[str, str]:
        return {"category": self.category, "message": self.message, "source": self.source}

    @staticmethod
    def from_json(data: object) -> Warned | None:
        """A recorded warning read back (e.g. from a cache entry), or None if malformed."""
        if not isinstance(data, dict):
            return None
        fields = [data.get(k) for k in ("category", "message", "source")]
        if not all(isinstance(f, str) for f in fields):
            return None
        return Warned(*(str(f) for f in fields))


def _package_dirs(packages: Iterable[str]) -> list[tuple[str, Path]]:
    """(name, directory) of each package that is installed, found without importing it."""
    out = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            out += [(name, Path(d).resolve()) for d in spec.submodule_search_locations]
    return out


def _source(filename: str, lineno: int, dirs: Sequence[tuple[str, Path]]) -> str | None:
    """`package/relative/path.py:line` if `filename` lies in one of `dirs`, else None."""
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return None
    for name, d in dirs:
        if path.is_relative_to(d):
            return f"{name}/{path.relative_to(d).as_posix()}:{lineno}"
    return None


@contextmanager
def recording(packages: Sequence[str] = THIRD_PARTY) -> Iterator[list[Warned]]:
    """Record the warnings `packages` issue inside the block (into the yielded list); every other
    is issued again, unchanged, when it ends. Each issue is recorded, whatever Python's "once per
    location" filter would show; one a package issues once per process (Triton 3.9's
    `warn_once`) is recorded in the first block that triggers it."""
    dirs = _package_dirs(packages)
    got: list[Warned] = []
    ours = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield got
    finally:
        for w in caught:
            src = _source(w.filename, w.lineno, dirs)
            if src is None:
                ours.append(w)
            else:
                got.append(Warned(w.category.__name__, str(w.message), src))
    # only when the block succeeded: an exception on its way out matters more than a warning
    for w in ours:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def unique(found: Iterable[Warned]) -> list[tuple[Warned, int]]:
    """Distinct warnings with how many times each was recorded, in first-seen order."""
    counts: dict[Warned, int] = {}
    for w in found:
        counts[w] = counts.get(w, 0) + 1
    return list(counts.items())
