"""The dashboard page: self-contained, its data right, small at 1,000 runs, and drawn by a real
browser (headless Chromium) without console errors. Histories are SYNTHETIC, resampled from the
real H200 baseline (tests/_synthetic_history.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests._browser import BROWSERS, CHROMIUM_FLAGS
from tests._synthetic_history import REAL_BASELINES, ROOT, STEP_AT, STEPPED
from tilegate.cli import main as tilegate_main
from tilegate.history.dashboard import unpack, write_dashboard
from tilegate.judge.crosstile import CrossTilePair
from tilegate.store.historydb import open_store

REPO = "https://github.com/example/tilegate"


def main(argv: list[str]) -> int:
    """`tilegate history ARGV`."""
    return tilegate_main(["history", *argv])


def _packed(page: str, name: str) -> str:
    m = re.search(
        rf'<script type="application/gzip\+base64" id="{name}">(.*?)</script>', page, re.S
    )
    assert m is not None
    return unpack(m.group(1))


def _data(page: str) -> dict:  # type: ignore[type-arg]
    return json.loads(_packed(page, "data"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def linked_store(
    step_history: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The step history (stored without links) plus two runs added as CI adds them, with the
    repository and CI-run URLs stored, the last one a dirty work tree."""
    from tests._factories import SOFTWARE
    from tests._synthetic_history import make_run

    store, _ = step_history
    d = tmp_path_factory.mktemp("linked")
    copy = d / "history.duckdb"
    shutil.copy(store, copy)
    for i, dirty in ((60, False), (61, True)):
        data = make_run(
            i,
            np.random.default_rng(i),
            salt="step",
            factors=dict.fromkeys(STEPPED, 1.03),
            software=dict(SOFTWARE, triton="3.9.0"),
            stats_data=False,
        )
        data["commit_info"]["dirty"] = dirty
        path = d / f"run-{i}.json"
        path.write_text(json.dumps(data))
        code = main(
            [
                "add",
                str(path),
                "--store",
                str(copy),
                "--baselines",
                str(REAL_BASELINES),
                "--repo-url",
                REPO,
                "--run-url",
                f"{REPO}/actions/runs/{i}",
            ]
        )
        assert code == 0
    return copy


