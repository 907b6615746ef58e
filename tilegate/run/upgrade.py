"""A Triton upgrade judged on the GPU: the suite under two environments in alternating processes.

`tilegate upgrade-ab --new DIR` (`nox -s upgrade_ab -- --new DIR` in this repository) runs the
perf suite under the runner's environment ("old") and under the same one with DIR first on
PYTHONPATH ("new": a newer Triton unpacked there, as a runner image upgrade would bring),
alternating old, new, old, new, ... for `--repeats` processes each. Each case is judged on its
ratio to the benchmark's reference in its own process (tilegate.judge.upgrade: the method, the
verdicts and the exit rule).

The same works for any library the benchmark's variants import, not only Triton: DIR holds
its package (`pip install --no-deps --target DIR liger-kernel==0.8.5`), `--old DIR` the
release to compare with (default: the runner's own). Each side's results file gets the versions
of the distributions its DIR holds (their `*.dist-info`; for the runner's own side, the same
distributions' versions there) added to its software, and the report names what changed
(``liger_kernel 0.8.4 -> 0.8.5``). Smoke runs (CPU interpreter) go through the same steps but
never fail: their timings mean nothing.

Beside it, for a Triton upgrade (DIR holds triton/), the compile fingerprint's upgrade report
under the new Triton (what changed in the compiled code, `tilegate/fingerprint`), when the old
Triton's fingerprints are recorded.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tilegate.errors import InputError
from tilegate.explain.diff import EXPLAINED, Explanation, explain_runs, write
from tilegate.fileio import atomic_write_text
from tilegate.judge.upgrade import UpgradeComparison


def explain(cmp: UpgradeComparison, old: Path, new: Path) -> list[Explanation]:
    """Every decided case whose compiled code changed, explained between the first process of
    each side (tilegate.explain.diff); their sidecar and TTGIR diffs are written beside `new`."""
    cases = [
        (c.key, c.change.name) for c in cmp.cases if c.code_changed and c.change.name in EXPLAINED
    ]
    explanations = explain_runs(old, new, cases)
    write(explanations, new)
    return explanations


Suite = Callable[..., int]


def measure_sides(
    new_path: Path,
    old_path: Path | None,
    repeats: int,
    profile: str,
    pytest_args: Sequence[str],
    out_dir: Path,
    *,
    suite: Suite,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> tuple[list[Path], list[Path]]:
    """Run the suite old, new, old, new, ...: `repeats` processes a side."""
    if repeats < 2:
        raise InputError(f"--repeats must be at least 2 (3 recommended), got {repeats}")
    for what, path in (("--new", new_path), ("--old", old_path)):
        if path is not None and not (path / "triton").is_dir() and not _packages(path):
            raise InputError(
                f"{what} {path} holds no triton/ package and no other Python package: unpack "
                "the Triton to try there (README, 'Trying a new Triton on a runner'), or "
                "install the library's release there (pip install --no-deps --target DIR ...)"
            )
    names = sorted({n for p in (new_path, old_path) if p is not None for n in dist_versions(p)})
    stamps = {
        "old": side_versions(old_path, names),
        "new": side_versions(new_path, names),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    old: list[Path] = []
    new: list[Path] = []
    for i in range(1, repeats + 1):
        for side, prefix, runs in (("old", old_path, old), ("new", new_path, new)):
            out = out_dir / f"{side}-{i}.json"
            out.unlink(missing_ok=True)
            log(f"upgrade-ab: {side} {i}/{repeats}" + (f" (PYTHONPATH {prefix})" if prefix else ""))
            code = suite(out, profile, list(pytest_args), pythonpath=prefix)
            if code != 0 or not out.exists():
                raise InputError(f"the {side} side's run {i} failed (pytest exit {code})")
            stamp_software(out, stamps[side])
            runs.append(out)
    return old, new


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


def stamp_software(results: Path, versions: Mapping[str, str]) -> None:
    """Add `versions` to the results file's software where the suite did not record them itself
    (it records torch, Triton and Python; its own record is never overwritten)."""
    if not versions:
        return
    data = json.loads(results.read_text())
    software = (
        data.setdefault("machine_info", {}).setdefault("tilegate", {}).setdefault("software", {})
    )
    for name, version in versions.items():
        software.setdefault(name, version)
    atomic_write_text(results, json.dumps(data, indent=2) + "\n")


def fingerprint_diff(new_path: Path, old_triton: str, out: Path) -> str | None:
    """The fingerprint's upgrade report under the new Triton against `old_triton`'s recording;
    None when `new_path` holds no Triton (a library upgrade: the compiled-code fingerprint is
    this repository's matmul kernels')."""
    from tilegate.run.perf import HOME, repo_root

    if not (new_path / "triton").is_dir():
        return None

    root = repo_root()

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(new_path), str(HOME), env.get("PYTHONPATH")])
    )
    cmd = [sys.executable, "-m", "tilegate.run.fingerprint", "--upgrade-from", old_triton]
    proc = subprocess.run(
        [*cmd, "--quiet"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    report = root / ".perf" / "upgrade.md"
    if not report.is_file():
        return f"(the fingerprint's upgrade report did not run: exit {proc.returncode}; {proc.stderr.strip()[-300:]})"
    out.write_text(report.read_text())
    return f"{proc.stdout.strip()} (exit {proc.returncode}): the whole report is `{out}`."
