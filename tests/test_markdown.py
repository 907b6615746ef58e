"""The one Markdown table helper both reports use."""

from __future__ import annotations

import pytest

from tilegate.markdown import cell, table


def test_table_aligns_columns_and_escapes_every_cell() -> None:
    lines = table(["kernel", "a|b", "ms"], "llr", [["x|y", "two\nlines", 1.5], ["z", None, 2]])
    assert lines == [
        "| kernel | a\\|b | ms |",
        "|---|---|---:|",
        "| x\\|y | two lines | 1.5 |",
        "| z | None | 2 |",
    ]


def test_a_cell_is_one_line_whatever_the_newlines() -> None:
    assert cell("a\r\nb\nc") == "a b c"
    assert "\n" not in "".join(table(["h"], "l", [["1\n2"]]))


@pytest.mark.parametrize(
    "header, align, rows, match",
    [
        (["a", "b"], "l", [], "one of 'l'/'r' per column"),
        (["a"], "c", [], "one of 'l'/'r' per column"),
        (["a", "b"], "ll", [["1"]], "row 0 has 1 cells, the header 2"),
    ],
)
def test_misshapen_tables_are_refused(
    header: list[str], align: str, rows: list[list[str]], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        table(header, align, rows)
