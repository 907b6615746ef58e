"""The perf loop: measure -> judge -> re-measure the suspects -> judge again, and its rebaseline twin.

`nox -s perf` is `tilegate perf`, `nox -s rebaseline` is `tilegate rebaseline --measure N`: the
orchestration lives here, tested (tests/test_perf_loop.py). The suite runs as a pytest subprocess on
this interpreter (a GPU runner's CUDA torch and Triton), its results written atomically (a crashed
run leaves none). The re-measurement times what tilegate.judge.confirm says (A/B: the suspects and
their base partners, `--perf-cases-of`; stored baseline: their groups, `--perf-groups-of`),
without the soak while the GPU is still warm (--warm-within).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError
from tilegate.fileio import atomic_write_text
from tilegate.judge.baseline import baseline_path
from tilegate.judge.gate import VERDICTS
from tilegate.report.cannot_judge import cannot_judge_report
from tilegate.run.crash import INTERRUPTED, crash_reason, save_traceback
from tilegate.run.gate import Gated, gate
from tilegate.run.profiles import check_profile, interpreter

HOME = Path(__file__).resolve().parents[2]  # the directory holding the tilegate package


def repo_root() -> Path:
    """The user's repository: the nearest pyproject.toml with [tool.tilegate] (InputError if none)."""
    from tilegate.config import find

    return find().root


