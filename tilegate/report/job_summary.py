"""The CI job's summary (GitHub's job summary page) from verdicts.json (`tilegate ci`'s summary.md,
`tilegate summary`): its title the record's headline (`tilegate ci`'s decision where it made one,
else the Judgement's: the PR comment's and `tilegate explain`'s words), led by a mark for the exit
code, then the report; without a record, why there is no verdict and the end of the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilegate.report.pr_comment import decision

MAX_REPORT = 900_000  # characters of the report in the summary (GitHub keeps at most 1 MiB)
MARK = {0: "✅", 1: "❌"}  # the exit code's mark before the headline; anything else: ⚠️


def title(record: Mapping[str, Any]) -> str:
    """The summary's title: the decision's headline with the exit code's mark; without one,
    why there is no verdict."""
    words, rc = decision(record)
    if words:
        return f"{MARK.get(rc if rc is not None else -1, '⚠️')} {words}"
    if rc is None:
        return "⚠️ perf: COULD NOT JUDGE: the job stopped before the gate decided (see the log)"
    return f"⚠️ perf: COULD NOT JUDGE: the run exited {rc} without a verdict"


def render(
    record: Mapping[str, Any],
    report: str,
    *,
    head_sha: str = "",
    runner: str = "",
    artifact: str = "",
    log_tail: str = "",
) -> str:
    """The job summary in markdown: the title, where the files are, the report (or the end of
    the log when there is none)."""
    out = [f"## {title(record)}", ""]
    where = f"Commit `{head_sha}`" if head_sha else "This commit"
    where += (f" on runner `{runner}`" if runner else "") + "."
    if artifact:
        where += f" Results, report and plots: artifact `{artifact}`."
    out += [where, ""]
    if report.strip():
        out.append(report[:MAX_REPORT].rstrip())
        if len(report) > MAX_REPORT:
            out += ["", "*(report cut here: see the artifact)*"]
    else:
        out += ["No report was written. The end of the log:", "", "```"]
        out += [log_tail.rstrip() or "(no log)", "```"]
    return "\n".join(out) + "\n"


def fleet_line(record: Mapping[str, Any], gpu: str) -> str:
    """The fleet summary's table row of one GPU model (tilegate's own perf.yml)."""
    words = decision(record)[0].replace("|", "/")
    return f"| `{gpu}` | {title(record).replace('|', '/')} | {words} |\n"
