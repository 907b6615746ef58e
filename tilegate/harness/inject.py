"""Test-only injections (`--inject`): a variant slowed by a known fraction, an impostor running
another variant under a name, a wrong one. What the gate's own tests prove it trips on; applied
in the process that measures the head (tilegate.plugin, tilegate.harness.worker)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any


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


def _slowed(variant: Any, fraction: float) -> Any:
    """`variant` whose call is followed by `torch.cuda._sleep` worth `fraction` of its own time,
    calibrated on its first call (the correctness check, outside the timed rounds)."""
    if not 0 < fraction < 10:
        raise ValueError(f"slow fraction must be in (0, 10), got {fraction}")

    def make(params: Mapping[str, Any], inputs: Any) -> Callable[[], Any]:
        import torch

        from tilegate.harness.timing import event_time

        call = variant.make(params, inputs)
        cycles: list[int] = []

        def slowed() -> Any:
            if not cycles:
                probe = 2_000_000
                per_s = probe / event_time(lambda: torch.cuda._sleep(probe))
                cycles.append(max(1, int(fraction * event_time(call) * per_s)))
            out = call()
            torch.cuda._sleep(cycles[0])
            return out

        slowed.injected = f"slow:{fraction}"  # type: ignore[attr-defined]
        return slowed

    return dataclasses.replace(variant, make=make)


def apply_injections(bench: Any, registry: Mapping[str, Any], specs: list[str]) -> dict[str, Any]:
    """A new registry with the injected test-only variants in place of the named ones."""
    out = dict(registry)
    for kind, name, arg in parse_injections(specs):
        if name not in registry:
            raise ValueError(f"--inject {kind}={name}: no variant {name!r} in {bench.name}")
        if kind == "slow":
            out[name] = _slowed(registry[name], float(arg))
        elif kind == "impostor":
            if arg not in registry:
                raise ValueError(f"--inject impostor={name}:{arg}: no variant {arg!r}")
            out[name] = dataclasses.replace(
                registry[arg],
                name=name,
                twin_of=registry[name].twin_of,
                description=f"IMPOSTOR: runs {arg} under the name {name}",
            )
        else:
            if bench.wrong is None:
                raise ValueError(
                    f"--inject wrong={name}: benchmark {bench.name} declares no `wrong`"
                )
            out[name] = bench.wrong(registry[name])
    return out
