"""The sticky PR comment against a replayed GitHub REST exchange (tests/fixtures/github/): no
network. Create once, then edit in place; never another author's comment; refuse a summary
that names another pull request or commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tilegate.report.comment import MARKER, Response, main

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "github" / "sticky-comment.json").read_text()
)
SHA = FIXTURE["head_sha"]
RUN = "https://github.com/example/tilegate/actions/runs/99"


class Replay:
    """A transport that answers from the recorded exchange, checking each request in order."""

    def __init__(self, exchange: list[dict[str, Any]]) -> None:
        self.todo = list(exchange)
        self.sent: list[tuple[str, str, Any]] = []

    def __call__(self, method: str, url: str, body: Any, headers: Any) -> Response:
        assert self.todo, f"unexpected request {method} {url}"
        want = self.todo.pop(0)
        assert (method, url) == (want["request"]["method"], want["request"]["url"])
        assert headers["Authorization"] == "Bearer t0ken"
        for text in want["request"].get("body_has", []):
            assert text in body["body"], (text, body)
        self.sent.append((method, url, body))
        r = want["response"]
        return Response(r["status"], r["body"], r.get("link", ""))


def _summary(tmp: Path, gpu: str = "nvidia-h200", **kw: Any) -> Path:
    data = {
        "schema": "tilegate-comment/1",
        "pr": 7,
        "head_sha": SHA,
        "gpu": gpu,
        "exit_code": 1,
        "judged": True,
        "headline": "❌ perf: REGRESSION: a kernel got slower",
        "deciding": "| case | change | tolerance | verdict |\n|---|---:|---:|---|\n| xtile_persistent-fp16-nt-K128 | +6.1 % | 2.0 % | SLOWER |",
        **kw,
    }
    path = tmp / f"{gpu}.json"
    path.write_text(json.dumps(data))
    return path


def _run(monkeypatch: pytest.MonkeyPatch, replay: Replay, *args: str) -> int:
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    return main(["post", *args, "--repo", "example/tilegate", "--run-url", RUN], transport=replay)


def test_the_first_run_creates_the_comment_past_a_humans_quote_of_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = Replay(FIXTURE["create"])
    assert (
        _run(
            monkeypatch,
            replay,
            str(_summary(tmp_path)),
            "--page-url",
            "https://example.github.io/tilegate/",
        )
        == 0
    )
    assert replay.todo == []  # both pages of comments read, then one POST
    method, _, sent = replay.sent[-1]
    assert method == "POST"
    text = sent["body"]
    assert text.startswith(MARKER + "\n") and text.count(MARKER) == 1
    assert "| `nvidia-h200` | ❌ REGRESSION |" in text
    assert "| xtile_persistent-fp16-nt-K128 | +6.1 % |" in text
    assert f"]({RUN})" in text and "](https://example.github.io/tilegate/)" in text
    assert "created comment 2002" in capsys.readouterr().out


def test_a_later_run_edits_the_bots_comment_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = Replay(FIXTURE["edit"])
    summary = _summary(tmp_path, exit_code=0, headline="✅ perf: no regression", deciding="")
    assert _run(monkeypatch, replay, str(summary)) == 0
    assert replay.todo == [] and [m for m, _, _ in replay.sent] == ["GET", "GET", "PATCH"]
    assert "| `nvidia-h200` | ✅ no regression |" in replay.sent[-1][2]["body"]
    assert "edited comment 2002" in capsys.readouterr().out


def test_a_summary_cannot_post_elsewhere_or_hijack_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # another commit than the PR's head: refused after reading the PR, nothing posted
    replay = Replay(FIXTURE["create"][:1])
    assert _run(monkeypatch, replay, str(_summary(tmp_path, head_sha="a" * 40))) == 2
    assert "not commenting" in capsys.readouterr().err and len(replay.sent) == 1
    # a marker inside the untrusted text is removed; the body has exactly one
    replay = Replay(FIXTURE["create"])
    evil = _summary(tmp_path, deciding=f"{MARKER} <!-- hidden --> text")
    assert _run(monkeypatch, replay, str(evil)) == 0
    assert replay.sent[-1][2]["body"].count(MARKER) == 1
    assert "<!-- hidden" not in replay.sent[-1][2]["body"]
    # not a summary file: exit 2 naming it, no request
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    replay = Replay([])
    assert _run(monkeypatch, replay, str(bad)) == 2
    assert str(bad) in capsys.readouterr().err and replay.sent == []


def test_the_perf_jobs_comment_json_round_trips_into_the_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What perf.yml's summary step writes (`comment write`) is what the comment job reads."""
    from tests.test_report import regressed_report
    from tilegate.report.comment import body, deciding_section, read_summary, verdict

    report = tmp_path / "report.md"
    report.write_text(regressed_report(), encoding="utf-8")
    out = tmp_path / "perf" / "comment.json"
    args = ["write", "--out", str(out), "--report", str(report), "--pr", "7", "--head-sha", SHA]
    args += ["--gpu", "nvidia-h200", "--exit-code", "1", "--headline", "❌ perf: REGRESSION"]
    assert main(args) == 0 and f"wrote {out}" in capsys.readouterr().out
    assert json.loads(out.read_text())["schema"] == "tilegate-comment/1"
    s = read_summary(out)
    assert (s.pr, s.head_sha, s.gpu, s.exit_code, s.judged) == (7, SHA, "nvidia-h200", 1, True)
    assert s.headline == "tilegate: FAIL: 2 regressions, 1 broken expectation"  # the report's
    table = deciding_section(report.read_text())
    assert table.startswith("| case | decided by |") and s.deciding == table
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == 3 and "## " not in table and "Regressed**" not in table
    text = body([s], RUN, None)
    assert "| `nvidia-h200` | ❌ REGRESSION | tilegate: FAIL: 2 regressions" in text
    assert "| `persistent-fp16-nt-K4096` | REGRESSED against the baseline | +10.0% |" in text
    assert verdict(s) == "❌ REGRESSION"


def test_comment_json_of_a_job_without_a_report_or_a_verdict(tmp_path: Path) -> None:
    from tilegate.report.comment import read_summary

    out = tmp_path / "comment.json"
    args = ["write", "--out", str(out), "--report", str(tmp_path / "none.md"), "--pr", "7"]
    args += ["--head-sha", SHA, "--gpu", "nvidia-h200", "--exit-code", "", "--not-judged"]
    assert main([*args, "--headline", "⚠️ perf: COULD NOT JUDGE: the job stopped"]) == 0
    s = read_summary(out)
    assert (s.exit_code, s.judged, s.deciding) == (None, False, "")
    assert s.headline == "⚠️ perf: COULD NOT JUDGE: the job stopped"  # no report: the job's
    # a head commit the comment job would refuse is refused here, naming the file
    bad = ["write", "--out", str(out), "--pr", "7", "--head-sha", "HEAD", "--gpu", "nvidia-h200"]
    assert main(bad) == 2
    assert read_summary(out).head_sha == SHA and not out.with_name("comment.json.tmp").exists()
