"""The installed tool in another repository (issue 20, item 2; issue 30): tilegate built as a
wheel, installed into a directory of its own, and run from a repository outside this checkout
(which is not importable there), on the CPU interpreter.

The repository is what `tilegate init` (the installed script) writes: [tool.tilegate], the code
(toykern/kernels.py: a Triton scale kernel and torch) and its protocol (perf_tests/test_toykern.py,
a "smoke" profile), baselines/README.md, with `--ci github` its workflows; `git init` and one
commit, the base of the A/B runs and of the pull requests judged through `tilegate ci`.
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


def build_site(wheels: Path, target: Path) -> None:
    """tilegate's wheel, built from this checkout in `wheels` and installed with pip --target
    into `target` (tests/conftest.py's `site`: once per session)."""
    wheels.mkdir()
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


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    site = request.getfixturevalue("site")
    repo = tmp_path_factory.mktemp("toy-repo")
    init = [str(site / "bin" / "tilegate"), "init", "--package", "toykern", "--ci", "github"]
    made = _sh(init, repo, _env(site))
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


SMOKE = ["--profile", "smoke", "--no-plots"]


def _gate(site: Path, repo: Path, base: str, *extra: str) -> tuple[int, str, str]:
    done = _sh(
        [str(site / "bin" / "tilegate"), "ci", "--base", base, *extra, "--", *SMOKE],
        repo,
        _env(site),
    )
    report = repo / ".perf" / "report.md"
    return done.returncode, report.read_text() if report.is_file() else "", _said(done)


def test_init_ci_writes_the_workflows_and_never_overwrites_them(site: Path, toy: Path) -> None:
    """What `tilegate init --ci github` wrote (tools/lint-workflows.sh runs actionlint and
    zizmor on it): pull_request, never pull_request_target; fetch-depth 2 without credentials;
    actions pinned by commit; `tilegate ci`, the labels, the comment and the summary."""
    import re

    flows = toy / ".github" / "workflows"
    text = (flows / "tilegate.yml").read_text()
    assert "pull_request:" in text and "pull_request_target" not in text
    assert text.count("fetch-depth: 2") == 1 and "persist-credentials: true" not in text
    uses = re.findall(r"uses: (\S+)", text + (flows / "tilegate-comment.yml").read_text())
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u in uses), uses
    assert "runs-on: [self-hosted, linux, gpu]" in text and "tilegate ci " in text
    for label, flag in (
        ("perf-gate-change", "--accept-gate-change"),
        ("perf-baseline-change", "--accept-baseline-change"),
    ):
        assert f"'{label}'" in text and flag in text
    assert (
        'tilegate summary --out "$GITHUB_STEP_SUMMARY"' in text and "tilegate comment --pr" in text
    )
    assert "tilegate rebaseline --measure" in text and "gh pr create" in text
    before = {p: p.read_bytes() for p in flows.iterdir()}
    again = _sh([str(site / "bin" / "tilegate"), "init", "--ci", "github"], toy, _env(site))
    assert again.returncode == 2 and "exists; nothing written" in again.stderr, _said(again)
    assert {p: p.read_bytes() for p in flows.iterdir()} == before


