"""The fingerprint gate: compile the suite's kernels, check the rules, compare with the baseline.

`check(...)` and `record(...)` return a `GateResult` (exit code + report); they raise
`InputError` when they cannot judge (no baseline for this Triton version, a corrupt file, a
kernel that does not compile), and the caller turns that into `cannot_judge(...)`: exit 2, with
a CANNOT JUDGE report where the verdict would be and the previous run's outputs removed.
Exit codes: 0 holds, 1 a rule is broken or a fingerprint changed, 2 cannot judge.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK, InputError
from tilegate.fileio import atomic_write_json, atomic_write_text
from tilegate.fingerprint.changes import Change, diff, diff_ptxas, is_pipelining
from tilegate.store.fingerprints import (
    DEFAULT_DIR,
    Entry,
    FingerprintFile,
    fingerprint_path,
    load_fingerprints,
    other_versions,
    record_hint,
    reference_for,
    write_fingerprints,
)
from tilegate.warnlog import Warned

from . import reporting as report_mod
from .compile import DEFAULT_CACHE_DIR, Target, compile_many, default_jobs, triton_version
from .rules import DEFAULT_RULES, RuleReport, RuleSet, Subject, evaluate, load_rules
from .suite import KernelCase, Mutator, Skipped, collect, profiles

DEFAULT_REPORT = Path(".perf") / "fingerprint.md"
DEFAULT_JSON_DIR = Path(".perf") / "fingerprint"
UPGRADE_REPORT = Path(".perf") / "upgrade.md"
UPGRADE_JSON_DIR = Path(".perf") / "upgrade"


@dataclass
class Options:
    """Everything a gate run needs; the CLI fills it from its arguments."""

    baseline_dir: Path = DEFAULT_DIR
    rules_path: Path = DEFAULT_RULES
    cache_dir: Path | None = DEFAULT_CACHE_DIR
    archs: Sequence[str] | None = None  # default: every target of the rules file
    variants: Sequence[str] | None = None  # default: every Triton variant of the registry
    profile: Any = None  # a tilegate.cases.Profile; default: "default"
    jobs: int = 0  # 0: default_jobs()
    report_path: Path | None = DEFAULT_REPORT
    json_dir: Path | None = DEFAULT_JSON_DIR
    mutate: Mutator | None = None  # tests: alter a launch before it is compiled


@dataclass
class Compiled:
    """The kernels compiled now, with their facts, and what compiling them took."""

    cases: list[KernelCase]
    skipped: list[Skipped]
    facts: dict[str, dict[str, Any]]
    compiled: int
    seconds: float
    targets: list[Target]
    ruleset: RuleSet
    profile: Any
    # per kernel: what Triton/torch warned while specializing and compiling it (recorded, not raised)
    warned: dict[str, tuple[Warned, ...]] = field(default_factory=dict)
    ptxas: dict[str, str] = field(default_factory=dict)  # arch -> version of the ptxas used


@dataclass
class GateResult:
    exit_code: int
    text: str
    rules: RuleReport
    changes: list[Change] = field(default_factory=list)
    compiled: Compiled | None = None


def _ptxas_version(target: Target) -> str:
    from triton.backends.nvidia.compiler import get_ptxas_version

    m = re.search(r"V(\d+\.\d+\.\d+)", get_ptxas_version(target.cc))
    return m.group(1) if m else "unknown"


def _profile_json(profile: Any) -> dict[str, Any]:
    """The profile (a tilegate.fingerprint.suite.GridView) as its file stores it."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(profile).items()}


def compile_suite(opts: Options) -> Compiled:
    """Plan, specialize and compile (or fetch from cache) every kernel the options select."""
    ruleset = load_rules(opts.rules_path)
    archs = list(opts.archs or ruleset.targets)
    unknown = [a for a in archs if a not in ruleset.targets]
    if unknown:
        raise InputError(
            f"unknown architecture(s) {unknown}; {ruleset.path} defines {sorted(ruleset.targets)}"
        )
    targets = [ruleset.targets[a] for a in archs]
    profile = opts.profile or profiles()["default"]
    t0 = time.perf_counter()
    cases, skipped = collect(targets, profile=profile, variants=opts.variants, mutate=opts.mutate)
    if not cases:
        raise InputError("no kernel selected: check --variant / --arch")
    work = [(c.launch, c.target, c.spec) for c in cases]
    # a kernel that does not compile cannot be judged: InputError naming it (exit 2)
    results, compiled = compile_many(
        work, opts.cache_dir, jobs=opts.jobs or default_jobs(), labels=[c.id for c in cases]
    )
    seconds = time.perf_counter() - t0
    return Compiled(
        cases,
        skipped,
        {c.id: r.facts for c, r in zip(cases, results, strict=True)},
        compiled,
        seconds,
        targets,
        ruleset,
        profile,
        {c.id: c.spec.warned + r.compile_warned for c, r in zip(cases, results, strict=True)},
        {t.arch: _ptxas_version(t) for t in targets},
    )


