"""A Triton upgrade judged on the GPU: the suite under two environments in alternating processes.

`tilegate upgrade-ab --new DIR` (`nox -s upgrade_ab -- --new DIR`) runs the perf suite under the
runner's environment ("old") and under the same one with DIR first on PYTHONPATH ("new": a newer
Triton unpacked there, as a runner image upgrade would bring), alternating old, new, old, new,
... for `--repeats` processes each. Two Tritons cannot live in one process, so unlike an A/B run
the sides are not paired round by round; instead each case is judged on its ratio to cuBLAS
measured in its own process, which cancels what moves a whole process (clocks, power, the
machine), while torch, hence cuBLAS, is the same on both sides:

* per case: the ratio r = case / reference (`Run.ratio`) in each process of each side; the
  effect = median(new) / median(old) - 1; the noise = the largest within-side spread of r
  ((max - min) / median); tolerance = clamp(3 x noise, 1 %, 5 %); a Welch t-test on log r;
* SLOWER / FASTER: beyond the tolerance and p < 0.05; SAME: within it; AMBIGUOUS otherwise;
* per kernel (variant): its cases' verdicts, SLOWER first. Exit 1 when a kernel got slower
  (the one exit rule, tilegate.judge.outcome; the words: tilegate.judge.vocabulary).
  Where the grid has an axis naming the op (`kernel` or `op`: a benchmark of several ops, such
  as examples/liger), a kernel is the variant at one value of it (``liger-rms_norm-bwd``).

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
import math
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as _sp

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_text
from tilegate.judge import stats
from tilegate.judge.outcome import headline, upgrade_outcome
from tilegate.judge.policy import TolerancePolicy
from tilegate.judge.results import Run
from tilegate.judge.vocabulary import Change
from tilegate.report.markdown import pct, table

# noise = the spread of each side's per-process ratios; alpha: the Welch t-test's level
UPGRADE = TolerancePolicy(multiple=3.0, floor=0.01, ceiling=0.05, alpha=0.05)
# grid axes that name the op a variant runs: its verdict is given per value of them
KERNEL_AXES = ("kernel", "op")


@dataclass(frozen=True)
class UpgradeCase:
    key: str
    variant: str
    change: Change
    old: tuple[float, ...]  # ratio to the reference in each old process
    new: tuple[float, ...]
    effect: float
    tolerance: float
    p: float
    kernel: str = ""  # the variant, at its value of KERNEL_AXES if the grid has one
    group: str = ""

    @property
    def fails(self) -> bool:
        return self.change is Change.SLOWER

    @property
    def kernel_name(self) -> str:
        return self.kernel or self.variant

    @property
    def where(self) -> str:
        """The case within its kernel: its group less the kernel's part ("bf16-T8192-H4096")."""
        op = self.kernel_name[len(self.variant) + 1 :]
        if op and self.group.startswith(f"{op}-"):
            return self.group[len(op) + 1 :]
        return self.group or self.key


@dataclass(frozen=True)
class UpgradeComparison:
    old_runs: tuple[Run, ...]
    new_runs: tuple[Run, ...]
    cases: tuple[UpgradeCase, ...]
    notes: tuple[str, ...] = ()

    @property
    def smoke(self) -> bool:
        return all(r.env.smoke for r in (*self.old_runs, *self.new_runs))

    @property
    def exit_code(self) -> int:
        """The one exit rule's (tilegate.judge.outcome.upgrade_outcome)."""
        return upgrade_outcome(self).code

    def kernels(self) -> dict[str, Change]:
        """Each kernel's verdict (the variant, per op where the grid names one): the worst of its
        cases (SLOWER, then AMBIGUOUS, FASTER)."""
        rank = [Change.SLOWER, Change.AMBIGUOUS, Change.FASTER, Change.SAME]
        out: dict[str, Change] = {}
        for c in self.cases:
            now = out.get(c.kernel_name, Change.SAME)
            out[c.kernel_name] = min(now, c.change, key=rank.index)
        return out


def _triton(runs: Sequence[Run]) -> str:
    versions = sorted({r.env.software.get("triton", "?") for r in runs})
    return "/".join(versions)


def _version(runs: Sequence[Run], name: str) -> str:
    return "/".join(sorted({r.env.software.get(name, "absent") for r in runs}))


def _display(name: str) -> str:
    return "Triton" if name == "triton" else name


