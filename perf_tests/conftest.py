"""The perf suite's options, parametrization and machine_info hook.

Run it through `nox -s perf` (GPU) or `nox -s smoke` (CPU interpreter). Directly:

    python -m pytest perf_tests --perf-profile quick --benchmark-json .perf/results.json

Each case's timings are device times measured by `tilegate.harness.measure` (CUDA events, L2 flushed,
variants interleaved per round) and handed to pytest-benchmark, so its JSON, its terminal table
and its own `pytest-benchmark compare` all show GPU time per call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tilegate import __version__
from tilegate.cases import BASE_SUFFIX, PROFILES, Case, build_cases, select_variants

CASES = pytest.StashKey[list[Case]]()
BASE = pytest.StashKey[dict[str, Any]]()  # the A/B base's variants by name
RUN = pytest.StashKey["PerfRun"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilegate", "tilegate perf suite")
    group.addoption(
        "--perf-profile",
        default="quick",
        choices=sorted(PROFILES),
        help="which cases to measure (default: quick)",
    )
    group.addoption("--perf-variants", default=None, help="comma-separated subset of variants")
    group.addoption(
        "--perf-ks", default=None, help="comma-separated K values instead of the profile's"
    )
    group.addoption("--perf-m", type=int, default=None, help="M (default: the profile's, 16384)")
    group.addoption("--perf-n", type=int, default=None, help="N (default: the profile's, 16384)")
    group.addoption(
        "--perf-rounds",
        type=int,
        default=None,
        help="exactly this many timed rounds per group (default: the profile's minimum "
        "rounds and minimum time)",
    )
    group.addoption("--perf-no-l2-flush", action="store_true", help="time with a warm L2")
    group.addoption(
        "--perf-groups-of",
        default=None,
        help="file of case ids (one a line): measure only their groups (confirmation runs)",
    )
    group.addoption(
        "--perf-ab-base",
        default=None,
        metavar="DIR",
        help="A/B run: DIR/kernels/ is the base commit's kernels (tilegate perf --ab REF "
        "materialises it); every case is timed beside its base version, round by round",
    )
    group.addoption("--perf-ab-ref", default=None, help="A/B run: the base ref as given")
    group.addoption("--perf-ab-sha", default=None, help="A/B run: the base commit")
    group.addoption(
        "--perf-shard",
        default=None,
        metavar="I/N",
        help="measure only the groups tilegate.run.shard.plan gives GPU I of N (tilegate perf --gpus N)",
    )
    group.addoption(
        "--inject",
        action="append",
        default=[],
        help="TEST ONLY: slow=VARIANT:FRACTION | impostor=NAME:REAL | wrong=VARIANT",
    )


def _is_reference(variant: Any) -> bool:
    # a base from before the registry had `reference` knew the reference by its family
    return (
        bool(getattr(variant, "reference", False)) or getattr(variant, "family", "") == "reference"
    )


def _base_registry(config: pytest.Config) -> dict[str, Any]:
    """The A/B base's Triton variants by name ({} outside an A/B run); usage error if it breaks."""
    path = config.getoption("--perf-ab-base")
    if not path:
        return {}
    from tilegate.errors import InputError
    from tilegate.harness.base import load, package_name

    sha = config.getoption("--perf-ab-sha") or Path(path).name
    try:
        module = load(Path(path), package_name(sha))
    except InputError as err:
        raise pytest.UsageError(f"A/B base {config.getoption('--perf-ab-ref')}: {err}") from err
    return {n: v for n, v in module.VARIANTS.items() if not _is_reference(v)}


