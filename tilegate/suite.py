"""The one test of the perf suite: each case, correctness first, then device time.

Collected only when `tilegate perf` (or `pytest --tilegate` with this file) names it; the
cases come from the declared benchmark (tilegate.plugin).
"""

from __future__ import annotations

from typing import Any

import pytest

from tilegate.cases import Case
from tilegate.harness.bench import record_device_samples


def test_case(tilegate_case: Case, perf_run: Any, benchmark: Any) -> None:
    result = perf_run.measurer.result(tilegate_case)
    if result.skip_reason:
        pytest.skip(result.skip_reason)
    benchmark.group = tilegate_case.group
    benchmark.extra_info["tilegate"] = result.extra
    if result.samples_s:
        record_device_samples(benchmark, result.samples_s)
    if result.failure:
        pytest.fail(result.failure, pytrace=False)