def _plugin_args() -> list[str]:
    """Load tilegate.plugin unless pytest finds it itself (an installed tilegate's entry point)."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "tilegate.plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "tilegate.plugin"]


# pytest's exit codes that still leave results worth judging: all passed, nothing collected
_SUITE_OK = (0, 5)
VERDICT_TEXT = {0: "everything holds", 1: "REGRESSION or broken expectation", 2: "cannot judge"}


def _suite(
    out: Path, profile: str, extra: Sequence[str], pythonpath: Path | None, gpu: int | None
) -> tuple[list[str], dict[str, str], Path]:
    """The pytest command line, environment and partial-results path of one suite process."""
    from tilegate.config import find

    # absolute: the suite runs at the repository's root, wherever `out` was named from
    partial = out.resolve().with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    first = [str(pythonpath)] if pythonpath else []
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*first, str(HOME), env.get("PYTHONPATH")]))
    if env.get("TRITON_INTERPRET") != "1" and interpreter(profile):  # set: no protocol loaded
        env["TRITON_INTERPRET"] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *_plugin_args(),
        "--tilegate",
        str(find().protocol_dir),  # the perf suite: [tool.tilegate] protocol
        f"--rootdir={repo_root()}",
        "-p",
        "no:cacheprovider",
        "-v",
        # a run whose every case failed must still end in pytest's report of why, not in
        # pytest-benchmark's "nothing to save" warning raised as an error by a repo's
        # `filterwarnings = error`
        "-W",
        "ignore::pytest_benchmark.logger.PytestBenchmarkWarning",
        f"--perf-profile={profile}",
        f"--benchmark-json={partial}",
        f"--benchmark-storage={partial.parent / 'benchmarks'}",  # not ./.benchmarks at the root
        "--benchmark-columns=min,median,iqr,max,rounds",
        "--benchmark-sort=name",
        "--benchmark-group-by=group",
        *extra,
    ]
    return cmd, env, partial


def run_suite(
    out: Path, profile: str, extra: Sequence[str] = (), *, pythonpath: Path | None = None
) -> int:
    """Run the perf suite into `out` (written only if the suite wrote it); pytest's exit code.
    `pythonpath` goes first on PYTHONPATH: a newer Triton unpacked there shadows the runner's."""
    cmd, env, partial = _suite(out, profile, extra, pythonpath, None)
    # the output goes to the terminal and to out's .log: a suite that writes no results is
    # named by its own last error lines (suite_failure), not by the file it did not write
    with (
        out.with_suffix(".log").open("w", encoding="utf-8", errors="replace") as log,
        subprocess.Popen(
            cmd,
            cwd=repo_root(),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as proc,
    ):
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                log.write(line)
        except BaseException:  # interrupted (SIGINT): the suite goes too, and its partial file
            proc.kill()
            proc.wait()
            partial.unlink(missing_ok=True)
            raise
        sys.stdout.flush()
        code = proc.wait()
    if partial.exists():
        partial.replace(out)
    return code


PYTEST_EXIT = {
    1: "a case failed",
    2: "interrupted",
    3: "pytest internal error",
    4: "usage error: the suite refused its options or its benchmark",
    5: "no case collected",
}
_ERROR_START = ("ERROR", "E ", "FAILED", "Traceback", "INTERNALERROR", "tilegate: cannot")


def suite_failure(code: int, results: Path, log: Path | None = None) -> str:
    """Why the suite left no results (or an empty file): pytest's exit code and the last error
    lines of its output (`log`, default results' .log), the first of them on the first line."""
    log = log or results.with_suffix(".log")
    state = "an empty results file (0 bytes)" if results.exists() else "no results"
    head = f"the suite wrote {state} (pytest exit {code}"
    head += f": {PYTEST_EXIT[code]})" if code in PYTEST_EXIT else ")"
    try:
        lines = [ln.rstrip() for ln in log.read_text(errors="replace").splitlines()[-200:]]
    except OSError:
        return head + "; its output was not saved: see the log above"
    lines = [ln for ln in lines if ln.strip()]
    errors = [ln for ln in lines if ln.lstrip().startswith(_ERROR_START) or "Error:" in ln]
    tail = (errors or lines)[-8:]
    if not tail:
        return head + f"; it printed nothing ({log})"
    return (
        f"{head}: {tail[-1].strip()}\n\nThe last error lines of its output ({log}):\n\n"
        + "\n".join(f"    {ln}" for ln in tail)
    )


def run_shards(out: Path, profile: str, extra: Sequence[str] = (), *, gpus: int) -> int:
    """The suite on `gpus` GPUs at once, one process each (CUDA_VISIBLE_DEVICES, --perf-shard),
    their results merged into `out` (tilegate.run.shard); the worst pytest exit code."""
    from tilegate.run.shard import merge, shard_files

    files = shard_files(out, gpus)
    started = []
    for i, part in enumerate(files):
        part.unlink(missing_ok=True)
        cmd, env, partial = _suite(part, profile, [*extra, f"--perf-shard={i}/{gpus}"], None, i)
        log_path = part.with_suffix(".log")
        with log_path.open("w") as log:
            started.append(
                (
                    subprocess.Popen(cmd, cwd=repo_root(), env=env, stdout=log, stderr=log),
                    partial,
                    part,
                )
            )
    codes = []
    for proc, partial, part in started:
        codes.append(proc.wait())
        if partial.exists():
            partial.replace(part)
    if all(f.exists() for f in files):
        merge(files, out)
    return max(codes)


def gpu_slug() -> str:
    """This machine's GPU slug; raises RuntimeError (or ImportError) when there is no GPU.
    NVML names it where it can (no torch import, no CUDA start here: the suite does both)."""
    from tilegate.harness.device import gpu_info, nvml_slug

    return nvml_slug() or gpu_info().slug


Suite = Callable[[Path, str, Sequence[str]], int]


@dataclass
class Perf:
    """One `tilegate perf` invocation: where it writes, what it measures, what judges it."""

    profile: str = "quick"
    baseline: Path | None = None
    baselines_dir: Path = Path("baselines")
    report_only: bool = False
    confirm_runs: int = 1
    # a confirmation that starts within this many seconds of the previous suite process's end
    # skips the soak: the GPU is still at its working temperature (docs/measuring.md)
    warm_within_s: float = 60.0
    pytest_args: Sequence[str] = ()
    ab: str | None = None  # A/B: the base ref whose kernels are measured beside the head's
    # A/B: the suite options that make the sides, where they are not REF's checkout against
    # this tree (tilegate upgrade-ab: this tree twice, each side with its own releases first)
    ab_sides: Sequence[str] = ()
    stored: bool = True  # also judge against the stored baseline (an upgrade: the A/B alone)
    # a pull request: baselines/ is REF's, the working tree's is diffed against it
    # (tilegate.judge.integrity); its loosenings fail unless accept_baseline_change
    baselines_from: str | None = None
    accept_baseline_change: bool = False
    integrity: Any = None
    gpus: int = 1  # measure on this many GPUs of the host at once (tilegate.run.shard)
    out_dir: Path = Path(".perf")
    plots: bool = True
    suite: Suite = run_suite
    detect_gpu: Callable[[], str] = gpu_slug
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr))
    clock: Callable[[], float] = time.monotonic

    @property
    def report_path(self) -> Path:
        return self.out_dir / "report.md"

    def _fail(self, reason: str) -> int:
        atomic_write_text(self.report_path, cannot_judge_report(reason))
        self.log(f"perf: cannot judge: {reason} (exit 2)")
        return EXIT_CANNOT_JUDGE

    def _slug(self) -> str | None:
        if interpreter(self.profile):
            from tilegate.judge.results import SMOKE_SLUG

            return SMOKE_SLUG
        try:
            return self.detect_gpu()
        except (RuntimeError, ImportError) as err:
            from tilegate.harness.device import NO_GPU_HINT

            self.log(f"tilegate: cannot measure: {err}.\n{NO_GPU_HINT}")
            return None

    def run(self) -> int:
        """Measure, judge, re-measure suspects up to `confirm_runs` times; the exit code. What
        goes wrong is exit 2 with a CANNOT JUDGE report: bad input its message, anything else its
        traceback saved beside the report (tilegate.run.crash)."""
        try:
            return self._run()
        except InputError as err:
            return self._fail(str(err))
        except KeyboardInterrupt:  # no results stand for this run, and no report of them
            (self.out_dir / "results.json").unlink(missing_ok=True)
            return self._fail(INTERRUPTED)
        except Exception as err:
            return self._fail(crash_reason("perf", err, save_traceback("perf", err, self.out_dir)))

    def _run(self) -> int:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        check_profile(self.profile)  # the API path too, not only the command line
        slug = self._slug()
        if slug is None:
            return self._fail("no GPU here")
        if self.baselines_from is not None:
            from tilegate.store.files import check_pull_request

            self.integrity = check_pull_request(
                self.baselines_from,
                self.baselines_dir,
                repo_root(),
                self.out_dir / "base-baselines",
                acknowledged=self.accept_baseline_change,
            )
            self.log(
                f"perf: baselines/ from {self.baselines_from} ({self.integrity.judge_dir}); "
                f"{len(self.integrity.changes)} change(s) by this pull request, "
                f"{len(self.integrity.failing)} failing"
            )
            self.baselines_dir = self.integrity.judge_dir
        baseline = self.baseline or baseline_path(slug, self.baselines_dir)
        args = list(self.pytest_args)
        if self.ab is not None:  # a REF that cannot be materialised: InputError, exit 2 (run)
            base = list(self.ab_sides) or ab_args(self.ab, self.out_dir)
            args += base
            self.log(f"perf: A/B against {self.ab}: {' '.join(base)}")
            if not any(a.startswith("--perf-ab-full") for a in args):
                args.append(
                    f"--perf-ab-tolerances={ab_tolerances(slug, self.baselines_dir, self.out_dir)}"
                )
        elif not baseline.exists() and not self.report_only:
            return self._fail(self._no_baseline(baseline, slug))
        self._check_inputs(baseline)
        results = self.out_dir / "results.json"
        # a report never outlives its results: an interrupted run leaves both or neither
        for stale in (results, self.report_path, self.out_dir / VERDICTS):
            stale.unlink(missing_ok=True)
        from tilegate.harness.sides import SIDE_FAILURE_FILE

        side_failure = self.out_dir / "sides" / SIDE_FAILURE_FILE
        side_failure.unlink(missing_ok=True)
        suite = self.suite
        if self.gpus > 1:
            self.log(f"perf: the suite's groups over {self.gpus} GPUs, one process each")
            suite = functools.partial(run_shards, gpus=self.gpus)
        suite_code = suite(results, self.profile, args)  # shards that cannot merge: InputError
        ended = self.clock()
        failed = self._suite_died(suite_code, results, side_failure)
        if failed:
            return self._fail(failed)
        suspects = self.out_dir / "suspects.txt"
        judged = self._judge(results, baseline, [], suspects)
        confirms: list[Path] = []
        for i in range(1, self.confirm_runs + 1):
            if self.report_only or not _confirmable(judged):
                break
            what = self._what_to_confirm(judged, suspects, i)
            if what is None:
                break
            confirm = self.out_dir / f"confirm-{i}.json"
            extra = [*args, what]
            idle = self.clock() - ended
            if idle < self.warm_within_s and not interpreter(self.profile):
                extra.append("--perf-soak=0")
                self.log(
                    f"perf: the GPU is still warm (the last suite process ended {idle:.0f} s "
                    f"ago, < --warm-within {self.warm_within_s:g} s): no soak"
                )
            confirm_code = suite(confirm, self.profile, extra)
            ended = self.clock()
            failed = self._suite_died(confirm_code, confirm, side_failure)
            if failed:  # a confirmation that dies is no acquittal: cannot judge, named
                return self._fail(f"confirmation {i} ({confirm.name}): {failed}")
            if confirm_code not in _SUITE_OK:
                suite_code = confirm_code
            confirms.append(confirm)
            judged = self._judge(results, baseline, confirms, suspects)
        if judged.text:  # one run, one report: the last judgement's
            print(judged.text, end="")
        code = judged.code
        if suite_code not in _SUITE_OK and code == EXIT_OK:
            code = EXIT_CANNOT_JUDGE  # a case failed its correctness check or crashed
            self.log(
                f"perf: the suite exited {suite_code} (a case failed or crashed): its timing "
                "cannot be judged"
            )
        what = "report-only run" if self.report_only else VERDICT_TEXT.get(code, "cannot judge")
        self.log(f"perf: {what} (exit {code}); report: {self.report_path}")
        return code

    @staticmethod
    def _suite_died(code: int, results: Path, side_failure: Path) -> str | None:
        """Why a suite process (the first run or a confirmation) left nothing to judge: a side's
        process failed, or no results (pytest-benchmark 5.2.3 leaves 0 bytes behind); None when
        its results are there. Whatever it left is removed."""
        if side_failure.exists():  # a side's process failed: the plugin left no results
            results.unlink(missing_ok=True)
            return side_failure.read_text(errors="replace").strip()
        if not results.exists() or results.stat().st_size == 0:
            reason = suite_failure(code, results)
            results.unlink(missing_ok=True)
            return reason
        return None

    def _no_baseline(self, baseline: Path, slug: str) -> str:
        """Why a run without --report-only cannot be judged here, and the commands that can."""
        profile = f" --profile {self.profile}" if self.profile != check_profile(None) else ""
        if interpreter(self.profile):
            return (
                f"no baseline {baseline}: profile '{self.profile}' runs under the CPU "
                "interpreter, whose timings mean nothing, so no baseline of it is kept. Run "
                f"`tilegate perf{profile} --report-only` (the report alone) or "
                f"`tilegate perf{profile} --ab HEAD~1` (against the commit before: no baseline "
                "needed)."
            )
        return (
            f"no baseline {baseline} for GPU '{slug}'. Record one on this GPU with "
            f"`tilegate rebaseline --measure 3{profile}` (and commit it through review), or run "
            f"`tilegate perf{profile} --report-only`."
        )

    def _check_inputs(self, baseline: Path) -> None:
        """The stored inputs read and validated before anything is measured (InputError naming
        the file): the baseline and the tolerances beside it."""
        from tilegate.store.files import Baselines, load_baseline

        if baseline.exists():
            load_baseline(baseline)
        Baselines(baseline.parent).tolerances()

    def _what_to_confirm(self, judged: Gated, suspects: Path, i: int) -> str | None:
        """The suite option naming what confirmation `i` measures (None: nothing). A/B: the
        suspects with their base partners, less those beyond doubt, plus the reference where a
        stored verdict needs it (tilegate.judge.confirm), in a file of pytest ids. Stored
        baseline: the suspects' whole groups (their ratios to the reference)."""
        if judged.ab is not None:
            from tilegate.judge.confirm import confirmation_cases

            plan = confirmation_cases(judged.ab, judged.comparison)
            if plan.settled:
                others = [k for k in judged.ab.suspects() if k not in plan.decided]
                self.log(
                    f"perf: {len(plan.decided)} case(s) SLOWER beyond doubt in the first run: "
                    "the run fails on them whatever a second run says, so nothing is measured "
                    f"again ({len(others)} other suspect(s) stand on the first run):\n"
                    + "\n".join(plan.decided)
                )
            if not plan.cases:
                return None
            path = self.out_dir / "confirm-cases.txt"
            atomic_write_text(path, plan.text())
            self.log(
                f"perf: measuring {len(plan.cases)} case(s) again before accusing them "
                f"(confirmation {i}, these cases only):\n" + "\n".join(plan.cases)
            )
            return f"--perf-cases-of={path}"
        ids = suspects.read_text().split() if suspects.exists() else []
        if not ids:
            return None
        self.log(
            f"perf: measuring suspect rows again before accusing them (confirmation {i}):\n"
            + "\n".join(ids)
        )
        return f"--perf-groups-of={suspects}"

    def _judge(self, results: Path, baseline: Path, confirms: list[Path], suspects: Path) -> Gated:
        judged = gate(
            results,
            baseline if baseline.exists() and self.stored else None,
            confirms,
            baselines_dir=self.baselines_dir,
            report_path=self.report_path,
            plots_dir=self.out_dir if self.plots else None,
            report_only=self.report_only,
            suspects_path=None if self.report_only else suspects,
            accept_baseline_change=self.accept_baseline_change,
            integrity=self.integrity,
        )
        if judged.error:
            self.log(f"tilegate: cannot judge: {judged.error}")
        elif judged.text:
            self.log(f"perf: the explanations of the changed cases took {judged.explain_s:.2f} s")
        for note in judged.notes:
            self.log(f"tilegate: {note}")
        if judged.headline:
            self.log(f"perf: {judged.headline}")
        return judged


