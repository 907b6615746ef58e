"""The GPUs' peaks, and a case's percent of the bound its declared work gives.

A row, keyed by the GPU's slug (tilegate.harness.device.slugify): HBM (or GDDR) GB/s and dense
tensor-core TFLOP/s per precision (fp32: the non-tensor rate; dense: the datasheets' "with
sparsity" figures halved). `[tool.tilegate] peaks` adds or overrides rows; the run records the
row it used (machine_info.tilegate.peaks). The bound of a case's work (tilegate.declare.Work):
bytes -> the time at peak bandwidth, FLOPs -> at its `dtype`'s peak, both -> the roofline (the
larger time). Its percent: that time over the measured median. No row, dtype peak or work: none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilegate.errors import InputError

KEYS = ("hbm_gbs", "fp16_tflops", "bf16_tflops", "fp8_tflops", "tf32_tflops", "fp32_tflops")


def _row(gbs: float, fp16: float, fp8: float | None, tf32: float, fp32: float) -> dict[str, float]:
    row = {"hbm_gbs": gbs, "fp16_tflops": fp16, "bf16_tflops": fp16, "tf32_tflops": tf32}
    return row | {"fp32_tflops": fp32} | ({"fp8_tflops": fp8} if fp8 else {})


TABLE: dict[str, dict[str, float]] = {
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (sparsity figures halved)
    "nvidia-h100-80gb-hbm3": _row(3350, 989.5, 1979, 494.5, 67),
    # the same datasheet, H100 PCIe column
    "nvidia-h100-pcie": _row(2000, 756, 1513, 378, 51),
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column
    "nvidia-h200": _row(4800, 989.5, 1979, 494.5, 67),
    # NVIDIA HGX B200 datasheet, per GPU (sparsity figures halved)
    "nvidia-b200": _row(7700, 2250, 4500, 1100, 75),
    # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (no FP8)
    "nvidia-a100-sxm4-80gb": _row(2039, 312, None, 156, 19.5),
    # NVIDIA RTX Blackwell GPU architecture whitepaper, GeForce RTX 5090 (FP32 accumulate)
    "nvidia-geforce-rtx-5090": _row(1792, 209.5, 419, 104.8, 104.8),
    # NVIDIA L40S datasheet
    "nvidia-l40s": _row(864, 362.05, 733, 183, 91.6),
    # AMD Instinct MI300X accelerator datasheet (dense matrix rates)
    "amd-instinct-mi300x": _row(5300, 1307.4, 2614.9, 653.7, 163.4),
}

_PRECISION = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32"}
HOW_TO_ADD = (
    'add its row to pyproject.toml: [tool.tilegate] peaks = {{"{slug}" = {{hbm_gbs = ..., '
    "fp16_tflops = ...}}}} (its datasheet's dense figures; keys: " + ", ".join(KEYS) + ")"
)


def check(peaks: Any, where: Any) -> dict[str, dict[str, float]]:
    """`[tool.tilegate] peaks`, validated: {slug: {key: positive number}}; InputError naming
    `where` (its pyproject.toml) and what is wrong."""
    ok = isinstance(peaks, dict) and all(
        isinstance(row, dict)
        and row
        and all(
            k in KEYS and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
            for k, v in row.items()
        )
        for row in peaks.values()
    )
    if not ok:
        raise InputError(
            f"{where}: [tool.tilegate] peaks = {peaks!r}: expected a table of GPU slugs, each "
            f"a table of positive numbers named {', '.join(KEYS)}"
        )
    return {str(s): {k: float(v) for k, v in row.items()} for s, row in peaks.items()}


def lookup(slug: str, overrides: Mapping[str, Mapping[str, float]]) -> dict[str, float] | None:
    """The GPU's row: the table's, each key a project's override replaces; None: unknown."""
    row = {**TABLE.get(slug, {}), **overrides.get(slug, {})}
    return row or None


def row_of(env: Any) -> Mapping[str, float] | None:
    """The row a run's percentages use: the one it recorded, else (a file written before it
    recorded one) the table's for its GPU."""
    return env.peaks if env.peaks is not None else TABLE.get(env.gpu.slug)


def percent(row: Any, peaks: Mapping[str, float] | None) -> tuple[float, str] | None:
    """(fraction of the bound, which bound) of a results row (its tflops, gbps, work_dtype)."""
    if not peaks:
        return None
    name = str(row.work_dtype or "").removeprefix("torch.")
    name = _PRECISION.get(name, "fp8" if name.startswith("float8") else name)
    parts = []
    if row.gbps and peaks.get("hbm_gbs"):
        parts.append((row.gbps / peaks["hbm_gbs"], "bandwidth"))
    if row.tflops and peaks.get(f"{name}_tflops"):
        parts.append((row.tflops / peaks[f"{name}_tflops"], f"{name} compute"))
    if not parts:
        return None
    frac, bound = max(parts)
    return frac, (f"roofline, {bound}-bound" if len(parts) == 2 else bound)
