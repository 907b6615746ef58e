"""Markdown tables, for every report (the gate's, the fingerprint's): one place that escapes cells."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_RULE = {"l": "---", "r": "---:"}


def cell(value: object) -> str:
    """One table cell: `|` escaped and newlines turned into spaces (a row is one line)."""
    return str(value).replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def table(header: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table as lines; `align` has one letter per column: l(eft) or r(ight).

    Every cell, header included, goes through `cell`; a row whose length differs from the
    header's is a programming error (ValueError), not a silently shifted table.
    """
    if len(align) != len(header) or set(align) - set(_RULE):
        raise ValueError(f"align {align!r}: one of 'l'/'r' per column ({len(header)} columns)")
    lines = [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "|".join(_RULE[a] for a in align) + "|",
    ]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return lines
