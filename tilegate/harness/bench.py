"""The adapter to pytest-benchmark's private API: the one place tilegate touches it.

pytest-benchmark times with a host clock (for GPU work: the launch queue), so the suite hands
its stats the device times it measured: `benchmark._make_stats(1)` (1 iteration per round) and
`benchmark._mode` (how the plugin tells a used fixture from an unused one). Both are private;
tests/test_bench_adapter.py pins them on the versions tilegate supports (5.2.3 on the GPU image,
5.3.1 on the CPU), run by `nox -s bench_adapter`.
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
