"""`tilegate ci`: what CI runs. A pull request (`--base SHA`) is measured and judged by its BASE's
gate; a push to main by the stored baseline (`--history STORE`: its results added to the store).

A pull request: a git worktree of the base, the pull request's source (the BASE's [tool.tilegate]
source) copied over it, and there `tilegate perf --ab SHA --baselines-from SHA` (tilegate's own
repository: the base's tilegate/ too, first on PYTHONPATH; any other: the installed tilegate). A
gate change (the protocol, GATE_PATHS, PYPROJECT_PARTS): the head's gate judges too, both verdicts
are shown, the base's decides where it judged, and without --accept-gate-change the pull request
fails. Out dir: report.md, verdicts.json (the decision under `ci`), gate.json, comment.md, summary.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tilegate.config import Config, _toml, parse
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK, InputError
from tilegate.fileio import atomic_write_json, atomic_write_text, read_json
from tilegate.judge.gate import VERDICTS
from tilegate.judge.integrity import FETCH_HINT
from tilegate.report.cannot_judge import cannot_judge_report
from tilegate.store.files import materialise_baselines

GATE_LABEL = "perf-gate-change"  # the maintainer's label the workflow reads into the flag
# Paths outside the source that measure or judge (a prefix ending in "/" is a directory).
GATE_PATHS = ["tilegate/", "noxfile.py", "tools/", "conftest.py", "pytest.ini", "tox.ini"]
GATE_PATHS += ["setup.cfg", ".github/workflows/perf.yml", ".github/workflows/tilegate.yml"]
# pyproject.toml: the parts that change what measures or judges (the rest is packaging metadata)
PYPROJECT_PARTS = [["tool", "tilegate"], ["tool", "pytest"], ["project", "dependencies"]]
PYPROJECT_PARTS += [["project", "optional-dependencies"], ["project", "entry-points"]]
PYPROJECT_PARTS += [["dependency-groups"]]


def log(line: str) -> None:
    print(f"tilegate ci: {line}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise InputError(f"`git {' '.join(args)}` in {repo}: {done.stderr.strip()}")
    return done.stdout if done.returncode == 0 else ""


def _toml_of(text: str, where: str) -> dict[str, Any]:
    try:
        return dict(_toml().loads(text))
    except ValueError as err:  # tomllib.TOMLDecodeError
        raise InputError(f"{where}: pyproject.toml is not valid TOML: {err}") from err


def _part(data: Any, keys: Sequence[str]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def config_of(text: str, where: str, root: Path = Path()) -> Config:
    """[tool.tilegate] of a pyproject.toml text in `root` (InputError naming `where`)."""
    table = _part(_toml_of(text, where), ("tool", "tilegate"))
    if not isinstance(table, dict):
        raise InputError(f"{where} has no [tool.tilegate] table: the gate needs its source")
    return replace(parse(table, Path(where)), root=root.resolve())


def _inside(path: str, prefix: str) -> bool:
    return path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")


def gate_changes(paths: Sequence[str], cfg: Config, base_text: str, head_text: str) -> list[str]:
    """What of `paths` changes the gate (outside the source and baselines/), each with why."""
    out = []
    for path in paths:
        if _inside(path, cfg.source) or _inside(path, cfg.baselines):
            continue  # the code measured; baselines/: the base's judge, the PR's diffed
        if _inside(path, cfg.protocol):
            out.append(f"{path} (the protocol: what is measured, how, and what is expected)")
        elif path == "pyproject.toml":
            base, head = _toml_of(base_text, "the base"), _toml_of(head_text, "the head")
            out += [
                f"pyproject.toml [{'.'.join(k)}]"
                for k in PYPROJECT_PARTS
                if _part(base, k) != _part(head, k)
            ]
        elif any(_inside(path, p) if p.endswith("/") else path == p for p in GATE_PATHS):
            out.append(path)
    return out


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def run_logged(cmd: Sequence[str], cwd: Path, log_path: Path) -> int:
    """Run `cmd` with `cwd` first on PYTHONPATH, its output to stdout and log_path; its exit."""
    log(f"$ (cd {cwd} && {' '.join(cmd)})")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as saved:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=_env(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            saved.write(line)
        return proc.wait()


def judge_of(tree: Path) -> str:
    """Which tilegate `python -m tilegate` runs in `tree`: its own tilegate/ where it has one
    (tilegate's repository: the base's copy judges), else the installed one."""
    done = subprocess.run(
        [sys.executable, "-c", "import tilegate; print(tilegate.__file__)"],
        cwd=tree, env=_env(tree), capture_output=True, text=True, check=False,
    )  # fmt: skip
    where = Path(done.stdout.strip() or "?").resolve()
    own = (tree / "tilegate").is_dir()
    if done.returncode != 0 or (own and tree.resolve() not in where.parents):
        raise InputError(
            f"in {tree}, `import tilegate` gives {where} ({done.stderr.strip()[-300:]}): not that "
            "tree's own tilegate/ (an installed tilegate shadows it?), so it cannot be the judge"
        )
    return "its tilegate/" if own else f"the installed tilegate ({where.parent})"


def perf_command(via: str, tree: Path, args: Sequence[str]) -> list[str]:
    if via == "nox":
        script = tree / "tools" / "gpu-nox.sh"
        nox = ["bash", str(script)] if script.is_file() else ["nox"]
        return [*nox, "-s", "perf", "--", *args]
    return [sys.executable, "-m", "tilegate", "perf", *args]


def headline(report: Path) -> str:
    try:
        return report.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
    except (OSError, IndexError, UnicodeDecodeError):
        return "(no report)"


def judged(code: int, report: Path, results: Path) -> bool:
    """Whether a gate judged: exit 0 or 1 with its results and a report that is a verdict."""
    wrote = results.is_file() and report.is_file() and "CANNOT JUDGE" not in headline(report)
    return code in (EXIT_OK, EXIT_FAIL) and wrote


def decide(base: int, base_judged: bool, head: int | None, changed: bool, acked: bool) -> int:
    """The exit code: the base's where it judged, else the head's (the gate changed); an
    unacknowledged change of the gate fails a run that would pass."""
    code = base if base_judged or not changed or head is None else head
    code = code if code in (EXIT_OK, EXIT_FAIL, EXIT_CANNOT_JUDGE) else EXIT_CANNOT_JUDGE
    return EXIT_FAIL if changed and not acked and code == EXIT_OK else code


# what the head's protocol measures at a profile (in the pull request's tree, its tilegate): the
# base's coverage facts are compared with it to name what a protocol edit stops measuring
HEAD_CASES = """
import json, sys
from tilegate.cases import build_cases
from tilegate.config import find
bench = find().load_benchmark()
p = bench.profile(sys.argv[1])
print(json.dumps({"axes": {a.name: list(a.values) for a in p.axes}, "fixed": dict(p.fixed),
    "cases": {c.id: dict(c.params) for c in build_cases(p, tuple(bench.variant_map))},
    "expectations": [[e.faster, e.than, e.per, sorted((k, list(v)) for k, v in e.where.items())]
                     for e in bench.expectations]}))
