"""One benchmark per (variant, dtype, layout, K): correctness first, then device time."""

from __future__ import annotations

from typing import Any

import pytest

from tilegate.cases import Case
from tilegate.harness.bench import record_device_samples


def test_matmul(case: Case, perf_run: Any, benchmark: Any) -> None:
    result = perf_run.measurer.result(case)
    if result.skip_reason:
        pytest.skip(result.skip_reason)
    benchmark.group = case.group
    benchmark.extra_info["tilegate"] = result.extra
    if result.samples_s:
        record_device_samples(benchmark, result.samples_s)
    if result.failure:
        pytest.fail(result.failure, pytrace=False)
