"""The explanation of a case: what differs between its base and head records, most telling first.

Input: the records tilegate.fingerprint.record wrote into each row of an A/B results file
(extra_info["tilegate"]["explain"]) and the identity's `code_parts`. Output: an `Explanation`,
plain data: at most MAX_LINES lines of facts that differ (launches added or dropped with their
share of the call's GPU time, then per Triton kernel whose code changed its compile facts base
-> head, then its instruction mix), a one-line summary, and the TTGIR diff text where both
sides' TTGIR side files are at hand. Nothing here raises on odd data: a missing record or fact
becomes "explanation unavailable: why" or is left out.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilegate.fingerprint.extract import strip_locations
from tilegate.fingerprint.record import explain_dir
from tilegate.judge import autotune

MAX_LINES = 5
SCHEMA = "tilegate.explain/1"
# the verdicts that get an explanation when the case's code changed (by name: the vocabulary
# grows, e.g. UNSTABLE); SAME, AMBIGUOUS, NEW, REMOVED, UNCHANGED ... do not
EXPLAINED = frozenset({"SLOWER", "FASTER", "REGRESSED", "IMPROVED", "UNSTABLE"})

# the compile facts (tilegate.fingerprint.facts) an explanation compares, in the order it shows
# them (the most telling first), each with its label
_LABEL = {
    "spills": "spilled bytes",
    "programs_per_sm": "programs/SM",
    "num_stages": "num_stages",
    "num_warps": "num_warps",
    "buffers": "multi-buffering depth",
    "wgmma_wait": "wgmma wait depth",
    "fused": "fused loops",
    "warp_specialized": "warp-specialized",
    "ws_partitions": "WS partitions",
    "shared": "shared memory",
    "registers": "registers/thread",
    "loops": "loops",
    "mma": "MMA",
}
_MIX_ORDER = ("wgmma", "mma", "tma", "cp.async", "ld.global", "st.global", "barrier")


@dataclass
class Explanation:
    key: str
    verdict: str
    lines: list[str] = field(default_factory=list)
    unavailable: str | None = None  # why there is no explanation (it never raises)
    ttgir_diff: str = ""  # unified diff of the changed kernels' TTGIR (base -> head), if at hand
    diff_file: str | None = None  # where it was written (tilegate.explain.diff.write)
    more: int = 0  # lines left out beyond MAX_LINES

    @property
    def summary(self) -> str:
        if self.unavailable:
            return f"explanation unavailable: {self.unavailable}"
        return self.lines[0] if self.lines else "no recorded difference"

    def as_json(self) -> dict[str, Any]:
        given = {"unavailable": self.unavailable, "more": self.more, "ttgir_diff": self.diff_file}
        return {
            "verdict": self.verdict,
            "lines": self.lines,
            **{k: v for k, v in given.items() if v},
        }


# --- reading the records of a results file -----------------------------------------------------


@dataclass(frozen=True)
class Side:
    record: Mapping[str, Any] | None
    code_hash: str | None
    parts: Mapping[str, Any]
    # the autotuner picks of the row (extra_info.tilegate.autotune): the first line when the
    # sides picked differently (tilegate.judge.autotune)
    autotune: tuple[Mapping[str, Any], ...] = ()
    # a tuner flip re-timed with both sides on one config (extra_info.tilegate.pinned): the
    # picks both ran and, on the head's row, the paired ratio there
    pinned: Mapping[str, Any] | None = None


def read_sides(path: Path) -> dict[tuple[str, str], Side]:
    """(side, case id) -> what the row recorded, straight from the results JSON."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[tuple[str, str], Side] = {}
    for bench in data.get("benchmarks") or []:
        tg = ((bench or {}).get("extra_info") or {}).get("tilegate")
        if not isinstance(tg, dict) or not isinstance(tg.get("key"), str):
            continue
        rec = tg.get("explain")
        parts = tg.get("code_parts")
        picks = tg.get("autotune")
        out[(str(tg.get("side") or "head"), tg["key"])] = Side(
            rec if isinstance(rec, dict) else None,
            tg.get("code_hash") if isinstance(tg.get("code_hash"), str) else None,
            parts if isinstance(parts, dict) else {},
            tuple(p for p in picks if isinstance(p, dict)) if isinstance(picks, list) else (),
            tg["pinned"] if isinstance(tg.get("pinned"), dict) else None,
        )
    return out


