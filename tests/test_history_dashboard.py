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
from tests._synthetic_history import ROOT, STEP_AT, STEPPED
from tilegate.crosstile import CrossTilePair
from tilegate.history.cli import main
from tilegate.history.dashboard import write_dashboard
from tilegate.history.store import open_store


def _data(page: str) -> dict:  # type: ignore[type-arg]
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def page(step_history: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    store, _ = step_history
    out = tmp_path_factory.mktemp("dashboard") / "dashboard.html"
    assert main(["dashboard", "--store", str(store), "--out", str(out)]) == 0
    return out


def test_the_page_is_one_self_contained_file(page: Path) -> None:
    text = page.read_text()
    assert "<link" not in text
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(", text)
    assert "<script src" not in text and "<canvas" in text


def test_the_page_data_holds_the_series_change_points_and_crossovers(
    page: Path, step_history: tuple[Path, list[Path]]
) -> None:
    data = _data(page.read_text())
    (gpu,) = data["gpus"]
    assert gpu["slug"] == "nvidia-h200" and len(gpu["runs"]["id"]) == 60
    cases = {c["id"]: c for c in gpu["cases"]}
    assert len(cases) == 96
    flagged = {k for k, c in cases.items() if c["cps"]}
    assert flagged == set(STEPPED)
    for key in STEPPED:
        (cp,) = cases[key]["cps"]
        assert cp["i"] == STEP_AT and cp["env"] == ["triton 3.6.0 -> 3.9.0"]
    c = cases["xtile_persistent-fp16-nt-K128"]
    assert all(v is not None for v in c["v"]) and len(c["verdict"]) == 60
    assert set(c["verdict"]) <= set("OUIR")  # judged against the real baseline at add time
    assert c["band"][0][0] == 0 and c["band"][0][2] == 0.04  # the baseline row's tolerance
    # the crossover per run is the gate's (tilegate.verdict.CrossTilePair.crossover)
    for fam in gpu["pairs"]:
        rt = {
            K: cases[f"{fam['faster']}-{fam['dtype']}-{fam['layout']}-K{K}"]["rt"]
            for K in fam["Ks"]
        }
        for i in (0, 30, 59):
            want = CrossTilePair.crossover({K: rt[K][i] for K in fam["Ks"]})
            assert fam["crossover"][i] == (0 if want is None else want)


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
            "cuda, harness_version, M, N, throttled, source, added_at FROM runs WHERE run_id < 1000",
            [k, f"-{k}", f"-{k}", k],
        )
        con.execute(
            "INSERT INTO cases SELECT * REPLACE (run_id + ? * 1000 AS run_id, median_s * (1 + ? * 1e-4) AS median_s) "
            "FROM cases WHERE run_id < 1000",
            [k, k],
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


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_chromium_draws_every_chart_without_errors_and_a_link_picks_the_case(
    page: Path, tmp_path: Path
) -> None:
    case = "tma_xtile_persistent-fp16-nn-K4096"
    done = _chromium(page, f"#gpu=nvidia-h200&case={case}&metric=med", tmp_path, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", done.stdout)
    assert body is not None, done.stdout[:500]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert attrs.get("drawn") == "case,ratio-k,crossover", attrs
    assert "errors" not in attrs, done.stdout[-2000:]
    assert attrs["case"] == case and attrs["gpu"] == "nvidia-h200"
    assert re.search(rf'<canvas id="case-chart"[^>]*data-case="{case}"', done.stdout)
    assert _console(done.stderr) == []


def test_chromium_screenshot_shows_the_charts(page: Path, tmp_path: Path) -> None:
    from matplotlib import image

    shot = tmp_path / "dashboard.png"
    case = STEPPED[0]
    done = _chromium(
        page, f"#case={case}", tmp_path, "--window-size=1400,2300", f"--screenshot={shot}"
    )
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert _console(done.stderr) == []
    pixels = image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2300, 1400)
    red = (pixels[..., 0] > 0.65) & (pixels[..., 1] < 0.3) & (pixels[..., 2] < 0.3)
    blue = (pixels[..., 2] > 0.6) & (pixels[..., 0] < 0.2)
    assert red.sum() > 500  # the change point line, the tolerance edge, the slower pair
    assert blue.sum() > 500  # the cross-tile pair lines
    assert np.unique(pixels.reshape(-1, 3).round(2), axis=0).shape[0] > 200
    artifacts = ROOT / ".perf"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shot, artifacts / "dashboard-screenshot.png")  # CI uploads .perf/
