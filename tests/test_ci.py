"""`tilegate ci` (tilegate.run.ci_gate): a pull request's kernels measured and judged by its base's gate.

A temp git repository holds this repository's gate (tilegate/, kernels/, baselines/, pyproject.toml,
noxfile.py) as the base commit and a head commit on top. Under the interpreter the timings mean
nothing, so what is proved is which code judged: the head's gate prints a marker in its report
headline that the base's does not. (An adopter's repository: tests/test_installed.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tilegate.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
COPY = ("tilegate", "kernels", "perf_tests", "baselines", "pyproject.toml", "noxfile.py")
PERF = [
    "--profile",
    "smoke",
    "--report-only",  # interpreter timings are noise: the verdict under test is the gate's own
    "--no-plots",
    "--perf-axis",
    "K=24",
    "--perf-axis",
    "layout=nt",  # what these runs prove does not depend on the grid's size
    "--perf-variants=torch,xtile_persistent",
]
MARKER = "JUDGED BY THE HEAD'S GATE"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose base commit is this tree's gate; (repo, base sha)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in COPY:
        src, dst = ROOT / rel, repo / rel
        if src.is_dir():
            shutil.copytree(src, dst, ignore=ignore)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (repo / ".gitignore").write_text("/.perf/\n__pycache__/\n*.pyc\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    return repo, _git(repo, "rev-parse", "HEAD")


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _kernel_change(repo: Path) -> None:
    with (repo / "kernels" / "persistent.py").open("a") as f:
        f.write("\n# a kernel-side change of the pull request\n")


def _gate_change(repo: Path) -> None:
    """The head's gate writes MARKER in its report headline where the base's writes REPORT ONLY."""
    # the headline is the Judgement's (tilegate.judge.gate), which every renderer renders
    _edit(repo / "tilegate" / "judge" / "gate.py", "REPORT ONLY (would", f"{MARKER} (would")


def _tilegate(repo: Path, *args: str) -> tuple[int, str, str]:
    """`python -m tilegate ARGS` in `repo` (its own tilegate/): exit, report, stderr."""
    cmd = [sys.executable, "-m", "tilegate", *args]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=600, check=False)
    report = repo / ".perf" / "report.md"
    return done.returncode, report.read_text() if report.exists() else "", done.stderr


def _gate(repo: Path, base: str, *extra: str) -> tuple[int, str, str]:
    return _tilegate(repo, "ci", "--base", base, *extra, "--", *PERF)


@pytest.mark.interpreter
def test_a_kernels_only_change_is_measured_and_judged_by_the_base_gate(tmp_path: Path) -> None:
    """It also covers the base's protocol: every case it selects measured, and passes."""
    repo, base = _repo(tmp_path)
    _kernel_change(repo)
    (repo / "NOTES.md").write_text("docs do not change the gate\n")
    _commit(repo, "head: kernels only")
    code, report, err = _gate_with(repo, base, "torch,xtile_persistent", "--accept-gate-change")
    assert code == 0, err[-4000:]
    assert "## Coverage" in report and "all measured, every declared expectation checked" in report
    assert "NARROWED by --perf-variants torch,xtile_persistent, --perf-axis K=24" in report
    cov = json.loads((repo / ".perf" / "results.json").read_text())["machine_info"]["tilegate"]
    assert cov["coverage"]["expected"]["protocol"].startswith("the base's")
    assert "xtile_persistent-fp16-nt-K40" in cov["coverage"]["expected"]["cases"]
    assert "xtile_persistent-fp16-nt-K40" in cov["coverage"]["not_selected"]
    assert "changes the gate" not in report
    # an acknowledgement of what the pull request does not change: a note, not a failure
    assert "> Note: `--accept-gate-change` (label `perf-gate-change`) was given, but" in report
    assert report.startswith("# tilegate: REPORT ONLY"), report[:300]
    assert f"judged by the base commit's gate (`{base[:12]}`: its tilegate/" in report
    facts = json.loads((repo / ".perf" / "gate.json").read_text())
    assert facts["gate_changes"] == [] and facts["head"]["exit"] is None
    results = json.loads((repo / ".perf" / "results.json").read_text())
    assert results["machine_info"]["tilegate"]["ab"]["sha"] == base
    # the worktree the base's gate ran in is gone
    assert _git(repo, "worktree", "list").count("\n") == 0


