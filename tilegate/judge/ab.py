"""A/B: every case of the head against its base version, measured in the same rounds of one process.

The pull-request verdict. A runner's drift, its power cap and the neighbours' share of it hit both
sides of a pair alike (they run back to back in every round, on the same inputs and output
buffer), so the per-round ratio head/base cancels them; a stored baseline cannot. Per case:

* compiled-code identity first: a case whose code hash is the same on both sides is UNCHANGED
  CODE and cannot be blamed, whatever its ratio says (that ratio is reported as noise);
* otherwise the per-round ratios r_i = head_i / base_i of every run, pooled: their median, a
  distribution-free confidence interval of it, and one-sided Wilcoxon signed-rank tests on
  log r_i (scipy), against a tolerance derived from the measured A/A noise of that same ratio
  on this GPU (`baselines/<gpu>.ab.json`, `tilegate ab-noise`);
* SLOWER (fails): the whole interval above +tolerance, significant, and slower than the
  tolerance in a majority of the runs; FASTER likewise below -tolerance; SAME: the whole
  interval inside +-tolerance; AMBIGUOUS otherwise: the data cannot decide, measure more
  (`tilegate perf` re-measures SLOWER, AMBIGUOUS and UNSTABLE cases before they can fail, but
  not a SLOWER case beyond doubt: tilegate.judge.confirm). A significant
  change whose interval crosses the tolerance after the A/B budget's every round (its cap,
  tilegate.harness.budget) is decided by its median: the sequential test's boundaries meet at
  its last look;
* UNSTABLE: its rounds fall into two modes beyond the A/A noise (tilegate.judge.modes), or the
  ratio of the medians of head and base (the same pooled rounds as the ratio) and the median
  ratio differ by more than MIXTURE_MIN (a FASTER or SLOWER case whose medians point the other
  way by less is AMBIGUOUS): never decided FASTER or SLOWER on the mixture (tilegate.judge.outcome: fails if a
  mode alone is slower, else exit 2);
* a variant only the head has is NEW (not judged), one only the base has is REMOVED: it fails
  (its cases and the expectations they carry would escape the gate) unless acknowledged; a
  renamed variant (`renamed_from=`, tilegate.harness.base.renames) is paired with its old self;
* UNCHANGED CODE whose ratio moved more than A/A noise can (> 5 x tolerance and > 3 %) is
  SAME CODE, TIME MOVED: exit 2, something outside the identity changed.

The noise file: per case, the A/A paired ratio of each of several runs with REF = HEAD (both
sides the same code), its noise (the `noise_confidence` upper bound of the RMS of r_j - 1:
tilegate.judge.stats.rms_upper_bound) and tolerance = clamp(multiple x noise, floor, ceiling), so
more runs give a tighter tolerance, never a looser one; a case seen in fewer than
MIN_NOISE_RUNS runs gets at least the largest tolerance of the cases seen that often (POOLED).
A case it lacks gets the ceiling, marked uncalibrated.

Autotuned kernels (tilegate.judge.autotune): the identity is the source and the config space,
the pick is recorded beside it. Same identity, another pick: a TUNER FLIP, UNCHANGED (never
blamed, never INCONSISTENT: the time moved with the pick), its why line names the picks. Where
the measurer re-timed it with both sides on the base's pick (Row.pinned), the verdict is on that
time (`_retimed`): SAME there, a tuner flip; SLOWER or FASTER there, a code change the identity
does not see, judged on it; another verdict there, that verdict (re-measured). Another
identity and another pick: a CODE CHANGE, judged, its note naming the picks; one side whose
processes (the run and its confirmations) picked differently: UNSTABLE with the picks named.

Host-bound calls (tilegate.harness.timing: host time per call at or above the GPU time): the
verdict is on the time that bounds the call. A case either side of which is host-bound is judged
on its paired per-round host times, against the host tolerance from its own A/A noise (the noise
file's `<case>#host` rows, HOST_POLICY), and on its GPU time too: its kernels slower than their
tolerance fail it (a head whose kernels outgrow its host time is no longer host-bound, and
outside a benchmark's loop the host runs ahead of the kernels; judged on the host time alone, a
+27 % kernel of fla's gla backward, host 1.3 ms for a 1.18 ms GPU time, would pass). A GPU-bound
case is judged on its GPU time and a host time beyond its host tolerance is reported in its
note, never failed.

The words (ABVerdict) are tilegate.judge.vocabulary's; the exit rule is tilegate.judge.outcome.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from tilegate import __version__
from tilegate.errors import InputError
from tilegate.fileio import is_finite_number
from tilegate.judge import autotune, stats
from tilegate.judge.modes import Mode, find_modes
from tilegate.judge.policy import TolerancePolicy
from tilegate.judge.results import Row, Run, describe_gpu, gpu_mismatch, row_order
from tilegate.judge.vocabulary import ABVerdict
from tilegate.markdown import listing

NOISE_SCHEMA = "tilegate.ab-noise/1"


HOST = "#host"  # a noise row of a case's host time: "<case id>#host"


def host_key(key: str) -> str:
    return f"{key}{HOST}"


@dataclass(frozen=True)
class ABPolicy(TolerancePolicy):
    """How A/A noise (the spread of the A/A run ratios) becomes a tolerance, and how sure a
    verdict must be (alpha: the one-sided Wilcoxon signed-rank level)."""

    floor: float = 0.005  # 0.5 %: paired ratios hold far tighter than stored medians
    ceiling: float = 0.03  # also the tolerance of an uncalibrated case
    multiple: float = 3.5  # on the noise below: 4.4 x the RMS from 22 runs, 8 x from 3
    confidence: float = 0.99  # of the interval of the median ratio
    noise_confidence: float = 0.9  # of the upper bound of the A/A ratios' RMS (the noise)

    def as_json(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> ABPolicy:
        if not isinstance(data, dict):
            raise InputError(f"{where}: policy must be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"{where}: unknown policy key(s) {unknown}; known: {sorted(known)}")
        for k, v in data.items():
            if not is_finite_number(v) or not 0 < v < (100 if k == "multiple" else 1):
                raise InputError(f"{where}: policy {k} = {v!r} is out of range")
        policy = cls(**{k: float(v) for k, v in data.items()})
        if policy.floor > policy.ceiling:
            raise InputError(f"{where}: floor {policy.floor} > ceiling {policy.ceiling}")
        return policy


# Host times move between processes far more than GPU times (Liger's norm ops: up to 50 %), so
# a host verdict gets its own, wider bounds on the same shape of policy
HOST_POLICY = ABPolicy(floor=0.02, ceiling=0.25)


# --- the A/A noise file ----------------------------------------------------------------------


# A case's own A/A spread counts from this many runs on; below, its tolerance is at least the
# largest of the cases measured that often (source POOLED): one run's ratio says little of the next
MIN_NOISE_RUNS = 3
POOLED = "pooled"


@dataclass(frozen=True)
class NoiseRow:
    key: str
    run_ratios: tuple[float, ...]  # the A/A head/base ratio of each calibration run
    spread: float  # max |r - 1| over those runs (shown; the tolerance comes from `noise`)
    tolerance: float
    source: str  # "noise", "floor", "ceiling" or POOLED (too few runs of its own)
    noise: float  # upper bound of the RMS of r - 1 (stats.rms_upper_bound): tolerance / multiple


@dataclass(frozen=True)
class Noise:
    path: Path
    gpu: Mapping[str, Any]
    provenance: Mapping[str, Any]
    policy: ABPolicy
    rows: Mapping[str, NoiseRow]

    def tolerance(self, key: str) -> tuple[float, str]:
        row = self.rows.get(key)
        if row is None:
            ceiling = HOST_POLICY.ceiling if key.endswith(HOST) else self.policy.ceiling
            return ceiling, f"uncalibrated: {key} not in {self.path}"
        return row.tolerance, f"A/A noise ({row.source}, {len(row.run_ratios)} runs)"


def _pairs(run: Run, key: str) -> tuple[Row, Row] | None:
    head, base = run.rows.get(key), run.base_rows.get(key)
    return (head, base) if head is not None and base is not None else None


def _aligned(run: Run, head: Row, base: Row) -> tuple[np.ndarray, np.ndarray]:
    """The head's and the base's samples of every round both were timed in (an A/B budget times
    some base rows in fewer rounds: Row.timed_in, tilegate.harness.budget); InputError when they
    share none or, with no round ranges, the counts differ."""
    if head.timed_in is not None or base.timed_in is not None:
        from tilegate.judge.rounds import aligned

        h, b = aligned(head.samples_s, head.timed_in, base.samples_s, base.timed_in)
        if not h:
            raise InputError(
                f"results file {run.path}, row {head.key}: head and base share no timed round"
            )
        return np.asarray(h), np.asarray(b)
    if len(head.samples_s) != len(base.samples_s):
        raise InputError(
            f"results file {run.path}, row {head.key}: head and base have {len(head.samples_s)} "
            f"and {len(base.samples_s)} samples; an A/B pair is timed in the same rounds"
        )
    return np.asarray(head.samples_s), np.asarray(base.samples_s)


def _pooled_medians(sides: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """The base's and the head's medians over the paired rounds of every run (`_aligned`'s)."""
    return (
        float(np.median(np.concatenate([b for _, b in sides]))),
        float(np.median(np.concatenate([h for h, _ in sides]))),
    )


def _per_round(run: Run, head: Row, base: Row) -> np.ndarray:
    """head_i / base_i for every round both were timed in (`_aligned`)."""
    h, b = _aligned(run, head, base)
    return h / b


def build_noise(runs: Sequence[Run], out: Path, policy: ABPolicy = ABPolicy()) -> Noise:
    """The noise file from A/A runs (REF = HEAD); InputError for anything that is not A/A."""
    if not runs:
        raise InputError("ab-noise needs A/A results files (`tilegate perf --ab HEAD`)")
    slugs = {r.env.gpu.slug for r in runs}
    if len(slugs) != 1:
        raise InputError(f"the A/A runs are of different GPU models: {sorted(slugs)}")
    for run in runs[1:]:
        differs = gpu_mismatch(runs[0].env.gpu, run.env.gpu)
        if differs:
            raise InputError(
                f"the A/A runs {runs[0].path} and {run.path} are of different GPUs "
                f"({', '.join(differs)}), though both are labelled {run.env.gpu.slug}"
            )
    per_key: dict[str, list[float]] = {}
    for run in runs:
        if run.env.ab is None or not run.base_rows:
            raise InputError(f"results {run.path} is not an A/B run (no base rows)")
        if run.env.injected:
            raise InputError(f"results {run.path} ran with TEST-ONLY injections: not A/A")
        budgeted = sorted(
            k
            for k, b in run.base_rows.items()
            if k in run.rows
            and b.timed_in is not None
            and len(b.samples_s) < len(run.rows[k].samples_s)
        )
        if budgeted:
            raise InputError(
                f"results {run.path} timed the base side of {listing(budgeted)} in fewer rounds "
                "(the A/B budget): A/A calibration needs both sides every round; measure with "
                "--perf-ab-full (`tilegate ab-noise --measure N` does)"
            )
        changed = [
            k
            for k, base in run.base_rows.items()
            if k in run.rows and run.rows[k].code_hash != base.code_hash
        ]
        if changed:
            raise InputError(
                f"results {run.path} is not an A/A run: the compiled code differs for "
                f"{listing(changed)}; measure with REF = the head (`--ab HEAD`)"
            )
        for key in run.base_rows:
            pair = _pairs(run, key)
            if pair is not None:
                per_key.setdefault(key, []).append(float(np.median(_per_round(run, *pair))))
                hosts = _on_host(pair[0], pair[1])
                if hosts is not None:
                    ratio = float(np.median(_per_round(run, *hosts)))
                    per_key.setdefault(host_key(key), []).append(ratio)
    noise_of = {
        key: stats.rms_upper_bound([r - 1.0 for r in ratios], policy.noise_confidence)
        for key, ratios in per_key.items()
    }
    own = {
        key: (HOST_POLICY if key.endswith(HOST) else policy).tolerance(noise_of[key])
        for key in per_key
    }
    # A case seen in fewer than MIN_NOISE_RUNS runs (a default-profile case beside quick runs)
    # has a spread that says too little: it gets at least the largest tolerance of the cases
    # that were seen often enough, or the ceiling when none was.
    pooled = max(
        (
            t.value
            for key, t in own.items()
            if len(per_key[key]) >= MIN_NOISE_RUNS and not key.endswith(HOST)
        ),
        default=policy.ceiling,
    )
    pooled_host = max(
        (
            t.value
            for key, t in own.items()
            if len(per_key[key]) >= MIN_NOISE_RUNS and key.endswith(HOST)
        ),
        default=HOST_POLICY.ceiling,
    )
    rows = {}
    for key, ratios in sorted(per_key.items()):
        spread, tol = max(abs(r - 1.0) for r in ratios), own[key]
        if key.endswith(HOST) and len(ratios) < MIN_NOISE_RUNS and tol.value < pooled_host:
            row = NoiseRow(key, tuple(ratios), spread, pooled_host, POOLED, noise_of[key])
            rows[key] = row
        elif len(ratios) < MIN_NOISE_RUNS and tol.value < pooled and not key.endswith(HOST):
            rows[key] = NoiseRow(key, tuple(ratios), spread, pooled, POOLED, noise_of[key])
        else:
            rows[key] = NoiseRow(key, tuple(ratios), spread, tol.value, tol.bound, noise_of[key])
    env = runs[0].env
    provenance = {
        "tool": f"tilegate {__version__}",
        "software": dict(env.software),
        "driver": env.gpu.driver,
        "cuda": env.gpu.cuda,
        "profiles": sorted({r.env.profile for r in runs}),
        "runs": [
            {"file": r.path.name, "datetime": r.env.datetime, "commit": r.env.commit} for r in runs
        ],
    }
    gpu = {
        "name": env.gpu.name,
        "slug": env.gpu.slug,
        "sm_count": env.gpu.sm_count,
        "capability": list(env.gpu.capability) if env.gpu.capability else None,
    }
    return Noise(out, MappingProxyType(gpu), MappingProxyType(provenance), policy, rows)


def noise_json(noise: Noise) -> dict[str, Any]:
    """The noise file's JSON (tilegate.store.files writes it)."""
    return {
        "schema": NOISE_SCHEMA,
        "gpu": dict(noise.gpu),
        "provenance": dict(noise.provenance),
        "policy": noise.policy.as_json(),
        "rows": {
            k: {
                "run_ratios": [round(r, 5) for r in row.run_ratios],
                "spread": round(row.spread, 5),
                "noise": round(row.noise, 5),
                "tolerance": round(row.tolerance, 4),
                "source": row.source,
            }
            for k, row in noise.rows.items()
        },
    }


def parse_noise(data: Any, path: Path) -> Noise:
    """Validate a noise file's JSON (read by tilegate.store.files); InputError naming the file
    (and row) on any problem."""
    where = f"A/B noise file {path}"
    if not isinstance(data, dict) or data.get("schema") != NOISE_SCHEMA:
        raise InputError(
            f"{where} is not a tilegate A/B noise file (schema {NOISE_SCHEMA}); "
            "re-record it with `tilegate ab-noise --measure 4`"
        )
    gpu, rows_raw = data.get("gpu"), data.get("rows")
    if not isinstance(gpu, dict) or not isinstance(gpu.get("slug"), str):
        raise InputError(f"{where}: gpu.slug is missing")
    if not isinstance(rows_raw, dict):
        raise InputError(f"{where}: rows must be an object of case id -> noise")
    policy = ABPolicy.from_json(data.get("policy", {}), where)
    rows = {}
    for key, raw in rows_raw.items():
        ok = (
            isinstance(raw, dict)
            and isinstance(raw.get("run_ratios"), list)
            and all(is_finite_number(r) and r > 0 for r in raw["run_ratios"])
            and is_finite_number(raw.get("spread"))
            and is_finite_number(raw.get("tolerance"))
            and 0 < raw["tolerance"] < 1
            and (raw.get("noise") is None or is_finite_number(raw["noise"]))
        )
        if not ok:
            raise InputError(
                f"{where}, row {key}: needs run_ratios, spread, a tolerance in (0, 1) and a "
                "finite noise if it has one; re-record it with `tilegate ab-noise --measure 4`"
            )
        rows[key] = NoiseRow(
            key,
            tuple(float(r) for r in raw["run_ratios"]),
            float(raw["spread"]),
            float(raw["tolerance"]),
            str(raw.get("source", "")),
            # a file written before the noise was stored: the same bound, from its ratios
            float(raw["noise"])
            if raw.get("noise") is not None
            else stats.rms_upper_bound(
                [float(r) - 1.0 for r in raw["run_ratios"]] or [0.0], policy.noise_confidence
            ),
        )
    raw_prov = data.get("provenance")
    provenance: dict[str, Any] = raw_prov if isinstance(raw_prov, dict) else {}
    if not isinstance(provenance.get("runs") or [], list):
        raise InputError(f"{where}: provenance.runs must be the list of A/A runs it came from")
    return Noise(path, MappingProxyType(gpu), MappingProxyType(provenance), policy, rows)


# --- the verdict -------------------------------------------------------------------------------


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
    # the medians of the same paired rounds the ratio pools (every run): the row's numbers all
    # come from one set of samples
    head_median_s: float | None = None
    base_median_s: float | None = None
    modes: tuple[Mode, ...] = ()  # UNSTABLE: its two modes, the faster first (judge.modes)
    # autotuned: "tuner flip" or "code change" where the sides picked differently
    # (tilegate.judge.autotune), and the why line naming the picks
    explained_by: str | None = None
    picks: str | None = None
    # which time bounds the call and was judged: "gpu" or "host" (tilegate.harness.timing);
    # the other one's paired ratio, reported
    judged_on: str = "gpu"
    host_ratio: float | None = None
    gpu_ratio: float | None = None
    # judged on the host: the GPU time's medians over the same paired rounds (base, head), the
    # table's base and head columns (head_median_s / base_median_s are then the host time's)
    gpu_medians_s: tuple[float, float] | None = None
    # a tuner flip re-timed with both sides on one config (Row.pinned): the config both ran
    # (`BK=64, num_warps=4`) and the ratio as each side picked; `ratio`, `ci` and the verdict
    # are then the re-time's
    pinned: str | None = None
    picked_ratio: float | None = None
    # a SLOWER verdict a second run cannot overturn (tilegate.judge.confirm.beyond_doubt), set
    # once by the Judgement (tilegate.judge.gate.judgement): the report reads it
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
        return any(r.host_bound for r in rows)

    @property
    def variant(self) -> str:
        row = self.head or self.base
        assert row is not None
        return row.variant


@dataclass(frozen=True)
class ABComparison:
    run: Run
    confirmations: tuple[Run, ...]
    cases: tuple[ABCase, ...]
    noise: Noise | None
    policy: ABPolicy = field(default_factory=ABPolicy)

    @property
    def ref(self) -> str:
        ab = self.run.env.ab or {}
        return str(ab.get("ref") or ab.get("sha") or "the base")

    @property
    def sha(self) -> str:
        return str((self.run.env.ab or {}).get("sha") or "")

    @property
    def processes(self) -> int:
        """How many processes measured the sides: 2 (each side a process of its own), or 1
        (both versions of a package that imports itself relatively, in one; tilegate.harness.sides)."""
        return int((self.run.env.ab or {}).get("processes") or 1)

    def by(self, *verdicts: ABVerdict) -> list[ABCase]:
        return [c for c in self.cases if c.verdict in verdicts]

    def suspects(self) -> list[str]:
        """The cases a re-measurement could still decide otherwise (tilegate.judge.confirm says
        which of them are already beyond doubt)."""
        return [c.key for c in self.by(ABVerdict.SLOWER, ABVerdict.AMBIGUOUS, ABVerdict.UNSTABLE)]

    @property
    def same_code(self) -> frozenset[str]:
        """The cases whose compiled code is the base's: never blamed, and a stored-baseline
        slowdown of theirs is drift, not this pull request's (tilegate.judge.outcome)."""
        return frozenset(c.key for c in self.cases if c.code_changed is False)

    @property
    def no_slower(self) -> frozenset[str]:
        """The cases whose code changed that the A/B decided no slower than their base on their
        GPU time (SAME or FASTER: timed beside the base in the same rounds). A stored-baseline
        slowdown of theirs is the base's too: drift since the baseline, not this pull request's
        (tilegate.judge.outcome). Not a host-judged case: the stored baseline is GPU time."""
        return frozenset(
            c.key
            for c in self.cases
            if c.code_changed is not False
            and c.judged_on == "gpu"
            and c.verdict in (ABVerdict.SAME, ABVerdict.FASTER)
        )

    @property
    def not_blamed(self) -> frozenset[str]:
        """The cases a stored-baseline slowdown cannot be blamed on this pull request for:
        its code is the base's (same_code), or the A/B found it no slower than the base
        (no_slower)."""
        return self.same_code | self.no_slower

    @property
    def changed_code(self) -> list[str]:
        """The variants whose compiled code differs between head and base (any case)."""
        return sorted({c.variant for c in self.cases if c.code_changed})


def _wilcoxon(logs: np.ndarray, alternative: str) -> float:
    nonzero = logs[logs != 0]
    if len(nonzero) < 2:
        return 1.0
    p = float(stats.scipy_stats().wilcoxon(nonzero, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def judge_case(
    key: str,
    pairs: Sequence[tuple[Run, Row, Row]],
    tolerance: float,
    tolerance_source: str,
    policy: ABPolicy,
    *,
    as_changed: bool = False,
) -> ABCase:
    """The verdict of one case measured in one or more runs (the first, then confirmations).
    `as_changed`: judged on its time as a changed case is, whatever its identity (a tuner
    flip's re-time on one config, `_retimed`)."""
    head_run, head, base = pairs[0]
    changed = None
    if head.code_hash and base.code_hash:
        changed = head.code_hash != base.code_hash
    if as_changed:
        changed = True
    sides = [_aligned(run, h, b) for run, h, b in pairs]
    per_run = [h / b for h, b in sides]
    run_ratios = tuple(float(np.median(r)) for r in per_run)
    pooled = np.concatenate(per_run)
    ratio = float(np.median(pooled))
    lo, hi = stats.median_ci(sorted(pooled.tolist()), policy.confidence)
    logs = np.log(pooled)
    p_slower, p_faster = _wilcoxon(logs, "greater"), _wilcoxon(logs, "less")
    base_median, head_median = _pooled_medians(sides)
    measured = ABCase(
        key,
        ABVerdict.AMBIGUOUS,
        head,
        base,
        ratio=ratio,
        ci=(lo, hi),
        run_ratios=run_ratios,
        p_slower=p_slower,
        p_faster=p_faster,
        tolerance=tolerance,
        tolerance_source=tolerance_source,
        code_changed=changed,
        base_median_s=base_median,
        head_median_s=head_median,
    )
    split = _split_picks(pairs)
    if split is not None:
        return replace(measured, verdict=ABVerdict.UNSTABLE, note=split)
    picks = autotune.line(base.autotune, head.autotune)
    same = None if changed is None else not changed
    flip = autotune.classify(same, base.autotune, head.autotune)
    measured = replace(measured, explained_by=flip, picks=picks)
    if flip == autotune.TUNER_FLIP:
        # re-timed with both sides on one config (tilegate.harness.measure): judged on that
        on_one = [
            (run, h.pinned, b.pinned)
            for run, h, b in pairs
            if h.pinned is not None and b.pinned is not None
        ]
        if len(on_one) == len(pairs):
            judged = judge_case(key, on_one, tolerance, tolerance_source, policy, as_changed=True)
            return _retimed(measured, judged, smoke=head_run.env.smoke)
        note = (
            f"tuner flip ({picks}): the same source and configs, another pick; its "
            f"{ratio - 1:+.1%} is the pick's, not this change's (not blamed; not re-timed on "
            "one config)"
        )
        return replace(measured, verdict=ABVerdict.UNCHANGED, note=note)
    if changed is False:
        moved = ratio - 1
        # a smoke run's times (the CPU interpreter, tiny shapes) mean nothing: only GPU times
        # can say that something outside the identity moved them
        timed = not head_run.env.smoke
        if timed and abs(moved) > max(MOVED_TOLERANCES * tolerance, MOVED_MIN):
            note = (
                f"the code is the same but the time moved by {moved:+.1%}: something outside "
                "the identity changed (not noise: more than "
                f"{MOVED_TOLERANCES:g} x the {tolerance:.1%} tolerance and {MOVED_MIN:.0%})"
            )
            return replace(measured, verdict=ABVerdict.INCONSISTENT, note=note)
        note = "same code on both sides (the whole case's identity): the ratio is noise"
        return replace(measured, verdict=ABVerdict.UNCHANGED, note=note)
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
    unstable = _unstable(measured, per_run, [_passes(h, b) for _, h, b in pairs], policy)
    if unstable is not None:
        return unstable
    runs_slower = stats.majority([r - 1 > tolerance for r in run_ratios])
    runs_faster = stats.majority([r - 1 < -tolerance for r in run_ratios])
    if lo - 1 > tolerance and p_slower < policy.alpha and runs_slower:
        verdict, note = ABVerdict.SLOWER, "slower than the tolerance over the whole interval"
    elif hi - 1 < -tolerance and p_faster < policy.alpha and runs_faster:
        verdict, note = ABVerdict.FASTER, "faster than the tolerance over the whole interval"
    elif lo - 1 >= -tolerance and hi - 1 <= tolerance:
        verdict, note = ABVerdict.SAME, ""
    elif (lo > 1 and p_slower < policy.alpha) or (hi < 1 and p_faster < policy.alpha):
        # significant, but by about the tolerance: more rounds narrow the interval around the
        # tolerance and seldom decide it; say what is known (a change of that size, and its side)
        side = "slower" if lo > 1 else "faster"
        about = (
            f"{side} than the base ({lo - 1:+.2%} .. {hi - 1:+.2%}), by about its "
            f"{tolerance:.2%} tolerance"
        )
        if any(h.budget_stopped == "cap" for _, h, _ in pairs):
            # its rounds are spent: the boundaries meet at the cap, the median decides
            majority = runs_slower if side == "slower" else runs_faster
            verdict, note = _at_cap(ratio, tolerance, side, majority, about)
            measured = replace(measured, by_median=verdict is not ABVerdict.AMBIGUOUS)
        else:
            verdict, note = ABVerdict.AMBIGUOUS, f"{about}: the interval crosses it"
    else:
        verdict, note = ABVerdict.AMBIGUOUS, "the interval crosses the tolerance: measure more"
    if _mixed(measured):
        return _mixture(measured, note)
    if verdict in (ABVerdict.SLOWER, ABVerdict.FASTER) and not _agrees(measured, verdict):
        verdict = ABVerdict.AMBIGUOUS
        note = (
            f"{note}; but the medians of the same rounds point the other way "
            f"({_medians_change(measured):+.2%}): measure more"
        )
    if changed is None:
        note = "; ".join(filter(None, [note, "no code hash on a side: identity unknown"]))
    if flip == autotune.CODE_CHANGE:
        note = "; ".join(filter(None, [f"code change, another pick ({picks})", note]))
    return replace(measured, verdict=verdict, note=note)


def _retimed(picked: ABCase, on_one: ABCase, *, smoke: bool = False) -> ABCase:
    """A tuner flip's verdict from its re-time with both sides on one config (`on_one`, judged
    as a changed case is): within the tolerance there, the pick explains the difference (a
    tuner flip: UNCHANGED, never blamed); SLOWER or FASTER there, it does not (a code change
    the identity does not see, judged on the re-time); undecided there, neither is shown. The
    verdict, ratio and interval are the re-time's; the as-picked ratio is kept beside them.
    A smoke run's times (the CPU interpreter) cannot show what the identity does not see (as
    for SAME CODE, TIME MOVED): its flip stays a tuner flip, the re-time's number shown."""
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
    """UNSTABLE's note when one side's processes (a run and its confirmations) picked
    differently, or a tuner re-tuned in the identity's call; None otherwise."""
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


def _on_host(head: Row, base: Row) -> tuple[Row, Row] | None:
    """The pair with their host times as samples, where both have them; else None."""
    h, b = head.host_samples_s, base.host_samples_s
    if h is None or b is None:
        return None
    pinned = (
        _on_host(head.pinned, base.pinned)
        if head.pinned is not None and base.pinned is not None
        else None
    )
    return (
        replace(head, samples_s=h, median_s=float(np.median(h)), pinned=pinned and pinned[0]),
        replace(base, samples_s=b, median_s=float(np.median(b)), pinned=pinned and pinned[1]),
    )


def _host_bound(pairs: Sequence[tuple[Run, Row, Row]]) -> bool:
    """Whether the host bounds the call: either side host-bound in the first run."""
    _, head, base = pairs[0]
    return bool(head.host_bound or base.host_bound) and _on_host(head, base) is not None


def judge_bound(
    key: str,
    pairs: Sequence[tuple[Run, Row, Row]],
    noise: Noise | None,
    policy: ABPolicy,
) -> ABCase:
    """The verdict on the time that bounds the call (module docstring): GPU time, or host time
    for a host-bound case; the other time's paired ratio reported beside it."""

    def tolerance(k: str) -> tuple[float, str]:
        if noise is not None:
            return noise.tolerance(k)
        ceiling = HOST_POLICY.ceiling if k.endswith(HOST) else policy.ceiling
        return ceiling, "uncalibrated: no noise file"

    hosts = [(run, *pair) for run, h, b in pairs if (pair := _on_host(h, b)) is not None]
    # host times of two processes are not a pair: one process's Python runs 20-80 % slower
    # than another's on the same code (an A/A of two processes on the H200, docs/results-h200.md):
    # with a process per side, a host-bound case is judged on its kernels' time (held), its host
    # time reported
    apart = any(int((run.env.ab or {}).get("processes") or 1) > 1 for run, _, _ in pairs)
    host_ratio = (
        float(np.median(np.concatenate([_per_round(run, h, b) for run, h, b in hosts])))
        if len(hosts) == len(pairs)
        else None
    )
    if not _host_bound(pairs) or len(hosts) != len(pairs) or apart:
        judged = judge_case(key, pairs, *tolerance(key), policy)
        judged = replace(judged, host_ratio=host_ratio)
        host_tol, _ = tolerance(host_key(key))
        host_bound = any(h.host_bound or b.host_bound for _, h, b in pairs)
        unpaired = (
            "the sides are two processes, whose host times do not pair"
            if apart
            else "its host samples do not cover its rounds"
        )
        said = None
        if host_ratio is not None and host_ratio - 1 > host_tol and judged.verdict in _TIMED:
            why = unpaired if host_bound else "the GPU bounds the call"
            said = (
                f"host time {host_ratio - 1:+.1%} per call (beyond its {host_tol:.1%} host "
                f"tolerance): reported, not judged, {why}"
            )
        elif host_bound and all(h.held and b.held for _, h, b in pairs):
            said = f"host-bound, judged on the GPU time of its held rounds: {unpaired}"
        elif host_bound:  # its first warm-up read it GPU-bound: its rounds were not held
            said = (
                "host-bound, but not held (its first warm-up read it GPU-bound): its GPU time "
                "is the rate of its launches more than its kernels' time"
            )
        return replace(judged, note="; ".join(filter(None, [judged.note, said])))
    judged = judge_case(key, hosts, *tolerance(host_key(key)), HOST_POLICY)
    on_gpu = judge_case(key, pairs, *tolerance(key), policy)
    _, head, base = pairs[0]
    gpu_sides = [_aligned(run, h, b) for run, h, b in pairs]
    gpu_ratio = float(np.median(np.concatenate([h / b for h, b in gpu_sides])))
    bound = (
        f"host-bound (host {head.host_s * 1e3 if head.host_s else 0:.4g} ms >= GPU "
        f"{head.median_s * 1e3:.4g} ms per call)"
    )
    if on_gpu.fails and not judged.fails:
        # its kernels slower beyond the GPU tolerance: they bound the call once slow enough
        # (a head whose kernels outgrow its host time is no longer host-bound), and outside a
        # benchmark's loop the host runs ahead of them; the host time hides no kernel slowdown
        said = (
            f"{bound}: judged on both times, its kernels' time slower (host "
            f"{judged.ratio - 1:+.1%}, within its {judged.tolerance:.1%} host tolerance)"
            if judged.ratio is not None and judged.tolerance is not None
            else f"{bound}: judged on both times, its kernels' time slower"
        )
        return replace(
            on_gpu, host_ratio=judged.ratio, note="; ".join(filter(None, [said, on_gpu.note]))
        )
    said = (
        f"{bound}: judged on the host time; GPU {gpu_ratio - 1:+.1%}, judged too: not found slower"
    )
    return replace(
        judged,
        head=head,
        base=base,
        judged_on="host",
        host_ratio=judged.ratio,
        gpu_ratio=gpu_ratio,
        gpu_medians_s=_pooled_medians(gpu_sides),
        note="; ".join(filter(None, [said, judged.note])),
    )


_TIMED = (ABVerdict.SAME, ABVerdict.FASTER, ABVerdict.SLOWER, ABVerdict.AMBIGUOUS)


UNSTABLE_TODO = (
    "measure it alone (`--perf-variants`), in several processes, and look for what switches "
    "(an autotuner's pick, clocks, host time: hold_host); an unstable case is judged on neither "
    "mode's share"
)


def _passes(head: Row, base: Row) -> list[int] | None:
    """The timing pass of each round the pair shares (`_aligned`'s rounds), from the head's
    sweeps (every sweep times its group's rounds_per_pass rounds); None if not recorded."""
    if not head.sweeps:
        return None
    per_pass = len(head.samples_s) // head.sweeps
    from tilegate.judge.rounds import common_rounds

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
    modes = find_modes(
        [r.tolist() for r in per_run],
        case.tolerance,
        passes=passes,
        confidence=policy.confidence,
        alpha=policy.alpha,
    )
    if not modes:
        return None
    slow = [m for m in modes if m.slower]
    verdict = (
        "a mode is slower than the tolerance on its own rounds: a regression"
        if slow
        else "no mode is slower on its own rounds: it cannot be judged"
    )
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


def _agrees(case: ABCase, verdict: ABVerdict) -> bool:
    """The row's head and base medians (the same pooled rounds as the ratio) on the side of 1
    that the ratio and its interval are on."""
    if case.head_median_s is None or case.base_median_s is None:
        return True
    if verdict is ABVerdict.SLOWER:
        return case.head_median_s > case.base_median_s
    return case.head_median_s < case.base_median_s


def _mixture(case: ABCase, note: str) -> ABCase:
    """The median of the per-round ratios and the ratio of the medians of the same rounds far
    apart: the rounds are a mixture (a round's speed moves both sides by more than the change),
    which no verdict on either number can stand on."""
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
    """A significant change whose interval still crosses the tolerance after every round the
    budget allows (the cap): decided by its median, as a sequential test whose boundaries meet
    at its last look. Its interval says it is within about a half-width of the tolerance, so a
    change of that size may go either way; one that is not significant stays AMBIGUOUS."""
    beyond = ratio - 1 > tolerance if side == "slower" else ratio - 1 < -tolerance
    how = f"{about}; its rounds reached the cap, so its median ({ratio - 1:+.2%}) decides"
    if not beyond:
        return ABVerdict.SAME, f"{how}: within the tolerance"
    if not majority:
        return ABVerdict.AMBIGUOUS, f"{how}, but most of its runs are within the tolerance"
    verdict = ABVerdict.SLOWER if side == "slower" else ABVerdict.FASTER
    return verdict, f"{how}: beyond the tolerance"


def compare_ab(
    run: Run,
    noise: Noise | None,
    confirmations: Sequence[Run] = (),
    policy: ABPolicy | None = None,
    *,
    accept_removed: bool = False,
) -> ABComparison:
    """Judge every case of an A/B run; confirmation runs re-measure some of its groups."""
    if run.env.ab is None:
        raise InputError(f"results {run.path} is not an A/B run (`tilegate perf --ab REF`)")
    if noise is not None and noise.gpu.get("slug") != run.env.gpu.slug:
        raise InputError(
            f"A/B noise file {noise.path} is for {noise.gpu.get('slug')}, the run for "
            f"{run.env.gpu.slug}: record one on this GPU with `tilegate ab-noise --measure 4`"
        )
    differs = gpu_mismatch(noise.gpu, run.env.gpu) if noise is not None else []
    if noise is not None and differs:
        raise InputError(
            f"A/B noise file {noise.path} was recorded on {describe_gpu(noise.gpu)} but results "
            f"{run.path} on {describe_gpu(run.env.gpu)}, both labelled {run.env.gpu.slug}: "
            f"{', '.join(differs)}. Another GPU's noise is not this one's: fix the label, or "
            "record its noise with `tilegate ab-noise --measure 4`"
        )
    for conf in confirmations:
        if (conf.env.ab or {}).get("sha") != run.env.ab.get("sha"):
            raise InputError(
                f"confirmation {conf.path} is not an A/B run against the same base as {run.path}"
            )
    policy = policy or (noise.policy if noise is not None else ABPolicy())
    cases = []
    reference = {r.variant for r in run.rows.values() if r.reference}
    for key in sorted(set(run.rows) | set(run.base_rows), key=_order(run)):
        head, base = run.rows.get(key), run.base_rows.get(key)
        if head is not None and head.variant in reference:
            continue  # measured once, on neither side: judged by the stored baseline
        if base is None:
            cases.append(
                ABCase(key, ABVerdict.NEW, head, None, note="only in the head: not judged")
            )
            continue
        if head is None and base.variant in (run.env.registry or ()):
            continue  # the head has the variant but no row of the case (it failed or was
            # skipped): not removed; the coverage names it and why (tilegate.judge.coverage)
        if head is None:
            note = (
                f"variant {base.variant} is in the base, not in the head (removed, not renamed: "
                "a rename says `renamed_from=`)"
                + (": acknowledged" if accept_removed else ": fails until acknowledged")
            )
            cases.append(
                ABCase(key, ABVerdict.REMOVED, None, base, note=note, acknowledged=accept_removed)
            )
            continue
        pairs = [(run, head, base)]
        for conf in confirmations:
            pair = _pairs(conf, key)
            if pair is not None:
                pairs.append((conf, *pair))
        judged = judge_bound(key, pairs, noise, policy)
        olds = getattr(run.env, "renamed", {}).get(head.variant)
        if olds:
            renamed = f"renamed from {' / '.join(olds)}: judged against the base's {olds[0]}"
            judged = replace(judged, note="; ".join(filter(None, [renamed, judged.note])))
        cases.append(judged)
    return ABComparison(run, tuple(confirmations), tuple(cases), noise, policy)


def _order(run: Run) -> Any:
    order = run.variant_order

    def key(case_id: str) -> tuple[Any, ...]:
        row = run.rows.get(case_id) or run.base_rows[case_id]
        return row_order(row.params, row.variant, run.env.axes, order)

    return key
