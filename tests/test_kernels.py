"""Kernel variants on the CPU: numbers under Triton's interpreter, plans, registry, error paths.

The interpreter config (kernels/configs.py) has 16 x 16 x 16 tiles, GROUP_M = 2 and 3 programs,
so the small odd shapes below have many tiles, several K steps, partial tiles at every edge and
persistent programs that loop over unequal numbers of tiles. `test_shapes_cover_the_edges`
checks that the shapes still do, should the config change.
"""

from __future__ import annotations

import contextvars
import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import _allocation as triton_allocation
from triton.runtime import interpreter as triton_interpreter
from triton.runtime.jit import JITFunction

from kernels import CONFIGS, VARIANTS, Variant, _host, config_for, configs, layout_of
from kernels.launch import DescArg, KernelLaunch, ScalarArg, TensorArg
from kernels.reference import exact as reference
from kernels.testing import impostor_variant, with_variants, wrong_variant
from tilegate.harness.correctness import check_output

REPO = Path(__file__).resolve().parents[1]

STABLE_NAMES = (
    "torch",
    "tiled",
    "grouped",
    "persistent",
    "swizzle_persistent",
    "xtile_persistent",
    "tma_swizzle_persistent",
    "tma_xtile_persistent",
    "tma_ws_persistent",
    "tma_ws_xtile_persistent",
)
TWINS = {
    "xtile_persistent": "swizzle_persistent",
    "tma_xtile_persistent": "tma_swizzle_persistent",
    "tma_ws_xtile_persistent": "tma_ws_persistent",
}
TRITON = [n for n in STABLE_NAMES if n != "torch"]
POINTER = ["tiled", "grouped", "persistent", "swizzle_persistent", "xtile_persistent"]
HOST_TMA = ["tma_swizzle_persistent", "tma_xtile_persistent"]  # host descriptors (kernels/tma.py)
TMA_WS = ["tma_ws_persistent", "tma_ws_xtile_persistent"]  # descriptors made in the kernel
TMA = HOST_TMA + TMA_WS
LAYOUTS = ("nn", "nt")
P = configs.INTERPRETER_NUM_SMS  # persistent programs under the interpreter

# (M, N, K) by purpose. Pointer kernels take any sizes; TMA needs N and K multiples of 8.
SHAPES = {
    "odd-K40": (50, 53, 40),  # 16 tiles over 3 programs, 3 K steps, the last partial
    "K9-below-BK": (50, 17, 9),
    "K1": (19, 23, 1),
    "M1": (1, 45, 24),
    "N1": (45, 1, 24),
    "exact-blocks": (32, 48, 32),
    "partial-group": (70, 50, 24),  # 5 rows of tiles: GROUP_M = 2 leaves a group of 1
}
TMA_SHAPES = {
    "odd-K40": (50, 56, 40),
    "K8-below-BK": (50, 24, 8),
    "M1": (1, 40, 16),
    "exact-blocks": (32, 48, 32),
    "partial-group": (70, 56, 24),
}

# Relative Frobenius error bounds against a float64 reference. Rounding the output to fp16 costs
# ~3e-4; to bf16 ~2e-3 on a GPU, ~3.5e-3 in the interpreter (it truncates fp32 -> bf16).
# Any real bug (a skipped K block, a misplaced tile) costs > 1e-1 on these shapes.
TOL = {torch.float16: 2e-3, torch.bfloat16: 1e-2}


# --- helpers ----------------------------------------------------------------------------------


def _seed(*key: object) -> int:
    return zlib.crc32(repr(key).encode())


def operands(
    M: int, N: int, K: int, layout: str, dtype: torch.dtype = torch.float16, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random a (M x K, contiguous) and b (K x N) stored in `layout` ("nt": b = bt.T)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).to(dtype)
    if layout == "nn":
        b = torch.randn(K, N, generator=g).to(dtype)
    else:
        b = torch.randn(N, K, generator=g).to(dtype).T
    return a, b


def poisoned(M: int, N: int, dtype: torch.dtype) -> torch.Tensor:
    """An output full of NaN: any element the kernel does not write stays NaN."""
    return torch.full((M, N), float("nan"), dtype=dtype)


def check_result(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, tol: float) -> float:
    """Assert c is a's dtype, fully written and within `tol` of float64 a @ b; return the error.

    The suite's own check (tilegate.harness.correctness), with this file's tighter bound.
    """
    assert c.dtype == a.dtype, f"returned {c.dtype}, expected {a.dtype}"
    got = check_output(c, reference(a, b), tol)
    assert got.error is None, got.error
    assert got.correct, f"relative error {got.rel_err:.3g} > {tol:g}"
    return got.rel_err


def run_case(name: str, M: int, N: int, K: int, layout: str, dtype: torch.dtype) -> float:
    """Run VARIANTS[name] on fresh (seeded) operands into a poisoned output and check it."""
    a, b = operands(M, N, K, layout, dtype, seed=_seed(name, M, N, K, layout, dtype))
    out = poisoned(M, N, dtype)
    c = VARIANTS[name].call(a, b, out=out)
    assert c is out
    return check_result(c, a, b, TOL[dtype])


def cap_id(capability: tuple[int, int] | None) -> str:
    return "interp" if capability is None else f"sm{capability[0]}{capability[1]}"


