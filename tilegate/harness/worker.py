"""A side's process: its tree first on sys.path, its code imported by its own name, measured here.

Started by tilegate.harness.sides.RemoteSide as `python -c BOOT GATE_DIR FD`: the boot line
imports this module from GATE_DIR and takes that directory off sys.path again, so the tilegate
that measures is always the gate's, whichever tilegate/ the side's tree holds. Requests (verb,
args, kwargs) come on stdin; each answer goes to FD as ("ok", value) or ("error", message).
stdout and stderr are the side's log. The verbs: hello, setup, the SideMeasurer's, host
(tilegate.harness.hostworkers), bye.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

_FRAME_SIZE = 8  # each message: its length (8 bytes, big-endian), then its pickle


def send(stream: IO[bytes], message: Any) -> None:
    """One message (pickled first: one that cannot be pickled writes nothing)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(_FRAME_SIZE, "big") + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next message, or None where the stream ends first."""
    head = stream.read(_FRAME_SIZE)
    if len(head) < _FRAME_SIZE:
        return None
    size = int.from_bytes(head, "big")
    body = stream.read(size)
    return pickle.loads(body) if len(body) == size else None


def _paths(roots: list[str], drop: list[str]) -> None:
    """The side's roots first on sys.path; nothing of another side's tree on it."""
    dropped = set(drop)
    kept = [p for p in sys.path if str(Path(p or ".").resolve()) not in dropped]
    sys.path[:] = [*roots, *(p for p in kept if p not in roots)]
    importlib.invalidate_caches()


def _where(err: BaseException, root: Path) -> str:
    """` (at pkg/mod.py:12)`: the last place in the side's tree the error passed through."""
    places = [(f.filename, f.lineno) for f in traceback.extract_tb(err.__traceback__)]
    if isinstance(err, SyntaxError) and err.filename:
        places.append((err.filename, err.lineno))
    for filename, line in reversed(places):
        path = Path(filename).resolve()
        if root.resolve() in path.parents:
            return f" (at {path.relative_to(root.resolve())}:{line})"
    return ""


def _short(err: BaseException) -> str:
    return (
        f"{type(err).__name__}: {err}".strip().splitlines()[0][:500]
        if str(err)
        else type(err).__name__
    )


@contextlib.contextmanager
def _failing(what: str, root: Path) -> Iterator[None]:
    """An error inside is a LookupError saying `what`, the error and where in `root` it was."""
    try:
        yield
    except Exception as err:
        raise LookupError(f"{what}: {_short(err)}{_where(err, root)}") from err


class AliasError(LookupError):
    """The base's code, loaded beside the head's, failed: the coordinator names the base."""


FORWARDED = frozenset({"explain", "warm", "hold", "time", "release"})


class Worker:
    def __init__(self) -> None:
        self.bench: Any = None
        self.alias: Any = None  # the base's benchmark, in a one-process A/B
        self.measurer: Any = None
        self.root = Path()
        self.host_calls: Any = None  # tilegate.harness.hostworkers.HostCalls, once set up

    def hello(self, spec: Any, profile: str | None, alias: Any = None, sha: str = "") -> Any:
        """Load the side's code and protocol (`alias`: the base's too, beside); what it declares."""
        from tilegate.protocol import check, find_benchmarks

        self.root, source, registry = Path(spec.root), spec.source, spec.registry
        _paths(spec.import_roots, list(spec.drop))
        package = Path(source).name
        holder = (self.root / source).parent
        if not (self.root / source).is_dir():
            raise LookupError(
                f"its tree {self.root} has no {source}/ ([tool.tilegate] source) to measure"
            )
        with _failing(f"its package {package!r} ({holder / package}) fails to import", self.root):
            module = importlib.import_module(package)
        where = Path(getattr(module, "__file__", "") or "").resolve()
        if holder.resolve() not in where.parents:
            raise LookupError(
                f"`import {package}` gives {where}, not the tree's {holder / package}: "
                "something earlier on sys.path shadows it"
            )
        variants = None
        if registry:
            mod_name, _, attr = registry.partition(":")
            with _failing(f"its registry {registry} fails to import", self.root):
                found = getattr(importlib.import_module(mod_name), attr)
            variants = tuple(found.values() if isinstance(found, dict) else found)
        directory = Path(spec.protocol)
        with _failing(f"its protocol {directory}", self.root):
            benches = find_benchmarks(directory)
        self.bench = check(benches, directory, variants, registry)
        facts = _facts(self.bench, profile)
        if alias is not None:  # the base's package too, under another name (one process)
            self.alias = self._alias(package, alias, sha)
            facts = replace(facts, alias=_facts(self.alias, profile))
        return facts

    def _alias(self, package: str, spec: Any, sha: str) -> Any:
        """The base's benchmark, its package imported as tilegate_base_<sha> beside the head's."""
        from tilegate.errors import InputError
        from tilegate.harness.base import load_aliased, package_name
        from tilegate.protocol import load_base_protocol

        name, base = package_name(sha), Path(spec.root)
        try:
            load_aliased(base, spec.source, name)
            return load_base_protocol(Path(spec.protocol), package, name, spec.registry)
        except InputError as err:  # its own words: the package, the module, the error
            raise AliasError(f"{err}{_where(err.__cause__ or err, base)}") from err
        except Exception as err:
            raise AliasError(f"its protocol: {_short(err)}{_where(err, base)}") from err

    def setup(
        self,
        slots: dict[str, str],
        timer_config: Any,
        timer: str,
        device: str,
        capability: tuple[int, int] | None,
        l2_bytes: int,
        compile_threads: int,
        inject: list[str],
    ) -> None:
        from tilegate.cases import BASE_SUFFIX
        from tilegate.harness.sides import SideMeasurer
        from tilegate.harness.timing import CudaTimer, HostTimer

        variants = dict(self.bench.variant_map)
        if inject:
            from tilegate.harness.inject import apply_injections

            variants = apply_injections(self.bench, variants, inject)
        theirs = dict(self.alias.variant_map) if self.alias is not None else {}
        registry = {}
        for slot, name in slots.items():
            own = theirs if slot.endswith(BASE_SUFFIX) and self.alias is not None else variants
            if name not in own:
                raise LookupError(f"its benchmark has no variant {name!r} (slot {slot})")
            registry[slot] = own[name]
        if device == "cuda":
            import torch

            torch.cuda.init()
            clock: Any = CudaTimer(timer_config, l2_bytes=l2_bytes)
        else:
            clock = HostTimer(timer_config)
        assert clock.name == timer, (clock.name, timer)
        self.measurer = SideMeasurer(
            benchmark=self.bench,
            registry=registry,
            timer=clock,
            device=device,
            capability=capability,
            compile_threads=compile_threads,
        )

    def prepare(self, group: str, cases: list[Any], seed: int) -> Any:
        from tilegate.harness.sides import local, wire_result

        results, phases, timed = self.measurer.prepare(group, [local(c) for c in cases], seed)
        return {s: wire_result(r) for s, r in results.items()}, phases, timed

    def __getattr__(self, verb: str) -> Any:
        """explain, warm, hold, time, release: the side's SideMeasurer answers them as asked."""
        if verb not in FORWARDED:
            raise AttributeError(verb)
        return getattr(self.measurer, verb)

    def host(self, what: str, *args: Any) -> Any:
        """tilegate.harness.hostworkers' HostCalls: "setup" makes them, then its verbs."""
        from tilegate.harness.hostworkers import HostCalls

        if what == "setup":
            self.host_calls = HostCalls(self.measurer, self.root, *args)
            return None
        return getattr(self.host_calls, what)(*args)

    def warnings_seen(self) -> Any:
        if self.measurer is None:
            return [], []
        return self.measurer.warnings_seen()


