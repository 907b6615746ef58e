"""Issue 39: autotuned kernels and host-bound calls, on the CPU.

* an autotuned toy kernel (`@triton.autotune`, the interpreter) runs one config and records its
  pick beside its identity; a forced other pick (`pinned`) is the same identity, a changed config
  list another;
* two sides that picked differently with the same source read "tuner flip" (never "code
  changed", never blamed), with the picks in the why line; with another source, "code change";
  one side's processes picking apart is UNSTABLE naming the picks; a rebaseline stores the picks;
* host time per call: measured beside the GPU samples, a host-bound case judged on it (a wrapper's
  added Python fails), the same host change behind a long GPU kernel reported, not failed;
* the results with picks and host times stay pytest-benchmark JSON.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests._factories import REFERENCE, VARIANTS, bench, key, make_run, write
from tilegate.explain.diff import decided, explain_cases
from tilegate.harness.autotune import INTERPRET_ENV, pinned, side_cache_env
from tilegate.harness.identity import capture, identity
from tilegate.judge import autotune
from tilegate.judge.abcompare import compare_ab
from tilegate.judge.abnoise import build_noise, host_key
from tilegate.judge.outcome import outcome
from tilegate.judge.vocabulary import ABVerdict
from tilegate.store.files import load_results

ROOT = Path(__file__).resolve().parents[1]

TOY = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl

    CONFIGS = [
        triton.Config({"BLOCK": 32}, num_warps=4),
        triton.Config({"BLOCK": 64}, num_warps=2),
    ]


    @triton.autotune(configs=CONFIGS, key=["n"])
    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


    def scale(x):
        y = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        scale_kernel[grid](x, y, x.numel(), 2.0)
        return y
    """
)


def _toy(tmp_path: Path, name: str, source: str = TOY) -> Any:
    """The toy module written to tmp_path/<name>.py and imported (a module per side)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ident(module: Any) -> Any:
    x = torch.arange(100, dtype=torch.float32)
    with capture(module.scale) as seen:
        y = module.scale(x)
    assert torch.equal(y, 2 * x)
    return identity(seen)


# --- the harness: picks recorded, one config under the interpreter, pinned -----------------------


def test_an_autotuned_kernel_runs_one_config_under_the_interpreter_and_records_its_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Triton 3.6's autotuner under the interpreter: "0 active drivers" (it cannot time); here
    # it runs its first config and the pick says so
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    toy = _toy(tmp_path, "toy_first")
    ident = _ident(toy)
    (pick,) = ident.autotune
    assert pick["kernel"] == "scale_kernel" and pick["configs"] == 2
    assert pick["config"]["kwargs"] == {"BLOCK": 32} and pick["config"]["num_warps"] == 4
    assert pick["key"]["n"] == 100 and pick["how"].startswith("interpreter: its first config")
    assert ident.as_json()["autotune"] == [pick]
    # the timed calls after the check reuse it: no tuning, no driver needed
    assert torch.equal(toy.scale(torch.ones(100)), torch.full((100,), 2.0))


def test_the_interpreters_config_can_be_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv(INTERPRET_ENV, "scale_kernel=1")
    (pick,) = _ident(_toy(tmp_path, "toy_named")).autotune
    assert pick["config"]["kwargs"] == {"BLOCK": 64} and pick["config"]["num_warps"] == 2
    assert INTERPRET_ENV in pick["how"]


def test_another_pick_is_the_same_identity_and_another_config_list_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    first = _ident(_toy(tmp_path, "toy_a"))
    other = {"kwargs": {"BLOCK": 64}, "num_warps": 2, "num_stages": 3, "num_ctas": 1}
    other["maxnreg"] = None
    side_b = _toy(tmp_path, "toy_b")  # the other side's copy: the same source
    with pinned([{"kernel": "scale_kernel", "key": None, "config": other}]):
        forced = _ident(side_b)
    assert forced.autotune[0]["config"]["kwargs"] == {"BLOCK": 64}
    assert forced.autotune[0]["how"] == "pinned"
    assert forced.hash == first.hash, "a pick is recorded beside the identity, not in it"
    # outside the block the tuner is as it was
    assert _ident(side_b).autotune[0]["config"]["kwargs"] == {"BLOCK": 32}
    # a config removed from the list: the config space changed, so the identity did
    fewer = TOY.replace('    triton.Config({"BLOCK": 64}, num_warps=2),\n', "")
    fewer = fewer.replace('triton.Config({"BLOCK": 32}, num_warps=4),', (
        'triton.Config({"BLOCK": 32}, num_warps=4), triton.Config({"BLOCK": 16}, num_warps=1),'
    ))  # fmt: skip
    assert _ident(_toy(tmp_path, "toy_c", fewer)).hash != first.hash
    # a comment in the kernel moves nothing
    commented = TOY.replace("pid = tl.program_id(0)", "pid = tl.program_id(0)  # one per block")
    assert _ident(_toy(tmp_path, "toy_d", commented)).hash == first.hash


def test_tensors_passed_by_keyword_identify_by_layout_never_by_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fla launches its tuned kernels with every tensor by keyword; a backward's gradients differ
    # from call to call in their last bits (atomics): an A/A of fla's chunk_gla backward on the
    # H200 read "compiled code changed" while the identity printed the tensors' values
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    keyword = TOY.replace(
        "scale_kernel[grid](x, y, x.numel(), 2.0)",
        "scale_kernel[grid](x_ptr=x, y_ptr=y, n=x.numel(), factor=2.0)",
    )
    toy = _toy(tmp_path, "toy_kw", keyword)

    def ident(x: torch.Tensor) -> Any:
        with capture(toy.scale) as seen:
            y = toy.scale(x)
        assert not x.is_contiguous() or torch.equal(y, 2 * x)  # the toy reads x contiguous
        return identity(seen)

    base = ident(torch.arange(100, dtype=torch.float32))
    assert ident(torch.arange(100, dtype=torch.float32).flip(0)).hash == base.hash, "values"
    assert ident(torch.zeros(100, dtype=torch.float64)).hash != base.hash, "another dtype"
    assert ident(torch.arange(100, dtype=torch.float32)[::2]).hash != base.hash, "another layout"


def test_every_side_has_its_own_caches(tmp_path: Path) -> None:
    a, b = side_cache_env(tmp_path / "base"), side_cache_env(tmp_path / "head")
    assert set(a) >= {"TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR"}
    assert all(a[k] != b[k] and a[k].startswith(str(tmp_path / "base")) for k in a)


# --- the judge: tuner flip, code change, unstable, rebaseline -------------------------------------

CASE = key("tma_xtile_persistent", K=512)
PICK_A = {"kwargs": {"BK": 64}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}
PICK_B = {"kwargs": {"BK": 32}, "num_warps": 2, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


def _pick(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"kernel": "k", "key": {"K": 512}, "config": config, "configs": 4, "space": "s1"}]


def _ab_file(
    tmp_path: Path, name: str, *, head: dict[str, Any], base: dict[str, Any], **kwargs: Any
) -> Path:
    """An A/B run whose CASE's head and base rows carry these picks (`code`: the hashes)."""
    data = make_run(rounds=300, seed=kwargs.pop("seed", 3), **kwargs)
    bench(data, CASE)["extra_info"]["tilegate"]["autotune"] = _pick(head)
    bench(data, f"{CASE}@base")["extra_info"]["tilegate"]["autotune"] = _pick(base)
    return write(tmp_path / name, data)


