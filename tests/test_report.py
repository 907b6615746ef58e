"""The markdown report and the plots: what a reader sees first, and that it is true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._factories import load_run
from tilegate.judge.crosstile import Status
from tilegate.judge.gate import judgement
from tilegate.judge.verdict import Verdict, compare
from tilegate.report.render import render
from tilegate.store.files import load_baseline, load_results

FIXTURES = Path(__file__).parent / "fixtures"


def baseline():  # type: ignore[no-untyped-def]
    return load_baseline(FIXTURES / "synthetic-baselines" / "nvidia-h200.json")


def regressed_report() -> str:
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    return render(judgement(run, compare(run, baseline())))


def test_headline_and_section_order() -> None:
    text = regressed_report()
    assert text.startswith("# tilegate: FAIL: 2 regressions, 1 broken expectation\n")
    order = [
        "## Deciding cases",
        "## Against the stored baseline",
        "- **Regressed**",
        "## Environment",
        "## Relational pairs",
        "## Expectations",
        "## All rows",
    ]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)


def test_summary_names_the_rows_and_the_fix() -> None:
    text = regressed_report()
    assert "`xtile_persistent-fp16-nt-K128` +4" in text  # +40 % against the baseline
    assert "`persistent-fp16-nt-K4096` +" in text
    assert (
        "**Improved** (1): `grouped-fp16-nt-K512`" in text
        and "`tilegate rebaseline --measure 3` on this GPU" in text
    )
    assert "xtile_persistent stopped winning" in text


def test_the_rebaseline_hint_names_the_file_it_writes_not_the_one_read(tmp_path: Path) -> None:
    """A pull request's gate reads the base's baseline from its output directory (a temp dir
    in CI): the hint names what `tilegate rebaseline --measure 3` writes in the repository."""
    read = tmp_path / "base-baselines" / "abc" / "baselines" / "nvidia-h200.json"
    read.parent.mkdir(parents=True)
    read.write_text((FIXTURES / "synthetic-baselines" / "nvidia-h200.json").read_text())
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    text = render(judgement(run, compare(run, load_baseline(read))))
    (hint,) = [line for line in text.splitlines() if line.startswith("- **Improved**")]
    assert (
        hint.endswith("on this GPU (writes baselines/nvidia-h200.json).")
        and str(tmp_path) not in hint
    )


def test_environment_flags_the_new_triton() -> None:
    text = regressed_report()
    assert "| Triton | 3.7.0 | 3.6.0 | **differs** |" in text
    assert "| driver | 580.159.04 | 580.159.04 |  |" in text
    assert "Differs from the baseline: Triton." in text


def test_cross_tile_table_like_the_write_up() -> None:
    text = regressed_report()
    assert "### xtile persistent vs swizzle persistent (fp16, nt)" in text
    assert (
        "| K | swizzle persistent (ms) | xtile persistent (ms) | change | baseline change | expectation |"
        in text
    )
    k128 = next(
        line for line in text.splitlines() if line.startswith("| 128 |") and "**FAIL**" in line
    )
    cells = [c.strip() for c in k128.strip("|").split("|")]
    assert cells[3].startswith("+")  # cross-tile now slower than its twin
    assert cells[4].startswith("-2")  # it won by ~27 % at rebaseline
    assert (
        "Crossover (smallest K where xtile_persistent stops winning): **K=128 (loses from the smallest K)**; baseline: none up to K=4096"
        in text
    )


def test_full_table_has_every_row() -> None:
    text = regressed_report()
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| `") and "-fp16-nt-K" in line and "ms" not in line
    ]
    assert len([r for r in rows if r.count("|") == 9]) == 24
    assert "| **REGRESSED** |" in text


def test_a_pass() -> None:
    run = load_results(FIXTURES / "synthetic-results-h200-quick.json")
    text = render(judgement(run, compare(run, baseline())))
    assert text.startswith("# tilegate: PASS\n")
    assert "All 24 rows within tolerance; all 4 expectation checks hold." in text


def test_throttled_run_says_so_prominently(tmp_path: Path) -> None:
    run = load_run(tmp_path, "hot.json", seed=3, rounds=20, throttled=True)
    text = render(judgement(run, compare(run, baseline())))
    assert "> **The GPU THROTTLED during this run** (GPU slowed down (sw_thermal_slowdown)" in text
    assert text.index("THROTTLED") < text.index("## Environment")


def test_injected_run_says_so(tmp_path: Path) -> None:
    run = load_run(tmp_path, "inj.json", seed=3, rounds=20, injected=("wrong=tiled",))
    assert "TEST-ONLY injections in this run:** wrong=tiled" in render(
        judgement(run, compare(run, baseline()))
    )


def test_smoke_report_without_baseline() -> None:
    run = load_results(FIXTURES / "synthetic-results-smoke.json")
    text = render(judgement(run, None, report_only=True, no_baseline="No baseline."))
    assert text.startswith("# tilegate: REPORT ONLY (no baseline, no verdict)")
    assert "**SMOKE RUN**" in text and "meaningless" in text
    assert "| K | swizzle persistent (ms) | xtile persistent (ms) | change |\n" in text
    assert "## Expectations" not in text


def test_report_only_with_a_baseline_would_fail() -> None:
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    assert render(judgement(run, compare(run, baseline()), report_only=True)).startswith(
        "# tilegate: REPORT ONLY (would fail)"
    )


def test_confirmed_report_shows_every_run() -> None:
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    conf = load_results(FIXTURES / "synthetic-results-regressed-confirm.json")
    text = render(judgement(run, compare(run, baseline(), [conf])))
    assert "confirmed by 1 re-measurement(s)" in text
    assert "| per run |" in text
    assert "confirmation: first run REGRESSED" in text


def test_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from tilegate.report.plots import make_plots

    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    files = make_plots(judgement(run, compare(run, baseline())), tmp_path)
    assert [f.name for f in files] == ["times-fp16-nt.png", "crosstile-fp16-nt.png"]
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 20_000
    text = render(judgement(run), plots=files, relative_to=tmp_path)
    assert "![crosstile-fp16-nt](crosstile-fp16-nt.png)" in text


def test_plots_without_baseline(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from tilegate.report.plots import make_plots

    files = make_plots(judgement(load_results(FIXTURES / "synthetic-results-smoke.json")), tmp_path)
    assert len(files) == 2


def test_a_new_triton_leads_the_report_and_its_warnings_are_listed(tmp_path: Path) -> None:
    from tests._factories import make_run, write

    data = make_run(
        seed=90, software={"torch": "2.11.0+cu130", "triton": "3.9.0", "python": "3.12.3"}
    )
    data["machine_info"]["tilegate"]["warnings"] = [
        {
            "category": "UserWarning",
            "message": "TRITON_DEFAULT_FP_FUSION is unset",
            "source": "triton/knobs.py:504",
            "count": 1,
            "first_case": "tiled-fp16-nt-K128",
        }
    ]
    run = load_results(write(tmp_path / "t39.json", data))
    text = render(judgement(run, compare(run, baseline())))
    lines = text.splitlines()
    banner = next(i for i, line in enumerate(lines) if "environment differs" in line)
    assert banner < lines.index("## Environment") and banner < 5, (
        "the first thing after the headline"
    )
    assert "Triton 3.6.0 -> 3.9.0" in lines[banner]
    assert "## Warnings from Triton / torch" in text
    assert "| UserWarning | TRITON_DEFAULT_FP_FUSION is unset | `triton/knobs.py:504` | 1 |" in text
    same = load_results(write(tmp_path / "t36.json", make_run(seed=91)))
    assert "environment differs" not in render(judgement(same, compare(same, baseline())))


# --- the deciding cases first, the rest folded ------------------------------------------------------


def visible(text: str) -> list[str]:
    """The lines a reader sees with every <details> block closed (its summary line stays)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("<details>"):
            assert not inside, "a <details> block inside another"
            out.append(line)
            inside = True
        elif line == "</details>":
            assert inside, "</details> without <details>"
            inside = False
        elif not inside:
            out.append(line)
    assert not inside, "a <details> block is never closed"
    return out