@pytest.mark.interpreter
def test_pull_requests_of_an_init_repository_through_tilegate_ci(
    site: Path, toy: Path, tmp_path: Path
) -> None:
    """A clone of the `tilegate init` repository, judged by the installed `tilegate ci`: an A/A
    passes on the A/B alone (no stored baseline); a pull request changing the protocol's grid is
    a gate change, measured by the base's protocol, failing until acknowledged; a push to main
    goes into the history."""
    repo = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(toy), str(repo)], check=True, capture_output=True)
    base = _git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "baselines").is_dir()  # the clone has it: no exit 2 at the first A/B

    code, report, said = _gate(site, repo, base)
    assert code == 0, said
    assert "all measured, every declared expectation checked" in report
    assert "No stored baseline for `smoke`: judged on the A/B alone." in report
    # the footer names only what this repository has: no tilegate/ of its own
    assert f"gate (`{base[:12]}`: the installed tilegate (" in report, report[-600:]
    assert (
        "its protocol perf_tests/ and [tool.tilegate]), with this pull request's toykern/" in report
    )

    # the protocol's grid changes n = (100, 256) -> (100, 512): a change of the gate; the base's
    # protocol still measures the pull request (n = 256), and the change lands when acknowledged
    protocol = repo / "perf_tests" / "test_toykern.py"
    text = protocol.read_text()
    assert 'Axis("n", (100, 256), label="n{}")' in text
    protocol.write_text(text.replace("(100, 256)", "(100, 512)", 1))
    _git(repo, "commit", "-qam", "the smoke grid: n = 512")
    code, report, said = _gate(site, repo, "HEAD^1")
    assert code == 1, said
    assert report.startswith("# tilegate: this pull request changes the gate (NOT ACKNOWLEDGED")
    assert "`perf_tests/test_toykern.py (the protocol" in report
    assert f"The base's protocol measured both sides (`{base[:12]}`)" in report
    assert "`triton_scale-fp32-n256`: axis value gone: n=256" in report
    results = json.loads((repo / ".perf" / "results.json").read_text())
    assert {b["extra_info"]["tilegate"]["params"]["n"] for b in results["benchmarks"]} == {100, 256}
    out = repo / ".perf"
    assert (out / "summary.md").read_text().startswith("## ❌ tilegate: this pull request changes")
    assert (
        "| ❌ REGRESSION | tilegate: this pull request changes the gate"
        in (out / "comment.md").read_text()
    )
    assert json.loads((out / "verdicts.json").read_text())["ci"]["exit"] == 1
    code, report, said = _gate(site, repo, "HEAD^1", "--accept-gate-change")
    assert code == 0, said
    assert report.startswith(
        "# tilegate: this pull request changes the gate (acknowledged; exit 0)"
    )
    # (a pull request deleting a variant: tests/test_ci.py, with this tree's gate)

    # a push to main: `tilegate ci` without --base, its results added to the history store
    _git(repo, "reset", "-q", "--hard", base)
    store = tmp_path / "history.duckdb"
    push = [str(site / "bin" / "tilegate"), "ci", "--history", str(store), "--", "--report-only"]
    done = _sh([*push, *SMOKE], repo, _env(site))
    assert done.returncode == 0 and store.is_file(), _said(done)
    assert json.loads((repo / ".perf" / "gate.json").read_text()) == {"event": "push", "exit": 0}


# --- a package that imports itself by name (issue 38): each side a checkout and a process ------

LAUNCH = """import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def launch(x, y):
    _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, num_warps=8)
    return y
"""

# the src-layout variant's launch: its num_warps is package data beside the module
LAUNCH_DATA = (
    LAUNCH.replace(
        "import triton\n", "import json\nfrom pathlib import Path\n\nimport triton\n", 1
    ).replace("BLOCK=1024, num_warps=8)", 'BLOCK=1024, num_warps=_TUNE["num_warps"])')
    + '\n_TUNE = json.loads(Path(__file__).with_name("tune.json").read_text())\n'
)

# one group, no confirmation: what is asserted is what each side ran, not a verdict on timings
CASE = "triton_scale-fp32-n256"
ONE = ["--profile", "smoke", "--no-plots", "--confirm-runs", "0", "--perf-axis=n=256"]


