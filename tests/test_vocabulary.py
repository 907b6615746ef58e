"""One verdict vocabulary (tilegate/judge/vocabulary.py): every word of every judgement is
defined there once, with its meaning, and the judging modules take theirs from it."""

from __future__ import annotations

import ast
import enum
import re
from pathlib import Path

import pytest

from tilegate.judge import abcase, abcompare, crosstile, outcome, verdict, vocabulary
from tilegate.judge.vocabulary import JUDGEMENTS, Word, used_by

ROOT = Path(__file__).resolve().parents[1]

# the words as the results, reports and JSON spell them (behaviour: these never change here)
SPELLED = {
    "stored": [
        ("REGRESSED", "REGRESSED"),
        ("UNSURE", "UNSURE"),
        ("IMPROVED", "IMPROVED"),
        ("OK", "OK"),
        ("NEW", "NEW"),
        ("NOT_MEASURED", "NOT MEASURED"),
        ("SHIFTED", "SHIFTED"),
        ("OFF_GPU", "GPU OFF"),
        ("GONE", "VARIANT REMOVED"),
    ],
    "ab": [
        ("SLOWER", "SLOWER"),
        ("FASTER", "FASTER"),
        ("SAME", "SAME"),
        ("AMBIGUOUS", "AMBIGUOUS"),
        ("UNCHANGED", "UNCHANGED CODE"),
        ("NEW", "NEW"),
        ("REMOVED", "REMOVED"),
        ("INCONSISTENT", "SAME CODE, TIME MOVED"),
        ("UNSTABLE", "UNSTABLE"),
    ],
    "expectation": [("PASS", "PASS"), ("FAIL", "FAIL"), ("NOT_MEASURED", "NOT MEASURED")],
    "memory": [
        ("MORE_MEMORY", "MORE MEMORY"),
        ("LESS_MEMORY", "LESS MEMORY"),
        ("SAME", "SAME"),
        ("PEAK_VARIES", "PEAK VARIES"),
    ],
    "outcome": [("PASS", "PASS"), ("FAIL", "FAIL"), ("CANNOT_JUDGE", "CANNOT JUDGE")],
}


def test_each_judging_module_uses_the_vocabularys_enum() -> None:
    assert verdict.Verdict is vocabulary.Verdict
    assert outcome.Verdict is vocabulary.Verdict
    assert abcase.ABVerdict is vocabulary.ABVerdict
    assert abcompare.ABVerdict is vocabulary.ABVerdict
    assert outcome.ABVerdict is vocabulary.ABVerdict
    assert crosstile.Status is vocabulary.Status
    assert verdict.Status is vocabulary.Status
    assert dict(JUDGEMENTS) == {
        "stored": vocabulary.Verdict,
        "ab": vocabulary.ABVerdict,
        "expectation": vocabulary.Status,
        "memory": vocabulary.MemoryVerdict,
        "outcome": vocabulary.Headline,
    }


@pytest.mark.parametrize(
    "path",
    [
        "tilegate/judge/verdict.py",
        "tilegate/judge/shift.py",
        "tilegate/judge/renames.py",
        "tilegate/judge/abnoise.py",
        "tilegate/judge/abcase.py",
        "tilegate/judge/abcompare.py",
        "tilegate/judge/crosstile.py",
        "tilegate/judge/outcome.py",
        "tilegate/judge/memory.py",
        "tilegate/run/upgrade.py",
        "tilegate/report/upgrade.py",
    ],
)
def test_no_judging_module_defines_words_of_its_own(path: str) -> None:
    """No Enum class there, and no verdict word as a string literal outside docstrings."""
    tree = ast.parse((ROOT / path).read_text())
    enums = [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef)
        and any("Enum" in ast.unparse(b) or "enum" in ast.unparse(b) for b in n.bases)
    ]
    assert enums == [], f"{path} defines {enums}: its words belong in tilegate.judge.vocabulary"
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    words = {w.value for w in Word}
    literals = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in words
        and id(n) not in docstrings
    ]
    assert literals == [], f"{path} spells verdict words itself: {literals}"


def test_every_word_is_spelled_as_before_and_defined_once() -> None:
    for name, kind in JUDGEMENTS.items():
        assert [(m.name, m.value) for m in kind] == SPELLED[name]
        assert issubclass(kind, str) and issubclass(kind, enum.Enum)
        for member in kind:
            # the same name, the same word: a judgement's member is a Word
            assert Word[member.name].value == member.value
            assert type(member.value) is str  # a plain str in the JSON and the reports
    values = [w.value for w in Word]
    assert len(values) == len(set(values)), "a word spelled twice"
    used = {m.value for kind in JUDGEMENTS.values() for m in kind}
    assert used == set(values), "a word no judgement gives"


def test_shared_words_are_one_word() -> None:
    for w in (Word.SLOWER, Word.FASTER, Word.AMBIGUOUS):
        assert used_by(w) == ["ab"]
    assert used_by(Word.SAME) == ["ab", "memory"]
    assert used_by(Word.NEW) == ["stored", "ab"]
    assert used_by(Word.NOT_MEASURED) == ["stored", "expectation"]
    assert used_by(Word.PASS) == used_by(Word.FAIL) == ["expectation", "outcome"]
    assert Word.SLOWER.value == vocabulary.ABVerdict.SLOWER


def test_the_docstring_says_what_every_word_means_and_who_uses_it() -> None:
    doc = vocabulary.__doc__ or ""
    listed = {
        m.group(1): m.group(2).split(", ")
        for m in re.finditer(r"^\* ``(.+?)`` \(([a-z, ]+)\): \S", doc, re.MULTILINE)
    }
    assert listed == {w.value: used_by(w) for w in Word}
    for name in JUDGEMENTS:
        assert f"* {name}: " in doc


def test_the_headline_word_comes_from_the_exit_code() -> None:
    assert [outcome.headline(c).value for c in (0, 1, 2, 3)] == [
        "PASS",
        "FAIL",
        "CANNOT JUDGE",
        "CANNOT JUDGE",
    ]
