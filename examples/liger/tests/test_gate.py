"""tilegate on this repo, on the CPU: what a user's CI runs, end to end, in a git copy of it.

`tilegate perf --profile smoke` (Liger's kernels under the Triton interpreter) twice ->
`tilegate rebaseline` into a throwaway baseline -> `tilegate compare` against it; an A/A run
(`--ab HEAD`); a wrong Liger call caught before its timing counts; `tilegate upgrade-ab` of the
Liger release under two PYTHONPATH directories with a verdict per kernel. Timings mean nothing
here: the exit codes, the files and the verdict tables are what is checked.

Needs liger_kernel importable (`pip install --no-deps liger-kernel==0.8.5`, or PYTHONPATH=DIR of
a `pip install --no-deps --target DIR`); set LIGER_OLD_DIR to a --target directory of another
release (0.8.4) to make the upgrade test a real upgrade instead of an A/A of environments.
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

HERE = Path(__file__).resolve().parents[1]  # examples/liger: the user's repository
LIGER = importlib.util.find_spec("liger_kernel")
pytestmark = pytest.mark.skipif(
    LIGER is None,
    reason="liger_kernel is not importable: `pip install --no-deps liger-kernel==0.8.5` (CI), "
    "or PYTHONPATH=DIR after `pip install --no-deps --target DIR liger-kernel==0.8.5`",
)
TILEGATE = importlib.util.find_spec("tilegate")
SUBSET = "--perf-axis=kernel=rms_norm-bwd,swiglu-fwd"  # two groups: the quick checks


def _env() -> dict[str, str]:
    assert LIGER is not None and LIGER.origin and TILEGATE is not None and TILEGATE.origin
    first = [str(Path(LIGER.origin).parents[1]), str(Path(TILEGATE.origin).parents[1])]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [*first, os.environ.get("PYTHONPATH")])),
    }


def tilegate(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tilegate", *args],
        cwd=repo,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _why(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git copy of this repository (A/B runs take the base's liger_bench/ from git)."""
    dest = tmp_path_factory.mktemp("liger") / "repo"
    shutil.copytree(
        HERE, dest, ignore=shutil.ignore_patterns(".perf", ".whl", "__pycache__", ".benchmarks")
    )
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-C", str(dest)]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "liger example"]):
        subprocess.run([*git, *cmd], check=True, capture_output=True)
    return dest


@pytest.fixture(scope="module")
def smoke_runs(repo: Path) -> list[Path]:
    runs = []
    for i in (1, 2):
        out = repo / ".perf" / f"run-{i}"
        proc = tilegate(repo, "perf", "--profile", "smoke", "--report-only", "--no-plots",
                        "--out-dir", str(out))  # fmt: skip
        assert proc.returncode == 0, _why(proc)
        runs.append(out / "results.json")
    return runs


def test_smoke_run_measures_every_kernel_beside_torch(smoke_runs: list[Path]) -> None:
    data = json.loads(smoke_runs[0].read_text())
    info = data["machine_info"]["tilegate"]
    assert (info["benchmark"], info["mode"], info["reference"]) == ("liger", "smoke", "torch")
    assert info["axes"] == ["kernel", "dtype", "tokens", "hidden"]
    assert (
        info["expectations"][0]["faster"] == "liger" and info["expectations"][0]["per"] == "hidden"
    )
    rows = {b["param"]: b["extra_info"]["tilegate"] for b in data["benchmarks"]}
    kernels = ["rms_norm-fwd", "rms_norm-bwd", "layer_norm-fwd", "layer_norm-bwd", "swiglu-fwd",
               "swiglu-bwd", "geglu-fwd", "geglu-bwd", "flce-fwd_bwd"]  # fmt: skip
    assert set(rows) == {f"{v}-{k}-fp16-T37-H96" for v in ("torch", "liger") for k in kernels}
    for key, row in rows.items():
        assert row["correct"] is True, key
        assert row["gbps"] is not None, key  # work is declared in bytes (~0 GB/s here)
        assert row["group"] == key.split("-", 1)[1]  # liger and torch timed in one group


