"""Identity-aware budgeting (tilegate.harness.budget): sentinels, the stopping rule, its alpha, caps."""

from __future__ import annotations

import numpy as np
import pytest

from tilegate.harness import budget as bd
from tilegate.harness.budget import STORED_PASSES, GroupBudget, Tolerances

PASSES, PER_PASS = 5, 30  # a profile of 150 rounds per group in 5 sweeps


def _group(
    unchanged: set[str], tol: float = 0.01, enabled: bool = True, keep_full: frozenset = frozenset()
) -> GroupBudget:
    slots = ["torch", "a", "a@base", "b", "b@base", "c", "c@base"]
    return GroupBudget(
        slots,
        pairs={"a": "a@base", "b": "b@base", "c": "c@base"},
        unchanged=unchanged,
        keys={"a": "a-K1", "b": "b-K1", "c": "c-K1"},
        reference="torch",
        passes=PASSES,
        tolerances=Tolerances({"a-K1": tol, "b-K1": tol, "c-K1": tol}),
        enabled=enabled,
        keep_full=keep_full,
    )


def _run(g: GroupBudget, ratio: dict[str, float], noise: float, seed: int = 0) -> dict[str, int]:
    """Drive the group sweep by sweep with head_i = ratio x base_i x (1 + noise); slots timed."""
    rng = np.random.default_rng(seed)
    sweeps = 0
    while True:
        names = g.active()
        if not names:
            return {n: bd.covered(s.ranges) for n, s in g.slots.items()} | {"sweeps": sweeps}
        base = 1.0 + 0.01 * rng.standard_normal(PER_PASS)
        timed = {}
        for n in names:
            head = n.split("@")[0]
            r = ratio.get(head, 1.0) if "@" not in n else 1.0
            timed[n] = list(base * r * (1 + noise * rng.standard_normal(PER_PASS)))
        g.record(timed, PER_PASS)
        sweeps += 1


def test_unchanged_pairs_get_sentinel_base_rounds_and_heads_what_the_stored_check_needs() -> None:
    g = _group({"a", "b", "c"})
    got = _run(g, {}, noise=0.002)
    stored = bd.STORED_PASSES * PER_PASS
    assert got["a"] == got["b"] == got["c"] == stored < PASSES * PER_PASS
    assert got["torch"] == stored, "the reference stops with the last head it serves"
    assert g.info("a")["stopped"] == "stored" and g.info("a")["sweeps"] == bd.STORED_PASSES
    # one sweep of the base side settles the consistency rule (the interval inside +-5 %)
    assert got["a@base"] == got["b@base"] == got["c@base"] == PER_PASS
    assert g.info("a@base")["stopped"] == "sentinel" and g.info("a@base")["role"] == "sentinel-base"
    assert g.timed_in("a@base") == [[0, PER_PASS]]
    line = bd.summary_line(bd.summarize([g.info(n) for n in g.slots]))
    assert f"3 head(s) timed for {bd.STORED_PASSES} of {PASSES} sweeps" in line
    assert line.endswith("what the stored check needs (unchanged)"), line


def test_a_changed_case_keeps_the_reference_and_its_expectation_partner_full() -> None:
    """With `a` changed and in an expectation with `b` (both in keep_full), a, b and the
    reference keep every profile sweep even once a is decided SLOWER (the expectation judges
    the pull request on their rounds); `c` gets the stored minimum."""
    g = _group({"b", "c"}, keep_full=frozenset({"a", "b"}))
    got = _run(g, {"a": 1.10}, noise=0.002)
    assert got["a"] == got["torch"] == got["b"] == PASSES * PER_PASS
    assert got["c"] == bd.STORED_PASSES * PER_PASS
    assert g.info("b")["stopped"] == "profile" and g.info("c")["stopped"] == "stored"


def test_a_changed_head_decided_slower_stops_after_the_stored_sweeps_one_decided_same_not() -> None:
    """A SLOWER pair fails the run on its A/B verdict: its head needs only what the stored check
    needs. A pair decided SAME keeps its head's profile rounds: its stored verdict can fail."""
    g = _group({"c"})
    got = _run(g, {"a": 1.10, "b": 1.0}, noise=0.0005)
    assert g.info("a@base")["decision"] == "SLOWER" and g.info("b@base")["decision"] == "SAME"
    assert got["a"] == bd.STORED_PASSES * PER_PASS and g.info("a")["stopped"] == "stored"
    assert got["b"] == got["torch"] == PASSES * PER_PASS
    line = bd.summary_line(bd.summarize([g.info(n) for n in g.slots]))
    assert (
        "2 head(s) timed for 3 of 5 sweeps, what the stored check needs (1 unchanged, 1 decided SLOWER)"
        in line
    ), line


