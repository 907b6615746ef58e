"""The perf suite as a pytest plugin (the `pytest11` entry point): options, the declared
benchmark's cases, machine_info.

It runs with `--tilegate` (as `tilegate perf` does) or when the command line names the protocol
directory (`pytest perf_tests`, a file or a test in it); in any other pytest run of the repository
a test taking `tilegate_case` is skipped, its reason naming the command. The benchmark is the
protocol's BENCHMARK (tilegate.protocol); without `--perf-profile`, its default profile, or with no
CUDA GPU its interpreter profile (TRITON_INTERPRET=1, set before the kernels are decorated):

    pytest perf_tests --perf-profile quick --benchmark-json .perf/results.json

machine_info.tilegate.coverage: what the run must cover (the base's protocol in an A/B run, else
its own), what --perf-variants / --perf-axis / --perf-set left out, each case skipped or failed.
The timings handed to pytest-benchmark are device times (tilegate.harness.measure: CUDA events,
L2 flushed, variants interleaved per round): its JSON, table and `compare` show GPU time per call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tilegate import __version__
from tilegate.cases import BASE_SUFFIX, Case, build_cases, parse_value, select_variants
from tilegate.declare import HOST_PROCS
from tilegate.harness.inject import apply_injections

CASES = pytest.StashKey[list[Case]]()
BENCH = pytest.StashKey[Any]()  # the declared benchmark (tilegate.declare.Benchmark)
BASE = pytest.StashKey[dict[str, Any]]()  # the A/B base's variants by (head) name
BASE_BENCH = pytest.StashKey[Any]()  # what the base's process declares (harness.sides.SideFacts)
SIDES = pytest.StashKey[dict[str, Any]]()  # an A/B's side processes (harness.sides.RemoteSide)
SIDE_FACTS = pytest.StashKey[dict[str, Any]]()
SPECS = pytest.StashKey[dict[str, Any]]()  # each side's tree and code (harness.sides.SideSpec)
COVERAGE = pytest.StashKey[dict[str, Any]]()  # machine_info.tilegate.coverage, less the outcomes
RUN = pytest.StashKey["PerfRun"]()
ACTIVE = pytest.StashKey[bool]()
WHERE = pytest.StashKey[Path]()  # where [tool.tilegate] is looked up from (default: the cwd)
CHOSEN = pytest.StashKey[str]()  # why the profile was chosen, when no --perf-profile named it
SKIPPED = (
    "the tilegate perf suite runs with `pytest {protocol}` (the protocol directory named on the "
    "command line), `pytest --tilegate`, or `tilegate perf`"
)


def _add_ab_options(group: Any) -> None:
    """The A/B run's options (`tilegate perf --ab`, `upgrade-ab`, `ab-noise` pass them)."""
    group.addoption(
        "--perf-ab-base",
        default=None,
        metavar="DIR",
        help="A/B run: DIR holds the base commit's tree (tilegate perf --ab REF materialises "
        "it), or `@head`: this tree again (an upgrade: the sides differ by --perf-side-path); "
        "each side is measured in a process of its own, round by round beside the other",
    )
    group.addoption(
        "--perf-side-path",
        action="append",
        default=[],
        metavar="SIDE=DIR",
        help="A/B run: DIR first on that side's sys.path (head or base; repeatable): a release "
        "of Triton or of a library unpacked there (tilegate upgrade-ab)",
    )
    group.addoption(
        "--perf-side-logs",
        default=None,
        metavar="DIR",
        help="A/B run: where each side's process writes its log (default: .perf/sides)",
    )
    group.addoption("--perf-ab-ref", default=None, help="A/B run: the base ref as given")
    group.addoption("--perf-ab-sha", default=None, help="A/B run: the base commit")
    group.addoption(
        "--perf-ab-full",
        action="store_true",
        help="A/B run without the budget: both sides of every case timed every round "
        "(A/A calibration, tilegate ab-noise)",
    )
    group.addoption(
        "--perf-ab-tolerances",
        default=None,
        metavar="FILE",
        help="A/B run: per-case tolerances (tilegate.harness.budget; tilegate perf writes it "
        "from the A/B noise file) for the stopping rule",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilegate", "tilegate perf suite")
    group.addoption(
        "--tilegate",
        action="store_true",
        help="run the tilegate perf suite of the benchmark [tool.tilegate] names",
    )
    group.addoption(
        "--perf-profile", default=None, help="which cases to measure (default: the benchmark's)"
    )
    group.addoption("--perf-variants", default=None, help="comma-separated subset of variants")
    group.addoption(
        "--perf-axis",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="measure axis NAME at these values instead of the profile's (repeatable)",
    )
    group.addoption(
        "--perf-set",
        action="append",
        default=[],
        metavar="NAME=V",
        help="a fixed parameter of the profile at another value (repeatable)",
    )
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
        "--perf-cases-of",
        default=None,
        help="file of pytest ids (one a line; `<case>@base` for an A/B base side): measure "
        "exactly these cases (the A/B confirmation, tilegate.judge.confirm)",
    )
    group.addoption(
        "--perf-soak",
        type=float,
        default=None,
        metavar="SECONDS",
        help="soak the GPU this long before timing instead of the profile's soak_s (0: the GPU "
        "is still warm from the run just before: tilegate perf --warm-within)",
    )
    group.addoption(
        "--perf-compile-threads",
        type=int,
        default=None,
        metavar="N",
        help="compile each group's Triton kernels in N threads before its checks (default: the "
        "cores, at most 16; 1: one at a time, in the checks; tilegate.harness.precompile)",
    )
    _add_ab_options(group)
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


