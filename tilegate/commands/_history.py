"""The subcommands of `tilegate history` (tilegate/commands/history.py wires them in when the
`history` extra is installed): add, import, list, changepoints, dashboard, prune. Exit codes: 0
done, 2 cannot do it (bad or missing input, a run already stored, a corrupt or locked store)."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tilegate.commands._shared import PERF_DIR
from tilegate.errors import EXIT_OK, InputError
from tilegate.fileio import read_json
from tilegate.history import changepoints as cpmod
from tilegate.history.dashboard import Culprits, write_dashboard
from tilegate.history.verdicts import baseline_for, judge, read_verdicts
from tilegate.judge.results import Run
from tilegate.markdown import short_sha
from tilegate.run.culprit import SCHEMA, headline
from tilegate.store.files import load_results
from tilegate.store.historydb import DEFAULT_LOCK_TIMEOUT_S as LOCK_S
from tilegate.store.historydb import DEFAULT_STORE, Judged, Links, open_store

DEFAULT_DASHBOARD = PERF_DIR / "dashboard.html"


def _loaded(paths: Sequence[Path], args: argparse.Namespace) -> list[tuple[Run, dict[str, Judged]]]:
    """Load and judge every results file first: one bad file and nothing is added."""
    if args.verdicts and len(paths) != 1:
        raise InputError("--verdicts FILE belongs to one results file; give exactly one RESULTS")
    out = []
    for path in paths:
        run = load_results(path)
        if run.env.injected:
            raise InputError(
                f"results file {run.path} carries test-only injections ({', '.join(run.env.injected)}): "
                "its times are not the code's, so it does not go into the history"
            )
        if args.verdicts:
            judged = read_verdicts(Path(args.verdicts), run)
        else:
            base = baseline_for(
                run,
                Path(args.baseline) if args.baseline else None,
                Path(args.baselines) if args.baselines else None,
            )
            judged = judge(run, base)
        out.append((run, judged))
    return out


def github_links(env: Mapping[str, str]) -> Links:
    """The repository and this workflow run's URLs from GitHub Actions' variables (any host:
    GITHUB_SERVER_URL is github.com or a GitHub Enterprise server); none outside Actions."""
    server = env.get("GITHUB_SERVER_URL", "").rstrip("/")
    repo = env.get("GITHUB_REPOSITORY", "")
    if not server or not repo:
        return Links()
    run_id = env.get("GITHUB_RUN_ID")
    attempt = env.get("GITHUB_RUN_ATTEMPT")
    run = f"{server}/{repo}/actions/runs/{run_id}" if run_id else None
    if run and attempt:
        run += f"/attempts/{attempt}"
    return Links(f"{server}/{repo}", run)


def _url(text: str | None, option: str) -> str | None:
    if not text:
        return None
    if not text.startswith(("https://", "http://")):
        raise InputError(f"{option} {text!r} is not an http(s) URL")
    return text.rstrip("/")


def _links(args: argparse.Namespace, paths: Sequence[Path]) -> dict[Path, Links]:
    """--repo-url / --run-url, else GitHub Actions' variables (the run URL only for one file: an
    import of many files was not measured by this run)."""
    from_env = github_links(os.environ)
    repo = _url(args.repo_url, "--repo-url") or from_env.repo_url
    run = _url(args.run_url, "--run-url") or (from_env.run_url if len(paths) == 1 else None)
    return {p: Links(repo, run) for p in paths}


def _add(paths: Sequence[Path], args: argparse.Namespace) -> int:
    runs = _loaded(paths, args)
    links = _links(args, [r.path for r, _ in runs])
    with open_store(args.store, write=True, lock_timeout=args.lock_timeout) as store:
        result = store.add(runs, skip_existing=args.skip_existing, links=links)
        total_runs, _ = store.count()
    judged = {str(r.path): bool(j) for r, j in runs}
    many = len(result.added) > 10  # a backfill: one line, not one per run
    for stored in [] if many else result.added:
        how = "with verdicts" if judged.get(stored.source or "") else "no verdicts"
        print(f"added run {stored.run_id}: {stored.identity}, from {stored.source} ({how})")
    if many:
        ids = [s.run_id for s in result.added]
        with_verdicts = sum(judged.get(s.source or "", False) for s in result.added)
        print(f"added runs {ids[0]}..{ids[-1]} ({with_verdicts} with verdicts)")
    for identity in result.skipped:
        print(f"skipped (already stored): {identity}")
    print(f"{args.store}: {len(result.added)} run(s) added, {total_runs} in the store")
    return EXIT_OK


def _cmd_add(args: argparse.Namespace) -> int:
    return _add([Path(p) for p in args.results], args)


def _is_results(path: Path) -> bool:
    """Whether a JSON file is a tilegate results file (then it must load, or exit 2); one that is
    not valid JSON is an error, not a skip: it may be a results file cut short."""
    data: Any = read_json(path, "file under the import directory", allow_nan=True)
    mi = data.get("machine_info") if isinstance(data, dict) else None
    return (
        isinstance(data, dict)
        and isinstance(data.get("benchmarks"), list)
        and isinstance(mi, dict)
        and isinstance(mi.get("tilegate"), dict)
    )


def _cmd_import(args: argparse.Namespace) -> int:
    root = Path(args.directory)
    if not root.is_dir():
        raise InputError(f"import: {root} is not a directory")
    files = sorted(root.rglob("*.json"))
    found = [f for f in files if _is_results(f)]
    for other in sorted(set(files) - set(found)):
        print(f"not a tilegate results file, skipped: {other}")
    if not found:
        raise InputError(f"import: no tilegate results file under {root}")
    return _add(found, args)


def _cmd_list(args: argparse.Namespace) -> int:
    with open_store(args.store, lock_timeout=args.lock_timeout) as store:
        runs = store.runs(args.gpu)
        table = store.case_table(args.gpu)
    verdicts: dict[int, Counter[str]] = {}
    cases: Counter[int] = Counter()
    for rid, verdict in zip(table["run_id"], table["verdict"], strict=True):
        cases[int(rid)] += 1
        if verdict is not None:
            verdicts.setdefault(int(rid), Counter())[str(verdict)] += 1
    shown = runs[-args.last :] if args.last else runs
    print(
        "| run | GPU | commit | measured | profile | Triton | torch | driver | CUDA | cases | verdicts |"
    )
    print("|--:|---|---|---|---|---|---|---|---|--:|---|")
    for r in shown:
        v = verdicts.get(r.run_id)
        text = ", ".join(f"{k} {n}" for k, n in sorted(v.items())) if v else "-"
        print(
            f"| {r.run_id} | {r.gpu} | `{short_sha(r.commit)}`{' (dirty)' if r.dirty else ''} | {r.datetime} | "
            f"{r.profile} | {r.triton} | {r.torch} | {r.driver} | {r.cuda} | {cases[r.run_id]} | {text} |"
        )
    print(f"\n{len(shown)} of {len(runs)} run(s) in {args.store}")
    return EXIT_OK


def _method(args: argparse.Namespace) -> cpmod.Method:
    return cpmod.Method(alpha=args.alpha, min_size=args.min_size, min_effect=args.min_effect)


def _cmd_changepoints(args: argparse.Namespace) -> int:

    method = _method(args)
    with open_store(args.store, lock_timeout=args.lock_timeout) as store:
        if store.count()[0] == 0:
            print(
                f"Change points: none: the store {args.store} holds no runs yet "
                f"(`tilegate history add RESULTS --store {args.store}` adds one)"
            )
            return EXIT_OK
        if args.new or args.new_since is not None:
            since = args.new_since if args.new_since is not None else _previous_run(store)
            if since is None:
                print(cpmod.markdown([], "New change points: none (the store holds one run)"))
                return EXIT_OK
            points = cpmod.new_since(store, since, method)
            title = f"New change points (with the runs after run {since})"
        else:
            points = cpmod.change_points(store, args.gpu, method)
            title = "Change points" + (f" on {args.gpu}" if args.gpu else "")
    print(cpmod.markdown(points, title), end="")
    return EXIT_OK


def _previous_run(store: Any) -> int | None:
    """The run before the most recently added one, on that run's GPU."""
    runs = store.runs()
    if not runs:
        return None
    latest = max(runs, key=lambda r: (r.added_at, r.run_id))
    same = [r for r in store.runs(latest.gpu) if r.run_id != latest.run_id]
    earlier = [r for r in same if (r.measured_at, r.run_id) < (latest.measured_at, latest.run_id)]
    return earlier[-1].run_id if earlier else None


