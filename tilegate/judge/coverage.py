"""Coverage: did the run measure every case and check every expectation it had to?

What a run must measure is the protocol's (perf_tests/): in an A/B run the BASE's, evaluated with
the base's variants (a pull request cannot drop a case by editing what it is measured under),
else the run's own. The plugin records it in machine_info.tilegate.coverage: the expected cases
and expectations, the run's grid before narrowing, the cases left out on purpose (--perf-variants,
--perf-axis, --perf-set, --perf-groups-of) and each case skipped or failed with why. An expected
case or stored-baseline row of the profile's grid not in the results, and a declared expectation
not checked, fail the run (tilegate.judge.outcome), each named with why; a case left out by the
command line is "not selected", never a failure (perf.yml never narrows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Missing:
    """A case the run had to measure and did not: its id and why."""

    key: str
    why: str


@dataclass(frozen=True)
class Coverage:
    protocol: str  # whose protocol said what to measure: "the base's (REF)" or "this run's"
    profile: str
    expected: int  # how many cases it had to measure
    missing: tuple[Missing, ...] = ()  # not measured: each fails the run
    expectations: tuple[str, ...] = ()  # declared by the protocol, not checked: each fails
    not_selected: tuple[str, ...] = ()  # left out on purpose by the command line
    # a variant's `unsupported` keeps them off this machine, and the base's version too (or,
    # outside A/B, no stored baseline row needs them): not measurable here, not a failure
    not_measurable: tuple[Missing, ...] = ()
    narrowed: tuple[str, ...] = ()  # the options that narrowed the run

    @property
    def fails(self) -> bool:
        return bool(self.missing or self.expectations)

    @property
    def parts(self) -> list[str]:
        """The headline's words for what fails."""
        counts = (
            (len(self.missing), "case", "measured"),
            (len(self.expectations), "expectation", "checked"),
        )
        return [
            f"{n} {what}{'s' if n != 1 else ''} of the protocol not {done}"
            for n, what, done in counts
            if n
        ]


def _expectation_key(e: Mapping[str, Any]) -> tuple[Any, ...]:
    where = tuple(sorted((str(k), tuple(v)) for k, v in (e.get("where") or {}).items()))
    return (e.get("faster"), e.get("than"), e.get("per"), where)


def describe(e: Mapping[str, Any]) -> str:
    where = e.get("where") or {}
    at = "".join(f", {k} in {list(v)}" for k, v in where.items())
    return f"{e.get('faster')} beats {e.get('than')} per {e.get('per')}{at}"


def _why_params(
    params: Mapping[str, Any], axes: Mapping[str, list[Any]], fixed: Mapping[str, Any]
) -> str | None:
    """Why a grid point with `params` is not in the run's grid; None when it is."""
    reasons = []
    for name, value in params.items():
        if name in axes:
            if value not in axes[name]:
                reasons.append(f"axis value gone: {name}={value} is not in the run's profile")
        elif name in fixed:
            if fixed[name] != value:
                reasons.append(f"fixed parameter changed: {name} {value} -> {fixed[name]}")
        else:
            reasons.append(f"parameter gone: {name} is neither an axis nor fixed in the run")
    for name in axes:
        if name not in params:
            reasons.append(f"axis {name} is new in the run's profile")
    return "; ".join(reasons) or None


