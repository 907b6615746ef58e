"""`tilegate bisect GOOD BAD`: which commit changed the cases' time, identity first, time second
(tilegate.run.culprit; docs/bisect.md). Exit 0 once it has its answer (found, several, ambiguous
or none: an answer, not a verdict), 2 on bad input or a crash."""

from __future__ import annotations

import argparse

from tilegate.commands._shared import PERF_DIR, Shared

NAME = "bisect"
HELP = "the commit of GOOD..BAD that changed the cases' time (docs/bisect.md)"
DESCRIPTION = """Each commit's compiled identity of the cases first (nothing timed; equal runs
collapse, a commit that does not import is skipped), then paired A/B steps over the commits where it
changes, the culprit against its parent, explained. Writes .perf/bisect/report.md and
bisect.json."""
PROFILE = "the profile whose cases are bisected"


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("good", help="a commit where the cases were as before")
    p.add_argument("bad", help="a descendant of GOOD where they changed")
    p.add_argument("--case", action="append", default=[], metavar="PATTERN",
                   help="case ids (fnmatch or a regular expression; repeatable)")  # fmt: skip
    p.add_argument("--from", dest="verdicts", default="", metavar="PATH",
                   help="a run's verdicts.json: its SLOWER, FASTER and REGRESSED cases")  # fmt: skip
    p.add_argument("--rounds", type=int, default=32, help="paired rounds of a step's first try")
    p.add_argument("--max-rounds", type=int, default=256, help="an UNKNOWN step's cap")
    p.add_argument("--resume", action="store_true", help="go on from .perf/bisect/bisect.json")


def run(args: argparse.Namespace) -> int:
    from tilegate.run.culprit import Bisect

    return Bisect(args, PERF_DIR / NAME).run()
