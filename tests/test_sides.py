"""Rounds paired across two side processes (tilegate.harness.measure with two sides): the
coordinator's side of it, with sides that stand in for the worker processes (the processes
themselves: tests/test_installed.py and tests/test_ab.py)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from tilegate.cases import build_cases
from tilegate.declare import Axis, Profile, Work
from tilegate.harness.identity import Identity
from tilegate.harness.measure import GroupMeasurer, paired_rounds
from tilegate.harness.sides import CaseResult, Timed
from tilegate.harness.timing import TimerConfig


def test_paired_rounds_cover_the_rounds_and_balance_who_goes_first() -> None:
    blocks = paired_rounds(100, 3, ("head", "base"), random.Random(1))
    assert sum(k for k, _ in blocks) == 100 and len(blocks) == 34
    firsts = Counter(order[0] for _, order in blocks)
    assert firsts["head"] == firsts["base"] == 17, "as many blocks start with either side"
    assert {order for _, order in blocks} == {("head", "base"), ("base", "head")}
    odd = paired_rounds(5, 1, ("head", "base"), random.Random(2))
    assert sorted(Counter(o[0] for _, o in odd).values()) == [2, 3]
    assert paired_rounds(0, 3, ("head", "base"), random.Random(1)) == []


class _Side:
    """A side's process as the coordinator sees it: what it was asked, in order."""

    def __init__(self, name: str, log: list[tuple[str, str, tuple[str, ...], int, bool]]) -> None:
        self.name, self.log = name, log
        self.held: set[str] = set()

    def prepare(self, group: str, cases: list[Any], seed: int) -> Any:
        ident = Identity("case2:sha256:" + ("a" if self.name == "head" else "b"), "source", 1)
        results = {c.slot: CaseResult(c, correct=True, rel_err=0.0, identity=ident) for c in cases}
        return results, {"checks": 0.0}, [c.slot for c in cases]

    def explain(self, group: str, slots: list[str]) -> dict[str, Any]:
        return {}

    def warm(self, group: str, names: list[str], seconds: float) -> tuple[float, list[str]]:
        return 2e-3, [n for n in names if n.startswith("host")]

    def hold(self, group: str, names: list[str]) -> None:
        self.held |= set(names)

    def time(self, group: str, names: list[str], rounds: int, **kw: Any) -> Timed:
        self.log.append((self.name, group, tuple(names), rounds, kw["handover"]))
        base = 1.0 if self.name == "head" else 1.1
        return Timed(
            {n: [base] * rounds for n in names},
            (names[0], 9.9) if kw["handover"] else None,
            {n: [0.5] * rounds for n in names if n in self.held},  # as CudaTimer: the held
            {n: n in self.held for n in names},
            {n: 0.5 for n in names},
        )

    def release(self, group: str) -> None:
        self.log.append((self.name, group, ("released",), 0, False))

    def warnings_seen(self) -> tuple[list[Any], list[Any]]:
        return [], []


class _Bench:
    name = "toy"
    expectations = ()

    def work_for(self, params: Any) -> Work:
        return Work()


def _measure(variants: list[str]) -> tuple[dict[str, CaseResult], list[Any], GroupMeasurer]:
    profile = Profile("p", (Axis("n", (4,)),), rounds=30, min_time_s=0.0, passes=2)
    cases = build_cases(profile, ["ref", *variants], base_variants=variants)
    log: list[Any] = []
    facts = {
        n: type("V", (), {"reference": n == "ref", "twin_of": None})() for n in ["ref", *variants]
    }
    m = GroupMeasurer(
        benchmark=_Bench(),
        registry=facts,
        timer=type("T", (), {"config": TimerConfig(rounds=30), "name": "cuda-event"})(),
        device="cuda",
        capability=(9, 0),
        groups={cases[0].group: cases},
        passes=2,
        warmup_first_s=0.0,
        ab_budget=False,
        sides={"head": _Side("head", log), "base": _Side("base", log)},
    )
    return {c.test_id: m.result(c) for c in cases}, log, m


def test_two_sides_take_turns_block_by_block_and_their_samples_pair() -> None:
    got, log, m = _measure(["a", "host_b"])
    timed = [entry for entry in log if entry[2] != ("released",)]
    # each block: one side's slots, then the other's, every request a hand-over
    assert all(handover for *_, handover in timed)
    heads = [e for e in timed if e[0] == "head"]
    bases = [e for e in timed if e[0] == "base"]
    assert len(heads) == len(bases) and [e[3] for e in heads] == [e[3] for e in bases]
    assert {e[2] for e in heads} == {("ref", "a", "host_b")}
    # the base's process times its own copy of the reference beside its slots, never reported
    assert {e[2] for e in bases} == {("a@base", "host_b@base", "ref@base")}
    assert "ref-4@base" not in got
    # the blocks: 5 rounds each (10 ms at 2 ms a round of a side); 30 rounds over 2 sweeps
    assert sum(e[3] for e in heads) == 30 and {e[3] for e in heads} == {5}
    a, a_base = got["a-4"], got["a-4@base"]
    assert len(a.samples_s) == len(a_base.samples_s) == 30
    assert a.extra["ratio_to_base"] == 1.0 / 1.1
    # a call host-bound on one side is held on both
    assert got["host_b-4"].extra["held"] and got["host_b-4@base"].extra["held"]
    assert not a.extra["held"] and a.extra["host_s"] == 0.5 and "host_samples_s" not in a.extra
    # the first call after each hand-over: timed apart (9.9 s here), never a sample
    pairing = m.pairing()
    assert pairing is not None and pairing["handover_first_call"]["calls"] == len(timed)
    assert 9.9 not in a.samples_s
    assert sum(pairing["blocks"].values()) == len(heads)
    # both processes release the group's memory once it is done
    assert sorted(e[0] for e in log if e[2] == ("released",)) == ["base", "head"]


def _sleeping_side() -> Any:
    """A process that installs a side's stop handlers (worker.stacks_on_stop), says so, and
    sleeps in a function whose name its stack must show."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, time\n"
        "from tilegate.harness.worker import stacks_on_stop\n"
        "def stuck_in_a_kernel():\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "    print('woke', flush=True)\n"
        "stacks_on_stop()\n"
        "stuck_in_a_kernel()\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_a_side_stopped_by_sigterm_writes_where_every_thread_was_then_ends() -> None:
    import signal

    proc = _sleeping_side()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM  # it still ends, as SIGTERM asks
    assert "stuck_in_a_kernel" in err and "Current thread" in err, err


def test_sigusr1_writes_a_sides_stacks_and_it_goes_on() -> None:
    import signal

    proc = _sleeping_side()
    try:
        proc.send_signal(signal.SIGUSR1)
        assert proc.stderr is not None
        first = proc.stderr.readline()  # faulthandler's header ("Current thread ...")
        assert "thread" in first.lower(), first
        assert proc.poll() is None  # still running
    finally:
        proc.kill()
        proc.communicate(timeout=30)
