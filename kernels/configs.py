"""Launch configurations per kernel family and GPU architecture: the one place they live.

`CONFIGS[(family, arch)]` holds one `Config`. Every variant of a family uses the same config on a
given GPU, so a cross-tile variant and its twin differ only in the tile loop (the ratio the gate
watches). Edit the table to tune; `config_for` picks the row for a capability, or the family's
"default" row for an architecture the family has no row for.
"""

from __future__ import annotations

from dataclasses import dataclass

# The interpreter has no SMs; this many "SMs" (programs) is deliberately small and divides few
# tile counts, so each persistent program loops over several tiles and some get one fewer.
INTERPRETER_NUM_SMS = 3


@dataclass(frozen=True)
class Config:
    """Tile sizes, tile order, warps, pipeline depth and programs per SM for one family on one GPU."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int  # rows of tiles per GROUP_M swizzle group (grouped / swizzle variants)
    num_warps: int
    num_stages: int  # software-pipeline depth of the innermost (K, or flattened) loop
    programs_per_sm: int  # persistent grids: programs = programs_per_sm x SMs (capped at tiles)
    epilogue_subtile: bool = False  # TMA only: store C as two BLOCK_N / 2 halves (tutorial 09)


# family: "pointer" (tiled, grouped and the pointer persistent kernels), "tma" or "tma_ws" (the
# warp-specialized TMA kernels, kernels/tma_ws.py).
# arch: "sm_90" (H100 / H200), "sm_100" (B200), "sm_120" (RTX 50xx), "default" (any other GPU, and
# an arch a family has no row for), "interpreter".
CONFIGS: dict[tuple[str, str], Config] = {
    # H200, tuned by measurement (docs/tuning-sm90.md, `python tools/tune.py`). Pointer: one
    # 128x256x64 program per SM (3 stages take ~144 KiB of shared memory). TMA: two 128x128x64
    # programs per SM with the epilogue stored in halves (3 x 32 KiB of stages + 16 KiB of C each,
    # so two fit in 228 KiB): the fastest of 30+ candidates at K = 128, where writing C is most of
    # the work (still 1-2 % behind cuBLAS there: docs/tuning-sm90.md says why).
    ("pointer", "sm_90"): Config(128, 256, 64, 8, num_warps=8, num_stages=3, programs_per_sm=1),
    ("tma", "sm_90"): Config(
        128, 128, 64, 8, num_warps=4, num_stages=3, programs_per_sm=2, epilogue_subtile=True
    ),
    # H200: 256x128x64 w4 s3, one program per SM, 0.8-2.1 % faster than the calibration's
    # 128x256x64 in an A/B on the H200 (docs/tuning-sm90.md, "Chosen"). 4 warps: with 8, Triton
    # 3.6 silently drops the warp specialization. Compiled: a 4-warp TMA producer and two 4-warp
    # MMA consumers, each with a 128 x 128 half of the tile; 208 KiB of shared memory (3 stages
    # of A and B, and C).
    ("tma_ws", "sm_90"): Config(256, 128, 64, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    # B200 (only the flattened, cross-tile kernel is warp-specialized there in Triton 3.6): the
    # first sm_90 tile (128x256x64), untuned (no B200 to measure on); 208 KiB of shared memory
    # of 227, no spills (AOT).
    ("tma_ws", "sm_100"): Config(128, 256, 64, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    # RTX 5090: 99 KiB of shared memory per block; 128x256 tiles spill and do not fit. Untuned,
    # 80 KiB and no spills (AOT).
    ("tma_ws", "sm_120"): Config(128, 128, 32, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    ("tma_ws", "default"): Config(128, 128, 64, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    # RTX 5090, the seed write-up's config (340 programs = 2 x 170 SMs). TMA on sm_120 is untuned.
    ("pointer", "sm_120"): Config(128, 64, 32, 8, num_warps=4, num_stages=4, programs_per_sm=2),
    ("tma", "sm_120"): Config(128, 64, 32, 8, num_warps=4, num_stages=4, programs_per_sm=2),
    # Anything else: conservative tiles that fit the shared memory of every GPU since sm_80.
    ("pointer", "default"): Config(128, 128, 32, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    ("tma", "default"): Config(128, 128, 64, 8, num_warps=4, num_stages=3, programs_per_sm=1),
    # CPU interpreter: small tiles so tiny odd shapes still have many tiles and several K steps;
    # GROUP_M = 2 so grouping reorders tiles and leaves a partial last group. Warps and stages
    # are ignored by the interpreter, except that num_stages reaches `tl.range`.
    ("pointer", "interpreter"): Config(16, 16, 16, 2, num_warps=1, num_stages=2, programs_per_sm=1),
    ("tma", "interpreter"): Config(16, 16, 16, 2, num_warps=1, num_stages=2, programs_per_sm=1),
    ("tma_ws", "interpreter"): Config(16, 16, 16, 2, num_warps=1, num_stages=2, programs_per_sm=1),
}


def arch_of(capability: tuple[int, int] | None) -> str:
    """The `CONFIGS` arch key for a CUDA capability; None (no GPU) is the interpreter."""
    if capability is None:
        return "interpreter"
    major, minor = capability
    return {(9, 0): "sm_90", (10, 0): "sm_100", (12, 0): "sm_120"}.get((major, minor), "default")


def config_for(family: str, capability: tuple[int, int] | None) -> Config:
    """The config of `family` ("pointer", "tma", "tma_ws") on a GPU of `capability` (None:
    interpreter): its row for that arch, else its "default" row (never for the interpreter)."""
    arch = arch_of(capability)
    for key in ((family, arch), (family, "default")):
        if key in CONFIGS and (key[1] == arch or arch != "interpreter"):
            return CONFIGS[key]
    raise ValueError(f"no config for kernel family {family!r} on {arch}")
