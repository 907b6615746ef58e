"""`tilegate bisect GOOD BAD`: the commit that changed the cases' time; identity first, time second.

prune: each commit's [tool.tilegate] source laid over GOOD's tree (GOOD's protocol measures every
commit: the same cases), each case called once under identity capture in a side process
(tilegate.harness.sides), nothing timed; a source tree seen before shares its identity; equal runs
collapse into groups; a commit that does not build, import or run is skipped. confirm: a paired A/B
of GOOD against BAD (`tilegate perf --ab`'s suite, judge.abcase's interval). search: the first commit
of a group against GOOD (tilegate.judge.bisection decides). sandwich: each culprit against its
parent, more rounds, explained (tilegate.explain.diff). A point of the range is a tree with
harness.base's SOURCE_FILE beside it. `.perf/bisect/bisect.json`, state and result, is rewritten
atomically after each identity pass and timed attempt; `--resume` replays it and measures the rest.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, atomic_write_text, read_json
from tilegate.harness.base import SOURCE_FILE, TREE_DIR, _git, build_tree, materialise
from tilegate.judge import bisection as bis
from tilegate.markdown import listing, short_sha, table

SCHEMA = "tilegate.bisect/1"
MOVED = ("SLOWER", "FASTER", "REGRESSED")  # the verdicts --from takes of a run's verdicts.json


@contextlib.contextmanager
def _inside(path: Path) -> Iterator[None]:
    """`path` the working directory for a while: the suite finds its [tool.tilegate] there."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _capability() -> Any:
    """The GPU's compute capability from NVML (this process starts no CUDA); None: unknown."""
    from tilegate.harness.device import nvml

    with contextlib.suppress(Exception):
        nv: Any = nvml()
        return tuple(nv.nvmlDeviceGetCudaComputeCapability(nv.nvmlDeviceGetHandleByIndex(0)))
    return None


def select(cases: Sequence[str], patterns: Sequence[str], verdicts: str) -> list[str]:
    """The cases to bisect among GOOD's: --from's moved cases and --case's matches (fnmatch or a
    regular expression), else all; InputError naming what GOOD lacks."""
    wanted: list[str] = []
    if verdicts:
        data = read_json(verdicts, "verdicts file (--from)")
        judged = data.get("verdicts") if isinstance(data, dict) else None
        if not isinstance(judged, dict):
            raise InputError(f"--from {verdicts}: not a run's verdicts.json (no 'verdicts')")
        wanted = [k for k, v in judged.items() if v in MOVED]
        if not wanted:
            raise InputError(f"--from {verdicts}: no case {'/'.join(MOVED)}: nothing to bisect")
        missing = [k for k in wanted if k not in cases]
        if missing:
            raise InputError(f"case(s) of --from {verdicts} not at GOOD: {', '.join(missing)}")
    for pattern in patterns:
        rx = None
        with contextlib.suppress(re.error):
            rx = re.compile(pattern)
        hits = [c for c in cases if fnmatch.fnmatchcase(c, pattern) or (rx and rx.fullmatch(c))]
        if not hits:
            raise InputError(f"--case {pattern!r}: no case of GOOD's profile ({listing(cases)})")
        wanted += hits
    return list(dict.fromkeys(wanted)) if verdicts or patterns else list(cases)