def _culprits(paths: Sequence[str] | None) -> Culprits:
    """The findings of `tilegate bisect` results (--bisect; default: .perf/bisect/bisect.json where
    there is a finished one) by range; InputError naming a given file that is not one."""
    found: Culprits = {}
    default = PERF_DIR / "bisect" / "bisect.json"
    given = paths if paths is not None else [str(default)] if default.is_file() else []
    for path in given:
        data = read_json(Path(path), "bisect result (--bisect)")
        ok = isinstance(data, dict) and data.get("schema") == SCHEMA
        if not (ok and isinstance(data.get("outcome"), dict)):
            if paths is None and ok:  # the default, still running or interrupted: no culprit yet
                continue
            raise InputError(f"--bisect {path}: not a finished `tilegate bisect`'s bisect.json "
                             "(run the bisect to its end, or drop the option)")  # fmt: skip
        if data["outcome"]["result"] in ("found", "several"):
            found[(data["good"], data["bad"])] = (frozenset(data["cases"]), headline(data))
    return found


def _cmd_dashboard(args: argparse.Namespace) -> int:

    out = Path(args.out)
    try:
        with open_store(args.store, lock_timeout=args.lock_timeout) as store:
            info = write_dashboard(
                store,
                out,
                method=_method(args),
                baselines=Path(args.baselines) if args.baselines else None,
                repo_url=_url(args.repo_url, "--repo-url") or github_links(os.environ).repo_url,
                culprits=_culprits(args.bisect),
            )
    except BaseException:
        # A page left from an earlier run would look like this run's: remove it.
        out.unlink(missing_ok=True)
        print(f"tilegate history: no page written ({out} removed if it was there)", file=sys.stderr)
        raise
    print(
        f"page: {out} ({info.size_bytes / 1e6:.2f} MB; {info.runs} runs, {info.cases} cases, "
        f"{info.change_points} change points, {len(info.gpus)} GPU(s)); open it in a browser, no server needed"
    )
    return EXIT_OK