def _on_one_config(verdict: str, head: Side, judged: Any = None) -> str:
    """`; with both sides on BK=64, num_warps=4 the difference is +0.1 %` where the flip was
    re-timed on one config (the judge's case, `judged`, where there is one: its re-time's
    ratio; else the head row's recorded one); what explains it is the judge's (a tuner flip:
    UNCHANGED; a code change: a timing verdict)."""
    if judged is not None and getattr(judged, "pinned", None) and judged.ratio is not None:
        config, ratio = str(judged.pinned), float(judged.ratio)
        flip = judged.explained_by == autotune.TUNER_FLIP
        changed = judged.explained_by == autotune.CODE_CHANGE
    else:
        pinned = head.pinned or {}
        got = pinned.get("ratio_to_base")
        picks = [p for p in pinned.get("autotune") or () if isinstance(p, dict)]
        if not isinstance(got, (int, float)) or not picks:
            return ""
        config = "; ".join(autotune.config_text(p.get("config") or {}) for p in picks)
        ratio, flip, changed = float(got), verdict == "UNCHANGED", verdict in ("SLOWER", "FASTER")
    if flip:
        return f"; with both sides on {config} the difference is {ratio - 1:+.1%}"
    return (
        f"; with both sides on {config} a difference remains, {ratio - 1:+.1%}: "
        f"{'a code change, not the pick' if changed else 'undecided'}"
    )


# --- the comparison ----------------------------------------------------------------------------