def test_two_sides_with_another_pick_and_the_same_source_are_a_tuner_flip(tmp_path: Path) -> None:
    # on the H200 three A/A runs of an autotuned softmax read "compiled code changed", FASTER by
    # 16-39 % (16 vs 8 warps); one failed. The same code and configs, another pick: a tuner flip
    path = _ab_file(
        tmp_path, "flip.json", head=PICK_B, base=PICK_A, code={}, ab={CASE: 0.75}
    )  # the head's pick 25 % faster
    cmp = compare_ab(load_results(path), None)
    case = {c.key: c for c in cmp.cases}[CASE]
    assert case.verdict is ABVerdict.UNCHANGED and case.code_changed is False, case
    assert case.explained_by == autotune.TUNER_FLIP
    assert "autotuner: BK=64, num_warps=4 -> BK=32, num_warps=2" in case.note
    assert "tuner flip" in case.note and not case.fails
    assert outcome(None, cmp).code == 0
    assert autotune.retime_config(True, _pick(PICK_A), _pick(PICK_B)) == _pick(PICK_A)
    from tilegate.report.render import _ab_summary

    summary = "\n".join(_ab_summary(cmp))
    assert (
        f"**Tuner flips (the same source and configs, another autotuner pick; not blamed)** (1): `{CASE}` -25"
        in summary
    )
    # the why line: the picks, not "compiled code changed"
    (why,) = explain_cases(path, [c for c in decided(ab=cmp) if c[0] == CASE])
    assert why.lines == [
        "autotuner: BK=64, num_warps=4 -> BK=32, num_warps=2 (tuner flip: the same source "
        "and configs)"
    ]


def _pinned_flip(tmp_path: Path, name: str, on_one: float, seed: int = 3) -> Path:
    """A tuner flip (the head's pick 25 % faster) whose re-time with both sides on the base's
    config measured head / base = `on_one` (extra_info.tilegate.pinned, as the measurer
    writes it)."""
    path = _ab_file(tmp_path, name, head=PICK_B, base=PICK_A, code={}, ab={CASE: 0.75}, seed=seed)
    data = json.loads(path.read_text())
    rng = np.random.default_rng(seed)
    base = [float(x) for x in 1e-3 * np.exp(rng.normal(0, 0.003, 300))]
    head = [float(b * on_one * np.exp(rng.normal(0, 0.002))) for b in base]
    for row, samples in ((CASE, head), (f"{CASE}@base", base)):
        tg = bench(data, row)["extra_info"]["tilegate"]
        tg["pinned"] = {"autotune": _pick(PICK_A), "samples_s": samples}
    ratio = float(np.median(np.asarray(head) / np.asarray(base)))
    bench(data, CASE)["extra_info"]["tilegate"]["pinned"]["ratio_to_base"] = ratio
    return write(tmp_path / name, data)


def test_a_tuner_flip_re_timed_on_one_config_is_judged_on_that_time(tmp_path: Path) -> None:
    # issue 39: "the case is re-timed with both sides on one config, and the report says which
    # of 'tuner flip' or 'code change' explains the difference"
    path = _pinned_flip(tmp_path, "pinned.json", on_one=1.0)
    cmp = compare_ab(load_results(path), None)
    case = {c.key: c for c in cmp.cases}[CASE]
    assert case.verdict is ABVerdict.UNCHANGED and not case.fails, case
    assert case.explained_by == autotune.TUNER_FLIP and case.code_changed is False
    assert case.pinned == "BK=64, num_warps=4, num_stages=3"
    assert case.ratio == pytest.approx(1.0, abs=0.005), "the verdict's ratio is the re-time's"
    assert case.picked_ratio == pytest.approx(0.75, abs=0.01)
    assert case.note.startswith(
        "tuner flip (autotuner: BK=64, num_warps=4 -> BK=32, num_warps=2): with both sides on "
        "BK=64, num_warps=4, num_stages=3 the difference is "
    )
    assert "(SAME); the -25." in case.note and "% as picked is the pick's" in case.note
    assert outcome(None, cmp).code == 0
    from tilegate.report.render import _ab_summary

    summary = "\n".join(_ab_summary(cmp))
    assert f"`{CASE}` -25" in summary and "on one config" in summary, summary
    (why,) = explain_cases(path, [c for c in decided(ab=cmp) if c[0] == CASE])
    assert why.lines[0].startswith("autotuner: BK=64, num_warps=4 -> BK=32, num_warps=2 (tuner "
                                   "flip: the same source and configs; with both sides on BK=64")  # fmt: skip


