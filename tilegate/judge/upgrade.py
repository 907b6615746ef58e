"""A Triton (or library) upgrade judged: each case's ratio to the reference, old processes against new.

Two Tritons cannot live in one process, so unlike an A/B run the sides are not paired round by
round (tilegate.run.upgrade runs them, alternating processes); instead each case is judged on
its ratio to the benchmark's reference measured in its own process, which cancels what moves a
whole process (clocks, power, the machine), while torch, hence the reference, is the same on both
sides:

* per case: the ratio r = case / reference (`Run.ratio`) in each process of each side; the
  effect = median(new) / median(old) - 1; the noise = the largest within-side spread of r
  ((max - min) / median); tolerance = clamp(3 x noise, 1 %, 5 %); a Welch t-test on log r;
* SLOWER / FASTER: beyond the tolerance and p < 0.05; SAME: within it; AMBIGUOUS otherwise;
* per kernel (variant): its cases' verdicts, SLOWER first. Exit 1 when a kernel got slower
  (the one exit rule, tilegate.judge.outcome.upgrade_outcome; the words: tilegate.judge.vocabulary).
  Where the grid has an axis naming the op (`kernel` or `op`: a benchmark of several ops, such
  as examples/liger), a kernel is the variant at one value of it (``liger-rms_norm-bwd``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tilegate.errors import InputError
from tilegate.judge import stats
from tilegate.judge.policy import TolerancePolicy
from tilegate.judge.results import Run
from tilegate.judge.vocabulary import Change

# noise = the spread of each side's per-process ratios; alpha: the Welch t-test's level
UPGRADE = TolerancePolicy(multiple=3.0, floor=0.01, ceiling=0.05, alpha=0.05)
# grid axes that name the op a variant runs: its verdict is given per value of them
KERNEL_AXES = ("kernel", "op")


@dataclass(frozen=True)
class UpgradeCase:
    key: str
    variant: str
    change: Change
    old: tuple[float, ...]  # ratio to the reference in each old process
    new: tuple[float, ...]
    effect: float
    tolerance: float
    p: float
    kernel: str = ""  # the variant, at its value of KERNEL_AXES if the grid has one
    group: str = ""
    # whether the compiled code that ran differs between the sides (the identity's code hash in
    # each side's processes); None where a side recorded none
    code_changed: bool | None = None

    @property
    def fails(self) -> bool:
        return self.change is Change.SLOWER

    @property
    def kernel_name(self) -> str:
        return self.kernel or self.variant

    @property
    def where(self) -> str:
        """The case within its kernel: its group less the kernel's part ("bf16-T8192-H4096")."""
        op = self.kernel_name[len(self.variant) + 1 :]
        if op and self.group.startswith(f"{op}-"):
            return self.group[len(op) + 1 :]
        return self.group or self.key


@dataclass(frozen=True)
class UpgradeComparison:
    old_runs: tuple[Run, ...]
    new_runs: tuple[Run, ...]
    cases: tuple[UpgradeCase, ...]
    notes: tuple[str, ...] = ()

    @property
    def smoke(self) -> bool:
        return all(r.env.smoke for r in (*self.old_runs, *self.new_runs))

    def kernels(self) -> dict[str, Change]:
        """Each kernel's verdict (the variant, per op where the grid names one): the worst of its
        cases (SLOWER, then AMBIGUOUS, FASTER)."""
        rank = [Change.SLOWER, Change.AMBIGUOUS, Change.FASTER, Change.SAME]
        out: dict[str, Change] = {}
        for c in self.cases:
            now = out.get(c.kernel_name, Change.SAME)
            out[c.kernel_name] = min(now, c.change, key=rank.index)
        return out


def tritons(runs: Sequence[Run]) -> str:
    versions = sorted({r.env.software.get("triton", "?") for r in runs})
    return "/".join(versions)


def _version(runs: Sequence[Run], name: str) -> str:
    return "/".join(sorted({r.env.software.get(name, "absent") for r in runs}))


