"""What fails a run: the one rule that turns the verdicts into an exit code (and the headline);
docs/gate.md ("The decision rule", "What fails") gives the measurements behind each.

* Stored baseline: a REGRESSED row (not the reference's) or a broken expectation fails. Several
  GPUs of one host (`--gpus N`): a GPU whose cuBLAS rows sit away from the others' is not judged
  (GPU OFF), exit 2 if nothing else fails.
* A/B (a pull request against its base; an upgrade A/B likewise): a case SLOWER than its base
  fails, and a broken expectation (checked on the head); a stored REGRESSED row fails only if the
  pull request changed its code (hashes differ or cannot be compared) and the A/B did not find it
  no slower than its base: else it is drift since the baseline, reported (creep is caught where
  the stored baseline alone judges, a push to main). An UNSTABLE case fails when a mode on its
  own rounds is slower than the tolerance, else it is exit 2 unless something else fails.
* Every mode: a case or expectation of the protocol (A/B: the base's) not measured or checked
  (tilegate.judge.coverage; one "not selected" by the command line is no failure), a variant
  removed, not renamed, while the baseline holds its rows (A/B: unacknowledged), an
  unacknowledged loosening of baselines/ (tilegate.judge.integrity) and MORE MEMORY
  (tilegate.judge.memory) fail; the same identity with a ratio A/A noise cannot give is exit 2.
* A smoke run (`timings_not_judged`: the CPU interpreter's timings mean nothing): the verdicts
  are shown, but no timing verdict sets the exit code; it fails only on what is not a timing
  (coverage, a failed correctness check among it, a removed variant, a baseline change).

The words the verdicts give, and what each means: tilegate.judge.vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK
from tilegate.judge.abcase import ABCase
from tilegate.judge.abcompare import ABComparison
from tilegate.judge.coverage import Coverage
from tilegate.judge.crosstile import ExpectationResult
from tilegate.judge.memory import MemoryCase
from tilegate.judge.verdict import Comparison, RowVerdict
from tilegate.judge.vocabulary import ABVerdict, Headline, Verdict


@dataclass(frozen=True)
class Outcome:
    code: int
    regressions: tuple[RowVerdict, ...] = ()  # stored-baseline rows that fail
    drift: tuple[RowVerdict, ...] = ()  # REGRESSED rows whose code the pull request did not change
    # REGRESSED rows whose code changed, each with its A/B case: decided no slower than the base
    cleared: tuple[tuple[RowVerdict, ABCase], ...] = ()
    broken: tuple[ExpectationResult, ...] = ()
    slower: tuple[ABCase, ...] = ()  # A/B cases slower than their base
    removed: tuple[ABCase, ...] = ()  # A/B cases of a variant the head removed (not renamed)
    gone: tuple[RowVerdict, ...] = ()  # baseline rows of a variant no longer in the registry
    inconsistent: tuple[ABCase, ...] = ()  # same identity, a ratio noise cannot give (exit 2)
    integrity: tuple[str, ...] = ()  # unacknowledged loosening of baselines/ (judge.integrity)
    coverage: Coverage | None = None  # what the protocol says to measure and check
    # A/B UNSTABLE cases: with a mode slower on its own rounds (fails), and the rest (exit 2)
    unstable_slower: tuple[ABCase, ...] = ()
    unstable: tuple[ABCase, ...] = ()
    more_memory: tuple[MemoryCase, ...] = ()  # MORE MEMORY than the base or baseline (fails)
    smoke: bool = False  # an interpreter run: its timing verdicts set no exit code

    @property
    def structural(self) -> bool:
        """Whether something that is not a timing fails the run (Outcome.timings_not_judged)."""
        uncovered = self.coverage is not None and self.coverage.fails
        return bool(uncovered or self.integrity or self.removed or self.gone)

    @property
    def parts(self) -> list[str]:
        """The headline's list of what failed."""
        counts = [(len(getattr(self, name)), one, many) for name, one, many in _PARTS]
        out = list(self.coverage.parts) if self.coverage is not None else []
        return out + [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]


