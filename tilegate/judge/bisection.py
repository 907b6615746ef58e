"""Bisect's decisions, pure (docs/bisect.md): a step's answer from its interval, and the search
over identity groups. Per case, from the interval of the median per-round ratio against GOOD:
DIFFERENT beyond the tolerance on the side the range moved, SAME within, UNKNOWN otherwise
(measured again with twice the rounds up to a cap, `attempts`; then its median decides, `settle`,
and the bisect is ambiguous). A change lies between known groups of different states (which
cases moved), halved until they are adjacent.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from tilegate.markdown import short_sha


class Answer(str, Enum):
    SAME = "SAME"
    DIFFERENT = "DIFFERENT"
    UNKNOWN = "UNKNOWN"


def answer(ci: tuple[float, float], tolerance: float, direction: int) -> Answer:
    """A case's answer from the interval of its ratio against GOOD; `direction` +1 when the range
    made it slower, -1 faster."""
    lo, hi = ci[0] - 1, ci[1] - 1
    if (direction > 0 and lo > tolerance) or (direction < 0 and hi < -tolerance):
        return Answer.DIFFERENT
    if lo >= -tolerance and hi <= tolerance:
        return Answer.SAME
    return Answer.UNKNOWN


def settle(ratio: float, tolerance: float) -> bool:
    """Whether a case still UNKNOWN at the cap goes with the moved side: its median decides."""
    return abs(ratio - 1) > tolerance


@dataclass(frozen=True)
class Read:  # one case read in one attempt of a step
    key: str
    ratio: float
    ci: tuple[float, float]
    tolerance: float
    answer: Answer


def attempts(measure: Callable[[int], list[Read]], rounds: int, cap: int) -> list[list[Read]]:
    """Measure with `rounds`, then with twice as many while a case is UNKNOWN, up to `cap`."""
    out = [measure(rounds)]
    while any(r.answer is Answer.UNKNOWN for r in out[-1]) and rounds * 2 <= cap:
        rounds *= 2
        out.append(measure(rounds))
    return out


def state(reads: Sequence[Read]) -> tuple[tuple[bool, ...], bool]:
    """(which cases moved, whether an UNKNOWN was settled by its median) of a step's last reads."""
    moved = tuple(
        r.answer is Answer.DIFFERENT
        or (r.answer is Answer.UNKNOWN and settle(r.ratio, r.tolerance))
        for r in reads
    )
    return moved, any(r.answer is Answer.UNKNOWN for r in reads)


States = Mapping[int, tuple[bool, ...]]  # group index -> which cases moved


def spans(states: States) -> list[tuple[int, int]]:
    """Adjacent known groups whose states differ: a change lies after the first, up to the second."""
    known = sorted(states)
    return [(a, b) for a, b in itertools.pairwise(known) if states[a] != states[b]]


def next_group(states: States) -> int | None:
    """The group to time next (the middle of the first span wider than one), or None: done."""
    return next(((a + b) // 2 for a, b in spans(states) if b - a > 1), None)


def culprits(states: States) -> list[int]:
    """The groups whose state differs from the known group just before them."""
    return [b for a, b in spans(states) if b == a + 1]


def steps_left(states: States) -> int:
    """Timed steps still needed: each open span halves until its groups are adjacent."""
    return sum(math.ceil(math.log2(b - a)) for a, b in spans(states) if b - a > 1)


def command(good: str, bad: str, cases: Sequence[str], profile: str | None = None) -> str:
    """The `tilegate bisect` command of a range and its cases (the history, a failed run's report),
    with the profile its cases were measured at where one is known (a hint works as printed)."""
    words = ["tilegate bisect", short_sha(good), short_sha(bad), *(f"--case {c}" for c in cases)]
    return " ".join(words + ([f"--profile {profile}"] if profile else []))
