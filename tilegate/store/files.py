"""The JSON and TOML files the gate reads and writes: results, baselines, noise, tolerances.

`Baselines(location)` is one baselines/ directory: `load` / `save` / `query` its stored
baselines (`<gpu>.json`), A/B noise files (`<gpu>.ab.json`) and `tolerances.toml`. The judge's
modules parse what is read here (`parse_*`) and build the JSON written here (`to_json`,
`noise_json`); writes are atomic (tilegate.fileio). `judge_files` is the gate's judge over
paths: it loads, then `tilegate.judge.gate.judge` decides on the objects.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tilegate.config import _toml
from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, read_json, read_text
from tilegate.judge.abnoise import Noise, noise_json, parse_noise
from tilegate.judge.baseline import Baseline, baseline_path, how_to_create, parse_baseline, to_json
from tilegate.judge.gate import Judgement, judge
from tilegate.judge.integrity import (
    DIR,
    FETCH_HINT,
    Change,
    Integrity,
    check_baseline,
    check_noise,
    diff_file,
)
from tilegate.judge.policy import Tolerances, parse_tolerances
from tilegate.judge.results import Run
from tilegate.judge.resultsjson import parse_results

DEFAULT_DIR = Path(DIR)
TOLERANCES = "tolerances.toml"


def load_results(path: str | Path) -> Run:
    """Read and validate one results file; InputError naming the file and row on any problem."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise InputError(
            f"results file {p} does not exist. `tilegate perf` writes one: "
            ".perf/results.json (`--out-dir DIR`: DIR/results.json); measure first, or give that path"
        )
    if p.is_file() and p.stat().st_size == 0:
        raise InputError(
            f"results file {p} is empty (0 bytes): the run that wrote it did not finish (a suite "
            "that dies leaves one with pytest-benchmark 5.2.3); its log says why. Measure again"
        )
    remedy = "measure again (`tilegate perf` writes it)"
    return parse_results(read_json(p, "results file", allow_nan=True, remedy=remedy), p)


def load_baseline(path: str | Path) -> Baseline:
    """Read and validate a baseline; every problem is an InputError naming the file (and row)."""
    return parse_baseline(read_json(path, "baseline"), Path(path))


def save_baseline(path: str | Path, b: Baseline) -> None:
    """Write atomically: readers see the old baseline or the new one, never half of one."""
    atomic_write_json(path, to_json(b), inline_scalar_lists=True)


def noise_path(slug: str, directory: str | Path = DEFAULT_DIR) -> Path:
    return Path(directory) / f"{slug}.ab.json"


def load_noise(path: str | Path) -> Noise:
    """Read and validate an A/B noise file; InputError naming the file (and row)."""
    return parse_noise(read_json(path, "A/B noise file"), Path(path))


def save_noise(noise: Noise) -> None:
    atomic_write_json(noise.path, noise_json(noise), inline_scalar_lists=True)


