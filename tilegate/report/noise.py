"""The A/B noise file as `tilegate ab-noise` prints it: per case its A/A ratios, spread, noise
and tolerance (tilegate.judge.abnoise builds it)."""

from __future__ import annotations

from pathlib import Path

from tilegate.judge.abnoise import MIN_NOISE_RUNS, POOLED, Noise
from tilegate.markdown import table


def render(noise: Noise, out: Path, runs: int) -> list[str]:
    """The noise of `runs` A/A runs, to be written to `out`, as markdown lines."""
    rows = [
        (
            f"`{r.key}`",
            ", ".join(f"{x:.4f}" for x in r.run_ratios),
            f"{r.spread:.2%}",
            f"{r.noise:.2%}",
            f"{r.tolerance:.2%}",
            r.source,
        )
        for r in noise.rows.values()
    ]
    return [
        f"# A/B noise {noise.gpu.get('slug')} -> {out}",
        "",
        f"From {runs} A/A run(s) (REF = the head: both sides the same compiled code). "
        f"Spread: max |ratio - 1|. Noise: the {noise.policy.noise_confidence:.0%} upper bound "
        "of the RMS of ratio - 1 (wide from few runs, tighter with more). Tolerance = "
        f"clamp({noise.policy.multiple:g} x noise, "
        f"{noise.policy.floor:.1%}, {noise.policy.ceiling:.1%}); a case seen in fewer than "
        f"{MIN_NOISE_RUNS} runs gets at least the largest tolerance of those seen that often "
        f"({POOLED}).",
        "",
        *table(
            ["case", "A/A ratio per run", "spread", "noise", "tolerance", "bound"], "llrrrl", rows
        ),
    ]
