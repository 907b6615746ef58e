"""`tilegate init`: a starting [tool.tilegate] and a starter benchmark that loads; never twice."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilegate.cli import main
from tilegate.config import find, load_benchmark


def test_init_writes_a_configuration_whose_benchmark_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # before: the "no configuration" error is one line and names `tilegate init`
    assert main(["perf", "--profile", "smoke", "--report-only"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert any(
        "no [tool.tilegate] configuration" in line and "tilegate init" in line for line in err
    )

    assert main(["init", "--package", "toyperf"]) == 0
    assert "toyperf/bench.py" in capsys.readouterr().err
    config = find(tmp_path)
    assert (config.benchmark, config.source, config.baselines) == (
        "toyperf.bench:BENCHMARK", "toyperf", "baselines",
    )  # fmt: skip
    assert (tmp_path / "baselines").is_dir() and (tmp_path / "toyperf" / "__init__.py").is_file()
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        bench = load_benchmark(config)  # validated: problems() is empty
    finally:
        for name in [m for m in sys.modules if m == "toyperf" or m.startswith("toyperf.")]:
            del sys.modules[name]
    assert [v.name for v in bench.variants] == ["torch", "triton_scale"]
    assert bench.reference.name == "torch" and {"quick", "smoke"} <= set(bench.profile_map)
    assert bench.profile("smoke").interpreter

    # a second init refuses and writes nothing
    before = (tmp_path / "pyproject.toml").read_text()
    assert main(["init", "--package", "other"]) == 2
    assert "already has a [tool.tilegate]" in capsys.readouterr().err
    assert (tmp_path / "pyproject.toml").read_text() == before
    assert not (tmp_path / "other").exists()


def test_init_appends_to_an_existing_pyproject_and_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\nversion = "1"')
    assert main(["init"]) == 0
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "mine"\nversion = "1"\n')
    assert find(tmp_path).benchmark == "perfbench.bench:BENCHMARK"


def test_init_refuses_to_overwrite_a_module_or_a_broken_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perfbench").mkdir()
    (tmp_path / "perfbench" / "bench.py").write_text("# mine\n")
    assert main(["init"]) == 2
    assert (tmp_path / "perfbench" / "bench.py").read_text() == "# mine\n"
    assert not (tmp_path / "pyproject.toml").exists()
    (tmp_path / "pyproject.toml").write_text("[tool\n")
    assert main(["init", "--package", "fresh"]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    assert main(["init", "--package", "not-a-name"]) == 2