def _confirmable(judged: Gated) -> bool:
    """Whether a re-measurement could change the verdict: not after bad input, a GPU off or the
    same code whose time moved (exit 2 for good), nor in a smoke run (its timings decide
    nothing); but an exit 2 that only UNSTABLE cases make is "measure more"
    (tilegate.judge.outcome), and the confirmation re-measures them."""
    if judged.judgement is None or judged.judgement.outcome.smoke:
        return False
    if judged.code != EXIT_CANNOT_JUDGE:
        return True
    if judged.error or judged.ab is None:
        return False
    result = judged.judgement.outcome
    off = judged.comparison is not None and bool(judged.comparison.off_gpus)
    return bool(result.unstable) and not result.inconsistent and not off


def ab_args(ref: str, out_dir: Path) -> list[str]:
    """The suite's options that time REF's kernels beside the head's (InputError naming REF)."""
    from tilegate.config import find
    from tilegate.harness.base import materialise

    config = find()
    base = materialise(
        ref,
        config.root,
        out_dir / "ab",
        source=config.source,
        protocol=config.protocol,
        registry=config.registry,
        build=config.build,
    )
    return [
        f"--perf-ab-base={base.path}",
        f"--perf-ab-ref={ref}",
        f"--perf-ab-sha={base.sha}",
        f"--perf-side-logs={(out_dir / 'sides').resolve()}",
    ]


