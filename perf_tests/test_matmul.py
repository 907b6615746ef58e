"""One benchmark per (variant, dtype, layout, K): correctness first, then device time."""

from __future__ import annotations

from typing import Any

import pytest

from tilegate.cases import Case


def _record_device_samples(benchmark: Any, samples_s: list[float]) -> None:
    """Hand the device timings to pytest-benchmark as this benchmark's rounds (seconds per call).

    pytest-benchmark times with a host clock, which would measure the launch queue; its stats
    object takes samples from any source, so its JSON, table and `compare` show device time.
    """
    stats = benchmark._make_stats(1)
    benchmark._mode = "tilegate device timer"
    for sample in samples_s:
        stats.update(sample)


def test_matmul(case: Case, perf_run: Any, benchmark: Any) -> None:
    result = perf_run.measurer.result(case)
    if result.skip_reason:
        pytest.skip(result.skip_reason)
    benchmark.group = case.group
    benchmark.extra_info["tilegate"] = result.extra
    if result.samples_s:
        _record_device_samples(benchmark, result.samples_s)
    if result.failure:
        pytest.fail(result.failure, pytrace=False)
