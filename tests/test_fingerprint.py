"""Compile fingerprint: TTGIR/ptxas extraction, rules, stored files and the CLI's "cannot judge"
paths. Nothing here compiles a kernel (see test_fingerprint_aot.py for the real pipeline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tilegate.cli import main as tilegate_main
from tilegate.errors import InputError
from tilegate.fingerprint.changes import Change, diff
from tilegate.fingerprint.compile import FACT_KEYS, triton_version
from tilegate.fingerprint.extract import parse_ttgir, ptxas_facts, ttgir_facts
from tilegate.fingerprint.reporting import render
from tilegate.fingerprint.rules import DEFAULT_RULES, RuleReport, Subject, evaluate, load_rules
from tilegate.store.fingerprints import Entry, fingerprint_path, load_fingerprints

# --- TTGIR extraction --------------------------------------------------------------------------

# A fused loop (the store sits in the MMA's loop) with square 64x64 operands: one operand comes
# from a 3-deep cp.async buffer, the other from a synchronous load copied to shared memory.
# Shapes cannot tell A from B here; only the MMA's operand order can.
_TTGIR = """\
#blocked = #ttg.blocked<{{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}}>
#mma = #ttg.nvidia_mma<{{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}}>
#shared = #ttg.nvmma_shared<{{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}}>
#smem = #ttg.shared_memory
#loc = loc("k.py":1:0)
module attributes {{"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"}} {{
  tt.func public @k(%a_ptr: !tt.ptr<f16> {{tt.divisibility = 16 : i32}} loc("a_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {{noinline = false}} {{
    %c0_i32 = arith.constant 0 : i32 loc(#loc)
    %c1_i32 = arith.constant 1 : i32 loc(#loc)
    %cst = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma> loc(#loc)
    %p = tt.splat %a_ptr : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc)
    %buf = ttg.local_alloc : () -> !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc(#loc)
    %s0 = ttg.memdesc_index %buf[%c0_i32] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
    %t0 = ttg.async_copy_global_to_local %p, %s0 : tensor<64x64x!tt.ptr<f16>, #blocked> -> <64x64xf16, #shared, #smem, mutable> loc(#loc)
    %r:2 = scf.for %i = %c0_i32 to %n step %c1_i32 iter_args(%acc = %cst, %idx = %c0_i32) -> (tensor<64x64xf32, #mma>, i32)  : i32 {{
      %sbuf = ttg.memdesc_index %buf[%idx] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
      %x = tt.load %p : tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc)
      %sx = ttg.local_alloc %x : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem> loc(#loc)
      %d = ttng.warp_group_dot {first}, {second}, %acc {{inputPrecision = 0 : i32, isAsync = true}} : !ttg.memdesc<64x64xf16, #shared, #smem> * !ttg.memdesc<64x64xf16, #shared, #smem> -> tensor<64x64xf32, #mma> loc(#loc)
      %w:3 = ttng.warp_group_dot_wait %d, %sbuf, %sx {{pendings = {pendings} : i32}} : tensor<64x64xf32, #mma>, !ttg.memdesc<64x64xf16, #shared, #smem, mutable>, !ttg.memdesc<64x64xf16, #shared, #smem> loc(#loc)
      %last = arith.cmpi eq, %i, %c0_i32 : i32 loc(#loc)
      %z = arith.select %last, %cst, %w#0 : tensor<64x64xf32, #mma> loc(#loc)
      scf.if %last {{
        %fin:1 = ttng.warp_group_dot_wait %w#0 {{pendings = 0 : i32}} : tensor<64x64xf32, #mma> loc(#loc)
        %c = arith.truncf %fin#0 : tensor<64x64xf32, #mma> to tensor<64x64xf16, #mma> loc(#loc)
        %cb = ttg.convert_layout %c : tensor<64x64xf16, #mma> -> tensor<64x64xf16, #blocked> loc(#loc)
        tt.store %p, %cb : tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc)
      }} loc(#loc)
      scf.yield %z, %idx : tensor<64x64xf32, #mma>, i32 loc(#loc)
    }} {{tt.num_stages = 3 : i32}} loc(#loc)
    tt.return loc(#loc)
  }} loc(#loc)
}} loc(#loc)
"""


def _fingerprint(argv: list[str]) -> int:
    return tilegate_main(["fingerprint", *argv])


def test_operands_are_told_apart_by_mma_position_not_shape() -> None:
    a_buffered = ttgir_facts(_TTGIR.format(first="%sbuf", second="%sx", pendings=1))
    assert a_buffered["operands"]["a"] == {"buffers": 3, "load": "cp.async", "multi_buffered": True}
    assert a_buffered["operands"]["b"] == {"buffers": 1, "load": "sync", "multi_buffered": False}
    b_buffered = ttgir_facts(_TTGIR.format(first="%sx", second="%sbuf", pendings=1))
    assert b_buffered["operands"]["a"]["multi_buffered"] is False
    assert b_buffered["operands"]["b"] == {"buffers": 3, "load": "cp.async", "multi_buffered": True}


def test_fused_loop_wait_depth_and_accumulator_select() -> None:
    facts = ttgir_facts(_TTGIR.format(first="%sbuf", second="%sx", pendings=0))
    assert facts["fused"] is True  # the store is in the MMA's loop (inside its epilogue scf.if)
    assert facts["loops"] == 1 and facts["mma_loop_depth"] == 1
    assert facts["mma"] == "wgmma"
    # the loop body's wait counts; the epilogue's pendings = 0 inside scf.if does not
    assert facts["wgmma_wait"] == 0
    assert ttgir_facts(_TTGIR.format(first="%sbuf", second="%sx", pendings=1))["wgmma_wait"] == 1
    assert facts["acc_select"] is True


# A warp-specialized kernel as Triton 3.6 prints it for sm_90, cut down: the default region
# (the kernel's 4 warps) loads A and B by TMA into 3-deep buffers it sees directly; two isolated
# partitions get the buffers as arguments. Both partitions define %s, %d and %r: partition1's
# %s is a synchronous copy, so a parser that let names meet across partitions would trace
# partition0's MMA operand to it. @LOOPS@ is the partitions' loop nest: a tile loop around a K
# loop (not fused), or one loop (a flattened tile loop, split over the partitions).
_WS_TTGIR = """\
#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
#loc = loc("k.py":1:0)
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @k(%desc: !tt.tensordesc<tensor<64x64xf16, #shared>> loc("desc"(#loc)), %c_ptr: !tt.ptr<f16> loc("c_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc)
    %c1_i32 = arith.constant 1 : i32 loc(#loc)
    %true = arith.constant true loc(#loc)
    %abuf = ttg.local_alloc : () -> !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc(#loc)
    %bbuf = ttg.local_alloc : () -> !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc(#loc)
    %bar = ttg.local_alloc : () -> !ttg.memdesc<3x1xi64, #shared, #smem, mutable> loc(#loc)
    ttg.warp_specialize(%abuf, %bbuf, %c_ptr, %n) attributes {requestedRegisters = array<i32: 232, 240>}
    default {
      scf.for %t = %c0_i32 to %n step %c1_i32  : i32 {
        %s = ttg.memdesc_index %abuf[%t] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
        %sb = ttg.memdesc_index %bbuf[%t] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
        %w = ttg.memdesc_index %bar[%t] : !ttg.memdesc<3x1xi64, #shared, #smem, mutable> -> !ttg.memdesc<1xi64, #shared, #smem, mutable> loc(#loc)
        ttng.async_tma_copy_global_to_local %desc[%t, %t] %s, %w, %true : !tt.tensordesc<tensor<64x64xf16, #shared>>, !ttg.memdesc<1xi64, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
        ttng.async_tma_copy_global_to_local %desc[%t, %t] %sb, %w, %true : !tt.tensordesc<tensor<64x64xf16, #shared>>, !ttg.memdesc<1xi64, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
      } {tt.num_stages = 0 : i32} loc(#loc)
      ttg.warp_yield loc(#loc)
    }
    partition0(%arg0: !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc("k.py":1:0), %arg1: !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc("k.py":1:0), %c_ptr_0: !tt.ptr<f16> loc("c_ptr"(#loc)), %n_1: i32 loc("n"(#loc))) num_warps(4) {
      %c0 = arith.constant 0 : i32 loc(#loc)
      %c1 = arith.constant 1 : i32 loc(#loc)
      %cst = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma> loc(#loc)
      %p = tt.splat %c_ptr_0 : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #mma> loc(#loc)
@LOOPS@
      ttg.warp_return loc(#loc)
    }
    partition1(%arg0: !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc("k.py":1:0), %arg1: !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> loc("k.py":1:0), %c_ptr_0: !tt.ptr<f16> loc("c_ptr"(#loc)), %n_1: i32 loc("n"(#loc))) num_warps(8) {
      %p = tt.splat %c_ptr_0 : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #mma> loc(#loc)
      %x = tt.load %p : tensor<64x64x!tt.ptr<f16>, #mma> loc(#loc)
      %s = ttg.local_alloc %x : (tensor<64x64xf16, #mma>) -> !ttg.memdesc<64x64xf16, #shared, #smem> loc(#loc)
      ttg.warp_return loc(#loc)
    } : (!ttg.memdesc<3x64x64xf16, #shared, #smem, mutable>, !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable>, !tt.ptr<f16>, i32) -> () loc(#loc)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
_WS_MMA = """\
%s = ttg.memdesc_index %arg0[%k] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
%sb = ttg.memdesc_index %arg1[%k] : !ttg.memdesc<3x64x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable> loc(#loc)
%d = ttng.warp_group_dot %s, %sb, %acc {inputPrecision = 0 : i32} : !ttg.memdesc<64x64xf16, #shared, #smem, mutable> * !ttg.memdesc<64x64xf16, #shared, #smem, mutable> -> tensor<64x64xf32, #mma> loc(#loc)"""
_WS_STORE = """\
%h = arith.truncf %r : tensor<64x64xf32, #mma> to tensor<64x64xf16, #mma> loc(#loc)
tt.store %p, %h : tensor<64x64x!tt.ptr<f16>, #mma> loc(#loc)"""
_WS_NESTED = f"""\
scf.for %t = %c0 to %n_1 step %c1  : i32 {{
  %r = scf.for %k = %c0 to %n_1 step %c1 iter_args(%acc = %cst) -> (tensor<64x64xf32, #mma>)  : i32 {{
{_WS_MMA}
    scf.yield %d : tensor<64x64xf32, #mma> loc(#loc)
  }} loc(#loc)
{_WS_STORE}
}} {{tt.num_stages = 0 : i32}} loc(#loc)"""
_WS_FLAT = f"""\
%r = scf.for %k = %c0 to %n_1 step %c1 iter_args(%acc = %cst) -> (tensor<64x64xf32, #mma>)  : i32 {{
{_WS_MMA}
  %last = arith.cmpi eq, %k, %c0 : i32 loc(#loc)
  scf.if %last {{
{_WS_STORE.replace("%r", "%d")}
  }} loc(#loc)
  scf.yield %d : tensor<64x64xf32, #mma> loc(#loc)
}} {{tt.num_stages = 3 : i32}} loc(#loc)"""


def _ws_ttgir(loops: str) -> str:
    return _WS_TTGIR.replace("@LOOPS@", loops)


@pytest.mark.parametrize(
    "nest, fused", [(_WS_NESTED, False), (_WS_FLAT, True)], ids=["nested", "flat"]
)
def test_warp_specialized_kernel(nest: str, fused: bool) -> None:
    """Partitions, their warps and registers; operands traced through a partition's
    arguments to the default region's TMA buffers; names kept apart per partition."""
    facts = ttgir_facts(_ws_ttgir(nest))
    ws = {k: facts[k] for k in ("ws_requested", "warp_specialized", "ws_partitions")}
    assert ws == {"ws_requested": True, "warp_specialized": True, "ws_partitions": 3}
    assert facts["ws_warps"] == [4, 4, 8] and facts["ws_registers"] == [232, 240]
    for op in ("a", "b"):
        assert facts["operands"][op] == {"buffers": 3, "load": "tma", "multi_buffered": True}
    assert facts["mma"] == "wgmma" and facts["wgmma_wait"] == 0  # synchronous wgmma
    assert facts["fused"] is fused
    assert facts["mma_loop_depth"] == (1 if fused else 2)


def test_ignored_warp_specialization_leaves_only_the_attribute() -> None:
    """What Triton 3.6 prints for sm_90 with 8 warps: the request survives as a loop attribute."""
    text = _TTGIR.format(first="%sbuf", second="%sx", pendings=1).replace(
        "{tt.num_stages = 3 : i32}", "{tt.num_stages = 3 : i32, tt.warp_specialize}"
    )
    facts = ttgir_facts(text)
    assert facts["ws_requested"] is True and facts["warp_specialized"] is False
    assert (facts["ws_partitions"], facts["ws_warps"], facts["ws_registers"]) == (0, [], [])
    plain = ttgir_facts(_TTGIR.format(first="%sbuf", second="%sx", pendings=1))
    assert plain["ws_requested"] is False and plain["warp_specialized"] is False
    # another attribute whose name starts the same is not a request
    tagged = text.replace("tt.warp_specialize}", "ttg.warp_specialize.tag = 0 : i32}")
    assert ttgir_facts(tagged)["ws_requested"] is False


def test_parser_rejects_truncated_or_foreign_text() -> None:
    with pytest.raises(ValueError, match=r"unbalanced|truncated"):
        parse_ttgir(_TTGIR.format(first="%sbuf", second="%sx", pendings=1)[:1500])
    with pytest.raises(ValueError, match="not TTGIR"):
        parse_ttgir("hello = world\n")


def test_ptxas_report() -> None:
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Function properties for k\n"
        "    8 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 8 bytes cumulative stack size\n"
    )
    assert ptxas_facts(log) == {
        "registers": 255,
        "spill_stores": 16,
        "spill_loads": 12,
        "stack_bytes": 8,
    }
    with pytest.raises(ValueError, match="no register"):
        ptxas_facts("")


# --- rules -------------------------------------------------------------------------------------


def _facts(**over: Any) -> dict[str, Any]:
    f: dict[str, Any] = {
        "fused": True,
        "loops": 2,
        "mma_loop_depth": 1,
        "mma": "wgmma",
        "acc_select": True,
        "a_buffers": 3,
        "a_load": "cp.async",
        "a_multi_buffered": True,
        "b_buffers": 3,
        "b_load": "cp.async",
        "b_multi_buffered": True,
        "wgmma_wait": 1,
        "ws_requested": False,
        "warp_specialized": False,
        "ws_partitions": 0,
        "ws_warps": [],
        "ws_registers": [],
        "shared_bytes": 180224,
        "registers": 196,
        "spill_stores": 0,
        "spill_loads": 0,
        "stack_bytes": 0,
    }
    f.update(over)
    assert set(f) == set(FACT_KEYS)
    return f


def _subject(variant: str, layout: str, arch: str = "sm_90", **facts: Any) -> Subject:
    short = arch.replace("_", "")
    return Subject(
        f"{variant}-fp16-{layout}-{short}",
        variant,
        "fp16",
        layout,
        arch,
        variant.startswith(("xtile", "tma_xtile")),
        True,
        _facts(**facts),
    )


_TRITON = "3.6.0"  # a version the repo's exceptions are known for


def test_repo_rules_file_loads() -> None:
    rs = load_rules(DEFAULT_RULES)
    assert {"sm_90", "sm_100", "sm_120"} <= set(rs.targets)
    assert (rs.targets["sm_100"].capability, rs.targets["sm_100"].num_sms) == ((10, 0), 148)
    assert {r.id for r in rs.rules} >= {"xtile-fused", "operands-multibuffered", "no-spills"}
    assert rs.targets["sm_90"].capability == (9, 0)


def test_unfused_cross_tile_kernel_fails_with_the_rules_message() -> None:
    rs = load_rules(DEFAULT_RULES)
    rep = evaluate(rs, [_subject("xtile_persistent", "nt", fused=False)], triton=_TRITON)
    assert [f.rule for f in rep.failures] == ["xtile-fused"]
    assert "not fused" in rep.failures[0].message


def test_known_exception_is_named_and_narrow() -> None:
    rs = load_rules(DEFAULT_RULES)
    nn_b = _subject(
        "xtile_persistent", "nn", b_buffers=1, b_load="sync", b_multi_buffered=False, wgmma_wait=0
    )
    rep = evaluate(rs, [nn_b], triton=_TRITON)
    assert not rep.failures
    assert {f.exception for f in rep.excepted} == {"xtile-nn-pointer-b-sync"}
    assert "sync" in rep.excepted[0].message and rep.excepted[0].reason
    # the exception covers B on the nn pointer kernel only: A losing its buffers still fails,
    # and so does B on the nt kernel or on another variant
    worse = _subject(
        "xtile_persistent",
        "nn",
        a_buffers=1,
        a_load="sync",
        a_multi_buffered=False,
        b_buffers=1,
        b_load="sync",
        b_multi_buffered=False,
        wgmma_wait=0,
    )
    assert [(f.rule, f.label) for f in evaluate(rs, [worse], triton=_TRITON).failures] == [
        ("operands-multibuffered", "A")
    ]
    for s in (
        _subject("xtile_persistent", "nt", b_multi_buffered=False, b_load="sync", b_buffers=1),
        _subject("tma_xtile_persistent", "nn", b_multi_buffered=False, b_load="sync", b_buffers=1),
    ):
        assert [f.label for f in evaluate(rs, [s], triton=_TRITON).failures] == ["B"]


def test_exception_that_excuses_nothing_is_reported_stale() -> None:
    rs = load_rules(DEFAULT_RULES)
    rep = evaluate(rs, [_subject("xtile_persistent", "nn")], triton=_TRITON)  # B buffered again
    assert not rep.findings
    assert any(s.startswith("xtile-nn-pointer-b-sync") for s in rep.stale_exceptions)


_WS = dict(
    ws_requested=True,
    warp_specialized=True,
    ws_partitions=3,
    ws_warps=[4, 4, 4],
    ws_registers=[232, 232],
    wgmma_wait=0,
)
_WS_IGNORED = dict(ws_requested=True, warp_specialized=False, wgmma_wait=1)


def test_ignored_warp_specialization_fails_with_the_rules_message() -> None:
    rs = load_rules(DEFAULT_RULES)
    ignored = _subject("tma_ws_persistent", "nt", fused=False, **_WS_IGNORED)
    rep = evaluate(rs, [ignored], triton=_TRITON)
    assert [(f.rule, f.kernel) for f in rep.failures] == [
        ("warp-specialized", "tma_ws_persistent-fp16-nt-sm90")
    ]
    assert "did not warp-specialize" in rep.failures[0].message
    # honoured: the rule holds, and the synchronous wgmma of its consumers (pendings 0) is no
    # wgmma-overlap violation: a producer partition runs the loads ahead
    assert not evaluate(
        rs, [_subject("tma_ws_persistent", "nt", fused=False, **_WS)], triton=_TRITON
    ).findings
    # ignored, the same wait is a violation again: nothing else overlaps the loads
    both = evaluate(
        rs,
        [_subject("tma_ws_persistent", "nt", fused=False, **{**_WS_IGNORED, "wgmma_wait": 0})],
        triton=_TRITON,
    )
    assert {f.rule for f in both.failures} == {"warp-specialized", "wgmma-overlap"}
    # a kernel that does not ask, or an architecture the rule does not list, is not checked
    assert not evaluate(
        rs, [_subject("tma_swizzle_persistent", "nt", fused=False)], triton=_TRITON
    ).findings
    assert not evaluate(
        rs,
        [_subject("tma_ws_persistent", "nt", "sm_80", fused=False, **_WS_IGNORED)],
        triton=_TRITON,
    ).findings


def _nn_b_sync() -> Subject:
    return _subject(
        "xtile_persistent", "nn", b_buffers=1, b_load="sync", b_multi_buffered=False, wgmma_wait=0
    )


@pytest.mark.parametrize("triton", ["3.6.0", "3.9.0", "3.9.1"])
def test_an_exception_applies_within_its_triton_range(triton: str) -> None:
    rep = evaluate(load_rules(DEFAULT_RULES), [_nn_b_sync()], triton=triton)
    assert not rep.failures and len(rep.excepted) == 2


@pytest.mark.parametrize("triton", ["3.10.0", "3.5.1"])
def test_an_exception_out_of_its_triton_range_does_not_apply_and_says_so(triton: str) -> None:
    rep = evaluate(load_rules(DEFAULT_RULES), [_nn_b_sync()], triton=triton)
    assert [(f.rule, f.label) for f in rep.failures] == [
        ("operands-multibuffered", "B"),
        ("wgmma-overlap", "wgmma wait"),
    ]
    assert rep.out_of_range == [
        f"xtile-nn-pointer-b-sync ({rule}) is known for Triton >=3.6,<3.10, not {triton}"
        for rule in ("operands-multibuffered", "wgmma-overlap")
    ]
    assert not rep.stale_exceptions  # out of range is not stale: nobody has looked yet


def test_spills_break_a_rule() -> None:
    rep = evaluate(
        load_rules(DEFAULT_RULES), [_subject("tiled", "nt", spill_stores=64)], triton=_TRITON
    )
    assert [f.rule for f in rep.failures] == ["no-spills"]
    assert "64 bytes" in rep.failures[0].message


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d.update(schema="other/1"), "schema"),
        (lambda d: d["rules"][0]["checks"][0].update(field="nonsense"), "unknown field 'nonsense'"),
        (lambda d: d["exceptions"][0].update(rule="no-such-rule"), "unknown rule"),
        (lambda d: d["rules"][0].update(applies_to={"colour": ["red"]}), "unknown selector"),
        (lambda d: d["rules"][0].update(applies_to={"ws_requested": "yes"}), "true or false"),
        (
            lambda d: d["exceptions"][0].update(triton="around 3.6"),
            "triton must be a version range",
        ),
        (lambda d: d["exceptions"][0].update(triton=3.6), "triton must be a version range"),
    ],
)
def test_bad_rules_file_is_input_error_naming_it(tmp_path: Path, edit: Any, match: str) -> None:
    data = json.loads(DEFAULT_RULES.read_text())
    edit(data)
    p = tmp_path / "rules.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match=match) as info:
        load_rules(p)
    assert str(p) in str(info.value)


# --- stored fingerprints and their diff ----------------------------------------------------------


def _entry(kid: str = "xtile_persistent-fp16-nn-sm90", **facts: Any) -> Entry:
    cfg = {
        "num_warps": 8,
        "num_stages": 3,
        "constexprs": {"FLATTEN": True},
        "signature": "a_ptr:*fp16:16",
    }
    return Entry(kid, "xtile_persistent", "fp16", "nn", (128, 4096), cfg, _facts(**facts))


def test_diff_labels_and_allowance() -> None:
    old = {"k": _entry("k")}
    new = {
        "k": _entry(
            "k",
            b_buffers=1,
            b_load="sync",
            b_multi_buffered=False,
            wgmma_wait=0,
            shared_bytes=81920,
            registers=200,
        )
    }
    changes = {c.field: c for c in diff(old, new, {"registers": 8})}
    assert changes["b_buffers"].verdict == "worse" and changes["b_buffers"].fails
    assert changes["b_load"].verdict == "worse"
    assert changes["wgmma_wait"].verdict == "worse"
    assert changes["shared_bytes"].verdict == "changed" and changes["shared_bytes"].fails
    assert changes["registers"].verdict == "within allowance" and not changes["registers"].fails
    assert "overlapping the MMA" in changes["b_buffers"].why
    beyond = diff(old, {"k": _entry("k", registers=230)}, {"registers": 8})
    assert [(c.field, c.verdict) for c in beyond] == [("registers", "worse")]
    gone = diff(old, {}, {})
    assert [(c.field, c.verdict, c.fails) for c in gone] == [("kernel", "removed", True)]


def _report(mode: str, changes: list[Change]) -> str:
    from tilegate.fingerprint.suite import profiles

    PROFILES = profiles()
    from tilegate.fingerprint.gate import Compiled

    rs = load_rules(DEFAULT_RULES)
    comp = Compiled([], [], {}, 0, 0.0, [rs.targets["sm_90"]], rs, PROFILES["default"])
    return render(
        mode=mode,
        version="9.9.9",
        comp=comp,
        rules=RuleReport(),
        changes=changes,
        baseline_note={"sm_90": "x"},
        failed=False,
    )


def test_a_recording_counts_its_changes_by_verdict_not_as_failures() -> None:
    better = [Change(f"k{i}", "registers", 230, 200, "better", "why") for i in range(11)]
    changes = [*better, Change("k", "registers", 200, 204, "within allowance", "why")]
    recorded = _report("record", changes)
    assert "## What this recording changes: 11 better, 1 within allowance\n" in recorded
    assert "that fail" not in recorded
    checked = _report("check", changes)  # a check fails on them: the same changes, counted
    assert "## Changes: 11 that fail, 1 informational (11 better, 1 within allowance)" in checked


def _write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_corrupt_fingerprint_file_is_input_error_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "sm_90.json"
    _write_file(p, '{"schema": "tilegate.fingerprint/1", "kernels": {')
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_fingerprints(p)
    assert str(p) in str(info.value)
    good_top = {"schema": "tilegate.fingerprint/1", "triton": "3.6.0", "arch": "sm_90"}
    _write_file(
        p,
        json.dumps({**good_top, "ptxas": "12.8.93", "kernels": {"k": {"facts": {"fused": True}}}}),
    )
    with pytest.raises(InputError, match="facts lack") as info:
        load_fingerprints(p)
    assert "kernels['k']" in str(info.value)
    _write_file(p, json.dumps({**good_top, "kernels": {}}))  # which ptxas assembled it?
    with pytest.raises(InputError, match="ptxas: must be a string"):
        load_fingerprints(p)


def _cli(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--baseline-dir",
        str(tmp_path / "fp"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--report",
        str(tmp_path / "fingerprint.md"),
        "--json-dir",
        str(tmp_path / "json"),
        "--jobs",
        "1",
        *extra,
    ]


def test_cli_without_a_fingerprint_for_this_triton_cannot_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fp" / "triton-3.5.0").mkdir(parents=True)
    (tmp_path / "fp" / "triton-3.5.0" / "sm_90.json").write_text("{}")
    assert _fingerprint(_cli(tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"no fingerprint for Triton {triton_version()}" in err
    assert "recorded: Triton 3.5.0" in err
    assert "--record" in err
    # the command that records the missing version, not the pinned one again
    assert f"nox -s fingerprint_rebaseline -- --triton {triton_version()}" in err


def test_cannot_judge_replaces_the_previous_verdict_and_removes_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nox points at the report on exit 2: it must say CANNOT JUDGE, not the last run's "ok"."""
    report = tmp_path / "fingerprint.md"
    report.write_text(f"# Compile fingerprint, Triton {triton_version()}: ok\n")
    previous = tmp_path / "json" / "sm_90.json"  # the facts JSON a previous run left
    _write_file(previous, json.dumps({"schema": "tilegate.fingerprint-run/1", "kernels": {}}))
    unrelated = tmp_path / "json" / "notes.json"
    _write_file(unrelated, "{}")
    assert _fingerprint(_cli(tmp_path)) == 2
    text = report.read_text()
    assert text.startswith(f"# Compile fingerprint, Triton {triton_version()}: CANNOT JUDGE\n")
    assert f"no fingerprint for Triton {triton_version()}" in text
    assert not previous.exists() and unrelated.exists()
    assert "cannot judge" in capsys.readouterr().err


def test_cli_corrupt_fingerprint_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for arch in ("sm_90", "sm_120"):
        _write_file(fingerprint_path(tmp_path / "fp", triton_version(), arch), "{ this is not json")
    assert _fingerprint(_cli(tmp_path, "--arch", "sm_90")) == 2
    err = capsys.readouterr().err
    assert str(fingerprint_path(tmp_path / "fp", triton_version(), "sm_90")) in err
    assert "not valid JSON" in err


def test_cli_upgrade_report_without_the_from_recording_cannot_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _fingerprint(_cli(tmp_path, "--upgrade-from", "0.1.0")) == 2
    err = capsys.readouterr().err
    assert "no recording of Triton 0.1.0 to compare with" in err
    assert "nox -s fingerprint_rebaseline -- --triton 0.1.0" in err
    assert "CANNOT JUDGE" in (tmp_path / "fingerprint.md").read_text()


def test_cli_unknown_architecture_and_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _fingerprint(_cli(tmp_path, "--record", "--arch", "sm_75")) == 2
    assert "unknown architecture" in capsys.readouterr().err
    assert _fingerprint(_cli(tmp_path, "--profile", "nope")) == 2
    assert "unknown profile" in capsys.readouterr().err
