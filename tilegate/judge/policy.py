"""Tolerance policy and reviewed overrides: `baselines/tolerances.toml` (docs/gate.md,
"Tolerances file"). A row's tolerance is ``clamp(multiple x drift, floor, ceiling)``; the defaults
are the fields of `Policy` (the one place they are written). The policy that produced a baseline
is stored in it, so the file is read only at rebaseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tilegate.errors import InputError
from tilegate.fileio import is_finite_number
from tilegate.judge import stats

_P = TypeVar("_P", bound="TolerancePolicy")


@dataclass(frozen=True)
class TolerancePolicy:
    """The one shape of every tolerance: clamp(multiple x noise, floor, ceiling), significant at
    alpha; noise is the run medians' drift (`Policy`) or the A/A run ratios' spread (`ABPolicy`)."""

    multiple: float = 3.0  # tolerance = multiple x noise ...
    floor: float = 0.04  # ... at least this (relative slowdown) ...
    ceiling: float = 0.08  # ... at most this; a row that needs more is reported too noisy
    alpha: float = 0.01  # one-sided significance level of "slower" / "faster"
    _SAID: ClassVar[str] = ""

    def tolerance(self, noise: float) -> stats.Tolerance:
        return stats.derive_tolerance(
            noise, multiple=self.multiple, floor=self.floor, ceiling=self.ceiling
        )

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls: type[_P], data: Any, where: str) -> _P:
        """The policy of a file's JSON; `_SAID` prefixes a value's name in an error."""
        if not isinstance(data, dict):
            raise InputError(f"{where}: policy must be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"{where}: unknown policy key(s) {unknown}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name == "reference_variants":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError(f"{where}: reference_variants must be a list of variant names")
                values[name] = tuple(value)
            elif name == "quantiles":
                if not isinstance(value, int) or isinstance(value, bool) or value < 5:
                    raise InputError(f"{where}: quantiles must be an integer >= 5, got {value!r}")
                values[name] = value
            elif not _in_range(name, value):
                raise InputError(f"{where}: {cls._SAID}{name} = {value!r} is out of range")
            else:
                values[name] = float(value)
        policy = cls(**values)
        if policy.floor > policy.ceiling:
            raise InputError(f"{where}: floor {policy.floor} > ceiling {policy.ceiling}")
        return policy


@dataclass(frozen=True)
class Policy(TolerancePolicy):
    """How noise becomes tolerances and expectations; stored in the baseline it produced (alpha:
    the one-sided Mann-Whitney U level)."""

    unsure_band: float = (
        0.2  # significant and within this fraction below the tolerance: measure more
    )
    quantiles: int = 41  # baseline samples kept per row (quantile summary of pooled rounds)
    win_below: float = 0.97  # an expectation needs ratio <= this in every rebaseline run
    ratio_slack: float = 0.05  # max_ratio = worst measured ratio x (1 + slack) ...
    ratio_cap: float = 0.99  # ... capped here, so an expectation always means "wins"
    # Rows reported and judged but never failing the gate. Empty here: a rebaseline fills it from
    # the rows the suite marks as the reference (kernels.REFERENCE, cuBLAS), and the baseline
    # keeps it, so it is data of the baseline, not a name written in code.
    reference_variants: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "reference_variants": list(self.reference_variants)}


_SET_KEYS = ("tolerance", "floor", "ceiling", "multiple")


def _in_range(name: str, value: Any) -> bool:
    """A policy value's range: a fraction in (0, 1), a multiple in (0, 100)."""
    return is_finite_number(value) and 0 < value < (100 if name == "multiple" else 1)


