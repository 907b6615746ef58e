"""One verdict, rendered the same everywhere: the Judgement (tilegate.judge.gate) decides the
headline once; the report, the PR comment, the job summary and `tilegate explain` render it.

Two A/B runs, each with its confirmation, written as the perf loop writes them: one with a
confirmed SLOWER case, one with a case that is +9 % in the first run and -26 % in its
confirmation (UNSTABLE: judged on the first run alone, it would be SLOWER). No GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._factories import key, results_file
from tilegate.cli import main
from tilegate.judge.gate import VERDICTS
from tilegate.report.pr_comment import read_summary, write_summary
from tilegate.run.gate import gate
from tilegate.store.files import judge_files as judge

SHA = "0123456789abcdef0123456789abcdef01234567"
CASE = key("tma_xtile_persistent", K=512)


def _runs(tmp_path: Path, first: float, second: float) -> tuple[Path, Path]:
    """An A/B results file whose CASE's head/base ratio is `first`, and its confirmation's
    `second`; the case's code changed (so it is judged, and explained)."""
    code = {"tma_xtile_persistent": "sha256:new"}
    base = {"tma_xtile_persistent": "sha256:old"}
    kw = dict(rounds=60, ks=(512,), code=code, base_code=base)
    results = results_file(tmp_path, "results.json", seed=5, ab={CASE: first}, **kw)
    confirm = results_file(tmp_path, "confirm-1.json", seed=6, ab={CASE: second}, **kw)
    return results, confirm


@pytest.mark.parametrize(
    ("first", "second", "verdict"),
    [(1.10, 1.10, "SLOWER"), (1.092, 0.743, "UNSTABLE")],
    ids=["confirmed-slower", "unstable"],
)
def test_the_headline_is_the_same_words_in_every_rendering(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: float,
    second: float,
    verdict: str,
) -> None:
    results, confirm = _runs(tmp_path, first, second)
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    report = tmp_path / "report.md"
    gated = gate(results, None, [confirm], baselines_dir=baselines, report_path=report)
    assert gated.judgement is not None and gated.code != 0, gated.error
    headline = gated.judgement.headline
    assert headline.startswith("tilegate: ") and headline == gated.headline
    # the report
    text = report.read_text()
    assert text.splitlines()[0] == f"# {headline}"
    # the PR comment
    # the PR comment, from the Judgement's record (verdicts.json)
    record = json.loads((tmp_path / VERDICTS).read_text())
    comment = tmp_path / "comment.json"
    write_summary(comment, record, pr=7, head_sha=SHA, gpu="nvidia-h200")
    assert read_summary(comment).headline == headline
    # the job summary
    job = tmp_path / "summary.md"
    assert main(["summary", "--verdicts", str(tmp_path / VERDICTS), "--out", str(job)]) == 0
    title = job.read_text().splitlines()[0]
    assert title.removeprefix("## ").split(" ", 1)[1] == headline, title
    assert capsys.readouterr().out.strip().split(" ", 1)[1] == headline
    # tilegate explain: the run's headline, and the verdicts of the run that wrote the file
    # (its confirmation included), not of the file judged again alone
    assert record["verdicts"][CASE] == verdict and record["confirmations"] == ["confirm-1.json"]
    assert main(["explain", str(results), "--baselines", str(baselines)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == headline, out
    assert f"{CASE}  {verdict}" in out, out
    alone = judge(results, baselines_dir=baselines)
    assert alone.verdicts()[CASE] == "SLOWER"  # what the file says without its confirmation


def test_explain_of_a_file_whose_record_is_of_another_run_judges_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, confirm = _runs(tmp_path, 1.092, 0.743)
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    gate(results, None, [confirm], baselines_dir=baselines, report_path=tmp_path / "report.md")
    # the results file rewritten (another run into the same directory): the record is stale
    results_file(
        tmp_path,
        "results.json",
        seed=9,
        rounds=60,
        ks=(512,),
        ab={CASE: 1.10},
        code={"tma_xtile_persistent": "sha256:new"},
        base_code={"tma_xtile_persistent": "sha256:old"},
    )
    assert main(["explain", str(results), "--baselines", str(baselines)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == judge(results, baselines_dir=baselines).headline
    assert "judged again, without confirmations" in out[1]
    assert f"{CASE}  SLOWER" in out


def test_a_run_with_a_loosened_baseline_says_so_in_its_headline_once(tmp_path: Path) -> None:
    """The integrity's failing changes are in the Judgement's headline: no renderer patches it."""
    from tilegate.judge.gate import judgement
    from tilegate.report.render import render
    from tilegate.store.files import load_results

    class Loosened:  # tilegate.judge.integrity.Integrity's face
        failing = ("baselines/nvidia-h200.json: `tiled-fp16-nt-K512` tolerance 2% -> 9%",)

        def banner(self) -> str:
            return "## This pull request changes baselines/\n\n- loosened\n"

    results, _ = _runs(tmp_path, 1.0, 1.0)
    judged = judgement(load_results(results), integrity=Loosened())  # type: ignore[arg-type]
    assert judged.code == 1
    assert judged.headline == "tilegate: FAIL: 1 unacknowledged baseline change"
    text = render(judged)
    assert text.splitlines()[0] == f"# {judged.headline}"
    assert text.splitlines()[2] == "## This pull request changes baselines/"
    assert text.count("unacknowledged baseline change") >= 1