def folded(text: str) -> str:
    """Everything inside the <details> blocks."""
    return "\n".join(
        b.split("</summary>", 1)[1] for b in text.split("<details>")[1:] if "</details>" in b
    )


def sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def deciding_table(text: str) -> list[str]:
    """The first cell of each row of the `## Deciding cases` table."""
    from tilegate.report.pr_comment import deciding_section

    rows = [line for line in deciding_section(text).splitlines() if line.startswith("| ")]
    return [r.strip("|").split(" | ")[0].strip() for r in rows[1:]]


def aa_report(tmp_path: Path) -> tuple[str, object]:
    from tests._factories import make_run, write
    from tilegate.judge.abcompare import compare_ab

    # A/A: the head is the base (the same code hashes on both sides, every ratio 1 + noise)
    run = load_results(write(tmp_path / "aa.json", make_run(seed=41, rounds=60, ab={}, code={})))
    ab = compare_ab(run, None)
    return render(
        judgement(run, compare(run, baseline()), ab), suspects_path=tmp_path / "s.txt"
    ), ab


def test_an_aa_run_reads_in_one_screen_and_keeps_every_case(tmp_path: Path) -> None:
    text, ab = aa_report(tmp_path)
    assert text.startswith("# tilegate: PASS\n")
    shown = visible(text)
    assert len(shown) < 60, "\n".join(shown)
    assert sections(text)[0] == "## Deciding cases"
    assert "None: nothing fails (21 A/B case(s), 0 variant(s) with changed code" in text
    # nothing dropped: every A/B case and every stored-baseline row is there, folded
    hidden = folded(text)
    for c in ab.cases:  # type: ignore[attr-defined]
        assert f"| `{c.key}` |" in hidden and f"| `{c.key}` |" not in "\n".join(shown), c.key
    assert "| `tiled-fp16-nt-K128` | 0.4" in hidden  # its baseline row (ms), folded too
    assert text.count("| unchanged code |") == 21 and text.count("| ok |") >= 20


