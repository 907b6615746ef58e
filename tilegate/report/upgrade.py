"""The upgrade A/B's report (`tilegate upgrade-ab`): the verdicts of tilegate.judge.upgrade and
its outcome rendered, per kernel, then per case; the fingerprint's upgrade report beside it."""

from __future__ import annotations

from collections.abc import Sequence

from tilegate.explain.diff import Explanation
from tilegate.judge.outcome import Outcome, headline
from tilegate.judge.upgrade import UPGRADE, UpgradeComparison, changed, tritons
from tilegate.judge.vocabulary import Change
from tilegate.markdown import pct, table
from tilegate.report.explain import why_section


def _display(name: str) -> str:
    return "Triton" if name == "triton" else name


def _what(cmp: UpgradeComparison) -> tuple[str, str, str]:
    """(the upgrade, the old side, the new side) in words: "Triton 3.6.0 -> 3.9.0",
    "liger_kernel 0.8.4 -> 0.8.5, ...": what changed; Triton's versions when nothing did."""
    moved = changed(cmp.old_runs, cmp.new_runs)
    if not moved:
        moved = [("triton", tritons(cmp.old_runs), tritons(cmp.new_runs))]
    return (
        ", ".join(f"{_display(n)} {o} -> {v}" for n, o, v in moved),
        ", ".join(f"{_display(n)} {o}" for n, o, _ in moved),
        ", ".join(f"{_display(n)} {v}" for n, _, v in moved),
    )


def _code(cmp: UpgradeComparison, kernel: str) -> str:
    """Whether a kernel's compiled code differs between the sides, in words: a SAME kernel whose
    code changed is a change the time did not follow."""
    seen = {c.code_changed for c in cmp.cases if c.kernel_name == kernel}
    if True in seen:
        return "changed"
    return "same" if seen == {False} else "not recorded"


def render(
    cmp: UpgradeComparison,
    result: Outcome,
    fingerprint: str | None = None,
    explanations: Sequence[Explanation] = (),
) -> str:
    """The upgrade A/B as markdown: per kernel first (with why the decided ones changed), then
    per case. `result`: its outcome (tilegate.judge.outcome.upgrade_outcome), rendered."""
    what, old_t, new_t = _what(cmp)
    ref = cmp.old_runs[0].reference or "the reference"
    kernels = cmp.kernels()
    slower = [v for v, c in kernels.items() if c is Change.SLOWER]
    head = headline(result.code).value
    out = [
        f"# tilegate upgrade A/B: {head}: {what}"
        + (f": {', '.join(slower)} slower" if slower else ""),
        "",
        f"{len(cmp.old_runs)} processes under {old_t} and {len(cmp.new_runs)} under "
        f"{new_t}, alternating, on {cmp.old_runs[0].env.gpu.name}; each case judged on its "
        f"ratio to `{ref}` in its own process (tolerance = clamp({UPGRADE.multiple:g} x the within-side "
        f"spread, {UPGRADE.floor:.0%}, {UPGRADE.ceiling:.0%}), Welch t-test p < {UPGRADE.alpha:g}).",
        "",
        *(f"- {n}" for n in cmp.notes),
        "",
        "## Per kernel",
        "",
        *table(
            ["kernel", "verdict", "compiled code", "cases"],
            "llll",
            [
                (
                    f"`{v}`",
                    change.value,
                    _code(cmp, v),
                    ", ".join(
                        f"{c.where} {c.change.value.lower()} {pct(c.effect)}"
                        for c in cmp.cases
                        if c.kernel_name == v
                    ),
                )
                for v, change in kernels.items()
            ],
        ),
        "",
        *why_section(explanations, f"{old_t} -> {new_t}"),
        f"## Per case (ratio to `{ref}` in each process)",
        "",
        *table(
            ["case", old_t, new_t, "change", "tolerance", "p", "verdict"],
            "lllrrrl",
            [
                (
                    f"`{c.key}`",
                    ", ".join(f"{r:.4f}" for r in c.old),
                    ", ".join(f"{r:.4f}" for r in c.new),
                    pct(c.effect),
                    f"{c.tolerance:.1%}",
                    f"{c.p:.2g}",
                    c.change.value,
                )
                for c in cmp.cases
            ],
        ),
        "",
    ]
    if fingerprint:
        out += [
            "## What the upgrade changes in the compiled code (fingerprint)",
            "",
            fingerprint,
            "",
        ]
    return "\n".join(out).rstrip() + "\n"
