"""`tilegate comment`: the pull request's comment from verdicts.json (comment.md, and with --pr
the comment.json a `workflow_run` job posts); `tilegate comment post`: create or edit the one
sticky comment (tilegate.report.pr_comment)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared
from tilegate.errors import EXIT_OK, InputError

NAME = "comment"
HELP = "render the pull request comment from .perf/verdicts.json; `post` creates or edits it"
DESCRIPTION = """Render one GPU's pull-request comment from verdicts.json (what `tilegate ci` and
`tilegate perf` write) into comment.md beside it; with --pr, --head-sha and --gpu also comment.json,
what `tilegate comment post` reads (in a workflow_run job: the default branch's code, never the pull
request's)."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("--verdicts", type=Path, default=PERF_DIR / "verdicts.json", metavar="PATH")
    p.add_argument("--pr", type=int, help="the pull request number (writes comment.json)")
    p.add_argument("--head-sha", default="", help="the pull request's head commit measured")
    p.add_argument("--gpu", default="", help="the GPU slug (the runner's model)")
    p.set_defaults(post=False)
    post = p.add_subparsers(dest="action", metavar="post").add_parser(
        "post", help="create or edit the sticky comment from comment.json files (GITHUB_TOKEN)"
    )
    post.add_argument("summaries", nargs="+", type=Path, help="each GPU's comment.json")
    post.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", ""), help="owner/name")
    post.add_argument("--run-url", required=True, help="the CI run (its summary holds the reports)")
    post.add_argument("--page-url", help="the history page")
    post.add_argument("--expect-sha", help="the head commit the CI run measured")
    post.set_defaults(post=True)


def run(args: argparse.Namespace) -> int:
    from tilegate.fileio import atomic_write_text, read_json
    from tilegate.report import pr_comment
    from tilegate.run.ci_gate import gpu_of

    if args.post:
        return _post(args)
    record = read_json(args.verdicts, "verdicts.json")
    out, gpu = args.verdicts.parent / "comment.md", args.gpu or gpu_of(args.verdicts.parent)
    atomic_write_text(out, pr_comment.render(record, head_sha=args.head_sha, gpu=gpu))
    if args.pr is not None:
        where = out.with_name("comment.json")
        pr_comment.write_summary(where, record, pr=args.pr, head_sha=args.head_sha, gpu=gpu)
        out = where
    print(f"wrote {out}")
    return EXIT_OK


def _post(args: argparse.Namespace) -> int:
    from tilegate.report.pr_comment import GitHub, post, read_summary

    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise InputError("GITHUB_TOKEN is not set")
    summaries = [read_summary(f) for f in args.summaries]
    if args.expect_sha and any(s.head_sha != args.expect_sha for s in summaries):
        raise InputError(f"a summary names another commit than the CI run's {args.expect_sha}")
    done = post(GitHub(args.repo, token), summaries, args.run_url, args.page_url)
    print(f"{done.action} comment {done.comment_id}: {done.url}")
    return EXIT_OK
