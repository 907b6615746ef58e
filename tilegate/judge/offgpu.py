"""The fleet rule: rows of GPUs of one model share that model's baseline, but a GPU whose
reference rows sit outside the model's spread is named and its rows are not judged against the
others (`tilegate perf --gpus N`, tilegate.run.shard runs them; tilegate.judge.verdict applies it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OffGpu:
    index: int
    serial: str | None
    shift: float  # median change of its reference rows against the baseline
    others: float  # the median change of the other GPUs' reference rows
    why: str


def off_gpus(
    shifts: Mapping[int, Sequence[float]], tolerance: float, serials: Mapping[int, str | None]
) -> list[OffGpu]:
    """The GPUs whose reference rows' changes against the baseline (`shifts`, by GPU index) sit
    beyond `tolerance` of the others'; with two that disagree neither can be told right: both."""
    import statistics

    med = {i: statistics.median(s) for i, s in shifts.items() if s}
    if len(med) < 2:
        return []
    if len(med) == 2:  # no majority: if they disagree, neither can be told right
        (i, a), (j, b) = sorted(med.items())
        if abs(a - b) <= tolerance:
            return []
        why = "its reference rows moved {:+.1%} against the baseline, the other GPU's {:+.1%}; "
        why += "with two GPUs, which one is off cannot be told"
        return [
            OffGpu(i, serials.get(i), a, b, why.format(a, b)),
            OffGpu(j, serials.get(j), b, a, why.format(b, a)),
        ]
    center = statistics.median(med.values())  # the model's level on this host, robust to one
    why = "its reference rows moved {:+.1%} against the baseline, the host's GPUs {:+.1%}"
    return [
        OffGpu(i, serials.get(i), m, center, why.format(m, center))
        for i, m in sorted(med.items())
        if abs(m - center) > tolerance
    ]
