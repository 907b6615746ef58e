"""The sticky pull-request comment: one per pull request, created once, then edited in place.

The perf workflow's GPU job (the PR's code, a read-only token) writes `.perf/comment.json` into
its artifact; the `pr comment` workflow (`.github/workflows/pr-comment.yml`, started by
`workflow_run` of perf, so it runs the base branch's code, never the PR's) reads those files and
calls `python -m tilegate.report.comment post`. The summary file, one per GPU model:

    {"schema": "tilegate-comment/1",
     "pr": 123,                      # the pull request number
     "head_sha": "<40 hex>",         # the PR head commit measured
     "gpu": "nvidia-h200",
     "exit_code": 0 | 1 | 2 | null,  # nox -s perf's (null: it never finished)
     "judged": true,                 # false: no baseline for this GPU yet (measured, not judged)
     "headline": "...",              # the report's first line (without "# "), or the job
                                     # summary's headline when no report was written
     "deciding": "markdown"}         # the report's `## Deciding cases` section (may be empty)

The perf job writes it with `python3 -m tilegate.report.comment write` (`write_summary`), which
takes the deciding cases from the report (`deciding_section`; tilegate.report.render writes that
section under the heading `DECIDING`).

Everything in it came from a PR's run and is untrusted: the number and head commit are checked
against the pull request through the API (a summary naming another PR or another commit is
refused), text is cut to a bounded size and the hidden marker is removed from it, so it can
neither post elsewhere nor take over another comment. The REST calls go through urllib (no new
dependency) and a replaceable transport, so tests replay a recorded exchange.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError

MARKER = "<!-- tilegate-perf -->"
SCHEMA = "tilegate-comment/1"
BOT = "github-actions[bot]"  # the author of the sticky comment (GITHUB_TOKEN's identity)
MAX_DECIDING = 20_000  # characters of one GPU's deciding-cases table kept in the comment
DECIDING = "## Deciding cases"  # the report's section the comment copies (tilegate.report.render)
API = "https://api.github.com"


@dataclass(frozen=True)
class Response:
    status: int
    body: Any  # parsed JSON (None when empty)
    link: str = ""  # the Link header (pagination)


# (method, url, json body or None, headers) -> Response
Transport = Callable[[str, str, Any, Mapping[str, str]], Response]


def urllib_transport(method: str, url: str, body: Any, headers: Mapping[str, str]) -> Response:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return Response(
                resp.status, json.loads(raw) if raw else None, resp.headers.get("Link", "")
            )
    except urllib.error.HTTPError as err:
        raw = err.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        return Response(err.code, parsed, "")


@dataclass(frozen=True)
class Summary:
    pr: int
    head_sha: str
    gpu: str
    exit_code: int | None
    judged: bool
    headline: str
    deciding: str


def _clean(text: str, limit: int) -> str:
    text = text.replace(MARKER, "").replace("<!--", "&lt;!--")
    return text if len(text) <= limit else text[:limit] + "\n\n*(cut: see the full report)*"


def read_summary(path: Path) -> Summary:
    """One GPU's comment.json, validated (InputError naming the file otherwise)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"PR comment summary {path}: not readable JSON ({err})") from err
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(f"PR comment summary {path}: not a {SCHEMA} file")
    pr, sha, gpu, rc = data.get("pr"), data.get("head_sha"), data.get("gpu"), data.get("exit_code")
    if not isinstance(pr, int) or pr < 1:
        raise InputError(f"PR comment summary {path}: 'pr' must be a pull request number")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise InputError(f"PR comment summary {path}: 'head_sha' must be a 40-digit commit id")
    if not isinstance(gpu, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,80}", gpu):
        raise InputError(f"PR comment summary {path}: 'gpu' must be a GPU slug")
    if rc is not None and (not isinstance(rc, int) or isinstance(rc, bool)):
        raise InputError(f"PR comment summary {path}: 'exit_code' must be an integer or null")
    return Summary(
        pr,
        sha,
        gpu,
        rc,
        bool(data.get("judged", True)),
        _clean(str(data.get("headline", "")), 300).replace("\n", " "),
        _clean(str(data.get("deciding", "")), MAX_DECIDING),
    )