def _active(config: pytest.Config) -> bool:
    if ACTIVE not in config.stash:
        config.stash[ACTIVE] = bool(config.getoption("--tilegate", default=False)) or _named(config)
    return config.stash[ACTIVE]


def _named(config: pytest.Config) -> bool:
    """Whether the command line names the protocol directory of the repository's
    [tool.tilegate] (`pytest perf_tests`, a module or a test in it): the suite is what was
    asked for. Never raises: no configuration is not this plugin's run."""
    from tilegate import config as tg_config
    from tilegate.errors import InputError

    here = Path(config.invocation_params.dir)
    for arg in config.args:
        path = (here / arg.split("::")[0]).resolve()
        try:
            protocol = tg_config.find(path if path.is_dir() else path.parent).protocol_dir
        except (InputError, OSError):
            continue
        if path == protocol.resolve() or protocol.resolve() in path.parents:
            config.stash[WHERE] = path if path.is_dir() else path.parent
            return True
    return False


def _forget(config: pytest.Config) -> None:
    """Drop the modules of the repository's source package and protocol directory, so that the
    next import runs them again."""
    import sys

    from tilegate import config as tg_config

    found = tg_config.find(config.stash.get(WHERE, None))
    package = found.source.replace("/", ".").split(".")[-1]
    protocol = found.protocol_dir.resolve()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        mine = name == package or name.startswith(package + ".")
        if mine or (file and Path(file).resolve().is_relative_to(protocol)):
            del sys.modules[name]


def _importable(config: pytest.Config) -> None:
    """Another pytest run of a repository with [tool.tilegate]: its root first on sys.path, as
    the suite has it, so that its protocol's modules import the source package by name (and
    their test is skipped, saying how the suite runs). Never raises."""
    import sys

    from tilegate import config as tg_config
    from tilegate.errors import InputError

    try:
        root = str(tg_config.find(config.rootpath).root)
    except (InputError, OSError):
        return
    if root not in sys.path:
        sys.path.insert(0, root)


def _no_gpu() -> bool:
    """Whether this machine has no CUDA GPU torch can use (never raises)."""
    try:
        import torch

        return not torch.cuda.is_available()
    except Exception:
        return True


def _choose_profile(config: pytest.Config, bench: Any) -> None:
    """No --perf-profile: the benchmark's default, or on a machine without a GPU its interpreter
    profile (a UsageError, one line, when it declares none)."""
    if config.getoption("--perf-profile") is not None:
        return
    default = bench.profile(None)
    name, why = default.name, "the benchmark's default profile"
    if not default.interpreter and _no_gpu():
        interp = next((p for p in bench.profiles if p.interpreter), None)
        if interp is None:
            raise pytest.UsageError(
                f"tilegate: no CUDA GPU here, and benchmark {bench.name!r} declares no "
                "interpreter profile (Profile(..., interpreter=True)) to run on the CPU: give "
                "one, or run on a GPU"
            )
        name, why = interp.name, "no CUDA GPU here: the interpreter profile (TRITON_INTERPRET=1)"
    config.option.perf_profile = name
    config.stash[CHOSEN] = why


