"""Autotuner picks as explanations (plain data in, words out; no torch, no Triton).

A row's `autotune` (tilegate.harness.autotune) lists each pick its call used: the kernel, the key,
the config (kwargs, num_warps, num_stages, num_ctas, maxnreg), the size and digest of the config
space, how it was chosen. A case's identity is its source and config space, so the same identity
with another pick is a TUNER FLIP (never blamed; re-timed on one config, `retime_config`),
another identity and another pick a CODE CHANGE, and one side whose processes picked differently
UNSTABLE (tilegate.judge.abcase).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

TUNER_FLIP = "tuner flip"
CODE_CHANGE = "code change"
CONFIG_FIELDS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

Picks = Sequence[Mapping[str, Any]]


def _flat(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {**(cfg.get("kwargs") or {}), **{k: cfg.get(k) for k in CONFIG_FIELDS}}


def config_text(cfg: Mapping[str, Any], only: Sequence[str] | None = None) -> str:
    """`BK=64, num_warps=4, num_stages=3` (num_ctas 1 and maxnreg None left out unless named)."""
    items = _flat(cfg).items()
    shown = [
        f"{k}={v}"
        for k, v in items
        if (k in only if only is not None else not ((k == "num_ctas" and v == 1) or v is None))
    ]
    return ", ".join(shown) or "its config"


def config_change(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    """`BK=64, num_warps=4 -> BK=32, num_warps=2`: only the fields that differ."""
    b, h = _flat(base), _flat(head)
    differ = [k for k in dict.fromkeys([*b, *h]) if b.get(k) != h.get(k)]
    return f"{config_text(base, differ)} -> {config_text(head, differ)}"


def _table(picks: Picks | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for p in picks or ():
        if isinstance(p, Mapping) and isinstance(p.get("config"), Mapping):
            key = json.dumps(p.get("key"), sort_keys=True, default=str)
            out[(str(p.get("kernel")), key)] = p
    return out


def _key_change(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    """How a kernel's autotune key differs between the sides: `its key: + K, V` (fields the
    head's key adds), `- K` (drops), `BT 64 -> 32` (changes)."""
    b, h = base.get("key"), head.get("key")
    if not (isinstance(b, Mapping) and isinstance(h, Mapping)):
        return f"its key: {b} -> {h}"
    parts = []
    if added := [k for k in h if k not in b]:
        parts.append("+ " + ", ".join(added))
    if dropped := [k for k in b if k not in h]:
        parts.append("- " + ", ".join(dropped))
    parts += [f"{k} {b[k]} -> {h[k]}" for k in b if k in h and b[k] != h[k]]
    return "its key: " + "; ".join(parts)


def changes(base: Picks | None, head: Picks | None) -> list[str]:
    """Per tuned kernel (and key) whose pick differs, `kernel: BK=64 -> BK=32`, or `kernel: tuned
    in the head only`; one tuned once a side for keys of another shape (fla-core 0.5.2 -> 0.6.0)
    is one kernel: `kernel: BK=32 -> BK=64 (its key: + K, V)`."""
    b, h = _table(base), _table(head)
    only_b = [k for k in b if k not in h]
    only_h = [k for k in h if k not in b]
    rekeyed = {
        kb: kh
        for kb in only_b
        for kh in only_h
        if kb[0] == kh[0]
        and sum(k[0] == kb[0] for k in only_b) == 1
        and sum(k[0] == kb[0] for k in only_h) == 1
    }
    out = []
    for k in (k for k in dict.fromkeys([*b, *h]) if k not in rekeyed.values()):
        kh = rekeyed.get(k, k)
        if k not in b or kh not in h:
            out.append(f"{k[0]}: tuned in the {'head' if k in h else 'base'} only")
        elif _flat(b[k]["config"]) != _flat(h[kh]["config"]):
            key = f" ({_key_change(b[k], h[kh])})" if kh != k else ""
            change = config_change(b[k]["config"], h[kh]["config"])
            out.append(f"{k[0]}: {change}{key}" + _space_change(b[k], h[kh]))
    return out


