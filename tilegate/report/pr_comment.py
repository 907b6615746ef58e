"""The sticky pull-request comment: one per pull request, created once, then edited in place.

`tilegate ci` renders one GPU's comment from its verdicts.json (`render`: comment.md); `tilegate
comment --pr N --head-sha SHA --gpu SLUG` writes the same facts into `.perf/comment.json` (the GPU
job's artifact: the PR's code, a read-only token); a `workflow_run` workflow (the default branch's
code, never the PR's) reads those files and calls `tilegate comment post`. One file per GPU model:

    {"schema": "tilegate-comment/1", "pr": 123, "head_sha": "<40 hex: the PR head measured>",
     "gpu": "nvidia-h200", "exit_code": 0 | 1 | 2 | null,  # `tilegate ci`'s where it decided
     "judged": true,                 # false in older files: no baseline for this GPU (not judged)
     "headline": "...", "deciding": "markdown"}  # verdicts.json's headline and `deciding`

Everything in it is untrusted (a PR's run): the number and head commit are checked against the
pull request through the API (another PR or commit is refused), text is cut to a bounded size and
the hidden marker removed, so it can neither post elsewhere nor take over another comment. The
REST calls go through urllib and a replaceable transport (tests replay a recorded exchange).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json

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


TRANSPORT: Transport = urllib_transport  # what GitHub calls the API through (tests replay)


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
    return checked(data, path)


def checked(data: Any, path: Path) -> Summary:
    """A comment.json's data as the comment job accepts it (InputError naming `path`)."""
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


def decision(record: Mapping[str, Any]) -> tuple[str, int | None]:
    """A verdicts.json record's headline and exit code: `tilegate ci`'s decision where it wrote
    one (a gate change leads the report), else the Judgement's."""
    ci = record.get("ci") or {}
    rc = ci.get("exit", record.get("exit_code"))
    words = str(ci.get("headline") or record.get("headline") or "")
    return words, rc if isinstance(rc, int) else None


def summary_of(
    record: Mapping[str, Any], *, pr: int = 0, head_sha: str = "", gpu: str = ""
) -> Summary:
    words, rc = decision(record)
    return Summary(pr, head_sha, gpu, rc, True, words, str(record.get("deciding") or ""))


def render(record: Mapping[str, Any], *, head_sha: str = "", gpu: str = "") -> str:
    """One GPU's comment (comment.md) from its verdicts.json record."""
    return body([summary_of(record, head_sha=head_sha, gpu=gpu)], None, None)


def write_summary(
    out: Path, record: Mapping[str, Any], *, pr: int, head_sha: str, gpu: str
) -> None:
    """One GPU's comment.json (what `post` reads) from its verdicts.json record; InputError
    naming `out`, and nothing written, when the comment job would refuse it."""
    s = summary_of(record, pr=pr, head_sha=head_sha, gpu=gpu)
    data = {
        "schema": SCHEMA,
        "pr": pr,
        "head_sha": head_sha,
        "gpu": gpu,
        "exit_code": s.exit_code,
        "judged": True,
        "headline": s.headline,
        "deciding": s.deciding[:MAX_DECIDING],
    }
    checked(data, out)
    atomic_write_json(out, data)


def verdict(s: Summary) -> str:
    """The exit rule, as the perf job's Verdict step applies it."""
    if not s.judged:
        return "➖ NOT JUDGED (no baseline for this GPU yet)"
    return {0: "✅ no regression", 1: "❌ REGRESSION"}.get(
        s.exit_code if s.exit_code is not None else -1, "⚠️ COULD NOT JUDGE"
    )


def body(summaries: Sequence[Summary], run_url: str | None, page_url: str | None) -> str:
    """The comment: the marker, one verdict line per GPU, each GPU's deciding cases, links."""
    head = summaries[0].head_sha
    lines = [MARKER, "## tilegate perf" + (f": `{head[:10]}`" if head else ""), ""]
    lines += ["| GPU | verdict | headline |", "|---|---|---|"]
    gpu = {s.gpu: f"`{s.gpu}`" if s.gpu else "this GPU" for s in summaries}
    for s in summaries:
        lines.append(f"| {gpu[s.gpu]} | {verdict(s)} | {s.headline.replace('|', '/')} |")
    for s in summaries:
        if s.deciding.strip():
            lines += ["", f"**Deciding cases on {gpu[s.gpu]}**", "", s.deciding.strip()]
    links = [f"[full report: the run's summary]({run_url})"] if run_url else []
    links += [f"[history page]({page_url})"] if page_url else []
    lines += ["", " · ".join(links), ""] if links else [""]
    lines.append("<sub>Edited in place on every perf run of this pull request.</sub>")
    return "\n".join(lines) + "\n"


class GitHub:
    def __init__(
        self, repo: str, token: str, transport: Transport | None = None, api: str = API
    ) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise InputError(f"repository {repo!r} is not owner/name")
        self.repo, self.api, self._send = repo, api.rstrip("/"), transport or TRANSPORT
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
