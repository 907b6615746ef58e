"""Markdown helpers shared by every report (gate, rebaseline diff, fingerprint, A/B, upgrade)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def cell(value: Any) -> str:
    """A table cell: None as "-", pipes escaped and newlines folded so the table stays a table."""
    text = "-" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], align: str, rows: Sequence[Sequence[Any]]) -> list[str]:
    """A markdown table; `align` has one letter per column: l(eft) or r(ight)."""
    if len(align) != len(header):
        raise ValueError(f"align {align!r} has {len(align)} letters for {len(header)} columns")
    lines = [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
    ]
    lines += ["| " + " | ".join(cell(c) for c in cells) + " |" for cells in rows]
    return lines


def ms(seconds: float | None, *, unit: bool = False) -> str:
    """Seconds as milliseconds with 4 decimals ("" for None)."""
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.4f}" + (" ms" if unit else "")


def pct(x: float | None) -> str:
    """A relative change as a signed percentage: 0.031 -> "+3.1%" ("" for None)."""
    return "" if x is None else f"{x * 100:+.1f}%"


def p_value(p: float | None) -> str:
    if p is None:
        return ""
    return "<1e-4" if p < 1e-4 else f"{p:.2g}"


def listing(items: Sequence[str], limit: int = 8) -> str:
    """The first `limit` items, comma separated, and how many more."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