@pytest.mark.interpreter
def test_a_gate_change_leads_the_report_fails_unacknowledged_and_the_base_decides(
    tmp_path: Path,
) -> None:
    repo, base = _repo(tmp_path)
    _kernel_change(repo)
    _gate_change(repo)
    _commit(repo, "head: kernels and the gate")
    code, report, err = _gate(repo, base)
    assert code == 1, err[-4000:]
    first = report.splitlines()[0]
    assert first.startswith("# tilegate: this pull request changes the gate (NOT ACKNOWLEDGED")
    assert "`tilegate/judge/gate.py`" in report and "perf-gate-change" in report
    # both verdicts shown: the base's report is the body (no marker), the head's has the marker
    head_report = (repo / ".perf" / "head" / "report.md").read_text()
    assert head_report.startswith(f"# tilegate: {MARKER}")
    body = report.split("\n---\n", 1)[1]
    assert MARKER not in body and body.lstrip().startswith("# tilegate: REPORT ONLY")
    assert "the base's (`" in report and "- decides" in report
    assert MARKER in report  # in the table: the head's verdict
    # acknowledged by the maintainer label, the base's verdict (pass) stands: test_what_changes_
    # the_gate's `decide`, and test_installed.py's init repository end to end


def test_what_changes_the_gate() -> None:
    from tilegate.run import ci_gate as ci

    cfg = ci.config_of('[tool.tilegate]\nsource = "kernels"\n', "the base")
    base = '[tool.tilegate]\nsource = "kernels"\n[project]\nversion = "1"\ndependencies = ["a"]\n'
    kept = [
        "kernels/x.py",
        "docs/a.md",
        "baselines/b.json",
        "README.md",
        ".github/workflows/ci.yml",
    ]
    assert ci.gate_changes(kept, cfg, base, base) == []
    version_only = base.replace('version = "1"', 'version = "2"')
    assert ci.gate_changes(["pyproject.toml"], cfg, base, version_only) == []
    deps = base.replace('["a"]', '["a", "b"]')
    assert ci.gate_changes(["pyproject.toml"], cfg, base, deps) == [
        "pyproject.toml [project.dependencies]"
    ]
    paths = ["tilegate/judge/outcome.py", "noxfile.py", "tools/gpu-nox.sh", "conftest.py"]
    paths += ["tests/conftest.py", "perf_tests/test_matmul.py", ".github/workflows/tilegate.yml"]
    found = ci.gate_changes(paths, cfg, base, base)
    assert found[:4] == paths[:4] and found[5] == ".github/workflows/tilegate.yml"
    assert found[4].startswith("perf_tests/test_matmul.py (the protocol") and len(found) == 6
    # the base decides where it judged; an unacknowledged gate change fails a pass, never a 2
    assert ci.decide(0, True, 1, True, False) == 1
    assert ci.decide(0, True, 1, True, True) == 0
    assert ci.decide(1, True, 0, True, True) == 1
    assert ci.decide(2, False, 0, True, True) == 0  # the head's gate judged what the base could not
    assert ci.decide(2, False, 2, True, False) == 2
    assert ci.decide(2, False, None, False, False) == 2
    # a protocol inside the source would be replaced by the pull request's: refused
    with pytest.raises(InputError, match="overlap"):
        ci.config_of('[tool.tilegate]\nsource = "kernels"\nprotocol = "kernels/perf"\n', "b")


def test_a_base_gate_that_wrote_no_report_is_exit_2_never_1(tmp_path: Path) -> None:
    from tilegate.run.ci_gate import judged

    report, results = tmp_path / "report.md", tmp_path / "results.json"
    assert not judged(1, report, results)  # nox's 1 for a failed session: no report
    results.write_text("{}")
    report.write_text("# tilegate: CANNOT JUDGE (exit 2)\n\nwhy\n")
    assert not judged(1, report, results)
    report.write_text("# tilegate: FAIL: 1 regression\n")
    assert judged(1, report, results) and not judged(2, report, results)


@pytest.mark.parametrize("base", ["no-such-ref", "side"])
def test_a_base_that_is_not_a_fetched_ancestor_cannot_judge_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str
) -> None:
    from tilegate.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a").write_text("a")
    _git(repo, "init", "-q")
    _commit(repo, "one")
    _git(repo, "switch", "-qc", "side")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "side")
    _git(repo, "switch", "-q", "-")
    monkeypatch.chdir(repo)
    assert main(["ci", "--base", base, "--", "--profile", "smoke"]) == 2
    report = (repo / ".perf" / "report.md").read_text()
    assert base in report and "fetch-depth: 2" in report
    assert ("not an ancestor" in report) == (base == "side")
    # the outputs CI posts still come, saying why
    assert "CANNOT JUDGE" in (repo / ".perf" / "summary.md").read_text().splitlines()[0]
    assert json.loads((repo / ".perf" / "gate.json").read_text())["exit"] == 2


# --- coverage: what the base's protocol says to measure (issue 30) -----------------------------

NARROW = ["--profile", "smoke", "--report-only", "--no-plots", "--perf-axis", "K=24"]


def _gate_with(repo: Path, base: str, variants: str, *extra: str) -> tuple[int, str, str]:
    return _tilegate(
        repo, "ci", "--base", base, *extra, "--", *NARROW, f"--perf-variants={variants}"
    )


def _drop_variant(repo: Path, name: str) -> None:
    path = repo / "kernels" / "registry.py"
    text = path.read_text()
    start = text.index(f'    _triton(\n        "{name}",')
    end = text.index("\n    ),\n", start) + len("\n    ),\n")
    path.write_text(text[:start] + text[end:])