def entries_of(comp: Compiled, arch: str) -> dict[str, Entry]:
    return {
        c.id: Entry(c.id, c.variant, c.dtype, c.layout, c.ks, c.config(), comp.facts[c.id])
        for c in comp.cases
        if c.target.arch == arch
    }


def check_rules(comp: Compiled, triton: str) -> RuleReport:
    subjects = [
        Subject(c.id, c.variant, c.dtype, c.layout, c.target.arch, c.xtile, c.pipelined, f)
        for c in comp.cases
        for f in [comp.facts[c.id]]
    ]
    return evaluate(comp.ruleset, subjects, triton=triton)


def _selected(entries: dict[str, Entry], opts: Options, comp: Compiled) -> dict[str, Entry]:
    """Baseline entries within the run's selection (a --variant run does not miss the others)."""
    if not opts.variants:
        return entries
    names = {c.variant for c in comp.cases}
    return {k: e for k, e in entries.items() if e.variant in names}


# marks the facts JSON of a run, so that clearing a run's outputs never removes anything else
RUN_SCHEMA = "tilegate.fingerprint-run/1"


def clear_outputs(opts: Options) -> None:
    """Remove the previous run's report and facts JSON: a run that then fails to judge must not
    leave an earlier verdict where this one is looked for."""
    if opts.report_path is not None:
        Path(opts.report_path).unlink(missing_ok=True)
    if opts.json_dir is not None:
        for path in Path(opts.json_dir).glob("*.json"):
            try:
                ours = json.loads(path.read_text(encoding="utf-8")).get("schema") == RUN_SCHEMA
            except (OSError, ValueError, AttributeError):
                ours = False
            if ours:
                path.unlink(missing_ok=True)


def cannot_judge(opts: Options, reason: str) -> GateResult:
    """Exit 2: the previous run's outputs removed and a CANNOT JUDGE report in their place."""
    clear_outputs(opts)
    try:
        version = triton_version()
    except Exception:  # no Triton at all is one more reason it cannot judge
        version = "(not importable)"
    text = report_mod.render_cannot_judge(version, reason)
    if opts.report_path is not None:
        atomic_write_text(opts.report_path, text)
    return GateResult(EXIT_CANNOT_JUDGE, text, RuleReport())


def _write_outputs(opts: Options, comp: Compiled, text: str) -> None:
    clear_outputs(opts)
    if opts.report_path is not None:
        atomic_write_text(opts.report_path, text)
    if opts.json_dir is not None:
        for t in comp.targets:
            keys = {c.id: c.spec.key for c in comp.cases}
            where = str(opts.cache_dir) if opts.cache_dir is not None else None
            atomic_write_json(
                Path(opts.json_dir) / f"{t.arch}.json",
                {
                    "schema": RUN_SCHEMA,
                    "triton": triton_version(),
                    "arch": t.arch,
                    # the compiled TTGIR and ptxas report of each kernel: <cache_dir>/<cache_key>.ttgir / .ptxas.log
                    "cache_dir": where,
                    "kernels": {
                        k: {**e.to_json(), "cache_key": keys[k]}
                        for k, e in sorted(entries_of(comp, t.arch).items())
                    },
                },
            )


def _compared(
    opts: Options, recorded: str, missing_what: str, missing_do: str
) -> tuple[dict[str, FingerprintFile], Compiled, RuleReport, list[Change]]:
    """The recorded files of Triton `recorded`, the kernels compiled now, their rules under the
    Triton installed here and their diff against those files. A file missing is an InputError:
    `missing_what` (the recorded versions): the paths missing; `missing_do`."""
    archs = list(opts.archs or load_rules(opts.rules_path).targets)
    files: dict[str, FingerprintFile] = {}
    missing = []
    for arch in archs:
        path = fingerprint_path(opts.baseline_dir, recorded, arch)
        if path.is_file():
            files[arch] = load_fingerprints(path, triton=recorded, arch=arch)
        else:
            missing.append(str(path))
    if missing:
        found = {v for a in archs for v, _ in other_versions(opts.baseline_dir, a, recorded)}
        shown = f" (recorded: Triton {', '.join(sorted(found))})" if found else ""
        raise InputError(f"{missing_what}{shown}: {', '.join(missing)} missing; {missing_do}")
    comp = compile_suite(opts)
    changes: list[Change] = []
    for t in comp.targets:
        changes += diff_ptxas(t.arch, files[t.arch].ptxas, comp.ptxas[t.arch])
        changes += diff(
            _selected(files[t.arch].entries, opts, comp),
            entries_of(comp, t.arch),
            comp.ruleset.allowances,
        )
    return files, comp, check_rules(comp, triton_version()), changes


def _finish(
    opts: Options, comp: Compiled, text: str, rules: RuleReport, changes: list[Change], failed: bool
) -> GateResult:
    _write_outputs(opts, comp, text)
    return GateResult(EXIT_FAIL if failed else EXIT_OK, text, rules, changes, comp)


