"""The top of an upgrade A/B's report: what differs between its two sides' environments.

The verdicts are the A/B's (tilegate.judge.abcompare, rendered by tilegate.report.render); this says
what the upgrade is, in words (``Triton 3.6.0 -> 3.9.0``), where each side's code came from,
and, for a Triton upgrade, the compile fingerprint's upgrade report.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

_SHOWN = {"triton": "Triton", "torch": "torch", "python": "Python"}


def changed(old: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(name, old version, new version) of every package whose version differs."""
    return [
        (name, str(old.get(name, "absent")), str(new.get(name, "absent")))
        for name in sorted(set(old) | set(new))
        if old.get(name) != new.get(name)
    ]


def upgrade_section(
    old: Mapping[str, str],
    new: Mapping[str, str],
    new_dir: Path,
    old_dir: Path | None,
    fingerprint: str | None = None,
) -> str:
    moved = changed(old, new)
    what = (
        ", ".join(f"{_SHOWN.get(n, n)} {o} -> {v}" for n, o, v in moved)
        if moved
        else "no package version differs between the sides (an A/A of the environment)"
    )
    lines = [
        f"## Upgrade: {what}",
        "",
        f"The head side's process imports `{new_dir}` first; the base side's "
        + (f"`{old_dir}`." if old_dir is not None else "the runner's own environment.")
        + " This tree's code and protocol on both sides, each side a process of its own, "
        "paired round by round: the verdicts below are head (new) / base (old).",
        "",
    ]
    if fingerprint:
        lines += [
            "### What the upgrade changes in the compiled code (fingerprint)",
            "",
            fingerprint,
            "",
        ]
    return "\n".join(lines) + "\n"
