"""What the confirmation re-measures: only what a second run could still decide otherwise.

`tilegate perf` measures, judges, and measures the suspects again before accusing them
(tilegate.run.loop); in A/B mode the rule is here, plain functions of the verdicts tested on
recorded results (tests/test_confirm.py; the rule and its A/A arithmetic: docs/measuring.md,
"The confirmation"). The suspects (A/B SLOWER, AMBIGUOUS or UNSTABLE cases; stored REGRESSED or
UNSURE rows the pull request can be blamed for, and both rows of a broken expectation) are timed
each with its base partner (`<case>@base`), a stored one with the reference row of its group
where its verdict needs the ratio to the reference (SHIFTED or not, tilegate.judge.shift); not
their groups. When an A/B SLOWER case is beyond doubt (`beyond_doubt`) nothing is re-measured:
the run fails on it, and the other suspects stand on the first run. Stored-baseline mode keeps
re-timing whole groups (`--perf-groups-of`): its verdicts read ratios inside a group.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilegate.cases import BASE_SUFFIX
from tilegate.judge.abcase import ABCase
from tilegate.judge.abcompare import ABComparison
from tilegate.judge.verdict import Comparison
from tilegate.judge.vocabulary import ABVerdict, Verdict

# The margin and the bound of "beyond doubt": docs/measuring.md gives the A/A arithmetic
BEYOND_DOUBT_TOLERANCES = 2.0
BEYOND_DOUBT_P = 1e-4


def beyond_doubt(case: ABCase) -> bool:
    """An A/B SLOWER verdict a second run cannot overturn (the module's docstring)."""
    return (
        case.verdict is ABVerdict.SLOWER
        and not case.by_median
        and case.code_changed is True
        and case.ci is not None
        and case.tolerance is not None
        and case.tolerance_source.startswith("A/A noise")
        and case.ci[0] - 1 > BEYOND_DOUBT_TOLERANCES * case.tolerance
        and case.p_slower is not None
        and case.p_slower < BEYOND_DOUBT_P
    )


@dataclass(frozen=True)
class Confirmation:
    """The confirmation of one A/B run: the pytest ids to time, and the cases it spares."""

    cases: tuple[str, ...]  # pytest ids: `<case>`, `<case>@base`, the reference's `<case>`
    decided: tuple[str, ...]  # A/B SLOWER cases beyond doubt: not re-measured

    @property
    def settled(self) -> bool:
        """A case beyond doubt fails the run: nothing else is measured again."""
        return bool(self.decided)

    def text(self) -> str:
        """The --perf-cases-of file."""
        return "".join(f"{c}\n" for c in self.cases)


def confirmation_cases(ab: ABComparison, cmp: Comparison | None = None) -> Confirmation:
    """What an A/B run's confirmation times (the module's docstring), in the run's order."""
    decided = [c.key for c in ab.cases if beyond_doubt(c)]
    if decided:  # the run fails on them whatever a second run says of any other case
        return Confirmation((), tuple(decided))
    out = [k for key in ab.suspects() for k in (key, f"{key}{BASE_SUFFIX}")]
    if cmp is not None:
        rows, reference = {r.key: r for r in cmp.rows}, ab.run.reference
        for key in (k for k in cmp.suspects(ab.not_blamed) if k in ab.run.rows):
            out.append(key)
            v = rows.get(key)
            could_fail = v is not None and v.verdict in (Verdict.REGRESSED, Verdict.UNSURE)
            if could_fail and v is not None and v.code_changed is not True and reference:
                ref = ab.run.find(reference, ab.run.rows[key].group)
                out += [ref.key] if ref is not None else []
    return Confirmation(tuple(dict.fromkeys(out)), tuple(decided))