def check(opts: Options) -> GateResult:
    """Compare the kernels compiled now with the recorded fingerprints of this Triton version."""
    version = triton_version()
    baselines, comp, rules, changes = _compared(
        opts,
        version,
        f"no fingerprint for Triton {version}",
        f"run {record_hint(version)} to record one, and review its diff",
    )
    failed = bool(rules.failures) or any(c.fails for c in changes)
    notes = {t.arch: str(baselines[t.arch].path) for t in comp.targets}
    text = report_mod.render("check", version, comp, rules, changes, notes, failed)
    return _finish(opts, comp, text, rules, changes, failed)


def _record_target(
    opts: Options, comp: Compiled, t: Target, version: str
) -> tuple[list[Change], str, Path]:
    """Write Triton `version`'s file for target `t`; its diff, what it was diffed against, its path.

    Against the previous file of this version, or, for a first recording, against the newest
    older Triton version's file (what the upgrade changes), or the nearest newer one's, labelled
    a downgrade. Entries outside a --variant selection are kept.
    """
    path = fingerprint_path(opts.baseline_dir, version, t.arch)
    new = entries_of(comp, t.arch)
    old: dict[str, Entry] = {}
    old_ptxas = comp.ptxas[t.arch]
    keep: dict[str, Entry] = {}
    if path.is_file():
        try:
            stored = load_fingerprints(path, triton=version, arch=t.arch)
            old, old_ptxas = stored.entries, stored.ptxas
            note = str(path)
        except InputError as err:
            note = f"{path} (unreadable, replaced: {err})"
        keep = {
            k: e for k, e in old.items() if k not in new and k not in _selected(old, opts, comp)
        }
    else:
        ref = reference_for(opts.baseline_dir, t.arch, version)
        note = "nothing (first recording for this architecture)"
        if ref is not None:
            try:
                stored = load_fingerprints(ref.path, triton=ref.triton, arch=t.arch)
                old, old_ptxas = stored.entries, stored.ptxas
                note = f"{ref.path} ({ref.describe(version)})"
            except InputError as err:
                note = f"{ref.path} (unreadable: {err})"
    changes = diff_ptxas(t.arch, old_ptxas, comp.ptxas[t.arch])
    changes += diff(_selected(old, opts, comp), new, comp.ruleset.allowances)
    write_fingerprints(
        path,
        triton=version,
        arch=t.arch,
        target={"capability": list(t.capability), "num_sms": t.num_sms, "gpu": t.gpu},
        profile=_profile_json(comp.profile),
        ptxas=comp.ptxas[t.arch],
        entries={**keep, **new},
    )
    return changes, note, path


def record(opts: Options) -> GateResult:
    """Re-record this Triton version's fingerprints (atomically), printing the diff it makes.

    Rules are checked on what is recorded: a kernel that breaks one still fails (exit 1) after
    recording.
    """
    version = triton_version()
    comp = compile_suite(opts)
    rules = check_rules(comp, version)
    changes: list[Change] = []
    notes: dict[str, str] = {}
    for t in comp.targets:
        arch_changes, notes[t.arch], _ = _record_target(opts, comp, t, version)
        changes += arch_changes
    failed = bool(rules.failures)
    text = report_mod.render("record", version, comp, rules, changes, notes, failed)
    return _finish(opts, comp, text, rules, changes, failed)


def upgrade(opts: Options, from_version: str, *, record_too: bool = False) -> GateResult:
    """What moving from Triton `from_version` (its recording) to the Triton installed here changes.

    Compiles the kernels now and diffs them against `from_version`'s recorded fingerprints;
    writes nothing under the baseline directory unless `record_too` (then this Triton's files
    are recorded as `record` would). Exit 1 when a pipelining fact changed (anything but the
    registers, see changes.ALLOCATION_FIELDS) or a rule is broken under this Triton; 0 otherwise:
    register moves are reported, never failed (docs/fingerprint.md says why).
    """
    version = triton_version()
    if from_version == version:
        raise InputError(
            f"Triton {version} is the one installed here: an upgrade report compares it with "
            f"another version's recording; install the new Triton (`nox -s upgrade -- X.Y.Z`)"
        )
    old, comp, rules, changes = _compared(
        opts,
        from_version,
        f"no recording of Triton {from_version} to compare with",
        f"record it with {record_hint(from_version)}",
    )
    recorded = (
        [str(_record_target(opts, comp, t, version)[2]) for t in comp.targets] if record_too else []
    )
    failed = bool(rules.failures) or any(is_pipelining(c) for c in changes)
    text = report_mod.render_upgrade(
        old=from_version,
        new=version,
        comp=comp,
        rules=rules,
        changes=changes,
        compared_with={a: str(f.path) for a, f in old.items()},
        old_ptxas={a: f.ptxas for a, f in old.items()},
        recorded=recorded,
        outputs=f"{opts.json_dir}/<arch>.json" if opts.json_dir else "not kept",
        allowances=comp.ruleset.allowances,
    )
    return _finish(opts, comp, text, rules, changes, failed)
