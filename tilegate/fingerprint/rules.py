"""Rules beyond equality, stated as data (`baselines/fingerprints/rules.json`), and their verdicts.

A rule holds whatever the baseline says: it is checked against the kernels compiled now, so a
kernel that breaks one fails even on a freshly recorded baseline. A known violation is an
*exception* (named, with a reason, optionally for a Triton version range): reported as EXCEPTED,
never dropped silently; one that no longer matches a violation is reported as stale. The file
(JSON, validated on load; a bad file is an InputError, exit 2), its selectors and the exceptions'
ranges: docs/fingerprint.md, "Rules, as data"; the shape is what `load_rules` reads.
"""

from __future__ import annotations

import fnmatch
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from tilegate.errors import InputError
from tilegate.fileio import read_json

from .compile import FACT_KEYS, Target

RULES_SCHEMA = "tilegate.fingerprint-rules/1"
DEFAULT_RULES = Path("baselines") / "fingerprints" / "rules.json"

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": lambda a, b: a is not None and a >= b,
    "<=": lambda a, b: a is not None and a <= b,
    ">": lambda a, b: a is not None and a > b,
    "<": lambda a, b: a is not None and a < b,
}
_SELECTOR_LISTS = ("variants", "layouts", "dtypes", "archs", "mma")
_SELECTOR_BOOLS = ("xtile", "pipelined")
_SELECTOR_FACTS = ("ws_requested", "warp_specialized")  # booleans read from the kernel's facts


@dataclass(frozen=True)
class Check:
    label: str
    field: str
    op: str
    value: Any
    detail: str | None = None  # a second fact shown in the message (e.g. the load path)


@dataclass(frozen=True)
class Rule:
    id: str
    message: str
    applies_to: Mapping[str, Any]
    checks: tuple[Check, ...]


@dataclass(frozen=True, kw_only=True)
class Exception_:
    name: str
    rule: str
    reason: str
    applies_to: Mapping[str, Any]
    labels: tuple[str, ...] = ()  # empty: every check of the rule
    triton: str | None = None  # the Triton versions it is known for (validated); None: every one

    def covers(self, triton: str) -> bool:
        """Whether the exception applies under Triton `triton` (its version range holds it)."""
        if self.triton is None:
            return True
        try:
            return SpecifierSet(self.triton).contains(Version(triton), prereleases=True)
        except InvalidVersion:
            return False


@dataclass(frozen=True)
class RuleSet:
    path: Path
    targets: Mapping[str, Target]
    allowances: Mapping[str, int]
    rules: tuple[Rule, ...]
    exceptions: tuple[Exception_, ...]


@dataclass(frozen=True)
class Subject:
    """What a selector looks at: one kernel's identity and facts."""

    id: str
    variant: str
    dtype: str
    layout: str
    arch: str
    xtile: bool
    pipelined: bool
    facts: Mapping[str, Any]


@dataclass
class Finding:
    """One failed check of one rule on one kernel; `exception` names what excuses it, if anything."""

    rule: str
    kernel: str
    label: str
    message: str
    exception: str | None = None
    reason: str | None = None


@dataclass
class RuleReport:
    findings: list[Finding] = field(default_factory=list)
    checks_run: int = 0
    stale_exceptions: list[str] = field(default_factory=list)
    # exceptions that would excuse a finding but whose Triton range leaves this version out
    out_of_range: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.exception is None]

    @property
    def excepted(self) -> list[Finding]:
        return [f for f in self.findings if f.exception is not None]


def _err(path: Path, where: str, what: str) -> InputError:
    return InputError(
        f"fingerprint rules {path}: {where}: {what}; fix the file (see docs/fingerprint.md)"
    )


