"""Change points per case, on the reference-normalised series of its runs in measurement order.

The series of a case is its same-run ratio to the reference (`ratio_to_reference`), one point
per stored run of one GPU, in log space; the reference row's own series is its median.
Candidates from PELT (ruptures' `KernelCPD(kernel="linear")`), each kept only while its segments
differ significantly (Mann-Whitney U, Bonferroni-adjusted) by at least `min_effect`: the method,
its parameters and why, docs/history.md, "Change points".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tilegate.errors import InputError
from tilegate.markdown import short_sha
from tilegate.store.historydb import Store, StoredRun


@dataclass(frozen=True)
class Method:
    alpha: float = 0.001  # two-sided Mann-Whitney level for a change point to count
    min_size: int = 3  # runs on each side, at least
    min_effect: float = 0.005  # relative size below which a change is not reported
    penalty: float = 3.0  # PELT penalty = penalty x sigma^2 x ln(n)
    sigma_floor: float = 1e-4  # relative noise assumed at least (a series of equal values)


DEFAULT_METHOD = Method()


@dataclass(frozen=True)
class Step:
    """A change point in a bare series: the level changes between index-1 and index."""

    index: int
    before: float  # median of the segment before (original units)
    after: float
    size: float  # after / before - 1
    p_value: float


@dataclass(frozen=True)
class Series:
    gpu: str
    case_id: str
    metric: str  # "ratio_to_reference" or "median_s"
    positions: np.ndarray  # index of each point's run in the GPU's run list
    values: np.ndarray


@dataclass(frozen=True)
class ChangePoint:
    gpu: str
    case_id: str
    metric: str
    index: int  # position of the first run at the new level in the GPU's run list
    before_run: StoredRun  # the last run at the old level
    after_run: StoredRun  # the first run at the new level
    before: float
    after: float
    size: float
    p_value: float
    env_change: tuple[str, ...]  # e.g. ("triton 3.6.0 -> 3.9.0",)

    @property
    def commit_range(self) -> str:
        return f"{short_sha(self.before_run.commit)}..{short_sha(self.after_run.commit)}"

    @property
    def bisect(self) -> str:
        """The command that finds the commit of this change (tilegate.run.culprit)."""
        from tilegate.judge.bisection import command

        return command(self.before_run.commit, self.after_run.commit, [self.case_id])


def _sigma(y: np.ndarray, floor: float) -> float:
    if len(y) < 3:
        return floor
    d = np.diff(y)
    return max(float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0)), floor)


def _test(y: np.ndarray, lo: int, cut: int, hi: int, min_size: int) -> tuple[float, float]:
    """(p-value adjusted for the scan, relative size) of the change at `cut` between segments [lo, cut) and [cut, hi)."""
    from scipy.stats import mannwhitneyu

    left, right = y[lo:cut], y[cut:hi]
    size = math.expm1(float(np.median(right) - np.median(left)))
    if np.ptp(y[lo:hi]) == 0:
        return 1.0, size
    p = float(mannwhitneyu(left, right, alternative="two-sided").pvalue)
    # The cut was chosen as the best of the positions it could take in [lo, hi), which makes the
    # plain p-value too small; Bonferroni over those positions bounds the scan's p-value.
    positions = max(1, hi - lo - 2 * min_size + 1)
    return min(1.0, p * positions), size


def detect(values: Sequence[float] | np.ndarray, method: Method = DEFAULT_METHOD) -> list[Step]:
    """The significant change points of one series of positive values, in order."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2 * method.min_size:
        return []
    # imported here: ruptures and scipy.stats take ~1 s to import, which `history add` (that
    # looks for no change point) should not pay
    import ruptures

    y = np.log(x)
    sigma = _sigma(y, method.sigma_floor)
    pen = method.penalty * sigma**2 * math.log(n)
    algo = ruptures.KernelCPD(kernel="linear", min_size=method.min_size, jump=1)
    cuts = [int(b) for b in algo.fit(y.reshape(-1, 1)).predict(pen=pen)[:-1]]

    def test(i: int) -> tuple[float, float]:
        lo = cuts[i - 1] if i > 0 else 0
        hi = cuts[i + 1] if i + 1 < len(cuts) else n
        return _test(y, lo, cuts[i], hi, method.min_size)

    tests = [test(i) for i in range(len(cuts))]
    while True:
        weak = [
            (p, -abs(size), i)
            for i, (p, size) in enumerate(tests)
            if p > method.alpha or abs(size) < method.min_effect
        ]
        if not weak:
            break
        # drop the weakest; only its two neighbours' segments change, so only they are re-tested
        worst = max(weak)[2]
        del cuts[worst], tests[worst]
        for i in (worst - 1, worst):
            if 0 <= i < len(cuts):
                tests[i] = test(i)
    bounds = [0, *cuts, n]
    return [
        Step(
            cut,
            float(np.exp(np.median(y[bounds[i] : cut]))),
            float(np.exp(np.median(y[cut : bounds[i + 2]]))),
            size,
            p,
        )
        for i, (cut, (p, size)) in enumerate(zip(cuts, tests, strict=True))
    ]