def changed(old_runs: Sequence[Run], new_runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(package, old version, new version) for every package whose version differs between the
    sides (python aside), Triton first."""
    names = {k for r in (*old_runs, *new_runs) for k in r.env.software} - {"python"}
    out = []
    for name in sorted(names, key=lambda n: (n != "triton", n)):
        old, new = _version(old_runs, name), _version(new_runs, name)
        if old != new:
            out.append((name, old, new))
    return out


def _kernel(variant: str, params: Mapping[str, object]) -> str:
    return "-".join([variant, *(str(params[a]) for a in KERNEL_AXES if a in params)])


def _code_changed(old_runs: Sequence[Run], new_runs: Sequence[Run], key: str) -> bool | None:
    """Whether `key`'s compiled code differs between the sides: the sets of code hashes its rows
    recorded in each side's processes; None where a process recorded none."""
    sides = []
    for runs in (old_runs, new_runs):
        hashes = {r.rows[key].code_hash if key in r.rows else None for r in runs}
        if None in hashes:
            return None
        sides.append(hashes)
    return sides[0] != sides[1]


def judge_upgrade(old_runs: Sequence[Run], new_runs: Sequence[Run]) -> UpgradeComparison:
    """Each case's ratio to the reference, old processes against new ones."""
    if len(old_runs) < 2 or len(new_runs) < 2:
        raise InputError("an upgrade A/B needs at least 2 processes on each side (3 recommended)")
    slugs = {r.env.gpu.slug for r in (*old_runs, *new_runs)}
    if len(slugs) != 1:
        raise InputError(f"the upgrade A/B's runs are of different GPU models: {sorted(slugs)}")
    notes = []
    if all(r.env.smoke for r in (*old_runs, *new_runs)):
        notes.append(
            "SMOKE runs (CPU interpreter): the timings mean nothing; the verdicts below prove "
            "the pipeline and never fail it (exit 0)"
        )
    moved = changed(old_runs, new_runs)
    if not moved:
        notes.append(
            f"both sides run the same software (Triton {tritons(old_runs)}, nothing else "
            "recorded differs): this is an A/A of environments"
        )
    torches = {r.env.software.get("torch") for r in (*old_runs, *new_runs)}
    if len(torches) > 1:
        notes.append(
            f"torch differs between the sides ({', '.join(sorted(map(str, torches)))}): the "
            "reference may have moved too, so the ratios mix both changes"
        )
    keys = [k for k, row in old_runs[0].rows.items() if not row.reference]
    cases = []
    for key in keys:
        row = old_runs[0].rows[key]

        def ratios(runs: Sequence[Run], key: str = key) -> list[float]:
            out = []
            for run in runs:
                r = run.rows.get(key)
                ref = run.reference
                ratio = run.ratio(r.variant, ref, r.group) if r and ref else None
                if ratio is not None:
                    out.append(ratio)
            return out

        old, new = ratios(old_runs), ratios(new_runs)
        if len(old) < 2 or len(new) < 2:
            continue  # measured on one side only: listed by the report as not compared
        effect = stats.median(new) / stats.median(old) - 1
        noise = max((max(x) - min(x)) / stats.median(x) for x in (old, new))
        tol = UPGRADE.tolerance(noise).value
        t = stats.scipy_stats().ttest_ind(np.log(new), np.log(old), equal_var=False)
        p = 1.0 if math.isnan(t.pvalue) else float(t.pvalue)
        if abs(effect) > tol and p < UPGRADE.alpha:
            change = Change.SLOWER if effect > 0 else Change.FASTER
        elif abs(effect) <= tol:
            change = Change.SAME
        else:
            change = Change.AMBIGUOUS
        cases.append(
            UpgradeCase(
                key, row.variant, change, tuple(old), tuple(new), effect, tol, p,
                kernel=_kernel(row.variant, row.params), group=row.group,
                code_changed=_code_changed(old_runs, new_runs, key),
            )
        )  # fmt: skip
    return UpgradeComparison(tuple(old_runs), tuple(new_runs), tuple(cases), tuple(notes))
