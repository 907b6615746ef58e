"""graft.py on a Liger-Kernel repository, and tilegate on the grafted repository, on the CPU.

CI has no Liger history, so the repository is made from the installed liger-kernel wheel (the
`liger` nox session puts 0.8.5 on PYTHONPATH): its `liger_kernel/` becomes `src/liger_kernel/`
of a temp git repository with a pyproject.toml shaped like Liger's (a src/ layout, and pytest
addopts for coverage that the perf suite must not inherit). graft.py adds tilegate to it; then
the protocol loads, the smoke profile runs under the Triton interpreter, and an A/B between two
commits sees what a pull request changed in one kernel.

Every tilegate process here runs with PYTHONPATH = tilegate's checkout only: liger_kernel comes
from the repository's own src/ (as in a maintainer's checkout), never from the wheel.
Timings mean nothing under the interpreter: exit codes, files, code identities and the
report's explanations are what is checked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]  # examples/liger-repo
ROOT = HERE.parents[1]  # the tilegate checkout
GRAFT = HERE / "graft.py"
LIGER_PYPROJECT = """\
[build-system]
requires = ["setuptools>=42", "wheel", "setuptools-scm"]
build-backend = "setuptools.build_meta"

[project]
name = "liger_kernel"
version = "0.8.5"

[tool.setuptools]
package-dir = {"" = "src"}

[tool.pytest.ini_options]
pythonpath = ["src", "."]
asyncio_mode = "auto"
addopts = ["--cov=src/liger_kernel", "--cov-report=term-missing"]
testpaths = ["test/"]
"""
GRAFTED = {"perf_tests/test_liger_repo.py", "perf_tests/pytest.ini", "baselines/README.md"}
# the pull request of the A/B test: swiglu's forward launches with 2 warps (4 at 96 columns)
EDIT_FILE = "src/liger_kernel/ops/swiglu.py"
EDIT_IN = "def swiglu_forward("
EDIT_OLD = "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n"
EDIT_NEW = EDIT_OLD + "    num_warps = 2  # the pull request's change\n"
AB_KERNELS = "--perf-axis=kernel=swiglu-fwd,rms_norm-fwd"  # the changed kernel, an unchanged one
AA_KERNELS = "--perf-axis=kernel=swiglu-fwd"


def _liger_dir() -> Path:
    spec = importlib.util.find_spec("liger_kernel")
    assert spec is not None and spec.origin, (
        "liger_kernel is not importable: run these tests with a liger-kernel release on "
        "PYTHONPATH (`nox -s liger`, or `pip install --no-deps --target DIR liger-kernel==0.8.5` "
        "and PYTHONPATH=DIR)"
    )
    return Path(spec.origin).parent


def _env() -> dict[str, str]:
    """tilegate's checkout on PYTHONPATH, and nothing else of it (no liger_kernel)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(repo)]
    return subprocess.run([*cmd, *args], check=True, capture_output=True, text=True).stdout


