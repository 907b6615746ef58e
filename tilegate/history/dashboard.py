"""The dashboard: one self-contained static HTML page of the history (no server, no CDN).

The page is `assets/dashboard.html` with the CSS, the page's JS (`assets/dashboard.js`), the
charting library (Plotly's own plotly.min.js, from the `plotly` Python package's
`plotly.offline.get_plotlyjs()`) and the data inlined. The library and the data are gzipped and
base64-encoded (`<script type="application/gzip+base64">`; the browser's DecompressionStream
unpacks them), which keeps 1,000 runs x 100 cases under 5 MB. The data (`build_data`), one JSON
object, columnar and rounded, and its versions: docs/history.md, "The page's data".
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import gzip
import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_text
from tilegate.history import changepoints as cpmod
from tilegate.history.verdicts import baseline_levels, crossover
from tilegate.store.historydb import Judged, Store, StoredPair, StoredRun

VERDICT_CODES = {
    "REGRESSED": "R",
    "UNSURE": "U",
    "IMPROVED": "I",
    "OK": "O",
    "NEW": "N",
    "NOT MEASURED": "M",
}
# a bisect's finding by its range (GOOD, BAD): its cases and its headline (tilegate.run.culprit)
Culprits = dict[tuple[str, str], tuple[frozenset[str], str]]


@dataclass(frozen=True)
class Written:
    path: Path
    size_bytes: int
    gpus: tuple[str, ...]
    runs: int
    cases: int
    change_points: int


def _round(x: Any, digits: int) -> float | None:
    if x is None:
        return None
    f = float(x)
    return round(f, digits) if math.isfinite(f) else None


def _sig(x: Any, sig: int = 5) -> float | None:
    """x rounded to `sig` significant digits (None stays None)."""
    if x is None:
        return None
    f = float(x)
    if not math.isfinite(f) or f == 0:
        return None if not math.isfinite(f) else 0.0
    return round(f, sig - 1 - math.floor(math.log10(abs(f))))


def _us(seconds: Any) -> float | None:
    """Seconds as microseconds, 5 significant digits (None stays None)."""
    return None if seconds is None else _sig(seconds * 1e6)


def _rle(values: Sequence[tuple[float | None, float | None] | None]) -> list[list[Any]]:
    """[[from index, base, tolerance], ...] where (base, tolerance) changes; [i, null, null]: none."""
    out: list[list[Any]] = []
    last: tuple[float | None, float | None] | None = (math.nan, math.nan)
    for i, v in enumerate(values):
        if v is None:
            continue  # not measured: the band goes on
        if v != last:
            out.append([i, v[0], v[1]])
            last = v
    return out


def _gpu_data(
    store: Store,
    gpu: str,
    method: cpmod.Method,
    fallback: dict[str, Judged],
    repo_url: str | None = None,
    culprits: Culprits | None = None,
) -> tuple[dict[str, Any], int]:
    runs, series = cpmod.series(store, gpu)
    n = len(runs)
    position = {r.run_id: i for i, r in enumerate(runs)}
    table = store.case_table(gpu)
    cps = cpmod.points(runs, series, method)
    by_case: dict[str, list[cpmod.ChangePoint]] = {}
    for cp in cps:
        by_case.setdefault(cp.case_id, []).append(cp)
    metric_of = {s.case_id: s.metric for s in series}
    case_ids = table["case_id"]
    cases = []
    for s, e in store.case_slices(table):
        key = str(case_ids[s])
        metric = metric_of.get(key, "median_s")
        # per run: the series' value, the median and quartiles (us), the throughput
        cols: dict[str, list[Any]] = {k: [None] * n for k in ("v", "med", "q1", "q3", "tp")}
        verdict = [" "] * n
        band: list[tuple[float | None, float | None] | None] = [None] * n
        band_med: list[tuple[float | None, float | None] | None] = [None] * n
        units: dict[str, int] = {}  # the throughput's unit -> the latest run that has it
        fb = fallback.get(key)
        for j in range(s, e):
            i = position[int(table["run_id"][j])]
            for k, c in (("med", "median_s"), ("q1", "q1_s"), ("q3", "q3_s")):
                cols[k][i] = _us(table[c][j])
            ratio = table["ratio_to_reference"][j]
            cols["v"][i] = _round(ratio, 4) if metric == "ratio_to_reference" else cols["med"][i]
            tflops, gbps = table["tflops"][j], table["gbps"][j]
            if np.isfinite(tflops):
                cols["tp"][i], units["TFLOP/s"] = _sig(tflops, 4), i
            elif np.isfinite(gbps):
                cols["tp"][i], units["GB/s"] = _sig(gbps, 4), i
            code = table["verdict"][j]
            verdict[i] = VERDICT_CODES.get(str(code), "?") if code is not None else "."
            tol = table["tolerance"][j]
            base_med = table["base_median_s"][j]
            base_ratio = table["base_ratio_to_reference"][j]
            if not np.isfinite(tol) and fb is not None:
                tol, base_med = fb.tolerance, fb.base_median_s
                base_ratio = fb.base_ratio_to_reference
            tol_r = _round(tol, 4) if tol is not None else None
            base_v = _round(base_ratio, 4) if metric == "ratio_to_reference" else _us(base_med)
            band[i] = (base_v, tol_r)
            band_med[i] = (_us(base_med), tol_r)
        twin = table["twin"][s]
        entry: dict[str, Any] = {
            "id": key,
            "variant": str(table["variant"][s]),
            "params": json.loads(table["params"][e - 1]) if table["params"][e - 1] else {},
            "twin": str(twin) if twin is not None else None,
            "metric": metric,
            "order": int(np.min(table["position"][s:e])),  # the suite's run order
            # "tp": the results rows' throughput, the benchmark's work (flops or bytes) / median
            **cols,
            "unit": max(units, key=units.__getitem__) if units else None,
            "verdict": "".join(verdict),
            "band": _rle(band),
            "bandMed": _rle(band_med),
            "cps": _cps(by_case.get(key, []), metric, culprits or {}),
        }
        cases.append(entry)
    cases.sort(key=lambda c: (c["order"], c["id"]))
    data = {
        "slug": gpu,
        "name": runs[-1].gpu_name if runs else gpu,
        "reference": _reference(runs),
        "runs": _runs(runs, repo_url),
        "cases": cases,
        "pairs": _pairs(store.pairs(gpu), position, cases),
    }
    return data, len(cps)


def _cps(
    points: Sequence[cpmod.ChangePoint], metric: str, culprits: Culprits
) -> list[dict[str, Any]]:
    """A case's change points for the page (times in microseconds), each with the culprit that a
    bisect of its range and case found."""
    scale = 1e6 if metric == "median_s" else 1

    def culprit(cp: cpmod.ChangePoint) -> str:
        cases, said = culprits.get((cp.before_run.commit, cp.after_run.commit), ((), ""))
        return said if cp.case_id in cases else ""

    return [
        {
            "i": cp.index,
            "size": _round(cp.size, 5),
            "p": float(f"{cp.p_value:.3g}"),
            "before": _sig(cp.before * scale),
            "after": _sig(cp.after * scale),
            "env": list(cp.env_change),
            "bisect": cp.bisect,
            "culprit": culprit(cp),
        }
        for cp in points
    ]


def _runs(runs: Sequence[StoredRun], repo_url: str | None) -> dict[str, list[Any]]:
    return {
        "id": [r.run_id for r in runs],
        "commit": [r.commit for r in runs],
        "when": [r.datetime for r in runs],
        "profile": [r.profile for r in runs],
        "triton": [r.triton for r in runs],
        "torch": [r.torch for r in runs],
        "driver": [r.driver for r in runs],
        "cuda": [r.cuda for r in runs],
        "dirty": [bool(r.dirty) for r in runs],
        "throttled": [bool(r.throttled) for r in runs],
        # the URL stored with the run (where it was measured), else the page's --repo-url
        "repo": [r.repo_url or repo_url for r in runs],
        "url": [r.run_url for r in runs],
        "reference": [r.reference for r in runs],
    }


def _reference(runs: Sequence[StoredRun]) -> str | None:
    """The name the page gives the reference: that of the latest clean run that measured one."""
    named = [r for r in runs if r.reference]
    clean = [r for r in named if not r.dirty] or named
    return clean[-1].reference if clean else None


def _label(where: dict[str, Any]) -> str:
    """'fp16 nt', 'rms_norm-fwd fp16 tokens=4096': a text value as it is, a number with its axis."""
    return " ".join(v if isinstance(v, str) else f"{k}={v}" for k, v in where.items())


def _pairs(
    stored: Sequence[StoredPair], position: dict[int, int], cases: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each pair (faster, than, its axis `per`, the setting of the other axes): its values, the
    case id of its `faster` row at each, its same-run ratio per run and the crossover per run."""
    n = len(position)
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for p in stored:
        where = dict(p.setting)
        fam = (p.faster, p.than, p.per, json.dumps(where, sort_keys=True))
        g = groups.setdefault(fam, {"where": where, "cases": {}, "rt": {}})
        g["cases"][p.value] = p.case_id  # runs come in time order: the latest id wins
        g["rt"].setdefault(p.value, [None] * n)[position[p.run_id]] = _round(p.ratio, 4)
    order = {c["id"]: c["order"] for c in cases}
    out = []
    for (faster, than, per, _), g in groups.items():
        values = sorted(g["cases"], key=lambda v: (isinstance(v, str), v))  # numbers first
        cross: list[Any] = []
        for i in range(n):
            ratios = {v: g["rt"][v][i] for v in values if g["rt"][v][i] is not None}
            if not ratios:
                cross.append(None)
                continue
            v = crossover({vv: float(r) for vv, r in ratios.items()})
            cross.append(0 if v is None else v)
        out.append(
            {
                "faster": faster,
                "than": than,
                "per": per,
                "where": g["where"],
                "label": _label(g["where"]),
                "values": values,
                "cases": [g["cases"][v] for v in values],
                "rt": [g["rt"][v] for v in values],
                "crossover": cross,
            }
        )
    # the suite's order: where their `faster` rows ran first
    big = len(order) + 1
    out.sort(key=lambda p: min(order.get(c, big) for c in p["cases"]))
    return out


