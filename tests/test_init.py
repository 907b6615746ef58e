"""`tilegate init`: a starting [tool.tilegate], a starter package and its protocol that loads,
a baselines/ git keeps; never twice."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilegate.cli import main
from tilegate.config import find, load_benchmark
from tilegate.errors import InputError


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
    said = capsys.readouterr().err
    assert "toyperf/kernels.py" in said and "perf_tests/test_toyperf.py" in said
    config = find(tmp_path)
    assert (config.source, config.registry, config.protocol, config.baselines) == (
        "toyperf", "toyperf.kernels:VARIANTS", "perf_tests", "baselines",
    )  # fmt: skip
    assert (tmp_path / "toyperf" / "__init__.py").is_file()
    # a tracked file: a fresh clone has baselines/ (git keeps no empty folder)
    assert (tmp_path / "baselines" / "README.md").is_file()
    protocol = (tmp_path / "perf_tests" / "test_toyperf.py").read_text()
    assert "def test_scale(tilegate_case, perf_run, benchmark):" in protocol
    assert "measure_case(tilegate_case, perf_run, benchmark)" in protocol
    assert (
        "BENCHMARK = Benchmark(" in protocol
        and "Benchmark(" not in (tmp_path / "toyperf" / "kernels.py").read_text()
    )
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
    assert find(tmp_path).registry == "perfbench.kernels:VARIANTS"


def test_init_refuses_to_overwrite_a_module_or_a_broken_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perf_tests").mkdir()
    (tmp_path / "perf_tests" / "test_perfbench.py").write_text("# mine\n")
    assert main(["init"]) == 2
    assert (tmp_path / "perf_tests" / "test_perfbench.py").read_text() == "# mine\n"
    assert not (tmp_path / "perfbench").exists()
    assert not (tmp_path / "pyproject.toml").exists()
    (tmp_path / "pyproject.toml").write_text("[tool\n")
    assert main(["init", "--package", "fresh"]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    assert main(["init", "--package", "not-a-name"]) == 2


def test_an_old_benchmark_key_is_refused_naming_the_new_layout(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tilegate]\nbenchmark = "kernels.registry:BENCHMARK"\nsource = "kernels"\n'
    )
    with pytest.raises(InputError, match=r"benchmark = .* is no longer read.*perf_tests"):
        find(tmp_path)


def _protocol_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["init", "--package", package]) == 0
    return tmp_path / "perf_tests" / f"test_{package}.py"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("BENCHMARK = Benchmark(", "_UNUSED = Benchmark("), "declares no benchmark"),
        (("    expectations=(),", '    expectations=(Expectation("triton_scale", "gone", per="n"),),'),
         "unknown variant 'gone'"),
        (('Axis("n", (100, 256), label="n{}")),', '),'), "per=... "),
        (("    variants=VARIANTS,", "    variants=VARIANTS[:1],"),
         "registry variant(s) ['triton_scale']"),
    ],
)  # fmt: skip
def test_a_bad_protocol_is_exit_2_naming_the_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    edit: tuple[str, str],
    message: str,
) -> None:
    package = f"bad{abs(hash(message)) % 10**6}"
    protocol = _protocol_repo(tmp_path, monkeypatch, package)
    text = protocol.read_text().replace(
        "from tilegate.declare import Axis, Benchmark, Profile, Work",
        "from tilegate.declare import Axis, Benchmark, Expectation, Profile, Work",
    )
    assert edit[0] in text
    protocol.write_text(text.replace(edit[0], edit[1]))
    if message == "per=... ":  # a profile without the axis an expectation is per
        text = protocol.read_text().replace(
            "    expectations=(),",
            '    expectations=(Expectation("triton_scale", "torch", per="n"),),',
        )
        protocol.write_text(text)
        message = "per='n' is not an axis of profile 'smoke'"
    try:
        with pytest.raises(InputError) as err:
            load_benchmark(find(tmp_path))
    finally:
        for name in [m for m in sys.modules if m.startswith((package, f"test_{package}"))]:
            sys.modules.pop(name, None)
    assert message in str(err.value) and "test_" in str(err.value)


def test_two_benchmarks_of_one_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = _protocol_repo(tmp_path, monkeypatch, "twice")
    (protocol.parent / "test_again.py").write_text(protocol.read_text())
    try:
        with pytest.raises(InputError, match="two benchmarks of one name 'scale'"):
            load_benchmark(find(tmp_path))
    finally:
        for name in [m for m in sys.modules if m.startswith(("twice", "test_twice", "test_again"))]:
            sys.modules.pop(name, None)


@pytest.mark.parametrize("package", ["perf_tests", "baselines"])
def test_init_refuses_a_package_that_clashes_with_the_protocol_or_baselines(
    package: str, tmp_path: Path
) -> None:
    # issue 48: `init --package perf_tests` wrote a configuration that `perf` rejects
    from tilegate.starter import init

    lines: list[str] = []
    assert init(tmp_path, package, say=lines.append) == 2
    said = "\n".join(lines)
    assert f"source = '{package}'" in said and "overlap" in said and "nothing written" in said
    assert list(tmp_path.iterdir()) == []


def test_a_source_that_does_not_exist_is_named_with_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tilegate]\nsource = "kernelz"\n')
    with pytest.raises(InputError, match=r"source = 'kernelz': no directory .*kernelz"):
        find(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["perf", "--profile", "smoke", "--report-only"]) == 2
    assert "source = 'kernelz': no directory" in capsys.readouterr().err
