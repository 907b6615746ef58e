"""Issue 32: every decided case whose code changed is explained, base against head.

On the CPU: a changed num_stages of a toy matmul (a kernel of no registry: found through the
identity's launches, compiled ahead of time for sm_90 from what the interpreter launched), a
torch op the wrapper adds, unchanged code (no explanation), the report / PR comment block, and
`tilegate explain` on a committed A/B results file (synthetic timings, H200-shaped records).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from tilegate.cli import main
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK
from tilegate.explain.diff import MAX_LINES, Side, decided, explain_cases, explain_pair
from tilegate.fingerprint import record
from tilegate.harness.identity import capture, identity
from tilegate.report.pr_comment import deciding_section
from tilegate.run.gate import gate

FIXTURES = Path(__file__).parent / "fixtures"
AB_FIXTURE = FIXTURES / "synthetic-ab-explain-h200.json"


def _call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **kwargs: Any) -> Any:
    """The identity of one toy matmul call under the interpreter, with its explanation record."""
    from tests import _explain_toy as toy

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv(record.DIR_ENV, str(tmp_path / "explain"))
    torch.manual_seed(0)
    a, b = torch.randn(64, 128).half(), torch.randn(128, 64).half()
    with capture(toy.matmul) as seen:
        toy.matmul(a, b, **kwargs)
    return identity(seen)


def _side(ident: Any) -> Side:
    return Side(ident.explain, ident.hash, ident.as_json().get("code_parts", {}))


@pytest.mark.aot
def test_a_changed_num_stages_is_explained_by_its_sm90_compile_facts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base, head = _call(monkeypatch, tmp_path, stages=3), _call(monkeypatch, tmp_path, stages=4)
    assert base.hash != head.hash
    # under the interpreter nothing is compiled until the pair is known to differ
    assert "shared" not in base.explain["triton"][0]
    for ident in (head, base):  # as the side does for a changed pair
        record.compile_launches(ident.explain, list(ident.handles))
    hk, bk = head.explain["triton"][0], base.explain["triton"][0]
    assert (bk["aot"], bk["num_stages"], hk["num_stages"]) == ("sm_90", 3, 4)
    assert bk["mma"] == "wgmma" and (bk["buffers"], hk["buffers"]) == (3, 4)
    assert hk["shared"] > bk["shared"] and hk["programs_per_sm"] < bk["programs_per_sm"]
    assert hk["mix"]["cp.async"] > bk["mix"]["cp.async"]
    # the record is compact: counts and a hash, the IR in a side file
    assert "ttgir" not in json.dumps(head.explain)
    assert (tmp_path / "explain" / "ir" / f"{hk['ir']}.ttgir").is_file()

    e = explain_pair("toy", "SLOWER", _side(base), _side(head), [tmp_path / "explain" / "ir"])
    assert e.unavailable is None, e
    first = e.lines[0]
    assert first.startswith("`toy_matmul_kernel`: programs/SM ")
    assert "num_stages 3 -> 4" in first and "multi-buffering depth 3 -> 4" in first
    assert "shared memory 24 KiB -> 32 KiB" in first
    assert any("instruction mix (PTX): cp.async 12 -> 16" in line for line in e.lines)
    assert len(e.lines) <= MAX_LINES
    assert e.ttgir_diff.startswith("--- base/toy_matmul_kernel.ttgir")
    assert "loc(" not in e.ttgir_diff  # locations stripped: the diff is the code's
    # the TTGIR's hash leaves locations out: a base materialised elsewhere is the same IR
    from tilegate.fingerprint.facts import ir_hash

    ttgir = (tmp_path / "explain" / "ir" / f"{hk['ir']}.ttgir").read_text()
    assert "loc(" in ttgir
    moved = ttgir.replace("_explain_toy.py", "elsewhere/_explain_toy.py")
    assert moved != ttgir and ir_hash(moved) == ir_hash(ttgir) == hk["ir"]


def test_an_added_torch_op_in_the_wrapper_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(record.AOT_ENV, "0")  # the kernel is the same: nothing to compile here
    base, head = _call(monkeypatch, tmp_path), _call(monkeypatch, tmp_path, clone=True)
    assert base.hash != head.hash
    for ident in (head, base):  # as the side does for a changed pair
        record.compile_launches(ident.explain, list(ident.handles))
    e = explain_pair("toy", "SLOWER", _side(base), _side(head))
    assert e.lines == ["+1 torch op `aten.clone.default`"], e.lines


def test_an_added_copy_on_a_gpu_is_named_with_its_share_of_the_call() -> None:
    # as an H200 records it: the profiler's kernels with their durations
    data = json.loads(AB_FIXTURE.read_text())
    sides = {
        (b["extra_info"]["tilegate"].get("side", "head"), b["extra_info"]["tilegate"]["key"]): b
        for b in data["benchmarks"]
    }
    head = sides[("head", "grouped-fp16-nt-K128")]["extra_info"]["tilegate"]
    base = sides[("base", "grouped-fp16-nt-K128")]["extra_info"]["tilegate"]
    e = explain_pair(
        "g",
        "SLOWER",
        Side(base["explain"], base["code_hash"], {}),
        Side(head["explain"], head["code_hash"], {}),
    )
    assert e.lines == [
        "+1 launch: the copy of `aten.clone.default`, 12 us of the call's 478 us "
        "(`at::native::elementwise_kernel`)"
    ]
    # and dropped again: the base's side of it
    back = explain_pair(
        "g",
        "FASTER",
        Side(head["explain"], "x", {}),
        Side(base["explain"], "y", {}),
    )
    assert back.lines[0].startswith("-1 launch: `at::native::elementwise_kernel`, 12 us")
    assert "-1 torch op `aten.clone.default` (dropped)" in back.lines


def test_unchanged_code_gets_no_explanation(tmp_path: Path) -> None:
    same = Side({"v": 1, "triton": [], "ops": {}}, "case2:sha256:same", {})
    e = explain_pair("k", "SLOWER", same, same)
    assert e.lines == [] and e.unavailable == "same code on both sides: nothing to explain"
    ab = SimpleNamespace(
        cases=[
            SimpleNamespace(key="a", verdict=SimpleNamespace(name="SLOWER"), code_changed=False),
            SimpleNamespace(key="b", verdict=SimpleNamespace(name="SAME"), code_changed=True),
            SimpleNamespace(key="c", verdict=SimpleNamespace(name="UNSTABLE"), code_changed=True),
        ]
    )
    # unchanged code, or an undecided verdict: not explained; a new verdict name is
    assert decided(None, ab) == [("c", "UNSTABLE")]


def test_a_results_file_without_records_says_why_and_never_crashes(tmp_path: Path) -> None:
    data = json.loads(AB_FIXTURE.read_text())
    for b in data["benchmarks"]:
        tg = b["extra_info"]["tilegate"]
        if tg.get("side") == "base":
            tg.pop("explain", None)
        elif tg["variant"] == "grouped":
            tg["explain"] = {"triton": "garbage", "ops": 7}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    got = {e.key: e for e in explain_cases(path, [("tiled-fp16-nt-K128", "SLOWER")])}
    assert got["tiled-fp16-nt-K128"].unavailable.startswith("the base row carries no launch")
    bad = explain_pair("g", "SLOWER", Side({"triton": 3}, "a", {}), Side({"ops": 7}, "b", {}))
    assert bad.unavailable and bad.summary.startswith("explanation unavailable: ")


def _judged(tmp_path: Path, results: Path) -> Any:
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    out = tmp_path / "out"
    return gate(results, baselines_dir=baselines, report_path=out / "report.md"), out


def test_the_report_and_pr_comment_say_why_and_the_exit_code_is_unchanged(
    tmp_path: Path,
) -> None:
    results = tmp_path / "ab.json"
    shutil.copy(AB_FIXTURE, results)
    j, out = _judged(tmp_path, results)
    assert j.code == EXIT_FAIL, j.error
    report = (out / "report.md").read_text()
    assert "**Why it changed**" in report
    comment = deciding_section(report)
    assert "**Why it changed**" in comment  # the PR comment carries the deciding section
    line = next(x for x in comment.splitlines() if "tiled-fp16-nt-K128" in x and "summary" in x)
    assert "num_stages 3 -&gt; 4" in line or "num_stages 3 -> 4" in line
    assert "shared memory 96 KiB -&gt; 128 KiB" in line or "96 KiB -> 128 KiB" in line
    assert "SLOWER: +1 launch: the copy of `aten.clone.default`, 12 us of the call" in comment
    side = json.loads((out / "explain" / "explanations.json").read_text())
    assert side["schema"] == "tilegate.explain/1" and side["results"] == "ab.json"
    assert side["cases"]["tiled-fp16-nt-K128"]["verdict"] == "SLOWER"
    assert "programs/SM 2 -> 1" in side["cases"]["tiled-fp16-nt-K128"]["lines"][0]
    assert str(tmp_path) not in report  # no absolute path of this machine in the report

    # the same run with every record broken: the same exit code, the report says why
    data = json.loads(AB_FIXTURE.read_text())
    for b in data["benchmarks"]:
        b["extra_info"]["tilegate"]["explain"] = {"triton": [{"name": 5, "mix": "x"}], "gpu": 3}
    broken = tmp_path / "broken" / "ab.json"
    broken.parent.mkdir()
    broken.write_text(json.dumps(data))
    j2, _ = _judged(tmp_path / "broken", broken)
    assert j2.code == j.code
    assert "**Why it changed**" in j2.text


def test_an_ab_run_with_unchanged_code_has_no_why_block(tmp_path: Path) -> None:
    data = json.loads(AB_FIXTURE.read_text())
    for b in data["benchmarks"]:
        tg = b["extra_info"]["tilegate"]
        tg["code_hash"] = f"case2:sha256:{tg['variant']}"  # both sides the same code
    results = tmp_path / "aa.json"
    results.write_text(json.dumps(data))
    j, out = _judged(tmp_path, results)
    assert "Why it changed" not in j.text
    assert not (out / "explain").exists()


def test_tilegate_explain_prints_a_results_files_explanations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = ["--baselines", str(tmp_path)]
    assert main(["explain", str(AB_FIXTURE), *opts]) == EXIT_OK
    out = capsys.readouterr().out
    assert "tiled-fp16-nt-K512  SLOWER" in out and "grouped-fp16-nt-K512  SLOWER" in out
    assert "`tiled_matmul_kernel`: programs/SM 2 -> 1" in out
    # the one profiled call's time is detail, said as such: never beside the facts as a verdict
    assert "(1,023 us -> 1,090 us)" not in out
    assert "in the one call the profiler saw (L2 not flushed; the verdict is the timed " in out
    assert "the copy of `aten.clone.default`" in out
    # one case, whatever its verdict; --out writes the sidecar
    case = "grouped-fp16-nt-K128"
    assert main(["explain", str(AB_FIXTURE), case, *opts, "--out", str(tmp_path / "x")]) == 0
    out = capsys.readouterr().out
    # the run's headline first (no record beside the fixture: judged again, and it says so)
    head, note, first = out.splitlines()[:3]
    assert head == "tilegate: FAIL: 4 cases slower than their base", out
    assert note.startswith("(no record of the run beside") and "judged again" in note
    assert first == "grouped-fp16-nt-K128  SLOWER" and "tiled" not in out
    assert (tmp_path / "x" / "explanations.json").is_file()


def test_tilegate_explain_refuses_a_bad_file_or_an_unknown_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(AB_FIXTURE), "no-such-case"]) == EXIT_CANNOT_JUDGE
    assert "hold no case no-such-case" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["explain", str(bad)]) == EXIT_CANNOT_JUDGE
    assert str(bad) in capsys.readouterr().err
    # a results file of no A/B run (the recorded H200 quick run): nothing to explain against
    assert main(["explain", str(FIXTURES / "recorded-h200-quick.json")]) == EXIT_OK
    assert "not an A/B run" in capsys.readouterr().out


class _Kernel:
    """A CompiledKernel as some Triton exposes it: fields may be missing."""

    def __init__(self, asm: Any, **attrs: Any) -> None:
        self.asm = asm
        self.metadata = SimpleNamespace(
            num_warps=8, num_stages=4, shared=131072, target=SimpleNamespace(arch=90)
        )
        self.__dict__.update(attrs)


def test_gpu_recording_takes_what_the_compiled_kernel_exposes_and_omits_the_rest() -> None:
    fn = SimpleNamespace(fn=SimpleNamespace(__name__="k"), cache_key="abc")
    ptx = "\twgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {}\n\tcp.async.cg.shared.global [a];\n"
    fn.arg_names = ["x_ptr", "n", "BLOCK", "STAGES"]
    src = SimpleNamespace(constants={(3,): 4, (2,): 999})  # STAGES passed by position
    kernel = _Kernel({"ptx": ptx}, n_regs=168, n_spills=0, hash="h1", src=src)
    full = record.gpu_launch(fn, kernel, (132, 1, 1), {"BLOCK": 64})
    assert full["name"] == "k" and full["grid"] == [132, 1, 1]
    assert full["constexprs"] == {"BLOCK": 64, "STAGES": 4}  # the keyword's value wins
    assert (full["registers"], full["spills"], full["shared"]) == (168, 0, 131072)
    assert full["mix"] == {"wgmma": 1, "cp.async": 1} and full["programs_per_sm"] == 1
    # no asm, no n_regs: those facts are left out, never a crash
    bare = record.gpu_launch(fn, _Kernel({}, hash="h2"), (4,), {})
    assert "registers" not in bare and "mix" not in bare and bare["num_stages"] == 4
    broken = record.gpu_launch(fn, SimpleNamespace(hash="h3"), (4,), {})
    assert broken["name"] == "k" and "error" in broken


@pytest.mark.aot
def test_a_tilegate_init_repository_gets_its_kernels_explained(tmp_path: Path) -> None:
    """Any repository: the starter of `tilegate init`, num_warps 4 -> 8 in its wrapper, an A/B
    run on the interpreter (the kernel found through the identity's launches and compiled for
    sm_90), then `tilegate explain` on the results it wrote."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("TRITON_INTERPRET", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
        )

    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    assert run("git", "init", "-q").returncode == 0
    assert run(sys.executable, "-m", "tilegate", "init", "--package", "toyperf").returncode == 0
    run("git", "add", "-A")
    assert run(*git, "commit", "-qm", "starter").returncode == 0
    bench = tmp_path / "toyperf" / "kernels.py"
    text = bench.read_text()
    assert "x.numel(), BLOCK=1024)" in text
    bench.write_text(text.replace("x.numel(), BLOCK=1024)", "x.numel(), BLOCK=1024, num_warps=8)"))
    perf = run(
        sys.executable, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD",
        "--report-only", "--no-plots", "--perf-axis=n=256",
    )  # fmt: skip
    assert perf.returncode == 0, perf.stdout[-2000:] + perf.stderr[-2000:]
    results = tmp_path / ".perf" / "results.json"
    rows = json.loads(results.read_text())["benchmarks"]
    recorded = {
        (r["extra_info"]["tilegate"].get("side", "head"), r["extra_info"]["tilegate"]["key"]): r[
            "extra_info"
        ]["tilegate"].get("explain")
        for r in rows
    }
    head = recorded[("head", "triton_scale-fp32-n256")]["triton"][0]
    assert head["name"] == "_scale_kernel" and head["aot"] == "sm_90" and head["num_warps"] == 8
    # the records leave the file pytest-benchmark's own
    compare = "import sys; from pytest_benchmark.cli import main; sys.argv[0] = 'x'; main()"
    cmp = run(sys.executable, "-c", compare, "compare", str(results))
    assert cmp.returncode == 0 and "triton_scale-fp32-n256" in cmp.stdout, cmp.stderr[-2000:]
    got = run(sys.executable, "-m", "tilegate", "explain", str(results), "triton_scale-fp32-n256")
    assert got.returncode == 0, got.stderr
    assert "`_scale_kernel`: programs/SM 16 -> 8, num_warps 4 -> 8" in got.stdout


