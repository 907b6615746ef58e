"""The report's memory and percent-of-peak lines: the MORE MEMORY cases among the deciding rows,
and a table of every row's peak GPU memory and its percent of the bound its declared work gives
(tilegate.judge.memory, tilegate.peaks). Renders the Judgement; decides nothing."""

from __future__ import annotations

from tilegate.judge.gate import Judgement
from tilegate.markdown import mib, mib_change, table
from tilegate.peaks import HOW_TO_ADD


def deciding_rows(judged: Judgement) -> list[tuple[str, str, str, str, str]]:
    """The deciding table's rows of the cases with MORE MEMORY than their base or baseline
    (their explanation, where the run has one, is in the why section under the table)."""
    return [
        (
            f"`{m.key}`",
            f"MORE MEMORY than the {m.against}: peak GPU memory of one call",
            mib_change(m.before, m.after),
            f"{mib(m.before)} -> {mib(m.after)}",
            m.tolerance
            if any(c.isalpha() or c == "%" for c in m.tolerance)
            else f"{m.tolerance} B",
        )
        for m in judged.outcome.more_memory
    ]


def section(judged: Judgement) -> list[str]:
    """## Memory and % of peak: each row's peak bytes (and its verdict) and percent of peak."""
    run = judged.run
    lines = ["## Memory and % of peak", ""]
    if run.env.smoke:
        lines += ["memory: not measured on the CPU (the interpreter has no GPU allocator).", ""]
    work = any(r.tflops or r.gbps for r in run.rows.values())
    if not run.env.smoke and judged.peaks is None and work:
        slug = run.env.gpu.slug
        lines += [f"% of peak: {slug} is not in tilegate's table of GPU peaks; "
                  + HOW_TO_ADD.format(slug=slug) + ".", ""]  # fmt: skip
    verdicts = {m.key: m for m in judged.memory}
    rows = []
    for key in judged.order:
        r, m, p = run.rows[key], verdicts.get(key), judged.percent.get(key)
        if r.memory is None and p is None:
            continue
        before = f"{mib(m.before)} -> " if m is not None else ""
        rows.append((
            f"`{key}`",
            f"{before}{mib(r.memory.peak_bytes)}" if r.memory else "",
            mib(r.memory.held_bytes) if r.memory else "",
            (f"{m.verdict.value}" + (f" ({mib_change(m.before, m.after)})" if m.delta else "") if m else "")
            + ("" if r.memory is None or r.memory.repeats else " (peak did not repeat)"),
            f"{p[0]:.0%} of {p[1]}" if p else "",
        ))  # fmt: skip
    if not rows:
        return lines if len(lines) > 2 else []
    header = ["case", "peak of one call", "held after", "memory", "% of peak (bound)"]
    legend = (
        "*peak of one call*: the GPU allocator's peak above what was allocated before the call "
        "(base or baseline -> now where judged), *held after*: what it still holds (its output); "
        "*% of peak*: the time its declared work takes at the GPU's peaks (tilegate.peaks: the "
        "datasheets' dense figures) over its median."
    )
    return [*lines, legend, "", *table(header, "lrrll", rows), ""]