def changed(old_runs: Sequence[Run], new_runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(package, old version, new version) for every package whose version differs between the
    sides (python aside), Triton first."""
    names = {k for r in (*old_runs, *new_runs) for k in r.env.software} - {"python"}
    out = []
    for name in sorted(names, key=lambda n: (n != "triton", n)):
        old, new = _version(old_runs, name), _version(new_runs, name)
        if old != new:
            out.append((name, old, new))
    return out


def _what(cmp: UpgradeComparison) -> tuple[str, str, str]:
    """(the upgrade, the old side, the new side) in words: "Triton 3.6.0 -> 3.9.0",
    "liger_kernel 0.8.4 -> 0.8.5, ...": what changed; Triton's versions when nothing did."""
    moved = changed(cmp.old_runs, cmp.new_runs)
    if not moved:
        moved = [("triton", _triton(cmp.old_runs), _triton(cmp.new_runs))]
    return (
        ", ".join(f"{_display(n)} {o} -> {v}" for n, o, v in moved),
        ", ".join(f"{_display(n)} {o}" for n, o, _ in moved),
        ", ".join(f"{_display(n)} {v}" for n, _, v in moved),
    )


def _kernel(variant: str, params: Mapping[str, object]) -> str:
    return "-".join([variant, *(str(params[a]) for a in KERNEL_AXES if a in params)])


def judge_upgrade(old_runs: Sequence[Run], new_runs: Sequence[Run]) -> UpgradeComparison:
    """Each case's ratio to the reference, old processes against new ones."""
    if len(old_runs) < 2 or len(new_runs) < 2:
        raise InputError("an upgrade A/B needs at least 2 processes on each side (3 recommended)")
    slugs = {r.env.gpu.slug for r in (*old_runs, *new_runs)}
    if len(slugs) != 1:
        raise InputError(f"the upgrade A/B's runs are of different GPU models: {sorted(slugs)}")
    notes = []
    if all(r.env.smoke for r in (*old_runs, *new_runs)):
        notes.append(
            "SMOKE runs (CPU interpreter): the timings mean nothing; the verdicts below prove "
            "the pipeline and never fail it (exit 0)"
        )
    moved = changed(old_runs, new_runs)
    if not moved:
        notes.append(
            f"both sides run the same software (Triton {_triton(old_runs)}, nothing else "
            "recorded differs): this is an A/A of environments"
        )
    torches = {r.env.software.get("torch") for r in (*old_runs, *new_runs)}
    if len(torches) > 1:
        notes.append(
            f"torch differs between the sides ({', '.join(sorted(map(str, torches)))}): the "
            "reference may have moved too, so the ratios mix both changes"
        )
    keys = [k for k, row in old_runs[0].rows.items() if not row.reference]
    cases = []
    for key in keys:
        row = old_runs[0].rows[key]

        def ratios(runs: Sequence[Run], key: str = key) -> list[float]:
            out = []
            for run in runs:
                r = run.rows.get(key)
                ref = run.reference
                ratio = run.ratio(r.variant, ref, r.group) if r and ref else None
                if ratio is not None:
                    out.append(ratio)
            return out

        old, new = ratios(old_runs), ratios(new_runs)
        if len(old) < 2 or len(new) < 2:
            continue  # measured on one side only: listed by the report as not compared
        effect = stats.median(new) / stats.median(old) - 1
        noise = max((max(x) - min(x)) / stats.median(x) for x in (old, new))
        tol = UPGRADE.tolerance(noise).value
        t = _sp.ttest_ind(np.log(new), np.log(old), equal_var=False)
        p = 1.0 if math.isnan(t.pvalue) else float(t.pvalue)
        if abs(effect) > tol and p < UPGRADE.alpha:
            change = Change.SLOWER if effect > 0 else Change.FASTER
        elif abs(effect) <= tol:
            change = Change.SAME
        else:
            change = Change.AMBIGUOUS
        cases.append(
            UpgradeCase(
                key, row.variant, change, tuple(old), tuple(new), effect, tol, p,
                kernel=_kernel(row.variant, row.params), group=row.group,
            )
        )  # fmt: skip
    return UpgradeComparison(tuple(old_runs), tuple(new_runs), tuple(cases), tuple(notes))


def render(cmp: UpgradeComparison, fingerprint: str | None = None) -> str:
    """The upgrade A/B as markdown: per kernel first, then per case."""
    what, old_t, new_t = _what(cmp)
    ref = cmp.old_runs[0].reference or "the reference"
    kernels = cmp.kernels()
    slower = [v for v, c in kernels.items() if c is Change.SLOWER]
    head = headline(cmp.exit_code).value
    out = [
        f"# tilegate upgrade A/B: {head}: {what}"
        + (f": {', '.join(slower)} slower" if slower else ""),
        "",
        f"{len(cmp.old_runs)} processes under {old_t} and {len(cmp.new_runs)} under "
        f"{new_t}, alternating, on {cmp.old_runs[0].env.gpu.name}; each case judged on its "
        f"ratio to `{ref}` in its own process (tolerance = clamp({UPGRADE.multiple:g} x the within-side "
        f"spread, {UPGRADE.floor:.0%}, {UPGRADE.ceiling:.0%}), Welch t-test p < {UPGRADE.alpha:g}).",
        "",
        *(f"- {n}" for n in cmp.notes),
        "",
        "## Per kernel",
        "",
        *table(
            ["kernel", "verdict", "cases"],
            "lll",
            [
                (
                    f"`{v}`",
                    change.value,
                    ", ".join(
                        f"{c.where} {c.change.value.lower()} {pct(c.effect)}"
                        for c in cmp.cases
                        if c.kernel_name == v
                    ),
                )
                for v, change in kernels.items()
            ],
        ),
        "",
        f"## Per case (ratio to `{ref}` in each process)",
        "",
        *table(
            ["case", old_t, new_t, "change", "tolerance", "p", "verdict"],
            "lllrrrl",
            [
                (
                    f"`{c.key}`",
                    ", ".join(f"{r:.4f}" for r in c.old),
                    ", ".join(f"{r:.4f}" for r in c.new),
                    pct(c.effect),
                    f"{c.tolerance:.1%}",
                    f"{c.p:.2g}",
                    c.change.value,
                )
                for c in cmp.cases
            ],
        ),
        "",
    ]
    if fingerprint:
        out += [
            "## What the upgrade changes in the compiled code (fingerprint)",
            "",
            fingerprint,
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


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
    cmd = [sys.executable, "-m", "tilegate.fingerprint", "--upgrade-from", old_triton, "--quiet"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    report = root / ".perf" / "upgrade.md"
    if not report.is_file():
        return f"(the fingerprint's upgrade report did not run: exit {proc.returncode}; {proc.stderr.strip()[-300:]})"
    out.write_text(report.read_text())
    return f"{proc.stdout.strip()} (exit {proc.returncode}): the whole report is `{out}`."
