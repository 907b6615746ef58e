"""Matmul kernel variants: the registry (`kernels.registry`) and what the variants share.

    from kernels import VARIANTS
    c = VARIANTS["xtile_persistent"].call(a, b)

This package is the code tilegate measures ([tool.tilegate] source); how it is measured is
perf_tests/ (the protocol). This directory is this repository's, not part of the tilegate wheel.
"""

from ._host import DTYPES, LAYOUTS, layout_of
from .configs import CONFIGS, Config, config_for
from .launch import Arg, DescArg, KernelLaunch, ScalarArg, TensorArg
from .registry import DECLARED, REFERENCE, REGISTRY, VARIANTS, Variant

__all__ = [
    "CONFIGS",
    "DECLARED",
    "DTYPES",
    "LAYOUTS",
    "REFERENCE",
    "REGISTRY",
    "VARIANTS",
    "Arg",
    "Config",
    "DescArg",
    "KernelLaunch",
    "ScalarArg",
    "TensorArg",
    "Variant",
    "config_for",
    "layout_of",
]
