"""The history store: what `history add` / `import` keep, and how they refuse bad input.

Runs are SYNTHETIC, resampled from the real H200 baseline (tests/_synthetic_history.py).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests._synthetic_history import REAL_BASELINE, REAL_BASELINES, ROOT, make_run
from tilegate.cli import main as tilegate_main
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError
from tilegate.store.files import load_results
from tilegate.store.historydb import open_store


def main(argv: list[str]) -> int:
    """`tilegate history ARGV`."""
    return tilegate_main(["history", *argv])


def _write(directory: Path, i: int, seed: int = 0, **kwargs: object) -> Path:
    data = make_run(i, np.random.default_rng(seed + i), rounds=60, stats_data=False, **kwargs)  # type: ignore[arg-type]
    path = directory / f"synthetic-run-{i:03d}.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [_write(tmp_path, i) for i in range(3)]


def _count(store: Path) -> tuple[int, int]:
    with open_store(store) as s:
        return s.count()


def test_add_keeps_each_case_with_its_summary_and_environment(
    tmp_path: Path, runs: list[Path]
) -> None:
    store = tmp_path / "h.duckdb"
    assert main(["add", str(runs[0]), "--store", str(store)]) == EXIT_OK
    run = load_results(runs[0])
    with open_store(store) as s:
        (stored,) = s.runs()
        table = s.case_table()
    assert (stored.gpu, stored.commit, stored.profile) == ("nvidia-h200", run.env.commit, "default")
    assert (stored.triton, stored.torch, stored.driver, stored.cuda) == (
        "3.6.0",
        "2.11.0+cu130",
        "580.159.04",
        "13.0",
    )
    assert len(table["case_id"]) == len(run.rows) == 96
    i = list(table["case_id"]).index("xtile_persistent-fp16-nt-K128")
    row = run.rows["xtile_persistent-fp16-nt-K128"]
    q = statistics.quantiles(row.samples_s, n=4, method="inclusive")
    assert table["median_s"][i] == pytest.approx(row.median_s)
    assert (table["q1_s"][i], table["q3_s"][i]) == pytest.approx((q[0], q[2]))
    assert table["ratio_to_reference"][i] == pytest.approx(row.ratio_to_reference)
    assert stored.reference == run.reference == "torch"  # the reference variant, by its name
    assert table["tflops"][i] == pytest.approx(row.tflops) and np.isnan(table["gbps"][i])
    assert table["ratio_to_twin"][i] == pytest.approx(row.ratio_to_twin)
    assert table["twin"][i] == "swizzle_persistent"
    assert table["verdict"][i] is None and np.isnan(table["tolerance"][i])
    torch = list(table["case_id"]).index("torch-fp16-nt-K128")
    assert np.isnan(table["ratio_to_reference"][torch])  # the reference has no ratio to itself


def test_verdicts_from_the_baseline_and_from_a_file(tmp_path: Path, runs: list[Path]) -> None:
    store = tmp_path / "h.duckdb"
    assert (
        main(["add", str(runs[0]), "--store", str(store), "--baselines", str(REAL_BASELINES)]) == 0
    )
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps({"tiled-fp16-nn-K128": "REGRESSED"}))
    assert main(["add", str(runs[1]), "--store", str(store), "--verdicts", str(verdicts)]) == 0
    base = json.loads(REAL_BASELINE.read_text())["rows"]
    with open_store(store) as s:
        first, second = s.runs()
        t = s.case_table()
    mine = t["run_id"] == first.run_id
    assert set(t["verdict"][mine]) <= {"OK", "UNSURE", "IMPROVED", "REGRESSED"}
    i = list(t["case_id"][mine]).index("xtile_persistent-fp16-nt-K128")
    b = base["xtile_persistent-fp16-nt-K128"]
    assert t["tolerance"][mine][i] == b["tolerance"]
    assert t["base_median_s"][mine][i] == b["median_s"]
    assert t["base_ratio_to_reference"][mine][i] == pytest.approx(
        b["median_s"] / base["torch-fp16-nt-K128"]["median_s"]
    )
    other = t["run_id"] == second.run_id
    assert [v for v in t["verdict"][other] if v is not None] == ["REGRESSED"]


def test_a_run_already_stored_is_refused_and_named_and_nothing_is_added(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "h.duckdb"
    assert main(["add", str(runs[0]), "--store", str(store)]) == 0
    capsys.readouterr()
    # runs[1] is new, runs[0] is not: the whole add is refused
    assert main(["add", str(runs[1]), str(runs[0]), "--store", str(store)]) == EXIT_CANNOT_JUDGE
    err = capsys.readouterr().err
    assert str(runs[0]) in err and "already holds 1" in err and "commit" in err
    assert _count(store) == (1, 96)
    assert main(["add", str(runs[1]), str(runs[0]), "--store", str(store), "--skip-existing"]) == 0
    assert "skipped (already stored)" in capsys.readouterr().out
    assert _count(store) == (2, 192)


def test_the_same_run_twice_in_one_add_is_refused(tmp_path: Path, runs: list[Path]) -> None:
    copy = tmp_path / "copy.json"
    copy.write_text(runs[0].read_text())
    store = tmp_path / "h.duckdb"
    with pytest.raises(InputError, match="are the same run"), open_store(store, write=True) as s:
        s.add([(load_results(runs[0]), {}), (load_results(copy), {})])
    assert not store.exists(), "a refused first add creates no empty store"


def test_a_failure_inside_the_transaction_leaves_the_store_as_it_was(
    tmp_path: Path, runs: list[Path]
) -> None:
    from tilegate.store.historydb import Judged

    store = tmp_path / "h.duckdb"
    good, bad = load_results(runs[0]), load_results(runs[1])
    with (
        pytest.raises(InputError, match=r"name case.* the run does not hold"),
        open_store(store, write=True) as s,
    ):
        # the first run is inserted, then the second one's verdicts name an unknown case
        s.add([(good, {}), (bad, {"no-such-case": Judged("OK")})])
    assert not store.exists(), "a refused first add creates no empty store"
    # an existing store keeps what it held
    with open_store(store, write=True) as s:
        s.add([(good, {})])
    with (
        pytest.raises(InputError, match=r"name case.* the run does not hold"),
        open_store(store, write=True) as s,
    ):
        s.add([(bad, {"no-such-case": Judged("OK")})])
    assert _count(store) == (1, _count(store)[1])


def test_a_corrupt_store_is_exit_2_named_and_left_untouched(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "h.duckdb"
    junk = b"this is not a database" * 300
    store.write_bytes(junk)
    for argv in (["add", str(runs[0])], ["list"], ["dashboard", "--out", str(tmp_path / "d.html")]):
        assert main([*argv, "--store", str(store)]) == EXIT_CANNOT_JUDGE
        err = capsys.readouterr().err
        assert str(store) in err and "not a valid DuckDB database" in err
    assert store.read_bytes() == junk
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    assert main(["add", str(runs[0]), "--store", str(empty)]) == EXIT_CANNOT_JUDGE
    assert empty.stat().st_size == 0


def test_a_duckdb_file_that_is_not_a_history_store_is_refused(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    assert main(["add", str(runs[0]), "--store", str(other)]) == EXIT_CANNOT_JUDGE
    assert "not a tilegate history store (tables: t)" in capsys.readouterr().err


def test_reading_a_missing_store_is_exit_2_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "nope.duckdb"
    assert main(["list", "--store", str(store)]) == EXIT_CANNOT_JUDGE
    assert "does not exist" in capsys.readouterr().err
    assert not store.exists()


def test_a_second_writer_waits_for_the_first_and_nothing_is_lost(
    tmp_path: Path, runs: list[Path]
) -> None:
    store = tmp_path / "h.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from tilegate.store.historydb import open_store\n"
            "from tilegate.store.files import load_results\n"
            "with open_store(sys.argv[1], write=True) as s:\n"
            "    s.add([(load_results(sys.argv[2]), {})])\n"
            "    print('holding', flush=True)\n"
            "    time.sleep(1.5)\n",
            str(store),
            str(runs[0]),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        # the lock is held: a writer that will not wait fails cleanly, naming the lock
        with (
            pytest.raises(InputError, match="locked by another tilegate process"),
            open_store(store, write=True, lock_timeout=0.2),
        ):
            pass
        # one that waits gets in after the first is done, and both runs are there
        assert main(["add", str(runs[1]), "--store", str(store), "--lock-timeout", "60"]) == 0
    finally:
        assert holder.wait(timeout=60) == 0
        if holder.stdout is not None:
            holder.stdout.close()
    assert _count(store) == (2, 192)


def test_injected_runs_and_runs_without_commit_are_refused(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(runs[0].read_text())
    data["machine_info"]["tilegate"]["injected"] = ["slow:xtile_persistent"]
    injected = tmp_path / "injected.json"
    injected.write_text(json.dumps(data))
    store = tmp_path / "h.duckdb"
    assert main(["add", str(injected), "--store", str(store)]) == EXIT_CANNOT_JUDGE
    assert "test-only injections" in capsys.readouterr().err
    data = json.loads(runs[0].read_text())
    data["commit_info"] = {}
    nocommit = tmp_path / "nocommit.json"
    nocommit.write_text(json.dumps(data))
    assert main(["add", str(nocommit), "--store", str(store)]) == EXIT_CANNOT_JUDGE
    assert "no commit_info.id" in capsys.readouterr().err
    assert not store.exists() or _count(store) == (0, 0)


def test_import_takes_every_results_file_and_lists_what_it_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "perf"
    (d / "nested").mkdir(parents=True)
    _write(d, 0)
    _write(d / "nested", 1)
    (d / "baseline.json").write_text(json.dumps({"schema_version": 1, "rows": {}}))
    store = tmp_path / "h.duckdb"
    assert main(["import", str(d), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"not a tilegate results file, skipped: {d / 'baseline.json'}" in out
    assert _count(store) == (2, 192)
    (d / "cut-short.json").write_text('{"benchmarks": [')
    assert main(["import", str(d), "--store", str(store), "--skip-existing"]) == EXIT_CANNOT_JUDGE
    assert "cut-short.json is not valid JSON" in capsys.readouterr().err


def test_prune_keeps_the_latest_runs_of_each_gpu(tmp_path: Path) -> None:
    store = tmp_path / "h.duckdb"
    paths = [_write(tmp_path, i) for i in range(5)]
    assert main(["add", *map(str, paths), "--store", str(store)]) == 0
    assert main(["prune", "--keep", "2", "--store", str(store)]) == 0
    with open_store(store) as s:
        kept = [r.commit for r in s.runs()]
        assert s.count() == (2, 192)
    assert kept == [load_results(p).env.commit for p in paths[-2:]]


def test_tilegate_history_is_the_same_command(tmp_path: Path, runs: list[Path]) -> None:
    from tilegate.cli import main as tilegate_main

    store = tmp_path / "h.duckdb"
    assert tilegate_main(["history", "add", str(runs[0]), "--store", str(store)]) == EXIT_OK
    assert (
        tilegate_main(["history", "add", str(runs[0]), "--store", str(store)]) == EXIT_CANNOT_JUDGE
    )
    assert _count(store) == (1, 96)


def test_add_stores_the_repository_and_ci_run_links(
    tmp_path: Path, runs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "h.duckdb"
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://ghe.example.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "perf/tilegate")
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    assert main(["add", str(runs[0]), "--store", str(store)]) == EXIT_OK
    # options win over the environment (a fork, another host); an import of several files
    # takes no run URL from the environment: this run did not measure them
    assert (
        main(
            [
                "add",
                str(runs[1]),
                "--store",
                str(store),
                "--repo-url",
                "https://git.example.org/me/tg/",
                "--run-url",
                "https://ci.example.org/7",
            ]
        )
        == EXIT_OK
    )
    assert main(["import", str(tmp_path), "--store", str(store), "--skip-existing"]) == EXIT_OK
    with open_store(store) as s:
        got = {r.source: (r.repo_url, r.run_url) for r in s.runs()}
    assert got[str(runs[0])] == (
        "https://ghe.example.com/perf/tilegate",
        "https://ghe.example.com/perf/tilegate/actions/runs/4242/attempts/2",
    )
    assert got[str(runs[1])] == ("https://git.example.org/me/tg", "https://ci.example.org/7")
    assert got[str(runs[2])] == ("https://ghe.example.com/perf/tilegate", None)
    assert (
        main(["add", str(runs[2]), "--store", str(tmp_path / "x.duckdb"), "--repo-url", "ftp://x"])
        == EXIT_CANNOT_JUDGE
    )


def test_a_store_of_another_schema_version_is_refused_and_one_without_the_memory_columns_gains_them(
    tmp_path: Path, runs: list[Path]
) -> None:
    """Versions 1 to 3 are no longer read (issue 51: legacy readers); a version-4 store written
    before peak_bytes and pct_of_peak reads them as NULL and gains them at its first write."""
    store = tmp_path / "h.duckdb"
    assert main(["add", str(runs[0]), "--store", str(store)]) == EXIT_OK
    con = duckdb.connect(str(store))
    for col in ("peak_bytes", "pct_of_peak"):
        con.execute(f"ALTER TABLE cases DROP COLUMN {col}")
    con.close()
    with open_store(store) as s:
        table = s.case_table()
    assert np.isnan(table["peak_bytes"]).all() and np.isnan(table["pct_of_peak"]).all()
    assert main(["add", str(runs[1]), "--store", str(store)]) == EXIT_OK
    con = duckdb.connect(str(store))
    names = {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns()").fetchall()}
    assert {"peak_bytes", "pct_of_peak"} <= names
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    con.close()
    before = store.read_bytes()
    version = r"h\.duckdb has schema_version 3; this tilegate reads version 4"
    for write in (False, True):
        with pytest.raises(InputError, match=version), open_store(store, write=write):
            pass
    assert main(["list", "--store", str(store)]) == EXIT_CANNOT_JUDGE
    assert store.read_bytes() == before


def test_a_benchmark_whose_reference_has_another_name_is_stored_under_that_name(
    tmp_path: Path,
) -> None:
    """A SYNTHETIC toy run (tests/_synthetic_history.py): reference `naive`, rows with gbps."""
    from tests._synthetic_history import TOY_REFERENCE, toy_case, toy_run

    path = tmp_path / "toy.json"
    path.write_text(json.dumps(toy_run(0, np.random.default_rng(3))))
    store = tmp_path / "h.duckdb"
    assert main(["add", str(path), "--store", str(store)]) == EXIT_OK
    run = load_results(path)
    with open_store(store) as s:
        (stored,) = s.runs()
        table = s.case_table()
    assert stored.reference == run.reference == TOY_REFERENCE == "naive"
    ids = list(table["case_id"])
    fused = toy_case("fused", "norm", 32, 64)
    i = ids.index(fused)
    assert table["ratio_to_reference"][i] == pytest.approx(run.rows[fused].ratio_to_reference)
    assert np.isnan(table["ratio_to_reference"][ids.index(toy_case("naive", "norm", 32, 64))])
    assert table["gbps"][i] == pytest.approx(run.rows[fused].gbps)
    assert np.isnan(table["tflops"]).all()  # no flops declared: no 2·M·N·K made up


def test_a_dirty_run_is_stored_but_never_part_of_a_series(tmp_path: Path) -> None:
    from tilegate.history.changepoints import series

    paths = [_write(tmp_path, i) for i in range(4)]
    data = json.loads(paths[2].read_text())
    data["commit_info"]["dirty"] = True
    paths[2].write_text(json.dumps(data))
    store = tmp_path / "h.duckdb"
    assert main(["add", *map(str, paths), "--store", str(store)]) == EXIT_OK
    with open_store(store) as s:
        runs, ss = series(s, "nvidia-h200")
    assert [bool(r.dirty) for r in runs] == [False, False, True, False]
    assert all(list(x.positions) == [0, 1, 3] for x in ss)


def test_a_half_created_store_is_named_on_read_and_finished_by_the_next_add(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """What a first `history add` killed while creating the store leaves: DuckDB's file, no table."""
    store = tmp_path / "h.duckdb"
    duckdb.connect(str(store)).close()
    assert main(["list", "--store", str(store)]) == EXIT_CANNOT_JUDGE
    err = capsys.readouterr().err
    assert "half-created" in err and "history add" in err, err
    assert main(["add", str(runs[0]), "--store", str(store)]) == EXIT_OK
    assert _count(store)[0] == 1
    assert main(["list", "--store", str(store)]) == EXIT_OK


def test_a_refused_add_creates_no_store_and_changepoints_on_an_empty_store_says_so(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "h.duckdb"
    copy = tmp_path / "copy.json"
    copy.write_text(runs[0].read_text())
    assert main(["add", str(runs[0]), str(copy), "--store", str(store)]) == EXIT_CANNOT_JUDGE
    assert not store.exists() and not Path(f"{store}.wal").exists()
    with open_store(store, write=True):
        pass  # an empty store (every run pruned, say)
    capsys.readouterr()
    for extra in ([], ["--new"]):
        assert main(["changepoints", *extra, "--store", str(store)]) == EXIT_OK
        out = capsys.readouterr().out
        assert "holds no runs" in out, out
