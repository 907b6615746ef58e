"""Identity-aware budgeting of an A/B run's rounds: time where the code changed, stop when decided.

Identity is known before any timing, so the measurer plans per group which slots each sweep
times: changed heads, new rows and the reference the profile's rounds; an unchanged head
STORED_PASSES sweeps; an unchanged case's base a sentinel that stops once the consistency rule
cannot fire; a changed pair's base until its interval decides, up to CAP_FACTOR x the profile's
rounds (docs/gate.md, "Identity-aware budget"). `timed_in` says which of the group's rounds a
row's samples are (half-open ranges); two rows are paired over the rounds both were timed in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.judge import stats
from tilegate.judge.abcase import MOVED_MIN, MOVED_TOLERANCES
from tilegate.judge.rounds import Ranges, add_range, aligned, covered
from tilegate.judge.rounds import check_ranges as check_ranges  # re-exported (results, tests)

CAP_FACTOR = 3  # a changed pair is timed for at most this many times the profile's rounds
STORED_PASSES = 3  # sweeps an unchanged case's head gets: what the stored check needs


# --- the decision after a sweep ----------------------------------------------------------------


def max_looks(passes: int) -> int:
    """The most looks a pair can get: one per sweep, the profile's and the extension's."""
    return max(1, passes * CAP_FACTOR)


def interim_confidence(alpha: float, looks: int) -> float:
    """Bonferroni over `looks` looks: each interim interval at confidence 1 - alpha / looks."""
    if not 0 < alpha < 1 or looks < 1:
        raise ValueError(f"need 0 < alpha < 1 and looks >= 1, got {alpha}, {looks}")
    return 1.0 - alpha / looks


def decide(
    ratios: Sequence[float],
    tol_same: float,
    tol_differ: float,
    confidence: float,
    min_pairs: int,
) -> str | None:
    """SLOWER / FASTER / SAME when the median's interval of `ratios` (the A/B verdict's) clears
    the tolerance decisively; None while it straddles it, or below `min_pairs` rounds."""
    if len(ratios) < min_pairs:
        return None
    lo, hi = stats.median_ci(sorted(ratios), confidence)
    if lo - 1 > tol_differ:
        return "SLOWER"
    if hi - 1 < -tol_differ:
        return "FASTER"
    if lo - 1 >= -tol_same and hi - 1 <= tol_same:
        return "SAME"
    return None


def sentinel_settled(
    ratios: Sequence[float], moved: float, confidence: float, min_pairs: int
) -> bool:
    """The sentinel's rounds suffice: its interval lies inside +-moved (the consistency rule
    cannot fire on more such data) or entirely outside (it fires whatever comes)."""
    if len(ratios) < min_pairs:
        return False
    lo, hi = stats.median_ci(sorted(ratios), confidence)
    inside = lo - 1 >= -moved and hi - 1 <= moved
    outside = lo - 1 > moved or hi - 1 < -moved
    return inside or outside


# --- tolerances handed from the perf loop to the suite -----------------------------------------


@dataclass(frozen=True)
class Tolerances:
    """Per-case A/B tolerances (the noise file's); for a case not in it SAME must hold against
    the floor, SLOWER / FASTER against the ceiling (valid whatever tolerance the verdict uses)."""

    per_case: Mapping[str, float] = field(default_factory=dict)
    floor: float = 0.005
    ceiling: float = 0.03
    alpha: float = 0.01
    confidence: float = 0.99

    def for_case(self, key: str) -> tuple[float, float]:
        """(tolerance for SAME, tolerance for SLOWER / FASTER)."""
        tol = self.per_case.get(key)
        return (tol, tol) if tol is not None else (self.floor, self.ceiling)

    def moved(self, key: str) -> float:
        """The consistency rule's threshold for an UNCHANGED CODE case: max(5 x tol, 3 %)."""
        return max(MOVED_TOLERANCES * self.per_case.get(key, self.ceiling), MOVED_MIN)

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": "tilegate.ab-tolerances/1",
            "policy": {k: getattr(self, k) for k in _POLICY},
            "tolerances": dict(sorted(self.per_case.items())),
        }


_POLICY = ("floor", "ceiling", "alpha", "confidence")


