"""tilegate.judge.coverage: every case and expectation of the (base's) protocol measured, else
exit 1 naming each case and why; narrowing by hand is "not selected" (issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_FAIL, EXIT_OK
from tilegate.judge.coverage import coverage
from tilegate.judge.outcome import outcome

EXPECTATION = {"faster": "x", "than": "y", "per": "K", "where": {}}


def _case(variant: str, k: int, m: int = 40) -> dict[str, Any]:
    return {"variant": variant, "params": {"K": k, "M": m}}


def _facts(**over: Any) -> dict[str, Any]:
    expected = {f"{v}-K{k}": _case(v, k) for v in ("ref", "x", "y") for k in (24, 40)}
    facts: dict[str, Any] = {
        "expected": {
            "protocol": "the base's (HEAD^1)",
            "profile": "smoke",
            "cases": expected,
            "expectations": [EXPECTATION],
        },
        "grid": {"axes": {"K": [24, 40]}, "fixed": {"M": 40}, "cases": sorted(expected)},
        "not_selected": [],
        "narrowed": [],
    }
    facts.update(over)
    return facts


ALL = [f"{v}-K{k}" for v in ("ref", "x", "y") for k in (24, 40)]


def test_everything_measured_covers_and_passes() -> None:
    cov = coverage(_facts(), ALL, [EXPECTATION], registry=["ref", "x", "y"])
    assert cov is not None and not cov.fails and cov.expected == 6
    assert outcome(None, None, (), cov).code == EXIT_OK


def test_each_unmeasured_case_is_named_with_why_and_fails() -> None:
    facts = _facts(
        grid={"axes": {"K": [24]}, "fixed": {"M": 32}, "cases": ["ref-K24", "y-K24"]},
        skipped={"y-K24": "y cannot run here: no TMA"},
        failed={"ref-K24": "ref-K24: wrong result: relative error 0.5 > 0.01"},
    )
    cov = coverage(facts, [], [], registry=["ref", "y"])
    assert cov is not None and cov.fails
    why = {m.key: m.why for m in cov.missing}
    assert why["x-K24"] == "variant gone: x is not in the registry"
    assert why["y-K40"].startswith("axis value gone: K=40 is not in the run's profile")
    assert "fixed parameter changed: M 40 -> 32" in why["y-K40"]
    assert why["y-K24"] == "skipped: y cannot run here: no TMA"
    assert why["ref-K24"].startswith("failed: ref-K24: wrong result")
    assert cov.expectations and "x beats y per K" in cov.expectations[0]
    result = outcome(None, None, (), cov)
    assert result.code == EXIT_FAIL
    assert result.parts[:2] == [
        "6 cases of the protocol not measured",
        "1 expectation of the protocol not checked",
    ]


def test_narrowing_by_hand_is_not_selected_not_a_failure() -> None:
    facts = _facts(
        not_selected=[k for k in ALL if k.endswith("K40")], narrowed=["--perf-axis K=24"]
    )
    cov = coverage(facts, [k for k in ALL if k.endswith("K24")], [EXPECTATION])
    assert cov is not None and not cov.fails
    assert cov.not_selected == ("ref-K40", "x-K40", "y-K40")
    assert cov.narrowed == ("--perf-axis K=24",)


def test_a_case_neither_side_can_run_here_is_not_measurable_not_failing() -> None:
    skipped = {"y-K24": "y cannot run here: sm_100 only", "y-K40": "y cannot run here"}
    both = {"head": ["y-K24", "y-K40"], "base": ["y-K24", "y-K40"]}
    measured = [k for k in ALL if not k.startswith("y")]
    cov = coverage(_facts(skipped=skipped, unsupported=both), measured, [EXPECTATION])
    assert cov is not None and not cov.fails
    assert [m.key for m in cov.not_measurable] == ["y-K24", "y-K40"]
    # the pull request's variant refuses a machine the base's ran on: a failure
    head_only = {"head": ["y-K24", "y-K40"], "base": []}
    cov = coverage(_facts(skipped=skipped, unsupported=head_only), measured, [EXPECTATION])
    assert cov is not None and [m.key for m in cov.missing] == ["y-K24", "y-K40"]


def test_a_head_only_case_the_bases_declaration_keeps_off_this_machine_is_not_measurable() -> None:
    # the reference is timed on the head's side only: the base's declaration vouches for it
    # (fla's gated backward, refused on Hopper with Triton < 3.7.1 by fla itself; the H200)
    skipped = {"ref-K24": "ref cannot run here: refused"}
    measured = [k for k in ALL if k != "ref-K24"]
    head_only = {"head": ["ref-K24"], "base": []}
    facts = _facts(skipped=skipped, unsupported=head_only)
    facts["expected"]["cases"]["ref-K24"]["unsupported"] = "refused"
    cov = coverage(facts, measured, [EXPECTATION])
    assert cov is not None and not cov.fails
    assert [m.key for m in cov.not_measurable] == ["ref-K24"]
    # the base's declaration runs it here: the pull request's refusal fails
    del facts["expected"]["cases"]["ref-K24"]["unsupported"]
    cov = coverage(facts, measured, [EXPECTATION])
    assert cov is not None and [m.key for m in cov.missing] == ["ref-K24"]


def test_stored_baseline_rows_of_the_profile_must_be_measured_renames_followed() -> None:
    facts = _facts()
    facts["expected"]["cases"] = {
        k: v for k, v in facts["expected"]["cases"].items() if k[0] != "y"
    }
    baseline = {
        "y-K24": ("y", "K24", {"K": 24, "M": 40}),  # a row of the profile's grid: required
        "old-K40": ("old", "K40", {"K": 40, "M": 40}),  # renamed to x: x-K40 covers it
        "y-K4096": ("y", "K4096", {"K": 4096, "M": 40}),  # another profile's grid point
    }
    measured = ["ref-K24", "ref-K40", "x-K24", "x-K40"]
    cov = coverage(facts, measured, [EXPECTATION], renamed={"x": ["old"]}, baseline=baseline)
    assert cov is not None and [m.key for m in cov.missing] == ["y-K24"]


def test_results_without_coverage_facts_have_no_coverage() -> None:
    assert coverage(None, ALL, []) is None
    assert coverage({"narrowed": []}, ALL, []) is None


def test_a_stored_row_the_pull_request_stops_measuring_fails_by_coverage_not_exit_2(
    tmp_path: Path,
) -> None:
    """A pull request that makes a variant skip on this GPU (its registry says unsupported):
    the stored baseline holds its rows, the run lacks them. The stored check judges the rest and
    coverage fails the run (exit 1) naming each case; measured on the H200 this was exit 2
    ("results lack 3 rows ... although their groups were measured") before."""
    from tests._factories import VARIANTS, build_baseline, key, make_run, write
    from tilegate.run.gate import gate
    from tilegate.store.files import save_baseline

    baselines = tmp_path / "baselines"
    baselines.mkdir()
    save_baseline(baselines / "nvidia-h200.json", build_baseline(tmp_path))
    data = make_run(seed=7)
    dropped = [key("tma_xtile_persistent", K=k) for k in (128, 512, 4096)]
    data["benchmarks"] = [
        b for b in data["benchmarks"] if b["extra_info"]["tilegate"]["key"] not in dropped
    ]
    expected = {
        b["extra_info"]["tilegate"]["key"]: {
            "variant": b["extra_info"]["tilegate"]["variant"],
            "params": b["params"],
        }
        for b in make_run(seed=7)["benchmarks"]
    }
    data["machine_info"]["tilegate"]["coverage"] = {
        "expected": {
            "protocol": "this run's",
            "profile": "quick",
            "cases": expected,
            "expectations": [],
        },
        "grid": {"axes": {"K": [128, 512, 4096]}, "fixed": {}, "cases": sorted(expected)},
        "not_selected": [],
        "narrowed": [],
    }
    data["machine_info"]["tilegate"]["registry"] = list(VARIANTS)
    results = write(tmp_path / "results.json", data)
    gated = gate(results, baselines_dir=baselines, report_path=tmp_path / "report.md")
    assert gated.error is None, gated.error
    assert gated.code == EXIT_FAIL, gated.text[:600]
    assert "3 cases of the protocol not measured" in gated.text.splitlines()[0]
    for case in dropped:
        assert f"`{case}`" in gated.text.split("## Coverage", 1)[1]


def test_a_per_case_refusal_is_asked_with_each_cases_parameters_and_reaches_coverage() -> None:
    from tilegate.declare import Axis, Benchmark, Profile, Variant
    from tilegate.harness.worker import _facts

    def make(params: Any, inputs: Any) -> Any:
        return lambda: inputs

    by_machine = Variant("old", make, unsupported=lambda cap: "sm_80 only" if cap else None)
    by_case = Variant(
        "x", make, unsupported=lambda cap, params: "no K40" if params.get("K") == 40 else None
    )
    assert by_machine.unsupported_reason((9, 0), {"K": 40}) == "sm_80 only"
    assert by_machine.unsupported_reason(None, {"K": 40}) is None
    assert by_case.unsupported_reason(None, {"K": 40}) == "no K40"
    assert by_case.unsupported_reason(None, {"K": 24}) is None
    assert by_case.unsupported_reason((9, 0)) is None, "no case asked about: no parameters"
    bench = Benchmark(
        name="toy",
        variants=(Variant("ref", make, reference=True, unsupported=by_case.unsupported), by_case),
        profiles=(Profile("p", (Axis("K", (24, 40), label="K{}"),), interpreter=True),),
        inputs=lambda params, device, seed: params["K"],
        reference_output=lambda params, x: x,
        tolerance=lambda params: 0.0,
    )
    cases = _facts(bench, "p").profile_cases
    assert cases is not None
    assert {k: c.get("unsupported") for k, c in cases.items()} == {
        "ref-K24": None, "ref-K40": "no K40", "x-K24": None, "x-K40": "no K40"
    }  # fmt: skip