def _n(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _us(x: Any) -> str:
    return f"{x:,.0f} us" if x >= 10 else f"{x:.1f} us"


def _show(key: str, v: Any) -> str:
    if key == "shared" and isinstance(v, int):
        return f"{v / 1024:.0f} KiB" if v >= 1024 else f"{v} B"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "-" if v is None else str(v)


def _entries(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e for e in rec.get("triton") or [] if isinstance(e, dict)]


def _by_name(entries: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        out.setdefault(str(e.get("name")), []).append(e)
    return out


def _count(entries: Sequence[Mapping[str, Any]]) -> int:
    return sum(int(e.get("count") or 1) for e in entries)


def _profiled(rec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(g.get("name")): g for g in rec.get("gpu") or [] if isinstance(g, dict)}


def _share(g: Mapping[str, Any] | None, total: Any) -> str:
    if not g or not isinstance(g.get("us"), (int, float)):
        return ""
    if isinstance(total, (int, float)) and total > 0:
        return f", {_us(g['us'])} of the call's {_us(total)}"
    return f", {_us(g['us'])}"


def _short_name(name: str, limit: int = 60) -> str:
    """A profiler's kernel name without its template arguments and parameters."""
    name = re.sub(r"\s+", " ", name).strip().removeprefix("void ")
    cut = min((i for i in (name.find("<"), name.find("(")) if i > 0), default=len(name))
    name = name[:cut].strip()
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _kind(name: str) -> str:
    """What a non-Triton GPU activity is, by its name ("memcpy" too): "copy", "memset", "fill" or ""."""
    return next((kind for kind in ("copy", "memset", "fill") if kind in name.lower()), "")


def _launch_lines(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """Launches the head adds or drops: Triton kernels, torch ops, and what else the profiler
    saw (copies, memsets, library kernels), each with its share of the GPU time."""
    lines: list[str] = []
    b_tri, h_tri = _by_name(_entries(base)), _by_name(_entries(head))
    b_gpu, h_gpu = _profiled(base), _profiled(head)
    for name in [*h_tri, *(n for n in b_tri if n not in h_tri)]:
        nb, nh = _count(b_tri.get(name, [])), _count(h_tri.get(name, []))
        if nb == nh:
            continue
        sign = "+" if nh > nb else "-"
        side, g, total = (
            (h_tri, h_gpu, head.get("gpu_us")) if nh > nb else (b_tri, b_gpu, base.get("gpu_us"))
        )
        grid = side[name][0].get("grid") if side.get(name) else None
        where = f", grid {tuple(grid)}" if grid else ""
        lines.append(
            f"{sign}{_n(abs(nh - nb), 'launch')} of Triton kernel `{name}` ({nb} -> {nh}{where}"
            f"{_share(g.get(name), total)})"
        )
    ops_b = Counter({str(k): int(v) for k, v in (base.get("ops") or {}).items()})
    ops_h = Counter({str(k): int(v) for k, v in (head.get("ops") or {}).items()})
    added_ops, dropped_ops = ops_h - ops_b, ops_b - ops_h
    triton_names = set(b_tri) | set(h_tri)
    gpu_added: list[str] = []
    named_op = next(iter(added_ops), None) if len(added_ops) == 1 else None
    for name in [*h_gpu, *(n for n in b_gpu if n not in h_gpu)]:
        if name in triton_names:
            continue
        nb = int((b_gpu.get(name) or {}).get("count") or 0)
        nh = int((h_gpu.get(name) or {}).get("count") or 0)
        if nb == nh:
            continue
        if nh > nb:
            share = _share(h_gpu.get(name), head.get("gpu_us"))
            kind, short = _kind(name), _short_name(name)
            if kind and named_op:
                text = f"the {kind} of `{named_op}`{share} (`{short}`)"
            else:
                text = f"{'a ' + kind + ' ' if kind else ''}`{short}`{share}"
            gpu_added.append(f"+{_n(nh - nb, 'launch')}: {text}")
        else:
            share = _share(b_gpu.get(name), base.get("gpu_us"))
            gpu_added.append(f"-{_n(nb - nh, 'launch')}: `{_short_name(name)}`{share} (dropped)")
    op_text = [f"+{n} torch op `{k}`" for k, n in added_ops.items()]
    op_text += [f"-{n} torch op `{k}` (dropped)" for k, n in dropped_ops.items()]
    if len(gpu_added) == 1 and named_op and not dropped_ops:  # the launch and the op that made it
        lines.append(
            gpu_added[0]
            if f"`{named_op}`" in gpu_added[0]
            else f"{gpu_added[0]}, from `{named_op}`"
        )
    else:
        lines += gpu_added
        if op_text:
            lines.append(
                ", ".join(op_text[:4])
                + (f" and {len(op_text) - 4} more" if len(op_text) > 4 else "")
            )
    return lines


def _changed(b: Mapping[str, Any], h: Mapping[str, Any]) -> bool:
    keys = ("ir", "src", "constexprs", "num_warps", "num_stages", "grid")
    return any(b.get(k) != h.get(k) for k in keys) or _fact_diff(b, h) != []


def _fact_diff(b: Mapping[str, Any], h: Mapping[str, Any]) -> list[str]:
    both = [k for k in _LABEL if k in b and k in h and b[k] != h[k]]
    return [f"{_LABEL[k]} {_show(k, b[k])} -> {_show(k, h[k])}" for k in both]


def _mix_diff(b: Mapping[str, Any], h: Mapping[str, Any]) -> str:
    mb, mh = b.get("mix"), h.get("mix")
    if not isinstance(mb, dict) or not isinstance(mh, dict):
        return ""
    keys = [k for k in _MIX_ORDER if mb.get(k, 0) != mh.get(k, 0)]
    keys += [
        k for k in sorted(set(mb) | set(mh)) if k not in _MIX_ORDER and mb.get(k, 0) != mh.get(k, 0)
    ]
    return ", ".join(f"{k} {mb.get(k, 0)} -> {mh.get(k, 0)}" for k in keys[:5])


def _kernel_lines(
    base: Mapping[str, Any], head: Mapping[str, Any]
) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
    """(fact lines, instruction-mix lines, (name, base ir hash, head ir hash) of changed TTGIR)
    for the Triton kernels both sides launch whose code changed."""
    facts, mixes, irs = [], [], []
    b_tri, h_tri = _by_name(_entries(base)), _by_name(_entries(head))
    b_gpu, h_gpu = _profiled(base), _profiled(head)
    for name, h_list in h_tri.items():
        for b, h in zip(b_tri.get(name, []), h_list, strict=False):
            if not _changed(b, h):
                continue
            # one profiled call's kernel time, not the timed rounds' (no L2 flush, one sample):
            # beside the facts it could read as the verdict, so it goes with the detail
            tb, th = (b_gpu.get(name) or {}).get("us"), (h_gpu.get(name) or {}).get("us")
            if isinstance(tb, (int, float)) and isinstance(th, (int, float)):
                mixes.append(
                    f"`{name}` in the one call the profiler saw (L2 not flushed; the verdict "
                    f"is the timed rounds'): {_us(tb)} -> {_us(th)}"
                )
            parts = _fact_diff(b, h)
            cb, ch = b.get("constexprs") or {}, h.get("constexprs") or {}
            parts += [
                f"{k}={cb.get(k, '-')} -> {ch.get(k, '-')}"
                for k in sorted(set(cb) | set(ch))
                if cb.get(k) != ch.get(k)
            ]
            if b.get("grid") != h.get("grid") and b.get("grid") and h.get("grid"):
                parts.append(f"grid {tuple(b['grid'])} -> {tuple(h['grid'])}")
            errors = [e for e in (b.get("error"), h.get("error")) if e]
            if parts:
                facts.append(f"`{name}`: " + ", ".join(parts[:6]))
            elif errors:
                facts.append(f"`{name}`: code changed; compile facts unavailable: {errors[0]}")
            elif b.get("ir") != h.get("ir") or b.get("src") != h.get("src"):
                facts.append(f"`{name}`: its code changed, its compile facts did not")
            mix = _mix_diff(b, h)
            if mix:
                mixes.append(f"`{name}` instruction mix (PTX): {mix}")
            if b.get("ir") and h.get("ir") and b.get("ir") != h.get("ir"):
                irs.append((name, str(b["ir"]), str(h["ir"])))
    return facts, mixes, irs


def explain_pair(
    key: str,
    verdict: str,
    base: Side | None,
    head: Side | None,
    ir_dirs: Sequence[Path] = (),
    judged: Any = None,
) -> Explanation:
    """The explanation of one case (module docstring). `judged`: the judge's verdict of it (an
    A/B's ABCase), whose picks line and re-time are the judge's words, not made again here."""
    out = Explanation(key, verdict)
    try:
        if base is None or head is None:
            out.unavailable = "the results hold no base row of this case"
            return out
        picks = judged.picks if judged is not None else autotune.line(base.autotune, head.autotune)
        same = bool(base.code_hash and head.code_hash and base.code_hash == head.code_hash)
        if same and picks:  # a tuner flip: the picks are the whole story
            on_one = _on_one_config(verdict, head, judged)
            out.lines = [f"{picks} ({autotune.TUNER_FLIP}: the same source and configs{on_one})"]
            return out
        if same:
            out.unavailable = "same code on both sides: nothing to explain"
            return out
        if base.record is None or head.record is None:
            side = "base" if base.record is None else "head"
            out.unavailable = (
                f"the {side} row carries no launch record (results written by a tilegate "
                "without the explanation, or its recording failed)"
            )
            return out
        lines = [picks] if picks else []
        lines += _launch_lines(base.record, head.record)
        facts, mixes, irs = _kernel_lines(base.record, head.record)
        lines += facts + mixes
        if not lines or lines == [picks]:
            parts = sorted(
                k
                for k in set(base.parts) | set(head.parts)
                if base.parts.get(k) != head.parts.get(k)
            )
            what = {
                "host_code": "the host code (Python) the call runs",
                "torch_ops": "the torch ops' operands (shapes, dtypes, strides)",
                "gpu_activity": "the GPU activity's grids",
                "triton": "the Triton kernels' compiled code",
            }
            named = [what.get(p, p) for p in parts]
            lines.append(
                "the launches and compile facts are the same; what changed: "
                + (", ".join(named) if named else "the identity")
            )
        out.more = max(0, len(lines) - MAX_LINES)
        out.lines = lines[:MAX_LINES]
        out.ttgir_diff = _ttgir_diff(irs, ir_dirs)
    except Exception as err:  # never a crash: say why
        out.unavailable = f"{type(err).__name__}: {err}"
    return out


def _ttgir_diff(irs: Iterable[tuple[str, str, str]], ir_dirs: Sequence[Path]) -> str:
    def read(digest: str) -> str | None:
        for d in ir_dirs:
            p = Path(d) / f"{digest}.ttgir"
            if p.is_file():
                return p.read_text(encoding="utf-8", errors="replace")
        return None

    chunks: list[str] = []
    for name, b, h in irs:
        tb, th = read(b), read(h)
        if tb is None or th is None:
            continue
        chunks += difflib.unified_diff(
            strip_locations(tb).splitlines(keepends=True),
            strip_locations(th).splitlines(keepends=True),
            f"base/{name}.ttgir",
            f"head/{name}.ttgir",
            n=2,
        )
    return "".join(chunks)


# --- the cases of a judgement --------------------------------------------------------------------


def _word(v: Any) -> str:
    return str(getattr(v, "name", v))


def decided(cmp: Any = None, ab: Any = None) -> list[tuple[str, str]]:
    """(case id, verdict) of every case whose code changed and whose verdict is explained
    (EXPLAINED, by name), and every tuner flip (its picks): the A/B cases, and the
    stored-baseline rows of an A/B run that have a base side, but for those the A/B found no
    slower than their base (`no_slower`: a stored slowdown of theirs is drift, not this
    change's, tilegate.judge.outcome)."""
    out: dict[str, str] = {}
    for c in getattr(ab, "cases", ()) or ():
        flip = getattr(c, "explained_by", None) == autotune.TUNER_FLIP  # its why: the picks
        if (c.code_changed and _word(c.verdict) in EXPLAINED) or flip:
            out.setdefault(c.key, _word(c.verdict))
    if ab is not None:
        changed = {c.key for c in ab.cases if c.code_changed} - getattr(ab, "no_slower", set())
        for r in getattr(cmp, "rows", ()) or ():
            if r.key in changed and _word(r.verdict) in EXPLAINED:
                out.setdefault(r.key, _word(r.verdict))
    return list(out.items())


def ir_dirs(results: Path) -> list[Path]:
    dirs = [Path(results).parent / "explain" / "ir", explain_dir() / "ir"]
    return list(dict.fromkeys(dirs))


def explain_cases(
    results: Path, cases: Sequence[tuple[str, str]], judged: Mapping[str, Any] | None = None
) -> list[Explanation]:
    """The explanations of `cases` ((case id, verdict)) of an A/B results file, between its base
    and head rows; `judged`: the judge's A/B case of each, by id, where the caller has them
    (`explain_pair`)."""
    if not cases:
        return []
    try:
        sides = read_sides(results)
    except Exception as err:
        why = f"results {results} unreadable: {type(err).__name__}: {err}"
        return [Explanation(k, v, unavailable=why) for k, v in cases]
    dirs = ir_dirs(results)
    return [
        explain_pair(
            k, v, sides.get(("base", k)), sides.get(("head", k)), dirs, (judged or {}).get(k)
        )
        for k, v in cases
    ]


def explain_judgement(results: Path, cmp: Any = None, ab: Any = None) -> list[Explanation]:
    """Every decided case of a judgement explained; never raises."""
    try:
        judged = {c.key: c for c in getattr(ab, "cases", ()) or ()}
        return explain_cases(results, decided(cmp, ab), judged)
    except Exception as err:
        return [Explanation("*", "", unavailable=f"{type(err).__name__}: {err}")]


def what_changed(results: Path, ab: Any) -> dict[str, str]:
    """Each variant whose compiled code changed: what changed, the first line of its first such
    case's explanation, whatever that case's verdict (AMBIGUOUS too); never raises."""
    try:
        first: dict[str, Any] = {}
        for c in getattr(ab, "cases", ()) or ():
            if c.code_changed:
                first.setdefault(c.variant, c)
        cases = [(c.key, _word(c.verdict)) for c in first.values()]
        got = explain_cases(results, cases, {c.key: c for c in first.values()})
        said = {
            v: e.lines[0] if e.lines else first[v].picks for v, e in zip(first, got, strict=True)
        }
        return {v: line for v, line in said.items() if line}
    except Exception:  # the line names the variants without it
        return {}


def _shown(path: Path) -> str:
    """A path as the report shows it: relative (to the working directory), never absolute."""
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return f"{path.parent.name}/{path.name}"


def _safe(key: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", key)[:150]


def write(
    explanations: Sequence[Explanation], results: Path, out_dir: Path | None = None
) -> Path | None:
    """The sidecar explain/explanations.json beside the results, and each case's TTGIR diff
    (explain/<case>.ttgir.diff); sets `diff_file`. Returns the sidecar's path; None when there is
    nothing to write or it cannot be written (the report says what it has either way)."""
    if not explanations:
        return None
    out_dir = out_dir or Path(results).parent / "explain"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for e in explanations:
            if e.ttgir_diff:
                p = out_dir / f"{_safe(e.key)}.ttgir.diff"
                p.write_text(e.ttgir_diff, encoding="utf-8")
                e.diff_file = _shown(p)
        side = out_dir / "explanations.json"
        side.write_text(
            json.dumps(
                {
                    "schema": SCHEMA,
                    "results": Path(results).name,
                    "cases": {e.key: e.as_json() for e in explanations},
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        return side
    except Exception:  # a full disk, a name the file system refuses: the report still says it
        return None