@dataclass(frozen=True)
class Override:
    """One [[override]] of tolerances.toml: which rows (`variant` and any of the benchmark's
    parameters, each one value or a list; all must match), what to set, why."""

    reason: str
    variant: str | None = None
    params: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    tolerance: float | None = None
    floor: float | None = None
    ceiling: float | None = None
    multiple: float | None = None

    def matches(self, variant: str, params: Mapping[str, Any]) -> bool:
        return (self.variant is None or self.variant == variant) and all(
            params.get(k) in values for k, values in self.params.items()
        )

    @property
    def specificity(self) -> int:
        return (self.variant is not None) + len(self.params)

    def describe(self) -> str:
        sel = [f"variant={self.variant}"] if self.variant is not None else []
        sel += [f"{k}={'/'.join(map(str, v))}" for k, v in self.params.items()]
        return f"override [{', '.join(sel)}]: {self.reason}"


@dataclass(frozen=True)
class Tolerances:
    policy: Policy = field(default_factory=Policy)
    overrides: tuple[Override, ...] = ()
    source: str = "built-in defaults"

    def override_for(self, variant: str, params: Mapping[str, Any]) -> Override | None:
        """The most specific matching override; among equals, the last in the file."""
        matching = [ov for ov in self.overrides if ov.matches(variant, params)]
        return max(reversed(matching), key=lambda ov: ov.specificity, default=None)

    def tolerance(
        self, variant: str, params: Mapping[str, Any], drift: float
    ) -> tuple[float, str, bool]:
        """(tolerance, where it came from, too noisy) for one row."""
        p = self.policy
        ov = self.override_for(variant, params)
        if ov is not None and ov.tolerance is not None:
            return ov.tolerance, ov.describe(), p.multiple * drift > ov.tolerance
        floor = ov.floor if ov and ov.floor is not None else p.floor
        ceiling = ov.ceiling if ov and ov.ceiling is not None else p.ceiling
        multiple = ov.multiple if ov and ov.multiple is not None else p.multiple
        tol = TolerancePolicy(multiple, floor, min(max(ceiling, floor), 1.0)).tolerance(drift)
        source = tol.bound if ov is None else f"{tol.bound}, {ov.describe()}"
        return tol.value, source, tol.too_noisy


def parse_tolerances(data: Mapping[str, Any], p: Path) -> Tolerances:
    """Validate tolerances.toml's tables (read by tilegate.store.files.load_tolerances)."""
    unknown = sorted(set(data) - {"policy", "override"})
    if unknown:
        raise InputError(
            f"tolerances file {p}: unknown section(s) {unknown}; expected [policy] and [[override]]"
        )
    policy = Policy.from_json(data.get("policy", {}), f"tolerances file {p} [policy]")
    overrides = []
    for i, raw in enumerate(data.get("override", [])):
        where = f"tolerances file {p}, override #{i + 1}"
        if not isinstance(raw, dict):
            raise InputError(f"{where}: expected a table")
        matching = [k for k in raw if k not in (*_SET_KEYS, "reason")]
        if not isinstance(raw.get("reason"), str) or not raw["reason"].strip():
            raise InputError(
                f"{where}: every override needs a `reason` (it is a reviewed decision)"
            )
        if not matching:
            raise InputError(f"{where}: matches every row; change [policy] instead")
        if not any(k in raw for k in _SET_KEYS):
            raise InputError(f"{where}: sets nothing; give one of {list(_SET_KEYS)}")
        for k in (k for k in _SET_KEYS if k in raw and not _in_range(k, raw[k])):
            raise InputError(f"{where}: {k} = {raw[k]!r} is out of range")
        if "variant" in raw and not isinstance(raw["variant"], str):
            raise InputError(f"{where}: variant must be a string")
        params: dict[str, tuple[Any, ...]] = {}
        for k in (k for k in matching if k != "variant"):
            values = raw[k] if isinstance(raw[k], list) else [raw[k]]
            if not values or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values
            ):
                raise InputError(
                    f"{where}: {k} must be a parameter value (string or number) or a list of them"
                )
            params[k] = tuple(values)
        sets = {k: float(raw[k]) for k in _SET_KEYS if k in raw}
        overrides.append(Override(raw["reason"].strip(), raw.get("variant"), params, **sets))
    return Tolerances(policy=policy, overrides=tuple(overrides), source=str(p))
