"""Who may change the judge: a pull request's edits to baselines/, judged against the base's.

In a pull request the gate reads baselines/ from the base commit, and `diff_file` diffs the pull
request's own (tilegate.store.files reads both; `tilegate baseline-diff --base-ref REF`). Every
change that lets slower code pass is a *loosening*: a tolerance raised, a policy bound widened,
a stored median made slower, a row, an expectation or one of its checks removed, a max_ratio
raised, a noise row widened or dropped, a fingerprint file re-recorded, added or removed, any
other file changed or removed. Loosenings fail the run (exit 1) unless a maintainer acknowledged
them (`--accept-baseline-change`: the label ACK_LABEL; docs/ci.md, "What the gate trusts");
changes that only tighten are listed, never fail. `check_baseline` / `check_noise`, in every
mode: a file that contradicts its own policy cannot be judged with (InputError, exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from tilegate.errors import EXIT_FAIL, EXIT_OK, InputError
from tilegate.judge import memory
from tilegate.judge.abnoise import ABPolicy, Noise
from tilegate.judge.baseline import Baseline, BaselineRow
from tilegate.judge.policy import Policy, Tolerances

DIR = "baselines"
ACK_LABEL = "perf-baseline-change"
_EPS = 1e-4  # files round tolerances to 4 digits

# which way each policy value loosens the gate: +1 when a larger value lets more through (A/B
# confidence: a wider interval is harder to put wholly above the tolerance), -1 for alpha (a
# smaller one makes "significantly slower" harder to reach), 0 when it never fails either way
_POLICY_LOOSER = {"alpha": -1, "unsure_band": 0, "quantiles": 0, "win_below": 0}

# how to make a ref's commit available (the A/B base: tilegate.harness.base; its baselines/: here)
FETCH_HINT = (
    "In GitHub Actions check out with `fetch-depth: 2` (a pull request's merge commit and its "
    "parents: the base is HEAD^1), or `fetch-depth: 0` for any other ref; locally, "
    "`git fetch origin <ref>`."
)


@dataclass(frozen=True)
class Change:
    """One difference of the pull request's baselines/ from the base's."""

    file: str  # path relative to the baselines directory
    what: str
    loosens: bool

    def line(self) -> str:
        mark = "LOOSENS" if self.loosens else "tightens or neutral"
        return f"`{DIR}/{self.file}`: {self.what} ({mark})"


def _override_explains(tols: Tolerances, row: BaselineRow, tolerance: float) -> bool:
    ov = tols.override_for(row.variant, row.params)
    if ov is None:
        return False
    if ov.tolerance is not None:
        return abs(ov.tolerance - tolerance) <= _EPS
    lo = ov.floor if ov.floor is not None else tols.policy.floor
    hi = ov.ceiling if ov.ceiling is not None else tols.policy.ceiling
    return lo - _EPS <= tolerance <= max(hi, lo) + _EPS


def check_baseline(baseline: Baseline, tolerances: Tolerances | None = None) -> None:
    """InputError naming the row when the baseline contradicts its own policy."""
    p = baseline.policy
    tols = tolerances or Tolerances()
    for key, row in baseline.rows.items():
        inside = p.floor - _EPS <= row.tolerance <= p.ceiling + _EPS
        if not inside and not _override_explains(tols, row, row.tolerance):
            raise InputError(
                f"baseline {baseline.path}, row {key}: tolerance {row.tolerance:g} is outside its "
                f"policy's [floor {p.floor:g}, ceiling {p.ceiling:g}] and no override of "
                f"{tols.source} explains it: the file contradicts itself (hand-edited?). "
                "Restore it from git or re-derive it with `tilegate rebaseline`."
            )
    for e in baseline.expectations:
        for b in e.bounds:
            if b.max_ratio > p.ratio_cap + _EPS:
                raise InputError(
                    f"baseline {baseline.path}, expectation {e.id} at {e.per}={b.value}: max_ratio "
                    f"{b.max_ratio:g} is above its policy's ratio_cap {p.ratio_cap:g} (an "
                    "expectation means 'wins'): the file contradicts itself. Restore it from git "
                    "or re-derive it with `tilegate rebaseline`."
                )


def check_noise(noise: Noise) -> None:
    """InputError naming the row when a noise row is outside its policy's [floor, ceiling]."""
    p = noise.policy
    for key, row in noise.rows.items():
        if not p.floor - _EPS <= row.tolerance <= p.ceiling + _EPS:
            raise InputError(
                f"A/B noise file {noise.path}, row {key}: tolerance {row.tolerance:g} is outside "
                f"its policy's [floor {p.floor:g}, ceiling {p.ceiling:g}]: the file contradicts "
                "itself (hand-edited?). Restore it from git or re-record it with `tilegate ab-noise --measure 4`."
            )


def _policy_changes(file: str, old: object, new: object, keys: Sequence[str]) -> list[Change]:
    out = []
    for k in keys:
        a, b = getattr(old, k), getattr(new, k)
        if a == b:
            continue
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            loosens = (b - a) * _POLICY_LOOSER.get(k, +1) > 0
        else:  # e.g. reference_variants: a row that never fails the gate is a loosening
            loosens = bool(set(b) - set(a)) if isinstance(b, tuple) else True
        out.append(Change(file, f"policy {k} {a!r} -> {b!r}", loosens))
    return out