def _benchmark(config: pytest.Config) -> Any:
    from tilegate import config as tg_config
    from tilegate.errors import InputError

    try:
        return tg_config.find(config.stash.get(WHERE, None)).load_benchmark()
    except InputError as err:
        raise pytest.UsageError(f"tilegate: {err}") from err


def _side_paths(config: pytest.Config) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"head": [], "base": []}
    for text in config.getoption("--perf-side-path"):
        side, sep, where = text.partition("=")
        if not sep or side not in out or not where:
            raise pytest.UsageError(f"--perf-side-path {text!r}: expected head=DIR or base=DIR")
        path = Path(where).resolve()
        if not path.is_dir():
            raise pytest.UsageError(f"--perf-side-path {text!r}: {path} is not a directory")
        out[side].append(str(path))
    return out


def _side_specs(config: pytest.Config) -> list[Any]:
    """The head's and the base's process (harness.sides.SideSpec): each tree, its code, its
    protocol: the base's own where it has one, else the head's."""
    from tilegate import config as tg_config
    from tilegate.errors import InputError
    from tilegate.harness.base import read_base
    from tilegate.harness.sides import SideSpec

    here = tg_config.find()
    paths = _side_paths(config)
    where = config.getoption("--perf-ab-base")
    ref = config.getoption("--perf-ab-ref") or ""
    sha = config.getoption("--perf-ab-sha") or ""
    head = SideSpec(
        "head",
        here.root,
        here.source,
        here.protocol_dir,
        here.registry,
        label=f"the head ({here.root})",
        path_first=tuple(paths["head"]),
    )
    if where == "@head":
        base = dataclasses.replace(
            head,
            name="base",
            label=f"the base ({', '.join(paths['base']) or 'this environment'})",
            path_first=tuple(paths["base"]),
        )
        return [head, base]
    try:
        found = read_base(Path(where).resolve(), ref, sha)
    except InputError as err:
        raise pytest.UsageError(f"A/B base {ref}: {err}") from err
    label = f"the base {found.sha[:12]}" + (f" ({ref})" if ref and ref != found.sha else "")
    base = SideSpec(
        "base",
        found.tree,
        found.source,
        found.tree / found.protocol if found.protocol else here.protocol_dir,
        found.registry if found.protocol else here.registry,
        label=label,
        path_first=tuple(paths["base"]),
        drop=(str(here.root),),
    )
    # the head's process: nothing of the base's tree on its path (nor the other way round)
    return [SideSpec(**{**head.__dict__, "drop": (str(found.tree),)}), base]


def _start_sides(config: pytest.Config, profile: str | None) -> None:
    """An A/B run: start each side's process, its code imported by its own name
    (tilegate.harness.sides); a side that cannot import is a usage error naming it (exit 2)."""
    from tilegate.harness.sides import SideFailure, start

    logs = Path(config.getoption("--perf-side-logs") or Path(config.rootpath) / ".perf" / "sides")
    specs = _side_specs(config)
    try:
        sides, facts = start(
            specs, logs.resolve(), profile, sha=config.getoption("--perf-ab-sha") or ""
        )
    except SideFailure as err:
        raise pytest.UsageError(f"tilegate: cannot judge: {err}") from err
    config.stash[SIDES], config.stash[SIDE_FACTS] = sides, facts
    config.stash[SPECS] = {spec.name: spec for spec in specs}
    for side in sides.values():
        config.add_cleanup(side.close)


def _base(config: pytest.Config, head: Any) -> tuple[Any, dict[str, Any]]:
    """The A/B base's declaration (what its process declares) and its variants by head name
    ({} outside an A/B run)."""
    from tilegate.harness.base import paired_base

    facts = config.stash.get(SIDE_FACTS, {}).get("base")
    if facts is None:
        return None, {}
    theirs = {n: v for n, v in facts.variants.items() if not v.reference}
    # keyed by the head's names: a renamed variant meets its base version under its new name
    return facts, paired_base(theirs, head.variant_map)


