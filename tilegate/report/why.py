"""How explanations read: the report's "Why it changed" block (one line a case, its facts folded
in `<details>`; so the PR comment's too) and `tilegate explain`'s plain text (`text`). The facts
are tilegate.explain.diff's (plain data); this module only words them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from tilegate.explain.diff import Explanation


def _title(sides: str) -> str:
    return f"**Why it changed** ({sides}: what differs in the launches and the compiled code)"


def _html(text: str) -> str:
    text = html.escape(text, quote=False)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _tail(e: Explanation) -> list[str]:
    out = []
    if e.more:
        out.append(f"- ... {e.more} more fact(s) in `explain/explanations.json`")
    if e.diff_file:
        out.append(f"- TTGIR diff: `{e.diff_file}`")
    return out


def why_section(explanations: Sequence[Explanation], sides: str = "base -> head") -> list[str]:
    """The report's block: one line per case, its facts folded. [] when nothing is explained;
    never raises (the report is written whatever an explanation holds). `sides`: what is
    compared, in words ("old -> new" in an upgrade A/B)."""
    if not explanations:
        return []
    try:
        return _why(explanations, _title(sides))
    except Exception as err:
        return [_title(sides), "", f"- explanation unavailable: {type(err).__name__}: {err}", ""]


# a measured figure (a time, a share): what may differ between cases said as one; every other
# number (num_warps 8 -> 4, registers) is part of what an explanation says
_NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?)(?=\s?(?:us\b|ms\b|s\b|%))")


def _shape(e: Explanation) -> tuple[str, ...]:
    """What an explanation says with its measured figures left out: explanations of one shape
    are said once, for all their cases (their figures as ranges)."""
    return (e.verdict, *(_NUMBER.sub("#", line) for line in [e.summary, *e.lines[1:]]))


def _figure(text: str) -> float:
    return float(text.replace(",", ""))


def _ranged(texts: Sequence[str]) -> str:
    """Lines of one shape as one: each figure the same in all, or its range ("3-62")."""
    parts = [_NUMBER.split(t) for t in texts]
    out = []
    for i, first in enumerate(parts[0]):
        values = sorted({p[i] for p in parts}, key=_figure) if i % 2 else [first]
        out.append(values[0] if len(values) == 1 else f"{values[0]}-{values[-1]}")
    return "".join(out)


def _grouped(explanations: Sequence[Explanation]) -> list[list[Explanation]]:
    groups: dict[tuple[str, ...], list[Explanation]] = {}
    for e in explanations:
        groups.setdefault(_shape(e), []).append(e)
    return list(groups.values())


def _why(explanations: Sequence[Explanation], title: str) -> list[str]:
    out: list[str] = [title, ""]
    for group in _grouped(explanations):
        e = group[0]
        if len(group) == 1:
            head = f"`{e.key}` {e.verdict}: {e.summary}".replace("  ", " ")
            body = [f"- {line}" for line in e.lines[1:]] + _tail(e)
        else:
            keys = ", ".join(f"`{g.key}`" for g in group[:8])
            more = f" and {len(group) - 8} more" if len(group) > 8 else ""
            summary = _ranged([g.summary for g in group])
            head = f"{len(group)} cases {e.verdict}: {summary} ({keys}{more})".replace("  ", " ")
            body = [f"- {_ranged([g.lines[i] for g in group])}" for i in range(1, len(e.lines))]
            diffs = [g.diff_file for g in group if g.diff_file]
            if diffs:
                body.append(f"- TTGIR diffs: {', '.join(f'`{d}`' for d in diffs[:8])}")
        if not body:
            out += [f"- {head}", ""]
            continue
        out += [f"<details><summary>{_html(head)}</summary>", "", *body, "", "</details>", ""]
    return out


def text(explanations: Sequence[Explanation]) -> str:
    """Plain text for the terminal: the case, its verdict, then its facts indented."""
    out = []
    for e in explanations:
        out.append(f"{e.key}" + (f"  {e.verdict}" if e.verdict else ""))
        if e.unavailable:
            out.append(f"    explanation unavailable: {e.unavailable}")
        out += [f"    {line}" for line in e.lines]
        out += [f"    {line[2:]}" for line in _tail(e)]
    return "\n".join(out) + ("\n" if out else "")
