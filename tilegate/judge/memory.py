"""Peak GPU memory per case, judged exactly: no statistics, a tolerance in bytes or percent.

A row's memory (tilegate.harness.memory): the peak bytes one call allocates above what was
allocated before it, the bytes it holds after, whether the peak repeated exactly within the run.
Judged against its base row (A/B: the protocol's `memory_tolerance`, "0" by default) or its
baseline row (the tolerance rebaseline recorded): MORE MEMORY above the tolerance (fails, except
in a smoke run), LESS MEMORY below, else SAME; a peak that did not repeat on either side is
PEAK VARIES, never gated; a tolerance of None: recorded, no verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tilegate.declare import parse_memory_tolerance
from tilegate.errors import InputError
from tilegate.judge.vocabulary import MemoryVerdict
from tilegate.markdown import mib

if TYPE_CHECKING:
    from tilegate.judge.baseline import Baseline
    from tilegate.judge.results import Run


@dataclass(frozen=True)
class Memory:
    peak_bytes: int
    held_bytes: int
    repeats: bool
    tolerance: str | None = None  # a baseline row's: the declared tolerance at rebaseline

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "tolerance" or v is not None}


def parse(where: str, raw: Any) -> Memory | None:
    """A row's `memory` (None where it has none: older files, the CPU); InputError if broken."""
    if raw is None:
        return None
    ok = isinstance(raw, dict) and all(
        isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool)
        for k in ("peak_bytes", "held_bytes")
    )
    if not ok or raw["peak_bytes"] < 0 or not isinstance(raw.get("repeats"), bool):
        raise InputError(
            f"{where}: memory is {raw!r}; expected {{peak_bytes, held_bytes, repeats}} "
            "(tilegate.harness.memory); measure again"
        )
    try:
        parse_memory_tolerance(raw.get("tolerance"))
    except ValueError as err:
        raise InputError(f"{where}: {err}") from err
    return Memory(raw["peak_bytes"], raw["held_bytes"], raw["repeats"], raw.get("tolerance"))


def of_runs(found: Sequence[Memory | None], tolerance: str | None) -> Memory | None:
    """A baseline row's memory from its runs' (rebaseline): their largest peak, repeating only
    where every run's peak repeated and all are one; None unless every run recorded one."""
    got = [m for m in found if m is not None]
    if not got or len(got) < len(found):
        return None
    peaks = {m.peak_bytes for m in got}
    same = len(peaks) == 1 and all(m.repeats for m in got)
    return Memory(max(peaks), max(m.held_bytes for m in got), same, tolerance)


@dataclass(frozen=True)
class MemoryCase:
    key: str
    verdict: MemoryVerdict
    before: int  # the base's (A/B) or the baseline's peak bytes
    after: int  # this run's
    tolerance: str
    against: str  # "base" or "baseline"

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def fails(self) -> bool:
        return self.verdict is MemoryVerdict.MORE_MEMORY

    def as_json(self) -> dict[str, Any]:
        """verdicts.json's record of the case (its verdict by name, as `verdicts`)."""
        return {k: v for k, v in asdict(self).items() if k != "key"} | {
            "verdict": self.verdict.name
        }


def judge_memory(run: Run, baseline: Baseline | None = None) -> tuple[MemoryCase, ...]:
    """Each case with a memory on both sides: A/B against its base, else against `baseline`."""
    tol = run.env.memory_tolerance
    try:
        parse_memory_tolerance(tol)
    except ValueError as err:
        raise InputError(f"results file {run.path}: machine_info.tilegate.{err}") from err
    out = []
    for key, row in run.rows.items():
        if run.env.ab is not None:
            base = run.base_rows.get(key)
            before, limit, against = base.memory if base else None, tol, "base"
        else:
            stored = baseline.rows.get(key) if baseline is not None else None
            before = stored.memory if stored is not None else None
            limit, against = before.tolerance if before else None, "baseline"
        if before is None or row.memory is None or limit is None:
            continue
        out.append(MemoryCase(key, _word(before, row.memory, limit), before.peak_bytes,
                              row.memory.peak_bytes, limit, against))  # fmt: skip
    return tuple(out)


def _allowed(peak: int, tolerance: str | None) -> float:
    """The bytes above `peak` that a tolerance allows (inf: not gated)."""
    parsed = parse_memory_tolerance(tolerance)
    return math.inf if parsed is None else parsed[0] * peak / 100 if parsed[1] else parsed[0]


def _word(before: Memory, after: Memory, tolerance: str) -> MemoryVerdict:
    if not (before.repeats and after.repeats):
        return MemoryVerdict.PEAK_VARIES
    allowed, delta = _allowed(before.peak_bytes, tolerance), after.peak_bytes - before.peak_bytes
    if delta > allowed:
        return MemoryVerdict.MORE_MEMORY
    return MemoryVerdict.LESS_MEMORY if delta < -allowed else MemoryVerdict.SAME


def baseline_change(old: Memory | None, new: Memory | None) -> tuple[str, bool] | None:
    """How a baseline row's memory changed (a pull request's baselines/, tilegate.judge.integrity)
    and whether that loosens the gate: the largest peak that passes is higher, or none is gated."""
    if old is None or new == old:
        return None

    def ceiling(m: Memory | None) -> float:
        return m.peak_bytes + _allowed(m.peak_bytes, m.tolerance) if m and m.repeats else math.inf

    def shown(m: Memory | None) -> str:
        return f"{mib(m.peak_bytes)} (tolerance {m.tolerance})" if m else "none"

    return f"peak memory {shown(old)} -> {shown(new)}", ceiling(new) > ceiling(old)