def load_tolerances(path: str | Path | None, *, required: bool = True) -> Tolerances:
    """Read tolerances.toml; without a file (and not required) the built-in policy applies."""
    if path is None:
        return Tolerances()
    p = Path(path)
    if not p.exists():
        if required:
            raise InputError(f"tolerances file {p} does not exist")
        return Tolerances()
    tomllib = _toml()  # Python 3.10: the `tomli` dependency
    try:
        data = tomllib.loads(read_text(p, "tolerances file"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(
            f"tolerances file {p} is not valid TOML: {err}; restore it from git or fix it"
        ) from err
    return parse_tolerances(data, p)


@dataclass(frozen=True)
class Baselines:
    """One baselines/ directory (pytest-benchmark's FileStorage shape): where it is, what it
    holds, each file loaded into the judge's objects and saved from them."""

    location: Path = DEFAULT_DIR

    def path(self, slug: str, *, noise: bool = False) -> Path:
        return (noise_path if noise else baseline_path)(slug, self.location)

    def query(self, *, noise: bool = False) -> list[str]:
        """The GPU slugs with a stored baseline (or, `noise`, an A/B noise file)."""
        files = sorted(self.location.glob("*.ab.json" if noise else "*.json"))
        return [
            p.name.removesuffix(".json").removesuffix(".ab")
            for p in files
            if noise or not p.name.endswith(".ab.json")
        ]

    def load(self, slug: str) -> Baseline:
        return load_baseline(self.path(slug))

    def load_noise(self, slug: str) -> Noise | None:
        """The A/B noise file of `slug`, None when none was recorded."""
        path = self.path(slug, noise=True)
        return load_noise(path) if path.exists() else None

    def tolerances(self) -> Tolerances | None:
        path = self.location / TOLERANCES
        return load_tolerances(path) if path.exists() else None

    def save(self, item: Baseline | Noise, path: Path | None = None) -> Path:
        """Write a baseline (to `path`, default its GPU's file here) or a noise file (its own
        path); return where."""
        if isinstance(item, Noise):
            save_noise(item)
            return item.path
        out = path or self.path(item.slug)
        save_baseline(out, item)
        return out


# --- the gate's inputs ---------------------------------------------------------------------------


def judge_files(
    results: Path,
    baseline: Path | None = None,
    confirmations: Sequence[Path] = (),
    *,
    baselines_dir: Path = DEFAULT_DIR,
    report_only: bool = False,
    allow_missing: bool = False,
    accept_baseline_change: bool = False,
    integrity: Integrity | None = None,
) -> Judgement:
    """Judge `results` against `baseline` (default: the results' GPU's file in `baselines_dir`).

    `report_only` never fails (exit 0), and without a baseline judges the run alone. Raises
    InputError for what cannot be judged.
    """
    if baseline is not None and not baseline.is_file():
        raise InputError(
            (
                f"baseline {baseline} is a directory, not a file: pass it as --baselines"
                if baseline.is_dir()
                else f"baseline {baseline} does not exist"
            )
            + ". Give an existing baseline file, or none for the GPU's own in --baselines."
        )
    if baseline is None and not baselines_dir.is_dir():
        raise InputError(
            f"--baselines {baselines_dir} does not exist (or is not a directory): no stored "
            "baseline, A/B noise file or tolerances could be read from it. Point it at the "
            "repository's baselines/ (the default)."
        )
    run = load_results(results)
    slug = run.env.gpu.slug
    path = baseline or baseline_path(slug, baselines_dir)
    reruns = [load_results(c) for c in confirmations]
    ab = run.env.ab is not None
    noise = Baselines(baselines_dir).load_noise(slug) if ab else None
    # a hint names the repository's baselines/, never where a pull request's gate put the
    # base's copy (tilegate.judge.integrity: a directory under .perf/ or a temporary one)
    shown = baseline_path(slug) if integrity is not None else path
    no_baseline, notes, stored, tols = None, [], None, None
    if not path.exists() and (report_only or ab):
        no_baseline = (
            f"No baseline for {slug} at `{shown}`, so no stored-baseline verdict. "
            f"{how_to_create(slug, shown, run.path, run.env.profile)}"
        )
        if ab:
            notes.append(f"no stored baseline {shown}: judged on the A/B verdict alone")
    elif not path.exists():
        raise InputError(
            f"no baseline for {slug}: {shown} does not exist. "
            f"{how_to_create(slug, shown, run.path, run.env.profile)} "
            "To see the report without a verdict, pass --report-only."
        )
    else:
        stored, tols = load_baseline(path), Baselines(path.parent).tolerances()
    return judge(
        run,
        reruns,
        stored=stored,
        tolerances=tols,
        noise=noise,
        confirmations=confirmations,
        report_only=report_only,
        allow_missing=allow_missing,
        accept_baseline_change=accept_baseline_change,
        integrity=integrity,
        no_baseline=no_baseline,
        notes=notes,
    )


# --- a pull request's baselines/ against its base's ----------------------------------------------


def check_consistent(directory: Path) -> None:
    """Every baseline and noise file of a baselines directory against its own policy."""
    tols = Baselines(directory).tolerances()
    for path in sorted(directory.glob("*.json")):
        if path.name.endswith(".ab.json"):
            check_noise(load_noise(path))
        else:
            check_baseline(load_baseline(path), tols)


def _files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        return {}
    return {
        str(p.relative_to(directory)): p
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _parsed(rel: str, path: Path | None) -> object:
    """A file of baselines/ as the judge compares it: parsed where it knows the kind."""
    if path is None or "/" in rel:
        return path
    if rel.endswith(".ab.json"):
        return load_noise(path)
    if rel.endswith(".json"):
        return load_baseline(path)
    return load_tolerances(path) if rel == TOLERANCES else path


def diff_dirs(base_dir: Path, head_dir: Path) -> list[Change]:
    """The pull request's baselines/ (head_dir) against the base's (base_dir)."""
    old, new = _files(base_dir), _files(head_dir)
    out: list[Change] = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a is None or b is None or a.read_bytes() != b.read_bytes():
            out += diff_file(rel, _parsed(rel, a), _parsed(rel, b))
    return out


def materialise_baselines(ref: str, repo: Path, dest_root: Path) -> Path:
    """REF's baselines/ extracted under dest_root/<sha>/ (empty when REF has none)."""
    found = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode != 0:
        raise InputError(
            f"base {ref!r} is not a commit of {repo} (missing, or not fetched). {FETCH_HINT}"
        )
    sha = found.stdout.decode().strip()
    dest = dest_root / sha
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", sha, f"{DIR}/"],
        capture_output=True,
        check=False,
    )
    if archive.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")
    (dest / DIR).mkdir(exist_ok=True)
    return dest / DIR


def check_pull_request(
    ref: str, head_dir: Path, repo: Path, work: Path, *, acknowledged: bool = False
) -> Integrity:
    """Diff head_dir against REF's baselines/; both must be consistent with their own policy."""
    base_dir = materialise_baselines(ref, repo, work)
    check_consistent(base_dir)
    if head_dir.is_dir():
        check_consistent(head_dir)
    changes = tuple(diff_dirs(base_dir, head_dir))
    judge_dir = head_dir if acknowledged and head_dir.is_dir() else base_dir
    return Integrity(judge_dir, changes, acknowledged, ref)
