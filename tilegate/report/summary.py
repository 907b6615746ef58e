"""The perf job's summary (GitHub's job summary page): the run's headline, then its report.

The title is the report's headline (its first line: the Judgement's, tilegate.judge.gate), the
same words as the PR comment's and `tilegate explain`'s, led by a mark for the exit code; only
a run that wrote no report gets a title of its own (why there is no verdict). The perf workflow
calls it (`python -m tilegate.report.summary`, the standard library only, like
tilegate.report.comment):

    python -m tilegate.report.summary --report .perf/report.md --rc "$RC" --gpu "$GPU" \
        --head-sha "$SHA" --out "$GITHUB_STEP_SUMMARY" --fleet-line .perf/fleet-line.md

It appends the summary to `--out`, writes the fleet's one line per GPU model, and prints the
title (the PR comment's headline when there is no report).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

MAX_REPORT = 900_000  # characters of the report in the summary (GitHub keeps at most 1 MiB)
MARK = {"0": "✅", "1": "❌"}  # the exit code's mark before the headline; anything else: ⚠️


def headline(report: str) -> str:
    """The report's headline: its first line without "# " ('' when it has none)."""
    first = report.splitlines()[0] if report.strip() else ""
    return first.removeprefix("# ").strip() if first.startswith("# ") else ""


def title(report: str, rc: str, *, judged: bool = True, gpu: str = "") -> str:
    """The summary's title: the report's headline with the exit code's mark; without a report,
    why there is no verdict."""
    if not judged:
        return (
            f"➖ perf: NOT JUDGED: no baseline for {gpu or 'this GPU'} yet (run rebaseline.yml "
            f"with gpu={gpu or '<slug>'}, review, merge)"
        )
    words = headline(report)
    if words:
        return f"{MARK.get(rc, '⚠️')} {words}"
    if rc == "":
        return "⚠️ perf: COULD NOT JUDGE: the job stopped before measuring (see the log)"
    if rc in ("1", "2"):
        return "⚠️ perf: COULD NOT JUDGE: the run failed before the gate wrote its report"
    return f"⚠️ perf: COULD NOT JUDGE: the run exited {rc}"


def summary(
    report: str,
    rc: str,
    *,
    judged: bool = True,
    gpu: str = "",
    head_sha: str = "",
    runner: str = "",
    artifact: str = "",
    note: str = "",
    log_tail: str = "",
) -> str:
    """The job summary in markdown: the title, where the files are, the report (or the end of
    the log when there is none)."""
    out = [f"## {title(report, rc, judged=judged, gpu=gpu)}", ""]
    where = f"Commit `{head_sha}`" + (f" on runner `{runner}`" if runner else "") + "."
    if artifact:
        where += f" Results, report and plots: artifact `{artifact}`. How to read this: docs/ci.md."
    out += [where, ""]
    if note.strip():
        out += [note.strip(), ""]
    if report.strip():
        out.append(report[:MAX_REPORT].rstrip())
        if len(report) > MAX_REPORT:
            out += ["", "*(report cut here: see the artifact)*"]
    else:
        out += [
            'No report was written. The end of the log of "Measure and judge":',
            "",
            "```",
            log_tail.rstrip() or "(no log: the step did not run)",
            "```",
        ]
    return "\n".join(out) + "\n"


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tilegate.report.summary", description=__doc__.splitlines()[0]
    )
    p.add_argument("--report", type=Path, default=Path(".perf/report.md"))
    p.add_argument("--rc", default="", help="the perf run's exit code ('' if it never finished)")
    p.add_argument("--not-judged", action="store_true", help="no baseline for this GPU yet")
    p.add_argument("--gpu", default="", help="the GPU slug (the matrix entry)")
    p.add_argument("--head-sha", default="", help="the commit measured")
    p.add_argument("--runner", default=os.environ.get("RUNNER_NAME", ""))
    p.add_argument("--artifact", default="", help="the artifact holding .perf/")
    p.add_argument("--note", type=Path, help="a markdown file to show above the report")
    p.add_argument("--log", type=Path, help="the run's log: its end is shown without a report")
    p.add_argument("--out", type=Path, help="append the summary here (default: print it)")
    p.add_argument("--fleet-line", type=Path, help="write the fleet summary's table row here")
    args = p.parse_args(argv)
    report = _read(args.report)
    rc = args.rc.strip()
    judged = not args.not_judged
    text = summary(
        report,
        rc,
        judged=judged,
        gpu=args.gpu,
        head_sha=args.head_sha,
        runner=args.runner,
        artifact=args.artifact,
        note=_read(args.note),
        log_tail="\n".join(_read(args.log).splitlines()[-40:]),
    )
    heading = title(report, rc, judged=judged, gpu=args.gpu)
    if args.fleet_line is not None:
        args.fleet_line.parent.mkdir(parents=True, exist_ok=True)
        args.fleet_line.write_text(
            f"| `{args.gpu}` | {heading.replace('|', '/')} | "
            f"{headline(report).replace('|', '/')} |\n",
            "utf-8",
        )
    if args.out is None:
        print(text, end="")
        return 0
    with args.out.open("a", encoding="utf-8") as f:
        f.write(text)
    print(heading)  # the PR comment's headline when there is no report
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
