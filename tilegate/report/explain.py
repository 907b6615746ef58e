"""How explanations read: the report's "Why it changed" block, and `tilegate explain`.

The facts come from tilegate.explain.diff (plain data); this module only words them. In the
report (and so the pull-request comment, which carries the deciding cases) each explained case
is one line, its facts folded in a `<details>` block; `tilegate explain RESULTS [CASE...]`
prints the same, as plain text, for a results file written earlier (a CI artifact).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError
from tilegate.explain.diff import EXPLAINED, MAX_LINES, Explanation, explain_cases, write


def _title(sides: str) -> str:
    return f"**Why it changed** ({sides}: what differs in the launches and the compiled code)"


def _html(text: str) -> str:
    text = html.escape(text, quote=False)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _tail(e: Explanation) -> list[str]:
    out = []
    if e.more:
        out.append(f"- ... {e.more} more fact(s) in `explain/explanations.json`")
    if e.diff_file:
        out.append(f"- TTGIR diff: `{e.diff_file}`")
    return out


def why_section(explanations: Sequence[Explanation], sides: str = "base -> head") -> list[str]:
    """The report's block: one line per case, its facts folded. [] when nothing is explained;
    never raises (the report is written whatever an explanation holds). `sides`: what is
    compared, in words ("old -> new" in an upgrade A/B)."""
    if not explanations:
        return []
    try:
        return _why(explanations, _title(sides))
    except Exception as err:
        return [_title(sides), "", f"- explanation unavailable: {type(err).__name__}: {err}", ""]


def _why(explanations: Sequence[Explanation], title: str) -> list[str]:
    out: list[str] = [title, ""]
    reasons = {e.unavailable for e in explanations}
    if len(explanations) > 1 and len(reasons) == 1 and None not in reasons:
        keys = ", ".join(f"`{e.key}`" for e in explanations[:8])
        more = f" and {len(explanations) - 8} more" if len(explanations) > 8 else ""
        return [*out, f"- {keys}{more}: explanation unavailable: {reasons.pop()}", ""]
    for e in explanations:
        head = f"`{e.key}` {e.verdict}: {e.summary}".replace("  ", " ")
        body = [f"- {line}" for line in e.lines[1:]] + _tail(e)
        if not body:
            out += [f"- {head}", ""]
            continue
        out += [f"<details><summary>{_html(head)}</summary>", "", *body, "", "</details>", ""]
    return out


def text(explanations: Sequence[Explanation]) -> str:
    """Plain text for the terminal: the case, its verdict, then its facts indented."""
    out = []
    for e in explanations:
        out.append(f"{e.key}" + (f"  {e.verdict}" if e.verdict else ""))
        if e.unavailable:
            out.append(f"    explanation unavailable: {e.unavailable}")
        out += [f"    {line}" for line in e.lines]
        out += [f"    {line[2:]}" for line in _tail(e)]
    return "\n".join(out) + ("\n" if out else "")


# --- tilegate explain --------------------------------------------------------------------------


def _verdicts(run: Any, baselines: Path) -> dict[str, str]:
    """Each A/B case's verdict, as `tilegate compare` would judge it ({} where it cannot)."""
    from tilegate.judge.ab import compare_ab, load_noise, noise_path

    try:
        path = noise_path(run.env.gpu.slug, baselines)
        noise = load_noise(path) if path.exists() else None
        ab = compare_ab(run, noise)
    except InputError:
        return {}
    return {c.key: str(getattr(c.verdict, "name", c.verdict)) for c in ab.cases}


def explain_command(
    results: Path,
    cases: Sequence[str] = (),
    baselines: Path = Path("baselines"),
    out: Path | None = None,
) -> tuple[int, str]:
    """(exit code, text) of `tilegate explain`: 2 with the reason for a file that is not
    tilegate results or a case it does not hold; 0 otherwise."""
    from tilegate.judge.results import load_results

    try:
        run = load_results(results)
    except InputError as err:
        return EXIT_CANNOT_JUDGE, f"tilegate explain: {err}"
    known = set(run.rows) | set(run.base_rows)
    unknown = [c for c in cases if c not in known]
    if unknown:
        sample = ", ".join(sorted(known)[:6])
        return EXIT_CANNOT_JUDGE, (
            f"tilegate explain: results {results} hold no case {', '.join(unknown)} "
            f"(its cases: {sample}{', ...' if len(known) > 6 else ''})"
        )
    if run.env.ab is None or not run.base_rows:
        return EXIT_OK, (
            f"results {results} are not an A/B run (`tilegate perf --ab REF`): there is no base "
            "side to explain a change against\n"
        )
    verdicts = _verdicts(run, baselines)
    if cases:
        todo = [(c, verdicts.get(c, "")) for c in cases]
    else:
        changed = [
            k
            for k, h in run.rows.items()
            if k in run.base_rows and h.code_hash != run.base_rows[k].code_hash
        ]
        todo = [(k, v) for k, v in verdicts.items() if k in changed and v in EXPLAINED]
        if not verdicts:  # could not judge: every changed case, without its verdict
            todo = [(k, "") for k in changed]
        if not todo:
            return EXIT_OK, (
                f"nothing to explain: no decided case of {results} has changed code "
                f"({len(changed)} case(s) with changed code; name one to explain it anyway)\n"
            )
    explanations = explain_cases(results, todo)
    if out is not None:
        write(explanations, results, out)
    return EXIT_OK, text(explanations)


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="say why each decided case of an A/B results file changed (launches, compile facts)",
        description=(
            "For a results file written earlier (an A/B run, e.g. a CI artifact): per case whose "
            "code changed and whose verdict is decided, what differs between base and head: "
            "launches added or dropped with their share of the GPU time, and per changed Triton "
            f"kernel its compile facts (at most {MAX_LINES} lines a case). Name cases to explain "
            "them whatever their verdict. Exit 0; 2 for a bad file or an unknown case."
        ),
    )
    p.add_argument("results", metavar="RESULTS", help="a results JSON written by `tilegate perf`")
    p.add_argument("cases", nargs="*", metavar="CASE", help="case ids (default: the decided ones)")
    p.add_argument(
        "--baselines",
        default="baselines",
        metavar="DIR",
        help="where the A/B noise file is, for the verdicts (default: baselines)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write explanations.json and each case's TTGIR diff into DIR",
    )
    p.set_defaults(func=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    code, out = explain_command(
        Path(args.results),
        args.cases,
        Path(args.baselines),
        Path(args.out) if args.out else None,
    )
    (sys.stdout if code == EXIT_OK else sys.stderr).write(out if out.endswith("\n") else out + "\n")
    return code