def _profile_cases(config: pytest.Config) -> list[Case]:
    from kernels import VARIANTS

    profile = PROFILES[config.getoption("--perf-profile")]
    base = config.stash[BASE] = _base_registry(config)
    wanted = None
    if config.getoption("--perf-variants"):
        wanted = [v.strip() for v in config.getoption("--perf-variants").split(",") if v.strip()]
    ks = None
    if config.getoption("--perf-ks"):
        ks = tuple(int(k) for k in config.getoption("--perf-ks").split(","))
    only = None
    if config.getoption("--perf-groups-of"):
        path = Path(config.getoption("--perf-groups-of"))
        only = frozenset(line.strip() for line in path.read_text().splitlines() if line.strip())
    try:
        head = select_variants(tuple(VARIANTS), wanted)
        base_names = [n for n in base if wanted is None or n in wanted or n in head]
        cases = build_cases(
            profile,
            head,
            ks=ks,
            m=config.getoption("--perf-m"),
            n=config.getoption("--perf-n"),
            only=only,
            base_variants=base_names,
        )
        if config.getoption("--perf-shard"):
            cases = _my_shard(cases, config.getoption("--perf-shard"), profile)
        return cases
    except ValueError as err:
        raise pytest.UsageError(str(err)) from err


def _my_shard(cases: list[Case], spec: str, profile: Any) -> list[Case]:
    """The cases of the groups this GPU measures (whole groups: A/B pairs and all)."""
    from tilegate.run.shard import group_cost, parse_shard, plan

    index, count = parse_shard(spec)
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
    costs = {
        g: group_cost(cs[0].k, len(cs), profile.rounds, profile.min_time_s)
        for g, cs in groups.items()
    }
    mine = set(plan(costs, count)[index])
    return [c for c in cases if c.group in mine]


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--perf-profile", default=None) == "smoke":
        # The interpreter must be chosen before Triton decorates the kernels.
        os.environ["TRITON_INTERPRET"] = "1"
    config.stash[CASES] = _profile_cases(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = metafunc.config.stash[CASES]
        metafunc.parametrize("case", cases, ids=[c.test_id for c in cases])


class PerfRun:
    """Session state: the device, the timer, the measurer and the GPU state log."""

    def __init__(self, config: pytest.Config) -> None:
        from kernels import VARIANTS
        from perf_tests.inject import apply_injections
        from tilegate.harness.device import gpu_info, software_versions
        from tilegate.harness.gpu_state import StateLog, StateSampler
        from tilegate.harness.measure import GroupMeasurer
        from tilegate.harness.timing import CudaTimer, HostTimer, TimerConfig

        self.config = config
        profile = PROFILES[config.getoption("--perf-profile")]
        self.profile = profile
        self.smoke = profile.name == "smoke"
        self.injected = list(config.getoption("--inject"))
        registry = apply_injections(VARIANTS, self.injected) if self.injected else dict(VARIANTS)
        # A/B: the base's version of each variant, under "<name>@base" (tilegate.cases.Case.slot)
        registry |= {f"{name}{BASE_SUFFIX}": v for name, v in config.stash[BASE].items()}
        self.ab = (
            {
                "ref": config.getoption("--perf-ab-ref"),
                "sha": config.getoption("--perf-ab-sha"),
                "variants": sorted(config.stash[BASE]),
            }
            if config.stash[BASE]
            else None
        )
        fixed_rounds = config.getoption("--perf-rounds")
        timer_config = TimerConfig(
            rounds=fixed_rounds or profile.rounds,
            min_time_s=0.0 if fixed_rounds else profile.min_time_s,
            l2_flush=not config.getoption("--perf-no-l2-flush"),
        )
        self.cases: list[Case] = config.stash[CASES]
        self.groups: dict[str, list[Case]] = {}
        for case in self.cases:
            self.groups.setdefault(case.group, []).append(case)
        self.software = software_versions()
        self.sampler: Any = None
        if self.smoke:
            self.gpu = None
            self.state = None
            self.timer: Any = HostTimer(timer_config)
            device, capability = "cpu", None
        else:
            try:
                self.gpu = gpu_info()
            except RuntimeError as err:
                pytest.exit(
                    f"tilegate: cannot measure: {err}. Use --perf-profile smoke on a CPU.",
                    returncode=2,
                )
            self.state = StateLog()
            self.state.sample("start")
            self.sampler = StateSampler().start()
            self.timer = CudaTimer(timer_config, l2_bytes=self.gpu.l2_bytes)
            device, capability = "cuda", self.gpu.capability
        self.measurer = GroupMeasurer(
            groups=self.groups,
            passes=1 if fixed_rounds else profile.passes,
            registry=registry,
            timer=self.timer,
            device=device,
            capability=capability,
            warmup_first_s=0.0 if self.smoke else 2.0,
            soak_s=0.0 if fixed_rounds else profile.soak_s,
            sampler=self.sampler,
            on_group=self._on_group,
            on_progress=self._say,
        )
        self._done = 0

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"[tilegate] {line}")

    def _on_group(self, group: str, results: dict[str, Any], seconds: float) -> None:
        self._done += 1
        rounds = max((len(r.samples_s) for r in results.values()), default=0)
        line = (
            f"group {self._done}/{len(self.groups)} {group}: {len(results)} variants, "
            f"{rounds} rounds, {seconds:.1f} s"
        )
        if self.state is not None:
            s = self.state.sample(group)
            if s is not None:
                line += f"; SM {s.sm_clock_mhz} MHz, {s.temperature_c} C, {s.power_w:.1f} W"
                if s.slowdown:
                    line += f", SLOWDOWN: {','.join(s.slowdown)}"
        self._say(line)

    def machine_info(self) -> dict[str, Any]:
        state = None
        if self.state is not None:
            self.state.sample("end")
            series = None
            if self.sampler is not None:
                self.sampler.stop()
                series = self.sampler.summary()
            state = self.state.summary(while_running=series)
        return {
            "harness_version": __version__,
            "mode": "smoke" if self.smoke else "gpu",
            "profile": self.profile.name,
            "M": self.cases[0].m if self.cases else self.profile.m,
            "N": self.cases[0].n if self.cases else self.profile.n,
            "l2_flush": self.timer.config.l2_flush and not self.smoke,
            "timer": self.timer.name,
            "rounds": self.timer.config.rounds,
            "min_time_s": self.timer.config.min_time_s,
            "injected": self.injected,
            # the variants asked for (--perf-variants, else all): the gate tells a baseline row
            # left out on purpose from one that stopped running
            "variants": list(dict.fromkeys(c.variant for c in self.cases if not c.base)),
            **({"ab": self.ab} if self.ab else {}),
            **(
                {"shard": self.config.getoption("--perf-shard")}
                if self.config.getoption("--perf-shard")
                else {}
            ),
            "gpu": self.gpu.as_json() if self.gpu else None,
            "software": self.software,
            "state": state,
            "warnings": self.measurer.warnings_seen(),
        }


