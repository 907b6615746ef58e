"""A command whose optional dependency is missing says which extra to install; it never crashes.

Each command runs in a fresh interpreter with the module hidden (None in sys.modules: its
import raises ImportError), so nothing imported earlier by other tests can mask it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "recorded-h200-quick.json"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"

RUN = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # hidden: `import {name}` raises ImportError
from tilegate.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


def _without(module: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", RUN, module, *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_fingerprint_needs_only_the_kernels_packages(tmp_path: Path) -> None:
    """nox's fingerprint, upgrade and fingerprint_rebaseline sessions run `python -m tilegate
    fingerprint` where only pyproject's `kernels` group is installed (torch, Triton, NumPy)."""
    hidden = "scipy,pytest,_pytest,pytest_benchmark,duckdb,filelock,ruptures,plotly,matplotlib"
    proc = _without(hidden, "fingerprint", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--upgrade-from" in proc.stdout


def test_history_without_duckdb_is_2_and_names_the_history_extra(tmp_path: Path) -> None:
    proc = _without("duckdb", "history", "add", str(RECORDED), "--store", "h.duckdb", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "history" in proc.stderr and "duckdb" in proc.stderr
    assert not (tmp_path / "h.duckdb").exists()


def test_dashboard_without_plotly_is_2_and_names_the_extra(tmp_path: Path) -> None:
    store = tmp_path / "h.duckdb"
    add = _without("plotly", "history", "add", str(RECORDED), "--store", str(store), cwd=tmp_path)
    assert add.returncode == 0, add.stderr  # the store itself needs no plotly
    page = tmp_path / "page.html"
    proc = _without(
        "plotly", "history", "dashboard", "--store", str(store), "--out", str(page), cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "tilegate[history]" in proc.stderr
    assert not page.exists()


@pytest.mark.parametrize("command", ["compare", "report"])
def test_compare_and_report_without_matplotlib_judge_and_name_the_plots_extra(
    command: str, tmp_path: Path
) -> None:
    report = tmp_path / "report.md"
    flag = "--report" if command == "compare" else "--out"
    proc = _without(
        "matplotlib", command, str(RECORDED), str(BASELINE), flag, str(report),
        "--plots", str(tmp_path / "plots"),
        cwd=tmp_path,
    )  # fmt: skip
    # the verdict does not depend on the plots: judged as with them, the missing extra named
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr and "tilegate[plots]" in proc.stderr
    assert report.read_text().startswith("# tilegate:")
    assert not list((tmp_path / "plots").glob("*.png")) if (tmp_path / "plots").exists() else True
