"""The sticky PR comment against a replayed GitHub REST exchange (tests/fixtures/github/): no
network. Create once, then edit in place; never another author's comment; refuse a summary
that names another pull request or commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tilegate.cli import main
from tilegate.report import pr_comment as comment
from tilegate.report.pr_comment import MARKER, Response

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
    monkeypatch.setattr(comment, "TRANSPORT", replay)
    return main(["comment", "post", *args, "--repo", "example/tilegate", "--run-url", RUN])


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


def _judged(tmp_path: Path) -> Path:
    """A regressed run judged as `tilegate perf` / `tilegate ci` judge it: its verdicts.json."""
    from tilegate.run.gate import gate

    fixtures = Path(__file__).parent / "fixtures"
    report = tmp_path / "perf" / "report.md"
    report.parent.mkdir()
    results = fixtures / "synthetic-results-regressed.json"
    baselines = fixtures / "synthetic-baselines"
    assert gate(results, baselines_dir=baselines, report_path=report).code == 1
    return report.with_name("verdicts.json")


def test_comment_and_summary_render_verdicts_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tilegate comment` (comment.md, and with --pr the comment.json `post` reads) and
    `tilegate summary` render verdicts.json; `tilegate ci`'s decision there wins."""
    from tilegate.report.pr_comment import read_summary, verdict

    verdicts = _judged(tmp_path)
    (verdicts.parent / "report.md").write_text("# something else entirely\n")  # not read
    args = ["comment", "--verdicts", str(verdicts), "--pr", "7", "--head-sha", SHA]
    assert main([*args, "--gpu", "nvidia-h200"]) == 0
    s = read_summary(verdicts.with_name("comment.json"))
    assert (s.pr, s.head_sha, s.gpu, s.exit_code) == (7, SHA, "nvidia-h200", 1)
    assert s.headline == "tilegate: FAIL: 2 regressions, 1 broken expectation"
    assert s.deciding.startswith("| case | decided by |") and verdict(s) == "❌ REGRESSION"
    text = verdicts.with_name("comment.md").read_text()
    assert "| `nvidia-h200` | ❌ REGRESSION | tilegate: FAIL: 2 regressions" in text
    assert "| `persistent-fp16-nt-K4096` | REGRESSED against the baseline | +10.0% |" in text
    job = tmp_path / "step-summary.md"
    job.write_text("earlier step\n")
    assert main(["summary", "--verdicts", str(verdicts), "--out", str(job)]) == 0
    lines = job.read_text().splitlines()
    assert lines[:2] == [
        "earlier step",
        "## ❌ tilegate: FAIL: 2 regressions, 1 broken expectation",
    ]
    assert "# something else entirely" in lines  # the report beside it, below the title
    # `tilegate ci`'s decision (a gate change not acknowledged) is what both say
    record = json.loads(verdicts.read_text())
    record["ci"] = {"exit": 1, "headline": "tilegate: this pull request changes the gate (NOT"}
    verdicts.write_text(json.dumps(record))
    capsys.readouterr()
    assert main(["summary", "--verdicts", str(verdicts)]) == 0
    assert capsys.readouterr().out.startswith("## ❌ tilegate: this pull request changes the gate")
    # a head commit the comment job would refuse is refused here, nothing written
    verdicts.with_name("comment.json").unlink()
    assert main([*args[:5], "--head-sha", "HEAD", "--gpu", "nvidia-h200"]) == 2
    assert not verdicts.with_name("comment.json").exists()
    assert main(["comment", "--verdicts", str(tmp_path / "none.json")]) == 2
