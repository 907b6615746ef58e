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
* per kernel (variant): its cases' verdicts, SLOWER first. Exit 1 when a kernel got slower.

Beside it, the compile fingerprint's upgrade report under the new Triton (what changed in the
compiled code, `tilegate/fingerprint`), when the old Triton's fingerprints are recorded.
"""

from __future__ import annotations

import enum
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as _sp

from tilegate.errors import EXIT_FAIL, EXIT_OK, InputError
from tilegate.judge import stats
from tilegate.judge.results import Run
from tilegate.report.markdown import pct, table

FLOOR, CEILING, MULTIPLE, ALPHA = 0.01, 0.05, 3.0, 0.05


class Change(str, enum.Enum):
    SLOWER = "SLOWER"
    FASTER = "FASTER"
    SAME = "SAME"
    AMBIGUOUS = "AMBIGUOUS"


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

    @property
    def fails(self) -> bool:
        return self.change is Change.SLOWER


@dataclass(frozen=True)
class UpgradeComparison:
    old_runs: tuple[Run, ...]
    new_runs: tuple[Run, ...]
    cases: tuple[UpgradeCase, ...]
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_FAIL if any(c.fails for c in self.cases) else EXIT_OK

    def kernels(self) -> dict[str, Change]:
        """Each variant's verdict: the worst of its cases (SLOWER, then AMBIGUOUS, FASTER)."""
        rank = [Change.SLOWER, Change.AMBIGUOUS, Change.FASTER, Change.SAME]
        out: dict[str, Change] = {}
        for c in self.cases:
            now = out.get(c.variant, Change.SAME)
            out[c.variant] = min(now, c.change, key=rank.index)
        return out


def _triton(runs: Sequence[Run]) -> str:
    versions = sorted({r.env.software.get("triton", "?") for r in runs})
    return "/".join(versions)


def judge_upgrade(old_runs: Sequence[Run], new_runs: Sequence[Run]) -> UpgradeComparison:
    """Each case's ratio to the reference, old processes against new ones."""
    if len(old_runs) < 2 or len(new_runs) < 2:
        raise InputError("an upgrade A/B needs at least 2 processes on each side (3 recommended)")
    slugs = {r.env.gpu.slug for r in (*old_runs, *new_runs)}
    if len(slugs) != 1:
        raise InputError(f"the upgrade A/B's runs are of different GPU models: {sorted(slugs)}")
    notes = []
    if _triton(old_runs) == _triton(new_runs):
        notes.append(f"both sides run Triton {_triton(old_runs)}: this is an A/A of environments")
    torches = {r.env.software.get("torch") for r in (*old_runs, *new_runs)}
    if len(torches) > 1:
        notes.append(
            f"torch differs between the sides ({', '.join(sorted(map(str, torches)))}): the "
            "reference (cuBLAS) may have moved too, so the ratios mix both changes"
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
        tol = stats.derive_tolerance(noise, multiple=MULTIPLE, floor=FLOOR, ceiling=CEILING).value
        t = _sp.ttest_ind(np.log(new), np.log(old), equal_var=False)
        p = 1.0 if math.isnan(t.pvalue) else float(t.pvalue)
        if abs(effect) > tol and p < ALPHA:
            change = Change.SLOWER if effect > 0 else Change.FASTER
        elif abs(effect) <= tol:
            change = Change.SAME
        else:
            change = Change.AMBIGUOUS
        cases.append(UpgradeCase(key, row.variant, change, tuple(old), tuple(new), effect, tol, p))
    return UpgradeComparison(tuple(old_runs), tuple(new_runs), tuple(cases), tuple(notes))


def render(cmp: UpgradeComparison, fingerprint: str | None = None) -> str:
    """The upgrade A/B as markdown: per kernel first, then per case."""
    old_t, new_t = _triton(cmp.old_runs), _triton(cmp.new_runs)
    kernels = cmp.kernels()
    slower = [v for v, c in kernels.items() if c is Change.SLOWER]
    head = "FAIL" if cmp.exit_code else "PASS"
    out = [
        f"# tilegate upgrade A/B: {head}: Triton {old_t} -> {new_t}"
        + (f": {', '.join(slower)} slower" if slower else ""),
        "",
        f"{len(cmp.old_runs)} processes under Triton {old_t} and {len(cmp.new_runs)} under "
        f"Triton {new_t}, alternating, on {cmp.old_runs[0].env.gpu.name}; each case judged on its "
        "ratio to cuBLAS in its own process (tolerance = clamp(3 x the within-side spread, "
        f"{FLOOR:.0%}, {CEILING:.0%}), Welch t-test p < {ALPHA:g}).",
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
                        f"K{c.key.rsplit('K', 1)[-1]} {c.change.value.lower()} {pct(c.effect)}"
                        for c in cmp.cases
                        if c.variant == v
                    ),
                )
                for v, change in kernels.items()
            ],
        ),
        "",
        "## Per case (ratio to cuBLAS in each process)",
        "",
        *table(
            ["case", f"Triton {old_t}", f"Triton {new_t}", "change", "tolerance", "p", "verdict"],
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
        if path is not None and not (path / "triton").is_dir():
            raise InputError(
                f"{what} {path} holds no triton/ package: unpack the Triton to try there "
                "(README, 'Trying a new Triton on a runner')"
            )
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
            runs.append(out)
    return old, new


def fingerprint_diff(new_path: Path, old_triton: str, out: Path) -> str | None:
    """The fingerprint's upgrade report under the new Triton against `old_triton`'s recording."""
    from tilegate.run.perf import HOME, repo_root

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
