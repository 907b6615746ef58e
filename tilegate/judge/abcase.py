"""A/B: one case of the head against its base version, measured in the same rounds: its verdict.

A runner's drift, its power cap and the neighbours' share of it hit both sides of a pair alike
(they run back to back in every round, on the same inputs and output buffer), so the per-round
ratio head/base cancels them; a stored baseline cannot. docs/gate.md ("The verdict per case")
gives the rule and its numbers:

* the same compiled-code identity on both sides: UNCHANGED CODE, never blamed (its ratio is
  noise), or SAME CODE, TIME MOVED (exit 2) where the ratio moved more than A/A noise can;
* otherwise the pooled per-round ratios: their median, its distribution-free interval and
  one-sided Wilcoxon tests on log r_i against the A/A tolerance (tilegate.judge.abnoise) give
  SLOWER, FASTER, SAME or AMBIGUOUS (`stats.interval_verdict`); a significant change whose
  interval still crosses the tolerance at the A/B budget's cap is decided by its median;
* UNSTABLE: two modes (tilegate.judge.modes), or the ratio of the medians and the median ratio
  of the same rounds apart by more than MIXTURE_MIN; never decided on the mixture.

Autotuned kernels (tilegate.judge.autotune): the same identity with another pick is a TUNER
FLIP, UNCHANGED; where the measurer re-timed it with both sides on the base's pick (Row.pinned)
the verdict is on that time (`_retimed`): SAME there, a tuner flip; SLOWER or FASTER, a code
change the identity does not see. Another identity and another pick: a CODE CHANGE, judged; one
side whose processes picked differently: UNSTABLE. The words (ABVerdict) are
tilegate.judge.vocabulary's; the exit rule is tilegate.judge.outcome.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tilegate.errors import InputError
from tilegate.judge import autotune, stats
from tilegate.judge.abnoise import ABPolicy, aligned_pair, pooled_medians
from tilegate.judge.modes import Mode, find_modes
from tilegate.judge.results import Row, Run
from tilegate.judge.rounds import common_rounds
from tilegate.judge.vocabulary import ABVerdict
from tilegate.markdown import listing

# the consistency rule: an UNCHANGED CODE case whose paired ratio moved by more than this many
# of its tolerances and more than MOVED_MIN is not noise: something outside the identity changed
MOVED_TOLERANCES = 5.0
MOVED_MIN = 0.03


@dataclass(frozen=True)
class ABCase:
    key: str
    verdict: ABVerdict
    head: Row | None
    base: Row | None
    ratio: float | None = None  # median of the pooled per-round ratios head/base
    ci: tuple[float, float] | None = None  # its confidence interval
    run_ratios: tuple[float, ...] = ()  # each run's median ratio, the first run first
    p_slower: float | None = None
    p_faster: float | None = None
    tolerance: float | None = None
    tolerance_source: str = ""
    code_changed: bool | None = None  # None: a side has no code hash (cannot tell)
    note: str = ""
    acknowledged: bool = False  # REMOVED: a maintainer accepted it (--accept-baseline-change)
    by_median: bool = False  # decided by its median at the budget's cap (interval crosses tol)
    # the medians of the paired rounds the ratio pools (every run): one set of samples
    head_median_s: float | None = None
    base_median_s: float | None = None
    modes: tuple[Mode, ...] = ()  # UNSTABLE: its two modes, the faster first (judge.modes)
    # autotuned, picked apart: TUNER_FLIP or CODE_CHANGE (judge.autotune), the why line
    explained_by: str | None = None
    picks: str | None = None
    # the time that bounds the call, judged: "gpu" or "host"; the other's paired ratio, reported
    judged_on: str = "gpu"
    host_ratio: float | None = None
    gpu_ratio: float | None = None
    # judged on the host: the GPU time's medians over the same paired rounds (base, head), the
    # table's base and head columns (head_median_s / base_median_s are then the host time's)
    gpu_medians_s: tuple[float, float] | None = None
    # a tuner flip re-timed on one config (Row.pinned): that config (`BK=64, num_warps=4`) and
    # the ratio as each side picked; `ratio`, `ci` and the verdict are then the re-time's
    pinned: str | None = None
    picked_ratio: float | None = None
    # SLOWER beyond doubt (judge.confirm), set once by the Judgement (judge.gate.judgement)
    beyond_doubt: bool = False

    @property
    def slower_mode(self) -> bool:
        """UNSTABLE with a mode that is SLOWER on its own rounds."""
        return self.verdict is ABVerdict.UNSTABLE and any(m.slower for m in self.modes)

    @property
    def fails(self) -> bool:
        """SLOWER; UNSTABLE with a mode slower than the tolerance on its own rounds (its code
        changed: an unchanged case is never UNSTABLE); or a variant the head removed (not
        renamed) without acknowledgement."""
        return (
            self.verdict is ABVerdict.SLOWER
            or self.slower_mode
            or (self.verdict is ABVerdict.REMOVED and not self.acknowledged)
        )

    @property
    def host_bound(self) -> bool | None:
        """Whether the host bounds the call on either side (its rows' `host_bound`); None where
        no host time was measured apart (the smoke profile's host clock)."""
        rows = [r for r in (self.head, self.base) if r is not None]
        if all(r.host_bound is None for r in rows):
            return None
        return any(r.host_bound and not r.syncs_inside for r in rows)  # a sync: wall time

    @property
    def variant(self) -> str:
        row = self.head or self.base
        assert row is not None
        return row.variant


def _measured(
    key: str, pairs: Sequence[tuple[Run, Row, Row]], tolerance: float, source: str, policy: ABPolicy
) -> tuple[ABCase, list[np.ndarray]]:
    """The case's pooled numbers over all its runs (AMBIGUOUS until decided), each run's ratios."""
    _, head, base = pairs[0]
    changed = head.code_hash != base.code_hash if head.code_hash and base.code_hash else None
    sides = [aligned_pair(run, h, b) for run, h, b in pairs]
    per_run = [h / b for h, b in sides]
    pooled = np.concatenate(per_run)
    lo, hi = stats.median_ci(sorted(pooled.tolist()), policy.confidence)
    logs, ratio = np.log(pooled), float(np.median(pooled))
    ps = (stats.wilcoxon_p(logs, "greater"), stats.wilcoxon_p(logs, "less"))
    runs = tuple(float(np.median(r)) for r in per_run)
    case = ABCase(key, ABVerdict.AMBIGUOUS, head, base, ratio, (lo, hi), runs, *ps, tolerance)
    base_s, head_s = pooled_medians(sides)
    got = replace(case, tolerance_source=source, code_changed=changed)
    return replace(got, base_median_s=base_s, head_median_s=head_s), per_run


def _same_code(measured: ABCase, pairs: Sequence[tuple[Run, Row, Row]], policy: ABPolicy) -> ABCase:
    """A tuner flip (judged on its re-time where it has one), UNCHANGED or SAME CODE, TIME MOVED."""
    assert measured.ratio is not None and measured.tolerance is not None
    ratio, tolerance, smoke = measured.ratio, measured.tolerance, pairs[0][0].env.smoke
    if measured.explained_by == autotune.TUNER_FLIP:
        # re-timed with both sides on one config (tilegate.harness.measure): judged on that
        on_one = [(run, h.pinned, b.pinned) for run, h, b in pairs if h.pinned and b.pinned]
        if len(on_one) == len(pairs):
            said = (tolerance, measured.tolerance_source, policy)
            return _retimed(
                measured, judge_case(measured.key, on_one, *said, as_changed=True), smoke=smoke
            )
        note = (
            f"tuner flip ({measured.picks}): the same source and configs, another pick; its "
            f"{ratio - 1:+.1%} is the pick's, not this change's (not blamed; not re-timed on "
            "one config)"
        )
        return replace(measured, verdict=ABVerdict.UNCHANGED, note=note)
    moved = ratio - 1
    # a smoke run's times (the CPU interpreter, tiny shapes) mean nothing: only GPU times
    # can say that something outside the identity moved them
    if not smoke and abs(moved) > max(MOVED_TOLERANCES * tolerance, MOVED_MIN):
        note = (
            f"the code is the same but the time moved by {moved:+.1%}: something outside "
            "the identity changed (not noise: more than "
            f"{MOVED_TOLERANCES:g} x the {tolerance:.1%} tolerance and {MOVED_MIN:.0%})"
        )
        return replace(measured, verdict=ABVerdict.INCONSISTENT, note=note)
    note = "same code on both sides (the whole case's identity): the ratio is noise"
    return replace(measured, verdict=ABVerdict.UNCHANGED, note=note)


def _ensure_enough_pairs(
    key: str, pairs: Sequence[tuple[Run, Row, Row]], per_run: list[np.ndarray], policy: ABPolicy
) -> None:
    need = stats.min_pairs_signed_rank(policy.alpha)
    few = [(run, len(r)) for (run, _, _), r in zip(pairs, per_run, strict=False) if len(r) < need]
    if few:
        run, n = few[0]
        raise InputError(
            f"results {run.path}, case {key}: {n} paired round(s); a one-sided Wilcoxon "
            f"signed-rank test needs {need} to reach p < {policy.alpha:g} at all (docs/gate.md, "
            "'Minimum samples'), so the case could never be SLOWER: it cannot be judged. "
            "Measure more rounds (drop --perf-rounds, or raise it)."
        )


def _decided(
    measured: ABCase, pairs: Sequence[tuple[Run, Row, Row]], policy: ABPolicy
) -> tuple[ABCase, ABVerdict, str]:
    """The verdict of a changed case from its interval, tests and runs (module docstring)."""
    m = measured
    assert m.ci and m.tolerance is not None and m.ratio and m.p_slower is not None
    assert m.p_faster is not None
    (lo, hi), tolerance, ratio, p = m.ci, m.tolerance, m.ratio, (m.p_slower, m.p_faster)
    verdict = stats.interval_verdict(m.ci, tolerance, p, m.run_ratios, policy.alpha)
    if verdict is not ABVerdict.AMBIGUOUS:
        return measured, verdict, _DECIDED[verdict]
    if not ((lo > 1 and p[0] < policy.alpha) or (hi < 1 and p[1] < policy.alpha)):
        return measured, ABVerdict.AMBIGUOUS, "the interval crosses the tolerance: measure more"
    # significant, but by about the tolerance: more rounds narrow the interval around the
    # tolerance and seldom decide it; say what is known (a change of that size, and its side)
    side = "slower" if lo > 1 else "faster"
    about = (
        f"{side} than the base ({lo - 1:+.2%} .. {hi - 1:+.2%}), by about its "
        f"{tolerance:.2%} tolerance"
    )
    if not any(h.budget_stopped == "cap" for _, h, _ in pairs):
        return measured, ABVerdict.AMBIGUOUS, f"{about}: the interval crosses it"
    # its rounds are spent: the boundaries meet at the cap, the median decides
    majority = stats.majority(
        [(r - 1) * (1 if side == "slower" else -1) > tolerance for r in m.run_ratios]
    )
    verdict, note = _at_cap(ratio, tolerance, side, majority, about)
    return replace(measured, by_median=verdict is not ABVerdict.AMBIGUOUS), verdict, note


_DECIDED = {
    ABVerdict.SLOWER: "slower than the tolerance over the whole interval",
    ABVerdict.FASTER: "faster than the tolerance over the whole interval",
    ABVerdict.SAME: "",
}


def judge_case(
    key: str,
    pairs: Sequence[tuple[Run, Row, Row]],
    tolerance: float,
    tolerance_source: str,
    policy: ABPolicy,
    *,
    as_changed: bool = False,
) -> ABCase:
    """The verdict of one case measured in one or more runs (the first, then confirmations);
    `as_changed`: judged as a changed case whatever its identity (`_retimed`)."""
    measured, per_run = _measured(key, pairs, tolerance, tolerance_source, policy)
    if as_changed:
        measured = replace(measured, code_changed=True)
    split = _split_picks(pairs)
    if split is not None:
        return replace(measured, verdict=ABVerdict.UNSTABLE, note=split)
    _, head, base = pairs[0]
    changed = measured.code_changed
    picks = autotune.line(base.autotune, head.autotune)
    flip = autotune.classify(None if changed is None else not changed, base.autotune, head.autotune)
    measured = replace(measured, explained_by=flip, picks=picks)
    if flip == autotune.TUNER_FLIP or changed is False:
        return _same_code(measured, pairs, policy)
    _ensure_enough_pairs(key, pairs, per_run, policy)
    unstable = _unstable(measured, per_run, [_passes(h, b) for _, h, b in pairs], policy)
    if unstable is not None:
        return unstable
    measured, verdict, note = _decided(measured, pairs, policy)
    if _mixed(measured):
        return _mixture(measured, note)
    known = measured.head_median_s is not None and measured.base_median_s is not None
    if known and verdict in (ABVerdict.SLOWER, ABVerdict.FASTER):
        change = _medians_change(measured)  # the medians must lie on the ratio's side of 1
        if change <= 0 if verdict is ABVerdict.SLOWER else change >= 0:
            verdict = ABVerdict.AMBIGUOUS
            note = f"{note}; but the medians of the same rounds point the other way "
            note += f"({change:+.2%}): measure more"
    if changed is None:
        note = "; ".join(filter(None, [note, "no code hash on a side: identity unknown"]))
    if flip == autotune.CODE_CHANGE:
        note = "; ".join(filter(None, [f"code change, another pick ({picks})", note]))
    return replace(measured, verdict=verdict, note=note)


def _retimed(picked: ABCase, on_one: ABCase, *, smoke: bool = False) -> ABCase:
    """A tuner flip's verdict from its re-time with both sides on one config (`on_one`, judged as
    a changed case; the module's docstring), its ratio as picked kept beside. A smoke run's times
    cannot show what the identity does not see: its flip stays a tuner flip."""
    assert on_one.head is not None and on_one.ratio is not None and picked.ratio is not None
    config = "; ".join(autotune.config_text(p["config"]) for p in on_one.head.autotune)
    got = replace(
        on_one,
        head=picked.head,
        base=picked.base,
        picks=picked.picks,
        pinned=config,
        picked_ratio=picked.ratio,
        host_ratio=picked.host_ratio,
    )
    diff, as_picked = on_one.ratio - 1, picked.ratio - 1
    if on_one.verdict is ABVerdict.SAME or smoke:
        said = "a smoke run's times decide nothing" if smoke else ABVerdict.SAME.value
        note = (
            f"tuner flip ({picked.picks}): with both sides on {config} the difference is "
            f"{diff:+.1%} ({said}); the {as_picked:+.1%} as picked is the pick's, not this "
            "change's (not blamed)"
        )
        return replace(
            got,
            verdict=ABVerdict.UNCHANGED,
            code_changed=False,
            explained_by=autotune.TUNER_FLIP,
            note=note,
        )
    word = on_one.verdict.value
    if on_one.verdict in (ABVerdict.SLOWER, ABVerdict.FASTER):
        note = (
            f"code change: with both sides on {config} a difference remains, {diff:+.1%} "
            f"({word}: {on_one.note}); the same source and configs, so something the identity "
            f"does not see changed; as picked {as_picked:+.1%} ({picked.picks})"
        )
        return replace(got, explained_by=autotune.CODE_CHANGE, note=note)
    note = (
        f"the same source and configs, another pick ({picked.picks}); with both sides on "
        f"{config} the difference is {diff:+.1%} ({word}: {on_one.note}): neither a tuner flip "
        f"nor a code change is shown; as picked {as_picked:+.1%}"
    )
    return replace(got, explained_by=None, note=note)


def _split_picks(pairs: Sequence[tuple[Run, Row, Row]]) -> str | None:
    """UNSTABLE's note where a side's processes picked apart or a tuner re-tuned; else None."""
    retuned = sorted({k for _, h, b in pairs for k in autotune.retuned(h.autotune + b.autotune)})
    if retuned:
        return (
            f"autotuner re-tuned {listing(retuned)} in a steady-state call: its key moves from "
            "call to call, so it tunes inside the timed rounds; not decided"
        )
    for side, rows in (("head", [h for _, h, _ in pairs]), ("base", [b for _, _, b in pairs])):
        split = autotune.unstable([r.autotune for r in rows]) if len(rows) > 1 else None
        if split:
            return (
                f"the {side}'s processes picked different autotuner configs ({split}): its time "
                f"depends on the pick, not decided; {UNSTABLE_TODO}"
            )
    return None


UNSTABLE_TODO = (
    "measure it alone (`--perf-variants`), in several processes, and look for what switches "
    "(an autotuner's pick, clocks, host time: hold_host); an unstable case is judged on neither "
    "mode's share"
)


def _passes(head: Row, base: Row) -> list[int] | None:
    """The timing pass of each round the pair shares (`aligned_pair`'s rounds), from the head's
    sweeps (every sweep times its group's rounds_per_pass rounds); None if not recorded."""
    if not head.sweeps:
        return None
    per_pass = len(head.samples_s) // head.sweeps
    rounds = common_rounds(head.timed_in, len(head.samples_s), base.timed_in, len(base.samples_s))
    return [r // per_pass for r in rounds]


def _unstable(
    case: ABCase,
    per_run: Sequence[np.ndarray],
    passes: Sequence[list[int] | None],
    policy: ABPolicy,
) -> ABCase | None:
    """UNSTABLE when its rounds fall into two modes (tilegate.judge.modes), else None."""
    assert case.tolerance is not None
    ratios, p = [r.tolist() for r in per_run], policy
    modes = find_modes(
        ratios, case.tolerance, passes=passes, confidence=p.confidence, alpha=p.alpha
    )
    if not modes:
        return None
    verdict = "no mode is slower on its own rounds: it cannot be judged"
    if any(m.slower for m in modes):
        verdict = "a mode is slower than the tolerance on its own rounds: a regression"
    note = (
        f"two modes beyond the A/A noise: {modes[0].describe()} and {modes[1].describe()}; "
        f"not decided on the mixture; {verdict}; {UNSTABLE_TODO}"
    )
    return replace(case, verdict=ABVerdict.UNSTABLE, modes=modes, note=note)


# The ratio of the row's medians and the median of its per-round ratios (the same rounds) differ
# by more than this (in log): the rounds are a mixture. Between two different kernels timed in
# the same rounds of a real H200 run they differ by at most 1.2 % (90 % of pairs: 0.52 %;
# tests/fixtures/recorded-h200-quick.json, 216 pairs)
MIXTURE_MIN = 0.05


def _medians_change(case: ABCase) -> float:
    assert case.head_median_s is not None and case.base_median_s is not None
    return case.head_median_s / case.base_median_s - 1


def _mixed(case: ABCase) -> bool:
    """The medians and the per-round ratio of the same rounds far apart (MIXTURE_MIN)."""
    if case.head_median_s is None or case.base_median_s is None or case.ratio is None:
        return False
    return abs(math.log1p(_medians_change(case)) - math.log(case.ratio)) > MIXTURE_MIN


def _mixture(case: ABCase, note: str) -> ABCase:
    """The medians and the per-round ratio of the same rounds far apart: a mixture (a round's
    speed moves both sides by more than the change), which no verdict can stand on."""
    said = (
        f"{note}; but the medians (head {(case.head_median_s or 0) * 1e3:.4g} ms, base "
        f"{(case.base_median_s or 0) * 1e3:.4g} ms: {_medians_change(case):+.1%}) and the "
        f"per-round ratio ({(case.ratio or 1) - 1:+.1%}) of the same rounds differ by more "
        f"than {MIXTURE_MIN:.0%}: the rounds are a mixture, not decided on it; no mode is "
        f"slower on its own rounds: it cannot be judged; {UNSTABLE_TODO}"
    )
    return replace(case, verdict=ABVerdict.UNSTABLE, note=said.lstrip("; "))


def _at_cap(
    ratio: float, tolerance: float, side: str, majority: bool, about: str
) -> tuple[ABVerdict, str]:
    """A significant change still crossing the tolerance at the budget's cap: decided by its
    median, a sequential test whose boundaries meet at its last look."""
    beyond = ratio - 1 > tolerance if side == "slower" else ratio - 1 < -tolerance
    how = f"{about}; its rounds reached the cap, so its median ({ratio - 1:+.2%}) decides"
    if not beyond:
        return ABVerdict.SAME, f"{how}: within the tolerance"
    if not majority:
        return ABVerdict.AMBIGUOUS, f"{how}, but most of its runs are within the tolerance"
    verdict = ABVerdict.SLOWER if side == "slower" else ABVerdict.FASTER
    return verdict, f"{how}: beyond the tolerance"
