"""Markdown for every report (the gate's, A/B, rebaseline, fingerprint): tables that escape their cells, numbers.

Text helpers below every layer (like tilegate.fileio): the judge words its messages with them, the
report and the fingerprint render tables with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_RULE = {"l": "---", "r": "---:"}


def cell(value: object) -> str:
    """One table cell: `|` escaped and newlines turned into spaces (a row is one line)."""
    return str(value).replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def table(header: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table as lines; `align`: one letter per column, l(eft) or r(ight). Every cell
    goes through `cell`; a row whose length differs from the header's is a ValueError."""
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


def ms(seconds: float | None, *, unit: bool = False) -> str:
    """Seconds as milliseconds with 4 decimals ("" for None)."""
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.4f}" + (" ms" if unit else "")


def pct(x: float | None) -> str:
    """A relative change as a signed percentage: 0.031 -> "+3.1%" ("" for None)."""
    return "" if x is None else f"{x * 100:+.1f}%"


def mib(n: float | None, *, signed: bool = False) -> str:
    """Bytes as MiB with one decimal: 67108864 -> "64.0 MiB" ("+64.0 MiB" signed; "" for None)."""
    return "" if n is None else f"{n / 2**20:{'+' if signed else ''}.1f} MiB"


def mib_change(before: int, after: int) -> str:
    """A change of bytes: "+64.0 MiB (+100.0%)" (no share where `before` is 0)."""
    share = f" ({(after - before) / before:+.1%})" if before else ""
    return f"{mib(after - before, signed=True)}{share}"


def p_value(p: float | None) -> str:
    """A p-value as the reports print it ("" for None)."""
    if p is None:
        return ""
    return "<1e-4" if p < 1e-4 else f"{p:.2g}"


def short_sha(commit: str) -> str:
    """A commit hash's first 10 digits; anything else (pytest-benchmark's `unversioned`) whole."""
    return commit[:10] if re.fullmatch(r"[0-9a-f]{11,64}", commit) else commit


def listing(items: Sequence[str], limit: int = 8) -> str:
    """The first `limit` items, comma separated, and how many more."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
