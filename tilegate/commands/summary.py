"""`tilegate summary`: the CI job's summary from verdicts.json and the report beside it
(tilegate.report.job_summary), appended to --out ($GITHUB_STEP_SUMMARY) or printed."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared
from tilegate.errors import EXIT_OK

NAME = "summary"
HELP = "the job summary from .perf/verdicts.json (append it to $GITHUB_STEP_SUMMARY)"
DESCRIPTION = """Render the CI job's summary: the decision's headline (verdicts.json, `tilegate
ci`'s where it decided), where the files are, then the report beside it; without a verdicts.json,
why there is none and the end of --log."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("--verdicts", type=Path, default=PERF_DIR / "verdicts.json", metavar="PATH")
    p.add_argument("--out", type=Path, help="append the summary here (default: print it)")
    p.add_argument("--head-sha", default="", help="the commit measured")
    p.add_argument("--runner", default=os.environ.get("RUNNER_NAME", ""))
    p.add_argument("--artifact", default="", help="the artifact holding .perf/")
    p.add_argument("--log", type=Path, help="the run's log: its end is shown without a report")
    p.add_argument("--fleet-line", type=Path, metavar="PATH", help="write the fleet's row here")
    p.add_argument("--gpu", default="", help="the GPU slug of the fleet's row")


def run(args: argparse.Namespace) -> int:
    from tilegate.fileio import read_json
    from tilegate.report.job_summary import fleet_line, render
    from tilegate.run.ci_gate import read_text_or

    have = args.verdicts.is_file()
    record = read_json(args.verdicts, "verdicts.json") if have else {}
    report = read_text_or(args.verdicts.parent / "report.md") if have else ""
    tail = "\n".join(read_text_or(args.log).splitlines()[-40:]) if args.log else ""
    text = render(
        record, report, head_sha=args.head_sha, runner=args.runner, artifact=args.artifact,
        log_tail=tail,
    )  # fmt: skip
    if args.fleet_line is not None:
        args.fleet_line.parent.mkdir(parents=True, exist_ok=True)
        args.fleet_line.write_text(fleet_line(record, args.gpu), "utf-8")
    if args.out is None:
        print(text, end="")
        return EXIT_OK
    with args.out.open("a", encoding="utf-8") as f:
        f.write(text)
    print(text.splitlines()[0].removeprefix("## "))
    return EXIT_OK