def _cmd_prune(args: argparse.Namespace) -> int:
    with open_store(args.store, write=True, lock_timeout=args.lock_timeout) as store:
        gone = store.prune(args.keep)
        left, _ = store.count()
    print(f"{args.store}: pruned {gone} run(s), kept the latest {args.keep} per GPU ({left} left)")
    return EXIT_OK


def _path(
    p: argparse.ArgumentParser, flag: str, default: str, what: str, var: str = "PATH"
) -> None:
    p.add_argument(flag, default=default, metavar=var, help=f"{what} (default: %(default)s)")


def _common(p: argparse.ArgumentParser) -> None:
    _path(p, "--store", str(DEFAULT_STORE), "the DuckDB history file")
    p.add_argument(
        "--lock-timeout",
        type=float,
        default=LOCK_S,
        metavar="S",
        help="wait this long for another process using the store (default: %(default)s s)",
    )


def _adding(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument(
        "--baseline", metavar="FILE", help="judge every run against this baseline (verdicts)"
    )
    p.add_argument(
        "--baselines",
        metavar="DIR",
        help="judge each run against DIR/<gpu-slug>.json where it exists (e.g. baselines)",
    )
    p.add_argument(
        "--verdicts",
        metavar="FILE",
        help='the verdicts of one results file, JSON {"<case id>": "<verdict>"}',
    )
    p.add_argument(
        "--skip-existing",
        action="store_true",
        help="skip runs already stored instead of refusing them (a run is GPU + commit + datetime + profile)",
    )
    _urls(p, "--repo-url", "--run-url")


_URLS = {  # what it links, and its default in GitHub Actions (github_links)
    "--repo-url": (
        "the repository's web URL, for commit links",
        "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY",
    ),
    "--run-url": ("the CI run that measured it", "this run, for one file"),
}


def _urls(p: argparse.ArgumentParser, *flags: str) -> None:
    for flag in flags:
        what, actions = _URLS[flag]
        p.add_argument(flag, metavar="URL", help=f"{what} (default in GitHub Actions: {actions})")


def _method_args(p: argparse.ArgumentParser) -> None:
    d = cpmod.Method()
    p.add_argument(
        "--alpha",
        type=float,
        default=d.alpha,
        help="significance level, scan-adjusted (default: %(default)s)",
    )
    p.add_argument(
        "--min-size",
        type=int,
        default=d.min_size,
        help="runs on each side of a change, at least (default: %(default)s)",
    )
    p.add_argument(
        "--min-effect",
        type=float,
        default=d.min_effect,
        help="smallest relative change reported (default: %(default)s)",
    )


def subcommands(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="history_command", required=True, metavar="COMMAND")

    p = sub.add_parser("add", help="append results files to the store (one transaction)")
    p.add_argument(
        "results", nargs="+", help="results JSON files (pytest-benchmark, tilegate's keys)"
    )
    _adding(p)
    p.set_defaults(func=_cmd_add)

    p = sub.add_parser("import", help="append every tilegate results JSON under a directory")
    p.add_argument("directory", help="searched recursively for *.json")
    _adding(p)
    p.set_defaults(func=_cmd_import)

    p = sub.add_parser("list", help="the stored runs, as a markdown table")
    _common(p)
    p.add_argument("--gpu", help="only this GPU slug")
    p.add_argument("--last", type=int, default=0, metavar="N", help="only the latest N runs")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("changepoints", help="change points per case, as markdown")
    _common(p)
    _method_args(p)
    p.add_argument("--gpu", help="only this GPU slug")
    p.add_argument(
        "--new-since",
        type=int,
        metavar="RUN",
        help="only the change points that the runs after run RUN brought",
    )
    p.add_argument(
        "--new",
        action="store_true",
        help="only the change points the most recently added run brought (the push job's summary)",
    )
    p.set_defaults(func=_cmd_changepoints)

    p = sub.add_parser("dashboard", help="write the self-contained HTML page")
    _common(p)
    _method_args(p)
    _path(p, "--out", str(DEFAULT_DASHBOARD), "the page to write")
    bands = "tolerance bands for runs stored without verdicts come from DIR/<gpu-slug>.json"
    _path(p, "--baselines", "baselines", bands, "DIR")
    _urls(p, "--repo-url")
    p.add_argument("--bisect", action="append", metavar="PATH", help="a `tilegate bisect`'s "
                   "bisect.json: its culprit beside its change point (default: .perf/bisect/'s)")  # fmt: skip
    p.set_defaults(func=_cmd_dashboard)

    p = sub.add_parser("prune", help="keep only the latest N runs of each GPU")
    _common(p)
    p.add_argument("--keep", type=int, required=True, metavar="N", help="runs to keep per GPU")
    p.set_defaults(func=_cmd_prune)