def interp_plan(name: str, M: int, N: int, K: int, layout: str = "nn") -> KernelLaunch:
    return VARIANTS[name].plan(
        M, N, K, dtype=torch.float16, layout=layout, capability=None, num_sms=P
    )


def numeric_cases() -> list:
    cases = []
    for name in STABLE_NAMES:
        shapes = TMA_SHAPES if name in TMA else SHAPES
        for layout in LAYOUTS:
            for sid, shape in shapes.items():
                cases.append(pytest.param(name, layout, shape, id=f"{name}-fp16-{layout}-{sid}"))
    return cases


@pytest.fixture
def bf16_interpreter_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work around Triton 3.6's interpreter bug that makes bf16 `tl.dot` wrong.

    The interpreter stores bf16 as raw uint16 bits (NumPy has no bfloat16) and its dot runs
    np.matmul on those bits as integers (relative error ~1e9, see docs/pitfalls.md). This
    decodes the bits to float32 first, exactly (bf16 is the top half of a float32), and leaves
    everything else as the interpreter does it: loads, masks, tile order, fp32 accumulation and
    the bf16 store. So bf16 is checked here end to end except for the hardware MMA itself, which
    only the GPU suite can check. `test_interpreter_bf16_dot_is_still_broken` tells when the
    workaround can go.
    """
    original = triton_interpreter.InterpreterBuilder.create_dot

    def decoded(x):
        if x.dtype.scalar != tl.bfloat16:
            return x
        data = (x.data.astype(np.uint32) << 16).view(np.float32)
        return triton_interpreter.TensorHandle(data, tl.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return original(self, decoded(a), decoded(b), d, input_precision, max_num_imprecise_acc)

    monkeypatch.setattr(triton_interpreter.InterpreterBuilder, "create_dot", create_dot)


# --- registry ---------------------------------------------------------------------------------


def test_registry_has_the_stable_names():
    assert tuple(VARIANTS) == STABLE_NAMES
    for key, v in VARIANTS.items():
        assert isinstance(v, Variant)
        assert v.name == key
        assert v.description


@pytest.mark.parametrize("name", STABLE_NAMES)
def test_variants_are_frozen(name):
    with pytest.raises(dataclasses.FrozenInstanceError):
        VARIANTS[name].name = "other"  # type: ignore[misc]


def test_families_plans_and_capabilities():
    fams = {n: v.family for n, v in VARIANTS.items()}
    assert fams == {
        "torch": "reference",
        **dict.fromkeys(POINTER, "pointer"),
        **dict.fromkeys(HOST_TMA, "tma"),
        **dict.fromkeys(TMA_WS, "tma_ws"),
    }
    assert VARIANTS["torch"].plan is None
    for name in TRITON:
        assert callable(VARIANTS[name].plan)
    # what a variant needs of the GPU is its declaration's `unsupported`
    needs = {n: v.unsupported for n, v in VARIANTS.items() if v.unsupported is not None}
    assert {n: r.min_capability for n, r in needs.items() if r.min_capability} == {
        **dict.fromkeys(TMA, (9, 0)),
        "tma_ws_xtile_persistent": (10, 0),
    }
    assert {n: r.capabilities for n, r in needs.items() if r.capabilities} == {
        "tma_ws_persistent": ((9, 0),)
    }


def test_one_variant_class_the_declarations() -> None:
    """kernels declares its variants with tilegate's Variant: there is no other class."""
    from kernels.registry import DECLARED, REGISTRY
    from tilegate.declare import Variant

    assert DECLARED is REGISTRY and all(type(v) is Variant for v in REGISTRY)
    assert all(callable(v.call) and callable(v.make) for v in REGISTRY)


def test_xtile_twins():
    assert {n: v.twin_of for n, v in VARIANTS.items() if v.twin_of} == TWINS
    for name, twin in TWINS.items():
        assert VARIANTS[twin].family == VARIANTS[name].family
        assert VARIANTS[twin].twin_of is None


# (capability, num_sms) a plan can be made for, per variant: TMA plans need sm_90 or newer.
GPUS = {"interp": (None, P), "sm90": ((9, 0), 132), "sm120": ((12, 0), 170), "sm80": ((8, 0), 108)}


def plannable(names: list[str]) -> list:
    return [
        pytest.param(name, *gpu, id=f"{name}-{gid}")
        for name in names
        for gid, gpu in GPUS.items()
        if not (name in TMA and gid == "sm80")
    ]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("name", "capability", "num_sms"), plannable(list(TWINS)))
def test_twins_differ_only_in_flatten(name, capability, num_sms, layout):
    """Same kernel, config, grid and arguments: the gate's xtile / twin ratio measures only the
    flattened tile loop."""
    kw = dict(dtype=torch.float16, layout=layout, capability=capability, num_sms=num_sms)
    x = VARIANTS[name].plan(16384, 16384, 128, **kw)
    twin = VARIANTS[TWINS[name]].plan(16384, 16384, 128, **kw)
    assert x.constexprs["FLATTEN"] is True and twin.constexprs["FLATTEN"] is False
    assert x == dataclasses.replace(twin, constexprs={**twin.constexprs, "FLATTEN": True})