def test_a_difference_that_remains_on_one_config_is_a_code_change_judged_on_it(
    tmp_path: Path,
) -> None:
    path = _pinned_flip(tmp_path, "remains.json", on_one=1.10)
    cmp = compare_ab(load_results(path), None)
    case = {c.key: c for c in cmp.cases}[CASE]
    assert case.verdict is ABVerdict.SLOWER and case.fails, case
    assert case.explained_by == autotune.CODE_CHANGE
    assert case.ratio == pytest.approx(1.10, abs=0.01) and case.picked_ratio is not None
    assert case.note.startswith(
        "code change: with both sides on BK=64, num_warps=4, num_stages=3 a difference remains"
    )
    assert outcome(None, cmp).code == 1
    (why,) = explain_cases(path, [c for c in decided(ab=cmp) if c[0] == CASE])
    assert "a code change, not the pick" in why.lines[0], why.lines


def test_another_pick_with_changed_code_is_a_code_change_and_judged(tmp_path: Path) -> None:
    path = _ab_file(
        tmp_path, "code.json", head=PICK_B, base=PICK_A, code={},
        base_code={"tma_xtile_persistent": "sha256:old"}, ab={CASE: 1.10},
    )  # fmt: skip
    case = {c.key: c for c in compare_ab(load_results(path), None).cases}[CASE]
    assert case.code_changed and case.explained_by == autotune.CODE_CHANGE
    assert case.verdict is ABVerdict.SLOWER, case
    assert case.note.startswith("code change, another pick (autotuner: BK=64, num_warps=4 ->")
    assert autotune.retime_config(False, _pick(PICK_A), _pick(PICK_B)) is None