def ab_tolerances(slug: str, baselines_dir: Path, out_dir: Path) -> Path:
    """The A/B noise file's per-case tolerances as the suite's stopping rule reads them
    (tilegate.harness.budget): the same tolerances the verdict will apply."""
    from tilegate.harness.budget import save_tolerances, tolerances_from_noise
    from tilegate.store.files import Baselines

    out = out_dir / "ab-tolerances.json"
    save_tolerances(tolerances_from_noise(Baselines(baselines_dir).load_noise(slug)), out)
    return out


def measure_runs(
    repeats: int,
    profile: str,
    pytest_args: Sequence[str],
    out_dir: Path,
    *,
    name: str = "rebaseline",
    suite: Suite = run_suite,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> tuple[list[Path], str | None]:
    """Run the suite `repeats` times into out_dir/name/; (the results files, or why it stopped)."""
    runs_dir = out_dir / name
    runs_dir.mkdir(parents=True, exist_ok=True)
    for old in runs_dir.glob("run-*.json"):
        old.unlink()
    runs: list[Path] = []
    for i in range(1, repeats + 1):
        log(f"{name}: run {i}/{repeats} ({profile})")
        out = runs_dir / f"run-{i}.json"
        code = suite(out, profile, list(pytest_args))
        if code != 0 or not out.exists():
            return runs, f"run {i} failed (pytest exit {code}); nothing written"
        runs.append(out)
    return runs, None