def test_an_unchanged_head_keeps_being_timed_while_its_sentinel_is() -> None:
    g = _group({"a", "b", "c"})
    _run(g, {}, noise=0.2)  # the sentinel cannot settle in the stored sweeps
    assert bd.covered(g.slots["a"].ranges) >= bd.covered(g.slots["a@base"].ranges)
    assert g.info("a")["stopped"] in ("stored", "profile")


def test_a_noisy_sentinel_keeps_being_timed_up_to_the_profile() -> None:
    g = _group({"a", "b", "c"})
    got = _run(g, {}, noise=0.2)  # 20 % per-round jitter: 30 rounds cannot bound the rule's 5 %
    assert got["a@base"] > PER_PASS
    assert got["a@base"] <= PASSES * PER_PASS
    assert g.info("a@base")["stopped"] in ("sentinel", "profile")


def test_sentinel_needs_the_minimum_paired_rounds() -> None:
    assert not bd.sentinel_settled([1.0] * 6, 0.03, 0.99, 7)
    assert bd.sentinel_settled([1.0] * 7, 0.03, 0.99, 7)
    assert bd.sentinel_settled([1.2] * 7, 0.03, 0.99, 7)  # settled: the rule fires on it


def test_a_decided_changed_pair_stops_early() -> None:
    g = _group({"b", "c"})
    got = _run(g, {"a": 1.10}, noise=0.002)  # 10 % slower, clear after the first sweep
    assert got["a@base"] == PER_PASS
    assert got["a"] == bd.STORED_PASSES * PER_PASS  # decided SLOWER: the stored check's sweeps
    info = g.info("a@base")
    assert info["stopped"] == "decided" and info["decision"] == "SLOWER" and info["looks"] == 1
    assert _run(_group({"b", "c"}), {"a": 1.0}, noise=0.0005)["a@base"] == PER_PASS  # SAME


def test_an_undecided_pair_is_extended_up_to_the_cap() -> None:
    g = _group({"b", "c"}, tol=0.01)
    # exactly at the tolerance: the interval straddles +1 % however long it is timed
    got = _run(g, {"a": 1.01}, noise=0.01)
    cap = bd.CAP_FACTOR * PASSES * PER_PASS
    assert got["a@base"] == got["a"] == cap
    assert got["torch"] == cap  # the reference is timed while any case of its group is
    assert (
        got["b"] == bd.STORED_PASSES * PER_PASS
    )  # unchanged heads: the stored minimum, no extension
    info = g.info("a@base")
    assert info["stopped"] == "cap" and info["extended"] == cap - PASSES * PER_PASS
    assert info["looks"] == bd.max_looks(PASSES)
    assert got["sweeps"] == bd.max_looks(PASSES)
    line = bd.summary_line(bd.summarize([g.info(n) for n in g.slots]))
    assert f"1 extended to {cap:,}, 1 ran to the cap)" in line, line


def test_budget_off_times_every_slot_every_profile_round() -> None:
    g = _group({"a", "b", "c"}, enabled=False)
    got = _run(g, {"a": 1.10}, noise=0.002)
    assert all(got[n] == PASSES * PER_PASS for n in g.slots)
    assert g.info("a@base")["full"] is True and bd.summarize([g.info("a@base")])["enabled"] is False


def test_interim_alpha_is_bonferroni_over_the_most_looks() -> None:
    assert bd.max_looks(5) == 15
    assert bd.interim_confidence(0.01, 15) == pytest.approx(1 - 0.01 / 15)
    assert _group(set()).confidence == pytest.approx(1 - 0.01 / 15)
    with pytest.raises(ValueError):
        bd.interim_confidence(0.01, 0)


