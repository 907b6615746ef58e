"""PNG plots linked from the report (matplotlib, Agg backend; optional dependency).

Per (dtype, layout):
* ``times-<dtype>-<layout>.png``: median time against K per variant, beside each row's change
  against the baseline as bars, with the row's tolerance marked and the verdict as the colour;
* ``crosstile-<dtype>-<layout>.png``: cross-tile / twin time ratio against K per cross-tile pair, now
  and at rebaseline, with the expectation's max_ratio and the crossover K.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tilegate.cases import matmul_flops
from tilegate.judge.crosstile import CrossTilePair, Status, crosstile_pairs
from tilegate.judge.results import Run
from tilegate.judge.verdict import Comparison, Verdict

_VERDICT_COLOUR = {
    Verdict.REGRESSED: "#d62728",
    Verdict.UNSURE: "#ff9f1c",
    Verdict.IMPROVED: "#2ca02c",
    Verdict.OK: "#9e9e9e",
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


def make_plots(run: Run, cmp: Comparison | None, directory: Path) -> list[Path]:
    """Write every plot for this run into `directory`; return their paths."""
    plt = _pyplot()
    out = []
    combos = sorted({(r.dtype, r.layout) for r in run.rows.values()})
    try:
        for dtype, layout in combos:
            out.append(
                _times(plt, run, cmp, dtype, layout, directory / f"times-{dtype}-{layout}.png")
            )
        fams = crosstile_pairs(run, cmp.baseline if cmp else None)
        for dtype, layout in combos:
            mine = [f for f in fams if (f.dtype, f.layout) == (dtype, layout)]
            if mine:
                out.append(
                    _crosstile(
                        plt, mine, cmp, run.env.smoke, directory / f"crosstile-{dtype}-{layout}.png"
                    )
                )
    finally:
        plt.close("all")
    return out


def _times(plt: Any, run: Run, cmp: Comparison | None, dtype: str, layout: str, path: Path) -> Path:
    rows = [r for r in run.rows.values() if (r.dtype, r.layout) == (dtype, layout)]
    variants = [v for v in run.variant_order if any(r.variant == v for r in rows)]
    ks = sorted({r.K for r in rows})
    verdicts = {v.key: v for v in cmp.rows} if cmp else {}
    ncols = 2 if cmp else 1
    fig, axes = plt.subplots(1, ncols, figsize=(7.5 * ncols, 5.2), squeeze=False)
    ax = axes[0][0]
    cmap = plt.get_cmap("tab10")
    for i, v in enumerate(variants):
        mine = sorted((r for r in rows if r.variant == v), key=lambda r: r.K)
        colour = cmap(i % 10)
        ax.plot(
            [r.K for r in mine],
            [_tflops(r.M, r.N, r.K, r.median_s) for r in mine],
            "-o",
            color=colour,
            label=v,
            lw=1.6,
            ms=4,
        )
        base = [b for r in mine if r.key in verdicts and (b := verdicts[r.key].base) is not None]
        if base:
            ks_b = [b.K for b in base]
            top = [_tflops(b.M, b.N, b.K, b.median_s) for b in base]
            low = [_tflops(b.M, b.N, b.K, b.median_s * (1 + b.tolerance)) for b in base]
            ax.plot(ks_b, top, "--", color=colour, lw=0.9, alpha=0.7)
            ax.fill_between(ks_b, low, top, color=colour, alpha=0.12, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("K")
    ax.set_ylabel("TFLOP/s (2 M N K / median time)")
    title = f"{dtype}, {layout}: throughput against K (M = {rows[0].M}, N = {rows[0].N})"
    if cmp:
        title += (
            "\ndashed: baseline; band: down to its tolerance (below the band = slower than allowed)"
        )
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    if cmp:
        _delta_bars(axes[0][1], run, rows, variants, ks, verdicts)
    if run.env.smoke:
        fig.suptitle("SMOKE RUN: timings meaningless", color="#d62728")
    fig.tight_layout()
    return _save(fig, path)


def _tflops(m: int, n: int, k: int, seconds: float) -> float:
    return matmul_flops(m, n, k) / seconds / 1e12


def _delta_bars(
    ax: Any, run: Run, rows: list[Any], variants: list[str], ks: list[int], verdicts: dict[str, Any]
) -> None:
    width = 0.8 / max(len(variants), 1)
    for j, K in enumerate(ks):
        for i, v in enumerate(variants):
            row = next((r for r in rows if r.variant == v and r.K == K), None)
            verdict = verdicts.get(row.key) if row else None
            if verdict is None or verdict.delta is None or verdict.tolerance is None:
                continue
            x = j - 0.4 + width * (i + 0.5)
            colour = _VERDICT_COLOUR.get(verdict.verdict, "#9e9e9e")
            ax.bar(x, verdict.delta * 100, width * 0.9, color=colour, edgecolor="black", lw=0.3)
            ax.plot(
                [x - width / 2, x + width / 2], [verdict.tolerance * 100] * 2, color="black", lw=1.2
            )
            ax.plot(
                [x - width / 2, x + width / 2],
                [-verdict.tolerance * 100] * 2,
                color="black",
                lw=0.6,
                alpha=0.5,
            )
            if abs(verdict.delta) > verdict.tolerance * 0.8 or verdict.verdict is not Verdict.OK:
                ax.annotate(
                    v.replace("_persistent", "").replace("_", " "),
                    (x, verdict.delta * 100),
                    textcoords="offset points",
                    xytext=(0, 4 if verdict.delta >= 0 else -10),
                    ha="center",
                    fontsize=7,
                    rotation=0,
                )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(ks)), [f"K={k}" for k in ks])
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
    all_ks = sorted({k for f in fams for k in f.Ks})
    lo = min(min(f.now.values()) for f in fams)
    hi = max(max(f.now.values()) for f in fams)
    for i, f in enumerate(fams):
        colour = cmap(i % 10)
        label = f"{f.faster} / {f.than}"
        ax.plot(f.Ks, [f.now[k] for k in f.Ks], "-o", color=colour, label=f"{label} (now)", lw=1.8)
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
                if (
                    c.expectation.faster,
                    c.expectation.than,
                    c.expectation.dtype,
                    c.expectation.layout,
                )
                == (f.faster, f.than, f.dtype, f.layout)
            ]
            if checks:
                ax.scatter(
                    [c.K for c in checks],
                    [c.max_ratio for c in checks],
                    marker="v",
                    s=60,
                    color=colour,
                    edgecolor="black",
                    zorder=5,
                    label=f"{label}: max ratio allowed",
                )
                hi = max(hi, *(c.max_ratio for c in checks))
                failed = [c for c in checks if c.status is Status.FAIL and c.ratio is not None]
                if failed:
                    ax.scatter(
                        [c.K for c in failed],
                        [c.ratio for c in failed],
                        marker="o",
                        s=220,
                        facecolor="none",
                        edgecolor="#d62728",
                        lw=2,
                        zorder=6,
                        label=f"{label}: expectation broken",
                    )
        cross = CrossTilePair.crossover(f.now)
        if cross is not None:
            ax.axvline(cross, color=colour, ls=":", lw=1.2)
            ax.annotate(
                f"crossover K={cross}",
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
        "  cross-tile slower than its twin",
        va="top",
        fontsize=8,
        color="#a01c1c",
    )
    ax.set_ylim(min(lo * 0.95, 0.95), top)
    ax.set_xscale("log", base=2)
    ax.set_xticks(all_ks, [str(k) for k in all_ks])
    ax.set_xlabel("K")
    ax.set_ylabel("cross-tile time / twin time (same run)")
    ax.set_title(
        f"{fams[0].dtype}, {fams[0].layout}: cross-tile against its twin (below 1: cross-tile wins)",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, path)
