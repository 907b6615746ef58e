"""A run's sides: one side's calls measured where they were imported, or in a process of its own.

`SideMeasurer` does everything that touches a side's code: it draws a group's inputs (a fixed
seed per group, the same on every side), checks each call against the reference output before
its timings count, records the identity of a second call, and times the calls, as the
coordinator (tilegate.harness.measure) asks it, one side at a time.

In an A/B run a side is a source tree (the base's checkout, the pull request's tree, or one tree
under another environment) measured in a worker process (tilegate.harness.worker): that tree
first on `sys.path`, its package imported by its own name, Triton's cache its own. `RemoteSide`
asks a worker the SideMeasurer's verbs (its log: `<log dir>/<side>.log`); one that cannot
import its side's code, or dies, is a `SideFailure` naming the side and its log's end: exit 2.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

import tilegate
from tilegate import warnlog
from tilegate.cases import Case
from tilegate.errors import InputError
from tilegate.fingerprint.record import compile_launches
from tilegate.harness import autotune, memory
from tilegate.harness.correctness import check_call
from tilegate.harness.identity import Identity, capture, identity, start_profiler
from tilegate.harness.precompile import first_calls
from tilegate.harness.timing import round_order
from tilegate.harness.worker import FORWARDED, receive, send
from tilegate.warnlog import Warned

SIDE_FAILURE_FILE = "failure.txt"  # in the sides' log directory: why a side's process failed


@dataclass
class CaseResult:
    case: Case
    skip_reason: str | None = None
    correct: bool | None = None
    rel_err: float | None = None
    error: str | None = None
    samples_s: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    identity: Identity | None = None  # the compiled code the correctness call ran
    warnings: list[Warned] = field(default_factory=list)  # Triton's / torch's, while checked
    tolerance: float = 0.0  # the relative error allowed (the declaration's)
    unsupported: bool = False  # skipped by its `unsupported_reason` (no one's doing)
    memory: dict[str, Any] | None = None  # peak GPU memory of one call (tilegate.harness.memory)

    @property
    def failure(self) -> str | None:
        """Why this case must fail its test, or None."""
        if self.error is not None:
            return f"{self.case.id}: {self.error}"
        if self.correct is False:
            return (
                f"{self.case.id}: wrong result: relative error {self.rel_err:.3g} > "
                f"{self.tolerance:g} against the reference; its timing does not count"
            )
        return None


def _made_and_called(variant: Any, params: Any, inputs: Any) -> Any:
    return variant.make(params, inputs)()


@dataclass
class Timed:
    """What one `time` request measured (the timer's, timing.py), per slot."""

    samples: dict[str, list[float]]  # one per round, in round order
    handover: tuple[str, float] | None = None  # (slot, seconds) of the first call after another
    host: dict[str, list[float]] = field(default_factory=dict)  # held slots' host s per call
    held: dict[str, bool] = field(default_factory=dict)
    host_probe: dict[str, float] = field(default_factory=dict)  # CudaTimer.host_probe_s


@dataclass
class _Group:
    inputs: Any
    fns: dict[str, Callable[[], Any]] = field(default_factory=dict)
    identities: dict[str, Identity] = field(default_factory=dict)


@dataclass(kw_only=True, eq=False)
class SideMeasurer:
    """The slots of one side (`registry`: slot -> variant) and their calls, group by group."""

    benchmark: Any
    registry: Mapping[str, Any]
    timer: Any
    device: str
    capability: tuple[int, int] | None
    compile_threads: int = 0  # > 1, a GPU: tilegate.harness.precompile's threads a group

    def __post_init__(self) -> None:
        import torch

        self.torch = torch
        self._owners = tuple(getattr(v, "make", v) for v in self.registry.values())
        self.compile_threads = self.compile_threads if self.device == "cuda" else 0
        self.compile_warnings: list[Warned] = []  # what the side-by-side compiles warned
        self.timing_warnings: list[Warned] = []  # Triton / torch warnings while timing
        self._groups: dict[str, _Group] = {}

    def runnable(
        self, slot: str, variant_name: str, params: Any = None
    ) -> tuple[Any, str | None, bool]:
        """The variant that runs `slot` here, or None, why, and whether that is this machine."""
        variant = self.registry.get(slot)
        if variant is None:
            return None, f"variant {slot!r} is not in benchmark {self.benchmark.name}", False
        reason = variant.unsupported_reason(self.capability, params)
        if reason:
            return None, f"{variant_name} cannot run here: {reason}", True
        return variant, None, False

    def prepare(
        self, group: str, cases: Sequence[Case], seed: int
    ) -> tuple[dict[str, CaseResult], dict[str, float], list[str]]:
        """Draw the group's inputs, check each call: results by slot, phases, timed slots."""
        t0 = time.perf_counter()
        params = cases[0].params
        tol = self.benchmark.tolerance_for(params)
        results: dict[str, CaseResult] = {}
        runnable = {}
        for case in cases:
            res = results[case.slot] = CaseResult(case, tolerance=tol)
            can = self.runnable(case.slot, case.variant, params)
            runnable[case.slot], res.skip_reason, res.unsupported = can
        if not any(runnable.values()):  # no inputs nor reference for a group nothing runs in
            return results, {"inputs": time.perf_counter() - t0}, []
        inputs = self.benchmark.inputs(params, self.device, seed)
        ref = self.benchmark.reference_output(params, inputs)
        metric = getattr(self.benchmark, "error", None)  # None: relative_error
        phases = {"inputs": time.perf_counter() - t0}
        if self.compile_threads > 1:
            t_compile = time.perf_counter()
            self._compile_first(cases, params, inputs)
            phases["compile"] = time.perf_counter() - t_compile
        phases |= {"checks": 0.0, "identity": 0.0}
        held = self._groups[group] = _Group(inputs)
        for case in cases:
            res, variant = results[case.slot], runnable[case.slot]
            if variant is None:
                continue
            warned: list[Warned] = []
            t_case = time.perf_counter()
            t_second = None
            try:
                # the correctness call: its host code counts; its torch ops and GPU activity
                # (compiling) do not: they come from the second call (a profiler session saved)
                with (
                    warnlog.recording() as seen_warnings,
                    capture(*self._owners, host_only=True) as first,
                ):
                    call = variant.make(params, inputs)
                    got = check_call(call, ref, tol, error=metric, params=params)
                warned += seen_warnings
                launches = first
                t_second = time.perf_counter()
                if got.error is None:
                    # the identity of a second call: what is timed, in steady state (a first
                    # call also compiles, fills caches); the host code counts from both
                    with warnlog.recording() as seen_warnings, capture(*self._owners) as launches:
                        call()
                    warned += [w for w in seen_warnings if w not in warned]  # once per case
                    launches.code = first.code + launches.code
                    if self.device == "cuda":  # calls of their own, after the identity's
                        res.memory = memory.measure(self.torch, call)
            except Exception as exc:  # a kernel that raises fails its own case, not the group
                res.error = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                res.warnings = list(warned)
                t_end = time.perf_counter()
                phases["checks"] += (t_second or t_end) - t_case
                phases["identity"] += t_end - (t_second or t_end)
            res.correct, res.rel_err, res.error = got.correct, got.rel_err, got.error
            res.identity = identity(launches)
            injected = getattr(call, "injected", None) or getattr(variant, "injected", None)
            if injected:  # tilegate.plugin --inject: test-only changes
                res.identity = res.identity.marked(str(injected))
            held.identities[case.slot] = res.identity
            # a wrong kernel is timed (its row is refused by the gate); one that errored is not
            if got.error is None:
                held.fns[case.slot] = call
        del ref
        return results, phases, list(held.fns)

    def explain(self, group: str, slots: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """The AOT compile facts of these slots' interpreter launches (a GPU's have theirs):
        what explains a changed case. Never raises."""
        out: dict[str, dict[str, Any] | None] = {}
        held = self._groups.get(group)
        for slot in slots:
            ident = held.identities.get(slot) if held is not None else None
            if ident is None:
                continue
            with contextlib.suppress(Exception):
                if ident.handles and any(h is not None for h in ident.handles):
                    compile_launches(ident.explain, list(ident.handles))
            out[slot] = ident.explain
        return out

    def release(self, group: str) -> None:
        """The group is done: its inputs and calls free their GPU memory."""
        self._groups.pop(group, None)

    def _compile_first(self, cases: Sequence[Case], params: Any, inputs: Any) -> None:
        """Compile the group's kernels side by side, starting the CUDA profiler meanwhile."""
        variants = [self.runnable(c.slot, c.variant, params)[0] for c in cases]
        calls = [
            functools.partial(_made_and_called, v, params, inputs)
            for v in variants
            if v is not None
        ]
        with warnlog.recording() as warned:
            first_calls(calls, self.compile_threads, beside=start_profiler)  # once per process
            self.torch.cuda.synchronize()
        self.compile_warnings += warned

    def _fns(self, group: str, names: Sequence[str]) -> dict[str, Callable[[], Any]]:
        held = self._groups[group]
        return {n: held.fns[n] for n in names}

    def warm(
        self,
        group: str,
        names: Sequence[str],
        seconds: float,
        pinned: Sequence[Mapping[str, Any]] | None = None,
    ) -> tuple[float, list[str]]:
        """The timer's warm-up: its pace, and the slots it holds from now on (host-bound)."""
        fns = self._fns(group, names)
        with self._timing(pinned):
            pace = float(self.timer.warm(fns, seconds))
        return pace, [n for n, fn in fns.items() if self._held(fn)]

    def hold(self, group: str, names: Sequence[str]) -> None:
        """Time these slots held from now on (their partner on another side is host-bound)."""
        for fn in self._fns(group, names).values():
            self.timer.hold(fn)

    def time(
        self,
        group: str,
        names: Sequence[str],
        rounds: int,
        *,
        first_round: int = 0,
        handover: bool = False,
        pairs: Mapping[str, str] | None = None,
        pinned: Sequence[Mapping[str, Any]] | None = None,
    ) -> Timed:
        """`rounds` interleaved rounds of the slots' calls. `handover`: another side had the
        GPU, one call is timed apart. `pinned`: every autotuner on these picks."""
        fns = self._fns(group, names)
        with self._timing(pinned):
            first = None
            if handover and fns:
                order = round_order(list(fns), first_round)
                first = (order[0], float(self.timer.once(fns[order[0]])))
            samples = self.timer.time(fns, rounds, pairs or None, first_round=first_round)
        host = dict(getattr(self.timer, "host_samples", {}))
        probe = dict(getattr(self.timer, "host_probe_s", {}))
        held = {n: self._held(fn) for n, fn in fns.items()}
        return Timed(samples, first, host, held, {n: probe[n] for n in fns if n in probe})

    def _held(self, fn: Any) -> bool:
        return bool(getattr(self.timer, "is_held", lambda fn: False)(fn))

    @contextlib.contextmanager
    def _timing(self, picks: Sequence[Mapping[str, Any]] | None) -> Iterator[None]:
        """Triton's and torch's warnings kept for the run; every autotuner on `picks`, if any."""
        with (
            warnlog.recording() as warned,
            autotune.pinned(picks) if picks else contextlib.nullcontext(),
        ):
            yield
        self.timing_warnings += warned

    def warnings_seen(self) -> tuple[list[Warned], list[Warned]]:
        """(while compiling side by side, while timing)."""
        return list(self.compile_warnings), list(self.timing_warnings)


class SideFailure(InputError):
    """A side's process could not import its code, or died: nothing of the run can be judged."""


@dataclass(frozen=True)
class SideSpec:
    """What a side's process is: its tree, its code and protocol there, its environment."""

    name: str  # "head" or "base"
    root: Path  # the source tree (a checkout)
    source: str  # [tool.tilegate] source, relative to root ("kernels", "src/liger_kernel")
    protocol: Path  # the protocol directory this side's benchmark is declared in
    registry: str | None = None  # [tool.tilegate] registry, if any
    label: str = ""  # how messages name it: "the base abc123def456 (HEAD^1)"
    path_first: tuple[str, ...] = ()  # before the tree on sys.path (an upgrade's new release)
    env: Mapping[str, str] = field(default_factory=dict)  # the process's environment, added
    drop: tuple[str, ...] = ()  # directories that must not be on its sys.path (the other tree)

    @property
    def import_roots(self) -> list[str]:
        """Where its package is imported from: the source package's parent, then the tree."""
        holder = (self.root / self.source).parent
        return list(dict.fromkeys([*self.path_first, str(holder), str(self.root)]))

    def says(self) -> str:
        return self.label or f"the {self.name} side ({self.root})"


@dataclass(frozen=True)
class VariantFacts:
    """Another process's variant: enough to pair, name and cover it (the attributes of a
    Variant that tilegate.harness.base.renames reads)."""

    name: str
    reference: bool = False
    twin_of: str | None = None
    renamed_from: tuple[str, ...] = ()
    switches_key: Any = None  # tilegate.harness.base._switches of the variant (None: not Triton)
    family: str | None = None


@dataclass(frozen=True)
class SideFacts:
    """What a side's process declares (coverage: the cases and expectations of the profile)."""

    benchmark: str
    variants: dict[str, VariantFacts]
    profile_cases: dict[str, dict[str, Any]] | None  # None: the side has no such profile
    expectations: list[dict[str, Any]]
    software: dict[str, str]
    alias: SideFacts | None = None  # the base's, loaded in the same process (one-process A/B)


def side_cache_dir(side: str) -> Path:
    """A side's own caches, beside this process's Triton cache, kept from run to run."""
    base = os.environ.get("TRITON_CACHE_DIR") or str(Path.home() / ".triton" / "cache")
    return Path(base) / f"tilegate-side-{side}"


class RemoteSide:
    """One side's worker process (module doc)."""

    def __init__(self, spec: SideSpec, log_dir: Path) -> None:
        self.spec = spec
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{spec.name}.log"
        self._log = self.log_path.open("wb")
        from tilegate.harness.autotune import SIDE_UNSET, side_cache_env

        env = {k: v for k, v in {**os.environ, **spec.env}.items() if k not in SIDE_UNSET}
        # its own caches: Triton's (compiled kernels, its autotuner's timings), FlagGems' ...
        env.update(side_cache_env(side_cache_dir(spec.name)))
        # the worker's sys.path is set by the worker (module doc); PYTHONPATH's entries that
        # point into another side's tree would reach past it
        self._dropped = tuple(str(Path(d).resolve()) for d in spec.drop)
        kept = [
            p
            for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and str(Path(p).resolve()) not in self._dropped
        ]
        env["PYTHONPATH"] = os.pathsep.join(kept)
        env["PYTHONUNBUFFERED"] = "1"
        read_fd, write_fd = os.pipe()  # the answers' own pipe: stdout is the worker's log
        boot = (
            "import sys; sys.path.insert(0, sys.argv[1]); import tilegate.harness.worker as w; "
            "sys.path.pop(0); w.main(int(sys.argv[2]))"
        )
        # the worker imports tilegate from the gate's directory, whatever the side's tree holds
        gate = str(Path(tilegate.__file__).resolve().parent.parent)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", boot, gate, str(write_fd)],
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(spec.root),
                pass_fds=(write_fd,),
            )
        finally:
            os.close(write_fd)
        self._answers: BinaryIO = os.fdopen(read_fd, "rb")
        self._closed = False
        self._alias_says: str | None = None  # the base's label, when this process holds it too
        self._replay: list[Any] = []  # hello's and setup's (verb, args, kwargs): for `fresh`

    def _tail(self, lines: int = 12) -> str:
        try:
            self._log.flush()
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(its log could not be read)"
        return "\n".join(f"    {ln}" for ln in text[-lines:]) or "    (it printed nothing)"

    def _died(self, doing: str) -> SideFailure:
        code = self._proc.poll()
        if code is None:
            try:
                code = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        return SideFailure(
            f"{self.spec.says()}: its process {'ended' if code is not None else 'stopped answering'}"
            f" while {doing} (exit {code}); the end of its log ({self.log_path}):\n{self._tail()}"
        )

    def request(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        """Send one request and wait for its answer; SideFailure when the process fails."""
        if self._closed:
            raise SideFailure(f"{self.spec.says()}: its process was already stopped")
        if verb in ("hello", "setup"):
            self._replay.append((verb, args, kwargs))
        try:
            assert self._proc.stdin is not None
            send(self._proc.stdin, (verb, args, kwargs))
            answer = receive(self._answers)
        except OSError as err:
            raise self._died(verb) from err
        if answer is None:
            raise self._died(verb)
        status, value = answer
        if status == "error":
            raise SideFailure(f"{self.spec.says()}: {value}")
        if status == "alias-error":  # the base's code, loaded in this process beside the head's
            raise SideFailure(f"{self._alias_says or 'the base'}: {value}")
        return value

    def __getattr__(self, verb: str) -> Any:
        """setup and the SideMeasurer's verbs (_VERBS), asked of the worker."""
        if verb not in _VERBS:
            raise AttributeError(verb)
        return functools.partial(self.request, verb)

    def fresh(self, log_dir: Path) -> RemoteSide:
        """Another process of this side, its hello and setup replayed (for hostworkers)."""
        other = RemoteSide(self.spec, log_dir)
        try:
            for verb, args, kwargs in self._replay:
                other.request(verb, *args, **kwargs)
        except BaseException:
            other.kill()
            raise
        return other

    def close(self) -> None:
        """Ask the worker to end; make sure it has."""
        if self._closed:
            return
        with contextlib.suppress(SideFailure):
            self.request("bye")
        self._closed = True
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._close_files()

    def kill(self) -> None:
        """End the worker now (a run that stops early)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._closed = True
        self._close_files()

    def _close_files(self) -> None:
        for f in (self._answers, self._proc.stdin, self._log):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()

    def hello(self, profile: str | None, alias: SideSpec | None = None, sha: str = "") -> SideFacts:
        """Load the side's code and benchmark (`alias`: the base's too); what it declares."""
        self._alias_says = alias.says() if alias is not None else None
        spec = replace(self.spec, drop=self._dropped)  # resolved here, not in the side's tree
        facts: SideFacts = self.request("hello", spec, profile, alias, sha)
        return facts

    def prepare(
        self, group: str, cases: Sequence[Case], seed: int
    ) -> tuple[dict[str, CaseResult], dict[str, float], list[str]]:
        results, phases, timed = self.request("prepare", group, [portable(c) for c in cases], seed)
        by_slot = {c.slot: c for c in cases}  # the results of this process's own cases
        return {s: replace(r, case=by_slot[s]) for s, r in results.items()}, phases, timed


_VERBS = FORWARDED | {"setup", "warnings_seen"}


def portable(case: Case) -> Case:
    """`case` as another process receives it: its params a dict (a read-only mapping does not
    pickle); `local` makes them read-only again."""
    return replace(case, params=dict(case.params))


def local(case: Case) -> Case:
    return replace(case, params=MappingProxyType(dict(case.params)))


def wire_result(res: CaseResult) -> CaseResult:
    """A case result as another process receives it (the AOT handles stay in this process)."""
    ident = replace(res.identity, handles=()) if res.identity is not None else None
    return replace(res, case=portable(res.case), identity=ident)


@dataclass(frozen=True)
class TimerFacts:
    """The timer the sides time with, as the results file names it."""

    config: Any
    name: str


def one_process(head: SideSpec, base: SideSpec) -> list[str]:
    """Why the two sides need a process each: a package that imports itself by its own name (its
    files named), or other environments. None ([]): both in one process under two names, pairs
    tighter than two processes taking turns (measured on the H200, docs/measuring.md)."""
    from tilegate.harness.base import imports_by_name

    if head.path_first or base.path_first or head.root == base.root:
        return ["the sides differ by their environments"]
    return [
        f"{side.says()}: {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}"
        for side in (head, base)
        if (files := imports_by_name(side.root, side.source, limit=4))  # 3 named, then "..."
    ]


def start(
    specs: Sequence[SideSpec], log_dir: Path, profile: str | None, *, sha: str = ""
) -> tuple[dict[str, RemoteSide], dict[str, SideFacts]]:
    """Start the sides' processes and load their code; SideFailure naming the first that fails."""
    sides: dict[str, RemoteSide] = {}
    facts: dict[str, SideFacts] = {}
    together = len(specs) == 2 and not one_process(specs[0], specs[1])
    try:
        for spec in specs[:1] if together else specs:
            sides[spec.name] = RemoteSide(spec, log_dir)
        for name, side in sides.items():
            facts[name] = side.hello(profile, specs[1] if together else None, sha)
        if together:
            got = facts[specs[0].name].alias
            assert got is not None
            facts[specs[1].name] = got
    except BaseException:
        for side in sides.values():
            side.kill()
        raise
    return sides, facts