def _diff_baseline(file: str, old: Baseline, new: Baseline) -> list[Change]:
    out = _policy_changes(file, old.policy, new.policy, [f.name for f in fields(Policy)])
    for key, o in old.rows.items():
        n = new.rows.get(key)
        if n is None:
            out.append(Change(file, f"row {key} removed (no longer judged)", True))
            continue
        if abs(n.tolerance - o.tolerance) > _EPS:
            what = f"row {key}: tolerance {o.tolerance:g} -> {n.tolerance:g}"
            out.append(Change(file, what, n.tolerance > o.tolerance))
        mem = memory.baseline_change(o.memory, n.memory)
        if mem is not None:
            out.append(Change(file, f"row {key}: {mem[0]}", mem[1]))
        if n.median_s > o.median_s * (1 + _EPS):
            what = f"stored median {o.median_s:.6g} s -> {n.median_s:.6g} s"
            why = f"{n.median_s / o.median_s - 1:+.1%}: slower code passes"
            out.append(Change(file, f"row {key}: {what} ({why})", True))
    for key in sorted(set(new.rows) - set(old.rows)):
        out.append(Change(file, f"row {key} added", False))
    new_e = {e.id: e for e in new.expectations}
    for e in old.expectations:
        n_e = new_e.get(e.id)
        if n_e is None:
            out.append(Change(file, f"expectation {e.id} removed", True))
            continue
        bounds = {b.value: b for b in n_e.bounds}
        for b in e.bounds:
            nb = bounds.get(b.value)
            if nb is None:
                out.append(Change(file, f"expectation {e.id} at {e.per}={b.value} removed", True))
            elif nb.max_ratio > b.max_ratio + _EPS:
                what = f"max_ratio {b.max_ratio:g} -> {nb.max_ratio:g} (relaxed)"
                out.append(Change(file, f"expectation {e.id} at {e.per}={b.value}: {what}", True))
    return out


def _diff_noise(file: str, old: Noise, new: Noise) -> list[Change]:
    widened = [
        f"noise row {key}: tolerance {o.tolerance:g} -> {n.tolerance:g}"
        if (n := new.rows.get(key)) is not None
        else f"noise row {key} removed (the ceiling applies)"
        for key, o in old.rows.items()
        if key not in new.rows or new.rows[key].tolerance > o.tolerance + _EPS
    ]
    policy = _policy_changes(file, old.policy, new.policy, [f.name for f in fields(ABPolicy)])
    return policy + [Change(file, what, True) for what in widened]


def _diff_tolerances(file: str, old: Tolerances, new: Tolerances) -> list[Change]:
    out = _policy_changes(file, old.policy, new.policy, [f.name for f in fields(Policy)])
    out += [
        Change(file, f"{o.describe()} added or changed", True)
        for o in new.overrides
        if o not in old.overrides
    ]
    return out + [
        Change(file, f"{o.describe()} removed", False)
        for o in old.overrides
        if o not in new.overrides
    ]


def diff_file(rel: str, old: object, new: object) -> list[Change]:
    """One differing file of the pull request's baselines/: `old` and `new` parsed (a Baseline, a
    Noise, Tolerances; else its path), None where that side lacks it."""
    finger = rel.startswith("fingerprints/")
    if new is None:
        return [Change(rel, "removed", True)]
    if old is None:
        return [
            Change(rel, "added" + (" (fingerprint facts re-recorded)" if finger else ""), finger)
        ]
    if finger:
        return [Change(rel, "fingerprint facts re-recorded", True)]
    if isinstance(old, Noise) and isinstance(new, Noise):
        return _diff_noise(rel, old, new)
    if isinstance(old, Baseline) and isinstance(new, Baseline):
        return _diff_baseline(rel, old, new)
    if isinstance(old, Tolerances) and isinstance(new, Tolerances):
        return _diff_tolerances(rel, old, new)
    return [Change(rel, "changed", True)]


@dataclass(frozen=True)
class Integrity:
    """The verdict on a pull request's baselines/: which directory judges, what changed."""

    judge_dir: Path  # the base's, or the head's when the change is acknowledged
    changes: tuple[Change, ...]
    acknowledged: bool
    ref: str

    @property
    def loosened(self) -> list[Change]:
        return [c for c in self.changes if c.loosens]

    @property
    def failing(self) -> tuple[str, ...]:
        """The lines that fail the run: loosenings nobody acknowledged."""
        return () if self.acknowledged else tuple(c.line() for c in self.loosened)

    def banner(self) -> str:
        """The markdown the report leads with ('' when baselines/ is the base's)."""
        if not self.changes:
            return ""
        said = "Judged with the base's baselines/; nothing loosens the gate."
        if self.acknowledged:
            said = f"Acknowledged by a maintainer (`{ACK_LABEL}`): the pull request's baselines/ "
            said += "judge this run."
        elif self.loosened:
            said = f"Judged with the base's baselines/. {len(self.loosened)} change(s) loosen the "
            said += (
                f"gate and fail it until a maintainer adds the label `{ACK_LABEL}` (docs/ci.md, "
            )
            said += "'What the gate trusts')."
        head = f"## This pull request changes baselines/ (against {self.ref})\n\n{said}\n\n"
        return head + "".join(f"- {c.line()}\n" for c in self.changes) + "\n"

    @property
    def code(self) -> int:
        return EXIT_FAIL if self.failing else EXIT_OK
