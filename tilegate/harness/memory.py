"""Peak GPU memory of one call (extra_info.tilegate.memory): the caching allocator's peak above
what was allocated before the call, the bytes held after it (its output among them), and whether
the peak was the same in each of REPEATS calls of their own, outside the timed rounds
(tilegate.judge.memory gates only a peak that repeats). Not measured under the CPU interpreter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REPEATS = 2


def measure(torch: Any, call: Callable[[], Any]) -> dict[str, Any]:
    """{peak_bytes, held_bytes, repeats} of `call` on the current CUDA device."""
    peaks, held = [], []
    for _ in range(REPEATS):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = call()
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated() - before)
        held.append(torch.cuda.memory_allocated() - before)
        del out
    return {"peak_bytes": max(peaks), "held_bytes": max(held), "repeats": len(set(peaks)) == 1}
