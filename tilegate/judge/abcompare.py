"""A/B: every case of an A/B run judged against its base (an `ABComparison`), on the time that
bounds its call; a variant only the head has is NEW, one only the base has REMOVED (fails unless
acknowledged), a renamed one (`renamed_from=`) paired with its old self.

A host-bound case (host time per call at or above the GPU time, on either side) is judged on its
paired per-round host times against its `<case>#host` A/A tolerance, and on its GPU time too:
its kernels slower than their tolerance fail it (a head whose kernels outgrow its host time is no
longer host-bound, and outside a benchmark's loop the host runs ahead of the kernels; judged on
the host time alone, a +27 % kernel of fla's gla backward, host 1.3 ms for a 1.18 ms GPU time,
would pass). A GPU-bound case's host time beyond its tolerance is reported, never failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from tilegate.errors import InputError
from tilegate.judge import hostprocs
from tilegate.judge.abcase import ABCase, judge_case
from tilegate.judge.abnoise import (
    HOST,
    HOST_POLICY,
    ABPolicy,
    Noise,
    aligned_pair,
    host_key,
    on_host,
    pair_of,
    per_round,
    pooled_medians,
)
from tilegate.judge.results import Row, Run
from tilegate.judge.vocabulary import ABVerdict


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
        """The cases a re-measurement could still decide otherwise (judge.confirm)."""
        return [c.key for c in self.by(ABVerdict.SLOWER, ABVerdict.AMBIGUOUS, ABVerdict.UNSTABLE)]

    @property
    def same_code(self) -> frozenset[str]:
        """The cases whose compiled code is the base's: never blamed (judge.outcome)."""
        return frozenset(c.key for c in self.cases if c.code_changed is False)

    @property
    def no_slower(self) -> frozenset[str]:
        """Changed cases the A/B decided SAME or FASTER on their GPU time (the stored baseline's
        time): a stored-baseline slowdown of theirs is the base's too, drift since the baseline."""
        return frozenset(
            c.key
            for c in self.cases
            if c.code_changed is not False
            and c.judged_on == "gpu"
            and c.verdict in (ABVerdict.SAME, ABVerdict.FASTER)
        )

    @property
    def not_blamed(self) -> frozenset[str]:
        """The cases a stored slowdown is not this pull request's: same_code | no_slower."""
        return self.same_code | self.no_slower

    @property
    def changed_code(self) -> list[str]:
        """The variants whose compiled code differs between head and base (any case)."""
        return sorted({c.variant for c in self.cases if c.code_changed})


