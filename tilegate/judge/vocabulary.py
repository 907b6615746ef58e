"""The verdict vocabulary: every word a judgement can give, defined once, and what it means.

Five judgements give words, each its own `str` Enum whose members are words of `Word`: a word two
judgements share (NEW, NOT MEASURED, PASS, FAIL) is one word with one meaning, spelled once. The
exit rule, verdicts to exit code to the headline word, is tilegate.judge.outcome's alone.

* stored: a row against the stored baseline (`Verdict`, tilegate.judge.verdict);
* ab: a case of the head against its base in the same rounds (`ABVerdict`, judge.abcase), an
  upgrade's too;
* expectation: a relational expectation at one value of its axis (`Status`, judge.crosstile);
* memory: a case's peak GPU memory of one call, exact (`MemoryVerdict`, judge.memory);
* outcome: the whole run, from its exit code (`Headline`, judge.outcome): the report's first line.

The words (the value, as the JSON files and the reports spell it; the judgements using it):

* ``REGRESSED`` (stored): slower than the baseline beyond the row's tolerance, significantly
  (in a majority of the runs). Fails, unless the reference row or A/B drift (code unchanged).
* ``UNSURE`` (stored): slower but not significant, or significant close to the tolerance:
  measure again before accusing. Never fails.
* ``IMPROVED`` (stored): faster beyond the tolerance, significant: a hint to rebaseline.
* ``OK`` (stored): within the tolerance.
* ``NEW`` (stored, ab): not in the baseline, or only in the head: not judged.
* ``NOT MEASURED`` (stored, expectation): in the baseline, not in this run (an expectation:
  both its rows are needed in the same run). Not judged.
* ``SHIFTED`` (stored): slower, but so was the reference in the same rounds and the row's code
  did not change: the machine or a neighbour moved. Never fails.
* ``GPU OFF`` (stored): measured on a GPU of the host whose reference rows sit away from the
  others': not judged; exit 2 if nothing else fails.
* ``VARIANT REMOVED`` (stored): its variant is no longer in the registry (not renamed). Fails,
  with its expectations, until the baseline drops it.
* ``SLOWER`` (ab): slower than the tolerance, significant (the whole interval, a majority of
  the runs). Fails.
* ``FASTER`` (ab): faster than the tolerance, likewise significant. Never fails.
* ``SAME`` (ab, memory): within the tolerance (A/B: the whole interval). Never fails.
* ``MORE MEMORY`` (memory): a call's peak bytes above the base's or baseline's by more than the
  declared tolerance (0 bytes by default). Fails, except in a smoke run.
* ``LESS MEMORY`` (memory): below by more than the tolerance. Never fails.
* ``PEAK VARIES`` (memory): the peak did not repeat exactly within a run: not gated.
* ``AMBIGUOUS`` (ab): neither: the data cannot decide, measure more. Never fails.
* ``UNCHANGED CODE`` (ab): the same compiled-code identity on both sides: never blamed (the
  ratio is noise).
* ``REMOVED`` (ab): a variant only the base has (not renamed). Fails unless acknowledged.
* ``SAME CODE, TIME MOVED`` (ab): the same identity, but a ratio A/A noise cannot give:
  something outside the identity changed. Exit 2.
* ``UNSTABLE`` (ab): a changed case whose rounds fall into two modes (tilegate.judge.modes), or
  whose ratio of medians and median ratio differ by more than 5 %: never decided on the mixture.
  Fails when a mode on its own rounds is slower than the tolerance, else exit 2 unless something
  else fails. Re-measured by the confirmation.
* ``PASS`` (expectation, outcome): the expectation's same-run ratio within its bound in a
  majority of the runs; the run: nothing failed (exit 0).
* ``FAIL`` (expectation, outcome): the expectation's ratio beyond its bound in a majority of
  the runs (the run fails); the run: something failed (exit 1).
* ``CANNOT JUDGE`` (outcome): exit 2: bad input, a GPU off, the same identity with a ratio A/A
  noise cannot give, an UNSTABLE case with no slower mode.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


class Word(str, enum.Enum):
    """Every word of every judgement, once (the module's docstring says what each means)."""

    REGRESSED = "REGRESSED"
    UNSURE = "UNSURE"
    IMPROVED = "IMPROVED"
    OK = "OK"
    SHIFTED = "SHIFTED"
    OFF_GPU = "GPU OFF"
    GONE = "VARIANT REMOVED"
    NEW = "NEW"
    NOT_MEASURED = "NOT MEASURED"
    SLOWER = "SLOWER"
    FASTER = "FASTER"
    SAME = "SAME"
    AMBIGUOUS = "AMBIGUOUS"
    UNCHANGED = "UNCHANGED CODE"
    REMOVED = "REMOVED"
    INCONSISTENT = "SAME CODE, TIME MOVED"
    UNSTABLE = "UNSTABLE"
    MORE_MEMORY = "MORE MEMORY"
    LESS_MEMORY = "LESS MEMORY"
    PEAK_VARIES = "PEAK VARIES"
    PASS = "PASS"
    FAIL = "FAIL"
    CANNOT_JUDGE = "CANNOT JUDGE"


class _Judgement(str, enum.Enum):
    """A judgement's enum: each member is the Word of its name (`_words`)."""

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return Word[name].value


def _words(n: int) -> tuple[Any, ...]:
    """`n` members, each spelled as the Word of its name."""
    return tuple(enum.auto() for _ in range(n))


class Verdict(_Judgement):
    REGRESSED, UNSURE, IMPROVED, OK, NEW, NOT_MEASURED, SHIFTED, OFF_GPU, GONE = _words(9)


class ABVerdict(_Judgement):
    SLOWER, FASTER, SAME, AMBIGUOUS, UNCHANGED, NEW, REMOVED, INCONSISTENT, UNSTABLE = _words(9)


class Status(_Judgement):
    PASS, FAIL, NOT_MEASURED = _words(3)


class MemoryVerdict(_Judgement):
    MORE_MEMORY, LESS_MEMORY, SAME, PEAK_VARIES = _words(4)


class Headline(_Judgement):
    PASS, FAIL, CANNOT_JUDGE = _words(3)


# each judgement by the name the module's docstring gives it
JUDGEMENTS: Mapping[str, type[enum.Enum]] = MappingProxyType(
    {
        "stored": Verdict,
        "ab": ABVerdict,
        "expectation": Status,
        "memory": MemoryVerdict,
        "outcome": Headline,
    }
)


def used_by(word: Word) -> list[str]:
    """The judgements that can give `word`, in JUDGEMENTS' order."""
    return [name for name, kind in JUDGEMENTS.items() if word.value in {m.value for m in kind}]