@pytest.mark.parametrize(
    "capability", [None, (7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0)], ids=cap_id
)
@pytest.mark.parametrize("name", STABLE_NAMES)
def test_unsupported_reason(name, capability):
    """Warp-specialized variants run only where Triton 3.6 really warp-specializes them: the
    unflattened tile loop on sm_90, the flattened one on Blackwell (kernels/__init__.py)."""
    reason = VARIANTS[name].unsupported_reason(capability)
    if capability is None:
        assert reason is None  # the interpreter runs every variant
    elif name == "tma_ws_xtile_persistent" and capability < (10, 0):
        assert reason is not None and name in reason and "10.0" in reason
        assert "silently drops" in reason
    elif name in TMA and capability < (9, 0):
        assert reason is not None and name in reason and "9.0" in reason and "TMA" in reason
    elif name == "tma_ws_persistent" and capability != (9, 0):
        assert reason is not None and "runs only on sm_90" in reason and "flattened" in reason
        assert f"sm_{capability[0]}{capability[1]}" in reason
    else:
        assert reason is None


# --- configs ----------------------------------------------------------------------------------


def test_config_table():
    for (family, arch), cfg in CONFIGS.items():
        for size in (cfg.block_m, cfg.block_n, cfg.block_k, cfg.group_m):
            assert size >= 1 and size & (size - 1) == 0, (family, arch, cfg)
        assert cfg.num_warps in (1, 2, 4, 8, 16) and cfg.num_stages >= 1
        assert cfg.programs_per_sm >= 1
        if cfg.epilogue_subtile:
            assert cfg.block_n >= 16 and family != "tma_ws"  # tma_ws.plan refuses it
    for family in ("pointer", "tma", "tma_ws"):
        assert {(family, a) for a in ("sm_90", "default", "interpreter")} <= set(CONFIGS)
    assert configs.arch_of(None) == "interpreter"
    assert configs.arch_of((9, 0)) == "sm_90"
    assert configs.arch_of((10, 0)) == "sm_100"
    assert configs.arch_of((12, 0)) == "sm_120"
    assert configs.arch_of((8, 0)) == configs.arch_of((10, 3)) == "default"
    assert config_for("tma", (9, 0)) is CONFIGS[("tma", "sm_90")]
    assert config_for("tma_ws", (10, 0)) is CONFIGS[("tma_ws", "sm_100")]
    # a family without a row for an arch takes its default row, except in the interpreter
    assert ("pointer", "sm_100") not in CONFIGS
    assert config_for("pointer", (10, 0)) is CONFIGS[("pointer", "default")]
    with pytest.raises(ValueError, match="no config"):
        config_for("cublas", (9, 0))
    configs_without_interpreter = {k: v for k, v in CONFIGS.items() if k != ("tma", "interpreter")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(configs, "CONFIGS", configs_without_interpreter)
        with pytest.raises(ValueError, match="no config for kernel family 'tma' on interpreter"):
            configs.config_for("tma", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CONFIGS[("tma", "sm_90")].block_m = 64  # type: ignore[misc]


def test_shapes_cover_the_edges():
    """The premises the numeric cases rely on, computed from the interpreter config."""
    for family, shapes in (("pointer", SHAPES), ("tma", TMA_SHAPES), ("tma_ws", TMA_SHAPES)):
        cfg = config_for(family, None)
        facts = set()
        for M, N, K in shapes.values():
            tiles_m, tiles_n = triton.cdiv(M, cfg.block_m), triton.cdiv(N, cfg.block_n)
            tiles = tiles_m * tiles_n
            facts |= {
                "M edge" if M % cfg.block_m else "M exact",
                "N edge" if N % cfg.block_n else "N exact",
                "K below BK" if cfg.block_k > K else "K steps",
                "K partial" if K % cfg.block_k else "K exact",
                "tiles % P != 0" if tiles % P else "tiles % P == 0",
                "partial group" if tiles_m % cfg.group_m else "whole groups",
                "many tiles per program" if tiles >= 4 * P else "few tiles",
            }
        assert facts >= {
            "M edge", "N edge", "K below BK", "K steps", "K partial", "K exact",
            "tiles % P != 0", "partial group", "many tiles per program",
        }, facts  # fmt: skip
    assert any(K == 1 for _, _, K in SHAPES.values())
    assert any(M == 1 for M, _, _ in SHAPES.values()) and any(N == 1 for _, N, _ in SHAPES.values())


# --- layouts ----------------------------------------------------------------------------------


def test_layout_of():
    assert layout_of(torch.empty(8, 24)) == "nn"
    assert layout_of(torch.empty(24, 8).T) == "nt"
    # A 1-wide dimension has no meaningful stride: decided by the rule in layout_of's docstring.
    assert layout_of(torch.empty(8, 1)) == "nn"  # strides (1, 1)
    assert layout_of(torch.empty(1, 8).T) == "nn"  # strides (1, 8)
    assert layout_of(torch.empty(1, 8)) == "nn"  # strides (8, 1)
    assert layout_of(torch.empty(8, 1).T) == "nn"  # strides (1, 1)
    assert layout_of(torch.empty(8, 3)[:, :1].T) == "nt"  # K = 1, strides (1, 3)
    assert layout_of(torch.empty(8, 15)[:1, ::3]) == "nt"  # K = 1, strides (15, 3)
    with pytest.raises(ValueError, match=r"strides \(48, 2\)"):
        layout_of(torch.empty(8, 48)[:, ::2])
    with pytest.raises(ValueError, match="2-D"):
        layout_of(torch.empty(8))


# --- plans ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", TRITON)
def test_plan_matches_the_kernel_signature(name, layout):
    """Args then constexprs name every kernel parameter once, in order; fn is a real JIT
    function (the AOT fingerprint compiles it) even though this process may interpret."""
    launch = interp_plan(name, 50, 56, 40, layout)
    assert isinstance(launch.fn, JITFunction)
    names = [arg.name for arg in launch.args] + list(launch.constexprs)
    assert names == launch.fn.arg_names
    assert all(isinstance(arg, (TensorArg, DescArg, ScalarArg)) for arg in launch.args)


@pytest.mark.parametrize(("name", "capability", "num_sms"), plannable(TRITON))
def test_plan_grid_and_config(name, capability, num_sms):
    M = N = 16384
    launch = VARIANTS[name].plan(
        M, N, 128, dtype=torch.float16, layout="nt", capability=capability, num_sms=num_sms
    )
    cfg = config_for(VARIANTS[name].family, capability)
    c = launch.constexprs
    assert (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["GROUP_M"]) == (
        cfg.block_m, cfg.block_n, cfg.block_k, cfg.group_m,
    )  # fmt: skip
    assert (launch.num_warps, launch.num_stages) == (cfg.num_warps, cfg.num_stages)
    tiles = triton.cdiv(M, cfg.block_m) * triton.cdiv(N, cfg.block_n)
    if name in ("tiled", "grouped"):
        assert launch.grid == (tiles,)
        assert c["GROUPED"] is (name == "grouped")
    else:
        assert launch.grid == (min(cfg.programs_per_sm * num_sms, tiles),)
        assert c["NUM_PROGRAMS"] == launch.grid[0]
        if name in TMA_WS:
            assert "GROUPED" not in c  # always GROUP_M order (kernels/tma_ws.py)
        else:
            assert c["GROUPED"] is (name != "persistent")
        assert c["NUM_STAGES"] == cfg.num_stages


@pytest.mark.parametrize("name", [n for n in TRITON if n not in ("tiled", "grouped")])
def test_persistent_grid_never_exceeds_tiles(name):
    launch = interp_plan(name, 16, 32, 16)  # 2 tiles, 3 "SMs"
    assert launch.grid == (2,) and launch.constexprs["NUM_PROGRAMS"] == 2


@pytest.mark.parametrize("name", POINTER)
def test_pointer_plan_strides_follow_layout(name):
    M, N, K = 50, 53, 40
    for layout, b_strides in (("nn", (N, 1)), ("nt", (1, K))):
        args = {arg.name: arg for arg in interp_plan(name, M, N, K, layout).args}
        assert args["b_ptr"] == TensorArg("b_ptr", "b", "fp16", (K, N), b_strides)
        assert (args["stride_bk"].value, args["stride_bn"].value) == b_strides
        assert (args["stride_am"].value, args["stride_ak"].value) == (K, 1)
        assert (args["stride_cm"].value, args["stride_cn"].value) == (N, 1)


@pytest.mark.parametrize("name", HOST_TMA)
def test_tma_plan_descriptors(name):
    M, N, K = 50, 56, 40
    cfg = config_for("tma", None)
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    nn = interp_plan(name, M, N, K, "nn")
    nt = interp_plan(name, M, N, K, "nt")
    assert nn.args[0] == DescArg("a_desc", "a", "fp16", (M, K), (K, 1), (bm, bk))
    assert nn.args[1] == DescArg("b_desc", "b", "fp16", (K, N), (N, 1), (bk, bn))
    assert nt.args[1] == DescArg("b_desc", "b", "fp16", (N, K), (K, 1), (bn, bk), transposed=True)
    assert nn.constexprs["B_TRANSPOSED"] is False and nt.constexprs["B_TRANSPOSED"] is True
    assert nn.args[2] == DescArg("c_desc", "c", "fp16", (M, N), (N, 1), (bm, bn))
    sub = VARIANTS[name].plan(
        M, N, K, dtype="fp16", layout="nn", capability=None, num_sms=P,
        config=dataclasses.replace(cfg, epilogue_subtile=True),
    )  # fmt: skip
    assert sub.args[2].block_shape == (bm, bn // 2) and sub.constexprs["EPILOGUE_SUBTILE"] is True
    assert not nn.scratch and not nt.scratch


@pytest.mark.parametrize("name", TMA_WS)
def test_tma_ws_plan_passes_pointers_for_descriptors_made_in_the_kernel(name):
    """Pointers, sizes and leading strides; the kernel makes the descriptors (last stride 1),
    so the launch needs Triton's scratch allocator. `host_descriptors` is the host-side
    alternative the fingerprint tests compile (Triton 3.6's Hopper pass fails on it)."""
    M, N, K = 50, 56, 40
    nn = interp_plan(name, M, N, K, "nn")
    nt = interp_plan(name, M, N, K, "nt")
    for launch, b_strides in ((nn, (N, 1)), (nt, (1, K))):
        args = {arg.name: arg for arg in launch.args}
        assert args["a"] == TensorArg("a", "a", "fp16", (M, K), (K, 1), tma=True)
        assert args["b"] == TensorArg("b", "b", "fp16", (K, N), b_strides, tma=True)
        assert args["c"] == TensorArg("c", "c", "fp16", (M, N), (N, 1), tma=True)
        assert (args["stride_bk"].value, args["stride_bn"].value) == b_strides
        assert (args["stride_am"].value, args["stride_cm"].value) == (K, N)
        assert launch.scratch and launch.constexprs["HOST_DESCRIPTORS"] is False
        # no num_stages on an unflattened tile loop: Triton 3.9 drops the warp specialization
        assert launch.constexprs["TILE_STAGES"] is None
    assert nn.constexprs["B_TRANSPOSED"] is False and nt.constexprs["B_TRANSPOSED"] is True
    kw = dict(dtype="fp16", capability=(9, 0), num_sms=132)
    host = VARIANTS[name].plan(M, N, K, layout="nt", host_descriptors=True, **kw)
    cfg = config_for("tma_ws", (9, 0))
    assert host.args[1] == DescArg(
        "b", "b", "fp16", (N, K), (K, 1), (cfg.block_n, cfg.block_k), transposed=True
    )
    assert not host.scratch and host.constexprs["HOST_DESCRIPTORS"] is True
    assert [a.name for a in host.args] == [a.name for a in nt.args]
    with pytest.raises(ValueError, match="no epilogue subtiling") as info:
        VARIANTS[name].plan(
            M, N, K, layout="nn", config=dataclasses.replace(cfg, epilogue_subtile=True), **kw
        )
    assert name in str(info.value)


@pytest.mark.parametrize("name", TRITON)
def test_plan_dtype_by_torch_dtype_or_name(name):
    kw = dict(layout="nt", capability=(9, 0), num_sms=132)
    plan = VARIANTS[name].plan
    assert plan(256, 256, 64, dtype=torch.float16, **kw) == plan(256, 256, 64, dtype="fp16", **kw)
    bf16 = plan(256, 256, 64, dtype=torch.bfloat16, **kw)
    assert {arg.dtype for arg in bf16.args if not isinstance(arg, ScalarArg)} == {"bf16"}


BAD_PLANS = {
    "M0": (dict(M=0), ValueError, "M must be a positive int"),
    "K-float": (dict(K=16.0), ValueError, "K must be a positive int"),
    "fp32": (dict(dtype=torch.float32), TypeError, "unsupported dtype"),
    "layout-tn": (dict(layout="tn"), ValueError, "layout must be one of"),
    "no-sms": (dict(num_sms=0), ValueError, "num_sms"),
}


@pytest.mark.parametrize("case", list(BAD_PLANS))
@pytest.mark.parametrize("name", TRITON)
def test_plan_rejects_bad_arguments(name, case):
    override, exc, match = BAD_PLANS[case]
    kw = dict(M=64, N=64, K=64, dtype=torch.float16, layout="nn", capability=(9, 0), num_sms=132)
    kw.update(override)
    with pytest.raises(exc, match=match) as info:
        VARIANTS[name].plan(kw.pop("M"), kw.pop("N"), kw.pop("K"), **kw)
    assert name in str(info.value)


@pytest.mark.parametrize(
    ("shape", "match"),
    [((64, 64, 20), "K to be a multiple of 8"), ((64, 36, 64), "N to be a multiple of 8")],
    ids=["K20", "N36"],
)
@pytest.mark.parametrize("name", TMA)
def test_tma_plan_rejects_unaligned_sizes(name, shape, match):
    with pytest.raises(ValueError, match=match) as info:
        VARIANTS[name].plan(
            *shape, dtype=torch.float16, layout="nn", capability=(9, 0), num_sms=132
        )
    assert name in str(info.value)


@pytest.mark.parametrize("name", TMA)
def test_tma_plan_needs_capability_9(name):
    with pytest.raises(ValueError, match=r"9\.0.*sm_80") as info:
        VARIANTS[name].plan(
            256, 256, 64, dtype=torch.float16, layout="nn", capability=(8, 0), num_sms=108
        )
    assert name in str(info.value)


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", TRITON)
def test_matmul_launches_its_plan(name, layout, monkeypatch):
    """matmul runs plan()'s launch unchanged, bound to the caller's tensors without copies."""
    M, N, K = 50, 56, 40
    seen = []
    real_launch = _host.launch_kernel

    def spy(variant, launch, a, b, c):
        seen.append((launch, _host.bind(variant, launch, a, b, c), c))
        return real_launch(variant, launch, a, b, c)

    monkeypatch.setattr(_host, "launch_kernel", spy)
    a, b = operands(M, N, K, layout)
    VARIANTS[name].call(a, b)
    [(launch, values, c)] = seen
    assert launch == interp_plan(name, M, N, K, layout)
    operand = {"a": a, "b": b, "c": c}
    for arg, value in zip(launch.args, values, strict=True):
        if isinstance(arg, TensorArg):
            assert value is operand[arg.operand]
        elif isinstance(arg, DescArg):
            t = operand[arg.operand]
            assert value.base.data_ptr() == t.data_ptr()  # a view, not a copy
            assert (tuple(value.shape), tuple(value.strides)) == (arg.shape, arg.strides)
            assert tuple(value.block_shape) == arg.block_shape
        else:
            assert value == arg.value  # contiguous tensors: the plan's sizes and strides


def test_scratch_allocator_is_set_once_per_context_and_not_on_import(monkeypatch):
    """Triton keeps its allocator in a ContextVar, so a new context (a new thread) starts
    without one: `ensure_scratch_allocator` sets it once in each. Importing `kernels` (this
    module did) sets nothing."""
    assert triton_allocation._allocator.get() is triton_allocation._NULL_ALLOCATOR
    calls = []
    monkeypatch.setattr(triton, "set_allocator", calls.append)

    def twice() -> None:
        _host.ensure_scratch_allocator()
        _host.ensure_scratch_allocator()

    contextvars.Context().run(twice)
    assert calls == [_host._scratch]
    thread = threading.Thread(target=twice)
    thread.start()
    thread.join()
    assert calls == [_host._scratch] * 2


@pytest.mark.parametrize("interpreting", [False, True], ids=["gpu", "interpreter"])
@pytest.mark.parametrize("name", ["tma_ws_persistent", "tma_xtile_persistent"])
def test_launch_sets_the_allocator_for_scratch_launches_on_the_gpu(name, interpreting, monkeypatch):
    """In-kernel descriptors need Triton's allocator at launch on a GPU; host descriptors and
    the interpreter (descriptors emulated in NumPy) do not."""
    calls, launched = [], []
    monkeypatch.setattr(_host, "ensure_scratch_allocator", lambda: calls.append(name))
    monkeypatch.setattr(_host, "interpreting", lambda: interpreting)

    class Launched:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(grid)

    monkeypatch.setattr(_host, "launchable", lambda fn: Launched())
    launch = interp_plan(name, 50, 56, 40, "nt")
    a, b = operands(50, 56, 40, "nt")
    _host.launch_kernel(name, launch, a, b, poisoned(50, 56, torch.float16))
    assert launched == [launch.grid]
    assert launch.scratch is (name in TMA_WS)
    assert calls == ([name] if launch.scratch and not interpreting else [])


# --- numbers under the interpreter ------------------------------------------------------------


@pytest.mark.interpreter
@pytest.mark.parametrize(("name", "layout", "shape"), numeric_cases())
def test_matmul_fp16(name, layout, shape):
    run_case(name, *shape, layout, torch.float16)


@pytest.mark.interpreter
@pytest.mark.parametrize("K", [16, 32, 104], ids=lambda k: f"K{k}")
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", [*TWINS, *TWINS.values()])
def test_cross_tile_k_steps(name, layout, K):
    """1, 2 and 7 K steps per tile (the last one partial), 16 tiles over 3 programs: the tile
    boundary of a flattened loop comes after every, every other and every seventh step."""
    M, N = 50, 56
    launch = interp_plan(name, M, N, K, layout)
    tiles = triton.cdiv(M, launch.constexprs["BLOCK_M"]) * triton.cdiv(
        N, launch.constexprs["BLOCK_N"]
    )
    assert tiles % launch.grid[0] != 0 and tiles >= 4 * launch.grid[0]
    run_case(name, M, N, K, layout, torch.float16)


@pytest.mark.interpreter
@pytest.mark.parametrize("flatten", [False, True], ids=["swz", "xtile"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tma_epilogue_subtile(layout, flatten):
    from kernels import tma

    M, N, K = 50, 56, 40
    cfg = dataclasses.replace(config_for("tma", None), epilogue_subtile=True)
    launch = tma.plan(
        M, N, K, dtype=torch.float16, layout=layout, capability=None, num_sms=P,
        variant="subtile", flatten=flatten, config=cfg,
    )  # fmt: skip
    a, b = operands(M, N, K, layout, seed=_seed("subtile", layout, flatten))
    c = _host.launch_kernel("subtile", launch, a, b, poisoned(M, N, torch.float16))
    check_result(c, a, b, TOL[torch.float16])


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", STABLE_NAMES)
def test_matmul_bf16(name, layout, bf16_interpreter_dot):
    run_case(name, 50, 56, 40, layout, torch.bfloat16)


@pytest.mark.interpreter
@pytest.mark.xfail(reason="Triton 3.6 interpreter: bf16 tl.dot multiplies raw bits", strict=True)
def test_interpreter_bf16_dot_is_still_broken():
    """When this passes, Triton fixed the bug: drop the `bf16_interpreter_dot` workaround."""
    run_case("tiled", 16, 16, 16, "nn", torch.bfloat16)


@pytest.mark.interpreter
@pytest.mark.parametrize("name", STABLE_NAMES)
def test_matmul_allocates_its_output(name):
    a, b = operands(33, 40, 24, "nt", seed=_seed("alloc", name))
    c = VARIANTS[name].call(a, b)
    assert c.device == a.device and c.is_contiguous()
    check_result(c, a, b, TOL[torch.float16])


@pytest.mark.interpreter
@pytest.mark.parametrize("name", STABLE_NAMES)
def test_matmul_strided_operands(name):
    """A with a padded row stride, C column-major (pointer kernels: any strides; TMA: padded
    rows that stay 16-byte aligned, C row-major)."""
    M, N, K = 37, 48, 40
    g = torch.Generator().manual_seed(_seed("strided", name))
    a = torch.randn(M, K + 8, generator=g).half()[:, :K]
    b = torch.randn(K, N, generator=g).half()
    out = (
        poisoned(N, M, torch.float16).T
        if name not in TMA
        else poisoned(M, N + 8, torch.float16)[:, :N]
    )  # TMA_WS: the kernel's descriptors take the padded strides from the tensors
    c = VARIANTS[name].call(a, b, out=out)
    check_result(c, a, b, TOL[torch.float16])


# --- errors -----------------------------------------------------------------------------------


def _half(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.float16)


BAD_OPERANDS = {
    "inner-mismatch": (lambda: (_half(8, 16), _half(12, 8), None), ValueError, "inner dimensions"),
    "a-1d": (lambda: (_half(16), _half(16, 8), None), ValueError, "a must be 2-D"),
    "b-3d": (lambda: (_half(8, 16), _half(2, 16, 8), None), ValueError, "b must be 2-D"),
    "fp32": (lambda: (_half(8, 16).float(), _half(16, 8).float(), None), TypeError, "unsupported dtype"),
    "int8": (lambda: (_half(8, 16).to(torch.int8), _half(16, 8).to(torch.int8), None), TypeError, "unsupported dtype"),
    "dtypes-differ": (lambda: (_half(8, 16), _half(16, 8).bfloat16(), None), TypeError, "dtypes differ"),
    "devices-differ": (lambda: (_half(8, 16), _half(16, 8).to("meta"), None), ValueError, "different devices"),
    "empty-K": (lambda: (_half(8, 0), _half(0, 8), None), ValueError, "empty problem"),
    "not-a-tensor": (lambda: (np.zeros((8, 16), np.float16), _half(16, 8), None), TypeError, "torch.Tensor"),
    "out-shape": (lambda: (_half(8, 16), _half(16, 8), _half(8, 9)), ValueError, "out has shape"),
    "out-dtype": (lambda: (_half(8, 16), _half(16, 8), _half(8, 8).bfloat16()), TypeError, "out is torch.bfloat16"),
    "out-device": (lambda: (_half(8, 16), _half(16, 8), _half(8, 8).to("meta")), ValueError, "out is on meta"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_OPERANDS))
@pytest.mark.parametrize("name", STABLE_NAMES)
def test_matmul_rejects_bad_operands(name, case):
    make, exc, match = BAD_OPERANDS[case]
    a, b, out = make()
    with pytest.raises(exc, match=match) as info:
        VARIANTS[name].call(a, b, out=out)
    assert name in str(info.value)


@pytest.mark.interpreter
@pytest.mark.parametrize("name", TRITON)
def test_matmul_rejects_b_in_neither_layout(name):
    a, b = _half(8, 16), _half(16, 32)[:, ::2]
    with pytest.raises(ValueError, match=r"strides \(32, 2\)") as info:
        VARIANTS[name].call(a, b)
    assert name in str(info.value)


@pytest.mark.parametrize("name", TRITON)
def test_cpu_tensors_need_the_interpreter(name, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match=r"CUDA device.*TRITON_INTERPRET") as info:
        VARIANTS[name].call(_half(8, 16), _half(16, 8))
    assert name in str(info.value)


def test_torch_runs_on_cpu_without_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    a, b = operands(9, 10, 11, "nt", seed=1)
    check_result(VARIANTS["torch"].call(a, b), a, b, TOL[torch.float16])


@pytest.mark.parametrize("name", TMA)
def test_tma_needs_capability_9(name, monkeypatch):
    """On a pre-Hopper GPU the TMA variants refuse before launching anything (the flattened
    warp-specialized one needs Blackwell)."""
    monkeypatch.setattr(_host, "device_facts", lambda variant, device: ((8, 0), 108))
    need = r"10\.0" if name == "tma_ws_xtile_persistent" else r"9\.0"
    with pytest.raises(ValueError, match=need) as info:
        VARIANTS[name].call(_half(64, 64), _half(64, 64))
    assert name in str(info.value)


@pytest.mark.parametrize(
    ("name", "capability"),
    [
        ("tma_ws_persistent", (10, 0)),
        ("tma_ws_persistent", (12, 0)),
        ("tma_ws_xtile_persistent", (9, 0)),
    ],
)
def test_warp_specialized_variants_refuse_gpus_where_they_are_not(name, capability, monkeypatch):
    """matmul refuses before planning or compiling, with the registry's reason."""
    monkeypatch.setattr(_host, "device_facts", lambda variant, device: (capability, 132))
    with pytest.raises(ValueError) as info:
        VARIANTS[name].call(_half(64, 64), _half(64, 64))
    assert str(info.value) == VARIANTS[name].unsupported_reason(capability)


def _misaligned(M: int, K: int) -> torch.Tensor:
    return torch.zeros(M * K + 1, dtype=torch.float16)[1:].view(M, K)


BAD_TMA = {
    "N-unaligned": (lambda: (_half(32, 32), _half(32, 20), None), "N to be a multiple of 8"),
    "K-unaligned": (lambda: (_half(32, 20), _half(20, 32), None), "K to be a multiple of 8"),
    "a-transposed": (lambda: (_half(32, 32).T, _half(32, 32), None), "a contiguous in its last"),
    "a-row-stride": (lambda: (_half(32, 36)[:, :32], _half(32, 32), None), "a's leading strides"),
    "a-base": (lambda: (_misaligned(32, 32), _half(32, 32), None), "a's data pointer"),
    "bt-row-stride": (lambda: (_half(32, 32), _half(32, 36)[:, :32].T, None), r"b\.T's leading"),
    "out-column-major": (lambda: (_half(32, 32), _half(32, 32), _half(32, 32).T), "c contiguous"),
}  # fmt: skip


@pytest.mark.interpreter
@pytest.mark.parametrize("case", list(BAD_TMA))
@pytest.mark.parametrize("name", TMA)
def test_tma_rejects_what_tma_cannot_take(name, case):
    make, match = BAD_TMA[case]
    a, b, out = make()
    with pytest.raises(ValueError, match=match) as info:
        VARIANTS[name].call(a, b, out=out)
    assert name in str(info.value)


@pytest.mark.interpreter
@pytest.mark.parametrize("name", POINTER)
def test_pointer_kernels_refuse_int32_overflow(name):
    """Offsets are int32 in the pointer kernels: refuse rather than wrap around (meta tensors:
    the check runs before anything is read)."""
    a = torch.empty((2, 2), dtype=torch.float16, device="meta").as_strided((2, 2), (2**31, 1))
    b = torch.empty((2, 2), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32") as info:
        VARIANTS[name].call(a, b)
    assert name in str(info.value)


# --- negative fixtures (kernels.testing) and the checker itself -------------------------------


@pytest.mark.interpreter
@pytest.mark.parametrize("K", [40, 16, 1], ids=lambda k: f"K{k}")
@pytest.mark.parametrize(
    "name", ["torch", "tiled", "xtile_persistent", "tma_xtile_persistent", "tma_ws_persistent"]
)
def test_wrong_variant_is_caught(name, K):
    """Fully written, finite and plausible, yet the checker above rejects it."""
    if name in TMA and K % 8:
        K = 8
    wrong = wrong_variant(name)
    assert wrong.name == name and wrong.plan is VARIANTS[name].plan
    a, b = operands(50, 56, K, "nt", seed=_seed("wrong", name, K))
    c = wrong.call(a, b, out=poisoned(50, 56, torch.float16))
    assert torch.isfinite(c).all()
    with pytest.raises(AssertionError, match="relative error"):
        check_result(c, a, b, TOL[torch.float16])


@pytest.mark.interpreter
def test_unwritten_tile_is_caught():
    a, b = operands(50, 56, 40, "nn", seed=3)
    out = poisoned(50, 56, torch.float16)
    VARIANTS["swizzle_persistent"].call(a[:48], b, out=out[:48])  # last (partial) tile row
    with pytest.raises(AssertionError, match="unwritten"):
        check_result(out, a, b, TOL[torch.float16])


@pytest.mark.interpreter
@pytest.mark.parametrize(("name", "of"), [(x, twin) for x, twin in TWINS.items()])
def test_impostor_variant(name, of):
    imp = impostor_variant(name, of=of)
    assert (imp.name, imp.twin_of, imp.family) == (name, of, VARIANTS[name].family)
    assert interp_plan(of, 50, 56, 40) == imp.plan(
        50, 56, 40, dtype=torch.float16, layout="nn", capability=None, num_sms=P
    )
    assert (
        imp.plan(50, 56, 40, dtype="fp16", layout="nn", capability=None, num_sms=P).constexprs[
            "FLATTEN"
        ]
        is False
    )
    a, b = operands(50, 56, 40, "nn", seed=4)
    check_result(imp.call(a, b), a, b, TOL[torch.float16])


def test_with_variants():
    imp = impostor_variant("xtile_persistent", of="swizzle_persistent")
    registry = with_variants({"xtile_persistent": imp})
    assert registry["xtile_persistent"] is imp and VARIANTS["xtile_persistent"] is not imp
    assert list(registry) == list(VARIANTS)
    assert registry is not VARIANTS
    with pytest.raises(ValueError, match="named"):
        with_variants({"tiled": imp})


# --- both modes in one process ----------------------------------------------------------------


@pytest.mark.aot
@pytest.mark.interpreter
def test_interpreter_at_import_still_compiles_for_the_gpu():
    """With TRITON_INTERPRET=1 set before triton is imported (so triton.language's own jit
    functions are interpreter-only), the plans still compile for sm_90 and still interpret:
    the kernels use no triton.language jit functions (see kernels/_device.py)."""
    script = textwrap.dedent(
        """
        import torch, triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from kernels import VARIANTS
        from kernels.launch import DescArg, TensorArg

        for name in ("tiled", "xtile_persistent", "tma_xtile_persistent", "tma_ws_persistent"):
            v = VARIANTS[name]
            launch = v.plan(1024, 1024, 256, dtype=torch.float16, layout="nt",
                            capability=(9, 0), num_sms=132)
            sig, attrs = {}, {}
            for i, arg in enumerate(launch.args):
                if isinstance(arg, TensorArg):
                    sig[arg.name] = "*" + arg.dtype
                    attrs[(i,)] = [["tt.divisibility", 16]]
                elif isinstance(arg, DescArg):
                    sig[arg.name] = f"tensordesc<{arg.dtype}{list(arg.block_shape)}>"
                elif arg.value == 1:
                    sig[arg.name] = "constexpr"
                else:
                    sig[arg.name] = "i32"
                    attrs[(i,)] = [["tt.divisibility", 16]]
            consts = {a.name: 1 for a in launch.args if sig[a.name] == "constexpr"}
            consts.update(launch.constexprs)
            sig.update(dict.fromkeys(launch.constexprs, "constexpr"))
            src = ASTSource(fn=launch.fn, signature=sig, constexprs=consts, attrs=attrs)
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": launch.num_warps,
                                        "num_stages": launch.num_stages})
            assert "warp_group_dot" in k.asm["ttgir"], name
            a = torch.randn(40, 24).half(); b = torch.randn(24, 48).half()
            c = v.call(a, b)
            assert (c.float() - a.float() @ b.float()).abs().max() < 0.05, name
        print("ok")
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