def deciding_section(report: str) -> str:
    """The body of a report's `## Deciding cases` section (to the next heading or rule), or ''."""
    lines = report.splitlines()
    try:
        start = lines.index(DECIDING) + 1
    except ValueError:
        return ""
    end = next(
        (i for i in range(start, len(lines)) if lines[i].startswith(("# ", "## ", "---"))),
        len(lines),
    )
    return "\n".join(lines[start:end]).strip()


def write_summary(
    out: Path,
    *,
    pr: int,
    head_sha: str,
    gpu: str,
    exit_code: int | None,
    judged: bool,
    headline: str,
    report: Path | None = None,
) -> dict[str, Any]:
    """Write one GPU's comment.json (what `read_summary` reads) from the job's facts and its
    report: the headline is the report's first line when there is a report, `headline` else."""
    text = ""
    if report is not None:
        try:
            text = report.read_text("utf-8", errors="replace")
        except OSError:
            text = ""
    first = text.splitlines()[0] if text.strip() else ""
    data = {
        "schema": SCHEMA,
        "pr": pr,
        "head_sha": head_sha,
        "gpu": gpu,
        "exit_code": exit_code,
        "judged": judged,
        "headline": first.removeprefix("# ").strip() or headline,
        "deciding": deciding_section(text)[:MAX_DECIDING],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    try:
        read_summary(tmp)  # what the comment job will accept, or InputError now
    except InputError as err:
        tmp.unlink()
        raise InputError(str(err).replace(str(tmp), str(out))) from None
    tmp.replace(out)
    return data


def _exit_code(text: str) -> int | None:
    """The measure step's `rc` output: '' (it never finished) or anything not a number is null."""
    try:
        return int(text)
    except ValueError:
        return None


def verdict(s: Summary) -> str:
    """The exit rule, as the perf job's Verdict step applies it."""
    if not s.judged:
        return "➖ NOT JUDGED (no baseline for this GPU yet)"
    return {0: "✅ no regression", 1: "❌ REGRESSION"}.get(
        s.exit_code if s.exit_code is not None else -1, "⚠️ COULD NOT JUDGE"
    )


def body(summaries: Sequence[Summary], run_url: str, page_url: str | None) -> str:
    """The comment: the marker, one verdict line per GPU, each GPU's deciding cases, links."""
    head = summaries[0].head_sha
    lines = [MARKER, f"## tilegate perf: `{head[:10]}`", ""]
    lines += ["| GPU | verdict | headline |", "|---|---|---|"]
    for s in summaries:
        lines.append(f"| `{s.gpu}` | {verdict(s)} | {s.headline.replace('|', '/')} |")
    for s in summaries:
        if s.deciding.strip():
            lines += ["", f"**Deciding cases on `{s.gpu}`**", "", s.deciding.strip()]
    links = [f"[full report: the run's summary]({run_url})"]
    if page_url:
        links.append(f"[history page]({page_url})")
    lines += [
        "",
        " · ".join(links),
        "",
        "<sub>Edited in place on every perf run of this pull request.</sub>",
    ]
    return "\n".join(lines) + "\n"


class GitHub:
    def __init__(
        self, repo: str, token: str, transport: Transport = urllib_transport, api: str = API
    ) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise InputError(f"repository {repo!r} is not owner/name")
        self.repo, self.api, self._send = repo, api.rstrip("/"), transport
        self._headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "tilegate-pr-comment",
        }

    def call(
        self, method: str, path: str, payload: Any = None, ok: tuple[int, ...] = (200,)
    ) -> Response:
        url = path if path.startswith("https://") else f"{self.api}/repos/{self.repo}{path}"
        resp = self._send(method, url, payload, self._headers)
        if resp.status not in ok:
            message = resp.body.get("message") if isinstance(resp.body, dict) else resp.body
            raise InputError(f"GitHub API {method} {url}: HTTP {resp.status} ({message})")
        return resp

    def comments(self, pr: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        url: str | None = f"/issues/{pr}/comments?per_page=100"
        while url:
            resp = self.call("GET", url)
            out += list(resp.body or [])
            m = re.search(r'<([^>]+)>;\s*rel="next"', resp.link)
            url = m.group(1) if m else None
        return out


@dataclass(frozen=True)
class Posted:
    action: str  # "created" or "edited"
    comment_id: int
    url: str


def post(
    gh: GitHub, summaries: Sequence[Summary], run_url: str, page_url: str | None, author: str = BOT
) -> Posted:
    """Create the sticky comment, or edit the one already there (the marker, by `author`)."""
    if not summaries:
        raise InputError("no PR comment summary: the perf run wrote no .perf/comment.json")
    prs = {(s.pr, s.head_sha) for s in summaries}
    if len(prs) != 1:
        raise InputError(f"the summaries name different pull requests or commits: {sorted(prs)}")
    ((pr, sha),) = prs
    live = gh.call("GET", f"/pulls/{pr}").body
    if live.get("head", {}).get("sha") != sha:
        raise InputError(
            f"pull request #{pr}'s head is {live.get('head', {}).get('sha')}, the summary's {sha}: "
            "not commenting (a newer push, or a summary that names another pull request)"
        )
    text = body(summaries, run_url, page_url)
    mine = [
        c
        for c in gh.comments(pr)
        if MARKER in (c.get("body") or "") and (c.get("user") or {}).get("login") == author
    ]
    if mine:
        c = gh.call("PATCH", f"/issues/comments/{mine[0]['id']}", {"body": text}).body
        return Posted("edited", int(c["id"]), str(c["html_url"]))
    c = gh.call("POST", f"/issues/{pr}/comments", {"body": text}, ok=(201,)).body
    return Posted("created", int(c["id"]), str(c["html_url"]))


def main(argv: Sequence[str] | None = None, transport: Transport = urllib_transport) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tilegate.report.comment", description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("post", help="create or edit the sticky comment from comment.json files")
    q.add_argument("summaries", nargs="+", type=Path, help="each GPU's comment.json")
    q.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", ""), help="owner/name")
    q.add_argument("--run-url", required=True, help="the perf run (its summary holds the reports)")
    q.add_argument("--page-url", help="the history page")
    q.add_argument(
        "--expect-sha", help="the head commit the perf run measured (workflow_run.head_sha)"
    )
    w = sub.add_parser("write", help="write one GPU's comment.json (the perf job, pull requests)")
    w.add_argument("--out", type=Path, default=Path(".perf/comment.json"))
    w.add_argument("--report", type=Path, default=Path(".perf/report.md"))
    w.add_argument("--pr", type=int, required=True, help="the pull request number")
    w.add_argument("--head-sha", required=True, help="the PR head commit measured")
    w.add_argument("--gpu", required=True, help="the GPU slug (the matrix entry)")
    w.add_argument("--exit-code", default="", help="the perf run's exit code ('' if none)")
    w.add_argument("--not-judged", action="store_true", help="no baseline for this GPU yet")
    w.add_argument("--headline", default="", help="the job summary's headline")
    args = p.parse_args(argv)
    if args.cmd == "write":
        try:
            write_summary(
                args.out,
                pr=args.pr,
                head_sha=args.head_sha,
                gpu=args.gpu,
                exit_code=_exit_code(args.exit_code),
                judged=not args.not_judged,
                headline=args.headline,
                report=args.report,
            )
        except (InputError, OSError) as err:
            print(f"tilegate comment: cannot write {args.out}: {err}", file=sys.stderr)
            return EXIT_CANNOT_JUDGE
        print(f"wrote {args.out}")
        return EXIT_OK
    token = os.environ.get("GITHUB_TOKEN", "")
    try:
        if not token:
            raise InputError("GITHUB_TOKEN is not set")
        summaries = [read_summary(f) for f in args.summaries]
        if args.expect_sha and any(s.head_sha != args.expect_sha for s in summaries):
            raise InputError(
                f"a summary names another commit than the perf run's {args.expect_sha}"
            )
        done = post(GitHub(args.repo, token, transport), summaries, args.run_url, args.page_url)
    except InputError as err:
        print(f"tilegate comment: cannot do it: {err}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
    print(f"{done.action} comment {done.comment_id}: {done.url}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