def coverage(
    facts: Mapping[str, Any] | None,
    measured: Iterable[str],
    checked: Iterable[Mapping[str, Any]] | None,
    *,
    registry: Iterable[str] | None = None,
    renamed: Mapping[str, Iterable[str]] | None = None,
    baseline: Mapping[str, tuple[str, str, Mapping[str, Any]]] | None = None,
) -> Coverage | None:
    """A run's coverage (None: no facts, an older tilegate's). `facts`: machine_info.tilegate.
    coverage; `measured`: the case ids with a row; `checked`: the expectations checked; `registry`,
    `renamed`: the head's; `baseline`: {key: (variant, group, params)}, required where expected."""
    if not isinstance(facts, Mapping) or not isinstance(facts.get("expected"), Mapping):
        return None
    expected = facts["expected"]
    cases: dict[str, Mapping[str, Any]] = {
        str(k): v for k, v in (expected.get("cases") or {}).items() if isinstance(v, Mapping)
    }
    grid = facts.get("grid") or {}
    axes = {str(k): list(v) for k, v in (grid.get("axes") or {}).items()}
    fixed = dict(grid.get("fixed") or {})
    run_cases = set(grid.get("cases") or ())
    not_selected = set(facts.get("not_selected") or ()) | set(facts.get("changed") or ())
    skipped = dict(facts.get("skipped") or {})
    failed = dict(facts.get("failed") or {})
    unsupported = facts.get("unsupported") or {}
    head_off = set(unsupported.get("head") or ())
    base_off = set(unsupported.get("base") or ())
    ab = str(expected.get("protocol", "")).startswith("the base's")
    if ab:  # the base's own declaration keeps them off this machine (a case it measured or not)
        base_off |= {k for k, c in cases.items() if c.get("unsupported")}
    have = set(measured)
    names = set(registry) if registry is not None else None
    old_names = {o: new for new, olds in (renamed or {}).items() for o in olds}

    # a case id is its variant and its group (the axis labels)
    groups = {k[len(str(c.get("variant"))) + 1 :] for k, c in cases.items()}
    required: dict[str, tuple[str, Mapping[str, Any]]] = {
        k: (str(c.get("variant")), c.get("params") or {}) for k, c in cases.items()
    }
    for key, (variant, group, params) in (baseline or {}).items():
        new = old_names.get(variant)  # a renamed variant's row, under its new name
        if group not in groups or key in required or (new and f"{new}-{group}" in required):
            continue
        required[f"{new}-{group}" if new else key] = (new or variant, params)

    missing: list[Missing] = []
    left_out: list[str] = []
    off: list[Missing] = []
    stored = set(baseline or ())
    for key, (variant, params) in required.items():
        if key in have:
            continue
        if key in failed:
            missing.append(Missing(key, f"failed: {failed[key]}"))
        elif key in skipped and key in head_off and (key in base_off or not (ab or key in stored)):
            off.append(Missing(key, f"skipped: {skipped[key]}"))
        elif key in skipped:
            missing.append(Missing(key, f"skipped: {skipped[key]}"))
        elif names is not None and variant not in names:
            missing.append(Missing(key, f"variant gone: {variant} is not in the registry"))
        elif key in run_cases and key in not_selected:
            left_out.append(key)
        else:
            why = _why_params(params, axes, fixed) if params else None
            missing.append(Missing(key, why or "not in the results (no row was recorded)"))

    ran = {_expectation_key(e) for e in checked or ()}
    unchecked = tuple(
        f"{describe(e)}: declared by {expected.get('protocol', 'the protocol')}, not checked "
        "by this run (its protocol or registry no longer declares it)"
        for e in expected.get("expectations") or ()
        if isinstance(e, Mapping) and _expectation_key(e) not in ran
    )
    return Coverage(
        protocol=str(expected.get("protocol", "this run's")),
        profile=str(expected.get("profile", "")),
        expected=len(required),
        missing=tuple(sorted(missing, key=lambda m: m.key)),
        expectations=unchecked,
        not_selected=tuple(sorted(left_out)),
        not_measurable=tuple(sorted(off, key=lambda m: m.key)),
        narrowed=tuple(str(n) for n in facts.get("narrowed") or ()),
    )


def of_run(run: Any, baseline: Any = None) -> Coverage | None:
    """The coverage of a loaded results file (a Run) against its Baseline, or None."""
    env = run.env
    rows = None
    if baseline is not None and getattr(baseline, "mode", env.mode) == env.mode:
        rows = {k: (r.variant, r.group, dict(r.params)) for k, r in baseline.rows.items()}
    facts = (env.coverage, run.rows, env.expectations)
    return coverage(*facts, registry=env.registry, renamed=env.renamed, baseline=rows)