"""


def dropped_by_protocol(expected: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """The base's cases (and expectations) the head's protocol would not measure, with why."""
    out = []
    cases, axes, fixed = head.get("cases") or {}, head["axes"], head["fixed"]
    for key, case in sorted((expected.get("cases") or {}).items()):
        params = case.get("params") or {}
        if cases.get(key) == params:
            continue
        why = []
        for name, value in params.items():
            if name in axes and value not in axes[name]:
                why.append(f"axis value gone: {name}={value}")
            elif name in fixed and fixed[name] != value:
                why.append(f"fixed parameter changed: {name} {value} -> {fixed[name]}")
            elif name not in axes and name not in fixed:
                why.append(f"parameter gone: {name}")
        out.append(f"`{key}`: {'; '.join(why) or 'not in the protocol'}")
    ran = {json.dumps(e) for e in head.get("expectations") or []}
    for e in expected.get("expectations") or []:
        where = sorted((k, list(v)) for k, v in (e.get("where") or {}).items())
        if json.dumps([e.get("faster"), e.get("than"), e.get("per"), where]) not in ran:
            out.append(f"expectation {e.get('faster')} beats {e.get('than')} per {e.get('per')}")
    return out


def protocol_drops(repo: Path, results: Path) -> list[str] | None:
    """What the pull request's protocol would stop measuring of the base's (None: unknown)."""
    try:
        tg = json.loads(results.read_text(encoding="utf-8"))["machine_info"]["tilegate"]
        cmd = [sys.executable, "-c", HEAD_CASES, str(tg["profile"])]
        done = subprocess.run(cmd, cwd=repo, env=_env(repo), capture_output=True, text=True)
        return dropped_by_protocol(tg["coverage"]["expected"], json.loads(done.stdout))
    except (OSError, ValueError, KeyError, TypeError) as err:
        log(f"what the pull request's protocol measures is unknown: {err}")
        return None


@dataclass(frozen=True)
class Verdicts:
    """Both gates' exit codes and headlines; which one decides."""

    sha: str
    base: tuple[int, str]
    head: tuple[int | None, str]
    base_judged: bool
    final: int


