"""The fingerprint report: Markdown that reads as well in a terminal as in a CI summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tilegate import warnlog
from tilegate.fingerprint.changes import ALLOCATION_FIELDS, Change, is_pipelining
from tilegate.markdown import table
from tilegate.store.fingerprints import record_hint, version_key

if TYPE_CHECKING:
    from .gate import Compiled
    from .rules import RuleReport


def _value(v: Any) -> str:
    """A fact as the report shows it: `-` where there is none (e.g. no wgmma on sm_120)."""
    return "-" if v is None else str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return table(header, "l" * len(header), [[_value(c) for c in r] for r in rows])


def _old_new(c: Change) -> str:
    text = f"{_value(c.old)} -> {_value(c.new)}"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (c.old, c.new)):
        text += f" ({c.new - c.old:+g})"
    return text


def _ks(ks: Sequence[int]) -> str:
    return str(ks[0]) if len(ks) == 1 else f"{min(ks)}..{max(ks)} ({len(ks)})"


def _operand(f: Mapping[str, Any], op: str) -> str:
    return f"{f[f'{op}_buffers']}x {f[f'{op}_load']}"


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}"


# verdicts in the order a reader wants them
_VERDICTS = ("worse", "changed", "removed", "added", "better", "within allowance", "info")


def verdict_counts(changes: Sequence[Change]) -> str:
    """ "2 worse, 11 better, 3 within allowance": how many changes of each verdict."""
    n = Counter(c.verdict for c in changes)
    return ", ".join(f"{n[v]} {v}" for v in (*_VERDICTS, *sorted(set(n) - set(_VERDICTS))) if n[v])


def changes_title(mode: str, changes: Sequence[Change]) -> str:
    """The diff section's heading. A check fails on a change; a recording does not (it writes the
    change down, only its rules decide), so there a change is counted by verdict, never "fails"."""
    if mode == "check":
        failing = sum(c.fails for c in changes)
        head = f"## Changes: {failing} that fail, {len(changes) - failing} informational"
        return head + (f" ({verdict_counts(changes)})" if changes else "")
    return f"## What this recording changes: {verdict_counts(changes) or 'nothing'}"


def fingerprint_rows(comp: Compiled) -> list[list[Any]]:
    rows = []
    for c in comp.cases:
        f = comp.facts[c.id]
        rows.append(
            [
                c.id,
                _ks(c.ks),
                "yes" if f["fused"] else "no",
                f["loops"],
                _operand(f, "a"),
                _operand(f, "b"),
                f["mma"],
                f["wgmma_wait"],
                _kib(f["shared_bytes"]),
                f["registers"],
                f["spill_stores"] + f["spill_loads"],
                f"{c.launch.num_warps}/{c.launch.num_stages}",
            ]
        )
    return rows


def warnings_section(comp: Compiled) -> list[str]:
    """The warnings Triton and torch issued while specializing and compiling (recorded, not raised).

    One row per distinct warning with the first kernel it came with: Triton issues some warnings
    once per process (3.9's TRITON_DEFAULT_FP_FUSION), so which kernels "had" it means nothing.
    """
    first: dict[warnlog.Warned, str] = {}
    for c in comp.cases:
        for w in comp.warned.get(c.id, ()):
            first.setdefault(w, c.id)
    title = f"## Warnings from {' / '.join(warnlog.THIRD_PARTY)} while compiling: {len(first)}"
    if not first:
        return ["", title, "", "None."]
    return [
        "",
        title,
        "",
        "Recorded, not raised: a new Triton is when new ones appear; read them before upgrading.",
        "",
        *_table(
            ["category", "warning", "issued at", "first with"],
            [[w.category, w.message, w.source, kid] for w, kid in first.items()],
        ),
    ]


def render_cannot_judge(version: str, reason: str) -> str:
    """The report of a run that could not judge (exit 2): why, and that nothing was compared."""
    return (
        f"# Compile fingerprint, Triton {version}: CANNOT JUDGE\n\n{reason}\n\n"
        "Nothing was compared and no verdict was reached (exit 2); the previous run's report "
        "and facts were removed so that none of them reads as this run's.\n"
    )


def _scope_lines(comp: Compiled) -> list[str]:
    """What was compiled, where, and how long it took."""
    p = comp.profile
    one_kernel = all(len(c.ks) == len(p.ks) for c in comp.cases)
    k_note = (
        (
            "every suite K compiles to the same kernel (same specialization and constexprs), "
            "so each case is fingerprinted once at K = " + str(max(p.ks))
        )
        if one_kernel
        else "some cases compile differently per K: their ids carry @K<first K>"
    )
    return [
        f"{len(comp.cases)} kernels: profile {p.name} ({', '.join(p.dtypes)}; layouts {', '.join(p.layouts)}; "
        f"M = {p.m}, N = {p.n}; K = {', '.join(map(str, p.ks))}) on "
        f"{', '.join(f'{t.arch} ({t.gpu}, {t.num_sms} SMs)' for t in comp.targets)}; {k_note}.",
        f"Compiled {comp.compiled}, {len(comp.cases) - comp.compiled} from cache, {comp.seconds:.1f} s; "
        "assembled by ptxas " + ", ".join(f"{a} {v}" for a, v in comp.ptxas.items()) + ".",
    ]


def _rules_section(comp: Compiled, rules: RuleReport, title: str = "Rules") -> list[str]:
    lines = [
        "",
        f"## {title}: {len(rules.failures)} broken, {len(rules.excepted)} excepted, "
        f"{rules.checks_run} checks ({comp.ruleset.path})",
        "",
    ]
    rows = [["FAIL", f.rule, f.kernel, f.message] for f in rules.failures]
    rows += [[f"EXCEPTED ({f.exception})", f.rule, f.kernel, f.message] for f in rules.excepted]
    if rows:
        lines += _table(["result", "rule", "kernel", "message"], rows)
    else:
        lines.append("Every rule holds.")
    reasons = {f"{f.exception}** ({f.rule})": f.reason for f in rules.excepted}
    if reasons:
        lines += [
            "",
            "Known exceptions in force (named in the rules file, with why they are accepted):",
            "",
        ]
        lines += [f"- **{name}: {reason}" for name, reason in reasons.items()]
    for text in rules.out_of_range:
        lines.append(
            f"\nException {text}: it does not apply, so what it would excuse fails above. If the "
            f"violation is known and accepted under this Triton too, widen its `triton` range in "
            f"{comp.ruleset.path} (through review)."
        )
    for name in rules.stale_exceptions:
        lines.append(
            f"\nStale exception {name}: the kernels it names now satisfy the rule; remove it from "
            f"{comp.ruleset.path}."
        )
    return lines


def _changes_table(changes: Sequence[Change]) -> list[str]:
    return _table(
        ["kernel", "field", "old -> new", "verdict", "why it matters"],
        [[c.kernel, c.field, _old_new(c), c.verdict, c.why] for c in changes],
    )


def _fingerprints_section(comp: Compiled) -> list[str]:
    """The warnings while compiling, then every kernel's fingerprint: every report's end."""
    return [
        *warnings_section(comp),
        "",
        "## Fingerprints",
        "",
        *_table(
            [
                "kernel",
                "K",
                "fused",
                "loops",
                "A",
                "B",
                "mma",
                "wgmma wait",
                "smem KiB",
                "regs",
                "spill B",
                "warps/stages",
            ],
            fingerprint_rows(comp),
        ),
    ]


_BROKEN_RULE_HINT = (
    "- A broken rule: fix the kernel (or its config). If the violation is known and accepted, "
    "add a named exception with its reason to the rules file; it stays visible in this report."
)


def render(
    mode: str,
    version: str,
    comp: Compiled,
    rules: RuleReport,
    changes: Sequence[Change],
    baseline_note: Mapping[str, str],
    failed: bool,
) -> str:
    verdict = "FAIL" if failed else "ok"
    lines = [f"# Compile fingerprint, Triton {version}: {verdict}", "", *_scope_lines(comp)]
    what = "Compared with" if mode == "check" else "Recorded; diff against"
    lines += ["", f"{what}: " + "; ".join(f"{a}: {n}" for a, n in baseline_note.items()) + "."]
    lines += [f"Not compiled: {s.id}: {s.reason}." for s in comp.skipped]
    lines += _rules_section(comp, rules)

    lines += ["", changes_title(mode, changes), ""]
    if changes:
        lines += _changes_table(changes)
    else:
        lines.append("None: every fingerprint equals the recorded one.")

    lines += _fingerprints_section(comp)

    if failed:
        lines += ["", "## What to do", ""]
        if rules.failures:
            lines.append(_BROKEN_RULE_HINT)
        if mode == "check" and any(c.fails for c in changes):
            lines.append(
                f"- A changed fingerprint: if the change is intended (a kernel or Triton change), re-record "
                f"with {record_hint(version)} and commit the diff with the change."
            )
    return "\n".join(lines) + "\n"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _kernel_rows(comp: Compiled, changes: Sequence[Change]) -> list[list[str]]:
    """Per kernel: its pipelining facts (unchanged, or what moved) and what ptxas allocates."""
    by_kernel: dict[str, list[Change]] = {}
    for c in changes:
        by_kernel.setdefault(c.kernel, []).append(c)
    rows = []
    for case in comp.cases:
        mine = by_kernel.get(case.id, [])
        facts = "; ".join(f"{c.field} {_old_new(c)} {c.verdict}" for c in mine if is_pipelining(c))
        moved = {c.field: c for c in mine if c.field in ALLOCATION_FIELDS}
        alloc = [
            f"{f} {_old_new(moved[f])} {moved[f].verdict}"
            if f in moved
            else f"{f} {comp.facts[case.id][f]}"
            for f in sorted(ALLOCATION_FIELDS)
        ]
        rows.append([case.id, facts or "unchanged", "; ".join(alloc)])
    return rows


def render_upgrade(
    *,
    old: str,
    new: str,
    comp: Compiled,
    rules: RuleReport,
    changes: Sequence[Change],
    compared_with: Mapping[str, str],
    old_ptxas: Mapping[str, str],
    recorded: Sequence[str],
    outputs: str,
    allowances: Mapping[str, int],
) -> str:
    """What moving from Triton `old` (its recording) to `new` (compiled now) changes."""
    moved = [c for c in changes if is_pipelining(c)]
    n_kernels = len({c.kernel for c in moved})
    regs = [c for c in changes if c.field == "registers"]
    beyond = [c for c in regs if c.verdict != "within allowance"]
    stack = [c for c in changes if c.field == "stack_bytes"]
    what = f"{_plural(len(moved), 'pipelining fact')} changed in {_plural(n_kernels, 'kernel')}"
    parts = [what if moved else "no pipelining fact changed"]
    if rules.failures:
        parts.append(f"{_plural(len(rules.failures), 'rule')} broken")
    kind = "downgrade" if version_key(old) > version_key(new) else "upgrade"
    lines = [f"# Triton {kind} {old} -> {new}: {', '.join(parts)}", "", *_scope_lines(comp)]
    lines += [
        "",
        f"Compared with the recording of Triton {old}: "
        + "; ".join(f"{a}: {p}" for a, p in compared_with.items())
        + ".",
        "ptxas: "
        + "; ".join(f"{a} {old_ptxas.get(a, '?')} -> {v}" for a, v in comp.ptxas.items())
        + ".",
    ]
    if recorded:
        lines.append(f"Recorded Triton {new}'s fingerprints: {', '.join(recorded)}.")
    else:
        lines.append(
            f"Nothing was written under the baselines (the facts compiled now: {outputs}); "
            f"`nox -s upgrade -- {new} --record` records them."
        )
    lines += [f"Not compiled: {s.id}: {s.reason}." for s in comp.skipped]
    allow = allowances.get("registers")
    reg_note = (
        f"Registers: {len(regs)} of {len(comp.cases)} kernels moved"
        + (f", {len(beyond)} beyond the allowance of {allow}" if allow is not None else "")
        + (f" ({verdict_counts(regs)})" if regs else "")
        + f"; stack frame: {len(stack)} moved"
        + (f" ({verdict_counts(stack)})" if stack else "")
        + ". What ptxas allocates moves with every ptxas, so it never fails an upgrade report "
        "(the new version's own recording catches later moves); spills do."
    )
    lines += [
        "",
        "## Per kernel",
        "",
        "A pipelining fact is every fact but what ptxas allocates (registers, stack frame): "
        "fusion, loops, MMA, buffers and load path of each operand, wgmma wait, shared memory, "
        "spills, and the launch and JIT specialization.",
        "",
        *_table(["kernel", "pipelining facts", "allocation"], _kernel_rows(comp, changes)),
        "",
        reg_note,
    ]
    lines += _rules_section(comp, rules, title=f"Rules under Triton {new}")
    shown = [c for c in changes if c.field not in ALLOCATION_FIELDS]  # per kernel above
    lines += ["", f"## What changed in the pipelines, and why it matters: {len(moved)}", ""]
    lines += _changes_table(shown) if shown else ["Nothing: every pipelining fact is the same."]
    lines += _fingerprints_section(comp)
    lines += ["", "## What to do", ""]
    if rules.failures:
        lines.append(_BROKEN_RULE_HINT)
    if moved:
        lines.append(
            f"- A pipelining fact changed (exit 1): read each change's why above, and measure the "
            f"kernels it names on the GPU under Triton {new} before upgrading. If accepted, record "
            f"it (`nox -s upgrade -- {new} --record`) and commit it with the pin change."
        )
    if not moved and not rules.failures:
        lines.append(
            f"- Nothing in the kernels' pipelines moves (exit 0). Record Triton {new}'s "
            f"fingerprints (`nox -s upgrade -- {new} --record`) and commit them with the pin "
            f"change; the GPU suite under Triton {new} measures what the register moves cost."
        )
    return "\n".join(lines) + "\n"