@pytest.fixture(scope="module")
def page(linked_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dashboard") / "dashboard.html"
    assert (
        main(["dashboard", "--store", str(linked_store), "--out", str(out), "--repo-url", REPO])
        == 0
    )
    return out


def test_the_page_is_one_self_contained_file(page: Path) -> None:
    text = page.read_text()
    assert "<link" not in text
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(", text)
    assert "<script src" not in text and "<canvas" not in text  # Plotly draws, inlined
    from plotly.offline import get_plotlyjs

    assert _packed(text, "plotly") == get_plotlyjs()


def test_the_dashboard_prints_the_page_it_wrote_and_removes_a_stale_one_on_exit_2(
    linked_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "elsewhere" / "page.html"
    assert main(["dashboard", "--store", str(linked_store), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"page: {out} (") and out.is_file()
    # a failed run: the page of the earlier run is gone, and nothing says "page:"
    assert main(["dashboard", "--store", str(tmp_path / "missing.duckdb"), "--out", str(out)]) == 2
    printed = capsys.readouterr()
    assert not out.exists() and "page:" not in printed.out
    assert f"no page written ({out}" in printed.err


def test_the_page_data_holds_the_series_change_points_and_crossovers(
    page: Path, linked_store: Path
) -> None:
    data = _data(page.read_text())
    (gpu,) = data["gpus"]
    assert gpu["slug"] == "nvidia-h200" and len(gpu["runs"]["id"]) == 62
    assert gpu["runs"]["dirty"][-2:] == [False, True]
    # the links stored with a run win; runs stored without take the page's --repo-url
    assert gpu["runs"]["repo"] == [REPO] * 62
    assert gpu["runs"]["url"][:60] == [None] * 60
    assert gpu["runs"]["url"][60:] == [f"{REPO}/actions/runs/60", f"{REPO}/actions/runs/61"]
    cases = {c["id"]: c for c in gpu["cases"]}
    assert len(cases) == 96
    flagged = {k for k, c in cases.items() if c["cps"]}
    assert flagged == set(STEPPED)
    for key in STEPPED:
        (cp,) = cases[key]["cps"]
        assert cp["i"] == STEP_AT and cp["env"] == ["triton 3.6.0 -> 3.9.0"]
    c = cases["xtile_persistent-fp16-nt-K128"]
    assert all(v is not None for v in c["v"]) and len(c["verdict"]) == 62
    assert set(c["verdict"]) <= set("OUIR")  # judged against the real baseline at add time
    assert c["band"][0][0] == 0 and c["band"][0][2] == 0.04  # the baseline row's tolerance
    # the matmul benchmark's pairs: each twin pair along K at each dtype and layout, its case
    # ids the store's; the crossover per run is the gate's (tilegate.judge.crosstile)
    assert gpu["pairs"] and all(fam["per"] == "K" for fam in gpu["pairs"])
    with open_store(linked_store) as s:
        table = s.case_table()
    twin_ratio = {
        (str(cid), int(rid)): r
        for cid, rid, r in zip(
            table["case_id"], table["run_id"], table["ratio_to_twin"], strict=True
        )
    }
    for fam in gpu["pairs"]:
        where = fam["where"]
        assert (
            set(where) == {"dtype", "layout"}
            and fam["label"] == f"{where['dtype']} {where['layout']}"
        )
        ids = [f"{fam['faster']}-{where['dtype']}-{where['layout']}-K{K}" for K in fam["values"]]
        assert fam["cases"] == ids and all(i in cases for i in ids)
        assert cases[ids[0]]["twin"] == fam["than"]
        rt = dict(zip(fam["values"], fam["rt"], strict=True))
        for i in (0, 30, 59):
            run_id = gpu["runs"]["id"][i]
            for K, case in zip(fam["values"], ids, strict=True):
                assert rt[K][i] == pytest.approx(twin_ratio[(case, run_id)], abs=6e-5)
            want = CrossTilePair.crossover({K: rt[K][i] for K in fam["values"]})
            assert fam["crossover"][i] == (0 if want is None else want)


def test_a_bisect_of_a_change_points_range_shows_its_culprit_there(
    linked_store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tilegate.history import changepoints as cpmod
    from tilegate.run.culprit import SCHEMA

    with open_store(linked_store) as store:
        runs, series = cpmod.series(store, "nvidia-h200")
        cp = next(
            c for c in cpmod.points(runs, series, cpmod.DEFAULT_METHOD) if c.case_id == STEPPED[0]
        )
    culprit = "c" * 40
    found = {"schema": SCHEMA, "good": cp.before_run.commit, "bad": cp.after_run.commit,
             "cases": [STEPPED[0]], "steps": [],
             "commits": [{"sha": culprit, "subject": "bump triton"}],
             "outcome": {"result": "found", "culprits": [{"sha": culprit}]}}  # fmt: skip
    path = tmp_path / "bisect.json"
    path.write_text(json.dumps(found))
    out = tmp_path / "page.html"
    argv = ["dashboard", "--store", str(linked_store), "--out", str(out), "--bisect", str(path)]
    assert main(argv) == 0
    cases = {c["id"]: c for c in _data(out.read_text())["gpus"][0]["cases"]}
    shown = {k: p["culprit"] for k, c in cases.items() for p in c["cps"] if p["culprit"]}
    assert shown == {STEPPED[0]: 'FOUND: cccccccccc "bump triton"'}
    # without --bisect: .perf/bisect/bisect.json, once finished (a running one shows nothing)
    monkeypatch.chdir(tmp_path)
    default = tmp_path / ".perf" / "bisect" / "bisect.json"
    default.parent.mkdir(parents=True)
    for outcome, want in ((None, {}), (found["outcome"], shown)):
        default.write_text(json.dumps({**found, "outcome": outcome}))
        assert main(argv[:-2]) == 0
        cases = {c["id"]: c for c in _data(out.read_text())["gpus"][0]["cases"]}
        assert {k: p["culprit"] for k, c in cases.items() for p in c["cps"] if p["culprit"]} == want
    # a file given that is not a finished bisect's: exit 2 naming it, and no page
    path.write_text(json.dumps({**found, "outcome": None} | {"schema": "x"}))
    assert main(argv) == 2 and not out.exists()
    assert f"--bisect {path}: not a finished" in capsys.readouterr().err


def test_1000_runs_of_96_cases_make_a_page_under_5_mb(
    step_history: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    store = tmp_path / "big.duckdb"
    shutil.copy(step_history[0], store)
    con = duckdb.connect(str(store))
    # 16 more copies of the 60 runs, each a new run a day later (new ids, new identities)
    for k in range(1, 17):
        con.execute(
            "INSERT INTO runs SELECT run_id + ? * 1000, gpu, gpu_name, commit || ?, datetime || ?, "
            "measured_at + ? * INTERVAL 3 DAY, profile, mode, dirty, triton, torch, python, driver, "
            "cuda, harness_version, throttled, source, added_at, repo_url, run_url, reference "
            "FROM runs WHERE run_id < 1000",
            [k, f"-{k}", f"-{k}", k],
        )
        con.execute(
            "INSERT INTO cases SELECT * REPLACE (run_id + ? * 1000 AS run_id, median_s * (1 + ? * 1e-4) AS median_s) "
            "FROM cases WHERE run_id < 1000",
            [k, k],
        )
        con.execute(
            "INSERT INTO pairs SELECT * REPLACE (run_id + ? * 1000 AS run_id) FROM pairs "
            "WHERE run_id < 1000",
            [k],
        )
    con.close()
    with open_store(store) as s:
        assert s.count() == (1020, 1020 * 96)
        written = write_dashboard(s, tmp_path / "big.html")
    assert written.size_bytes < 5_000_000
    assert len(_data((tmp_path / "big.html").read_text())["gpus"][0]["runs"]["id"]) == 1020


def test_an_empty_store_makes_a_page_that_says_so(tmp_path: Path) -> None:
    store = tmp_path / "empty.duckdb"
    with open_store(store, write=True):
        pass
    assert main(["dashboard", "--store", str(store), "--out", str(tmp_path / "e.html")]) == 0
    assert _data((tmp_path / "e.html").read_text())["gpus"] == []


# --- in a real browser -------------------------------------------------------------------------


def _browser() -> str:
    given = os.environ.get("TILEGATE_CHROMIUM")
    found = given or next((b for b in map(shutil.which, BROWSERS) if b), None)
    if not found:
        pytest.fail(
            "no Chromium for the dashboard's browser test: `apt-get install -y chromium` (Debian), "
            "or set TILEGATE_CHROMIUM to a Chrome/Chromium binary"
        )
    return found


def _chromium(
    page: Path, fragment: str, tmp: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run(
        [
            _browser(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            *extra,
            page.resolve().as_uri() + fragment,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _visible(dom: str) -> str:
    """The dumped DOM without its scripts and styles: what the page shows."""
    return re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


# Run in the page after it has drawn (the test adds it to a copy): every drawn mark inside its
# plot area, every line and fill clipped to it, every text inside its chart's frame, and every
# link with what it points at.
CHECK = """<script>
(function check() {
  if (!document.body.dataset.drawn) { setTimeout(check, 50); return; }
  const problems = [];
  const inside = (r, a, what) => {
    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    if (r.width + r.height > 0 && (cx < a.left - 1 || cx > a.right + 1 || cy < a.top - 1 || cy > a.bottom + 1)) problems.push(what);
  };
  const within = (r, a, what) => {
    if (r.width + r.height > 0 && (r.left < a.left - 1 || r.right > a.right + 1 || r.top < a.top - 1 || r.bottom > a.bottom + 1)) problems.push(what);
  };
  let marks = 0;
  document.querySelectorAll(".js-plotly-plot").forEach((div) => {
    if (div.closest("section").hidden) return;
    const frame = div.querySelector(".main-svg").getBoundingClientRect();
    const area = div.querySelector(".draglayer .nsewdrag").getBoundingClientRect();
    div.querySelectorAll(".scatterlayer .point, .barlayer .point path").forEach((p) => { marks++; inside(p.getBoundingClientRect(), area, div.id + " point"); });
    div.querySelectorAll(".scatterlayer .js-line, .scatterlayer .js-fill, .hm image, .shapelayer path").forEach((p) => { marks++; within(p.getBoundingClientRect(), area, div.id + " " + p.getAttribute("class")); });
    div.querySelectorAll(".plot").forEach((g) => { if (!g.getAttribute("clip-path")) problems.push(div.id + " unclipped plot layer"); });
    div.querySelectorAll("text").forEach((t) => { if (t.textContent.trim()) within(t.getBoundingClientRect(), frame, div.id + " text '" + t.textContent + "'"); });
  });
  document.body.dataset.checkMarks = String(marks);
  document.body.dataset.checkProblems = JSON.stringify(problems);
  document.body.dataset.checkLinks = JSON.stringify([...document.querySelectorAll("a[href]")].map((a) => [a.dataset.kind || "", a.dataset.run || "", a.dataset.before || "", a.getAttribute("href")]));
  document.body.dataset.checkResources = String(performance.getEntriesByType("resource").length);
})();
</script></body>"""


def _checked(page: Path, tmp: Path) -> Path:
    copy = tmp / "checked.html"
    copy.write_text(page.read_text().replace("</body>", CHECK))
    return copy


def _body(dom: str) -> dict[str, str]:
    import html

    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:500]
    return {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1))}


DRAWN = "overview,run,changepoints,case,compare,ratio-k,crossover"


@pytest.mark.parametrize("width", [1280, 1920])
def test_chromium_draws_every_chart_inside_its_frame_with_links_to_the_stored_commits(
    page: Path, tmp_path: Path, width: int
) -> None:
    case = "tma_xtile_persistent-fp16-nn-K4096"
    data = _data(page.read_text())["gpus"][0]
    runs = data["runs"]
    checked = _checked(page, tmp_path)
    for fragment in (
        "",
        f"#gpu=nvidia-h200&case={case}&metric=med",
        f"#case={case}&metric=tflops&run=61",
    ):
        done = _chromium(checked, fragment, tmp_path, "--dump-dom", f"--window-size={width},2000")
        assert done.returncode == 0, done.stderr[-2000:]
        attrs = _body(done.stdout)
        assert attrs.get("drawn") == DRAWN, attrs
        assert "errors" not in attrs, done.stdout[-2000:]
        assert _console(done.stderr) == []
        assert json.loads(attrs["check-problems"]) == []
        assert int(attrs["check-marks"]) > 300  # the check saw the charts' marks
        assert attrs["check-resources"] == "0"  # nothing loaded from outside the page
        # every ratio named for the reference variant (this repo's: `torch`)
        assert "cuBLAS" not in _visible(done.stdout)
        assert '> ratio to <span class="ref-name">torch</span> (same run)' in done.stdout
        if not fragment:  # the default view: the ratio of a case that is not the reference
            assert re.search(r'class="ytitle"[^>]*>ratio to torch \(same run\)<', done.stdout)
        assert "ratio to torch, or the median for torch itself" in done.stdout
        links = json.loads(attrs["check-links"])
        kinds = {k for k, *_ in links}
        assert {"commit", "compare", "ci-run"} <= kinds, links
        pos = {str(rid): i for i, rid in enumerate(runs["id"])}
        for kind, run, before, href in links:
            i = pos[run]
            if kind == "commit":
                assert href == f"{runs['repo'][i]}/commit/{runs['commit'][i]}"
            elif kind == "compare":
                j = pos[before]
                assert (
                    href == f"{runs['repo'][i]}/compare/{runs['commit'][j]}...{runs['commit'][i]}"
                )
            else:
                assert kind == "ci-run" and href == runs["url"][i]
    # the last view: the case and metric the link asked for, and the dirty run 61 selected
    assert attrs["case"] == case
    assert re.search(
        r'id="case-chart"[^>]*data-case="tma_xtile_persistent-fp16-nn-K4096"', done.stdout
    )
    assert re.search(r'id="case-chart"[^>]*data-metric="tflops"', done.stdout)
    chart = done.stdout[done.stdout.index('id="case-chart"') : done.stdout.index('id="case-notes"')]
    assert re.search(r'class="ytitle"[^>]*>TFLOP/s \(the benchmark\'s work / median\)<', chart)
    assert "throughput<span" in done.stdout and 'id="tp-unit"> (TFLOP/s)<' in done.stdout
    assert (
        re.search(r'id="run-box"[^>]*data-run="61"', done.stdout)
        and "DIRTY work tree" in done.stdout
    )


def test_without_a_link_the_latest_clean_run_and_the_latest_flagged_case_are_shown(
    page: Path, tmp_path: Path
) -> None:
    done = _chromium(page, "", tmp_path, "--dump-dom")
    attrs = _body(done.stdout)
    assert attrs.get("drawn") == DRAWN, attrs
    data = _data(page.read_text())["gpus"][0]
    # run 62 (the last) is dirty: the latest run shown is the one before it
    assert re.search(r'id="run-box"[^>]*data-run="61"', done.stdout)
    assert data["runs"]["id"][-2] == 61 and data["runs"]["dirty"][-1]
    newest = max((cp["i"], abs(cp["size"]), c["id"]) for c in data["cases"] for cp in c["cps"])
    assert attrs["case"] == newest[2]


def test_chromium_screenshot_shows_the_charts(page: Path, tmp_path: Path) -> None:
    from matplotlib import image

    shot = tmp_path / "dashboard.png"
    done = _chromium(page, "", tmp_path, "--window-size=1400,2300", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert _console(done.stderr) == []
    pixels = image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2300, 1400)
    red = (pixels[..., 0] > 0.65) & (pixels[..., 1] < 0.3) & (pixels[..., 2] < 0.3)
    assert red.sum() > 500  # the slowed cases' heatmap rows
    assert np.unique(pixels.reshape(-1, 3).round(2), axis=0).shape[0] > 200
    artifacts = ROOT / ".perf"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shot, artifacts / "dashboard-screenshot.png")  # CI uploads .perf/


# --- another benchmark: no dtype, layout or K ---------------------------------------------------


@pytest.fixture(scope="module")
def toy_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SYNTHETIC history of the toy benchmark (tests/_synthetic_history.py): 4 runs, stored and
    drawn as CI would."""
    from tests._synthetic_history import toy_run

    d = tmp_path_factory.mktemp("toy")
    rng = np.random.default_rng(11)
    for i in range(4):
        (d / f"toy-{i}.json").write_text(json.dumps(toy_run(i, rng)))
    store = d / "history.duckdb"
    assert main(["import", str(d), "--store", str(store)]) == 0
    out = d / "dashboard.html"
    assert main(["dashboard", "--store", str(store), "--out", str(out)]) == 0
    return out


def test_a_benchmark_of_other_axes_gets_its_pairs_along_its_expectations_axis(
    toy_page: Path,
) -> None:
    from tests._synthetic_history import TOY_ROWS, TOY_WIDTHS, toy_case

    (gpu,) = _data(toy_page.read_text())["gpus"]
    assert len(gpu["runs"]["id"]) == 4 and len(gpu["cases"]) == 36
    cases = {c["id"]: c for c in gpu["cases"]}
    # its reference is `naive`: the page names it; its rows carry GB/s, not TFLOP/s
    assert gpu["reference"] == "naive" and gpu["runs"]["reference"] == ["naive"] * 4
    fused = cases[toy_case("fused", "norm", 32, 64)]
    assert fused["metric"] == "ratio_to_reference" and fused["unit"] == "GB/s"
    assert all(x is not None and x > 0 for x in fused["tp"])
    assert cases[toy_case("naive", "norm", 32, 64)]["metric"] == "median_s"
    # its parameters as the benchmark names them (no dtype, layout or K made up)
    params = cases[toy_case("fused", "norm", 32, 64)]["params"]
    assert params == {"op": "norm", "rows": 32, "width": 64}, params
    # one pair per setting of the other axes where the expectation holds (op "norm" only), along
    # width; its case ids the benchmark's own
    assert [(p["faster"], p["than"], p["per"], p["where"]) for p in gpu["pairs"]] == [
        ("fused", "eager", "width", {"op": "norm", "rows": rows}) for rows in TOY_ROWS
    ]
    for p, rows in zip(gpu["pairs"], TOY_ROWS, strict=True):
        assert p["label"] == f"norm rows={rows}"
        assert p["values"] == list(TOY_WIDTHS)
        assert p["cases"] == [toy_case("fused", "norm", rows, w) for w in TOY_WIDTHS]
        assert all(c in cases for c in p["cases"])
        for want, series in zip((0.6, 0.9, 1.2), p["rt"], strict=True):
            assert series == [pytest.approx(want, rel=0.02)] * 4
        assert p["crossover"] == [4096] * 4  # where fused stops winning


def test_chromium_draws_the_pairs_of_another_benchmark_against_its_axis(
    toy_page: Path, tmp_path: Path
) -> None:
    done = _chromium(toy_page, "", tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert done.returncode == 0, done.stderr[-2000:]
    attrs = _body(done.stdout)
    assert attrs.get("drawn") == DRAWN, attrs
    assert "errors" not in attrs, done.stdout[-2000:]
    assert _console(done.stderr) == []
    assert "Relational pairs (faster / than, same run)" in done.stdout
    ratio = done.stdout[done.stdout.index('id="ratio-k"') : done.stdout.index('id="crossover"')]
    assert re.search(r'class="xtitle"[^>]*>width<', ratio), ratio[-3000:]
    assert "ratio against width" in ratio
    assert "fused / eager norm rows=32 (selected)" in ratio
    for w in TOY_WIDTHS_TEXT:
        assert re.search(rf'class="xtick"[^>]*>.*?>{w}<', ratio, re.S)


def test_chromium_names_the_reference_and_the_throughput_of_another_benchmark(
    toy_page: Path, tmp_path: Path
) -> None:
    """The toy's reference is `naive` and its rows carry GB/s: every text says so, none says
    cuBLAS, torch or TFLOP/s."""
    from tests._synthetic_history import toy_case

    case = toy_case("fused", "norm", 4096, 512)
    texts = {}
    for metric in ("v", "tflops"):
        done = _chromium(
            toy_page,
            f"#case={case}&metric={metric}",
            tmp_path,
            "--dump-dom",
            "--window-size=1280,2000",
        )
        assert done.returncode == 0, done.stderr[-2000:]
        attrs = _body(done.stdout)
        assert attrs.get("drawn") == DRAWN and "errors" not in attrs, attrs
        assert _console(done.stderr) == []
        dom = done.stdout
        chart = dom[dom.index('id="case-chart"') : dom.index('id="case-notes"')]
        texts[metric] = re.findall(r'class="ytitle"[^>]*>([^<]*)<', chart)
        assert "cuBLAS" not in _visible(dom) and "TFLOP" not in _visible(dom)
        help_text = dom[dom.index('id="overview-section"') : dom.index('id="overview"')]
        assert 'same-run ratio to <span class="ref-name">naive</span>' in help_text
        assert (
            'value="v"' in dom
            and '> ratio to <span class="ref-name">naive</span> (same run)' in dom
        )
        assert "ratio to naive, or the median for naive itself" in dom
        assert 'id="tp-unit"> (GB/s)<' in dom
        assert "reference variant naive" in dom  # the selected run's box
    assert texts == {
        "v": ["ratio to naive (same run)"],
        "tflops": ["GB/s (the benchmark's bytes / median)"],
    }


TOY_WIDTHS_TEXT = ("64", "512", "4096")