def banner(v: Verdicts, changes: Sequence[str], acked: bool, drops: Sequence[str] | None) -> str:
    state = "acknowledged" if acked else "NOT ACKNOWLEDGED"
    lines = [f"# tilegate: this pull request changes the gate ({state}; exit {v.final})", ""]
    lines += [
        "It changes what measures or judges, outside the code that the base commit "
        f"`{v.sha[:12]}`'s gate measures:", "", *[f"- `{c}`" for c in changes], "",
    ]  # fmt: skip
    lines += [f"The base's protocol measured both sides (`{v.sha[:12]}`), as in every PR.", ""]
    if drops:
        lines += [
            f"Under this pull request's protocol, {len(drops)} case(s) or expectation(s) of the "
            "base's would no longer be measured (the base's protocol measured them here):",
            "", *[f"- {d}" for d in drops], "",
        ]  # fmt: skip
    lines.append(
        f"A maintainer acknowledged it (label `{GATE_LABEL}`): the verdict below stands."
        if acked
        else "This fails the pull request until a maintainer who reviewed the change adds the "
        f"label `{GATE_LABEL}` (`tilegate ci --accept-gate-change`)."
    )
    base_decides = " - decides" if v.base_judged else ""
    head_decides = "" if v.base_judged else " - decides"
    head_code = "-" if v.head[0] is None else v.head[0]
    lines += [
        "", "| gate | exit | verdict |", "|---|---:|---|",
        f"| the base's (`{v.sha[:12]}`){base_decides} | {v.base[0]} | {v.base[1]} |",
        f"| this pull request's{head_decides} | {head_code} | {v.head[1]} |", "",
    ]  # fmt: skip
    if not v.base_judged:
        lines += [
            "The base's gate could not judge this pull request's code (its log: "
            "`gate-base.log`), so the pull request's own gate measured and judged it.", "",
        ]  # fmt: skip
    return "\n".join([*lines, "---", ""]) + "\n"