def _space_change(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    """` (its configs: 6 -> 5)` where the head tunes over another config list than the base
    (the pull request changed what the tuner chooses from), else ``."""
    if base.get("space") == head.get("space"):
        return ""
    n, m = base.get("configs"), head.get("configs")
    return f" (its configs: {n} -> {m})" if n != m else " (another config list)"


def line(base: Picks | None, head: Picks | None) -> str | None:
    """The why line of a case whose sides picked differently: `autotuner: BK=64, num_warps=4 ->
    BK=32, num_warps=2` (the kernel named where the call tunes more than one), or picked the same
    from another config list: `autotuner: the same pick (its configs: 3 -> 2)`; None: the same."""
    b, h = _table(base), _table(head)
    same = [k for k in b if k in h and _flat(b[k]["config"]) == _flat(h[k]["config"])]
    got = changes(base, head) + [
        f"{k[0]}: the same pick{s}" for k in same if (s := _space_change(b[k], h[k]))
    ]
    if not got:
        return None
    kernels = {k for k, _ in _table(base)} | {k for k, _ in _table(head)}
    if len(kernels) == 1:
        got = [g.split(": ", 1)[1] for g in got]
    return "autotuner: " + "; ".join(got)


def classify(same_code: bool | None, base: Picks | None, head: Picks | None) -> str | None:
    """TUNER_FLIP (same identity, another pick), CODE_CHANGE (another identity and another
    pick), or None (the same picks, or nothing tuned, or identity unknown)."""
    if same_code is None or not changes(base, head):
        return None
    return TUNER_FLIP if same_code else CODE_CHANGE


def retime_config(
    same_code: bool | None, base: Picks | None, head: Picks | None
) -> list[Mapping[str, Any]] | None:
    """The picks both sides are re-timed with (`tilegate.harness.autotune.pinned`) when a case is
    a tuner flip: the base's, for every kernel both sides tuned and picked differently; None when
    no re-time is needed (same picks) or meaningful (the code changed: the pick is part of it)."""
    if classify(same_code, base, head) != TUNER_FLIP:
        return None
    b, h = _table(base), _table(head)
    shared = [b[k] for k in b if k in h and _flat(b[k]["config"]) != _flat(h[k]["config"])]
    return [dict(p) for p in shared] or None


def unstable(picks_per_process: Sequence[Picks | None]) -> str | None:
    """Where one side's processes picked differently: `kernel: BK=64 (2 runs), BK=32 (1 run)`
    per kernel and key; None when every process picked the same."""
    seen: dict[tuple[str, str], Counter[str]] = {}
    for picks in picks_per_process:
        for k, p in _table(picks).items():
            seen.setdefault(k, Counter())[config_text(p["config"])] += 1
    split = [
        f"{k[0]}: " + ", ".join(f"{t} ({n} run{'s' if n > 1 else ''})" for t, n in configs.items())
        for k, configs in seen.items()
        if len(configs) > 1
    ]
    return "; ".join(split) or None


def retuned(picks: Picks | None) -> list[str]:
    """Kernels whose tuner timed its configs again in the identity's (second) call: its key moves
    from call to call, so it re-tunes inside the timed rounds too."""
    return sorted({str(p.get("kernel")) for p in picks or () if p.get("how") == "tuned"})


def per_run(picks_per_process: Sequence[Picks | None]) -> tuple[str, ...]:
    """Each distinct pick of a row's runs, `kernel: BK=64, num_warps=4 (3 runs)` (a baseline
    row's `autotune`)."""
    seen = Counter(
        f"{k[0]}: {config_text(p['config'])}"
        for picks in picks_per_process
        for k, p in _table(picks).items()
    )
    return tuple(f"{t} ({n} run{'s' if n > 1 else ''})" for t, n in seen.items())