def series(store: Store, gpu: str) -> tuple[list[StoredRun], list[Series]]:
    """The GPU's runs in measurement order, and every case's series over its clean runs (a run
    of a dirty work tree is left out: its code is not the commit's)."""
    runs = store.runs(gpu)
    position = {r.run_id: i for i, r in enumerate(runs)}
    dirty = np.array([bool(r.dirty) for r in runs], dtype=bool)
    table = store.case_table(gpu)
    out: list[Series] = []
    case_ids = table["case_id"]
    for s, e in store.case_slices(table):
        ratio = table["ratio_to_reference"][s:e].astype(float)
        metric, vals = (
            ("ratio_to_reference", ratio)
            if np.isfinite(ratio).any()
            else ("median_s", table["median_s"][s:e].astype(float))
        )
        pos = np.array([position[int(r)] for r in table["run_id"][s:e]], dtype=int)
        # a dirty run measured uncommitted code: it is stored and drawn, never part of a series
        ok = np.isfinite(vals) & ~dirty[pos]
        out.append(Series(gpu, str(case_ids[s]), metric, pos[ok], vals[ok]))
    return runs, out


def points(
    runs: Sequence[StoredRun], ss: Sequence[Series], method: Method, upto: int | None = None
) -> list[ChangePoint]:
    """The change points of these series (only their runs up to position `upto`, if given)."""
    out: list[ChangePoint] = []
    for s in ss:
        keep = s.positions <= upto if upto is not None else np.ones(len(s.positions), bool)
        pos, vals = s.positions[keep], s.values[keep]
        for st in detect(vals, method):
            a, b = runs[int(pos[st.index - 1])], runs[int(pos[st.index])]
            out.append(
                ChangePoint(
                    s.gpu,
                    s.case_id,
                    s.metric,
                    int(pos[st.index]),
                    a,
                    b,
                    st.before,
                    st.after,
                    st.size,
                    st.p_value,
                    a.env_change(b),
                )
            )
    return out


def change_points(
    store: Store, gpu: str | None = None, method: Method = DEFAULT_METHOD
) -> list[ChangePoint]:
    """Every significant change point of every case (of one GPU, or of all)."""
    gpus = [gpu] if gpu else store.gpus()
    return [cp for g in gpus for cp in points(*series(store, g), method)]


def new_since(store: Store, run_id: int, method: Method = DEFAULT_METHOD) -> list[ChangePoint]:
    """Change points the history shows now that it did not show up to and including run `run_id`.

    "Did not show" allows the location to move by up to `min_size` runs (more runs sharpen it);
    a change point present then but gone now is not listed (it was noise that more runs undid).
    """
    found = [r for g in store.gpus() for r in store.runs(g) if r.run_id == run_id]
    if not found:
        raise InputError(
            f"history store {store.path} holds no run {run_id}; `tilegate history list` shows the "
            "run ids"
        )
    gpu = found[0].gpu
    runs, ss = series(store, gpu)
    cut = next(i for i, r in enumerate(runs) if r.run_id == run_id)
    before = points(runs, ss, method, cut)
    now = points(runs, ss, method, None)
    return [
        cp
        for cp in now
        if not any(
            b.case_id == cp.case_id
            and abs(b.index - cp.index) <= method.min_size
            and (b.size > 0) == (cp.size > 0)
            for b in before
        )
    ]


def _fmt_value(metric: str, v: float) -> str:
    return f"{v * 1e3:.4f} ms" if metric == "median_s" else f"{v:.4f}"


def markdown(points: Sequence[ChangePoint], title: str) -> str:
    """A markdown section (for a job summary): one table row per change point, largest first."""
    lines = [f"### {title}", ""]
    if not points:
        return "\n".join([*lines, "No change point.", ""])
    lines += [
        "| case | GPU | change | level before -> after | commits (last old..first new) | p | environment changed |",
        "|---|---|--:|---|---|--:|---|",
    ]
    for cp in sorted(points, key=lambda c: -abs(c.size)):
        ref = cp.after_run.reference or "reference"
        what = f"ratio to {ref}" if cp.metric == "ratio_to_reference" else "median"
        lines.append(
            f"| `{cp.case_id}` | {cp.gpu} | {cp.size:+.1%} ({'slower' if cp.size > 0 else 'faster'}) | "
            f"{what} {_fmt_value(cp.metric, cp.before)} -> {_fmt_value(cp.metric, cp.after)} | "
            f"`{cp.commit_range}` | {cp.p_value:.1e} | {', '.join(cp.env_change) or '-'} |"
        )
    refs = sorted({cp.after_run.reference for cp in points if cp.after_run.reference})
    named = f" ({', '.join(refs)})" if refs else ""
    lines += [
        "",
        f"Sizes are relative to the reference variant{named} measured in the same runs (the "
        "reference's own rows: their median). "
        "Bisect within the commit range; an environment change there is the usual suspect.",
        "",
        *(f"- `{cp.bisect}`" for cp in points),
        "",
    ]
    return "\n".join(lines)
