"""PNG plots linked from the report (matplotlib, Agg backend: the `plots` extra; without it the
import raises ImportError, which tilegate.run.gate reports).

The x axis is the axis the expectations run along (else the last axis); per setting of the other
axes (``fp16-nt`` for matmul): ``times-<setting>.png``, throughput (TFLOP/s, else GB/s) against x
per variant beside each row's change against the baseline as bars (tolerance marked, verdict as
the colour); ``crosstile-<setting>.png``, the declared pairs' same-run time ratio against x, now
and at rebaseline, with the expectation's max_ratio and the crossover.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib  # the `plots` extra: missing, the import fails here, where the gate catches it

from tilegate.judge.crosstile import CrossTilePair, Status
from tilegate.judge.gate import Judgement
from tilegate.judge.results import Run
from tilegate.judge.verdict import Comparison, Verdict

_VERDICT_COLOUR = {
    Verdict.REGRESSED: "#d62728",
    Verdict.UNSURE: "#ff9f1c",
    Verdict.IMPROVED: "#2ca02c",
    Verdict.OK: "#9e9e9e",
}


def _pyplot() -> Any:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


def make_plots(judged: Judgement, directory: Path) -> list[Path]:
    """Write every plot of the Judgement into `directory` (its rows' verdicts, its declared
    pairs: `Judgement.pairs`); return their paths."""
    plt = _pyplot()
    run, cmp = judged.run, judged.comparison
    x = judged.pairs[0].per if judged.pairs else run.env.axes[-1]
    others = tuple(a for a in run.env.axes if a != x)
    settings = sorted({tuple(r.params.get(a) for a in others) for r in run.rows.values()}, key=repr)
    times, pairs = [], []
    try:
        for setting in settings:
            name, where = (
                "-".join(map(str, setting)) or "all",
                dict(zip(others, setting, strict=False)),
            )
            times.append(_times(plt, run, cmp, x, where, directory / f"times-{name}.png"))
            mine = [f for f in judged.pairs if f.per == x and dict(f.where) == where]
            if mine:
                path = directory / f"crosstile-{name}.png"
                pairs.append(_crosstile(plt, mine, cmp, run.env.smoke, path))
    finally:
        plt.close("all")
    return times + pairs


def _throughput(row: Any, seconds: float) -> tuple[float | None, str]:
    """The row's throughput at `seconds` per call (its recorded work: flops, else bytes)."""
    if row.tflops:
        return row.tflops * row.median_s / seconds, "TFLOP/s"
    if getattr(row, "gbps", None):
        return row.gbps * row.median_s / seconds, "GB/s"
    return 1e-3 / seconds, "calls per ms"


def _times(
    plt: Any, run: Run, cmp: Comparison | None, x: str, where: dict[str, Any], path: Path
) -> Path:
    rows = [r for r in run.rows.values() if all(r.params.get(k) == v for k, v in where.items())]
    variants = [v for v in run.variant_order if any(r.variant == v for r in rows)]
    ks = sorted({r.params[x] for r in rows})
    verdicts = {v.key: v for v in cmp.rows} if cmp else {}
    ncols = 2 if cmp else 1
    fig, axes = plt.subplots(1, ncols, figsize=(7.5 * ncols, 5.2), squeeze=False)
    ax = axes[0][0]
    cmap = plt.get_cmap("tab10")
    unit = "calls per ms"
    for i, v in enumerate(variants):
        mine = sorted((r for r in rows if r.variant == v), key=lambda r: r.params[x])
        colour = cmap(i % 10)
        unit = _throughput(mine[0], mine[0].median_s)[1]
        ax.plot(
            [r.params[x] for r in mine],
            [_throughput(r, r.median_s)[0] for r in mine],
            "-o",
            color=colour,
            label=v,
            lw=1.6,
            ms=4,
        )
        pairs = [
            (r, b) for r in mine if r.key in verdicts and (b := verdicts[r.key].base) is not None
        ]
        if pairs:
            ks_b = [r.params[x] for r, _ in pairs]
            top = [_throughput(r, b.median_s)[0] for r, b in pairs]
            low = [_throughput(r, b.median_s * (1 + b.tolerance))[0] for r, b in pairs]
            ax.plot(ks_b, top, "--", color=colour, lw=0.9, alpha=0.7)
            ax.fill_between(ks_b, low, top, color=colour, alpha=0.12, lw=0)
    numeric = all(isinstance(k, (int, float)) for k in ks)
    if numeric:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(bottom=0)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{unit} (work / median time)")
    fixed = ", ".join(f"{k} = {v}" for k, v in run.env.fixed.items())
    label = ", ".join(str(v) for v in where.values())
    title = f"{label}: throughput against {x}" + (f" ({fixed})" if fixed else "")
    if cmp:
        title += (
            "\ndashed: baseline; band: down to its tolerance (below the band = slower than allowed)"
        )
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    if cmp:
        _delta_bars(axes[0][1], x, rows, variants, ks, verdicts)
    if run.env.smoke:
        fig.suptitle("SMOKE RUN: timings meaningless", color="#d62728")
    fig.tight_layout()
    return _save(fig, path)