def test_rebaseline_then_compare_passes(smoke_runs: list[Path], repo: Path) -> None:
    baseline = repo / ".perf" / "baseline" / "smoke.json"
    proc = tilegate(repo, "rebaseline", *map(str, smoke_runs), "--out", str(baseline))
    assert proc.returncode == 0, _why(proc)
    assert len(json.loads(baseline.read_text())["rows"]) == 18
    report = repo / ".perf" / "compare.md"
    proc = tilegate(repo, "compare", str(smoke_runs[1]), str(baseline), "--no-plots",
                    "--report", str(report))  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    assert report.read_text().startswith("# tilegate: PASS")


def test_ab_against_head_is_an_a_a(repo: Path) -> None:
    out = repo / ".perf" / "ab"
    proc = tilegate(repo, "perf", "--profile", "smoke", "--ab", "HEAD", "--report-only",
                    "--no-plots", "--out-dir", str(out), SUBSET)  # fmt: skip
    assert proc.returncode == 0, _why(proc)
    assert "## A/B against `HEAD`" in (out / "report.md").read_text()
    rows = json.loads((out / "results.json").read_text())["benchmarks"]
    sides = {(b["param"].removesuffix("@base"), b["extra_info"]["tilegate"].get("side", "head"))
             for b in rows}  # fmt: skip
    assert ("liger-rms_norm-bwd-fp16-T37-H96", "base") in sides
    assert ("torch-rms_norm-bwd-fp16-T37-H96", "base") not in sides  # the reference: once


def test_a_wrong_liger_call_fails_its_case(repo: Path) -> None:
    out = repo / ".perf" / "wrong"
    proc = tilegate(repo, "perf", "--profile", "smoke", "--report-only", "--no-plots",
                    "--out-dir", str(out), SUBSET, "--inject=wrong=liger")  # fmt: skip
    assert proc.returncode == 2, _why(proc)  # a case failed: its timing cannot be judged
    assert "liger-rms_norm-bwd-fp16-T37-H96: wrong result" in proc.stdout
    rows = {b["param"]: b["extra_info"]["tilegate"]
            for b in json.loads((out / "results.json").read_text())["benchmarks"]}  # fmt: skip
    assert rows["liger-swiglu-fwd-fp16-T37-H96"]["correct"] is False
    assert rows["torch-swiglu-fwd-fp16-T37-H96"]["correct"] is True


def test_upgrade_ab_gives_a_verdict_per_kernel(repo: Path, tmp_path: Path) -> None:
    """The release under test in a DIR of its own (--new); --old LIGER_OLD_DIR if given, else the
    environment's own (the same release: an A/A of environments). An A/B of this tree under the
    two environments, each side a process (tilegate.run.upgrade): a verdict per case."""
    assert LIGER is not None and LIGER.origin
    new = tmp_path / "liger-new"
    new.mkdir()
    (new / "liger_kernel").symlink_to(Path(LIGER.origin).parent, target_is_directory=True)
    old = os.environ.get("LIGER_OLD_DIR")
    args = ["upgrade-ab", "--new", str(new), "--profile", "smoke", SUBSET]
    proc = tilegate(repo, *args, *(["--old", old] if old else []))
    assert proc.returncode == 0, _why(proc)  # smoke: verdicts shown, never failed on timings
    report = (repo / ".perf" / "upgrade-ab" / "report.md").read_text()
    assert "each side its own checkout and process" in report
    data = json.loads((repo / ".perf" / "upgrade-ab" / "results.json").read_text())
    sides = data["machine_info"]["tilegate"]["ab"]["sides"]
    assert sides["head"]["path_first"] == [str(new.resolve())]
    rows = {
        (b["extra_info"]["tilegate"]["key"], b["extra_info"]["tilegate"].get("side", "head")):
        b["extra_info"]["tilegate"]["code_hash"]
        for b in data["benchmarks"]
    }  # fmt: skip
    for kernel in ("rms_norm-bwd", "swiglu-fwd"):
        assert (f"liger-{kernel}-fp16-T37-H96", "base") in rows
    if old:
        assert "## Upgrade: liger_kernel 0.8.4 -> 0.8.5" in report
        # 0.8.5 changed the norm backwards (COMPUTE_DW), not swiglu: each case's code says so
        rms, swiglu = "liger-rms_norm-bwd-fp16-T37-H96", "liger-swiglu-fwd-fp16-T37-H96"
        assert rows[(rms, "head")] != rows[(rms, "base")]
        assert rows[(swiglu, "head")] == rows[(swiglu, "base")]
    else:
        assert "no package version differs between the sides" in report
