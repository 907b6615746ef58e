"""The correctness check: the default metric, a declared `Benchmark.error`, tuple outputs."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tilegate.declare import Axis, Benchmark, Profile, Variant  # noqa: E402
from tilegate.harness.correctness import check_call, check_output, relative_error  # noqa: E402


def test_default_metric_is_relative_frobenius_max_over_a_tuple() -> None:
    ref = (torch.ones(4, dtype=torch.float64), torch.full((2,), 100.0, dtype=torch.float64))
    # the small output 10 % off, the large one exact: pooled norms would say ~0.2 %
    got = (torch.full((4,), 1.1), torch.full((2,), 100.0))
    assert relative_error(got, ref) == pytest.approx(0.1)
    assert relative_error(got[0], ref[0]) == pytest.approx(0.1)
    assert not check_output(got, ref, 0.05).correct
    assert check_output(got, ref, 0.2).correct
    nan = (torch.full((4,), math.inf), torch.full((2,), 100.0))
    assert not check_output(nan, ref, 1e9).correct


def test_declared_error_replaces_the_metric_and_sees_params() -> None:
    seen = []

    def max_abs(out, ref, params):
        seen.append(dict(params))
        return float((out - ref).abs().max())

    ref = torch.zeros(3, dtype=torch.float64)
    got = torch.tensor([0.0, 0.5, 0.0])
    out = check_call(lambda: got, ref, 0.4, error=max_abs, params={"n": 3})
    assert (out.correct, out.rel_err) == (False, 0.5)
    assert seen == [{"n": 3}]
    assert check_output(got, ref, 0.6, error=max_abs, params={"n": 3}).correct
    # structure is checked before the metric runs
    bad = check_output(torch.zeros(4), ref, 1.0, error=max_abs, params={"n": 3})
    assert bad.error and "shape" in bad.error and len(seen) == 2


def test_measurer_uses_the_benchmarks_error() -> None:
    from tilegate.cases import build_cases
    from tilegate.harness.measure import GroupMeasurer

    def make(params, inputs):
        return lambda: inputs + 0.5  # off by 0.5 everywhere: relative error inf against zeros

    bench = Benchmark(
        name="toy",
        variants=(Variant("ref", make, reference=True),),
        profiles=(Profile("p", (Axis("n", (4,)),)),),
        inputs=lambda params, device, seed: torch.zeros(params["n"]),
        reference_output=lambda params, inputs: torch.zeros(params["n"], dtype=torch.float64),
        tolerance=lambda params: 0.6,
        error=lambda out, ref, params: float((out - ref).abs().max()),
    )

    class Timer:
        from tilegate.harness.timing import TimerConfig

        config = TimerConfig(rounds=2)

        def warm(self, fns, seconds, pairs=None):
            return 1e-3

        def time(self, fns, rounds=None, pairs=None, **_):
            return {n: [1e-3] * rounds for n in fns}

    cases = build_cases(bench.profile("p"), ["ref"])
    m = GroupMeasurer(
        benchmark=bench, registry=bench.variant_map, timer=Timer(), device="cpu",
        capability=None, groups={cases[0].group: cases}, warmup_first_s=0.0,
    )  # fmt: skip
    res = m.result(cases[0])
    assert res.correct is True and res.rel_err == pytest.approx(0.5)