class Bisect:
    """One `tilegate bisect` (module doc); `run()` returns its exit code."""

    def __init__(
        self,
        args: Any,
        out_dir: Path,
        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    ) -> None:
        """`args`: the command's (good, bad, profile, case, verdicts, rounds, max_rounds, resume)."""
        from tilegate.config import find
        from tilegate.run.profiles import interpreter

        self.config, self.out, self.log = find(), out_dir.resolve(), log
        self.repo, self.smoke = self.config.root, interpreter(args.profile)
        if self.smoke:  # for every process it starts (no tree's protocol is loaded here)
            os.environ["TRITON_INTERPRET"] = "1"
        good, bad = args.good, args.bad
        self.ends = (self._sha(good), self._sha(bad))
        if _git(self.repo, "merge-base", "--is-ancestor", *self.ends).returncode != 0:
            raise InputError(
                f"GOOD {good} ({self.ends[0][:12]}) is not an ancestor of BAD {bad} "
                f"({self.ends[1][:12]}): a bisect needs BAD to descend from GOOD"
            )
        listed = _git(
            self.repo, "log", "--reverse", "--first-parent", "--format=%H %s", f"{good}..{bad}"
        )
        self.range = [
            ln.partition(" ")[::2]
            for ln in listed.stdout.decode(errors="replace").split("\n")
            if ln
        ]
        if not self.range:
            raise InputError(f"GOOD {good} and BAD {bad} are the same commit: nothing to bisect")
        facts = {"schema": SCHEMA, "good": self.ends[0], "bad": self.ends[1], "profile": args.profile,
                 "patterns": args.case, "from": args.verdicts, "rounds": args.rounds,
                 "max_rounds": max(args.max_rounds, args.rounds)}  # fmt: skip
        self.state: dict[str, Any] = self._start(facts, args.resume)
        self.done: list[dict[str, Any]] = self.state.get("steps", [])  # recorded: replayed
        self.state["steps"] = []
        self.states: dict[int, tuple[bool, ...]] = {}  # identity group -> which cases moved

    def _sha(self, ref: str) -> str:
        found = _git(self.repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if found.returncode != 0:
            raise InputError(f"{ref!r} is not a commit of {self.repo} (missing, or not fetched)")
        return found.stdout.decode().strip()

    def _start(self, facts: dict[str, Any], resume: bool) -> dict[str, Any]:
        if not resume:
            shutil.rmtree(self.out, ignore_errors=True)
            return facts
        old = read_json(self.out / "bisect.json", "bisect state (--resume)")
        if not isinstance(old, dict) or {k: old.get(k) for k in facts} != facts:
            raise InputError(
                f"--resume: {self.out / 'bisect.json'} is a bisect of other commits or options; "
                "run it again without --resume"
            )
        return old

    def _save(self) -> None:
        atomic_write_json(self.out / "bisect.json", self.state)

    # -- prune: identity ---------------------------------------------------------------------

    @property
    def good(self) -> Path:
        return self.out / "trees" / self.ends[0]  # tilegate.harness.base.materialise's

    def _point(self, sha: str) -> Path:
        """The commit's source over GOOD's tree, built by [tool.tilegate] build; InputError when
        it has no source or does not build."""
        if sha == self.ends[0]:
            return self.good
        source = read_json(self.good / SOURCE_FILE, "GOOD's tree")["source"]
        key = _tree(self.repo, sha, source)
        if key.startswith("none:"):
            raise InputError(f"it has no {source}/ ([tool.tilegate] source)")
        dest = self.out / "trees" / key[:16]
        if not dest.is_dir():
            staging = dest.with_name(dest.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(self.good, staging, ignore=shutil.ignore_patterns(".perf"))
            shutil.rmtree(staging / TREE_DIR / source)
            tar = _git(self.repo, "archive", "--format=tar", sha, source).stdout
            with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
                archive.extractall(staging / TREE_DIR, filter="data")
            if self.config.build:  # a tree of git archive has no build products
                build_tree(self.config.build, staging / TREE_DIR, f"commit {sha[:12]}")
            staging.replace(dest)
        return dest

    def _identity(self, sha: str) -> str:
        """The digest of the cases' code hashes at the commit, from one side process that calls
        each case once (the first, GOOD, selects the cases); InputError: it does not run."""
        from tilegate.cases import Case
        from tilegate.harness.measure import group_seed
        from tilegate.harness.sides import RemoteSide, SideSpec
        from tilegate.harness.timing import HostTimer, TimerConfig

        point = self._point(sha)
        tree, facts = point / TREE_DIR, read_json(point / SOURCE_FILE, "bisect point")
        spec = SideSpec("bisect", tree, facts["source"], tree / facts["protocol"],
                        facts["registry"], label=f"commit {sha[:12]}")  # fmt: skip
        side = RemoteSide(spec, self.out / "sides" / sha[:12])
        try:
            declared = side.hello(self.state["profile"])
            cases = declared.profile_cases
            if cases is None:
                raise InputError(f"its protocol has no profile {self.state['profile']!r}")
            if "cases" not in self.state:  # GOOD: the selection, among its measurable cases
                ours = [k for k, v in cases.items() if not v.get("unsupported")
                        and not declared.variants[v["variant"]].reference]  # fmt: skip
                self.state["cases"] = select(ours, self.state["patterns"], self.state["from"])
            side.setup(slots={v: v for v in declared.variants}, timer_config=TimerConfig(),
                       timer=HostTimer.name if self.smoke else "cuda-event",
                       device="cpu" if self.smoke else "cuda",
                       capability=None if self.smoke else _capability(),
                       l2_bytes=0, compile_threads=0, inject=[])  # fmt: skip
            hashes = []
            for key in self.state["cases"]:
                if key not in cases:
                    raise InputError(f"its protocol has no case {key}")
                v = cases[key]["variant"]
                one = Case(v, (key[len(v) + 1 :],), cases[key]["params"])
                (got,) = side.prepare(one.group, [one], group_seed(one.group))[0].values()
                if got.failure or got.skip_reason or got.identity is None:
                    raise InputError(got.failure or got.skip_reason or f"{key}: no identity")
                hashes.append(f"{key} {got.identity.hash}")
            return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]
        finally:
            side.close()

    def prune(self) -> None:
        """Each commit's identity and group, or why it is skipped (GOOD's: InputError)."""
        if self.state.get("commits"):
            return  # resumed: pruned already
        c = self.config
        materialise(self.ends[0], self.repo, self.out / "trees", source=c.source,
                    protocol=c.protocol, registry=c.registry, build=c.build)  # fmt: skip
        source = read_json(self.good / SOURCE_FILE, "GOOD's tree")
        if source["protocol"] is None:
            raise InputError(f"GOOD {self.ends[0][:12]} has no [tool.tilegate] of its own")
        try:
            ident = self._identity(self.ends[0])
        except InputError as err:
            raise InputError(f"GOOD {self.ends[0][:12]} cannot be measured: {err}") from err
        seen = {_tree(self.repo, self.ends[0], source["source"]): (ident, "")}
        rows: list[dict[str, Any]] = [{"sha": self.ends[0], "identity": ident, "group": 0}]
        for i, (sha, subject) in enumerate(self.range, 1):
            key = _tree(self.repo, sha, source["source"])
            if key not in seen:
                try:
                    seen[key] = (self._identity(sha), "")
                except InputError as err:
                    seen[key] = ("", str(err).strip().splitlines()[-1][:300])
            ident, why = seen[key]
            rows.append({"sha": sha, "subject": subject, "identity": ident, "skipped": why})
            self.log(
                f"bisect: identity {i}/{len(self.range)} {sha[:12]}: {ident or 'skipped, ' + why}"
            )
            if not why:  # a group: a run of one identity, the skipped between them aside
                last = next(r for r in reversed(rows[:-1]) if not r.get("skipped"))
                rows[-1]["group"] = last["group"] + (last["identity"] != ident)
        self.state["commits"] = rows
        self._save()

    # -- time --------------------------------------------------------------------------------

    def _measure(self, kind: str, head: str, base: str, rounds: int) -> list[bis.Read]:
        """One attempt: the A/B suite, HEAD's point the head and BASE's the base, `rounds` paired
        rounds of every case; each case read from judge.abcase's interval."""
        rec: dict[str, Any] = {"kind": kind, "commit": head, "against": base, "rounds": rounds}
        old = next((o for o in self.done if {k: o.get(k) for k in rec} == rec), None)
        if old is not None:  # --resume: this attempt was measured before
            self.done.remove(old)
            self.state["steps"].append(old)
            return _reads(old)
        from tilegate.explain.diff import explain_cases
        from tilegate.harness.sides import SIDE_FAILURE_FILE
        from tilegate.judge.abcompare import compare_ab
        from tilegate.run.loop import run_suite, suite_failure
        from tilegate.store.files import Baselines, load_results

        n, cases = len(self.state["steps"]) + 1, self.state.get("moved") or self.state["cases"]
        where = self.out / "steps" / f"{n:02d}-{kind}-{head[:12]}"
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        atomic_write_text(where / "cases.txt", "".join(f"{c}\n{c}@base\n" for c in cases))
        args = [f"--perf-cases-of={where / 'cases.txt'}", f"--perf-rounds={rounds}",
                "--perf-ab-full", f"--perf-ab-base={self._point(base)}", f"--perf-ab-sha={base}",
                f"--perf-ab-ref={base[:12]}", f"--perf-side-logs={where / 'sides'}"]  # fmt: skip
        results, said = where / "results.json", f"step {n} ({kind} {head[:12]} vs {base[:12]})"
        with contextlib.redirect_stdout(io.StringIO()), _inside(self._point(head) / TREE_DIR):
            code = run_suite(results, self.state["profile"], args)
        if (where / "sides" / SIDE_FAILURE_FILE).exists():
            raise InputError(f"{said}: {(where / 'sides' / SIDE_FAILURE_FILE).read_text().strip()}")
        if not results.exists() or results.stat().st_size == 0:
            raise InputError(f"{said}: {suite_failure(code, results)}")
        run = load_results(results)
        noise = Baselines(self.config.baselines_dir).load_noise(run.env.gpu.slug)
        judged = {c.key: c for c in compare_ab(run, noise).cases}
        rec |= {"step": n, "cases": {}}
        for key in cases:
            c = judged.get(key)
            if c is None or c.ratio is None or c.ci is None:
                raise InputError(f"{said}: case {key} was not timed on both sides ({where})")
            sign = self.state.get("directions", {}).get(key) or (1 if c.ratio >= 1 else -1)
            word = bis.answer(c.ci, c.tolerance or 0.0, sign)
            rec["cases"][key] = {"ratio": c.ratio, "ci": list(c.ci), "tolerance": c.tolerance,
                                 "verdict": c.verdict.name, "answer": (
                                     bis.Answer.SAME if c.code_changed is False else word).value}  # fmt: skip
        if kind == "sandwich":  # why: the two commits' records, as `tilegate explain` diffs them
            todo = [(k, c.verdict.name) for k, c in judged.items() if c.code_changed]
            rec["why"] = {
                e.key: e.lines or [e.unavailable or "-"]
                for e in explain_cases(results, todo, judged)
            }
        self.state["steps"].append(rec)
        self._save()
        return _reads(rec)

    def _step(self, kind: str, head: str, base: str, rounds: int) -> tuple[tuple[bool, ...], bool]:
        """A step: which cases moved, and whether one was still UNKNOWN at the cap."""
        tries = bis.attempts(
            lambda r: self._measure(kind, head, base, r), rounds, self.state["max_rounds"]
        )
        rec = self.state["steps"][-1]
        shown = "; ".join(f"{r.key} {r.ratio:.4f} ({r.ci[0]:.4f}..{r.ci[1]:.4f}) {r.answer.value}"
                          for r in tries[-1])  # fmt: skip
        self.log(f"bisect: step {rec['step']} ({kind}) {head[:12]} against {base[:12]}: {shown} "
                 f"in {rec['rounds']} rounds; about {bis.steps_left(self.states)} search step(s) left")  # fmt: skip
        return bis.state(tries[-1])

    def run(self) -> int:
        """Prune, confirm, search, sandwich; the report and state. 0 whatever the bisect found
        (found, several, ambiguous and none are answers, not a gate's verdict)."""
        self.prune()
        rows = self.state["commits"]
        firsts = {r["group"]: r["sha"] for r in reversed(rows) if not r.get("skipped")}
        outcome: dict[str, Any] = {"candidates": [firsts[g] for g in sorted(firsts) if g]}
        if rows[-1].get("skipped"):
            bad = ", ".join(f"{r['sha'][:12]} ({r['skipped']})" for r in rows if r.get("skipped"))
            raise InputError(f"BAD {self.ends[1][:12]} cannot be measured; skipped: {bad}")
        if len(firsts) == 1:
            return self._finish(
                outcome | {"result": "none", "note": "every commit compiles to GOOD's code"}
            )
        last = rows[-1]["group"]
        self.states = {0: (False,), last: (True,)}  # for the estimate until the confirm says
        moved, unsure = self._step("confirm", self.ends[1], self.ends[0], self.state["rounds"])
        if not any(moved) and unsure:  # UNKNOWN at the cap, its median inside: not "no change"
            note, rest = "the range's change is UNKNOWN at the cap", outcome["candidates"]
            return self._finish(outcome | {"result": "ambiguous", "left": rest, "note": note})
        if not any(moved):
            return self._finish(outcome | {"result": "none", "note": "no change in this range"})
        confirm = self.state["steps"][-1]["cases"]
        self.state["moved"] = [k for k, m in zip(confirm, moved, strict=True) if m]
        self.state["directions"] = {
            k: 1 if confirm[k]["ratio"] >= 1 else -1 for k in self.state["moved"]
        }
        width = len(self.state["moved"])
        self.states = {0: (False,) * width, last: (True,) * width}
        left: set[int] = set(range(1, last + 1)) if unsure else set()
        while (g := bis.next_group(self.states)) is not None:
            a, b = max(k for k in self.states if k < g), min(k for k in self.states if k > g)
            self.states[g], unsure = self._step(
                "search", firsts[g], self.ends[0], self.state["rounds"]
            )
            left |= set(range(a + 1, b + 1)) if unsure else set()
        found, shas = [], [r["sha"] for r in rows]
        for g in bis.culprits(self.states):
            at = shas.index(firsts[g])
            up = max(i for i in range(at) if not rows[i].get("skipped"))  # its parent, built
            moved, unsure = self._step("sandwich", firsts[g], shas[up], 2 * self.state["rounds"])
            rec, sure = self.state["steps"][-1], any(moved) and not unsure
            found.append({"sha": firsts[g], "parent": shas[up], "or_skipped": shas[up + 1 : at],
                          "confirmed": sure, "cases": rec["cases"], "why": rec.get("why", {})})  # fmt: skip
            left |= set() if sure else {g}
        outcome["culprits"] = found
        if left:
            return self._finish(
                outcome | {"result": "ambiguous", "left": [firsts[g] for g in sorted(left)]}
            )
        return self._finish(outcome | {"result": "found" if len(found) == 1 else "several"})

    def _finish(self, outcome: dict[str, Any]) -> int:
        timed = {s[k] for s in self.state["steps"] for k in ("commit", "against")}
        rows = self.state["commits"]
        outcome["skipped"] = [
            {"sha": r["sha"], "why": r["skipped"]} for r in rows if r.get("skipped")
        ]
        outcome["timed"] = [r["sha"] for r in rows if r["sha"] in timed]
        self.state["outcome"] = outcome
        self._save()
        atomic_write_text(self.out / "report.md", render(self.state))
        self.log(f"bisect: {headline(self.state)} (report: {self.out / 'report.md'})")
        return 0


def _tree(repo: Path, sha: str, source: str) -> str:
    """The git tree of the commit's source directory ("none:<sha>" where it has none)."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{sha}:{source}")
    return found.stdout.decode().strip() if found.returncode == 0 else f"none:{sha}"


def _reads(rec: dict[str, Any]) -> list[bis.Read]:
    return [
        bis.Read(
            k, v["ratio"], (v["ci"][0], v["ci"][1]), v["tolerance"] or 0.0, bis.Answer(v["answer"])
        )
        for k, v in rec["cases"].items()
    ]


# -- the report --------------------------------------------------------------------------------


def _size(cases: dict[str, Any]) -> str:
    return "; ".join(
        f"`{k}` {v['ratio'] - 1:+.2%} ({v['ci'][0] - 1:+.2%} .. {v['ci'][1] - 1:+.2%}) {v['answer']}"
        for k, v in cases.items()
    )


def headline(data: dict[str, Any]) -> str:
    """The bisect's result in one line: FOUND / SEVERAL with the commits, AMBIGUOUS with the
    candidates left, NONE with why (and the confirm step's figure)."""
    out = data["outcome"]
    subject = {r["sha"]: r.get("subject", "") for r in data["commits"]}
    confirm = [s["cases"] for s in data["steps"] if s["kind"] == "confirm"][-1:]
    said = f"{out.get('note', '')}" + "".join(f": {_size(c)}" for c in confirm)
    if out["result"] == "none":
        return f"NONE: {said}"
    if out["result"] == "ambiguous":
        why = f" ({said})" if "note" in out else ""
        return f"AMBIGUOUS: candidates left {', '.join(map(short_sha, out['left']))}{why}"
    found = [f'{short_sha(c["sha"])} "{subject[c["sha"]]}"' for c in out["culprits"]]
    return f"{out['result'].upper()}: {', '.join(found)}"


def render(data: dict[str, Any]) -> str:
    """report.md: the headline, the range and its pruning, each culprit's size and why, the steps."""
    out, rows = data["outcome"], data["commits"]
    group = {r["sha"]: r.get("group", "skipped") for r in rows}
    skipped = ", ".join(f"{short_sha(s['sha'])} ({s['why']})" for s in out["skipped"])
    lines = [
        f"# tilegate bisect {short_sha(data['good'])}..{short_sha(data['bad'])}: {headline(data)}",
        "",
        f"- cases: {', '.join(f'`{c}`' for c in data['cases'])} (profile {data['profile']})",
        f"- {len(rows) - 1} commit(s) after GOOD, {rows[-1].get('group', 0) + 1} identity group(s); "
        f"candidates (the compiled code changes): {', '.join(map(short_sha, out['candidates'])) or 'none'}",
        f"- skipped (does not build, import or run): {skipped or 'none'}",
        f"- timed: {', '.join(map(short_sha, out['timed'])) or 'nothing'}",
        "",
    ]
    for c in out.get("culprits", []):
        sure = "confirmed" if c["confirmed"] else "NOT confirmed"
        maybe = ", ".join(map(short_sha, c["or_skipped"]))
        maybe = f" (or the skipped {maybe})" if maybe else ""
        lines += [f"## {short_sha(c['sha'])}{maybe} against {short_sha(c['parent'])} ({sure})", "",
                  _size(c["cases"]), "", *(f"- `{k}`: {w}" for k, why in c["why"].items() for w in why), ""]  # fmt: skip
    steps = [
        (s["step"], s["kind"], short_sha(s["commit"]), short_sha(s["against"]), group[s["commit"]],
         k, f"{v['ratio']:.4f}", f"{v['ci'][0]:.4f} .. {v['ci'][1]:.4f}", v["answer"], s["rounds"])
        for s in data["steps"] for k, v in s["cases"].items()
    ]  # fmt: skip
    head = "# step commit against group case ratio interval answer rounds".split()  # noqa: SIM905
    return "\n".join([*lines, "## Steps", "", *table(head, "rllllrrrlr", steps), ""])