def run(repo: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _why(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout[-4000:] + proc.stderr[-4000:]


def make_liger_repo(dest: Path) -> Path:
    """A git repository shaped like Liger-Kernel's, its src/ from the installed wheel; one commit."""
    shutil.copytree(
        _liger_dir(), dest / "src" / "liger_kernel", ignore=shutil.ignore_patterns("__pycache__")
    )
    (dest / "pyproject.toml").write_text(LIGER_PYPROJECT)
    (dest / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "Liger-Kernel (from the wheel)")
    return dest


@pytest.fixture(scope="module")
def grafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Liger repository with graft.py's files committed on top."""
    repo = make_liger_repo(tmp_path_factory.mktemp("liger") / "repo")
    proc = run(repo, str(GRAFT), str(repo))
    assert proc.returncode == 0, _why(proc)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tilegate: a performance gate (perf_tests/, [tool.tilegate])")
    return repo


def test_graft_adds_the_gate_and_changes_nothing_in_src(tmp_path: Path) -> None:
    repo = make_liger_repo(tmp_path / "repo")
    src_before = git(repo, "rev-parse", "HEAD:src")
    proc = run(repo, str(GRAFT), str(repo))
    assert proc.returncode == 0, _why(proc)
    assert set(proc.stdout.split()) == GRAFTED | {"pyproject.toml", ".gitignore"}
    git(repo, "add", "-A")
    changed = set(git(repo, "diff", "--cached", "--name-only").split())
    assert changed == GRAFTED | {"pyproject.toml", ".gitignore"}
    git(repo, "commit", "-q", "-m", "graft")
    assert git(repo, "rev-parse", "HEAD:src") == src_before  # src/ is the same tree
    from tilegate.config import _toml  # tomllib, or tomli on Python 3.10

    data = _toml().loads((repo / "pyproject.toml").read_text())
    assert data["tool"]["tilegate"] == {
        "source": "src/liger_kernel",
        "protocol": "perf_tests",
        "baselines": "baselines",
    }
    assert data["tool"]["pytest"]["ini_options"]["addopts"][0] == "--cov=src/liger_kernel"  # kept
    assert ".perf/" in (repo / ".gitignore").read_text().split()


def test_graft_refuses_a_grafted_tree_and_a_tree_without_liger(
    grafted: Path, tmp_path: Path
) -> None:
    before = {
        p: p.read_bytes() for p in grafted.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    proc = run(grafted, str(GRAFT), str(grafted))
    assert proc.returncode == 2, _why(proc)
    assert "already has a [tool.tilegate] table; nothing written" in proc.stderr
    after = {p: p.read_bytes() for p in grafted.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    proc = run(tmp_path, str(GRAFT), str(tmp_path))
    assert proc.returncode == 2, _why(proc)
    assert "no src/liger_kernel/__init__.py: not a Liger-Kernel work tree" in proc.stderr
    assert not (tmp_path / "perf_tests").exists()


def test_make_bundle_replays_each_pr_as_two_commits_without_history(tmp_path: Path) -> None:
    liger = make_liger_repo(tmp_path / "liger")
    (liger / "README.md").write_text("history the bundle leaves behind\n")
    git(liger, "add", "-A")
    git(liger, "commit", "-q", "-m", "docs")
    parent = git(liger, "rev-parse", "HEAD").strip()
    path = liger / EDIT_FILE
    text = path.read_text()
    at = text.index(EDIT_OLD, text.index(EDIT_IN))
    path.write_text(text[:at] + EDIT_NEW + text[at + len(EDIT_OLD) :])
    git(liger, "commit", "-q", "-am", "perf(swiglu): 2 warps (#7)\n\nthe body")
    pr = git(liger, "rev-parse", "HEAD").strip()
    bundle = tmp_path / "out" / "liger.bundle"
    proc = run(tmp_path, str(HERE / "tools" / "make-bundle.py"), str(liger / ".git"), str(bundle),
               "--pr", f"7={pr[:10]}", "--range", "1")  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bundle), str(clone))
    refs = git(clone, "for-each-ref", "--format=%(refname:short)", "refs/remotes").split()
    ranges = ["origin/range-bad", "origin/range-good", "origin/range-seeded"]
    assert sorted(refs) == [
        "origin/HEAD",
        "origin/aa",
        "origin/pr-7-base",
        "origin/pr-7-head",
        *ranges,
    ]
    # the bisect range: the PR's parent's first-parent history, grafted, the seed from its 1st on
    good, bad, seeded = (f"origin/range-{r}" for r in ("good", "bad", "seeded"))
    assert git(clone, "rev-parse", bad) == git(clone, "rev-parse", seeded)
    assert git(clone, "rev-parse", f"{bad}^") == git(clone, "rev-parse", good)
    assert git(clone, "rev-list", "--count", bad).strip() == "2"
    assert git(clone, "diff", "--name-only", good, bad).split() == [
        "README.md",
        "src/liger_kernel/ops/rms_norm.py",
    ]
    seed = "Y[: n_rows // 128].mul_(1.0)"
    assert seed in git(clone, "show", f"{bad}:src/liger_kernel/ops/rms_norm.py")
    assert seed not in git(clone, "show", f"{good}:src/liger_kernel/ops/rms_norm.py")
    base, head, aa = (f"origin/{r}" for r in ("pr-7-base", "pr-7-head", "aa"))
    assert git(clone, "rev-list", "--count", base).strip() == "1"  # no Liger history
    assert git(clone, "rev-parse", f"{head}^") == git(clone, "rev-parse", base)
    assert git(clone, "log", "-1", "--format=%s", head).strip() == "perf(swiglu): 2 warps (#7)"
    # the base is the PR's parent and the graft; the head adds the PR's diff, nothing else
    assert git(clone, "rev-parse", f"{base}:src") == git(liger, "rev-parse", f"{parent}:src")
    assert git(clone, "rev-parse", f"{head}:src") == git(liger, "rev-parse", f"{pr}:src")
    assert set(git(clone, "ls-tree", "-r", "--name-only", base).split()) >= GRAFTED
    assert git(clone, "diff", "--name-only", base, head).split() == [EDIT_FILE]
    assert git(clone, "rev-parse", f"{aa}^{{tree}}") == git(clone, "rev-parse", f"{head}^{{tree}}")
    assert git(clone, "rev-parse", f"{aa}^") == git(clone, "rev-parse", head)


LOAD = """
import json
from tilegate.config import find
config = find()
bench = config.load_benchmark()
import liger_kernel
print(json.dumps({
    "source": config.source, "registry": config.registry, "liger": liger_kernel.__file__,
    "variants": [[v.name, v.reference] for v in bench.variants],
    "default": bench.profile().name,
    "profiles": {p.name: {"axes": {a.name: list(a.values) for a in p.axes}, "fixed": dict(p.fixed),
                          "interpreter": p.interpreter, "hold_host": p.hold_host}
                 for p in bench.profiles},
}))
"""


def test_the_protocol_loads_with_liger_from_the_repositorys_src(grafted: Path) -> None:
    proc = run(grafted, "-c", LOAD)
    assert proc.returncode == 0, _why(proc)
    got = json.loads(proc.stdout.splitlines()[-1])
    assert (got["source"], got["registry"]) == ("src/liger_kernel", None)
    assert Path(got["liger"]).resolve() == (grafted / "src/liger_kernel/__init__.py").resolve()
    assert got["variants"] == [["torch", True], ["liger", False]]
    assert got["default"] == "quick"
    quick, smoke = got["profiles"]["quick"], got["profiles"]["smoke"]
    # the kernels #945 (layer_norm backward) and #1266 (cross-entropy) change, at real sizes
    assert {"layer_norm-bwd", "cross_entropy-fwd", "cross_entropy-fwd_bwd"} <= set(
        quick["axes"]["kernel"]
    )
    assert quick["axes"]["dtype"] == ["bf16"] and quick["hold_host"] and not quick["interpreter"]
    assert (quick["axes"]["tokens"], quick["axes"]["hidden"], quick["fixed"]) == (
        [8192],
        [4096],
        {"vocab": 128256},
    )
    assert smoke["interpreter"] and smoke["axes"]["dtype"] == ["fp32"]


def test_smoke_run_checks_and_times_liger_beside_torch(grafted: Path) -> None:
    """The pytest run tilegate starts reads perf_tests/pytest.ini, not Liger's addopts (--cov:
    pytest-cov is not installed here), and measures the kernels #945 and #1266 change."""
    out = grafted / ".perf" / "smoke"
    proc = run(
        grafted, "-m", "tilegate", "perf", "--profile", "smoke", "--report-only", "--no-plots",
        "--perf-axis=kernel=layer_norm-bwd,cross_entropy-fwd_bwd", "--out-dir", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    rows = {
        b["extra_info"]["tilegate"]["key"]: b["extra_info"]["tilegate"]
        for b in json.loads((out / "results.json").read_text())["benchmarks"]
    }
    assert set(rows) == {
        f"{v}-{k}-fp32-T9-H96"
        for v in ("torch", "liger")
        for k in ("layer_norm-bwd", "cross_entropy-fwd_bwd")
    }
    for key, row in rows.items():
        assert row["correct"] is True, key
        assert row["rel_err"] <= 1e-4, key
    assert rows["liger-layer_norm-bwd-fp32-T9-H96"]["code_hash_kind"] == "source"  # Triton ran
    assert (out / "report.md").read_text().startswith("# tilegate:")
    assert "configfile: perf_tests/pytest.ini" in (out / "results.log").read_text()


# --- the A/B: each side must run its own commit's liger_kernel -------------------------------
# These two fail with the A/B engine of 17613c3, which imports the base's package under another
# name in the head's process: Liger imports itself by name (`from liger_kernel.ops.utils import
# ...`), and the base side's host code is not seen as the code under test. They are the proof
# of issue 38's engine (a side = a checkout and a process).


def _ab_rows(out: Path) -> dict[str, dict]:
    return {
        b["name"].split("[", 1)[1].rstrip("]"): b["extra_info"]["tilegate"]
        for b in json.loads((out / "results.json").read_text())["benchmarks"]
    }


def test_ab_sees_the_change_of_one_kernel_only(grafted: Path, tmp_path: Path) -> None:
    """A pull request that launches swiglu's forward with 2 warps: that case's code changed
    (explained), rms_norm's forward, untouched, runs the base's code."""
    repo = tmp_path / "repo"
    git(grafted, "clone", "-q", str(grafted), str(repo))
    path = repo / EDIT_FILE
    text = path.read_text()
    at = text.index(EDIT_OLD, text.index(EDIT_IN))
    path.write_text(text[:at] + EDIT_NEW + text[at + len(EDIT_OLD) :])
    git(repo, "commit", "-q", "-am", "swiglu forward: 2 warps")
    out = repo / ".perf" / "ab"
    proc = run(
        repo, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD~1", "--report-only",
        "--no-plots", AB_KERNELS, "--out-dir", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    rows = _ab_rows(out)
    swiglu, rms = "liger-swiglu-fwd-fp32-T9-H96", "liger-rms_norm-fwd-fp32-T9-H96"
    assert rows[swiglu]["code_hash"] != rows[f"{swiglu}@base"]["code_hash"], "change not seen"
    assert rows[rms]["code_hash"] == rows[f"{rms}@base"]["code_hash"], (
        "an untouched kernel reads as changed: "
        f"{rows[rms]['code_parts']} (head) vs {rows[f'{rms}@base']['code_parts']} (base)"
    )
    assert "**Compiled code changed** for `liger`" in (out / "report.md").read_text()
    # why it changed, whatever the (meaningless) timings decided: the report shows it for the
    # decided cases only
    from tilegate.explain.diff import explain_cases

    (why,) = explain_cases(out / "results.json", [(swiglu, "")])
    assert "`_swiglu_forward_kernel`: num_warps 4 -> 2" in why.lines, why


def test_ab_sees_the_change_nowhere_in_an_a_a(grafted: Path) -> None:
    """The graft's commit against itself: every Liger case runs the same code on both sides."""
    out = grafted / ".perf" / "aa"
    proc = run(
        grafted, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD", "--report-only",
        "--no-plots", AA_KERNELS, "--out-dir", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    rows = _ab_rows(out)
    key = "liger-swiglu-fwd-fp32-T9-H96"
    assert rows[key]["code_hash"] == rows[f"{key}@base"]["code_hash"], (
        f"{rows[key]['code_parts']} (head) vs {rows[f'{key}@base']['code_parts']} (base)"
    )
    assert "**Compiled code changed** for no variant" in (out / "report.md").read_text()