def _pairs(options: list[str], what: str, like: Callable[[str], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for text in options:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise pytest.UsageError(f"--perf-{what} {text!r}: expected NAME=VALUE")
        out[name.strip()] = like(name.strip()), value
    return out


def _ids(config: pytest.Config, option: str) -> frozenset[str] | None:
    """The ids of the file `option` names, one a line (None without the option)."""
    path = config.getoption(option)
    if not path:
        return None
    return frozenset(line.strip() for line in Path(path).read_text().splitlines() if line.strip())


def _profile_cases(config: pytest.Config) -> list[Case]:
    bench = config.stash[BENCH]
    try:
        profile = bench.profile(config.getoption("--perf-profile"))
    except KeyError as err:
        raise pytest.UsageError(f"--perf-profile: {err.args[0]}") from err
    base_bench, base = _base(config, bench)
    config.stash[BASE], config.stash[BASE_BENCH] = base, base_bench
    wanted = None
    if config.getoption("--perf-variants"):
        wanted = [v.strip() for v in config.getoption("--perf-variants").split(",") if v.strip()]
    axes_by_name = {a.name: a for a in profile.axes}
    only, exact = _ids(config, "--perf-groups-of"), _ids(config, "--perf-cases-of")
    if exact is not None:
        only = frozenset(i.removesuffix(BASE_SUFFIX) for i in exact) | (only or frozenset())
    try:
        axes: dict[str, tuple[Any, ...]] = {}
        for name, (axis, text) in _pairs(
            config.getoption("--perf-axis"), "axis", axes_by_name.get
        ).items():
            if axis is None:
                raise ValueError(
                    f"--perf-axis {name}: not an axis of profile {profile.name!r}; its axes: {list(axes_by_name)}"
                )
            axes[name] = tuple(parse_value(v.strip(), axis.values[0]) for v in text.split(","))
        fixed = {
            name: parse_value(text.strip(), profile.fixed.get(name, text))
            for name, (_, text) in _pairs(
                config.getoption("--perf-set"), "set", lambda n: None
            ).items()
        }
        # in an A/B run a name only the base has (a removed variant) selects its base side:
        # its cases are then reported as not measured (tilegate.judge.coverage), not refused
        head_wanted = (
            wanted
            if wanted is None
            else [w for w in wanted if w not in base or w in bench.variant_map]
        )
        head = select_variants(tuple(bench.variant_map), head_wanted)
        base_names = [n for n in base if wanted is None or n in wanted or n in head]
        cases = build_cases(
            profile, head, axes=axes, fixed=fixed, only=only, base_variants=base_names
        )
        if exact is not None:  # the confirmation: these cases only, not their whole groups
            cases = [c for c in cases if c.test_id in exact]
        config.stash[COVERAGE] = _coverage_facts(config, profile, bench, base_bench, base, cases)
        if config.getoption("--perf-shard"):
            cases = _my_shard(cases, config.getoption("--perf-shard"), profile, bench)
        return cases
    except ValueError as err:
        raise pytest.UsageError(str(err)) from err


def _case_facts(cases: list[Case]) -> dict[str, Any]:
    return {c.id: {"variant": c.variant, "params": dict(c.params)} for c in cases if not c.base}


def _coverage_facts(
    config: pytest.Config,
    profile: Any,
    bench: Any,
    base_bench: Any,
    base: Mapping[str, Any],
    cases: list[Case],
) -> dict[str, Any]:
    """What this run must measure (the base's protocol in an A/B run, else its own), what it
    measures before narrowing, and what a person narrowed it to (tilegate.judge.coverage)."""
    narrowing = ("--perf-variants", "--perf-axis", "--perf-set", "--perf-groups-of")
    given = {opt: config.getoption(opt) for opt in (*narrowing, "--perf-cases-of")}
    narrowed = [
        f"{opt} {v}" for opt, g in given.items() for v in (g if isinstance(g, list) else [g]) if v
    ]
    full = _case_facts(build_cases(profile, tuple(bench.variant_map)))
    selected = _case_facts(cases)
    own = {
        "protocol": "this run's",
        "profile": profile.name,
        "cases": full,
        "expectations": [e.as_json() for e in bench.expectations],
    }
    expected = own
    if base_bench is not None:
        # the base's names -> the head's (a renamed variant is covered under its new name)
        to_head = {getattr(v, "name", n): n for n, v in base.items()}
        ref = str(config.getoption("--perf-ab-ref") or config.getoption("--perf-ab-sha") or "")
        if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref):
            ref = ref[:12]  # a commit as gate_from_base.py gives it
        expected = {
            "protocol": f"the base's ({ref})" if ref else "the base's",
            "profile": profile.name,
            "cases": {},
            "expectations": [
                {**e, "faster": to_head.get(e["faster"], e["faster"]),
                 "than": to_head.get(e["than"], e["than"])}
                for e in base_bench.expectations
            ],
        }  # fmt: skip
        if base_bench.profile_cases is not None:
            for key, case in base_bench.profile_cases.items():
                variant = str(case["variant"])
                name = to_head.get(variant, variant)
                expected["cases"][name + key[len(variant) :]] = {
                    "variant": name,
                    "params": dict(case["params"]),
                    **({"unsupported": case["unsupported"]} if case.get("unsupported") else {}),
                }
        else:
            expected["missing_profile"] = True
    return {
        "expected": expected,
        "grid": {
            "axes": {a.name: list(a.values) for a in profile.axes},
            "fixed": dict(profile.fixed),
            "cases": sorted(full),
        },
        "not_selected": sorted(k for k in full if k not in selected),
        "changed": sorted(
            k for k, c in selected.items() if k in full and full[k]["params"] != c["params"]
        ),
        "narrowed": narrowed,
    }


def _given(config: pytest.Config, option: str, least: int, default: Any, unit: str = "") -> Any:
    """`option` when given (at least `least`: a usage error otherwise), else `default`."""
    given = config.getoption(option)
    if given is not None and given < least:
        raise pytest.UsageError(f"{option} {given}: must be >= {least}{unit}")
    return default if given is None else type(default)(given)


def _my_shard(cases: list[Case], spec: str, profile: Any, bench: Any) -> list[Case]:
    """The cases of the groups this GPU measures (whole groups: A/B pairs and all)."""
    from tilegate.run.shard import group_cost, parse_shard, plan

    index, count = parse_shard(spec)
    costs = {
        g: group_cost(bench.work_for(cs[0].params), len(cs), profile.rounds, profile.min_time_s)
        for g, cs in _grouped(cases).items()
    }
    mine = set(plan(costs, count)[index])
    return [c for c in cases if c.group in mine]


def _grouped(cases: list[Case]) -> dict[str, list[Case]]:
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
    return groups


def _gpu(bench: Any) -> Any:
    """This machine's GPU; without one pytest exits 2, saying how a CPU runs the benchmark."""
    from tilegate.harness.device import gpu_info

    try:
        return gpu_info()
    except RuntimeError as err:
        interp = [p.name for p in bench.profiles if p.interpreter]
        pytest.exit(
            f"tilegate: cannot measure: {err}. "
            + (
                f"On a CPU: --perf-profile {interp[0]} (the interpreter profile)."
                if interp
                else f"Benchmark {bench.name!r} declares no interpreter profile for a CPU."
            ),
            returncode=2,
        )


def pytest_configure(config: pytest.Config) -> None:
    if not _active(config):
        _importable(config)
        return
    # The interpreter must be chosen before Triton decorates the kernels, which loading the
    # benchmark does: without a GPU only an interpreter profile can run, so it is chosen first
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    if not interpreting and _no_gpu():
        os.environ["TRITON_INTERPRET"] = "1"
        interpreting = True
    bench = config.stash[BENCH] = _benchmark(config)
    _choose_profile(config, bench)
    try:
        interpreter = bench.profile(config.getoption("--perf-profile")).interpreter
    except KeyError:
        interpreter = False  # _profile_cases names the unknown profile
    if interpreter and not interpreting:
        # an interpreter profile on a GPU machine: the repository's modules are imported again,
        # their kernels decorated under the interpreter
        os.environ["TRITON_INTERPRET"] = "1"
        _forget(config)
        bench = config.stash[BENCH] = _benchmark(config)
    if config.getoption("--perf-ab-base"):
        _start_sides(config, config.getoption("--perf-profile") or bench.profile().name)
    config.stash[CASES] = _profile_cases(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tilegate_case" not in metafunc.fixturenames:
        return
    if not _active(metafunc.config):
        # another pytest run of the repository: one skip that says how the suite runs
        from tilegate import config as tg_config
        from tilegate.errors import InputError

        try:
            protocol = tg_config.find(Path(metafunc.config.invocation_params.dir)).protocol
        except (InputError, OSError):
            protocol = "perf_tests"
        reason = SKIPPED.format(protocol=protocol)
        skip = pytest.param(None, marks=pytest.mark.skip(reason=reason))
        metafunc.parametrize("tilegate_case", [skip], ids=["tilegate"])
        return
    cases = metafunc.config.stash[CASES]
    metafunc.parametrize("tilegate_case", cases, ids=[c.test_id for c in cases])


# --- the session --------------------------------------------------------------------------------


class PerfRun:
    """Session state: the device, the timer, the measurer and the GPU state log."""

    def __init__(self, config: pytest.Config) -> None:
        from tilegate.harness.base import registry_facts
        from tilegate.harness.device import software_versions
        from tilegate.harness.gpu_state import StateLog, StateSampler
        from tilegate.harness.measure import GroupMeasurer
        from tilegate.harness.precompile import default_threads
        from tilegate.harness.sides import TimerFacts
        from tilegate.harness.timing import CudaTimer, HostTimer, TimerConfig

        self.config = config
        self._t0 = time.monotonic()  # progress lines carry the seconds since
        bench = self.benchmark = config.stash[BENCH]
        profile = self.profile = bench.profile(config.getoption("--perf-profile"))
        self.smoke = profile.interpreter
        self.injected = list(config.getoption("--inject"))
        variants = dict(bench.variant_map)
        try:
            registry = (
                apply_injections(bench, variants, self.injected) if self.injected else variants
            )
        except ValueError as err:
            raise pytest.UsageError(str(err)) from err
        # A/B: the base's version of each variant, under "<name>@base" (tilegate.cases.Case.slot)
        registry |= {f"{name}{BASE_SUFFIX}": v for name, v in config.stash[BASE].items()}
        base_bench = config.stash[BASE_BENCH]
        self.registry_facts = registry_facts(
            bench.variant_map, dict(base_bench.variants) if base_bench is not None else None
        )
        self.sides: dict[str, Any] = config.stash.get(SIDES, {})
        self.ab = self._ab_facts(config)
        fixed_rounds = config.getoption("--perf-rounds")
        timer_config = TimerConfig(
            rounds=fixed_rounds or profile.rounds,
            min_time_s=0.0 if fixed_rounds else profile.min_time_s,
            l2_flush=not config.getoption("--perf-no-l2-flush"),
            hold_host=profile.hold_host,
        )
        self.cases: list[Case] = config.stash[CASES]
        self.groups = _grouped(self.cases)
        self.software = software_versions()
        self.sampler: Any = None
        self.gpu: Any = None
        self.state: Any = None
        if self.smoke:
            self.timer: Any = (
                TimerFacts(timer_config, HostTimer.name) if self.sides else HostTimer(timer_config)
            )
            device, capability = "cpu", None
        else:
            gpu = self.gpu = _gpu(bench)
            self.state = StateLog()
            self.state.sample("start")
            self.sampler = StateSampler().start()
            device, capability = "cuda", gpu.capability
            self.timer = (
                TimerFacts(
                    timer_config, "cuda-event+hold" if timer_config.hold_host else "cuda-event"
                )
                if self.sides
                else CudaTimer(timer_config, l2_bytes=gpu.l2_bytes)
            )
        threads = _given(config, "--perf-compile-threads", 1, default_threads())
        soak = 0.0 if fixed_rounds else _given(config, "--perf-soak", 0, profile.soak_s, " seconds")
        if self.sides:
            self._setup_sides(registry, config, device, capability, threads)
        self.measurer = GroupMeasurer(
            benchmark=bench,
            groups=self.groups,
            passes=1 if fixed_rounds else profile.passes,
            registry=registry,
            timer=self.timer,
            device=device,
            capability=capability,
            warmup_first_s=0.0 if self.smoke else 2.0,
            soak_s=soak,
            sampler=self.sampler,
            on_group=self._on_group,
            on_progress=self._say,
            ab_budget=not config.getoption("--perf-ab-full"),
            ab_tolerances=self._ab_tolerances(config),
            compile_threads=threads,
            sides=self.sides or None,
            host_procs=profile.host_procs
            if profile.host_procs is not None
            else HOST_PROCS * (not self.smoke),
        )
        self._done = 0

    def _ab_facts(self, config: pytest.Config) -> dict[str, Any] | None:
        """machine_info.tilegate.ab: an A/B run's facts (the base, its sides)."""
        if not self.sides:
            return None
        return {
            "ref": config.getoption("--perf-ab-ref"),
            "sha": config.getoption("--perf-ab-sha"),
            "variants": sorted(config.stash[BASE].keys()),
            # each side a checkout, measured in a process of its own or, where its package
            # imports itself relatively only, both in one (tilegate.harness.sides)
            "processes": len(self.sides),
            "sides": {
                name: {
                    "tree": str(spec.root),
                    "path_first": list(spec.path_first),
                    "software": config.stash[SIDE_FACTS][name].software,
                    "process": name if name in self.sides else next(iter(self.sides)),
                }
                for name, spec in config.stash[SPECS].items()
            },
        }

    def _setup_sides(
        self,
        registry: Mapping[str, Any],
        config: pytest.Config,
        device: str,
        capability: tuple[int, int] | None,
        compile_threads: int,
    ) -> None:
        """Each side's process gets its slots (the base's under the base's own variant names),
        the timer's configuration and the device; the head's the test-only injections."""
        for name, side in self.sides.items():
            # the head's slots are its variants' names (an injected impostor's too), the
            # base's "<head name>@base" run the base variant they pair with
            mine = {
                slot: getattr(v, "name", slot) if slot.endswith(BASE_SUFFIX) else slot
                for slot, v in registry.items()
                if self._process_of(slot) == name
            }
            reference = self.benchmark.reference.name
            if name == "base":  # its own copy of the reference: tilegate.harness.measure's shadow
                mine[f"{reference}{BASE_SUFFIX}"] = reference
            side.setup(
                slots=mine,
                timer_config=self.timer.config,
                timer=self.timer.name,
                device=device,
                capability=capability,
                l2_bytes=self.gpu.l2_bytes if self.gpu is not None else 0,
                compile_threads=compile_threads,
                inject=self.injected if name == "head" else [],
            )

    def _process_of(self, slot: str) -> str:
        """The side process that measures `slot` (the head's for both in a one-process A/B)."""
        return "base" if slot.endswith(BASE_SUFFIX) and "base" in self.sides else "head"

    @staticmethod
    def _ab_tolerances(config: pytest.Config) -> Any:
        from tilegate.errors import InputError
        from tilegate.harness.budget import load_tolerances

        path = config.getoption("--perf-ab-tolerances")
        try:
            return load_tolerances(Path(path) if path else None)
        except InputError as err:
            raise pytest.UsageError(str(err)) from err

    def budget(self) -> dict[str, Any] | None:
        """machine_info.tilegate.budget: how an A/B run's rounds were spent (None outside A/B)."""
        from tilegate.harness.budget import summarize, summary_line

        infos = [r.extra["budget"] for r in self.measurer._results.values() if "budget" in r.extra]
        if not infos:
            return None
        total = summarize(infos)
        return {**total, "summary": summary_line(total)}

    def _say(self, line: str) -> None:
        """A progress line, with the seconds since the session began, shown as it happens: the
        measuring runs inside the first test, where pytest captures output (the line would only
        be shown with a failure), so capture is suspended for it."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        suspended = capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()
        with suspended:
            reporter.write_line(f"[tilegate {time.monotonic() - self._t0:6.1f} s] {line}")

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
        fixed = dict(self.cases[0].params) if self.cases else dict(self.profile.fixed)
        fixed = {k: fixed[k] for k in self.profile.fixed if k in fixed}
        return {
            "harness_version": __version__,
            "benchmark": self.benchmark.name,
            "mode": "smoke" if self.smoke else "gpu",
            "profile": self.profile.name,
            "axes": [a.name for a in self.profile.axes],
            "reference": self.benchmark.reference.name,
            "expectations": [e.as_json() for e in self.benchmark.expectations],
            "fixed": fixed,  # the profile's fixed parameters (M, N for matmul), as measured
            **fixed,  # flat too, for readers that predate "fixed"
            "l2_flush": self.timer.config.l2_flush and not self.smoke,
            "timer": self.timer.name,
            "rounds": self.timer.config.rounds,
            "min_time_s": self.timer.config.min_time_s,
            "injected": self.injected,
            # the variants asked for (--perf-variants, else all): the gate tells a baseline row
            # left out on purpose from one that stopped running
            "variants": list(dict.fromkeys(c.variant for c in self.cases if not c.base)),
            # every head variant and the renames: a baseline row of a variant that no longer
            # exists is a failure, a renamed one is judged under its new name
            **self.registry_facts,
            **({"ab": self.ab} if self.ab else {}),
            **({"pairing": self.measurer.pairing()} if self.sides else {}),
            **({"budget": self.budget()} if self.ab and self.budget() else {}),
            **(
                {"shard": self.config.getoption("--perf-shard")}
                if self.config.getoption("--perf-shard")
                else {}
            ),
            "gpu": self.gpu.as_json() if self.gpu else None,
            "memory_tolerance": self.benchmark.memory_tolerance,  # tilegate.judge.memory
            **self.peaks(),
            "software": self.software,
            "state": state,
            "warnings": self.measurer.warnings_seen(),
            "coverage": self.coverage(),
        }

    def peaks(self) -> dict[str, Any]:
        """machine_info.tilegate.peaks: the GPU's row of tilegate.peaks ([tool.tilegate] peaks
        over the table's), absent where none is known."""
        from tilegate import config as tg_config
        from tilegate.peaks import lookup

        if self.gpu is None:
            return {}
        row = lookup(self.gpu.slug, tg_config.find(self.config.stash.get(WHERE, None)).peaks)
        return {"peaks": row} if row else {}

    def coverage(self) -> dict[str, Any]:
        """machine_info.tilegate.coverage: what the run must measure, and each case it skipped
        or failed with why (tilegate.judge.coverage)."""
        skipped: dict[str, str] = {}
        failed: dict[str, str] = {}
        # the cases a variant's `unsupported` keeps off this machine, per side: one that the
        # base cannot run here either is not the pull request's doing
        unsupported: dict[str, list[str]] = {"head": [], "base": []}
        for result in self.measurer._results.values():
            case = result.case
            if result.skip_reason and result.unsupported:
                unsupported["base" if case.base else "head"].append(case.id)
            if case.base:
                continue
            if result.skip_reason:
                skipped[case.id] = str(result.skip_reason)
            elif result.failure:
                failed[case.id] = str(result.failure).splitlines()[0][:300]
        facts: dict[str, Any] = self.config.stash[COVERAGE]
        return {**facts, "skipped": skipped, "failed": failed, "unsupported": unsupported}


@pytest.fixture(scope="session")
def perf_run(request: pytest.FixtureRequest) -> PerfRun:
    config = request.config
    if RUN not in config.stash:
        config.stash[RUN] = PerfRun(config)
    return config.stash[RUN]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A side's process failed mid-run: no results file is left (pytest-benchmark wrote what
    little it had just before), and the reason is left where `tilegate perf` reads it."""
    run = session.config.stash.get(RUN, None)
    if run is None or run.measurer.failure is None:
        return
    target = session.config.getoption("benchmark_json", None)
    if target is not None:
        path = Path(getattr(target, "name", target))
        with contextlib.suppress(AttributeError, OSError):
            target.close()  # pytest-benchmark 5.2.3 opens it
        path.unlink(missing_ok=True)
    logs = session.config.getoption("--perf-side-logs")
    if logs:
        from tilegate.fileio import atomic_write_text
        from tilegate.harness.sides import SIDE_FAILURE_FILE

        atomic_write_text(Path(logs) / SIDE_FAILURE_FILE, run.measurer.failure + "\n")


def pytest_benchmark_update_machine_info(
    config: pytest.Config, machine_info: dict[str, Any]
) -> None:
    if RUN in config.stash:
        machine_info["tilegate"] = config.stash[RUN].machine_info()


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not _active(config):
        return []
    cases = config.stash[CASES]
    bench = config.stash[BENCH]
    profile = bench.profile(config.getoption("--perf-profile"))
    chosen = f" ({config.stash[CHOSEN]})" if CHOSEN in config.stash else ""
    lines = [
        f"tilegate {__version__}: benchmark {bench.name}, profile {profile.name}{chosen}, "
        f"{len(cases)} cases in {len({c.group for c in cases})} groups"
    ]
    if profile.interpreter:
        lines.append("tilegate: SMOKE mode (CPU interpreter): timings are meaningless")
    if config.getoption("--inject"):
        lines.append(f"tilegate: TEST-ONLY injections: {config.getoption('--inject')}")
    if config.getoption("--perf-ab-base"):
        lines.append(
            f"tilegate: A/B against {config.getoption('--perf-ab-ref')} "
            f"({(config.getoption('--perf-ab-sha') or '')[:12]}): each case beside its base version"
        )
    return lines