def judge_bound(
    key: str,
    pairs: Sequence[tuple[Run, Row, Row]],
    noise: Noise | None,
    policy: ABPolicy,
) -> ABCase:
    """The verdict on the time that bounds the call (the module's docstring)."""

    def tolerance(k: str) -> tuple[float, str]:
        if noise is not None:
            return noise.tolerance(k)
        ceiling = HOST_POLICY.ceiling if k.endswith(HOST) else policy.ceiling
        return ceiling, "uncalibrated: no noise file"

    hosts = [(run, *pair) for run, h, b in pairs if (pair := on_host(h, b)) is not None]
    # host times of two processes are not a pair: one process's Python runs 20-80 % slower
    # than another's on the same code (an A/A of two processes on the H200, docs/results-h200.md):
    # with a process per side, a host-bound case is judged on its kernels' time (held), its host
    # time reported
    apart = any(int((run.env.ab or {}).get("processes") or 1) > 1 for run, _, _ in pairs)
    host_ratio = (
        float(np.median(np.concatenate([per_round(run, h, b) for run, h, b in hosts])))
        if len(hosts) == len(pairs)
        else None
    )
    procs = hostprocs.judge(key, pairs, *tolerance(host_key(key)), HOST_POLICY) if apart else None
    _, head, base = pairs[0]  # host-bound: either side in the first run
    if procs is None and (
        not (head.host_bound or base.host_bound) or len(hosts) != len(pairs) or apart
    ):
        judged = judge_case(key, pairs, *tolerance(key), policy)
        judged = replace(judged, host_ratio=host_ratio)
        host_tol, _ = tolerance(host_key(key))
        host_bound = any(h.host_bound or b.host_bound for _, h, b in pairs)
        unpaired = "its host samples do not cover its rounds"
        if apart:
            unpaired = "the sides are two processes, whose host times do not pair"
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
        said = (hostprocs.waits_inside(pairs) if host_bound else None) or said
        return replace(judged, note="; ".join(filter(None, [judged.note, said])))
    judged = procs or judge_case(key, hosts, *tolerance(host_key(key)), HOST_POLICY)
    on_gpu = judge_case(key, pairs, *tolerance(key), policy)
    if procs is not None and on_gpu.verdict not in _TIMED:  # the same code: the GPU's word
        return replace(on_gpu, host_ratio=procs.ratio, note=f"{on_gpu.note}; {procs.note}")
    gpu_sides = [aligned_pair(run, h, b) for run, h, b in pairs]
    gpu_ratio = float(np.median(np.concatenate([h / b for h, b in gpu_sides])))
    bound = (
        f"host-bound (host {head.host_s * 1e3:.4g} ms >= GPU {head.median_s * 1e3:.4g} ms per call)"
        if head.host_s
        else "host-bound (the interpreter's calls are all host time)"
    )
    if on_gpu.fails and not judged.fails:  # the host time hides no kernel slowdown (module doc)
        said = (
            f"{bound}: judged on both times, its kernels' time slower (host "
            f"{judged.ratio - 1:+.1%}, within its {judged.tolerance:.1%} host tolerance)"
            if judged.ratio is not None and judged.tolerance is not None
            else f"{bound}: judged on both times, its kernels' time slower"
        )
        return replace(
            on_gpu, host_ratio=judged.ratio, note="; ".join(filter(None, [said, on_gpu.note]))
        )
    said = f"{bound}: judged on the host time; GPU {gpu_ratio - 1:+.1%}, judged too: " + (
        "slower too" if on_gpu.fails else "not found slower"
    )
    return replace(
        judged,
        head=head,
        base=base,
        judged_on="host",
        host_ratio=judged.ratio,
        gpu_ratio=gpu_ratio,
        gpu_medians_s=pooled_medians(gpu_sides),
        note="; ".join(filter(None, [said, judged.note])),
    )


_TIMED = (ABVerdict.SAME, ABVerdict.FASTER, ABVerdict.SLOWER, ABVerdict.AMBIGUOUS)


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
    record = "record one on this GPU with `tilegate ab-noise --measure 4`"
    if noise is not None and noise.slug != run.env.gpu.slug:
        raise InputError(
            f"A/B noise file {noise.path} is for {noise.slug}, the run for {run.env.gpu.slug}: "
            f"{record}"
        )
    if noise is not None:
        remedy = "Another GPU's noise is not this one's: fix the label, or record its noise with"
        noise.ensure_gpu_of(run, "A/B noise file", f"{remedy} `tilegate ab-noise --measure 4`")
    for conf in (c for c in confirmations if (c.env.ab or {}).get("sha") != run.env.ab.get("sha")):
        raise InputError(
            f"confirmation {conf.path} is not an A/B run against the same base as {run.path}"
        )
    policy = policy or (noise.policy if noise is not None else ABPolicy())
    cases = []
    reference = {r.variant for r in run.rows.values() if r.reference}
    keys = set(run.rows) | set(run.base_rows)
    for key in sorted(keys, key=lambda k: run.sort_key(run.rows.get(k) or run.base_rows[k])):
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
            how = "acknowledged" if accept_removed else "fails until acknowledged"
            note = f"variant {base.variant} is in the base, not in the head (removed, not renamed: "
            note += f"a rename says `renamed_from=`): {how}"
            cases.append(
                ABCase(key, ABVerdict.REMOVED, None, base, note=note, acknowledged=accept_removed)
            )
            continue
        again = [(conf, *pair) for conf in confirmations if (pair := pair_of(conf, key))]
        pairs = [(run, head, base), *again]
        judged = judge_bound(key, pairs, noise, policy)
        olds = getattr(run.env, "renamed", {}).get(head.variant)
        if olds:
            renamed = f"renamed from {' / '.join(olds)}: judged against the base's {olds[0]}"
            judged = replace(judged, note="; ".join(filter(None, [renamed, judged.note])))
        cases.append(judged)
    return ABComparison(run, tuple(confirmations), tuple(cases), noise, policy)