def _selector(path: Path, where: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _err(path, where, "applies_to must be an object")
    for k, v in raw.items():
        if k in _SELECTOR_LISTS:
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise _err(path, where, f"applies_to.{k} must be a list of names")
        elif k in _SELECTOR_BOOLS or k in _SELECTOR_FACTS:
            if not isinstance(v, bool):
                raise _err(path, where, f"applies_to.{k} must be true or false")
        else:
            raise _err(
                path,
                where,
                f"unknown selector key {k!r} "
                f"(known: {_SELECTOR_LISTS + _SELECTOR_BOOLS + _SELECTOR_FACTS})",
            )
    return dict(raw)


def _str(path: Path, where: str, obj: Mapping[str, Any], key: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        raise _err(path, where, f"{key!r} must be a non-empty string")
    return v


def _triton_range(path: Path, where: str, e: Mapping[str, Any]) -> str | None:
    if "triton" not in e:
        return None
    raw = e["triton"]
    try:
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidSpecifier(str(raw))
        SpecifierSet(raw)
    except InvalidSpecifier:
        raise _err(
            path, where, f"triton must be a version range such as '>=3.6,<3.10', not {raw!r}"
        ) from None
    return raw


def _objects(path: Path, items: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`where[i]`, item) of a list of objects; a non-object item is an error naming it."""
    for i, item in enumerate(items or []):
        if not isinstance(item, dict):
            raise _err(path, f"{where}[{i}]", "must be an object")
        yield f"{where}[{i}]", item


def load_rules(path: str | Path = DEFAULT_RULES) -> RuleSet:
    """Read and validate the rules file."""
    p = Path(path)
    data = read_json(p, "fingerprint rules")
    if not isinstance(data, dict) or data.get("schema") != RULES_SCHEMA:
        raise _err(p, "top level", f"schema must be {RULES_SCHEMA!r}")
    targets: dict[str, Target] = {}
    for arch, t in (data.get("targets") or {}).items():
        where = f"targets.{arch}"
        if not isinstance(t, dict):
            raise _err(p, where, "must be an object")
        cap = t.get("capability")
        if not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(x, int) for x in cap)):
            raise _err(p, where, "capability must be [major, minor]")
        sms = t.get("num_sms")
        if not isinstance(sms, int) or sms < 1:
            raise _err(p, where, "num_sms must be a positive integer")
        targets[arch] = Target(arch, (cap[0], cap[1]), sms, _str(p, where, t, "gpu"))
    if not targets:
        raise _err(p, "targets", "at least one target architecture is needed")
    allowances = data.get("allowances") or {}
    if not isinstance(allowances, dict) or not all(
        k in FACT_KEYS and isinstance(v, int) and v >= 0 for k, v in allowances.items()
    ):
        raise _err(
            p,
            "allowances",
            f"must map fact names ({', '.join(FACT_KEYS)}) to non-negative integers",
        )
    rules: list[Rule] = []
    for where, r in _objects(p, data.get("rules"), "rules"):
        rid = _str(p, where, r, "id")
        checks = []
        for cw, c in _objects(p, r.get("checks"), f"{where} ({rid}).checks"):
            fld = _str(p, cw, c, "field")
            if fld not in FACT_KEYS:
                raise _err(p, cw, f"unknown field {fld!r} (known: {', '.join(FACT_KEYS)})")
            op = c.get("op", "==")
            if op not in _OPS:
                raise _err(p, cw, f"op must be one of {sorted(_OPS)}")
            if "value" not in c:
                raise _err(p, cw, "'value' is missing")
            detail = c.get("detail")
            if detail is not None and detail not in FACT_KEYS:
                raise _err(p, cw, f"unknown detail field {detail!r}")
            checks.append(Check(str(c.get("label", fld)), fld, op, c["value"], detail))
        if not checks:
            raise _err(p, where, "a rule needs at least one check")
        rules.append(
            Rule(
                rid,
                _str(p, where, r, "message"),
                _selector(p, where, r.get("applies_to")),
                tuple(checks),
            )
        )
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        raise _err(p, "rules", "rule ids must be unique")
    exceptions: list[Exception_] = []
    for where, e in _objects(p, data.get("exceptions"), "exceptions"):
        rule = _str(p, where, e, "rule")
        if rule not in ids:
            raise _err(p, where, f"names unknown rule {rule!r}")
        labels = e.get("labels") or []
        if not (isinstance(labels, list) and all(isinstance(x, str) for x in labels)):
            raise _err(p, where, "labels must be a list of check labels")
        exceptions.append(
            Exception_(
                name=_str(p, where, e, "name"),
                rule=rule,
                reason=_str(p, where, e, "reason"),
                applies_to=_selector(p, where, e.get("applies_to")),
                labels=tuple(labels),
                triton=_triton_range(p, where, e),
            )
        )
    return RuleSet(p, targets, dict(allowances), tuple(rules), tuple(exceptions))


def selects(sel: Mapping[str, Any], s: Subject) -> bool:
    """Whether a selector picks this kernel."""
    values = {
        "variants": s.variant,
        "layouts": s.layout,
        "dtypes": s.dtype,
        "archs": s.arch,
        "mma": str(s.facts.get("mma")),
    }
    for k in _SELECTOR_LISTS:
        if k in sel and not any(fnmatch.fnmatchcase(values[k], pat) for pat in sel[k]):
            return False
    if "xtile" in sel and sel["xtile"] != s.xtile:
        return False
    if any(k in sel and sel[k] != bool(s.facts.get(k)) for k in _SELECTOR_FACTS):
        return False
    return not ("pipelined" in sel and sel["pipelined"] != s.pipelined)


class _Fmt(dict):  # str.format_map that leaves unknown placeholders visible
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def evaluate(ruleset: RuleSet, subjects: Sequence[Subject], *, triton: str) -> RuleReport:
    """Check every rule on every kernel it applies to (compiled by Triton `triton`); attach the
    matching exceptions whose version range holds `triton`."""
    report = RuleReport()
    used: set[tuple[str, str]] = set()
    outside: set[tuple[str, str]] = set()
    for s in subjects:
        for rule in ruleset.rules:
            if not selects(rule.applies_to, s):
                continue
            for c in rule.checks:
                report.checks_run += 1
                actual = s.facts.get(c.field)
                if _OPS[c.op](actual, c.value):
                    continue
                msg = rule.message.format_map(
                    _Fmt(
                        label=c.label,
                        field=c.field,
                        actual=actual,
                        expected=f"{c.op} {c.value}",
                        detail=s.facts.get(c.detail) if c.detail else "",
                        kernel=s.id,
                    )
                )
                finding = Finding(rule.id, s.id, c.label, msg)
                for e in ruleset.exceptions:
                    if (
                        e.rule == rule.id
                        and (not e.labels or c.label in e.labels)
                        and selects(e.applies_to, s)
                    ):
                        if not e.covers(triton):
                            outside.add((e.name, e.rule))
                            continue
                        finding.exception, finding.reason = e.name, e.reason
                        used.add((e.name, e.rule))
                        break
                report.findings.append(finding)
    for e in ruleset.exceptions:
        if (e.name, e.rule) in outside and (e.name, e.rule) not in used:
            report.out_of_range.append(
                f"{e.name} ({e.rule}) is known for Triton {e.triton}, not {triton}"
            )
        # stale: an exception in range that selects some evaluated kernel but excused nothing
        elif (
            (e.name, e.rule) not in used
            and e.covers(triton)
            and any(selects(e.applies_to, s) for s in subjects)
        ):
            report.stale_exceptions.append(f"{e.name} ({e.rule})")
    return report