def _false_slower_rate(confidence: float, trials: int = 400, seed: int = 1) -> float:
    """Sequential looks at a pair whose true ratio sits exactly at +tolerance: how often it is
    stopped as SLOWER at some look (the multiple-looks false alarm)."""
    rng = np.random.default_rng(seed)
    tol, looks, per = 0.01, 15, 30
    hits = 0
    for _ in range(trials):
        r: list[float] = []
        for _ in range(looks):
            r += list(1 + tol + 0.01 * rng.standard_normal(per))
            got = bd.decide(r, tol, tol, confidence, 7)
            if got is not None:
                hits += got == "SLOWER"
                break
    return hits / trials


def test_the_interim_alpha_keeps_the_false_alarm_rate_of_many_looks_down() -> None:
    corrected = _false_slower_rate(bd.interim_confidence(0.01, 15))
    naive = _false_slower_rate(0.99)  # every look at the verdict's own confidence
    assert corrected <= 0.01
    assert naive > 3 * max(corrected, 0.005)


def test_decisions_against_an_unknown_tolerance_hold_for_any_tolerance() -> None:
    t = Tolerances()
    assert t.for_case("x") == (t.floor, t.ceiling)
    assert t.moved("x") == pytest.approx(max(5 * t.ceiling, 0.03))
    assert Tolerances({"x": 0.004}).moved("x") == pytest.approx(0.03)
    assert bd.decide([1.02] * 30, 0.005, 0.03, 0.999, 7) is None  # +2 %: neither


def test_aligned_pairs_rows_over_common_rounds() -> None:
    x, y = [1.0, 2.0, 3.0, 4.0], [10.0, 20.0]
    assert bd.aligned(x, ((0, 4),), y, ((1, 2), (3, 4))) == ([2.0, 4.0], [10.0, 20.0])
    assert bd.aligned(x, None, x, None) == (x, x)
    assert bd.add_range(((0, 3),), 3, 5) == ((0, 5),)
    with pytest.raises(ValueError):
        bd.check_ranges([[0, 3]], 4)
    assert bd.check_ranges([[0, 2], [5, 7]], 4) == ((0, 2), (5, 7))


def test_tolerances_round_trip_and_summary_line(tmp_path) -> None:
    t = Tolerances({"a-K1": 0.007})
    bd.save_tolerances(t, tmp_path / "t.json")
    assert bd.load_tolerances(tmp_path / "t.json") == t
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(bd.InputError):
        bd.load_tolerances(tmp_path / "bad.json")
    g = _group({"b", "c"})
    _run(g, {"a": 1.10}, noise=0.002)
    total = bd.summarize([g.info(n) for n in g.slots])
    line = bd.summary_line(total)
    assert total["changed_cases"] == 1 and total["stopped_early"] == 1
    assert (
        "1 changed case(s) 30 rounds" in line
        and "2 unchanged case(s) head-only + 30 sentinel" in line
    )


# --- the measurer with fakes: identity from the correctness call, then the budgeted sweeps ------


class _Variant:
    def __init__(self, name: str, *, reference: bool = False, injected: str | None = None):
        self.name, self.reference, self.injected, self.twin_of = name, reference, injected, None

    def unsupported_reason(self, capability: object, params: object = None) -> None:
        return None

    def make(self, params: object, inputs: object):
        import torch

        def call() -> torch.Tensor:
            return torch.ones(4)

        return call


class _Bench:
    name = "fake"

    def inputs(self, params, device, seed):
        return None

    def reference_output(self, params, inputs):
        import torch

        return torch.ones(4)

    def tolerance_for(self, params) -> float:
        return 1e-3

    def work_for(self, params):
        from tilegate.declare import Work

        return Work()


class _Timer:
    """Samples of 1 ms x (1.10 for the slowed head) x 0.2 % noise; counts what it timed."""

    def __init__(self, rounds: int, slow: str | None = None) -> None:
        from tilegate.harness.timing import TimerConfig

        self.config = TimerConfig(rounds=rounds)
        self.slow = slow
        self.rng = np.random.default_rng(3)
        self.calls = 0

    def warm(self, fns, seconds, pairs=None) -> float:
        return 1e-3

    def time(self, fns, rounds=None, pairs=None, **_):
        drift = 1 + 0.01 * self.rng.standard_normal(rounds)
        self.calls += len(fns) * rounds
        return {
            n: list(
                1e-3
                * drift
                * (1.10 if n == self.slow else 1.0)
                * (1 + 0.002 * self.rng.standard_normal(rounds))
            )
            for n in fns
        }


