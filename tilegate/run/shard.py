"""Several GPUs of one runner: the suite's groups spread over them, one process a GPU, one results file.

pytest-benchmark switches itself off under pytest-xdist ("Benchmarks are automatically disabled
because xdist plugin is active"), and a group's rounds stay in one process anyway (its variants
and A/B pairs are timed interleaved on one GPU): `tilegate perf --gpus N` starts one pytest per GPU
(CUDA_VISIBLE_DEVICES, `--perf-shard i/N`: the groups `plan` gives it), and `merge` joins their
results into one file whose rows carry their GPU's index and serial. `plan` balances an estimate
of each group's time (the profile's minimum time, or its minimum rounds at a per-round cost that
grows with the declared work and the group's kernels), largest first onto the least-loaded GPU:
the matmul default profile's K = 4096 groups are the long ones. The fleet rule (a GPU whose
reference rows sit away from the others' is not judged) is tilegate.judge.offgpu's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, read_json

# Per-round seconds of a group ~ kernels x (flush + its work at a typical H200 rate): at
# M = N = 16384 a K = 4096 matmul (2.2 TFLOP) takes ~3.4-6 ms and a K = 128 one ~0.2-0.5 ms
# (docs/results-h200.md), ~2.2e-15 s per flop; a memory-bound call moves ~3e12 bytes a second.
SECONDS_PER_FLOP = 2.2e-15
SECONDS_PER_BYTE = 1 / 3e12
FLUSH_S = 0.06e-3


def group_cost(work: Any, kernels: int, min_rounds: int, min_time_s: float) -> float:
    """Estimated seconds of one group's timed rounds; `work`: a tilegate.declare.Work."""
    call = max((work.flops or 0.0) * SECONDS_PER_FLOP, (work.bytes or 0.0) * SECONDS_PER_BYTE)
    return max(min_time_s, min_rounds * kernels * (FLUSH_S + call))


def plan(groups: Mapping[str, float], shards: int) -> list[list[str]]:
    """Groups (name -> estimated seconds) onto `shards` GPUs, largest first onto the least loaded;
    deterministic (ties by name), every group on exactly one shard, never split."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    out: list[list[str]] = [[] for _ in range(shards)]
    load = [0.0] * shards
    for name, cost in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        i = min(range(shards), key=lambda s: (load[s], s))
        out[i].append(name)
        load[i] += cost
    return out


def parse_shard(text: str) -> tuple[int, int]:
    """'1/2' -> (1, 2): this process is shard 1 of 2 (0-based)."""
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--perf-shard {text!r}: expected I/N, e.g. 0/2") from None
    if not 0 <= index < count:
        raise ValueError(f"--perf-shard {text!r}: need 0 <= I < N")
    return index, count


def merge(parts: Sequence[Path], out: Path) -> None:
    """Join the shards' results files into one: rows tagged with their GPU, the GPUs listed.
    InputError: shards of different GPUs, profiles or shapes, or a case two shards measured."""
    if not parts:
        raise InputError("nothing to merge: no shard wrote results")
    merged: dict[str, Any] | None = None
    gpus = []
    seen: dict[str, Path] = {}
    for index, part in enumerate(parts):
        data = read_json(
            part, "shard results file", allow_nan=True, remedy="measure again (`tilegate perf`)"
        )
        tg = (data.get("machine_info") or {}).get("tilegate") if isinstance(data, dict) else None
        if not isinstance(tg, dict) or not isinstance(data.get("benchmarks"), list):
            raise InputError(f"shard results file {part} is not a tilegate results file")
        gpu = dict(tg.get("gpu") or {})
        gpu["index"] = index
        gpus.append({"gpu": gpu, "state": tg.get("state"), "file": part.name})
        for bench in data["benchmarks"]:
            extra = bench.get("extra_info", {}).get("tilegate", {})
            ident = f"{extra.get('key')}{'@base' if extra.get('side') == 'base' else ''}"
            if ident in seen:
                raise InputError(
                    f"case {ident} is in both {seen[ident]} and {part}: a group is one GPU's"
                )
            seen[ident] = part
            extra["gpu_index"] = index
            extra["gpu_serial"] = gpu.get("serial")
        if merged is None:
            merged = data
            continue
        first = merged["machine_info"]["tilegate"]
        for what in ("benchmark", "profile", "fixed", "mode"):
            if first.get(what) != tg.get(what):
                raise InputError(
                    f"shard {part} has {what} {tg.get(what)!r}, shard 0 {first.get(what)!r}"
                )
        if (first.get("gpu") or {}).get("slug") != gpu.get("slug"):
            raise InputError(
                f"shard {part} ran on {gpu.get('slug')}, shard 0 on {(first.get('gpu') or {}).get('slug')}: "
                "one results file holds one GPU model; run the models as separate jobs"
            )
        merged["benchmarks"] += data["benchmarks"]
        first["warnings"] = (first.get("warnings") or []) + (tg.get("warnings") or [])
        # coverage (tilegate.judge.coverage): each GPU's skipped and failed cases
        if isinstance(first.get("coverage"), dict) and isinstance(tg.get("coverage"), dict):
            for what in ("skipped", "failed"):
                first["coverage"][what] = {
                    **(first["coverage"].get(what) or {}),
                    **(tg["coverage"].get(what) or {}),
                }
            mine, theirs = first["coverage"].get("unsupported"), tg["coverage"].get("unsupported")
            if isinstance(mine, dict) and isinstance(theirs, dict):
                for side in ("head", "base"):
                    mine[side] = sorted({*(mine.get(side) or ()), *(theirs.get(side) or ())})
    assert merged is not None
    merged["machine_info"]["tilegate"]["gpus"] = gpus
    atomic_write_json(out, merged)


def shard_files(out: Path, shards: int) -> list[Path]:
    """Where each GPU's process writes: results.gpu0.json, results.gpu1.json, ..."""
    return [out.with_name(f"{out.stem}.gpu{i}{out.suffix}") for i in range(shards)]
