"""What fails a run: the one rule that turns the verdicts into an exit code (and the headline).

* Stored-baseline mode (a push to main, a new GPU, an environment change): a REGRESSED row
  fails, unless it is the reference; a broken expectation fails.
* Several GPUs of one host (`tilegate perf --gpus N`): the rows of a GPU whose cuBLAS rows sit
  away from the other GPUs' are not judged (GPU OFF); if nothing else fails, the run is exit 2,
  cannot judge, naming that GPU.
* A/B mode (a pull request against its base): a case SLOWER than its base fails; a broken
  expectation (checked on the head) fails; a stored-baseline REGRESSED row fails only if the
  pull request changed its compiled code (A/B code hashes differ, or cannot be compared): a row
  whose code is the base's cannot have been slowed by this pull request, so its slowdown against
  the stored baseline is drift since the baseline, reported, not this pull request's fault.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK
from tilegate.judge.ab import ABCase, ABComparison
from tilegate.judge.crosstile import ExpectationResult
from tilegate.judge.verdict import Comparison, RowVerdict


@dataclass(frozen=True)
class Outcome:
    code: int
    regressions: tuple[RowVerdict, ...] = ()  # stored-baseline rows that fail
    drift: tuple[RowVerdict, ...] = ()  # REGRESSED rows whose code the pull request did not change
    broken: tuple[ExpectationResult, ...] = ()
    slower: tuple[ABCase, ...] = ()  # A/B cases slower than their base

    @property
    def parts(self) -> list[str]:
        """The headline's list of what failed."""
        out = []

        def count(n: int, one: str, many: str) -> None:
            if n:
                out.append(f"{n} {one if n == 1 else many}")

        count(len(self.slower), "case slower than its base", "cases slower than their base")
        count(len(self.regressions), "regression", "regressions")
        count(len(self.broken), "broken expectation", "broken expectations")
        return out


def outcome(cmp: Comparison | None, ab: ABComparison | None) -> Outcome:
    unchanged = {c.key for c in ab.cases if c.code_changed is False} if ab else set()
    failing = [r for r in cmp.rows if r.fails] if cmp else []
    regressions = tuple(r for r in failing if r.key not in unchanged)
    drift = tuple(r for r in failing if r.key in unchanged)
    broken = tuple(cmp.broken) if cmp else ()
    slower = tuple(c for c in ab.cases if c.fails) if ab else ()
    code = EXIT_FAIL if regressions or broken or slower else EXIT_OK
    if code == EXIT_OK and cmp is not None and cmp.off_gpus:
        code = EXIT_CANNOT_JUDGE  # rows of an off GPU were measured but could not be judged
    return Outcome(code, regressions, drift, broken, slower)