def _ab_measurer(budget: bool, slow: str | None = "a", rounds: int = 150, passes: int = 5):
    from tilegate.cases import Case
    from tilegate.harness.measure import GroupMeasurer

    params = {"K": 1}
    cases = [Case("torch", ("K1",), params)]
    for v in ("a", "b", "c"):
        cases += [Case(v, ("K1",), params), Case(v, ("K1",), params, base=True)]
    registry = {"torch": _Variant("torch", reference=True)}
    for v in ("a", "b", "c"):
        registry[v] = _Variant(v, injected=f"slow:{v}" if v == slow else None)
        registry[f"{v}@base"] = _Variant(v)
    timer = _Timer(rounds, slow)
    m = GroupMeasurer(
        benchmark=_Bench(),
        registry=registry,
        timer=timer,
        device="cpu",
        capability=None,
        groups={"K1": cases},
        passes=passes,
        warmup_first_s=0.0,
        ab_budget=budget,
    )
    return m, cases, timer


def test_measurer_budgets_by_identity_and_results_load_and_judge(tmp_path) -> None:
    m, cases, timer = _ab_measurer(True)
    res = {c.test_id: m.result(c) for c in cases}
    per_pass = 30
    stored = per_pass * STORED_PASSES
    # the changed head decided SLOWER: the stored check's sweeps (its A/B verdict fails the run)
    assert len(res["a-K1"].samples_s) == stored
    assert res["a-K1"].extra["budget"]["stopped"] == "stored"
    assert len(res["b-K1"].samples_s) == per_pass * STORED_PASSES  # unchanged: the stored check's
    assert res["b-K1"].extra["budget"]["stopped"] == "stored"
    assert len(res["torch-K1"].samples_s) == stored  # it stops with the last head it serves
    assert len(res["b-K1@base"].samples_s) == per_pass  # unchanged: the sentinel sweep
    assert res["b-K1@base"].extra["budget"]["stopped"] == "sentinel"
    assert res["b-K1@base"].extra["timed_in"] == [[0, per_pass]]
    a_base = res["a-K1@base"].extra["budget"]
    assert a_base["role"] == "changed-base" and a_base["decision"] == "SLOWER"
    assert a_base["stopped"] == "decided" and len(res["a-K1@base"].samples_s) == per_pass
    assert res["a-K1"].extra["ratio_to_base"] == pytest.approx(1.10, rel=0.01)
    assert res["b-K1"].extra["ratio_to_base"] == pytest.approx(1.0, abs=0.01)
    full = 150 * 7
    # a, b, c and torch the stored sweeps, three base sweeps
    assert timer.calls == 4 * stored + 3 * per_pass < full
    _write_and_judge(tmp_path, cases, res)


def test_measurer_ab_full_times_both_sides_every_round() -> None:
    m, cases, timer = _ab_measurer(False)
    res = {c.test_id: m.result(c) for c in cases}
    assert {len(r.samples_s) for r in res.values()} == {150}
    assert timer.calls == 150 * 7
    assert res["b-K1@base"].extra["budget"]["full"] is True


def test_measurer_extends_an_undecided_pair_up_to_the_cap() -> None:
    m, cases, _timer = _ab_measurer(True, slow=None)
    m.registry["a"] = _Variant("a", injected="changed-but-same-speed")
    m.ab_tolerances = Tolerances({"a-K1": 0.0})  # no interval can be inside +-0: never decided
    res = {c.test_id: m.result(c) for c in cases}
    assert len(res["a-K1@base"].samples_s) == len(res["a-K1"].samples_s) == 450
    assert len(res["torch-K1"].samples_s) == 450
    assert len(res["b-K1"].samples_s) == 30 * STORED_PASSES
    assert res["a-K1@base"].extra["budget"]["stopped"] == "cap"
    assert res["b-K1"].extra["ratio_to_reference"] == pytest.approx(1.0, abs=0.01)