def _capability() -> tuple[int, int] | None:
    """This machine's GPU compute capability as the measurer gets it (None: no GPU)."""
    import torch

    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return (int(major), int(minor))


def _facts(bench: Any, profile: str | None) -> Any:
    from tilegate.cases import build_cases
    from tilegate.harness.base import _switches
    from tilegate.harness.device import software_versions
    from tilegate.harness.sides import SideFacts, VariantFacts

    cases = None
    if profile in bench.profile_map or profile is None:
        prof = bench.profile(profile)
        capability = None if prof.interpreter else _capability()
        cases = {}
        for c in build_cases(prof, tuple(bench.variant_map)):
            cases[c.id] = {"variant": c.variant, "params": dict(c.params)}
            # what this side's own declaration keeps off this machine (coverage: a case the
            # base cannot run here either is no one's doing, the reference's too)
            why = bench.variant_map[c.variant].unsupported_reason(capability, c.params)
            if why:
                cases[c.id]["unsupported"] = str(why)
    return SideFacts(
        benchmark=bench.name,
        variants={
            v.name: VariantFacts(
                name=v.name,
                reference=bool(v.reference),
                twin_of=v.twin_of,
                renamed_from=tuple(getattr(v, "renamed_from", ()) or ()),
                switches_key=_switches(v),
                family=getattr(v, "family", None),
            )
            for v in bench.variants
        },
        profile_cases=cases,
        expectations=[e.as_json() for e in bench.expectations],
        software=software_versions(),
    )


def stacks_on_stop() -> None:
    """Every thread's stack into the log: on SIGTERM (a timeout, a cancelled job) before the
    process ends; on SIGUSR1 (`kill -USR1 PID` of a side that seems stuck) and it goes on."""
    for name, chain in (("SIGTERM", True), ("SIGUSR1", False)):
        if hasattr(signal, name):  # not on Windows
            faulthandler.register(
                getattr(signal, name), file=sys.stderr, all_threads=True, chain=chain
            )


def main(answer_fd: int) -> None:
    stacks_on_stop()
    answers = os.fdopen(answer_fd, "wb")
    requests = sys.stdin.buffer
    worker = Worker()
    while (request := receive(requests)) is not None:  # None: the coordinator is gone
        verb, args, kwargs = request
        if verb == "bye":
            answer: tuple[str, Any] = ("ok", None)
        else:
            try:
                answer = ("ok", getattr(worker, verb)(*args, **kwargs))
            except Exception as err:
                traceback.print_exc()
                what = str(err) if isinstance(err, LookupError) and str(err) else _short(err)
                answer = (
                    ("alias-error", what)
                    if isinstance(err, AliasError)
                    else ("error", f"{verb}: {what}")
                )
        try:
            send(answers, answer)
        except Exception as err:  # an answer that cannot travel: say so, do not die
            send(answers, ("error", f"{verb}: its answer cannot be sent: {_short(err)}"))
        sys.stdout.flush()
        if verb == "bye":
            return
