"""The installed tool in another repository (issue 20, item 2; issue 30): tilegate built as a
wheel, installed into a directory of its own, and run from a repository outside this checkout
(which is not importable there), on the CPU interpreter.

The repository is what `tilegate init` (the installed script) writes: [tool.tilegate], the code
(toykern/kernels.py: a Triton scale kernel and torch) and its protocol (perf_tests/test_toykern.py,
a "smoke" profile), baselines/README.md; `git init` and one commit, the base of the A/B runs and
of the pull requests judged through tools/ci/gate_from_base.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sh(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _source_copy(where: Path) -> Path:
    """A copy of the checkout to build from: a build in the checkout itself leaves a
    tilegate.egg-info there whose pytest11 entry point every later pytest of it would load."""
    import shutil

    src = where / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".nox", ".perf", ".snap", "*.egg-info", "build", "examples"
        ),
    )
    return src


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tilegate's wheel, built from this checkout and installed with pip --target."""
    wheels = tmp_path_factory.mktemp("wheels")
    target = tmp_path_factory.mktemp("site")
    py = sys.executable
    build = _sh(
        [py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(_source_copy(wheels))],
        cwd=wheels, env=dict(os.environ),
    )  # fmt: skip
    assert build.returncode == 0, _said(build)
    (wheel,) = wheels.glob("tilegate-*.whl")
    inst = _sh(
        [py, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        cwd=wheels, env=dict(os.environ),
    )  # fmt: skip
    assert inst.returncode == 0, _said(inst)
    assert (target / "tilegate" / "cli.py").is_file()
    assert not (target / "kernels").exists(), "this repository's benchmark is not in the wheel"
    return target


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    site = request.getfixturevalue("site")
    repo = tmp_path_factory.mktemp("toy-repo")
    made = _sh([str(site / "bin" / "tilegate"), "init", "--package", "toykern"], repo, _env(site))
    assert made.returncode == 0, _said(made)
    (repo / ".gitignore").write_text(".perf/\n__pycache__/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tilegate init"]):
        _git(repo, *args)
    # git keeps baselines/ (its README.md): a fresh clone has it
    assert "baselines/README.md" in _git(repo, "ls-files")
    return repo


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(site)  # the installed tilegate only: this checkout is not importable
    return env


def _git(repo: Path, *args: str) -> str:
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    return subprocess.run([*git, *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.interpreter
def test_the_installed_tool_gates_a_toy_repository(site: Path, toy: Path) -> None:
    env = _env(site)
    py = sys.executable  # the venv's python: torch, triton, pytest, pytest-benchmark
    script = site / "bin" / "tilegate"

    where = _sh([py, "-c", "import tilegate, sys; print(tilegate.__file__)"], toy, env)
    assert where.returncode == 0 and where.stdout.startswith(str(site)), _said(where)
    fails = _sh([py, "-c", "import kernels"], toy, env)
    assert fails.returncode != 0, "this checkout's kernels/ must not be importable here"

    first = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--report-only", "--no-plots"],
        toy,
        env,
    )
    assert first.returncode == 0, _said(first)
    results = toy / ".perf" / "results.json"
    data = json.loads(results.read_text())
    rows = {
        b["extra_info"]["tilegate"]["key"]: b["extra_info"]["tilegate"] for b in data["benchmarks"]
    }
    assert set(rows) == {
        "torch-fp32-n100", "triton_scale-fp32-n100", "torch-fp32-n256", "triton_scale-fp32-n256",
    }  # fmt: skip
    row = rows["triton_scale-fp32-n256"]
    assert row["params"] == {"dtype": "fp32", "n": 256} and row["correct"] is True
    assert row["ratio_to_reference"] is not None and row["gbps"] is not None and row["gbps"] >= 0
    assert (toy / ".perf" / "report.md").is_file()

    second = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--report-only", "--no-plots",
         "--out-dir", str(toy / ".perf" / "second")],
        toy, env,
    )  # fmt: skip
    assert second.returncode == 0, _said(second)

    baseline = toy / "baselines" / "cpu-interpreter.json"  # no GPU, no slug: named here
    rebase = _sh(
        [str(script), "rebaseline", str(results), str(toy / ".perf" / "second" / "results.json"),
         "--out", str(baseline)],
        toy, env,
    )  # fmt: skip
    assert rebase.returncode == 0, _said(rebase)
    stored = json.loads(baseline.read_text())
    assert set(stored["rows"]) == set(rows)
    assert stored["rows"]["torch-fp32-n100"]["params"] == {"dtype": "fp32", "n": 100}

    judged = _sh(
        [str(script), "compare", str(results), str(baseline), "--no-plots",
         "--report", str(toy / ".perf" / "judged.md")],
        toy, env,
    )  # fmt: skip
    assert judged.returncode == 0, _said(judged)
    assert (toy / ".perf" / "judged.md").read_text().startswith("# tilegate:")

    ab = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD", "--no-plots",
         "--baseline", str(baseline), "--out-dir", str(toy / ".perf" / "ab")],
        toy, env,
    )  # fmt: skip
    assert ab.returncode == 0, _said(ab)
    sides = {
        (b["extra_info"]["tilegate"]["key"], b["extra_info"]["tilegate"].get("side", "head"))
        for b in json.loads((toy / ".perf" / "ab" / "results.json").read_text())["benchmarks"]
    }
    assert ("triton_scale-fp32-n256", "base") in sides
    assert ("triton_scale-fp32-n256", "head") in sides
    assert (toy / ".perf" / "ab").is_dir() and not (ROOT / ".perf" / "ab" / "toy").exists()