def _write_and_judge(tmp_path, cases, res) -> None:
    """The rows as the suite writes them load (pytest-benchmark JSON) and the A/B judge pairs them."""
    import json

    from tilegate.judge.abcompare import compare_ab
    from tilegate.judge.vocabulary import ABVerdict
    from tilegate.store.files import load_results

    bench = []
    for c in cases:
        r = res[c.test_id]
        s = sorted(r.samples_s)
        bench.append(
            {
                "name": f"test_case[{c.test_id}]",
                "group": c.group,
                "extra_info": {"tilegate": r.extra},
                "stats": {"data": list(r.samples_s), "median": s[len(s) // 2], "rounds": len(s)},
            }
        )
    from _factories import _machine_info

    mi = _machine_info(
        mode="smoke",
        profile="smoke",
        m=40,
        n=48,
        ks=(1,),
        rounds=150,
        gpu=None,
        software=None,
        throttled=False,
        injected=(),
        ab={},
    )
    line = bd.summary_line(
        bd.summarize([r.extra["budget"] for r in res.values() if "budget" in r.extra])
    )
    mi["tilegate"]["budget"] = {"summary": line}
    mi["tilegate"]["fixed"] = {}  # the toy benchmark's cases fix no parameter (the factory's M, N)
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps({"machine_info": mi, "benchmarks": bench, "datetime": "2026-12-01T00:00:00"})
    )
    run = load_results(path)
    assert len(run.base_rows["b-K1"].samples_s) == 30
    cmp = compare_ab(run, None)
    verdicts = {c.key: c.verdict for c in cmp.cases}
    from tilegate.report.render import _ab_budget

    assert _ab_budget(cmp) == [f"*{line}*", ""] and "1 changed case(s) 30 rounds" in line
    assert verdicts["a-K1"] is ABVerdict.SLOWER
    assert verdicts["b-K1"] is verdicts["c-K1"] is ABVerdict.UNCHANGED
    from tilegate.errors import InputError
    from tilegate.judge.abnoise import build_noise

    with pytest.raises(InputError, match="--perf-ab-full"):  # A/A calibration needs full runs
        build_noise([run], tmp_path / "noise.json")


def test_what_only_a_process_first_call_does_is_not_a_changed_case() -> None:
    """Head and base share a library whose first call in the process does one-time work (a
    compile, a cache filled: torch ops of its own). The head's first call does it, the base's
    does not; the identity comes from a second, steady call, so the case is unchanged (a Liger
    layer_norm backward was "changed" in every A/A run on the H200 before)."""
    import torch

    from tilegate.cases import Case
    from tilegate.harness.measure import GroupMeasurer

    done: list[bool] = []  # the shared library's one-time state

    class _Once(_Variant):
        def make(self, params: object, inputs: object):
            def call() -> torch.Tensor:
                if not done:
                    done.append(True)
                    torch.zeros(3).add_(1)  # one-time setup, once per process
                return torch.ones(4)

            return call

    params = {"K": 1}
    cases = [Case("torch", ("K1",), params), Case("a", ("K1",), params)]
    cases.append(Case("a", ("K1",), params, base=True))
    registry = {"torch": _Variant("torch", reference=True), "a": _Once("a"), "a@base": _Once("a")}
    m = GroupMeasurer(
        benchmark=_Bench(),
        registry=registry,
        timer=_Timer(30),
        device="cpu",
        capability=None,
        groups={"K1": cases},
        passes=1,
        warmup_first_s=0.0,
    )
    res = {c.test_id: m.result(c) for c in cases}
    assert done, "the one-time work ran"
    assert res["a-K1"].identity.hash == res["a-K1@base"].identity.hash
    assert res["a-K1"].extra["budget"]["role"] == "head"
    assert res["a-K1@base"].extra["budget"]["role"] == "sentinel-base"


def test_the_measurer_keeps_an_expectation_partner_of_a_changed_row_full() -> None:
    """`a` changed (injected); an expectation pairs `b` with it, so `b` keeps the profile's
    rounds (that expectation judges the pull request); `c` gets the stored minimum."""
    from types import SimpleNamespace

    m, cases, _timer = _ab_measurer(True)
    m.benchmark.expectations = [SimpleNamespace(faster="a", than="b")]
    res = {c.test_id: m.result(c) for c in cases}
    assert len(res["a-K1"].samples_s) == len(res["b-K1"].samples_s) == 150
    assert len(res["c-K1"].samples_s) == 30 * STORED_PASSES
    assert res["b-K1"].extra["budget"]["stopped"] == "profile"
