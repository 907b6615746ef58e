"""Property: no corruption of a real results or baseline file crashes the gate or reads as a verdict.

Random corruptions (hypothesis) of the recorded H200 run (tests/fixtures/recorded-h200-quick.json)
and the committed H200 baseline, fed to `tilegate compare` and `tilegate rebaseline` in-process
(tilegate.cli.main) on temporary copies. Invalid input must be exit 2 with one line of stderr
naming the file, no traceback, and nothing half-written or changed: the report is a CANNOT JUDGE
report, the baseline to be written is absent or unchanged, no temp file is left. A mutation the
gate may legitimately accept (a changed sample, a renamed host) must still never crash: exit 0,
1 or 2, with the same guarantees on 2.

Deterministic in CI: derandomized, no example database (settings below).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tilegate.cli import main

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "recorded-h200-quick.json"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"
RESULTS_TEXT = RECORDED.read_text(encoding="utf-8")
BASELINE_TEXT = BASELINE.read_text(encoding="utf-8")
STALE = "# tilegate: PASS\n\nthe previous run's report\n"

settings.register_profile(
    "tilegate-ci",
    max_examples=100,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI cannot flake on a new one
    database=None,  # and no example database (.hypothesis/ keeps only caches, self-ignored)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# A longer, random search, to look for new failures by hand:
#   TILEGATE_HYPOTHESIS=tilegate-fuzz python -m pytest tests/test_property_corruption.py
settings.register_profile(
    "tilegate-fuzz", settings.get_profile("tilegate-ci"), max_examples=3000, derandomize=False
)
SETTINGS = settings.get_profile(os.environ.get("TILEGATE_HYPOTHESIS", "tilegate-ci"))


# --- corruptions --------------------------------------------------------------------------------


class Corruption:
    """What was done to the file (what hypothesis shows when a property fails) and its bytes.

    Not a dataclass: hypothesis prints a dataclass field by field, 100 kB of bytes.
    """

    def __init__(self, what: str, data: bytes) -> None:
        self.what, self.data = what, data

    def __repr__(self) -> str:
        return f"Corruption({self.what!r}, {len(self.data)} bytes)"


def _bytes(text: str) -> st.SearchStrategy[Corruption]:
    """Byte-level damage that no reader may accept: cut short, not UTF-8, not JSON."""
    raw = text.encode("utf-8")
    body = len(text.rstrip())  # cutting only the final newline leaves valid JSON
    return st.one_of(
        st.integers(0, body - 1).map(lambda n: Corruption(f"cut at byte {n}", raw[:n])),
        st.integers(0, len(raw)).map(
            lambda n: Corruption(f"byte 0xff at {n}", raw[:n] + b"\xff" + raw[n:])
        ),
        st.sampled_from(["utf-16", "utf-32", "cp1252-bom"]).map(
            lambda enc: Corruption(
                f"re-encoded {enc}",
                b"\xff\xfe" + text.encode("cp1252", "replace")
                if enc == "cp1252-bom"
                else text.encode(enc),
            )
        ),
        # a NUL is invalid JSON anywhere: between tokens, and raw inside a string
        st.integers(0, body).map(lambda n: Corruption(f"NUL at {n}", raw[:n] + b"\0" + raw[n:])),
    )


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (dict keys and list indices)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        # long number lists: the first, a middle and the last element stand for the rest
        idx = sorted({0, len(doc) // 2, len(doc) - 1}) if len(doc) > 8 else range(len(doc))
        for i in idx:
            out += _paths(doc[i], (*prefix, i))
    return out


_JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def mutated(text: str, path: tuple[Any, ...], value: Any, delete: bool = False) -> Corruption:
    """The document with the value at `path` replaced by `value` (or deleted)."""
    doc = json.loads(text)
    delete = delete and bool(path)
    doc = _set(doc, path, value, delete)
    where = "/".join(map(str, path)) or "(root)"
    return Corruption(
        f"{'deleted' if delete else f'set to {value!r}'}: {where}", json.dumps(doc).encode()
    )


def _mutations(text: str, paths: list[tuple[Any, ...]]) -> st.SearchStrategy[Corruption]:
    """One value anywhere in the document replaced by any JSON value, or deleted."""
    return st.builds(partial(mutated, text), st.sampled_from(paths), _JSON_VALUES, st.booleans())


RESULTS_PATHS = _paths(json.loads(RESULTS_TEXT))
BASELINE_PATHS = _paths(json.loads(BASELINE_TEXT))

# Fields the gate needs, and values they can never take: setting one must be exit 2.
_ROW = ("benchmarks", 5, "extra_info", "tilegate")
_BROW = ("rows", "xtile_persistent-fp16-nt-K128")
_NOT_POSITIVE = [0, -1.5, float("nan"), float("inf"), "1e-3", None, True, [], {}]
RESULTS_INVALID: list[tuple[tuple[Any, ...], list[Any]]] = [
    (("benchmarks",), [None, {}, "x", 3]),
    (("machine_info",), [None, [], "x"]),
    (("machine_info", "tilegate"), [None, [], "x"]),
    (("machine_info", "tilegate", "mode"), [None, "cpu", 1, []]),
    (("machine_info", "tilegate", "gpu"), [None, "H200", []]),
    (("machine_info", "tilegate", "gpu", "slug"), [None, "", 7, []]),
    (("machine_info", "tilegate", "gpu", "name"), ["NVIDIA H100 80GB HBM3"]),
    (("machine_info", "tilegate", "gpu", "sm_count"), [114, 170]),
    (("machine_info", "tilegate", "gpu", "capability"), [[10, 0], [8, 0]]),
    (("machine_info", "tilegate", "l2_flush"), [False]),
    (("machine_info", "tilegate", "timer"), ["perf-counter"]),
    (("machine_info", "tilegate", "variants"), ["all", [1, 2], [None]]),
    (("benchmarks", 5), [None, "x", 3, []]),
    (("benchmarks", 5, "extra_info"), [None, {}, "x"]),
    ((*_ROW, "key"), [None, "", 5]),
    ((*_ROW, "correct"), [False, None, "yes", 1]),
    ((*_ROW, "variant"), [None, "", 3]),
    # the parameters the gate reads (the flat copies are for readers older than "params")
    ((*_ROW, "params", "M"), [0, -16384, 1.5, "16384", None, True]),
    ((*_ROW, "params", "K"), [0, -128, 128.0, None]),
    ((*_ROW, "samples_s"), ["x", 3, {}, []]),
    ((*_ROW, "samples_s", 0), _NOT_POSITIVE),
    ((*_ROW, "median_s"), [0, -1.0, "x", float("nan")]),
    ((*_ROW, "ratio_to_reference"), [0, -1.0, "x", 0.5, 3.0]),
    ((*_ROW, "ratio_to_twin"), [0, "x", 0.5, 1.0]),
    ((*_ROW, "side"), ["left", 1]),
    ((*_ROW, "code_hash"), ["", 5]),
]
BASELINE_INVALID: list[tuple[tuple[Any, ...], list[Any]]] = [
    ((), [[], None, "x", 3]),
    (("schema_version",), [None, 0, 2, "1"]),
    (("gpu",), [None, []]),
    (("gpu", "slug"), [None, "", 3]),
    (("gpu", "name"), ["NVIDIA H100 80GB HBM3"]),
    (("gpu", "sm_count"), [114]),
    (("provenance",), [None, []]),
    (("policy",), [None, [], {"nonsense": 1}]),
    (("policy", "alpha"), [0, 1, -0.1, "0.01", None]),
    (("policy", "floor"), [0.5]),  # above the ceiling
    (("policy", "quantiles"), [2, 4.5, "41"]),
    (("rows",), [None, [], {}]),
    (_BROW, [None, [], "x"]),
    ((*_BROW, "median_s"), _NOT_POSITIVE),
    ((*_BROW, "tolerance"), [0, 1, 1.5, -0.1, None, "0.04"]),
    ((*_BROW, "samples_s"), [[], None, "x", [0.001, -1], [float("nan")]]),
    ((*_BROW, "run_medians_s"), [[], None, [0]]),
    ((*_BROW, "drift"), [-0.1, None, "x"]),
    ((*_BROW, "variant"), [None, 3]),
    ((*_BROW, "K"), [None, "128", 128.5]),
    ((*_BROW, "n_samples"), ["many", -5, 0.5, float("inf")]),
    ((*_BROW, "ratio_to_reference"), [0, -2, "x"]),
    (("expectations",), [None, {}]),
    (("expectations", 0), [None, 3]),
    (("expectations", 0, "checks"), [None, {}]),
    (("expectations", 0, "checks", 0, "max_ratio"), [0, -1, None, "0.7"]),
    (("expectations", 0, "checks", 0, "K"), [None, "128"]),
    (("expectations", 0, "checks", 0, "measured"), ["x", [None]]),
]


def _invalid(
    text: str, table: list[tuple[tuple[Any, ...], list[Any]]]
) -> st.SearchStrategy[Corruption]:
    def build(field: tuple[tuple[Any, ...], list[Any]], pick: int) -> Corruption:
        path, values = field
        return mutated(text, path, values[pick % len(values)])

    return st.builds(build, st.sampled_from(table), st.integers(0, 20))


def invalid_results() -> st.SearchStrategy[Corruption]:
    return st.one_of(_bytes(RESULTS_TEXT), _invalid(RESULTS_TEXT, RESULTS_INVALID))


def invalid_baselines() -> st.SearchStrategy[Corruption]:
    return st.one_of(_bytes(BASELINE_TEXT), _invalid(BASELINE_TEXT, BASELINE_INVALID))


# --- running the gate ----------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int
    err: str
    report: str | None
    out: bytes | None


def _run(argv: Callable[[Path], list[str]]) -> tuple[Outcome, Path, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "report.md").write_text(STALE)
        stdout, stderr = io.StringIO(), io.StringIO()
        here = Path.cwd()
        os.chdir(d)  # a crash's traceback goes to ./.perf/: here, not into the checkout
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(argv(d))
        finally:
            os.chdir(here)
        report = (d / "report.md").read_text() if (d / "report.md").exists() else None
        out = (d / "out.json").read_bytes() if (d / "out.json").exists() else None
        left = sorted(p.name for p in d.rglob("*.tmp"))
        return Outcome(code, stderr.getvalue(), report, out), d, left


def _cannot_judge(o: Outcome, names: str, left: list[str], what: str) -> None:
    assert o.code == 2, f"{what}: exit {o.code}"
    assert "Traceback" not in o.err, o.err
    lines = [line for line in o.err.splitlines() if line.strip()]
    assert len(lines) == 1, f"{what}: {o.err}"
    assert names in lines[0], f"{what}: {lines[0]}"
    assert left == [], f"{what}: left {left}"


def _compare(results: bytes | None, baseline: bytes | None) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        r, b = d / "results.json", d / "nvidia-h200.json"
        r.write_bytes(results if results is not None else RESULTS_TEXT.encode())
        b.write_bytes(baseline if baseline is not None else BASELINE_TEXT.encode())
        return ["compare", str(r), str(b), "--no-plots", "--report", str(d / "report.md")]

    return argv


def _rebaseline(
    results: bytes | None, old: bytes | None, *extra: str
) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        r, out = d / "results.json", d / "out.json"
        r.write_bytes(results if results is not None else RESULTS_TEXT.encode())
        out.write_bytes(old if old is not None else BASELINE_TEXT.encode())
        return ["rebaseline", str(r), "--out", str(out), "--diff-out", str(d / "report.md"), *extra]

    return argv


# --- the properties ------------------------------------------------------------------------------


# Each @example is a failure the random search found (TILEGATE_HYPOTHESIS=tilegate-fuzz) on the
# way: CI runs them every time, beside the derandomized examples.
@SETTINGS
@given(invalid_results())
@example(
    mutated(RESULTS_TEXT, ("machine_info", "tilegate", "gpu", "name"), "NVIDIA H100 80GB HBM3")
)
@example(mutated(RESULTS_TEXT, ("machine_info", "tilegate", "l2_flush"), False))
def test_corrupt_results_are_exit_2_named_and_change_nothing(c: Corruption) -> None:
    o, d, left = _run(_compare(c.data, None))
    _cannot_judge(o, str(d / "results.json"), left, c.what)
    assert o.report is not None and o.report.startswith("# tilegate: CANNOT JUDGE"), c.what
    o, d, left = _run(_rebaseline(c.data, None))
    _cannot_judge(o, str(d / "results.json"), left, c.what)
    assert o.out == BASELINE_TEXT.encode(), f"{c.what}: the baseline was rewritten"
    assert o.report is not None and o.report.startswith("# tilegate: CANNOT JUDGE"), c.what


@SETTINGS
@given(invalid_baselines())
@example(mutated(BASELINE_TEXT, ("rows", "xtile_persistent-fp16-nt-K128", "n_samples"), "many"))
@example(mutated(BASELINE_TEXT, ("provenance", "profiles", 0), None))
@example(mutated(BASELINE_TEXT, ("expectations", 1, "checks", 1, "measured", 0), None))
def test_corrupt_baselines_are_exit_2_named_and_change_nothing(c: Corruption) -> None:
    o, d, left = _run(_compare(None, c.data))
    _cannot_judge(o, str(d / "nvidia-h200.json"), left, c.what)
    assert o.report is not None and o.report.startswith("# tilegate: CANNOT JUDGE"), c.what
    o, d, left = _run(_rebaseline(None, c.data))  # the corrupt file is the old baseline
    _cannot_judge(o, str(d / "out.json"), left, c.what)
    assert o.out == c.data, f"{c.what}: the old baseline was rewritten"


MUTATIONS = st.one_of(
    st.tuples(st.just("results.json"), _mutations(RESULTS_TEXT, RESULTS_PATHS)),
    st.tuples(st.just("nvidia-h200.json"), _mutations(BASELINE_TEXT, BASELINE_PATHS)),
)


@SETTINGS
@given(MUTATIONS)
@example(
    (
        "results.json",
        mutated(RESULTS_TEXT, ("machine_info", "tilegate", "gpu", "capability", 0), None),
    )
)
@example(("nvidia-h200.json", mutated(BASELINE_TEXT, ("provenance", "software"), [])))
def test_any_mutation_is_judged_or_refused_never_a_crash(mutation: tuple[str, Corruption]) -> None:
    """Any value anywhere: exit 0 or 1 with a real report, or exit 2 as above; never a crash."""
    which, c = mutation
    is_results = which == "results.json"
    o, d, left = _run(_compare(c.data, None) if is_results else _compare(None, c.data))
    assert "Traceback" not in o.err and "crashed" not in o.err, f"{c.what}: {o.err}"
    if o.code == 2:
        _cannot_judge(o, str(d / which), left, c.what)
        assert o.report is not None and o.report.startswith("# tilegate: CANNOT JUDGE")
    else:
        assert o.code in (0, 1), c.what
        assert left == [], c.what
        assert o.report is not None and o.report.startswith("# tilegate: "), c.what
        assert "CANNOT JUDGE" not in o.report.splitlines()[0] and o.report != STALE, c.what
    # rebaseline --check: a mutated run, or a mutated old baseline; it writes nothing either way
    o, d, left = _run(
        _rebaseline(c.data, None, "--check") if is_results else _rebaseline(None, c.data, "--check")
    )
    assert "Traceback" not in o.err and "crashed" not in o.err, f"{c.what}: {o.err}"
    assert o.out == (BASELINE_TEXT.encode() if is_results else c.data), c.what
    if o.code == 2:
        _cannot_judge(o, str(d / ("results.json" if is_results else "out.json")), left, c.what)
    else:
        assert o.code in (0, 1) and left == [], c.what


def test_the_corruptions_are_of_real_files() -> None:
    """The property runs on what the suite and the rebaseline wrote, not on a toy."""
    results, baseline = json.loads(RESULTS_TEXT), json.loads(BASELINE_TEXT)
    assert results["machine_info"]["tilegate"]["gpu"]["name"] == "NVIDIA H200"
    assert len(results["benchmarks"]) == 27 and len(baseline["rows"]) == 108
    assert all(
        math.isfinite(x) for x in baseline["rows"]["xtile_persistent-fp16-nt-K128"]["samples_s"]
    )