def test_a_stored_run_that_holds_reads_in_one_screen_with_the_not_measured_folded() -> None:
    # the real H200 quick run against the real (default-profile) baseline: 81 rows not measured
    run = load_results(FIXTURES / "recorded-h200-quick.json")
    stored = load_baseline(Path(__file__).parent.parent / "baselines" / "nvidia-h200.json")
    cmp = compare(run, stored)
    text = render(judgement(run, cmp))
    assert text.startswith("# tilegate: PASS\n")
    shown = visible(text)
    assert len(shown) < 60, "\n".join(shown)
    assert sections(text)[:2] == ["## Deciding cases", "## Against the stored baseline"]
    assert deciding_table(text) == []
    missing = [r.key for r in cmp.rows if r.verdict is Verdict.NOT_MEASURED]
    assert len(missing) == len(stored.rows) - len(run.rows) == 81
    hidden, seen = folded(text), "\n".join(shown)
    for k in missing:
        assert f"| `{k}` |" in hidden and f"| `{k}` |" not in seen, k
    assert "81 baseline row(s) not measured: not in this run's profile</summary>" in text
    # the not-measured expectations are folded with their table rows
    n = sum(c.status is Status.NOT_MEASURED for c in cmp.expectations)
    assert n and f"{n} expectation check(s) not measured in this run" in seen
    assert hidden.count("| not measured (both rows needed in the same run) |") == n


def test_a_failing_run_leads_with_exactly_its_deciding_cases(tmp_path: Path) -> None:
    from tests._factories import key, make_run, write
    from tilegate.judge.abcompare import compare_ab
    from tilegate.judge.outcome import outcome

    slow = key("tma_xtile_persistent", K=512)
    data = make_run(
        seed=3, rounds=300, ab={slow: 1.05}, code={}, base_code={"tma_xtile_persistent": "old"}
    )
    run = load_results(write(tmp_path / "ab.json", data))
    ab = compare_ab(run, None)
    cmp = compare(run, baseline())
    text = render(judgement(run, cmp, ab))
    assert text.startswith("# tilegate: FAIL: 1 case slower than its base")
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first] == "## Deciding cases"
    assert all(line == "" or line.startswith("> ") for line in lines[1:first])  # banners only
    result = outcome(cmp, ab)
    want = [f"`{c.key}`" for c in result.slower] + [f"`{r.key}`" for r in result.regressions]
    assert want and deciding_table(text) == want
    row = next(line for line in lines if line.startswith(f"| `{slow}` | SLOWER"))
    case = next(c for c in ab.cases if c.key == slow)
    assert f"| +{(case.ratio - 1) * 100:.1f}% |" in row and " .. " in row  # change, interval
    assert f"| {case.tolerance:.1%} |" in row
    # the stored-baseline failure: two REGRESSED rows and a broken expectation, nothing else
    text = regressed_report()
    assert deciding_table(text) == [
        "`xtile_persistent-fp16-nt-K128`",
        "`persistent-fp16-nt-K4096`",
        "`xtile_persistent` / `swizzle_persistent` fp16 nt K=128",
    ]
    assert (
        "| broken expectation | ratio 1.019 | <= 0.770: xtile_persistent stopped winning |" in text
    )


def test_what_changed_is_in_sight_and_the_rest_folded() -> None:
    text = regressed_report()
    seen = "\n".join(visible(text))
    # the pair with the broken expectation in full, its twin pair (unchanged) one line
    assert "### xtile persistent vs swizzle persistent (fp16, nt)" in seen
    assert "### tma xtile persistent" not in text
    assert (
        "<details><summary>tma xtile persistent vs tma swizzle persistent (fp16, nt): crossover K=4096; same as the baseline.</summary>"
        in text
    )
    # a new Triton: the environment table in full; the OK rows folded, the others in sight
    assert "| Triton | 3.7.0 | 3.6.0 | **differs** |" in seen
    assert "| **REGRESSED** |" in seen and "| improved |" in seen and "| ok |" not in seen
    assert "<details><summary>21 row(s) within tolerance" in text


def test_a_commit_is_shortened_only_when_it_is_a_hash(tmp_path: Path) -> None:
    """pytest-benchmark records `unversioned` outside a git checkout: the environment table
    said `unversione` (every commit was cut to 10 characters)."""
    import json

    data = json.loads((FIXTURES / "synthetic-results-smoke.json").read_text())
    for commit, shown in (
        ("unversioned", "| commit | unversioned"),
        ("ab" * 20, "| commit | ababababab |"),
    ):
        data["commit_info"]["id"] = commit
        path = tmp_path / "results.json"
        path.write_text(json.dumps(data))
        run = load_results(path)
        text = render(judgement(run, None, report_only=True, no_baseline="No baseline."))
        assert shown in text, [ln for ln in text.splitlines() if "commit" in ln]