def test_a_kernel_whose_key_changed_shape_is_one_kernel_in_the_why_line() -> None:
    """fla-core 0.5.2 -> 0.6.0 on the H200 (round 17): chunk_bwd_kernel_dh's autotune key gained
    K and V, and the why line read "tuned in the base only; ... tuned in the head only" for the
    same kernel. It is one kernel whose key changed: its pick change named, nothing when it
    picked the same; a kernel tuned on one side only is still said so."""
    old_key, new_key = (
        {"BT": 64, "dtypes": ["bf16"]},
        {"BT": 64, "dtypes": ["bf16"], "K": 128, "V": 128},
    )

    def pick(kernel: str, key: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
        return {"kernel": kernel, "key": key, "config": cfg, "configs": 48, "space": "s"}

    base = [pick("dh", old_key, PICK_B), pick("h", old_key, PICK_A), pick("gone", old_key, PICK_A)]
    head = [pick("dh", new_key, PICK_A), pick("h", new_key, PICK_A)]
    got = autotune.changes(base, head)
    assert got == [
        "dh: BK=32, num_warps=2 -> BK=64, num_warps=4 (its key: + K, V)",
        "gone: tuned in the base only",
    ]
    assert autotune.classify(False, base, head) == autotune.CODE_CHANGE
    assert autotune.changes(base[1:2], head[1:2]) == []
    # the config-removal edit (round 17): the head tunes over one config fewer
    smaller = {**pick("h", old_key, PICK_B), "configs": 47, "space": "s-1"}
    assert autotune.changes(base[1:2], [smaller]) == [
        "h: BK=64, num_warps=4 -> BK=32, num_warps=2 (its configs: 48 -> 47)"
    ]


def test_one_sides_processes_picking_apart_is_unstable_never_slower(tmp_path: Path) -> None:
    first = _ab_file(
        tmp_path, "r1.json", head=PICK_A, base=PICK_A, code={},
        base_code={"tma_xtile_persistent": "sha256:old"}, ab={CASE: 1.10},
    )  # fmt: skip
    again = _ab_file(
        tmp_path, "r2.json", head=PICK_B, base=PICK_A, code={}, seed=5,
        base_code={"tma_xtile_persistent": "sha256:old"}, ab={CASE: 1.10},
    )  # fmt: skip
    cmp = compare_ab(load_results(first), None, [load_results(again)])
    case = {c.key: c for c in cmp.cases}[CASE]
    assert case.verdict is ABVerdict.UNSTABLE and not case.fails, case
    assert "BK=64, num_warps=4, num_stages=3 (1 run), BK=32, num_warps=2" in case.note


def test_a_rebaseline_whose_runs_picked_apart_stores_the_picks_and_says_so(
    tmp_path: Path,
) -> None:
    from tilegate.judge.policy import Tolerances
    from tilegate.judge.rebaselining import rebaseline

    runs = []
    for seed, pick in ((101, PICK_A), (102, PICK_A), (103, PICK_B)):
        data = make_run(seed=seed, code={})
        bench(data, CASE)["extra_info"]["tilegate"]["autotune"] = _pick(pick)
        runs.append(load_results(write(tmp_path / f"r{seed}.json", data)))
    plan = rebaseline(runs, out=tmp_path / "b.json", old=None, tolerances=Tolerances())
    row = plan.baseline.rows[CASE]
    assert row.autotune == (
        "k: BK=64, num_warps=4, num_stages=3 (2 runs)",
        "k: BK=32, num_warps=2, num_stages=3 (1 run)",
    )
    assert any("picked differently in different runs" in w and CASE in w for w in plan.warnings)


# --- host time: measured, judged where it bounds the call -----------------------------------------

HOST_CASE = key("tiled", K=128)  # a 0.05 ms row of the factory: the host bounds it below
GPU_CASE = key("tiled", K=4096)  # a long GPU kernel: the host hides behind it


def _with_host(
    data: dict[str, Any], case: str, base_host_s: float, head_factor: float, seed: int
) -> None:
    """Host samples for both sides of `case`: the base's around `base_host_s`, the head's
    `head_factor` x (a wrapper's added Python work)."""
    rng = np.random.default_rng(seed)
    for side, factor in (("", head_factor), ("@base", 1.0)):
        tg = bench(data, f"{case}{side}")["extra_info"]["tilegate"]
        n = len(tg["samples_s"])
        host = [float(x) for x in base_host_s * factor * np.exp(rng.normal(0, 0.02, n))]
        tg["host_samples_s"], tg["host_s"] = host, statistics.median(host)
        tg["host_bound"] = tg["host_s"] >= tg["median_s"]


def _host_run(tmp_path: Path, name: str, factor: float, seed: int) -> Path:
    """An A/B run whose `tiled` wrapper changed (its host code: another identity) and whose
    head's host time is `factor` x the base's at HOST_CASE and GPU_CASE."""
    changed = {"tiled": "sha256:old-wrapper"} if factor != 1.0 else None
    data = make_run(rounds=300, seed=seed, code={}, ab={}, base_code=changed)
    gpu_ms = bench(data, HOST_CASE)["extra_info"]["tilegate"]["median_s"] * 1e3
    _with_host(data, HOST_CASE, 2 * gpu_ms * 1e-3, factor, seed)
    _with_host(data, GPU_CASE, 2 * gpu_ms * 1e-3, factor, seed + 1)
    return write(tmp_path / name, data)


def test_a_wrapper_regression_fails_a_host_bound_case_and_is_reported_behind_a_long_kernel(
    tmp_path: Path,
) -> None:
    path = _host_run(tmp_path, "host.json", factor=1.3, seed=7)
    run = load_results(path)
    cmp = compare_ab(run, None)
    cases = {c.key: c for c in cmp.cases}
    host = cases[HOST_CASE]
    assert run.rows[HOST_CASE].host_bound and host.judged_on == "host"
    assert host.verdict is ABVerdict.SLOWER and host.fails, host
    assert host.host_ratio == pytest.approx(1.3, rel=0.03) and abs(host.gpu_ratio - 1) < 0.02
    assert host.note.startswith("host-bound (host ") and "judged on the host time" in host.note
    behind = cases[GPU_CASE]
    assert not run.rows[GPU_CASE].host_bound and behind.judged_on == "gpu"
    assert behind.verdict is ABVerdict.SAME and not behind.fails
    assert "reported, not judged, the GPU bounds the call" in behind.note
    assert outcome(None, cmp).code == 1
    # the report shows both times and marks the judged one
    from tilegate.report.render import _ab_table

    text = "\n".join(_ab_table(cmp))
    assert "host base -> head (ms)" in text and "(judged)" in text


def test_a_host_bound_case_whose_kernels_got_slower_fails_on_its_gpu_time(tmp_path: Path) -> None:
    """Judged on the host time alone, a host-bound case hides its kernels: fla's gla backward
    (host 1.3 ms for 1.18 ms on the GPU, H200 round 17) would pass a +27 % kernel. Its GPU time
    is judged too; the same case with kernels as fast as the base's passes on its host time."""
    changed = {"tiled": "sha256:old-kernel"}
    for gpu_factor, verdict in ((1.12, ABVerdict.SLOWER), (1.0, ABVerdict.SAME)):
        data = make_run(rounds=300, seed=8, code={}, ab={HOST_CASE: gpu_factor}, base_code=changed)
        gpu_s = bench(data, HOST_CASE)["extra_info"]["tilegate"]["median_s"]
        _with_host(data, HOST_CASE, 2 * gpu_s, 1.0, 8)
        case = next(
            c
            for c in compare_ab(load_results(write(tmp_path / "k.json", data)), None).cases
            if c.key == HOST_CASE
        )
        assert case.verdict is verdict, (gpu_factor, case)
        assert case.note.startswith("host-bound (host "), case.note
        said = "judged on both" if verdict is ABVerdict.SLOWER else "judged on the host time"
        assert said in case.note, case.note
        if verdict is ABVerdict.SLOWER:
            assert case.judged_on == "gpu" and case.ratio == pytest.approx(1.12, rel=0.02)
            assert case.host_ratio == pytest.approx(1.0, abs=0.02) and case.fails


def test_every_case_shows_its_host_time_and_the_report_says_what_bounds_it(
    tmp_path: Path,
) -> None:
    """The matmul on the H200 (round 17): no case held, each row's host time taken with nothing
    queued ahead (`host_s`, no host samples), and the table's host column was empty for all of
    them. Every case shows both times, and the summary says which time bounds the calls."""
    from tilegate.report.render import _ab_summary, _ab_table

    data = make_run(rounds=60, seed=5, code={}, ab={})
    for b in data["benchmarks"]:
        tg = b["extra_info"]["tilegate"]
        tg["host_s"], tg["host_bound"], tg["held"] = tg["median_s"] / 3, False, False
    run = load_results(write(tmp_path / "probe.json", data))
    assert run.rows[GPU_CASE].host_s == pytest.approx(run.rows[GPU_CASE].median_s / 3)
    cmp = compare_ab(run, None)
    table = "\n".join(_ab_table(cmp))
    row = next(line for line in table.splitlines() if f"`{GPU_CASE}`" in line)
    host = run.rows[GPU_CASE].host_s * 1e3
    assert f"{host:.4f}"[:5] in row and " (judged) |" not in table
    summary = "\n".join(_ab_summary(cmp))
    assert "**What bounds the calls**: the GPU for every case" in summary
    # a host-bound case is named, with the time it was judged on
    mixed = load_results(_host_run(tmp_path, "mixed.json", factor=1.0, seed=4))
    summary = "\n".join(_ab_summary(compare_ab(mixed, None)))
    assert f"the host for `{HOST_CASE}` (judged on the host time and the GPU time)" in summary, (
        summary
    )
    # no host time measured (the smoke profile's host clock): nothing said
    bare = load_results(write(tmp_path / "bare.json", make_run(rounds=40, seed=6, ab={})))
    assert "What bounds" not in "\n".join(_ab_summary(compare_ab(bare, None)))


def test_a_probe_host_time_that_is_not_a_time_is_refused_naming_the_row(tmp_path: Path) -> None:
    from tilegate.errors import InputError

    data = make_run(rounds=40, seed=5, code={}, ab={})
    bench(data, GPU_CASE)["extra_info"]["tilegate"]["host_s"] = -1.0
    with pytest.raises(InputError, match=rf"{GPU_CASE}.*host_s is -1.0.*re-run the suite"):
        load_results(write(tmp_path / "bad.json", data))


def test_the_host_time_gets_its_own_aa_tolerance(tmp_path: Path) -> None:
    runs = [load_results(_host_run(tmp_path, f"aa{s}.json", 1.0, s)) for s in (1, 2, 3)]
    noise = build_noise(runs, tmp_path / "n.ab.json")
    tol, source = noise.tolerance(host_key(HOST_CASE))
    assert host_key(HOST_CASE) in noise.rows and source.startswith("A/A noise")
    assert 0.02 <= tol <= 0.25
    # an A/A with host times judged on them passes
    cmp = compare_ab(load_results(_host_run(tmp_path, "aa9.json", 1.0, 9)), noise)
    assert outcome(None, cmp).code == 0, [(c.key, c.verdict, c.note) for c in cmp.cases]


def test_the_measurer_records_host_time_beside_the_gpu_time() -> None:
    """A simulated GPU (its kernels 5 us), real host time: the wrapper whose Python does more
    work records it, and is host-bound."""
    from tilegate.cases import build_cases
    from tilegate.declare import Axis, Benchmark, Profile, Variant
    from tilegate.harness.measure import GroupMeasurer
    from tilegate.harness.timing import TimerConfig, round_order

    def make(work: int):  # type: ignore[no-untyped-def]
        def factory(params, inputs):  # type: ignore[no-untyped-def]
            def call():  # type: ignore[no-untyped-def]
                sum(range(work))  # the wrapper's Python
                return inputs * 2

            return call

        return factory

    bench_ = Benchmark(
        name="toy",
        variants=(Variant("ref", make(0), reference=True), Variant("slow", make(20000))),
        profiles=(Profile("p", (Axis("n", (4,)),)),),
        inputs=lambda params, device, seed: torch.ones(params["n"]),
        reference_output=lambda params, inputs: 2 * torch.ones(params["n"], dtype=torch.float64),
        tolerance=lambda params: 1e-6,
    )

    class SimTimer:
        config = TimerConfig(rounds=20)

        def __init__(self) -> None:
            self.held: set[int] = set()  # what the warm-up found host-bound
            self.host_samples: dict[str, list[float]] = {}
            self.host_probe_s: dict[str, float] = {}

        def is_held(self, fn):  # type: ignore[no-untyped-def]
            return id(fn) in self.held

        def warm(self, fns, seconds, pairs=None):  # type: ignore[no-untyped-def]
            self.held |= {id(fns["slow"])} if "slow" in fns else set()
            self.host_probe_s = {n: _clock(fn) for n, fn in fns.items()}  # nothing queued
            return 1e-3

        def time(self, fns, rounds=None, pairs=None, **_):  # type: ignore[no-untyped-def]
            host: dict[str, list[float]] = {n: [] for n in fns}
            for r in range(rounds):
                for name in round_order(list(fns), r, pairs):
                    t0 = time.perf_counter()
                    fns[name]()
                    host[name].append(time.perf_counter() - t0)
            # as CudaTimer: per-round host samples of the held calls only
            self.host_samples = {n: xs for n, xs in host.items() if self.is_held(fns[n])}
            return {n: [5e-6] * rounds for n in fns}

    def _clock(fn):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    cases = build_cases(bench_.profile("p"), ["ref", "slow"])
    m = GroupMeasurer(
        benchmark=bench_, registry=bench_.variant_map, timer=SimTimer(), device="cpu",
        capability=None, groups={cases[0].group: cases}, warmup_first_s=0.0,
    )  # fmt: skip
    ref, slow = (m.result(c).extra for c in cases)
    assert len(slow["host_samples_s"]) == len(slow["samples_s"]) == 20
    assert slow["host_s"] > ref["host_s"] and slow["host_bound"] is True and slow["held"]
    assert ref["held"] is False and "host_samples_s" not in ref, "its rounds read the queue"


@pytest.mark.parametrize("processes", [1, 2])
def test_a_tuner_flip_is_re_timed_with_both_sides_on_the_bases_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    """Two sides with the same source, the base's tuner on its other config (as another
    process's tuner picks when two configs are close), a simulated GPU on which BLOCK=64 runs
    in 0.75 ms and BLOCK=32 in 1 ms: the coordinator times the pair as picked (+33 %), then
    again with both sides on the base's pick, in paired rounds, one side holding both slots
    (one process) or a side each (two processes); the row records both."""
    from tilegate.cases import build_cases
    from tilegate.declare import Axis, Benchmark, Profile, Variant
    from tilegate.harness.measure import GroupMeasurer
    from tilegate.harness.sides import SideMeasurer
    from tilegate.harness.timing import TimerConfig, round_order

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    head_mod, base_mod = (
        _toy(tmp_path, f"flip_head{processes}"),
        _toy(tmp_path, f"flip_base{processes}"),
    )
    tuner = base_mod.scale_kernel  # its pick forced: config 1, kept for the process's life
    tuner._tilegate_space = list(tuner.configs)
    tuner.configs, tuner._tilegate_how = [tuner._tilegate_space[1]], "forced: config 1"

    def scaled(module: Any) -> Any:
        def make(params: Any, inputs: Any) -> Any:
            def call() -> Any:
                return module.scale(inputs)

            call.tuner = module.scale_kernel  # type: ignore[attr-defined]
            return call

        return make

    def ref(params: Any, inputs: Any) -> Any:
        return lambda: inputs * 2

    head_v, base_v = Variant("tuned", scaled(head_mod)), Variant("tuned", scaled(base_mod))
    reference = Variant("ref", ref, reference=True)
    bench_ = Benchmark(
        name="toy",
        variants=(reference, head_v),
        profiles=(Profile("p", (Axis("n", (100,)),)),),
        inputs=lambda params, device, seed: torch.arange(params["n"], dtype=torch.float32),
        reference_output=lambda params, x: 2 * x.double(),
        tolerance=lambda params: 1e-6,
    )
    rng = np.random.default_rng(0)

    class SimTimer:  # the GPU time of a call: its tuner's config's
        name = "sim"
        config = TimerConfig(rounds=40)

        def __init__(self) -> None:
            self.host_samples: dict[str, list[float]] = {}

        def is_held(self, fn: Any) -> bool:
            return False

        def sample(self, fn: Any) -> float:
            fn()
            tuner = getattr(fn, "tuner", None)
            if tuner is None:
                return 2e-3
            ms = 0.75 if tuner.best_config.kwargs["BLOCK"] == 64 else 1.0
            return float(ms * 1e-3 * np.exp(rng.normal(0, 0.002)))

        def warm(self, fns: Any, seconds: float, pairs: Any = None) -> float:
            return sum(self.sample(fn) for fn in fns.values())

        def once(self, fn: Any) -> float:
            return self.sample(fn)

        def time(self, fns: Any, rounds: int, pairs: Any = None, **_: Any) -> Any:
            out: dict[str, list[float]] = {n: [] for n in fns}
            for r in range(rounds):
                for name in round_order(list(fns), r, pairs):
                    out[name].append(self.sample(fns[name]))
            return out

    cases = build_cases(bench_.profile("p"), ["ref", "tuned"], base_variants=["tuned"])

    def side(registry: dict[str, Any]) -> SideMeasurer:
        return SideMeasurer(
            benchmark=bench_, registry=registry, timer=SimTimer(), device="cpu", capability=None
        )

    if processes == 1:  # one process holds both versions (tilegate.harness.sides.one_process)
        sides = {"head": side({"ref": reference, "tuned": head_v, "tuned@base": base_v})}
    else:
        sides = {
            "head": side({"ref": reference, "tuned": head_v}),
            "base": side({"ref@base": reference, "tuned@base": base_v}),
        }
    said: list[str] = []
    m = GroupMeasurer(
        benchmark=bench_, registry=bench_.variant_map, timer=SimTimer(), device="cpu",
        capability=None, groups={cases[0].group: cases}, warmup_first_s=0.0, sides=sides,
        on_progress=said.append,
    )  # fmt: skip
    got = {c.test_id: m.result(c).extra for c in cases}
    head, base = got["tuned-100"], got["tuned-100@base"]
    assert head["code_hash"] == base["code_hash"], "the same source and configs"
    assert head["autotune"][0]["config"]["kwargs"] == {"BLOCK": 32}
    assert base["autotune"][0]["config"]["kwargs"] == {"BLOCK": 64}
    assert head["ratio_to_base"] == pytest.approx(4 / 3, rel=0.01), "as picked: the flip's"
    for row in (head, base):
        pinned = row["pinned"]
        assert [p["config"]["kwargs"] for p in pinned["autotune"]] == [{"BLOCK": 64}]
        assert len(pinned["samples_s"]) >= 40
        assert pinned["median_s"] == pytest.approx(0.75e-3, rel=0.01)
    assert head["pinned"]["ratio_to_base"] == pytest.approx(1.0, abs=0.01)
    assert "pinned" not in got["ref-100"]
    assert any("re-timing 1 tuner flip(s)" in line for line in said), said
    # outside the re-time each tuner is as it was
    assert base_mod.scale_kernel.configs == [base_mod.scale_kernel._tilegate_space[1]]


def test_results_with_picks_and_host_times_stay_pytest_benchmark_json(tmp_path: Path) -> None:
    path = _host_run(tmp_path, "r.json", 1.0, 3)
    data = json.loads(path.read_text())
    bench(data, HOST_CASE)["extra_info"]["tilegate"]["autotune"] = _pick(PICK_A)
    write(path, data)
    load_results(path)  # ours reads it
    compare = "import sys; from pytest_benchmark.cli import main; sys.argv[0] = 'x'; main()"
    got = subprocess.run(
        [sys.executable, "-c", compare, "compare", str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert got.returncode == 0 and HOST_CASE in got.stdout, got.stderr[-2000:]
    assert REFERENCE.name in VARIANTS


def _autotuned_smoke_ab(
    tmp_path: Path, env_extra: dict[str, str], extra: str = ""
) -> tuple[subprocess.CompletedProcess[str], Callable[..., subprocess.CompletedProcess[str]]]:
    """`tilegate init` in tmp_path, its kernel made `@triton.autotune`d (two configs, keyed on
    n) with `extra` appended, one commit; (its smoke A/B against HEAD at n = 256, the runner of
    commands in the repository)."""
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    env.pop("TRITON_INTERPRET", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    assert run("git", "init", "-q").returncode == 0
    assert run(sys.executable, "-m", "tilegate", "init", "--package", "tuned").returncode == 0
    kernels = tmp_path / "tuned" / "kernels.py"
    text = kernels.read_text()
    text = text.replace(
        "@triton.jit\ndef _scale_kernel",
        "@triton.autotune(\n    configs=[triton.Config({'BLOCK': 1024}, num_warps=4),"
        " triton.Config({'BLOCK': 256}, num_warps=2)],\n    key=['n'],\n)\n"
        "@triton.jit\ndef _scale_kernel",
    )
    text = text.replace(
        "_scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)",
        "_scale_kernel[lambda m: (triton.cdiv(x.numel(), m['BLOCK']),)](x, y, x.numel())",
    )
    assert "triton.autotune" in text and "m['BLOCK']" in text
    kernels.write_text(text + extra)
    run("git", "add", "-A")
    assert run(*git, "commit", "-qm", "autotuned").returncode == 0
    perf = run(
        sys.executable, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD",
        "--report-only", "--no-plots", "--perf-axis=n=256",
    )  # fmt: skip
    return perf, run


def test_a_repository_with_an_autotuned_kernel_runs_its_smoke_ab_with_the_picks_recorded(
    tmp_path: Path,
) -> None:
    """`tilegate init`, its kernel made `@triton.autotune`d (two configs, keyed on n), an A/A
    smoke A/B on the interpreter: before, every autotuned case failed ("0 active drivers")."""
    perf, _ = _autotuned_smoke_ab(tmp_path, {})
    assert perf.returncode == 0, perf.stdout[-3000:] + perf.stderr[-3000:]
    rows = json.loads((tmp_path / ".perf" / "results.json").read_text())["benchmarks"]
    picks = {
        (r["extra_info"]["tilegate"].get("side", "head"), r["extra_info"]["tilegate"]["key"]): r[
            "extra_info"
        ]["tilegate"].get("autotune")
        for r in rows
    }
    for side in ("head", "base"):
        (pick,) = picks[(side, "triton_scale-fp32-n256")]
        assert pick["kernel"] == "_scale_kernel" and pick["configs"] == 2
        assert pick["config"]["kwargs"] == {"BLOCK": 1024} and pick["key"]["n"] == 256
        assert pick["how"].startswith("interpreter")


FORCED = """

def _base_copy() -> bool:
    \"\"\"Whether this file is the base's checkout, not the work tree the test made.\"\"\"
    import os
    from pathlib import Path

    head = os.environ.get("TILEGATE_TEST_HEAD_TREE")
    return bool(head) and Path(__file__).resolve().parents[1] != Path(head).resolve()


if _base_copy():  # the base's tuner on its other config: another process's pick, same source
    _scale_kernel._tilegate_space = list(_scale_kernel.configs)
    _scale_kernel.configs = [_scale_kernel.configs[1]]
    _scale_kernel._tilegate_how = "forced: config 1"
"""


@pytest.mark.parametrize("processes", [1, 2])
def test_a_tuner_flip_in_a_smoke_ab_is_re_timed_on_one_config_and_never_blamed(
    tmp_path: Path, processes: int
) -> None:
    """`tilegate init`, its kernel autotuned (two configs), the base's process forced onto the
    other config (same source): the A/B (one process holding both versions, or a process per
    side: a package naming itself) records the flip's re-time with both sides on the base's
    pick, and the report and `tilegate explain` read "tuner flip", never SLOWER or FASTER."""
    extra = FORCED + (
        'NAME = "tuned.kernels"  # names itself: a process per side\n' if processes == 2 else ""
    )
    perf, run = _autotuned_smoke_ab(tmp_path, {"TILEGATE_TEST_HEAD_TREE": str(tmp_path)}, extra)
    assert perf.returncode == 0, perf.stdout[-3000:] + perf.stderr[-3000:]
    results = tmp_path / ".perf" / "results.json"
    data = json.loads(results.read_text())
    assert data["machine_info"]["tilegate"]["ab"]["processes"] == processes
    rows = {
        (r["extra_info"]["tilegate"].get("side", "head"), r["extra_info"]["tilegate"]["key"]): r[
            "extra_info"
        ]["tilegate"]
        for r in data["benchmarks"]
    }
    case = "triton_scale-fp32-n256"
    head, base = rows[("head", case)], rows[("base", case)]
    assert head["code_hash"] == base["code_hash"]
    assert head["autotune"][0]["config"]["kwargs"] == {"BLOCK": 1024}
    assert base["autotune"][0]["config"]["kwargs"] == {"BLOCK": 256}
    for row in (head, base):  # both timed again on the base's pick
        assert [p["config"]["kwargs"] for p in row["pinned"]["autotune"]] == [{"BLOCK": 256}]
        assert len(row["pinned"]["samples_s"]) >= 8
    assert "ratio_to_base" in head["pinned"]
    load_results(results)  # ours reads it; pytest-benchmark's compare too
    compare = "import sys; from pytest_benchmark.cli import main; sys.argv[0] = 'x'; main()"
    got = run(sys.executable, "-c", compare, "compare", str(results))
    assert got.returncode == 0 and case in got.stdout, got.stderr[-2000:]
    cmp = compare_ab(load_results(results), None)
    judged = {c.key: c for c in cmp.cases}[case]
    assert judged.verdict is ABVerdict.UNCHANGED and judged.explained_by == autotune.TUNER_FLIP
    assert judged.pinned == "BLOCK=256, num_warps=2, num_stages=3", judged
    report = (tmp_path / ".perf" / "report.md").read_text()
    assert "Tuner flips" in report and "on one config (BLOCK=256" in report
    said = run(sys.executable, "-m", "tilegate", "explain", str(results))
    assert "tuner flip" in said.stdout and "with both sides on BLOCK=256" in said.stdout, said
    for word in ("SLOWER", "FASTER"):
        assert f"{case}` {word}" not in report and f"{case}: {word}" not in said.stdout


def test_a_tuner_whose_every_config_failed_names_its_kernel_and_the_error() -> None:
    from tilegate.harness.autotune import AutotuneFailed, _wrap_run

    def scale_kernel() -> None: ...

    class Tuner:  # what Triton's Autotuner holds after timing configs that all failed
        base_fn = scale_kernel

        def __init__(self) -> None:
            self.arg_names: list[str] = []
            self.keys: list[str] = []
            self.configs = ["a", "b"]
            self.configs_timings = {"a": [float("inf")] * 3, "b": [float("inf")] * 3}

    def run(self: Tuner) -> None:
        raise RuntimeError("out of resources: shared memory")

    with pytest.raises(
        AutotuneFailed, match="scale_kernel: every one of its 2 configs failed"
    ) as e:
        _wrap_run(run)(Tuner())
    assert "RuntimeError: out of resources" in str(e.value)


def test_the_cuda_timer_holds_only_its_host_bound_calls_and_records_host_time() -> None:
    """A stub CUDA (every event pair 1 ms apart): a call whose Python takes 4 ms is host-bound
    and held (a busy-wait kernel queued before each of its samples, and its A/B partner's), a
    call that returns at once is not; every sample's host time is recorded."""
    from types import SimpleNamespace

    from tilegate.harness import timing

    sleeps: list[int] = []
    event = SimpleNamespace(record=lambda: None, elapsed_time=lambda end: 1.0)
    timer = timing.CudaTimer(timing.TimerConfig(l2_flush=False, rounds=4))
    timer._torch = SimpleNamespace(  # type: ignore[assignment]
        cuda=SimpleNamespace(
            synchronize=lambda: None,
            Event=lambda enable_timing: event,
            _sleep=sleeps.append,
        )
    )

    def slow() -> None:
        time.sleep(0.004)

    def fast() -> None:
        pass

    def partner() -> None:
        pass

    fns = {"slow": slow, "fast": fast, "slow@base": partner}
    pairs = {"slow": "slow@base"}
    timer.warm(fns, 0.0, pairs=pairs)
    assert timer.is_held(slow) and timer.is_held(partner) and not timer.is_held(fast)
    got = timer.time(fns, pairs=pairs)
    assert set(got) == set(fns)
    assert set(timer.host_samples) == {"slow", "slow@base"}, "the held calls' host samples"
    assert all(len(v) == 4 for v in timer.host_samples.values())
    assert statistics.median(timer.host_samples["slow"]) >= 0.004
    assert timer.host_probe_s["slow"] >= 0.004 and timer.host_probe_s["fast"] < 0.001
    assert len(sleeps) == 8, "a hold before each sample of the host-bound call and its partner"
    assert min(sleeps) >= timing.HOLD_CLOCK_HZ * 0.008 * 0.99  # twice the host time


def test_a_gpu_bound_calls_host_time_is_taken_with_nothing_queued_ahead() -> None:
    """On the H200 the matmul's wrapper (0.11-0.14 ms with nothing queued ahead) "took" up to
    3.7 ms of host time per call in a 3.5 ms case's back-to-back rounds (a launch into a full
    queue waits for the GPU), and its 0.19 ms K = 128 case was judged "host-bound" on that time. A stub CUDA whose queue
    holds 4 launches, each launch past that waiting 2 ms (the GPU's time per call): the call is
    neither held nor host-bound, its host time is the one taken with nothing queued ahead, and
    its rounds carry no host samples (they read the queue)."""
    from types import SimpleNamespace

    from tilegate.harness import timing

    queued = [0]

    def launch() -> None:
        queued[0] += 1
        if queued[0] > 4:
            time.sleep(0.002)

    def drain() -> None:
        queued[0] = 0

    event = SimpleNamespace(record=launch, elapsed_time=lambda end: 2.0)
    timer = timing.CudaTimer(timing.TimerConfig(l2_flush=False, rounds=6))
    timer._torch = SimpleNamespace(  # type: ignore[assignment]
        cuda=SimpleNamespace(synchronize=drain, Event=lambda enable_timing: event, _sleep=launch)
    )
    fns = {"matmul": launch, "matmul@base": launch}
    pairs = {"matmul": "matmul@base"}
    timer.warm(fns, 0.0, pairs=pairs)
    assert not timer.is_held(launch)
    gpu = timer.time(fns, pairs=pairs)
    assert timer.host_samples == {}
    probe = timer.host_probe_s
    assert set(probe) == set(fns) and max(probe.values()) < 0.001
    row = timing.host_info(timer.host_samples.get("matmul"), gpu["matmul"], False, probe["matmul"])
    assert row == {"host_s": probe["matmul"], "host_bound": False, "held": False}
    # a call timed with no warm-up of its own (a soak paced the first sweep) is probed first
    other = timing.CudaTimer(timing.TimerConfig(l2_flush=False, rounds=6))
    other._torch = timer._torch
    other.time({"cold": launch})
    assert set(other.host_probe_s) == {"cold"} and other.host_probe_s["cold"] < 0.001


def test_a_call_is_held_in_every_round_or_in_none() -> None:
    """On the H200 (fla's A/A, docs/results-h200.md round 16) a call found host-bound only at a
    later sweep's warm-up was held from then on: its host samples did not cover its rounds, were
    dropped, and the case was judged on the GPU in one run and on the host in the next. A stub
    CUDA (events 1 ms apart): a call whose Python is quick at its first warm-up and 4 ms slow
    at the second stays as first decided, its A/B partner with it; a host-bound call first
    warmed then is held, every one of its rounds with a host sample."""
    from types import SimpleNamespace

    from tilegate.harness import timing

    event = SimpleNamespace(record=lambda: None, elapsed_time=lambda end: 1.0)
    timer = timing.CudaTimer(timing.TimerConfig(l2_flush=False, rounds=3))
    timer._torch = SimpleNamespace(  # type: ignore[assignment]
        cuda=SimpleNamespace(synchronize=lambda: None, Event=lambda enable_timing: event,
                             _sleep=lambda cycles: None)
    )  # fmt: skip
    slow = [0.0]

    def wrapper() -> None:
        time.sleep(slow[0])

    def partner() -> None:
        time.sleep(0.004)

    def alone() -> None:
        time.sleep(0.004)

    fns = {"op": wrapper, "op@base": partner, "other": alone}
    timer.warm({"op": wrapper}, 0.0)
    samples = timer.time({"op": wrapper})
    assert not timer.is_held(wrapper) and timer.host_samples == {}
    slow[0] = 0.004  # host-bound now: the second sweep's warm-up must not start holding it
    timer.warm(fns, 0.0, pairs={"op": "op@base"})
    samples = timer.time(fns, pairs={"op": "op@base"})
    assert not timer.is_held(wrapper), "decided at its first warm-up"
    assert not timer.is_held(partner), "a pair's late side follows the side decided first"
    assert timer.is_held(alone), "decided at its own first warm-up: host-bound"
    assert set(timer.host_samples) == {"other"}
    assert len(timer.host_samples["other"]) == len(samples["other"]) == 3


def test_a_config_list_cut_with_the_same_pick_is_named_whatever_the_verdict(tmp_path: Path) -> None:
    # issue 48: an autotune config list cut from 3 to 2 read "the launches and compile facts are
    # the same"; the report's "Compiled code changed" line named the variant only
    three, two = _pick(PICK_A), _pick(PICK_A)
    three[0].update(configs=3, space="s3")
    two[0].update(configs=2, space="s2")
    assert autotune.line(three, two) == "autotuner: the same pick (its configs: 3 -> 2)"
    assert autotune.line(three, three) is None
    assert autotune.classify(False, three, two) is None  # not "another pick"
    data = make_run(rounds=300, seed=3, code={}, ab={CASE: 1.0})
    bench(data, CASE)["extra_info"]["tilegate"].update(autotune=two, code_hash="h2")
    bench(data, f"{CASE}@base")["extra_info"]["tilegate"].update(autotune=three, code_hash="h3")
    path = write(tmp_path / "cut.json", data)
    cmp = compare_ab(load_results(path), None)
    case = {c.key: c for c in cmp.cases}[CASE]
    assert case.code_changed and case.picks == "autotuner: the same pick (its configs: 3 -> 2)"
    from tilegate.report.render import _ab_summary

    summary = "\n".join(_ab_summary(cmp))
    assert "`tma_xtile_persistent` (autotuner: the same pick (its configs: 3 -> 2))" in summary
