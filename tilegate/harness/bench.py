"""The adapter to pytest-benchmark's private API: the one place tilegate touches it.

pytest-benchmark times with a host clock, which for GPU work measures the launch queue. Its
stats object takes samples from any source, so the suite hands it the device times it measured
itself: `benchmark._make_stats(1)` gives the fixture a stats object for 1 iteration per round,
and `benchmark._mode` (which the plugin checks to tell a used fixture from an unused one) names
the timer. Both are private; tests/test_bench_adapter.py pins their behaviour on the versions
tilegate supports (5.2.3 on the GPU image, 5.3.1 on the CPU), run by `nox -s bench_adapter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MODE = "tilegate device timer"


def record_device_samples(benchmark: Any, samples_s: Sequence[float]) -> None:
    """Make `samples_s` (seconds per call, one per round) this benchmark's rounds."""
    stats = benchmark._make_stats(1)
    benchmark._mode = MODE
    for sample in samples_s:
        stats.update(sample)


def measure_case(case: Any, perf_run: Any, benchmark: Any) -> None:
    """The body of a protocol's test: the case's correctness check, then its device times as
    this benchmark's rounds; a skip or a failure with the measurer's reason.

        def test_matmul(tilegate_case, perf_run, benchmark):
            measure_case(tilegate_case, perf_run, benchmark)
    """
    import pytest

    result = perf_run.measurer.result(case)
    if result.skip_reason:
        pytest.skip(result.skip_reason)
    benchmark.group = case.group
    benchmark.extra_info["tilegate"] = result.extra
    if result.samples_s:
        record_device_samples(benchmark, result.samples_s)
    if result.failure:
        pytest.fail(result.failure, pytrace=False)
