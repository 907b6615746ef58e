"""`tilegate explain RESULTS [CASE...]`: why each decided case of an A/B results file changed,
with the verdicts of the run that wrote it (tilegate.explain.diff finds the facts,
tilegate.report.why words them)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilegate.commands._shared import Shared
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError
from tilegate.explain.diff import MAX_LINES, decided, explain_cases, write
from tilegate.fileio import read_json
from tilegate.judge.vocabulary import MemoryVerdict
from tilegate.markdown import mib, mib_change
from tilegate.report.why import text

NAME = "explain"
HELP = "say why each decided case of an A/B results file changed (launches, compile facts)"
DESCRIPTION = f"""For a results file written earlier (an A/B run, e.g. a CI artifact): per case
whose code changed and whose verdict is decided, what differs between base and head: launches added
or dropped with their share of the GPU time, and per changed Triton kernel its compile facts (at
most {MAX_LINES} lines a case). Name cases to explain them whatever their verdict. Exit 0; 2 for a
bad file or an unknown case."""
PARENTS = ("baselines",)  # its <gpu-slug>.ab.json, for the verdicts


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("results", metavar="RESULTS", help="a results JSON written by `tilegate perf`")
    p.add_argument("cases", nargs="*", metavar="CASE", help="case ids (default: the decided ones)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write explanations.json into DIR, and each case's TTGIR diff where both "
        "sides' TTGIR is at hand (explain/ir/ beside RESULTS, as `tilegate perf` leaves it)",
    )


def run(args: argparse.Namespace) -> int:
    code, out = explain_command(
        Path(args.results),
        args.cases,
        Path(args.baselines),
        Path(args.out) if args.out else None,
    )
    (sys.stdout if code == EXIT_OK else sys.stderr).write(out if out.endswith("\n") else out + "\n")
    return code


def _recorded(results: Path) -> dict[str, Any] | None:
    """The Judgement's record the run wrote beside `results` (judge.gate.VERDICTS: headline,
    verdicts, decided cases, confirmations included); None: there is none, or of another file."""
    from tilegate.judge.gate import VERDICTS, VERDICTS_SCHEMA

    path = results.parent / VERDICTS
    try:
        data = read_json(path, "the run's verdicts record")
        digest = hashlib.sha256(results.read_bytes()).hexdigest()
    except (InputError, OSError):
        return None
    if not isinstance(data, dict) or data.get("schema") != VERDICTS_SCHEMA:
        return None
    if data.get("results") != results.name or data.get("results_sha256") != digest:
        return None
    return data


def _judged_again(results: Path, baselines: Path) -> dict[str, Any] | None:
    """No record beside the file: the run judged again as `tilegate compare` would (without the
    confirmations it may have had). None when it cannot be judged here."""
    from tilegate.store.files import judge_files

    try:
        judged = judge_files(results, baselines_dir=baselines)
    except InputError:
        return None
    return {**judged.record(), "explained": decided(judged.comparison, judged.ab)}


def _memory(found: dict[str, Any], cases: Sequence[str]) -> list[str]:
    """A record's memory verdicts: the named cases', else those that are not SAME."""
    same = MemoryVerdict.SAME.name
    keys = [c for c in cases if c in found] if cases else [k for k in found
            if found[k]["verdict"] != same]  # fmt: skip
    return [
        f"{k}: {MemoryVerdict[m['verdict']].value} against the {m['against']}: peak GPU memory "
        f"{mib(m['before'])} -> {mib(m['after'])} ({mib_change(m['before'], m['after'])}"
        f"; tolerance {m['tolerance']})"
        for k in keys
        for m in [found[k]]
    ]


def explain_command(
    results: Path,
    cases: Sequence[str] = (),
    baselines: Path = Path("baselines"),
    out: Path | None = None,
) -> tuple[int, str]:
    """(exit code, text) of `tilegate explain`: the run's headline, each decided case with changed
    code explained, with the verdicts of the run's record (judged again without one). 2 with why
    for a file that is not tilegate results or a case it does not hold; 0 otherwise."""
    from tilegate.store.files import load_results

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
    record = _recorded(results)
    head: list[str] = []
    if record is not None:
        confirmed = record.get("confirmations") or []
        head = [str(record.get("headline", ""))]
        if confirmed:
            head.append(f"(verdicts of the run, with its confirmations {', '.join(confirmed)})")
    else:
        record = _judged_again(results, baselines)
        if record is not None:
            head = [
                str(record["headline"]),
                f"(no record of the run beside {results}: judged again, without confirmations)",
            ]
    memory: dict[str, Any] = (record or {}).get("memory") or {}
    head += _memory(memory, cases)
    # one verdict a case, named or not: the decided one's (what the report's why says), else the
    # run's verdict of it
    verdicts: dict[str, str] = dict(record.get("verdicts") or {}) if record else {}
    verdicts.update({str(k): str(v) for k, v in (record or {}).get("explained") or []})
    if cases:
        todo = [(c, verdicts.get(c, "")) for c in cases]
    else:
        changed = [
            k
            for k, h in run.rows.items()
            if k in run.base_rows and h.code_hash != run.base_rows[k].code_hash
        ]
        todo = [(str(k), str(v)) for k, v in (record or {}).get("explained") or []]
        explained, more = dict(todo), MemoryVerdict.MORE_MEMORY.name
        todo += [(k, more) for k, m in memory.items()
                 if m["verdict"] == more and k in changed and k not in explained]  # fmt: skip
        if record is None:  # could not judge: every changed case, without its verdict
            todo = [(k, "") for k in changed]
        if not todo:
            return EXIT_OK, "\n".join(
                [
                    *head,
                    f"nothing to explain: no decided case of {results} has changed code "
                    f"({len(changed)} case(s) with changed code; name one to explain it anyway)",
                ]
            ) + "\n"
    explanations = explain_cases(results, todo)
    if out is not None:
        write(explanations, results, out)
    return EXIT_OK, "".join(f"{line}\n" for line in head) + text(explanations)