def tolerances_from_noise(noise: Any, policy: Any = None) -> Tolerances:
    """The suite's tolerances from a loaded A/B noise file (tilegate.judge.abnoise.Noise) or none."""
    pol = policy or (noise.policy if noise is not None else None)
    kw = {k: getattr(pol, k) for k in _POLICY} if pol is not None else {}
    per = {k: row.tolerance for k, row in noise.rows.items()} if noise is not None else {}
    return Tolerances(per, **kw)


def save_tolerances(tol: Tolerances, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tol.as_json(), indent=1) + "\n")


def load_tolerances(path: Path | None) -> Tolerances:
    if path is None:
        return Tolerances()
    where = f"A/B tolerances file {path}"
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"{where} cannot be read: {err}") from err
    if not isinstance(data, dict) or data.get("schema") != "tilegate.ab-tolerances/1":
        raise InputError(f"{where} is not a tilegate A/B tolerances file")
    pol = data.get("policy") or {}
    tols = data.get("tolerances") or {}
    ok = isinstance(tols, dict) and all(
        isinstance(v, (int, float)) and 0 < v < 1 for v in tols.values()
    )
    if not ok or not isinstance(pol, dict):
        raise InputError(f"{where}: tolerances must be case id -> a number in (0, 1)")
    return Tolerances(
        {str(k): float(v) for k, v in tols.items()}, **{k: float(v) for k, v in pol.items()}
    )


# --- the plan of one group ---------------------------------------------------------------------


@dataclass
class _Slot:
    name: str
    role: str  # "head", "reference", "changed-base", "sentinel-base", "single"
    ranges: Ranges = ()
    active: bool = True
    stopped: str = "profile"  # "decided", "cap", "profile", "sentinel", "stored"
    looks: int = 0
    sweeps: int = 0  # sweeps it was timed in
    decision: str | None = None
    extended: int = 0  # rounds beyond the profile's