@pytest.mark.interpreter
def test_a_pull_request_deleting_a_variant_fails_naming_its_cases(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    _drop_variant(repo, "xtile_persistent")
    _commit(repo, "head: xtile_persistent deleted")
    code, report, err = _gate_with(repo, base, "torch,xtile_persistent")
    assert code == 1, err[-4000:]
    assert report.startswith("# tilegate: FAIL:"), report[:300]
    assert "cases of the protocol not measured" in report.splitlines()[0]
    for case in ("xtile_persistent-fp16-nt-K24", "xtile_persistent-fp16-nn-K24"):
        assert f"`{case}` | variant gone: xtile_persistent is not in the registry" in report
        # named once, with why: not again as an A/B case REMOVED from the head
        assert f"`{case}` | REMOVED from the head" not in report
    # its expectation (cross-tile beats its twin) is no longer checked either
    assert "xtile_persistent beats swizzle_persistent per K: declared by the base's" in report


@pytest.mark.interpreter
def test_a_pull_request_removing_an_expectation_fails_naming_it(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    _edit(repo / "kernels" / "registry.py", 'xtile_twin_of="swizzle_persistent",\n', "")
    _commit(repo, "head: xtile_persistent no longer the twin of swizzle_persistent")
    code, report, err = _gate_with(repo, base, "torch,xtile_persistent")
    assert code == 1, err[-4000:]
    assert "1 expectation of the protocol not checked" in report.splitlines()[0]
    assert "xtile_persistent beats swizzle_persistent per K" in report
    assert "changes the gate" not in report  # a kernels/ change, judged by the base's protocol


@pytest.mark.interpreter
def test_a_pull_request_adding_a_variant_passes_with_it_reported_new(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    _edit(
        repo / "kernels" / "registry.py",
        "REGISTRY: tuple[Variant, ...] = (\n",
        "REGISTRY: tuple[Variant, ...] = (\n"
        '    _triton("tiled_copy", "pointer", "tiled, once more", tiled.plan, grouped=False),\n',
    )
    _commit(repo, "head: a new variant")
    code, report, err = _gate_with(repo, base, "torch,xtile_persistent,tiled_copy")
    assert code == 0, err[-4000:]
    assert "New in the head (not judged)** (2)" in report and "`tiled_copy-fp16-nt-K24`" in report
    assert "all measured" in report


@pytest.mark.interpreter
def test_a_protocol_edit_is_a_gate_change_the_base_protocol_measures(tmp_path: Path) -> None:
    """perf_tests/ dropping K = 40 and changing M: a change of the gate; the base's protocol
    still decides what is measured (every case of it measured: its verdict passes)."""
    repo, base = _repo(tmp_path)
    _edit(repo / "perf_tests" / "test_matmul.py", "(24, 40)", "(24,)")
    _edit(repo / "perf_tests" / "test_matmul.py", '{"M": 40, "N": 48}', '{"M": 32, "N": 48}')
    _commit(repo, "head: the smoke grid narrowed")
    code, report, err = _gate_with(repo, base, "torch,xtile_persistent")
    assert code == 1, err[-4000:]
    assert report.startswith("# tilegate: this pull request changes the gate (NOT ACKNOWLEDGED")
    assert "`perf_tests/test_matmul.py (the protocol" in report
    # what the edit stops measuring, named: the base's protocol still measured it here
    assert (
        "`xtile_persistent-fp16-nt-K40`: axis value gone: K=40; fixed parameter changed: M 40 -> 32"
        in report
    )
    assert "`torch-fp16-nn-K24`: fixed parameter changed: M 40 -> 32" in report
    results = json.loads((repo / ".perf" / "results.json").read_text())
    assert results["machine_info"]["tilegate"]["fixed"]["M"] == 40  # the base's protocol's
    # acknowledged, it passes: test_installed.py's init repository lands its protocol change so


@pytest.mark.interpreter
def test_ab_run_directly_checks_coverage_against_the_base_protocol(tmp_path: Path) -> None:
    """`tilegate perf --ab REF` with an edited perf_tests/: the base's protocol (materialised
    from REF) is what must be covered: a dropped axis value and a changed fixed parameter fail."""
    repo, base = _repo(tmp_path)
    _edit(repo / "perf_tests" / "test_matmul.py", "(24, 40)", "(24,)")
    _edit(repo / "perf_tests" / "test_matmul.py", '{"M": 40, "N": 48}', '{"M": 32, "N": 48}')
    code, report, err = _tilegate(
        repo, "perf", "--ab", base, "--profile", "smoke", "--report-only", "--no-plots", "--",
        "--perf-variants=torch,xtile_persistent", "--perf-rounds=1",
    )  # fmt: skip
    assert code == 1, err[-4000:]
    assert "`xtile_persistent-fp16-nt-K40` | axis value gone: K=40" in report
    assert "fixed parameter changed: M 40 -> 32" in report