def _self_importing(site: Path, where: Path, package: str, src: bool, built: bool = False) -> Path:
    """A `tilegate init` repository whose kernels module imports the package BY ITS OWN NAME
    (`from <package>._launch import launch`, as Liger-Kernel, fla and FlagGems do), in a
    `src/` layout if asked, where the import is a string (`importlib.import_module`) and the
    launch's num_warps package data (`tune.json` beside it); `built`: its num_warps a build
    product (`gen.py` writes `<package>/_gen.py`, ignored by git, as a compiled extension
    beside the Python would be), `[tool.tilegate] build` naming the command; one commit, built."""
    repo = where / package
    repo.mkdir()
    made = _sh([str(site / "bin" / "tilegate"), "init", "--package", package], repo, _env(site))
    assert made.returncode == 0, _said(made)
    code = repo / package
    launch = LAUNCH_DATA if src else LAUNCH
    if built:
        launch = f"from {package}._gen import NUM_WARPS\n" + launch.replace(
            "num_warps=8", "num_warps=NUM_WARPS"
        )
        (repo / "gen.py").write_text(
            f'from pathlib import Path\n\nPath("{package}/_gen.py").write_text("NUM_WARPS = 8\\n")\n'
        )
        toml = repo / "pyproject.toml"
        commented = '# build = "python setup.py build_ext --inplace"'
        assert commented in toml.read_text()
        toml.write_text(toml.read_text().replace(commented, 'build = "$PYTHON gen.py"'))
    (code / "_launch.py").write_text(launch)
    if src:
        (code / "tune.json").write_text('{"num_warps": 8}\n')
    kernels = code / "kernels.py"
    text = kernels.read_text()
    call = "        _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)\n        return y"
    assert call in text
    text = text.replace(call, "        return launch(x, y)")
    imported = (
        f'import importlib\n\nlaunch = importlib.import_module("{package}._launch").launch\n'
        if src
        else f"from {package}._launch import launch\n"
    )
    text = text.replace(
        "from tilegate.declare import Variant\n",
        f"{imported}from tilegate.declare import Variant\n",
    )
    kernels.write_text(text)
    if src:
        (repo / "src").mkdir()
        code.rename(repo / "src" / package)
        toml = repo / "pyproject.toml"
        toml.write_text(
            toml.read_text().replace(f'source = "{package}"', f'source = "src/{package}"')
        )
        protocol = next((repo / "perf_tests").glob("test_*.py"))
        assert f"from {package}.kernels import" in protocol.read_text()
    (repo / ".gitignore").write_text(".perf/\n__pycache__/\n" + (f"{package}/_gen.py\n" * built))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tilegate init"]):
        _git(repo, *args)
    if built:  # the head's tree is built as its CI builds it
        subprocess.run([sys.executable, "gen.py"], cwd=repo, check=True)
    return repo


def _launch_file(repo: Path) -> Path:
    (found,) = [p for p in repo.rglob("_launch.py") if ".perf" not in p.parts]
    return found


@pytest.mark.interpreter
@pytest.mark.parametrize("src", [False, True], ids=["flat", "src-layout"])
def test_a_package_that_imports_itself_by_name_is_measured_side_by_side(
    site: Path, tmp_path: Path, src: bool
) -> None:
    """The base side runs the base's code: a pull request that changes num_warps is seen and
    explained (with the same-process alias import of before, the base ran the head's code and
    the change passed unseen); an A/A of the same repository is the same code everywhere. In
    the src layout the package is imported by a string and the change is to package data; in
    the flat one num_warps is a build product, the base's tree built by [tool.tilegate] build."""
    repo = _self_importing(site, tmp_path, "selfbench", src, built=not src)
    py = [sys.executable, "-m", "tilegate", "perf"]
    if not src:  # the A/A once (the layout changes where the package is found, not the A/A)
        aa = _sh(
            [*py, "--ab", "HEAD", *ONE, "--out-dir", str(repo / ".perf" / "aa")], repo, _env(site)
        )
        assert aa.returncode == 0, _said(aa)
        report = (repo / ".perf" / "aa" / "report.md").read_text()
        assert "each side its own checkout and process" in report
        assert "**Compiled code changed** for no variant" in report, report

    if src:  # the change is package data: each side reads its own tree's
        tune = _launch_file(repo).with_name("tune.json")
        tune.write_text('{"num_warps": 4}\n')
    else:  # the change is to what builds the tree: the base's is built by `build`
        gen = repo / "gen.py"
        gen.write_text(gen.read_text().replace("NUM_WARPS = 8", "NUM_WARPS = 4"))
        subprocess.run([sys.executable, "gen.py"], cwd=repo, check=True)
    _git(repo, "commit", "-qam", "num_warps 4")
    ab = _sh(
        [*py, "--ab", "HEAD~1", *ONE, "--out-dir", str(repo / ".perf" / "ab")], repo, _env(site)
    )
    assert ab.returncode in (0, 1, 2), _said(ab)  # smoke: the timings decide nothing here
    report = (repo / ".perf" / "ab" / "report.md").read_text()
    assert "Compiled code changed** for `triton_scale`" in report, report
    # what changed, from the two sides' records (the report explains the cases it decided;
    # a smoke run's timings decide nothing)
    from tilegate.explain.diff import explain_cases

    (why,) = explain_cases(repo / ".perf" / "ab" / "results.json", [(CASE, "SLOWER")])
    assert "num_warps 8 -> 4" in " ".join(why.lines), why.lines
    data = json.loads((repo / ".perf" / "ab" / "results.json").read_text())
    sides = data["machine_info"]["tilegate"]["ab"]["sides"]
    assert Path(sides["head"]["tree"]) == repo
    assert Path(sides["base"]["tree"]).is_relative_to(repo / ".perf" / "ab" / "ab")
    if not src:  # the base's tree was built by [tool.tilegate] build, its output logged
        base_tree = Path(sides["base"]["tree"])
        assert (base_tree / "selfbench" / "_gen.py").read_text() == "NUM_WARPS = 8\n"
        assert (base_tree.parent / "build.log").is_file()
    rows = {
        (b["extra_info"]["tilegate"]["key"], b["extra_info"]["tilegate"].get("side", "head")):
        b["extra_info"]["tilegate"]
        for b in data["benchmarks"]
    }  # fmt: skip
    head, base = rows[(CASE, "head")], rows[(CASE, "base")]
    assert head["code_hash"] != base["code_hash"]
    pairing = data["machine_info"]["tilegate"]["pairing"]
    assert pairing["processes"] == ["head", "base"]
    assert pairing["handover_first_call"]["counted"] is False


