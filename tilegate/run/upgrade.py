"""A Triton or library upgrade judged on the GPU: one tree, two environments, paired rounds.

`tilegate upgrade-ab --new DIR [--old DIR]` (`nox -s upgrade_ab -- --new DIR` here) is an A/B of
this tree against itself on the engine of every A/B (tilegate.run.loop: its statistics, A/A
tolerances, confirmation, explanations): the head side's process has DIR first on its sys.path (a
newer Triton unpacked there, as a runner image upgrade brings, or a library's release: `pip
install --no-deps --target DIR liger-kernel==0.8.5`), the base side's `--old DIR` (default: the
runner's environment). A case's compiled code includes the Triton that compiled it
(tilegate.harness.identity): every Triton kernel is "changed" under another Triton; under the same
Triton (a library upgrade) a kernel the release did not change cannot be blamed.

The report (`.perf/upgrade-ab/`) opens with what changed between the sides (``Triton 3.6.0 ->
3.9.0``, ``liger_kernel 0.8.4 -> 0.8.5``) and, for a Triton upgrade whose old fingerprints are
recorded, ends with the compile fingerprint's upgrade report (`tilegate/fingerprint`).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.fileio import atomic_write_text
from tilegate.report.upgrade import upgrade_section


def check_dir(what: str, path: Path | None) -> None:
    """InputError naming --new / --old when DIR holds nothing to import."""
    if path is not None and not (path / "triton").is_dir() and not _packages(path):
        raise InputError(
            f"{what} {path} holds no triton/ package and no other Python package: unpack "
            "the Triton to try there (docs/measuring.md, 'Trying a new Triton'), or "
            "install the library's release there (pip install --no-deps --target DIR ...)"
        )


def run_upgrade(
    new: Path,
    old: Path | None,
    profile: str | None,
    pytest_args: Sequence[str],
    out_dir: Path,
    *,
    fingerprint: bool = True,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> int:
    """Measure and judge the upgrade (module doc); its exit code (0, 1 or 2)."""
    from tilegate.run.loop import Perf
    from tilegate.run.profiles import check_profile

    report = out_dir / "report.md"
    try:
        profile = check_profile(profile)  # before any GPU work, as every command
        for what, path in (("--new", new), ("--old", old)):
            check_dir(what, path)
    except InputError as err:
        log(f"upgrade-ab: cannot judge: {err}")
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(report, f"# tilegate: CANNOT JUDGE (exit 2)\n\n{err}\n")
        return EXIT_CANNOT_JUDGE
    sides = [
        "--perf-ab-base=@head",
        "--perf-ab-ref=the old environment",
        "--perf-ab-sha=environment",  # no commit: one tree, two environments
        f"--perf-side-path=head={new.resolve()}",
        *([f"--perf-side-path=base={old.resolve()}"] if old is not None else []),
        f"--perf-side-logs={(out_dir / 'sides').resolve()}",
    ]
    perf = Perf(
        profile=profile,
        ab="the old environment",
        ab_sides=sides,
        stored=False,
        pytest_args=list(pytest_args),
        out_dir=out_dir,
        plots=False,
        log=log,
    )
    code = perf.run()
    results = out_dir / "results.json"
    if not results.is_file() or not report.is_file():
        return code
    names = sorted({n for p in (new, old) if p is not None for n in dist_versions(p)})
    versions = {"head": side_versions(new, names), "base": side_versions(old, names)}
    try:
        ab = json.loads(results.read_text())["machine_info"]["tilegate"]["ab"]
        for side, facts in (ab.get("sides") or {}).items():
            versions.setdefault(side, {}).update(facts.get("software") or {})
    except (OSError, ValueError, KeyError, TypeError):
        pass
    fp = None
    if fingerprint:
        old_triton = versions["base"].get("triton", "")
        fp = fingerprint_diff(new, old_triton, out_dir / "fingerprint.md")
    text = report.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    section = upgrade_section(versions["base"], versions["head"], new, old, fp)
    atomic_write_text(report, f"{first}\n\n{section}{rest}")
    log(f"upgrade-ab: report: {report}")
    return code


def _packages(path: Path) -> list[str]:
    """The importable packages directly in `path` (directories with an __init__.py)."""
    return (
        sorted(d.name for d in path.iterdir() if (d / "__init__.py").is_file())
        if path.is_dir()
        else []
    )


def dist_versions(path: Path) -> dict[str, str]:
    """{distribution: version} of the *.dist-info in `path` (what pip --target installed)."""
    out = {}
    for dist in importlib.metadata.distributions(path=[str(path)]):
        name = dist.metadata["Name"]
        if name:
            out[name.replace("-", "_").lower()] = dist.version
    return out


def side_versions(path: Path | None, names: Sequence[str]) -> dict[str, str]:
    """The versions of `names` one side imports: its DIR's where it holds them (first on
    PYTHONPATH), else this environment's ("absent" where there is none)."""
    here = dist_versions(path) if path is not None else {}
    out = {}
    for name in names:
        if name in here:
            out[name] = here[name]
            continue
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def fingerprint_diff(new_path: Path, old_triton: str, out: Path) -> str | None:
    """The fingerprint's upgrade report under the new Triton against `old_triton`'s recording;
    None when `new_path` holds no Triton (a library upgrade: it fingerprints our own kernels)."""
    from tilegate.run.loop import HOME, repo_root

    if not (new_path / "triton").is_dir():
        return None

    root = repo_root()

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(new_path), str(HOME), env.get("PYTHONPATH")])
    )
    cmd = [sys.executable, "-m", "tilegate", "fingerprint", "--upgrade-from", old_triton]
    proc = subprocess.run(
        [*cmd, "--quiet"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    report = root / ".perf" / "upgrade.md"
    if not report.is_file():
        return f"(the fingerprint's upgrade report did not run: exit {proc.returncode}; {proc.stderr.strip()[-300:]})"
    out.write_text(report.read_text())
    return f"{proc.stdout.strip()} (exit {proc.returncode}): the whole report is `{out}`."
