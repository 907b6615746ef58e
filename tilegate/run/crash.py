"""A crash is "cannot judge": an unexpected exception becomes exit 2, one line, its traceback saved.

Exit 1 means a measured regression or broken expectation; a bug in the gate, a full disk or a path
that is a directory must read as neither that nor a pass. Every entry point (`tilegate` and its
commands, the perf loop, the nox sessions) ends an exception here: its cause on one line, the
traceback in `<dir>/crash-<command>.txt` (default `.perf/`, which CI uploads), the command's
report replaced by a CANNOT JUDGE report (never a stale one).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.fileio import atomic_write_text
from tilegate.report.cannot_judge import cannot_judge_report

CRASH_DIR = Path(".perf")
INTERRUPTED = "interrupted (SIGINT): nothing was judged"


def crash_path(command: str, directory: Path = CRASH_DIR) -> Path:
    return directory / f"crash-{re.sub(r'[^A-Za-z0-9_.-]+', '-', command)}.txt"


def save_traceback(command: str, err: BaseException, directory: Path = CRASH_DIR) -> str:
    """Write err's traceback to `crash_path`; return where it went (or why it could not)."""
    path = crash_path(command, directory)
    when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    try:
        atomic_write_text(path, f"{command} crashed at {when} (pid {os.getpid()}):\n\n{text}")
    except (OSError, InputError) as werr:
        return f"not saved: {werr}"
    return str(path)


def describe(err: BaseException) -> str:
    """`Type: message`, on one line."""
    message = " ".join(str(err).split())
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def crash_reason(command: str, err: BaseException, saved: str) -> str:
    return (
        f"{command} crashed ({describe(err)}); traceback: {saved}. This is a bug or a broken "
        "environment, not a verdict: nothing was judged"
    )


def replace_reports(reports: Sequence[Path], reason: str) -> list[str]:
    """Replace each report with a CANNOT JUDGE report; the reasons some could not be written."""
    failed = []
    for report in reports:
        try:
            atomic_write_text(report, cannot_judge_report(reason))
        except (OSError, InputError) as err:
            failed.append(f"report {report} not written: {describe(err)}")
    return failed


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def guarded(
    command: str,
    body: Callable[[], int],
    *,
    reports: Sequence[Path] = (),
    directory: Path = CRASH_DIR,
    say: Callable[[str], None] = _stderr,
) -> int:
    """Run a command's body; an InputError or any other exception escaping it is exit 2. `say`
    gets one line (stderr); `reports`: the files the command would have written its report to."""
    try:
        return body()
    except InputError as err:  # bad input that the command did not catch itself: no traceback
        reason = str(err)
    except KeyboardInterrupt:  # Ctrl-C: not a verdict either, and no traceback
        reason = INTERRUPTED
    except Exception as err:
        reason = crash_reason(command, err, save_traceback(command, err, directory))
    failed = replace_reports(reports, reason)
    say("; ".join([f"cannot judge: {reason}", *failed]))
    return EXIT_CANNOT_JUDGE
