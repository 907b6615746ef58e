"""Test-only variants for proving the gate trips: a slowed kernel, an impostor, a wrong kernel.

Selected with `--inject` (never by default); a run with any injection says so in its
machine_info, and the gate refuses to rebaseline from it.

    --inject slow=swizzle_persistent:0.10     real kernel, then ~10 % of its time spinning on the GPU
    --inject impostor=xtile_persistent:swizzle_persistent   the swizzle kernel under the cross-tile name
    --inject wrong=tiled                      a kernel that returns wrong numbers
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tilegate.harness.timing import event_time


class SlowedVariant:
    """The base variant followed by `torch.cuda._sleep` worth `fraction` of its own time.

    The sleep length is calibrated per problem shape on the first call (that call is the
    correctness check, outside the timed rounds): the base kernel is timed with CUDA events and
    the spin loop's cycles per second are measured once.
    """

    def __init__(self, base: Any, fraction: float) -> None:
        if not 0 < fraction < 10:
            raise ValueError(f"slow fraction must be in (0, 10), got {fraction}")
        self.base = base
        self.fraction = fraction
        self.injected = f"slow:{fraction}"  # tilegate.harness.measure folds it into the identity
        self._cycles: dict[tuple[Any, ...], int] = {}
        self._cycles_per_s: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def matmul(self, a: Any, b: Any, out: Any = None) -> Any:
        import torch

        key = (tuple(a.shape), tuple(b.shape), tuple(b.stride()), a.dtype)
        if key not in self._cycles:
            if self._cycles_per_s is None:
                probe = 2_000_000
                self._cycles_per_s = probe / event_time(lambda: torch.cuda._sleep(probe))
            kernel_s = event_time(lambda: self.base.matmul(a, b, out=out))
            self._cycles[key] = max(1, int(self.fraction * kernel_s * self._cycles_per_s))
        c = self.base.matmul(a, b, out=out)
        torch.cuda._sleep(self._cycles[key])
        return c


def parse_injections(specs: list[str]) -> list[tuple[str, str, str]]:
    """['slow=x:0.1'] -> [('slow', 'x', '0.1')]; raise ValueError naming a malformed spec."""
    parsed = []
    for spec in specs:
        kind, _, rest = spec.partition("=")
        name, _, arg = rest.partition(":")
        if kind not in {"slow", "impostor", "wrong"} or not name or (kind != "wrong" and not arg):
            raise ValueError(
                f"--inject {spec!r}: expected slow=VARIANT:FRACTION, impostor=NAME:REAL_VARIANT or wrong=VARIANT"
            )
        parsed.append((kind, name, arg))
    return parsed


def apply_injections(registry: Mapping[str, Any], specs: list[str]) -> dict[str, Any]:
    """A new registry with the injected test-only variants in place of the named ones."""
    from kernels import testing

    out = dict(registry)
    for kind, name, arg in parse_injections(specs):
        if name not in registry:
            raise ValueError(f"--inject {kind}={name}: no variant {name!r} in kernels.VARIANTS")
        if kind == "slow":
            out[name] = SlowedVariant(registry[name], float(arg))
        elif kind == "impostor":
            if arg not in registry:
                raise ValueError(f"--inject impostor={name}:{arg}: no variant {arg!r}")
            out[name] = testing.impostor_variant(name, arg)
        else:
            out[name] = testing.wrong_variant(name)
    return out