@dataclass(frozen=True)
class CI:
    """One `tilegate ci`: a pull request's (`base` given) or a push's."""

    repo: Path
    out: Path
    base: str | None = None
    via: str = "python"
    accept_gate_change: bool = False
    accept_baseline_change: bool = False
    perf_args: Sequence[str] = ()
    history: Path | None = None

    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        for stale in f"report.md results.json {VERDICTS} gate.json comment.md summary.md".split():
            (self.out / stale).unlink(missing_ok=True)
        try:
            code, facts = self.pull_request(self.base) if self.base else (self.push(), {})
        except InputError as err:  # cannot judge: the report says why, the outputs still come
            atomic_write_text(self.out / "report.md", cannot_judge_report(str(err)))
            log(f"cannot judge: {err}")
            code, facts = EXIT_CANNOT_JUDGE, {"headline": headline(self.out / "report.md")}
        facts = {"event": "pull_request" if self.base else "push", **facts, "exit": code}
        atomic_write_json(self.out / "gate.json", facts)
        outputs(self.out, facts, git(self.repo, "rev-parse", "HEAD", check=False).strip())
        log(f"exit {code}; report: {self.out / 'report.md'}")
        return code

    def push(self) -> int:
        """`tilegate perf` against the stored baseline; with a history store, the results added."""
        perf = perf_command(self.via, self.repo, ["--out-dir", str(self.out), *self.perf_args])
        code = run_logged(perf, self.repo, self.out / "perf.log")
        results = self.out / "results.json"
        if self.history is not None and results.is_file():
            add = [sys.executable, "-m", "tilegate", "history", "add", str(results), "--store"]
            add += [str(self.history), "--baselines", str(self.head_config().baselines_dir)]
            add.append("--skip-existing")
            if run_logged(add, self.repo, self.out / "history.log") != EXIT_OK:
                log("the results could not be added to the history store (history.log)")
                return EXIT_CANNOT_JUDGE
        return code

    def pull_request(self, ref: str) -> tuple[int, dict[str, Any]]:
        repo, out = self.repo, self.out
        sha, cfg, changes = self._resolve(ref)
        changed, acked = bool(changes), self.accept_gate_change
        perf_args = ["--ab", sha, "--baselines-from", sha]
        perf_args += ["--baselines", str(self.head_config().baselines_dir)]
        perf_args += ["--accept-baseline-change"] * self.accept_baseline_change
        perf_args += self.perf_args
        report, results = out / "report.md", out / "results.json"
        base_code, who = self._measure_base(sha, cfg, perf_args)
        base_judged = judged(base_code, report, results)
        base_code = base_code if base_judged else EXIT_CANNOT_JUDGE  # no report: never a 1
        log(f"the base's gate: exit {base_code}: {headline(report)}")
        head: tuple[int | None, str] = (None, "not run: this pull request does not change the gate")
        if changed:
            head = self._head_gate(sha, base_judged, perf_args)
        final = decide(base_code, base_judged, head[0], changed, acked)
        body = read_text_or(report)
        if not base_judged and changed and (out / "head" / "report.md").is_file():
            body = read_text_or(out / "head" / "report.md")
        notes = []
        if acked and not changed:
            notes.append(
                f"`--accept-gate-change` (label `{GATE_LABEL}`) was given, but this pull request "
                "changes no part of the gate: nothing to acknowledge."
            )
        if changed:
            protocol = any("(the protocol" in c for c in changes)
            drops = protocol_drops(repo, results) if base_judged and protocol else None
            v = Verdicts(sha, (base_code, headline(report)), head, base_judged, final)
            text = banner(v, changes, acked, drops) + body
        else:
            text = (
                body
                or f"# tilegate: CANNOT JUDGE\n\nThe base's gate wrote no report ({base_code}).\n"
            )
            text += "".join(f"\n> Note: {n}\n" for n in notes)
            text += (
                f"\n---\n*Measured and judged by the base commit's gate (`{sha[:12]}`: {who}, its "
                f"protocol {cfg.protocol}/ and [tool.tilegate]), with this pull request's "
                f"{cfg.source}/ (`tilegate ci`).*\n"
            )
        atomic_write_text(report, text)
        facts = {
            "base": {"ref": ref, "sha": sha, "exit": base_code, "judged": base_judged},
            "head": {"exit": head[0]},
            "gate_changes": changes,
            "acknowledged": acked,
            "headline": headline(report),
            "notes": notes,
        }
        return final, facts

    def head_config(self) -> Config:
        text = read_text_or(self.repo / "pyproject.toml")
        return config_of(text, "this pull request", self.repo)

    def _resolve(self, ref: str) -> tuple[str, Config, list[str]]:
        """The base's commit (an ancestor of HEAD, else InputError), its configuration, and what
        of the pull request changes the gate."""
        repo = self.repo
        sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = sha.strip()
        ancestor = ["git", "-C", str(repo), "merge-base", "--is-ancestor", sha, "HEAD"]
        if not sha or subprocess.run(ancestor, capture_output=True).returncode != 0:
            what = "is not an ancestor of HEAD" if sha else "is not a commit here (not fetched?)"
            raise InputError(
                f"--base {ref!r} {what}: nothing to measure the pull request against. {FETCH_HINT}"
            )
        base_text = git(repo, "show", f"{sha}:pyproject.toml", check=False)
        cfg = config_of(base_text, f"the base {ref} ({sha[:12]})")
        diff = git(repo, "diff", "--name-only", "--no-renames", sha, "--").split()
        new = git(repo, "ls-files", "--others", "--exclude-standard").split()
        head_text = read_text_or(repo / "pyproject.toml")
        changes = gate_changes(sorted({*diff, *new}), cfg, base_text, head_text)
        log(f"base {ref} = {sha[:12]}: its protocol and baselines judge the PR's {cfg.source}/")
        if changes:
            log("this pull request changes the gate: " + "; ".join(changes))
        return sha, cfg, changes

    def _measure_base(self, sha: str, cfg: Config, perf_args: list[str]) -> tuple[int, str]:
        """The base's gate in a worktree of the base with the pull request's source over it:
        its exit code, and which tilegate judged."""
        repo = self.repo
        src = repo / cfg.source
        if not src.is_dir():
            raise InputError(
                f"this pull request has no {cfg.source}/ (the base's [tool.tilegate] source): "
                "nothing of it to measure"
            )
        work = Path(tempfile.mkdtemp(prefix="tilegate-ci-"))
        tree = work / "base"
        git(repo, "worktree", "add", "--detach", "--quiet", str(tree), sha)
        try:
            shutil.rmtree(tree / cfg.source, ignore_errors=True)
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(src, tree / cfg.source, ignore=ignore)
            who = judge_of(tree)
            cmd = perf_command(self.via, tree, [*perf_args, "--out-dir", str(self.out)])
            return run_logged(cmd, tree, self.out / "gate-base.log"), who
        finally:
            _remove_worktree(repo, tree)
            shutil.rmtree(work, ignore_errors=True)

    def _head_gate(
        self, sha: str, base_judged: bool, perf_args: list[str]
    ) -> tuple[int | None, str]:
        """The pull request's own gate: the same results judged by its code, or (the base's
        could not judge) a full run of it."""
        repo, head_out = self.repo, self.out / "head"
        shutil.rmtree(head_out, ignore_errors=True)
        head_out.mkdir(parents=True)
        judge_of(repo)
        results = self.out / "results.json"
        if base_judged:
            judge_dir = self.head_config().baselines_dir
            if not self.accept_baseline_change:
                judge_dir = materialise_baselines(sha, repo, head_out / "base-baselines")
            what = "report" if "--report-only" in self.perf_args else "compare"
            cmd = [sys.executable, "-m", "tilegate", what, str(results), "--no-plots"]
            cmd += ["--baselines", str(judge_dir), "--report", str(head_out / "report.md")]
        else:
            cmd = perf_command(self.via, repo, [*perf_args, "--out-dir", str(head_out)])
            results = head_out / "results.json"
        code: int = run_logged(cmd, repo, head_out / "gate-head.log")
        code = code if judged(code, head_out / "report.md", results) else EXIT_CANNOT_JUDGE
        log(f"this pull request's gate: exit {code}: {headline(head_out / 'report.md')}")
        return code, headline(head_out / "report.md")


def read_text_or(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _remove_worktree(repo: Path, tree: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(tree), check=False)
    shutil.rmtree(tree, ignore_errors=True)
    git(repo, "worktree", "prune", check=False)


def outputs(out: Path, facts: dict[str, Any], head_sha: str) -> None:
    """verdicts.json with the `ci` facts (the decision), then comment.md and summary.md from it."""
    from tilegate.report.job_summary import render as summary
    from tilegate.report.pr_comment import render as comment

    path = out / VERDICTS
    record = read_json(path, VERDICTS) if path.is_file() else {"verdicts": {}}
    record["ci"] = facts
    atomic_write_json(path, record)
    report = read_text_or(out / "report.md")
    atomic_write_text(out / "comment.md", comment(record, head_sha=head_sha, gpu=gpu_of(out)))
    atomic_write_text(out / "summary.md", summary(record, report, head_sha=head_sha))


def gpu_of(out: Path) -> str:
    """The GPU slug of the results in `out` ('' when there are none)."""
    try:
        results = read_json(out / "results.json", "results", allow_nan=True)
        return str(results["machine_info"]["tilegate"]["gpu"]["slug"])
    except (InputError, KeyError, TypeError):
        return ""