@pytest.fixture(scope="session")
def perf_run(request: pytest.FixtureRequest) -> PerfRun:
    config = request.config
    if RUN not in config.stash:
        config.stash[RUN] = PerfRun(config)
    return config.stash[RUN]


def pytest_benchmark_update_machine_info(
    config: pytest.Config, machine_info: dict[str, Any]
) -> None:
    if RUN in config.stash:
        machine_info["tilegate"] = config.stash[RUN].machine_info()


def pytest_report_header(config: pytest.Config) -> list[str]:
    cases = config.stash[CASES]
    profile = config.getoption("--perf-profile")
    lines = [
        f"tilegate {__version__}: profile {profile}, {len(cases)} cases in "
        f"{len({c.group for c in cases})} groups"
    ]
    if profile == "smoke":
        lines.append("tilegate: SMOKE mode (CPU interpreter, tiny shapes): timings are meaningless")
    if config.getoption("--inject"):
        lines.append(f"tilegate: TEST-ONLY injections: {config.getoption('--inject')}")
    if config.getoption("--perf-ab-base"):
        lines.append(
            f"tilegate: A/B against {config.getoption('--perf-ab-ref')} "
            f"({(config.getoption('--perf-ab-sha') or '')[:12]}): each case beside its base version"
        )
    return lines