def test_a_profiler_name_is_shown_without_its_arguments_or_trailing_space() -> None:
    from tilegate.explain.diff import _short_name

    assert _short_name("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD"
    assert _short_name("void at::native::copy_kernel<float>(int) ") == "at::native::copy_kernel"


def test_explain_says_one_verdict_a_case_named_or_not(tmp_path: Path) -> None:
    """The run's record holds the A/B's verdict of a case (AMBIGUOUS) and the decided one its
    stored row gave (REGRESSED): `explain RESULTS` and `explain RESULTS CASE` say the same."""
    import hashlib

    from tilegate.commands.explain import explain_command
    from tilegate.judge.gate import VERDICTS, VERDICTS_SCHEMA

    results = tmp_path / "results.json"
    shutil.copy(AB_FIXTURE, results)
    case = "grouped-fp16-nt-K128"
    (tmp_path / VERDICTS).write_text(
        json.dumps(
            {
                "schema": VERDICTS_SCHEMA,
                "results": results.name,
                "results_sha256": hashlib.sha256(results.read_bytes()).hexdigest(),
                "headline": "tilegate: FAIL: 1 regression",
                "verdicts": {case: "AMBIGUOUS"},
                "explained": [[case, "REGRESSED"]],
            }
        )
    )
    said = {}
    for named in ((), (case,)):
        code, text = explain_command(results, named)
        assert code == EXIT_OK, text
        said[named] = next(ln for ln in text.splitlines() if ln.startswith(case))
    assert said[()] == said[(case,)] == f"{case}  REGRESSED", said
