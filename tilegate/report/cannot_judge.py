"""The report of a run that could not be judged: it replaces the previous one, never a stale report.

Its own module, importing nothing, so that every entry point's crash handler (tilegate.run.crash)
can write it without loading the judge.
"""

from __future__ import annotations


def cannot_judge_report(reason: str) -> str:
    """The report of a run that could not be judged (it replaces the previous report)."""
    return f"# tilegate: CANNOT JUDGE (exit 2)\n\n{reason}\n"
