"""What the confirmation re-measures: only what a second run could still decide otherwise.

`tilegate perf` measures, judges, and then measures the suspects again before accusing them
(tilegate.run.loop). In A/B mode (a pull request against its base) the rule is here, as plain
functions of the verdicts, so that it is tested on recorded results (tests/test_confirm.py):

* the suspects: A/B cases SLOWER, AMBIGUOUS or UNSTABLE, and the stored-baseline rows that could
  fail (REGRESSED or UNSURE, their code changed by the pull request) with both rows of a broken
  expectation (`Comparison.suspects`);
* beyond doubt, not re-measured (`beyond_doubt`): an A/B SLOWER case whose whole 99 % interval
  lies beyond BEYOND_DOUBT_TOLERANCES x its tolerance (the tolerance plus a margin of one more
  tolerance), with a one-sided Wilcoxon p below BEYOND_DOUBT_P, decided on its interval (not by
  its median at the round cap), with a known code change and a tolerance calibrated by A/A
  noise. docs/measuring.md, "The confirmation", gives the A/A arithmetic;
* settled: when one case is beyond doubt, nothing is re-measured: the run fails on it (exit 1)
  whatever a second run would say of the other suspects, which then stand on the first run
  (the report says "in one run (not re-measured: the run fails on the cases beyond doubt)");
* what is timed (`confirmation_cases`): each remaining A/B suspect with its base partner
  (`<case>`, `<case>@base`: the pair's per-round ratio is the verdict), each remaining stored
  suspect alone, plus the reference row of its group where its verdict needs the ratio to the
  reference (a slowdown of a row whose code did not change, or not known to, is SHIFTED or not
  by that ratio, tilegate.judge.verdict). Not their whole groups, not the other variants.

Stored-baseline mode (no A/B) keeps re-timing whole groups (`--perf-groups-of`): its verdicts
read ratios to the reference and to twins inside a group.
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