class GroupBudget:
    """Which slots of one group each sweep times, and why each stopped. `unchanged`: the heads
    whose code is the base's; `keys`: head -> case id (its tolerance); `enabled` False: every
    slot timed every sweep (--perf-ab-full); `keep_full`: unchanged heads that keep the
    profile's sweeps (an expectation pairs them with a changed row)."""

    def __init__(
        self,
        slots: Sequence[str],
        *,
        pairs: Mapping[str, str],
        unchanged: set[str] | frozenset[str],
        keys: Mapping[str, str],
        reference: str | None,
        passes: int,
        tolerances: Tolerances = Tolerances(),
        enabled: bool = True,
        keep_full: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        self.enabled = enabled
        self.passes = passes
        self.stored_passes = max(1, min(passes, STORED_PASSES))
        self.cut = {h for h in unchanged if h in pairs and h not in keep_full} if enabled else set()
        # changed heads whose pair is decided SLOWER stop like unchanged ones (_cut_unchanged)
        self.cut_slower = {h for h in pairs if h not in unchanged and h not in keep_full}
        self.tolerances = tolerances
        self.pairs = dict(pairs)
        self.keys = dict(keys)
        self.reference = reference
        self.min_pairs = stats.min_pairs_signed_rank(tolerances.alpha)
        self.looks_max = max_looks(passes)
        self.confidence = interim_confidence(tolerances.alpha, self.looks_max)
        bases = {b: h for h, b in self.pairs.items()}
        self.slots: dict[str, _Slot] = {}
        for name in slots:
            if name == reference:
                role = "reference"
            elif name in bases:
                role = "sentinel-base" if bases[name] in unchanged else "changed-base"
            elif name in self.pairs:
                role = "head"
            else:
                role = "single"
            self.slots[name] = _Slot(name, role)
        self.round = 0  # the group's rounds so far
        self.sweep = 0
        self.profile_rounds = 0  # set by the first sweep: passes x rounds per pass
        self.samples: dict[str, list[float]] = {n: [] for n in self.slots}

    def active(self) -> list[str]:
        """The slots to time in the next sweep, in run order ([] when the group is done)."""
        if not self.enabled:
            return list(self.slots) if self.sweep < self.passes else []
        if self.sweep < self.passes:
            return [n for n, s in self.slots.items() if s.active]
        # extension: undecided changed pairs under the cap, their heads, and the reference
        cap = CAP_FACTOR * self.profile_rounds
        ext = [
            h
            for h, b in self.pairs.items()
            if self._extending(h) and covered(self.slots[b].ranges) < cap
        ]
        if not ext:
            return []
        keep = set(ext) | {self.pairs[h] for h in ext}
        if self.reference in self.slots:
            keep.add(self.reference)
        return [n for n in self.slots if n in keep]

    def record(self, timed: Mapping[str, Sequence[float]], rounds: int) -> None:
        """One sweep's samples (`rounds` rounds of the slots `active()` named); then the look."""
        if self.sweep == 0:
            self.profile_rounds = rounds * self.passes
        extension = self.sweep >= self.passes
        for name, got in timed.items():
            if len(got) != rounds:
                raise ValueError(f"{name}: {len(got)} samples for {rounds} rounds")
            slot = self.slots[name]
            slot.ranges = add_range(slot.ranges, self.round, self.round + rounds)
            slot.sweeps += 1
            self.samples[name].extend(got)
            if extension:
                slot.extended += rounds
        self.round += rounds
        self.sweep += 1
        if self.enabled:
            self._look(timed)
            if self.stored_passes <= self.sweep < self.passes:
                self._cut_unchanged()
        if self.sweep >= self.passes:  # the profile's rounds are done: heads stop here
            for name, slot in self.slots.items():
                if slot.role in ("head", "reference", "single") and not self._extending(name):
                    slot.active = False

    def _cut_unchanged(self) -> None:
        """Unchanged heads whose sentinel is done stop; the reference with the last it serves."""
        for head in self.cut:
            h, base = self.slots[head], self.slots[self.pairs[head]]
            if h.active and not base.active:
                h.active, h.stopped = False, "stored"
        for head in self.cut_slower if self.enabled else ():
            # decided SLOWER: the run fails on its A/B verdict whatever its stored verdict says
            h, base = self.slots[head], self.slots[self.pairs[head]]
            if h.active and not base.active and base.decision == "SLOWER":
                h.active, h.stopped, h.decision = False, "stored", "SLOWER"
        ref = self.slots.get(self.reference) if self.reference else None
        served = [
            s for n, s in self.slots.items() if n != self.reference and s.role != "sentinel-base"
        ]
        if ref is not None and ref.active and not any(s.active for s in served):
            ref.active, ref.stopped = False, "stored"

    def _extending(self, name: str) -> bool:
        base = self.pairs.get(name)
        return (
            base is not None and self.slots[base].active and self.slots[base].role == "changed-base"
        )

    def ratios(self, head: str) -> list[float]:
        base = self.pairs[head]
        h, b = aligned(
            self.samples[head], self.slots[head].ranges, self.samples[base], self.slots[base].ranges
        )
        return [x / y for x, y in zip(h, b, strict=False) if y > 0]

    def _look(self, timed: Mapping[str, Sequence[float]]) -> None:
        last_profile = self.sweep == self.passes
        for head, base in self.pairs.items():
            slot = self.slots[base]
            if base not in timed or not slot.active:
                continue
            key = self.keys.get(head, head)
            r = self.ratios(head)
            slot.looks += 1
            self.slots[head].looks = slot.looks
            if slot.role == "sentinel-base":
                if sentinel_settled(r, self.tolerances.moved(key), self.confidence, self.min_pairs):
                    slot.active, slot.stopped = False, "sentinel"
                elif self.sweep >= self.passes:
                    slot.active, slot.stopped = False, "profile"
                continue
            tol_same, tol_differ = self.tolerances.for_case(key)
            got = decide(r, tol_same, tol_differ, self.confidence, self.min_pairs)
            if got is not None:
                slot.decision = got
                slot.active = False
                slot.stopped = "profile" if last_profile else "decided"
            elif covered(slot.ranges) >= CAP_FACTOR * self.profile_rounds:
                slot.active, slot.stopped = False, "cap"
        if self.sweep >= self.passes:  # the head follows its base through extension
            for head, base in self.pairs.items():
                h, b = self.slots[head], self.slots[base]
                if h.stopped != "stored":
                    h.stopped = b.stopped if b.role == "changed-base" else "profile"

    def info(self, name: str) -> dict[str, Any]:
        """extra_info.tilegate.budget of one slot."""
        s = self.slots[name]
        out: dict[str, Any] = {
            "role": s.role,
            "rounds": covered(s.ranges),
            "stopped": s.stopped,
            "looks": s.looks,
            "sweeps": s.sweeps,
            "profile_sweeps": self.passes,
        }
        if s.extended:
            out["extended"] = s.extended
        if s.decision:
            out["decision"] = s.decision
        if not self.enabled:
            out["full"] = True
        return out

    def timed_in(self, name: str) -> list[list[int]]:
        return [[a, b] for a, b in self.slots[name].ranges]


def summarize(infos: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """machine_info.tilegate.budget: the run's totals from every slot's budget info."""
    changed = [i for i in infos if i.get("role") == "changed-base"]
    sentinel = [i for i in infos if i.get("role") == "sentinel-base"]
    cut = [i for i in infos if i.get("role") == "head" and i.get("stopped") == "stored"]
    rounds = sorted(int(i["rounds"]) for i in changed)
    return {
        "enabled": not any(i.get("full") for i in infos),
        "changed_cases": len(changed),
        "changed_rounds": sum(rounds),
        "changed_median_rounds": (rounds[len(rounds) // 2] if rounds else 0),
        "stopped_early": sum(i.get("stopped") == "decided" for i in changed),
        "extended": sum(bool(i.get("extended")) for i in changed),
        "capped": sum(i.get("stopped") == "cap" for i in changed),
        "max_rounds": max(rounds, default=0),
        "unchanged_cases": len(sentinel),
        "sentinel_rounds": sorted({int(i["rounds"]) for i in sentinel}),
        "sentinel_full": sum(i.get("stopped") == "profile" for i in sentinel),
        "heads_cut": len(cut),
        "slower_heads_cut": sum(i.get("decision") == "SLOWER" for i in cut),
        "cut_sweeps": sorted({int(i.get("sweeps", 0)) for i in cut}),
        "profile_sweeps": max((int(i.get("profile_sweeps", 0)) for i in infos), default=0),
    }


def summary_line(total: Mapping[str, Any]) -> str:
    """ "rounds: 14 changed cases 2,310 rounds (median 150, 3 stopped early, 2 extended to 450),
    82 unchanged cases head-only + 7 sentinel base rounds"."""
    if not total.get("enabled", True):
        return "rounds: budget off (--perf-ab-full): both sides of every case timed every round"
    sr = total.get("sentinel_rounds") or []
    sent = f"{sr[0]:,}" if len(sr) == 1 else f"{sr[0]:,}-{sr[-1]:,}" if sr else "0"
    full = total.get("sentinel_full", 0)
    return (
        f"rounds: {total['changed_cases']} changed case(s) {total['changed_rounds']:,} rounds "
        f"(median {total['changed_median_rounds']:,}, {total['stopped_early']} stopped early, "
        f"{total['extended']} extended"
        + (f" to {total['max_rounds']:,}" if total["extended"] else "")
        + (f", {total['capped']} ran to the cap" if total.get("capped") else "")
        + f"), {total['unchanged_cases']} unchanged case(s) head-only + {sent} sentinel base rounds"
        + (f" ({full} timed in full: their sentinel did not settle)" if full else "")
        + _cut_part(total)
    )


def _cut_part(total: Mapping[str, Any]) -> str:
    cs = total.get("cut_sweeps") or []
    if not total.get("heads_cut") or not cs:
        return ""
    sweeps = f"{cs[0]}" if len(cs) == 1 else f"{cs[0]}-{cs[-1]}"
    return (
        f"; {total['heads_cut']} head(s) timed for {sweeps} of "
        f"{total.get('profile_sweeps', 0)} sweeps, what the stored check needs ("
        + (
            f"{total['heads_cut'] - slower} unchanged, {slower} decided SLOWER"
            if (slower := int(total.get("slower_heads_cut", 0)))
            else "unchanged"
        )
        + ")"
    )