def _measures(store: Store, data: dict[str, Any]) -> None:
    """Each case's peak GPU memory of one call (MiB) and % of peak, per run: the hover's."""
    table, ids = store.case_table(data["slug"]), data["runs"]["id"]
    position = {r: i for i, r in enumerate(ids)}
    by_id = {c["id"]: c for c in data["cases"]}
    for j, key in enumerate(table["case_id"]):
        case, i = by_id.get(str(key)), position.get(int(table["run_id"][j]))
        if case is None or i is None:
            continue
        b = table["peak_bytes"][j]
        case.setdefault("mem", [None] * len(ids))[i] = None if b is None else _sig(b / 2**20, 4)
        case.setdefault("pct", [None] * len(ids))[i] = _round(table["pct_of_peak"][j] * 100, 1)


def build_data(
    store: Store,
    method: cpmod.Method = cpmod.DEFAULT_METHOD,
    baselines: Path | None = None,
    now: dt.datetime | None = None,
    repo_url: str | None = None,
    culprits: Culprits | None = None,
) -> tuple[dict[str, Any], int]:
    """The page's data object, and how many change points it holds."""
    gpus = []
    total_cps = 0
    for gpu in store.gpus():
        path = baselines / f"{gpu}.json" if baselines is not None else None
        fallback = baseline_levels(path) if path is not None and path.is_file() else {}
        data, cps = _gpu_data(store, gpu, method, fallback, repo_url, culprits)
        _measures(store, data)
        gpus.append(data)
        total_cps += cps
    when = (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds")
    return (
        {
            "version": 4,
            "generated": when,
            "store": str(store.path),
            "method": {
                "alpha": method.alpha,
                "min_size": method.min_size,
                "min_effect": method.min_effect,
            },
            "gpus": gpus,
        },
        total_cps,
    )


def _asset(name: str) -> str:
    return resources.files("tilegate.history").joinpath("assets", name).read_text("utf-8")


def _packed(text: str) -> str:
    """gzip + base64: what `<script type="application/gzip+base64">` holds (the page unpacks it)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode(
        "ascii"
    )


def unpack(text: str) -> str:
    """The inverse of `_packed` (tests and tools read the page's data with it)."""
    return gzip.decompress(base64.b64decode(text)).decode("utf-8")


@functools.cache
def plotly_js() -> tuple[str, str]:
    """(version, plotly.min.js packed). The `history` extra installs plotly; the page needs no
    network, so the library goes into it."""
    try:
        import plotly
        from plotly.offline import get_plotlyjs
    except ImportError as err:
        raise InputError(
            f"the dashboard draws its charts with Plotly, which is not installed here ({err}): "
            "`pip install 'tilegate[history]'`"
        ) from err
    return str(plotly.__version__), _packed(get_plotlyjs())


def render(data: dict[str, Any]) -> str:
    """The page as one HTML string: template + inline CSS + JS + the library and the data."""
    # base64 has no "<", so nothing inside the data or the library can end its script element.
    version, library = plotly_js()
    title = "tilegate history: " + (", ".join(g["slug"] for g in data["gpus"]) or "empty")
    parts = {
        "TITLE": html.escape(title),
        "CSS": _asset("dashboard.css"),
        "JS": _asset("dashboard.js"),
        "PLOTLY": library,
        "PLOTLY_VERSION": html.escape(version),
        "DATA": _packed(json.dumps(data, separators=(",", ":"), allow_nan=False)),
    }
    # One pass, so that nothing inserted is scanned for markers again.
    return re.sub(
        r"<!--(TITLE|CSS|JS|PLOTLY_VERSION|PLOTLY|DATA)-->",
        lambda m: parts[m.group(1)],
        _asset("dashboard.html"),
    )


def write_dashboard(
    store: Store,
    out: Path,
    *,
    method: cpmod.Method = cpmod.DEFAULT_METHOD,
    baselines: Path | None = None,
    repo_url: str | None = None,
    culprits: Culprits | None = None,
) -> Written:
    data, cps = build_data(store, method, baselines, repo_url=repo_url, culprits=culprits)
    text = render(data)
    atomic_write_text(out, text)
    runs, _ = store.count()
    return Written(
        out,
        len(text.encode("utf-8")),
        tuple(g["slug"] for g in data["gpus"]),
        runs,
        len({c["id"] for g in data["gpus"] for c in g["cases"]}),
        cps,
    )