# what fails a run, in the headline's order: the Outcome's field, its words for one and many
_PARTS = (
    ("integrity", "unacknowledged baseline change", "unacknowledged baseline changes"),
    ("slower", "case slower than its base", "cases slower than their base"),
    ("unstable_slower", "unstable case with a slower mode", "unstable cases with a slower mode"),
    ("removed", "case of a removed variant", "cases of removed variants"),
    ("gone", "baseline row of a removed variant", "baseline rows of removed variants"),
    ("regressions", "regression", "regressions"),
    ("more_memory", "case with more memory", "cases with more memory"),
    ("broken", "broken expectation", "broken expectations"),
    (
        "inconsistent",
        "case with the same code whose time moved",
        "cases with the same code whose time moved",
    ),
    ("unstable", "unstable case that cannot be judged", "unstable cases that cannot be judged"),
)


def outcome(
    cmp: Comparison | None,
    ab: ABComparison | None,
    integrity: tuple[str, ...] = (),
    coverage: Coverage | None = None,
    *,
    smoke: bool = False,
    memory: tuple[MemoryCase, ...] = (),
) -> Outcome:
    """The exit code by the module's rule: 2 when the identity proved untrustworthy (SAME CODE,
    TIME MOVED) even if something failed, or when a GPU was off or an UNSTABLE case has no
    slower mode and nothing failed; 1 when something failed; else 0."""
    base = _outcome(cmp, ab)
    gone = tuple(r for r in base.regressions if r.verdict is Verdict.GONE)
    regressions = tuple(r for r in base.regressions if r.verdict is not Verdict.GONE)
    # an A/B case the head lacks that coverage already names (with why: variant gone, a skip)
    # fails the run there, once
    named = {m.key for m in coverage.missing} if coverage is not None else set()
    removed = tuple(c for c in base.slower if c.verdict is ABVerdict.REMOVED and c.key not in named)
    unstable_slower = tuple(c for c in base.slower if c.verdict is ABVerdict.UNSTABLE)
    slower = tuple(
        c for c in base.slower if c.verdict not in (ABVerdict.REMOVED, ABVerdict.UNSTABLE)
    )
    inconsistent = tuple(ab.by(ABVerdict.INCONSISTENT)) if ab else ()
    unstable = tuple(c for c in ab.by(ABVerdict.UNSTABLE) if not c.fails) if ab else ()
    code = base.code
    more_memory = tuple(m for m in memory if m.fails)
    if integrity or more_memory or (coverage is not None and coverage.fails):
        code = EXIT_FAIL
    if unstable and code == EXIT_OK:
        code = EXIT_CANNOT_JUDGE
    if inconsistent:
        code = EXIT_CANNOT_JUDGE
    found = (
        regressions,
        base.drift,
        base.cleared,
        base.broken,
        slower,
        removed,
        gone,
        inconsistent,
    )
    unjudged = (unstable_slower, unstable, more_memory)
    result = Outcome(code, *found, integrity, coverage, *unjudged)
    return timings_not_judged(result) if smoke else result


def timings_not_judged(result: Outcome) -> Outcome:
    """A smoke run's outcome, the one smoke rule of every mode: every verdict kept, the exit
    code 1 only for what is not a timing (`Outcome.structural`), else 0."""
    return replace(result, code=EXIT_FAIL if result.structural else EXIT_OK, smoke=True)


def _outcome(cmp: Comparison | None, ab: ABComparison | None) -> Outcome:
    unchanged = ab.same_code if ab else frozenset()
    cleared_keys = ab.no_slower if ab else frozenset()
    no_slower = {c.key: c for c in ab.cases if c.key in cleared_keys} if ab else {}
    failing = [r for r in cmp.rows if r.fails] if cmp else []
    regressions = tuple(r for r in failing if r.key not in unchanged and r.key not in no_slower)
    drift = tuple(r for r in failing if r.key in unchanged)
    cleared = tuple((r, no_slower[r.key]) for r in failing if r.key in no_slower)
    broken = tuple(cmp.broken) if cmp else ()
    slower = tuple(c for c in ab.cases if c.fails) if ab else ()
    code = EXIT_FAIL if regressions or broken or slower else EXIT_OK
    if code == EXIT_OK and cmp is not None and cmp.off_gpus:
        code = EXIT_CANNOT_JUDGE  # rows of an off GPU were measured but could not be judged
    return Outcome(code, regressions, drift, cleared, broken, slower)


def headline(code: int) -> Headline:
    """The run's word for its exit code: PASS (0), FAIL (1), else CANNOT JUDGE."""
    return {EXIT_OK: Headline.PASS, EXIT_FAIL: Headline.FAIL}.get(code, Headline.CANNOT_JUDGE)
