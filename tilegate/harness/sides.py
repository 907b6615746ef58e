"""The sides of an A/B run, each a checkout and a process: started, asked, paired, stopped.

A side is a source tree (a checkout of the base commit, the pull request's tree, or one tree
under another environment for an upgrade) measured in a worker process of its own
(tilegate.harness.worker): that tree first on `sys.path`, its package imported by its own name
(absolute imports, `importlib.import_module("pkg.x")`, a `src/` layout, package data all work:
nothing is renamed), Triton's cache its own, and the gate's tilegate (the one running this
process: in a pull request the base's) doing the measuring. The coordinator, the suite's process
(tilegate.harness.measure.GroupMeasurer), tells each worker what to prepare and which slots to
time for how many rounds, one worker at a time: the GPU is never shared mid-round.

`RemoteSide` is the coordinator's handle on one worker (the wire: tilegate.harness.worker; its
log: `<log dir>/<side>.log`). A worker that cannot import its side's code, or dies, is a
`SideFailure` naming the side, the tree, and the error or the end of its log: exit 2.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tilegate.cases import Case
from tilegate.errors import InputError
from tilegate.harness.side import CaseResult, Timed, unwire_result

_FRAME = struct.Struct("!Q")
SIDE_FAILURE_FILE = "failure.txt"  # in the sides' log directory: why a side's process failed


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
        """Where its package is imported from: the directory holding the source package (the
        tree, or its src/), then the tree (the protocol's own helpers)."""
        holder = (self.root / self.source).parent
        return list(dict.fromkeys([*self.path_first, str(holder), str(self.root)]))

    def says(self) -> str:
        return self.label or f"the {self.name} side ({self.root})"


@dataclass(frozen=True)
class VariantFacts:
    """What the coordinator knows of another process's variant: enough to pair, name and
    cover it (tilegate.harness.base.renames reads the same attributes off a Variant)."""

    name: str
    reference: bool = False
    twin_of: str | None = None
    renamed_from: tuple[str, ...] = ()
    switches_key: Any = None  # tilegate.harness.base._switches of the variant (None: not Triton)
    family: str | None = None


@dataclass(frozen=True)
class SideFacts:
    """What a side's process declares: its benchmark's name, variants, and (for coverage) the
    cases and expectations of the profile asked for."""

    benchmark: str
    variants: dict[str, VariantFacts]
    profile_cases: dict[str, dict[str, Any]] | None  # None: the side has no such profile
    expectations: list[dict[str, Any]]
    software: dict[str, str]
    alias: SideFacts | None = None  # the base's, loaded in the same process (one-process A/B)


def side_cache_dir(side: str) -> Path:
    """A side's own caches (Triton's, its autotuner's, a library's tuning database:
    tilegate.harness.autotune.side_cache_env): a directory of the Triton cache this process would
    use (TRITON_CACHE_DIR, else ~/.triton/cache), one per side, kept from run to run (compiled
    kernels are keyed by their source; a side's later runs start warm)."""
    base = os.environ.get("TRITON_CACHE_DIR") or str(Path.home() / ".triton" / "cache")
    return Path(base) / f"tilegate-side-{side}"


def _gate_dir() -> str:
    """The directory that holds the tilegate package this process runs: the worker imports
    tilegate from there (the gate's code), whatever the side's tree holds."""
    import tilegate

    return str(Path(tilegate.__file__).resolve().parent.parent)


class RemoteSide:
    """One side's worker process (module doc)."""

    def __init__(self, spec: SideSpec, log_dir: Path, *, python: str | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{spec.name}.log"
        self._log = self.log_path.open("wb")
        from tilegate.harness.autotune import SIDE_UNSET, side_cache_env

        env = {k: v for k, v in {**os.environ, **spec.env}.items() if k not in SIDE_UNSET}
        # its own caches: Triton's (compiled kernels, its autotuner's timings), FlagGems' ...
        env.update(side_cache_env(side_cache_dir(spec.name)))
        # the worker's sys.path is set by the worker (module doc); PYTHONPATH's entries that
        # point into another side's tree would reach past it
        dropped = {str(Path(d).resolve()) for d in spec.drop}
        kept = [
            p
            for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and str(Path(p).resolve()) not in dropped
        ]
        env["PYTHONPATH"] = os.pathsep.join(kept)
        env["PYTHONUNBUFFERED"] = "1"
        read_fd, write_fd = os.pipe()  # the answers' own pipe: stdout is the worker's log
        boot = (
            "import sys; sys.path.insert(0, sys.argv[1]); import tilegate.harness.worker as w; "
            "sys.path.pop(0); w.main(int(sys.argv[2]))"
        )
        try:
            self._proc = subprocess.Popen(
                [python or sys.executable, "-c", boot, _gate_dir(), str(write_fd)],
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
        self._replay: list[tuple[str, dict[str, Any]]] = []  # hello and setup: for `fresh`

    # -- the wire ----------------------------------------------------------------------------

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

    def request(self, verb: str, **kwargs: Any) -> Any:
        """Send one request and wait for its answer; SideFailure when the process fails."""
        if self._closed:
            raise SideFailure(f"{self.spec.says()}: its process was already stopped")
        if verb in ("hello", "setup"):
            self._replay.append((verb, kwargs))
        data = pickle.dumps((verb, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(_FRAME.pack(len(data)) + data)
            self._proc.stdin.flush()
            head = self._answers.read(_FRAME.size)
            if len(head) < _FRAME.size:
                raise self._died(verb)
            (size,) = _FRAME.unpack(head)
            body = self._answers.read(size)
            if len(body) < size:
                raise self._died(verb)
        except (BrokenPipeError, OSError) as err:
            raise self._died(verb) from err
        status, value = pickle.loads(body)
        if status == "error":
            raise SideFailure(f"{self.spec.says()}: {value}")
        if status == "alias-error":  # the base's code, loaded in this process beside the head's
            raise SideFailure(f"{self._alias_says or 'the base'}: {value}")
        return value

    def fresh(self, log_dir: Path) -> RemoteSide:
        """Another process of this side, loaded and set up as this one was (its hello and setup
        replayed): tilegate.harness.hostworkers times the host in several."""
        other = RemoteSide(self.spec, log_dir)
        try:
            for verb, kwargs in self._replay:
                other.request(verb, **kwargs)
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

    # -- the side's verbs --------------------------------------------------------------------

    def hello(self, profile: str | None, alias: SideSpec | None = None, sha: str = "") -> SideFacts:
        """Load the side's code and benchmark in its process; what it declares. `alias`: the
        base's tree too, its package under another name (one process for both sides)."""
        spec = self.spec
        self._alias_says = alias.says() if alias is not None else None
        facts: SideFacts = self.request(
            "hello",
            roots=spec.import_roots,
            drop=[str(Path(d).resolve()) for d in spec.drop],
            source=spec.source,
            root=str(spec.root),
            protocol=str(spec.protocol),
            registry=spec.registry,
            profile=profile,
            alias=None
            if alias is None
            else {
                "tree": str(alias.root),
                "source": alias.source,
                "protocol": str(alias.protocol),
                "registry": alias.registry,
                "sha": sha,
            },
        )
        return facts

    def setup(self, **kwargs: Any) -> None:
        """Its slots ({slot: variant name there}), timer config, device: the measurer's."""
        self.request("setup", **kwargs)

    def prepare(
        self, group: str, cases: Sequence[Case], seed: int
    ) -> tuple[dict[str, CaseResult], dict[str, float], list[str]]:
        wired = [_wire_case(c) for c in cases]
        results, phases, timed = self.request("prepare", group=group, cases=wired, seed=seed)
        by_slot = {c.slot: c for c in cases}
        return (
            {slot: unwire_result(by_slot[slot], data) for slot, data in results.items()},
            phases,
            timed,
        )

    def explain(self, group: str, slots: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        out: dict[str, dict[str, Any] | None] = self.request(
            "explain", group=group, slots=list(slots)
        )
        return out

    def warm(
        self,
        group: str,
        names: Sequence[str],
        seconds: float,
        pinned: Sequence[Mapping[str, Any]] | None = None,
    ) -> tuple[float, list[str]]:
        pace, held = self.request(
            "warm",
            group=group,
            names=list(names),
            seconds=seconds,
            pinned=[dict(p) for p in pinned or ()],
        )
        return float(pace), list(held)

    def hold(self, group: str, names: Sequence[str]) -> None:
        self.request("hold", group=group, names=list(names))

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
        got: Timed = self.request(
            "time",
            group=group,
            names=list(names),
            rounds=rounds,
            first_round=first_round,
            handover=handover,
            pairs=dict(pairs or {}),
            pinned=[dict(p) for p in pinned or ()],
        )
        return got

    def release(self, group: str) -> None:
        self.request("release", group=group)

    def warnings_seen(self) -> tuple[list[Any], list[Any]]:
        got: tuple[list[Any], list[Any]] = self.request("warnings")
        return got


def _wire_case(case: Case) -> dict[str, Any]:
    """A case as another process rebuilds it (its params are a read-only mapping: not pickled)."""
    return {
        "variant": case.variant,
        "labels": case.labels,
        "params": dict(case.params),
        "order": case.order,
        "variant_rank": case.variant_rank,
        "base": case.base,
    }


def unwire_case(data: Mapping[str, Any]) -> Case:
    from types import MappingProxyType

    return Case(
        data["variant"],
        tuple(data["labels"]),
        MappingProxyType(dict(data["params"])),
        tuple(data["order"]),
        int(data["variant_rank"]),
        bool(data["base"]),
    )


@dataclass(frozen=True)
class TimerFacts:
    """The timer an A/B's sides time with, as the results file names it (the sides hold the
    timers themselves)."""

    config: Any
    name: str


def one_process(head: SideSpec, base: SideSpec) -> list[str]:
    """Why the two sides need a process each ([] when one process can hold both): a package
    that imports itself by its own name (its files named), or sides of different environments.
    Where neither, both versions live in one process under two names, each pair of calls back
    to back in every round: the same rounds, the same verdicts, and (measured on the H200,
    docs/measuring.md) tighter pairs than two processes taking turns."""
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
    """Start the sides' processes and load their code: one for the head and one for the base,
    or one for both where `one_process` allows it; SideFailure naming the first that fails
    (the others are stopped)."""
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