def _against_a_broken_base(
    site: Path, tmp_path: Path, package: str, broken: str
) -> tuple[str, str]:
    """A base commit whose `_launch.py` is `broken`, the head's the good one: `tilegate perf
    --ab HEAD~1` is exit 2 with a CANNOT JUDGE report and no results file; (the base's sha, the
    report)."""
    repo = _self_importing(site, tmp_path, package, src=False)
    launch = _launch_file(repo)
    good = launch.read_text()
    launch.write_text(broken.format(good=good))
    _git(repo, "commit", "-qam", "a broken base")
    launch.write_text(good)
    _git(repo, "commit", "-qam", "fixed")
    base = _git(repo, "rev-parse", "HEAD~1").strip()
    done = _sh([sys.executable, "-m", "tilegate", "perf", "--ab", "HEAD~1", *ONE], repo, _env(site))
    assert done.returncode == 2, _said(done)
    report = (repo / ".perf" / "report.md").read_text()
    assert report.startswith("# tilegate: CANNOT JUDGE"), report
    assert not (repo / ".perf" / "results.json").exists(), "nothing half-written"
    return base, report


@pytest.mark.interpreter
def test_a_base_whose_package_does_not_import_cannot_judge_and_names_it(
    site: Path, tmp_path: Path
) -> None:
    base, report = _against_a_broken_base(site, tmp_path, "brokenbench", "{good}\ndef broken(:\n")
    for said in (
        f"the base {base[:12]}",
        "fails to import",
        "SyntaxError",
        "(at brokenbench/_launch.py:",
    ):
        assert said in report, (said, report)


@pytest.mark.interpreter
def test_a_side_whose_process_dies_mid_run_cannot_judge_and_leaves_no_results(
    site: Path, tmp_path: Path
) -> None:
    """The base's code ends its own process on its seventh call (after its checks, while its
    rounds are timed): exit 2 naming the side and how its process ended; no results file."""
    dies = LAUNCH.replace(
        "def launch(x, y):\n",
        "CALLS = [0]\n\n\ndef launch(x, y):\n    CALLS[0] += 1\n"
        "    if CALLS[0] > 6:\n        import os\n\n        os._exit(7)\n",
    )
    assert dies != LAUNCH
    base, report = _against_a_broken_base(
        site, tmp_path, "diebench", dies.replace("{", "{{").replace("}", "}}")
    )
    assert f"the base {base[:12]}" in report and "its process ended" in report, report
    assert "(exit 7)" in report and "base.log" in report, report