GATE = ROOT / "tools" / "ci" / "gate_from_base.py"
SMOKE = ["--profile", "smoke", "--report-only", "--no-plots"]


def _gate(site: Path, repo: Path, base: str, *extra: str) -> tuple[int, str, str]:
    done = _sh(
        [sys.executable, str(GATE), "--base", base, "--via", "python", *extra, "--", *SMOKE],
        repo,
        _env(site),
    )
    report = repo / ".perf" / "report.md"
    return done.returncode, report.read_text() if report.is_file() else "", _said(done)


@pytest.mark.interpreter
def test_pull_requests_of_an_init_repository_through_the_base_gate(
    site: Path, toy: Path, tmp_path: Path
) -> None:
    """A clone of the `tilegate init` repository, judged by the installed tilegate through
    gate_from_base.py: an A/A passes; a pull request that deletes a variant or drops a grid point
    of the protocol fails naming the cases; an edit of perf_tests/ is a gate change."""
    repo = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(toy), str(repo)], check=True, capture_output=True)
    base = _git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "baselines").is_dir()  # the clone has it: no exit 2 at the first A/B

    code, report, said = _gate(site, repo, base)
    assert code == 0, said
    assert "all measured, every declared expectation checked" in report

    # the protocol drops n = 256: run directly against the base, the base's protocol is what
    # must be covered
    protocol = repo / "perf_tests" / "test_toykern.py"
    text = protocol.read_text()
    protocol.write_text(
        text.replace('Axis("n", (100, 256), label="n{}")', 'Axis("n", (100,), label="n{}")', 1)
    )
    direct = _sh([sys.executable, "-m", "tilegate", "perf", "--ab", base, *SMOKE], repo, _env(site))
    report = (repo / ".perf" / "report.md").read_text()
    assert direct.returncode == 1, _said(direct)
    assert "`triton_scale-fp32-n256` | axis value gone: n=256 is not in the run's profile" in report
    # ... and as a pull request: a change of the gate, which fails until acknowledged
    _git(repo, "commit", "-qam", "drop n=256")
    code, report, said = _gate(site, repo, base)
    assert code == 1, said
    assert "`perf_tests/test_toykern.py (the protocol" in report
    assert "`triton_scale-fp32-n256`: axis value gone: n=256" in report
    _git(repo, "reset", "-q", "--hard", base)

    # a pull request deleting the Triton variant from the code: its cases are not measured
    kernels = repo / "toykern" / "kernels.py"
    kernels.write_text(kernels.read_text().replace('    Variant("triton_scale", _triton),\n', ""))
    _git(repo, "commit", "-qam", "drop triton_scale")
    code, report, said = _gate(site, repo, base)
    assert code == 1, said
    for case in ("triton_scale-fp32-n100", "triton_scale-fp32-n256"):
        assert f"`{case}` | variant gone: triton_scale is not in the registry" in report
