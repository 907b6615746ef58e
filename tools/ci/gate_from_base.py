#!/usr/bin/env python3
"""A pull request measured and judged by its BASE commit's gate: the PR's kernels, the base's judge.

perf.yml runs the base's copy of this script (`git show BASE:tools/ci/gate_from_base.py`), so a
pull request cannot edit what it runs:

    python gate.py --base HEAD^1 [--via nox|python] [--accept-baseline-change]
                   [--accept-gate-change] [--out-dir .perf] -- [tilegate perf options]

1. The base commit's tree becomes the gate: `git worktree add --detach` (a git checkout, so the
   base's `tilegate perf --ab SHA` resolves SHA), and the PR's configured source path (the BASE's
   `[tool.tilegate] source`, e.g. kernels/) and only that is copied over it from the work tree.
2. The base's gate runs there: `tilegate perf --ab SHA --baselines-from SHA --baselines
   <PR>/baselines` (through the base's tools/gpu-nox.sh with --via nox, the GPU runner's way), into
   the PR's --out-dir: results.json, report.md, plots where perf.yml uploads them. baselines/ is
   the base's and the PR's own is diffed against it (issue 19, item 3; the base's integrity code).
   The base's protocol (`[tool.tilegate] protocol`, perf_tests/: the grid, profiles, inputs,
   reference, expectations) is the worktree's, untouched: the PR's kernels are measured under it,
   and every case of it must be measured (tilegate.judge.coverage).
3. "The gate changed": the PR's diff against BASE touches what measures or judges outside the
   source path (the protocol directory, GATE_PATHS, pyproject.toml's [tool.tilegate] / [tool.pytest...] / dependencies /
   entry points, the benchmark module when it lies outside the source path). Then the head's own
   gate also judges: `tilegate compare` of the base gate's results.json with the PR's code, or a
   full run of the PR's gate where the base's could not judge (the PR's kernels do not import in
   it, its suite rejects them). The report leads with "this pull request changes the gate", both
   verdicts are shown and the base's decides where it judged; without --accept-gate-change (the
   maintainer label `perf-gate-change`, read by the workflow from the event) the PR fails.

Exit codes are the gate's: 0 holds, 1 a measured regression / broken expectation / a case of the
base's protocol not measured / unacknowledged change of the gate or its baselines, 2 cannot judge
(every refusal says what and why; a gate that could not run or wrote no report is 2, never 1:
nox answers 1 for any failed session). Only the
standard library: this file runs outside both trees, before either gate is imported.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_CANNOT_JUDGE = 0, 1, 2
GATE_LABEL = "perf-gate-change"
# Paths outside the source path that measure or judge (a prefix ending in "/" is a directory).
# tools/: tools/gpu-nox.sh runs the sessions, tools/ci/ this script; .github/workflows/perf.yml:
# what calls it (a PR's workflow edit runs on its own events: review is the only protection).
GATE_PATHS = (
    "tilegate/",
    "noxfile.py",
    "tools/",
    ".github/workflows/perf.yml",
    "conftest.py",  # the repository root's: pytest loads it into the suite
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
)
# pyproject.toml: the parts that change what measures or judges (the rest is packaging metadata)
PYPROJECT_PARTS = (
    ("tool", "tilegate"),
    ("tool", "pytest"),
    ("project", "dependencies"),
    ("project", "optional-dependencies"),
    ("project", "entry-points"),
    ("dependency-groups",),
)


class Refusal(Exception):
    """Cannot judge (exit 2): the message says what and why."""


def log(line: str) -> None:
    print(f"gate-from-base: {line}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if check and done.returncode != 0:
        raise Refusal(
            f"`git {' '.join(args)}` in {repo} failed (exit {done.returncode}): "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    return done


def _toml_loads(text: str) -> dict[str, Any] | None:
    """Parsed TOML, or None where this Python has no TOML reader (then every edit counts)."""
    try:
        import tomllib
    except ModuleNotFoundError:
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise Refusal(f"pyproject.toml is not valid TOML: {err}") from err


def _part(data: dict[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # type: ignore[assignment]
    return data


def tilegate_table(text: str | None, where: str) -> dict[str, str]:
    """[tool.tilegate] of a pyproject.toml text: source, protocol, baselines (Refusal if none);
    benchmark too for a tree from before the protocol left the source."""
    data = _toml_loads(text) if text is not None else None
    table = _part(data, ("tool", "tilegate")) if data is not None else None
    if text is None or not isinstance(table, dict):
        raise Refusal(
            f"{where} has no [tool.tilegate] table (or no pyproject.toml, or this Python reads no "
            "TOML: Python >= 3.11, or tomli): the base's gate needs its source and protocol"
        )
    if not isinstance(table.get("source"), str):
        raise Refusal(f"{where}: [tool.tilegate] has no source string")
    source = table["source"].strip().rstrip("/")
    protocol = str(table.get("protocol", "perf_tests")).strip().rstrip("/")
    if _inside(protocol, source) or _inside(source, protocol):
        raise Refusal(
            f"{where}: [tool.tilegate] protocol {protocol!r} overlaps source {source!r}: the "
            "pull request's source would replace the base's protocol; keep them apart"
        )
    return {
        "source": source,
        "protocol": protocol,
        "benchmark": str(table.get("benchmark", "")).strip(),
        "baselines": str(table.get("baselines", "baselines")),
    }


def changed_paths(repo: Path, sha: str) -> list[str]:
    """Every path the work tree changes against SHA: tracked edits and untracked, unignored files."""
    diff = git(repo, "diff", "--name-only", "--no-renames", sha, "--").stdout.decode()
    others = git(repo, "ls-files", "--others", "--exclude-standard").stdout.decode()
    return sorted({p for p in (diff + others).splitlines() if p})


def _inside(path: str, prefix: str) -> bool:
    return path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")


def _module_files(benchmark: str) -> tuple[str, str]:
    module = benchmark.partition(":")[0].replace(".", "/")
    return f"{module}.py", f"{module}/__init__.py"


def gate_changes(
    paths: Sequence[str],
    cfg: dict[str, str],
    base_pyproject: str | None,
    head_pyproject: str | None,
) -> list[str]:
    """What of `paths` changes the gate (outside the source path), each with why."""
    out = []
    bench_files = _module_files(cfg["benchmark"]) if cfg.get("benchmark") else ()
    for path in paths:
        if _inside(path, cfg["source"]) or _inside(path, cfg["baselines"]):
            continue  # the kernels measured; baselines/: judged by the base (item 3)
        if cfg.get("protocol") and _inside(path, cfg["protocol"]):
            out.append(f"{path} (the protocol: what is measured, how, and what is expected)")
            continue
        if path == "pyproject.toml":
            base = _toml_loads(base_pyproject or "")
            head = _toml_loads(head_pyproject or "")
            if base is None or head is None:
                out.append("pyproject.toml (changed; no TOML reader to tell which part)")
                continue
            for keys in PYPROJECT_PARTS:
                if _part(base, keys) != _part(head, keys):
                    out.append(f"pyproject.toml [{'.'.join(keys)}]")
        elif path in bench_files:
            out.append(
                f"{path} (the benchmark declaration {cfg['benchmark']}, outside {cfg['source']}/)"
            )
        elif any(_inside(path, p) if p.endswith("/") else path == p for p in GATE_PATHS):
            out.append(path)
    return out


def add_worktree(repo: Path, sha: str, where: Path) -> Path:
    gate = where / "base"
    if gate.exists():  # a --work DIR of an earlier run
        remove_worktree(repo, gate)
    git(repo, "worktree", "add", "--detach", "--quiet", str(gate), sha)
    return gate


def gate_parts(gate: Path, cfg: dict[str, str]) -> str:
    """What of the base's tree measured and judged, as the report's footer names it: only what
    that tree has (an adopter's repository has no tilegate/ of its own, often no noxfile)."""
    tool = "its tilegate/" if (gate / "tilegate").is_dir() else "the installed tilegate"
    parts = [tool, *(["noxfile.py"] if (gate / "noxfile.py").is_file() else [])]
    parts += [f"its protocol {cfg['protocol']}/", "[tool.tilegate]"]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def remove_worktree(repo: Path, gate: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(gate), check=False)
    shutil.rmtree(gate, ignore_errors=True)
    git(repo, "worktree", "prune", check=False)


def overlay(head: Path, gate: Path, source: str) -> None:
    """The PR's source path (its work tree's files) in place of the base's; nothing else."""
    src, dst = head / source, gate / source
    if not src.is_dir():
        raise Refusal(
            f"this pull request has no {source}/ (the base's [tool.tilegate] source): the base's "
            "gate has no kernels of the PR to measure"
        )
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def extract(repo: Path, sha: str, path: str, dest: Path) -> Path:
    """SHA's `path` (a directory) under dest; dest/path."""
    archive = git(repo, "archive", "--format=tar", sha, f"{path}/", check=False)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if archive.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")
    return dest / path


def run_logged(cmd: Sequence[str], cwd: Path, env: dict[str, str], log_path: Path) -> int:
    """Run `cmd`, its output to this process's stdout and to log_path; its exit code."""
    log(f"$ (cd {cwd} && {' '.join(cmd)})")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as saved:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            saved.write(line)
        return proc.wait()


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def check_imports_from(tree: Path, python: str) -> None:
    """The tilegate that `python -m tilegate` imports in `tree` must be tree's own; in a
    repository without a tilegate/ of its own (an adopter's: `tilegate init`), the installed one
    its environment pins is the judge."""
    done = subprocess.run(
        [python, "-c", "import tilegate; print(tilegate.__file__)"],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    where = Path(done.stdout.strip() or "?").resolve()
    if done.returncode == 0 and not (tree / "tilegate").is_dir():
        log(f"{tree} has no tilegate/ of its own: the installed tilegate judges ({where.parent})")
        return
    if done.returncode != 0 or tree.resolve() not in where.parents:
        raise Refusal(
            f"in {tree}, `import tilegate` gives {where} ({done.stderr.strip()[-300:]}): not that "
            "tree's own tilegate/ (an installed tilegate shadows it?), so it cannot be the judge"
        )


def perf_command(via: str, tree: Path, args: Sequence[str]) -> list[str]:
    if via == "nox":
        script = tree / "tools" / "gpu-nox.sh"
        if not script.is_file():
            raise Refusal(f"--via nox: {tree} has no tools/gpu-nox.sh; use --via python")
        return ["bash", str(script), "-s", "perf", "--", *args]
    return [sys.executable, "-m", "tilegate", "perf", *args]


def headline(report: Path) -> str:
    try:
        first = report.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return "(no report)"
    return first.lstrip("# ").strip()


# what the head's protocol measures at a profile (run in the pull request's tree, with its
# tilegate): the base's coverage facts are compared with it to name what a protocol edit drops
HEAD_CASES = """
import json, sys
from tilegate.cases import build_cases
from tilegate.config import find
bench = find().load_benchmark()
profile = bench.profile(sys.argv[1])
print(json.dumps({
    "axes": {a.name: list(a.values) for a in profile.axes},
    "fixed": dict(profile.fixed),
    "cases": {c.id: dict(c.params) for c in build_cases(profile, tuple(bench.variant_map))},
    "expectations": [[e.faster, e.than, e.per, sorted((k, list(v)) for k, v in e.where.items())]
                     for e in bench.expectations],
}))
"""


def dropped_by_protocol(expected: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """The base's cases (and expectations) that the head's protocol would not measure, each
    with why: what a pull request's edit of perf_tests/ stops measuring."""
    out = []
    cases = head.get("cases") or {}
    for key, case in sorted((expected.get("cases") or {}).items()):
        params = case.get("params") or {}
        if key in cases and cases[key] == params:
            continue
        why = []
        for name, value in params.items():
            if name in head["axes"] and value not in head["axes"][name]:
                why.append(f"axis value gone: {name}={value}")
            elif name in head["fixed"] and head["fixed"][name] != value:
                why.append(f"fixed parameter changed: {name} {value} -> {head['fixed'][name]}")
            elif name not in head["axes"] and name not in head["fixed"]:
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
        expected, profile = tg["coverage"]["expected"], tg["profile"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    done = subprocess.run(
        [sys.executable, "-c", HEAD_CASES, str(profile)],
        cwd=repo,
        env=_env(repo),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log(f"the pull request's protocol does not load: {done.stderr.strip()[-300:]}")
        return None
    try:
        return dropped_by_protocol(expected, json.loads(done.stdout))
    except (ValueError, KeyError, TypeError):
        return None


def judged(code: int, report: Path, results: Path) -> bool:
    """Whether a gate judged: exit 0 or 1 with its results and a report that is a verdict."""
    return (
        code in (EXIT_OK, EXIT_FAIL)
        and results.is_file()
        and report.is_file()
        and "CANNOT JUDGE" not in headline(report)
    )


def decide(
    base_code: int, base_judged: bool, head_code: int | None, changed: bool, acked: bool
) -> int:
    """The exit code: the base's where it judged, else the head's (gate changed); an
    unacknowledged change of the gate fails a run that would pass."""
    code = base_code if base_judged or not changed or head_code is None else head_code
    if code not in (EXIT_OK, EXIT_FAIL, EXIT_CANNOT_JUDGE):
        code = EXIT_CANNOT_JUDGE
    if changed and not acked and code == EXIT_OK:
        code = EXIT_FAIL
    return code


def banner(
    sha: str,
    changes: Sequence[str],
    acked: bool,
    base: tuple[int, str],
    head: tuple[int | None, str],
    base_judged: bool,
    final: int,
    drops: Sequence[str] | None = None,
) -> str:
    state = "acknowledged" if acked else "NOT ACKNOWLEDGED"
    lines = [
        f"# tilegate: this pull request changes the gate ({state}; exit {final})",
        "",
        f"It changes what measures or judges, outside the kernels the base commit `{sha[:12]}`'s "
        "gate measures:",
        "",
        *[f"- `{c}`" for c in changes],
        "",
    ]
    if drops:
        lines += [
            f"Under this pull request's protocol, {len(drops)} case(s) or expectation(s) of the "
            "base's would no longer be measured (the base's protocol measured them here):",
            "",
            *[f"- {d}" for d in drops],
            "",
        ]
    if acked:
        lines.append(
            f"A maintainer acknowledged it (label `{GATE_LABEL}`): the verdict below stands."
        )
    else:
        lines.append(
            "This fails the pull request until a maintainer who reviewed the change adds the label "
            f'`{GATE_LABEL}` (docs/ci.md, "What the gate trusts").'
        )
    decider = "base" if base_judged else "head"
    lines += [
        "",
        "| gate | exit | verdict |",
        "|---|---:|---|",
        f"| the base's (`{sha[:12]}`){' - decides' if decider == 'base' else ''} | {base[0]} | {base[1]} |",
        f"| this pull request's{' - decides' if decider == 'head' else ''} | "
        f"{'-' if head[0] is None else head[0]} | {head[1]} |",
        "",
    ]
    if not base_judged:
        lines += [
            "The base's gate could not judge this pull request's kernels (its log: "
            "`gate-base.log`), so the pull request's own gate measured and judged them.",
            "",
        ]
    lines += ["---", ""]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="gate_from_base.py",
        description="Measure and judge a pull request's kernels with its base commit's gate.",
    )
    p.add_argument("--base", required=True, metavar="REF", help="the base commit (HEAD^1 in a PR)")
    p.add_argument("--repo", default=".", help="the pull request's checkout (default: .)")
    p.add_argument("--out-dir", default=".perf", help="results, reports (default: REPO/.perf)")
    p.add_argument(
        "--via",
        choices=("nox", "python"),
        default="nox",
        help="nox: tools/gpu-nox.sh -s perf (the GPU runner's way); python: python -m tilegate perf",
    )
    p.add_argument(
        "--accept-baseline-change", action="store_true", help="label perf-baseline-change"
    )
    p.add_argument("--accept-gate-change", action="store_true", help=f"label {GATE_LABEL}")
    p.add_argument(
        "--work", metavar="DIR", help="where the base's worktree goes (default: a temp dir)"
    )
    p.add_argument("perf_args", nargs="*", help="after --: tilegate perf's options")
    args = p.parse_args(argv)
    repo = Path(args.repo).resolve()
    out = Path(args.out_dir)
    out = (out if out.is_absolute() else repo / out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _main(args, repo, out)
    except Refusal as err:
        (out / "report.md").write_text(f"# tilegate: CANNOT JUDGE\n\n{err}\n")
        log(f"cannot judge: {err} (exit 2)")
        return EXIT_CANNOT_JUDGE


def _main(args: argparse.Namespace, repo: Path, out: Path) -> int:
    found = git(repo, "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}", check=False)
    if found.returncode != 0:
        raise Refusal(
            f"base {args.base!r} is not a commit of {repo} (in GitHub Actions: actions/checkout "
            "with fetch-depth: 2, the base is HEAD^1 of the merge commit)"
        )
    sha = found.stdout.decode().strip()
    shown = git(repo, "show", f"{sha}:pyproject.toml", check=False)
    base_pyproject = shown.stdout.decode() if shown.returncode == 0 else None
    head_file = repo / "pyproject.toml"
    head_pyproject = head_file.read_text(encoding="utf-8") if head_file.is_file() else None
    cfg = tilegate_table(base_pyproject, f"the base {args.base} ({sha[:12]})")
    head_cfg = tilegate_table(head_pyproject, "this pull request")
    changes = gate_changes(changed_paths(repo, sha), cfg, base_pyproject, head_pyproject)
    changed, acked = bool(changes), args.accept_gate_change
    log(f"base {args.base} = {sha[:12]}; its gate measures this pull request's {cfg['source']}/")
    if changed:
        log("this pull request changes the gate: " + "; ".join(changes))

    shared = ["--ab", sha, "--baselines-from", sha]
    if args.accept_baseline_change:
        shared.append("--accept-baseline-change")
    perf_args = [*shared, "--baselines", str(repo / head_cfg["baselines"]), *args.perf_args]
    report, results = out / "report.md", out / "results.json"
    for stale in (report, results):
        stale.unlink(missing_ok=True)
    work = (
        Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="tilegate-gate-"))
    )
    gate = add_worktree(repo, sha, work)
    measured_by = gate_parts(gate, cfg)
    try:
        overlay(repo, gate, cfg["source"])
        python = sys.executable
        check_imports_from(gate, python)
        base_code = run_logged(
            perf_command(args.via, gate, [*perf_args, "--out-dir", str(out)]),
            gate,
            _env(gate),
            out / "gate-base.log",
        )
    finally:
        remove_worktree(repo, gate)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    base_judged = judged(base_code, report, results)
    if not base_judged:
        base_code = EXIT_CANNOT_JUDGE  # could not run, or wrote no report: never a 1
    base_verdict = (base_code, headline(report))
    log(f"the base's gate: exit {base_code}: {base_verdict[1]}")

    head_code: int | None = None
    head_verdict: tuple[int | None, str] = (
        None,
        "not run: this pull request does not change the gate",
    )
    if changed:
        head_out = out / "head"
        shutil.rmtree(head_out, ignore_errors=True)
        head_out.mkdir(parents=True)
        check_imports_from(repo, sys.executable)
        if base_judged:  # the same results file, judged by the PR's code
            judge_dir = (
                repo / head_cfg["baselines"]
                if args.accept_baseline_change
                else extract(repo, sha, cfg["baselines"], head_out / "base-baselines")
            )
            what = "report" if "--report-only" in args.perf_args else "compare"
            cmd = [
                sys.executable,
                "-m",
                "tilegate",
                what,
                str(results),
                "--baselines",
                str(judge_dir),
                "--report",
                str(head_out / "report.md"),
                "--no-plots",
            ]
        else:  # the base's gate could not judge the PR's kernels: the PR's gate measures them
            cmd = perf_command(args.via, repo, [*perf_args, "--out-dir", str(head_out)])
        head_code = run_logged(cmd, repo, _env(repo), head_out / "gate-head.log")
        head_results = results if base_judged else head_out / "results.json"
        if not judged(head_code, head_out / "report.md", head_results):
            head_code = EXIT_CANNOT_JUDGE
        head_verdict = (head_code, headline(head_out / "report.md"))
        log(f"this pull request's gate: exit {head_code}: {head_verdict[1]}")

    final = decide(base_code, base_judged, head_code, changed, acked)
    body = report.read_text(encoding="utf-8") if report.is_file() else ""
    if not base_judged and changed and (out / "head" / "report.md").is_file():
        body = (out / "head" / "report.md").read_text(encoding="utf-8")
    if changed:
        drops = (
            protocol_drops(repo, results)
            if base_judged and any("(the protocol" in c for c in changes)
            else None
        )
        text = (
            banner(sha, changes, acked, base_verdict, head_verdict, base_judged, final, drops)
            + body
        )
    else:
        text = (
            body
            or f"# tilegate: CANNOT JUDGE\n\nThe base's gate wrote no report (exit {base_code}).\n"
        )
        text += (
            f"\n---\n*Measured and judged by the base commit's gate (`{sha[:12]}`: "
            f"{measured_by}), with this pull request's {cfg['source']}/ (gate_from_base.py).*\n"
        )
    report.write_text(text, encoding="utf-8")
    (out / "gate.json").write_text(
        json.dumps(
            {
                "base": {"ref": args.base, "sha": sha, "exit": base_code, "judged": base_judged},
                "head": {"exit": head_code},
                "gate_changes": changes,
                "acknowledged": acked,
                "exit": final,
            },
            indent=2,
        )
        + "\n"
    )
    log(f"exit {final}; report: {report}")
    return final


if __name__ == "__main__":
    sys.exit(main())