# two variants whose call is host work only (a sleep, then torch on the CPU): their host time
# is steady from process to process, where the interpreter's is not on a busy CPU
HOST_ONLY = """

def _host_a(params, x):
    timed = []

    def call():
        if not timed:  # the CPUs each process first called it on
            timed.append(1)
            with open(os.environ["HOST_A_CPUS"], "a") as f:
                f.write(" ".join(map(str, sorted(os.sched_getaffinity(0)))) + "\\n")
        time.sleep(0.001)
        return x * 2

    return call


def _host_b(params, x):
    def call():
        time.sleep(0.001)
        return x * 2

    return call


VARIANTS = VARIANTS + (Variant("host_a", _host_a), Variant("host_b", _host_b))
"""


@pytest.mark.interpreter
def test_host_time_is_judged_over_worker_processes_when_the_sides_are_two(
    site: Path, tmp_path: Path
) -> None:
    """Issue 50, item 2: a package that imports itself by name (each side a process), its
    host-bound cases timed again in 4 fresh workers per side, in alternated blocks. 2 ms more of
    `time.sleep` in host_b's wrapper is SLOWER on its host time, its interval over the process
    pairs, the grown function named from the two sides' profiles; host_a, the same code on both
    sides (an A/A), is SAME on it. The per-process medians are in the results, and every worker
    ran on the one CPU the run names."""
    from tilegate.harness.hostworkers import BLOCKS
    from tilegate.judge.abcompare import compare_ab
    from tilegate.judge.vocabulary import ABVerdict
    from tilegate.store.files import load_results

    repo = _self_importing(site, tmp_path, "hostbench", src=False)
    protocol = next((repo / "perf_tests").glob("test_*.py"))
    text = protocol.read_text()
    protocol.write_text(text.replace("interpreter=True,", "interpreter=True, host_procs=4,", 1))
    kernels = repo / "hostbench" / "kernels.py"
    kernels.write_text("import os\nimport time\n" + kernels.read_text() + HOST_ONLY)
    _git(repo, "commit", "-qam", "host-only variants, 4 host workers a side")
    text = kernels.read_text()
    cut = text.rindex("time.sleep(0.001)")  # host_b's
    kernels.write_text(text[:cut] + "time.sleep(0.003)" + text[cut + len("time.sleep(0.001)") :])
    _git(repo, "commit", "-qam", "host_b: 2 ms more per call")
    out = repo / ".perf" / "ab"
    cpus = tmp_path / "host_a-cpus.txt"
    env = {**_env(site), "HOST_A_CPUS": str(cpus)}
    done = _sh([sys.executable, "-m", "tilegate", "perf", "--ab", "HEAD~1", *ONE, "--out-dir", str(out)], repo, env)  # fmt: skip
    assert done.returncode == 0, _said(done)  # smoke: its timings set no exit code
    cases = {c.variant: c for c in compare_ab(load_results(out / "results.json"), None).cases}
    for case in cases.values():
        assert len(case.head.host_procs_s) == len(case.base.host_procs_s) == 4, case
        blocks = case.head.host_blocks_s, case.base.host_blocks_s  # each process's, alternated
        assert [len(b) for side in blocks for b in side] == [BLOCKS] * 8, blocks
    slower, same = cases["host_b"], cases["host_a"]
    assert slower.verdict is ABVerdict.SLOWER and slower.judged_on == "host", slower
    assert slower.ci is not None and slower.ci[0] > 1.25, slower.ci
    assert (
        "host time over 4 process pairs" in slower.note
        and "hostbench/kernels.py:call" in slower.note
    ), slower.note
    assert same.verdict is ABVerdict.UNCHANGED and "process pairs" in same.note, same
    assert same.note.endswith("host tolerance: SAME"), same.note
    assert "blocks alternated" in same.note, same.note
    info = json.loads((out / "results.json").read_text())["machine_info"]["tilegate"]
    assert info["pairing"]["host_procs"]["per_side"] == 4
    cpu = max(os.sched_getaffinity(0))
    assert info["pairing"]["host_procs"]["cpu"] == cpu
    called_on = cpus.read_text().splitlines()  # the sides' own processes, then the 8 workers
    assert called_on[-8:] == [str(cpu)] * 8 and len(called_on) >= 10, called_on