def _delta_bars(
    ax: Any, x: str, rows: list[Any], variants: list[str], ks: list[Any], verdicts: dict[str, Any]
) -> None:
    width = 0.8 / max(len(variants), 1)
    for j, K in enumerate(ks):
        for i, v in enumerate(variants):
            row = next((r for r in rows if r.variant == v and r.params[x] == K), None)
            verdict = verdicts.get(row.key) if row else None
            if verdict is None or verdict.delta is None or verdict.tolerance is None:
                continue
            at = j - 0.4 + width * (i + 0.5)
            colour = _VERDICT_COLOUR.get(verdict.verdict, "#9e9e9e")
            ax.bar(at, verdict.delta * 100, width * 0.9, color=colour, edgecolor="black", lw=0.3)
            for sign, lw, alpha in ((1, 1.2, 1.0), (-1, 0.6, 0.5)):  # its tolerance, both ways
                tick = [sign * verdict.tolerance * 100] * 2
                ax.plot([at - width / 2, at + width / 2], tick, color="black", lw=lw, alpha=alpha)
            if abs(verdict.delta) > verdict.tolerance * 0.8 or verdict.verdict is not Verdict.OK:
                ax.annotate(
                    v.replace("_persistent", "").replace("_", " "),
                    (at, verdict.delta * 100),
                    textcoords="offset points",
                    xytext=(0, 4 if verdict.delta >= 0 else -10),
                    ha="center",
                    fontsize=7,
                    rotation=0,
                )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(ks)), [f"{x}={k}" for k in ks])
    ax.set_ylabel("change of median against baseline (%)")
    ax.set_title(
        "change against baseline per variant (order as in the legend)\n"
        "black tick: the row's tolerance; colour: red regressed, orange unsure, green improved",
        fontsize=10,
    )
    ax.grid(True, axis="y", alpha=0.25)


def _crosstile(
    plt: Any, fams: list[CrossTilePair], cmp: Comparison | None, smoke: bool, path: Path
) -> Path:
    fig, ax = plt.subplots(figsize=(8, 5.2))
    if smoke:
        fig.suptitle("SMOKE RUN: timings meaningless", color="#d62728")
    cmap = plt.get_cmap("tab10")
    all_ks = sorted({k for f in fams for k in f.values})
    per = fams[0].per
    lo = min(min(f.now.values()) for f in fams)
    hi = max(max(f.now.values()) for f in fams)
    for i, f in enumerate(fams):
        colour = cmap(i % 10)
        label = f"{f.faster} / {f.than}"
        ax.plot(
            f.values,
            [f.now[k] for k in f.values],
            "-o",
            color=colour,
            label=f"{label} (now)",
            lw=1.8,
        )
        if f.base:
            bks = sorted(k for k in f.base if all_ks[0] <= k <= all_ks[-1])
            ax.plot(
                bks,
                [f.base[k] for k in bks],
                "--",
                color=colour,
                alpha=0.6,
                label=f"{label} (baseline)",
            )
        if cmp:
            checks = [
                c
                for c in cmp.expectations
                if (c.expectation.faster, c.expectation.than, dict(c.expectation.where))
                == (f.faster, f.than, dict(f.where))
            ]
            broken = [c for c in checks if c.status is Status.FAIL and c.ratio is not None]
            v = dict(marker="v", s=60, color=colour, edgecolor="black", zorder=5)
            o = dict(marker="o", s=220, facecolor="none", edgecolor="#d62728", lw=2, zorder=6)
            for marked, y, what, style in (
                (checks, "max_ratio", "max ratio allowed", v),
                (broken, "ratio", "expectation broken", o),
            ):
                if marked:
                    ys = [getattr(c, y) for c in marked]
                    ax.scatter([c.value for c in marked], ys, label=f"{label}: {what}", **style)
            hi = max([hi, *(c.max_ratio for c in checks)])
        cross = CrossTilePair.crossover(f.now)
        if cross is not None:
            ax.axvline(cross, color=colour, ls=":", lw=1.2)
            ax.annotate(
                f"crossover {per}={cross}",
                (cross, 1.0),
                textcoords="offset points",
                xytext=(12, -14 - 12 * i),
                color=colour,
                fontsize=8,
            )
    ax.axhline(1.0, color="black", lw=1)
    top = max(hi * 1.05, 1.05)
    ax.axhspan(1.0, top, color="#d62728", alpha=0.06)
    ax.text(
        all_ks[0],
        top * 0.995,
        "  slower than the variant it must beat",
        va="top",
        fontsize=8,
        color="#a01c1c",
    )
    ax.set_ylim(min(lo * 0.95, 0.95), top)
    if all(isinstance(k, (int, float)) for k in all_ks):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_ks, [str(k) for k in all_ks])
    ax.set_xlabel(per)
    ax.set_ylabel("time / the other's time (same run)")
    ax.set_title(f"{fams[0].label}: declared pairs (below 1: the first wins)", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, path)
