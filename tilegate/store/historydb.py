"""The history store: an embedded DuckDB database file of measured runs, appended, never rewritten.

Schema version 4 (docs/history.md has the column meanings). The store knows no benchmark: a
case's parameters are its `params` (JSON, the results row's: its grid point and the fixed
values, named by the declaration), its throughput the results row's (`tflops` from the
declared work's flops, else `gbps` from its bytes), its pairs the declared relations
(tilegate.judge.crosstile)::

    meta(key PRIMARY KEY, value)          -- schema_version, created_by, created_at
    runs(run_id PRIMARY KEY, gpu, gpu_name, commit, datetime, measured_at, profile, mode, dirty,
         triton, torch, python, driver, cuda, harness_version, throttled, source, added_at,
         repo_url, run_url, reference, UNIQUE (gpu, commit, datetime, profile))
    cases(run_id -> runs, case_id, position, variant, twin, n_samples,
          median_s, q1_s, q3_s, ratio_to_reference, ratio_to_twin, code_hash,
          verdict, tolerance, base_median_s, base_ratio_to_reference, params, tflops, gbps,
          PRIMARY KEY (run_id, case_id))
    pairs(run_id -> runs, faster, than, per, setting, value, case_id, ratio,
          PRIMARY KEY (run_id, faster, than, per, setting, value))

An older store is read as it is and upgraded by the first command that writes to it. Versions 1
to 3 kept some parameters in columns of their own (of `cases`: the grid's, in grid order; of
`runs`: the fixed ones), which versions 1 and 2 had in no `params`: every column this version
does not have is such a parameter (`_legacy_columns`), read into `params` where a row has none
(the run's first, then the case's, in column order) and dropped by the upgrade. Version 1 gains
the two link columns (NULL links until then); versions 1 and 2 gain the `pairs` table, filled
from their twin rows (a pair along the last of the case's own parameter columns, at the values
of the others). Their `ratio_to_torch` and `base_ratio_to_torch` were the ratios to their
reference variant, `torch`: they become `ratio_to_reference` and `base_ratio_to_reference`, and
`runs.reference` says `torch` (where the run measured it). Versions 1 and 2 stored no
throughput: their rows have none (NULL `tflops` and `gbps`).

A run's identity is (GPU slug, commit, datetime, profile): pytest-benchmark's `datetime` is the
moment the run started, so two runs of one commit on one GPU differ in it, and the same file
added twice does not. Adding a run that is already stored is refused and names it.

Every open takes an exclusive lock file (`<store>.lock`, released by the OS if the process dies),
so a second writer waits up to `lock_timeout` seconds and then fails cleanly; every write is one
transaction, so a failed `add` leaves the store as it was. A file that exists but is not a
tilegate store (corrupt, truncated, another database) is an InputError naming it: it is never
recreated, and only a missing file is created, and only by a command that writes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import statistics
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from filelock import FileLock, Timeout

from tilegate import __version__
from tilegate.errors import InputError
from tilegate.judge.results import Run
from tilegate.peaks import percent, row_of

SCHEMA_VERSION = 4
# version 1: without runs.repo_url / runs.run_url; versions 1 and 2: without cases.params and the
# pairs table, without runs.reference and cases.tflops / cases.gbps, and with the ratios to the
# reference named for it (ratio_to_torch, base_ratio_to_torch); versions 1 to 3: parameters in
# columns of their own (`_legacy_columns`). A version-3 store written before runs.reference or
# the throughput (never released) is read and upgraded as versions 1 and 2 are: by its columns.
_READS = (1, 2, 3, 4)
DEFAULT_STORE = Path(".perf/history.duckdb")
DEFAULT_LOCK_TIMEOUT_S = 120.0

# cases.run_id refers to runs.run_id. It is not declared as a FOREIGN KEY: DuckDB refuses to
# delete referenced rows in the transaction that deletes their references, and `prune` must
# remove both in one transaction. Only `add` and `prune` write, and both keep the two in step.
_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE SEQUENCE run_ids START 1;
CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY DEFAULT nextval('run_ids'),
    gpu VARCHAR NOT NULL,
    gpu_name VARCHAR,
    commit VARCHAR NOT NULL,
    datetime VARCHAR NOT NULL,
    measured_at TIMESTAMP NOT NULL,
    profile VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,
    dirty BOOLEAN,
    triton VARCHAR,
    torch VARCHAR,
    python VARCHAR,
    driver VARCHAR,
    cuda VARCHAR,
    harness_version VARCHAR,
    throttled BOOLEAN,
    source VARCHAR,
    added_at TIMESTAMP NOT NULL,
    repo_url VARCHAR,
    run_url VARCHAR,
    reference VARCHAR,
    UNIQUE (gpu, commit, datetime, profile)
);
CREATE TABLE cases (
    run_id INTEGER NOT NULL,
    case_id VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    variant VARCHAR NOT NULL,
    twin VARCHAR,
    n_samples INTEGER NOT NULL,
    median_s DOUBLE NOT NULL,
    q1_s DOUBLE NOT NULL,
    q3_s DOUBLE NOT NULL,
    ratio_to_reference DOUBLE,
    ratio_to_twin DOUBLE,
    code_hash VARCHAR,
    verdict VARCHAR,
    tolerance DOUBLE,
    base_median_s DOUBLE,
    base_ratio_to_reference DOUBLE,
    params VARCHAR,
    tflops DOUBLE,
    gbps DOUBLE,
    peak_bytes BIGINT,
    pct_of_peak DOUBLE,
    PRIMARY KEY (run_id, case_id)
);
CREATE TABLE pairs (
    run_id INTEGER NOT NULL,
    faster VARCHAR NOT NULL,
    than VARCHAR NOT NULL,
    per VARCHAR NOT NULL,
    setting VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    ratio DOUBLE NOT NULL,
    PRIMARY KEY (run_id, faster, than, per, setting, value)
);
"""

_RUN_COLUMNS = (
    "run_id",
    "gpu",
    "gpu_name",
    "commit",
    "datetime",
    "measured_at",
    "profile",
    "mode",
    "dirty",
    "triton",
    "torch",
    "python",
    "driver",
    "cuda",
    "harness_version",
    "throttled",
    "source",
    "added_at",
    "repo_url",
    "run_url",
    "reference",
)
_LINK_COLUMNS = ("repo_url", "run_url")  # added by schema version 2
_ADDED = ("peak_bytes", "pct_of_peak")  # version 4 stores written before them: added (NULL)
CASE_COLUMNS = (
    "run_id",
    "case_id",
    "position",
    "variant",
    "twin",
    "n_samples",
    "median_s",
    "q1_s",
    "q3_s",
    "ratio_to_reference",
    "ratio_to_twin",
    "code_hash",
    "verdict",
    "tolerance",
    "base_median_s",
    "base_ratio_to_reference",
    "params",
    "tflops",
    "gbps",
    "peak_bytes",  # peak GPU memory of one call (tilegate.judge.memory); NULL: not measured
    "pct_of_peak",  # of the bound its declared work gives (tilegate.peaks); NULL: none
)
# the columns' names before schema version 3: the ratios were named for this repo's reference
_RENAMED = {
    "ratio_to_torch": "ratio_to_reference",
    "base_ratio_to_torch": "base_ratio_to_reference",
}
LEGACY_REFERENCE = "torch"  # the reference variant of every run stored before runs.reference

_LEGACY_REFERENCE_SQL = (
    f"(SELECT '{LEGACY_REFERENCE}' WHERE EXISTS (SELECT 1 FROM cases c "
    f"WHERE c.run_id = runs.run_id AND c.variant = '{LEGACY_REFERENCE}'))"
)
PAIR_COLUMNS = ("run_id", "faster", "than", "per", "setting", "value", "case_id", "ratio")


def _json(value: Any) -> str:
    """The stored text of a parameter value or setting: compact JSON, key order kept."""
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class StoredPair:
    """One relational pair (tilegate.judge.crosstile) at one value of its axis in one run: the
    same-run ratio faster / than, and the case id of the `faster` row."""

    run_id: int
    faster: str
    than: str
    per: str
    setting: Mapping[str, Any]  # the other axes' values (the pair's `where`)
    value: Any  # the value of `per`
    case_id: str
    ratio: float


@dataclass(frozen=True)
class Judged:
    """What the gate said about one case of one run (all optional: a run may be stored unjudged)."""

    verdict: str | None = None
    tolerance: float | None = None  # the baseline row's allowed relative slowdown
    base_median_s: float | None = None  # the baseline row's median
    base_ratio_to_reference: float | None = None  # the baseline's median over its reference's


@dataclass(frozen=True)
class StoredRun:
    run_id: int
    gpu: str
    gpu_name: str | None
    commit: str
    datetime: str
    measured_at: dt.datetime
    profile: str
    mode: str
    dirty: bool | None
    triton: str | None
    torch: str | None
    python: str | None
    driver: str | None
    cuda: str | None
    harness_version: str | None
    throttled: bool | None
    source: str | None
    added_at: dt.datetime
    repo_url: str | None = None  # e.g. https://github.com/owner/repo: commit links
    run_url: str | None = None  # the CI run that measured it
    reference: str | None = None  # the reference variant's name: every ratio_to_reference's

    @property
    def identity(self) -> str:
        return describe_identity(self.gpu, self.commit, self.datetime, self.profile)

    def env(self) -> dict[str, str | None]:
        """The environment facts that void comparisons when they change."""
        return {
            "triton": self.triton,
            "torch": self.torch,
            "driver": self.driver,
            "cuda": self.cuda,
        }


def describe_identity(gpu: str, commit: str, datetime: str, profile: str) -> str:
    return f"{gpu} commit {commit[:12]} at {datetime} ({profile} profile)"


def run_identity(run: Run) -> tuple[str, str, str, str]:
    """(GPU slug, commit, datetime, profile) of a results file; InputError if it lacks one."""
    env = run.env
    if not env.commit:
        raise InputError(
            f"results file {run.path} has no commit_info.id: a run of unknown code cannot go into the "
            "history. Run the suite inside a git checkout."
        )
    if not env.datetime:
        raise InputError(
            f"results file {run.path} has no datetime: its run cannot be told from another run of the "
            "same commit. Use the file pytest-benchmark wrote."
        )
    return (env.gpu.slug, env.commit, env.datetime, env.profile)


def _utc(text: str, where: str) -> dt.datetime:
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError as err:
        raise InputError(f"{where}: datetime {text!r} is not ISO 8601 ({err})") from err
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return when


def _quartiles(samples: Sequence[float]) -> tuple[float, float]:
    q = statistics.quantiles(samples, n=4, method="inclusive") if len(samples) > 1 else None
    if q is None:
        return (samples[0], samples[0])
    return (q[0], q[2])


@dataclass(frozen=True)
class Links:
    """Where a run's commit and CI run are on the web (both optional; forks and other hosts set
    their own)."""

    repo_url: str | None = None
    run_url: str | None = None


@dataclass(frozen=True)
class AddResult:
    added: tuple[StoredRun, ...]
    skipped: tuple[str, ...]  # identities already stored (only with skip_existing)


class Store:
    """An open history store. Get one with `open_store`; it is valid inside that `with` block."""

    def __init__(
        self,
        path: Path,
        con: duckdb.DuckDBPyConnection,
        writable: bool,
        version: int = SCHEMA_VERSION,
    ) -> None:
        self.path = path
        self._con = con
        self._writable = writable
        self._version = version
        self._columns = _columns(con)

    @property
    def location(self) -> Path:
        return self.path

    # --- reading ------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._con.execute(sql, list(params)).fetchall()
        except duckdb.Error as err:
            raise InputError(f"history store {self.path}: query failed ({err})") from err

    def runs(self, gpu: str | None = None) -> list[StoredRun]:
        """Stored runs in measurement order (measured_at, then run id), optionally of one GPU."""
        where = "WHERE gpu = ?" if gpu else ""
        cols = [self._run_column(c) for c in _RUN_COLUMNS]
        rows = self._query(
            f"SELECT {', '.join(cols)} FROM runs {where} ORDER BY measured_at, run_id",
            [gpu] if gpu else [],
        )
        return [StoredRun(*r) for r in rows]

    def _run_column(self, name: str) -> str:
        """A column of `runs` as this store holds it (an older store: what it stands for)."""
        if ("runs", name) in self._columns:
            return name
        if name == "reference":
            return f"{_LEGACY_REFERENCE_SQL} AS reference"
        return f"NULL AS {name}"  # the links, before version 2

    def _case_column(self, name: str) -> str:
        """A column of `cases` (c, joined with runs r) as this store holds it."""
        if ("cases", name) in self._columns:
            return f"c.{name}"
        old = next((o for o, n in _RENAMED.items() if n == name), None)
        if old is not None and ("cases", old) in self._columns:
            return f"c.{old} AS {name}"
        return f"NULL::{'VARCHAR' if name == 'params' else 'DOUBLE'} AS {name}"

    def gpus(self) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT gpu FROM runs ORDER BY gpu")]

    def case_table(self, gpu: str | None = None) -> dict[str, np.ndarray]:
        """Every stored case row (of one GPU), as columns (numpy arrays; NULL is None / NaN)."""
        where = "WHERE r.gpu = ?" if gpu else ""
        legacy = _legacy_columns(self._columns)
        cols = ", ".join(
            [
                *(self._case_column(c) for c in CASE_COLUMNS),
                *(f'{t[0]}."{c}" AS "{_LEGACY}{i}"' for i, (t, c) in enumerate(legacy)),
            ]
        )
        try:
            res = self._con.execute(
                f"SELECT r.gpu, {cols} FROM cases c JOIN runs r USING (run_id) {where} "
                "ORDER BY r.gpu, c.case_id, r.measured_at, c.run_id",
                [gpu] if gpu else [],
            ).fetchnumpy()
        except duckdb.Error as err:
            raise InputError(f"history store {self.path}: query failed ({err})") from err
        out: dict[str, np.ndarray] = {}
        for name, col in res.items():
            if isinstance(col, np.ma.MaskedArray):
                if col.dtype.kind == "f":
                    col = col.filled(np.nan)
                else:
                    col = np.array(
                        [
                            None if m else v
                            for v, m in zip(col.data, np.ma.getmaskarray(col), strict=True)
                        ],
                        dtype=object,
                    )
            out[name] = np.asarray(col)
        if legacy:  # parameters in columns of their own (before version 4): into `params`
            values = [out.pop(f"{_LEGACY}{i}") for i in range(len(legacy))]
            out["params"] = np.array(
                [
                    p if p is not None else _legacy_params(legacy, [v[j] for v in values])
                    for j, p in enumerate(out["params"])
                ],
                dtype=object,
            )
        return out

    def pairs(self, gpu: str | None = None) -> list[StoredPair]:
        """Every stored pair point (of one GPU), by run, pair and value. A store older than schema
        version 3 has no pairs table: its twin rows are its pairs (`_twin_pairs`), as its upgrade
        stores them."""
        where = "WHERE r.gpu = ?" if gpu else ""
        args = [gpu] if gpu else []
        if self._version < 3:
            return _twin_pairs(self.case_table(gpu), _legacy_columns(self._columns))
        rows = self._query(
            f"SELECT {', '.join(f'p.{c}' for c in PAIR_COLUMNS)} FROM pairs p "
            f"JOIN runs r USING (run_id) {where} ORDER BY r.measured_at, p.run_id, p.faster, "
            "p.than, p.per, p.setting, p.value",
            args,
        )
        return [
            StoredPair(rid, f, t, per, json.loads(setting), json.loads(value), case, ratio)
            for rid, f, t, per, setting, value, case, ratio in rows
        ]

    @staticmethod
    def case_slices(table: Mapping[str, np.ndarray]) -> list[tuple[int, int]]:
        """[start, end) of each case's rows in a `case_table` (ordered by GPU, case, time)."""
        ids = np.char.add(table["gpu"].astype(str), "\0" + table["case_id"].astype(str))
        if len(ids) == 0:
            return []
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        ends = np.r_[starts[1:], len(ids)]
        return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]

    def count(self) -> tuple[int, int]:
        (runs,) = self._query("SELECT count(*) FROM runs")[0]
        (cases,) = self._query("SELECT count(*) FROM cases")[0]
        return int(runs), int(cases)

    # --- writing ------------------------------------------------------------------------------

    def add(
        self,
        runs: Sequence[tuple[Run, Mapping[str, Judged]]],
        *,
        skip_existing: bool = False,
        now: dt.datetime | None = None,
        links: Mapping[Path, Links] | None = None,
    ) -> AddResult:
        """Append runs (each with its per-case judgements) in one transaction.

        A run already stored (same identity) is an InputError naming it, and nothing is added;
        with `skip_existing` it is skipped and listed instead. Two runs of the same identity in
        one call are refused too. `links` (by results path) gives runs their repository and CI
        run URLs.
        """
        if not self._writable:
            raise AssertionError("store opened read-only")
        stamp = (now or dt.datetime.now(dt.timezone.utc)).replace(tzinfo=None)
        identities = [run_identity(run) for run, _ in runs]
        seen: dict[tuple[str, str, str, str], Path] = {}
        for (run, _), ident in zip(runs, identities, strict=True):
            if ident in seen:
                raise InputError(
                    f"results files {seen[ident]} and {run.path} are the same run "
                    f"({describe_identity(*ident)}); add it once"
                )
            seen[ident] = run.path
        existing = self._existing(identities)
        if existing and not skip_existing:
            names = [
                f"{run.path} ({describe_identity(*i)})"
                for (run, _), i in zip(runs, identities, strict=True)
                if i in existing
            ]
            raise InputError(
                f"history store {self.path} already holds {len(names)} of these runs: {'; '.join(names)}. "
                "Nothing was added. A run is identified by GPU, commit, datetime and profile; "
                "pass --skip-existing to add only the others."
            )
        todo = [(r, j, i) for (r, j), i in zip(runs, identities, strict=True) if i not in existing]
        added: list[StoredRun] = []
        try:
            self._con.execute("BEGIN TRANSACTION")
            for run, judged, ident in todo:
                link = (links or {}).get(run.path, Links())
                added.append(self._insert(run, judged, ident, stamp, link))
            self._con.execute("COMMIT")
        except BaseException as err:
            self._rollback()
            if isinstance(err, duckdb.Error):
                raise InputError(
                    f"history store {self.path}: adding failed ({err}); nothing was added"
                ) from err
            raise
        self._checkpoint()
        skipped = tuple(describe_identity(*i) for i in identities if i in existing)
        return AddResult(tuple(added), skipped)

    def prune(self, keep: int) -> int:
        """Keep the latest `keep` runs of each GPU (by measured_at); delete the rest. Returns how many went."""
        if keep < 1:
            raise InputError(f"prune: keep must be at least 1 (got {keep})")
        old = "SELECT run_id FROM (SELECT run_id, row_number() OVER (PARTITION BY gpu ORDER BY measured_at DESC, run_id DESC) AS n FROM runs) WHERE n > ?"
        try:
            self._con.execute("BEGIN TRANSACTION")
            (gone,) = self._con.execute(f"SELECT count(*) FROM ({old})", [keep]).fetchone() or (0,)
            self._con.execute(f"DELETE FROM cases WHERE run_id IN ({old})", [keep])
            self._con.execute(f"DELETE FROM pairs WHERE run_id IN ({old})", [keep])
            self._con.execute(f"DELETE FROM runs WHERE run_id IN ({old})", [keep])
            self._con.execute("COMMIT")
        except duckdb.Error as err:
            self._rollback()
            raise InputError(
                f"history store {self.path}: prune failed ({err}); nothing deleted"
            ) from err
        self._checkpoint()
        return int(gone)

    # the store interface (tilegate.store): what it holds, load, save
    query = gpus
    load = runs
    save = add

    def _rollback(self) -> None:
        with contextlib.suppress(duckdb.Error):  # no transaction was open
            self._con.execute("ROLLBACK")

    def _checkpoint(self) -> None:
        # Fold the write-ahead log into the file, so that copying the one .duckdb file (a CI
        # artifact, a branch) copies everything.
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as err:
            raise InputError(f"history store {self.path}: checkpoint failed ({err})") from err

    def _existing(
        self, identities: Sequence[tuple[str, str, str, str]]
    ) -> set[tuple[str, str, str, str]]:
        if not identities:
            return set()
        found = set()
        for gpu, commit, when, profile in identities:
            rows = self._query(
                "SELECT 1 FROM runs WHERE gpu = ? AND commit = ? AND datetime = ? AND profile = ?",
                [gpu, commit, when, profile],
            )
            if rows:
                found.add((gpu, commit, when, profile))
        return found

    def _insert(
        self,
        run: Run,
        judged: Mapping[str, Judged],
        ident: tuple[str, str, str, str],
        stamp: dt.datetime,
        link: Links = Links(),
    ) -> StoredRun:
        env = run.env
        gpu, commit, when, profile = ident
        unknown = sorted(set(judged) - set(run.rows))
        if unknown:
            raise InputError(
                f"verdicts for {run.path} name case(s) the run does not hold: {', '.join(unknown[:8])}"
            )
        values = (
            gpu,
            env.gpu.name,
            commit,
            when,
            _utc(when, f"results file {run.path}"),
            profile,
            env.mode,
            env.dirty,
            env.software.get("triton"),
            env.software.get("torch"),
            env.software.get("python"),
            env.gpu.driver,
            env.gpu.cuda,
            env.harness_version,
            env.throttled,
            str(run.path),
            stamp,
            link.repo_url,
            link.run_url,
            run.reference,
        )
        row = self._con.execute(
            f"INSERT INTO runs ({', '.join(_RUN_COLUMNS[1:])}) VALUES ({', '.join('?' * len(values))}) "
            f"RETURNING {', '.join(_RUN_COLUMNS)}",
            list(values),
        ).fetchone()
        assert row is not None
        stored = StoredRun(*row)
        cols: dict[str, list[Any]] = {c: [] for c in CASE_COLUMNS}
        for position, (key, r) in enumerate(run.rows.items()):
            q1, q3 = _quartiles(r.samples_s)
            j = judged.get(key, Judged())
            for name, value in (
                ("run_id", stored.run_id),
                ("case_id", key),
                ("position", position),  # the suite's order (registry order of variants)
                ("variant", r.variant),
                ("twin", r.twin),
                ("n_samples", len(r.samples_s)),
                ("median_s", r.median_s),
                ("q1_s", q1),
                ("q3_s", q3),
                ("ratio_to_reference", r.ratio_to_reference),
                ("ratio_to_twin", r.ratio_to_twin),
                ("code_hash", getattr(r, "code_hash", None)),
                ("verdict", j.verdict),
                ("tolerance", j.tolerance),
                ("base_median_s", j.base_median_s),
                ("base_ratio_to_reference", j.base_ratio_to_reference),
                ("params", _json(dict(r.params))),  # its parameters, the declaration's names
                ("tflops", r.tflops),
                ("gbps", r.gbps),
                ("peak_bytes", r.memory.peak_bytes if r.memory else None),
                ("pct_of_peak", (percent(r, row_of(run.env)) or (None,))[0]),
            ):
                cols[name].append(value)
        # DuckDB scans a dict of numpy arrays in one statement; executemany costs ~2 ms a row.
        frame = {c: np.array(v, dtype=object) for c, v in cols.items()}  # noqa: F841 (read by SQL)
        self._con.execute(f"INSERT INTO cases ({', '.join(CASE_COLUMNS)}) SELECT * FROM frame")
        pairs = run_pairs(run, stored.run_id)
        if pairs:
            pframe = {  # noqa: F841 (read by SQL)
                c: np.array([p[k] for p in pairs], dtype=object) for k, c in enumerate(PAIR_COLUMNS)
            }
            self._con.execute(f"INSERT INTO pairs ({', '.join(PAIR_COLUMNS)}) SELECT * FROM pframe")
        return stored


def run_pairs(run: Run, run_id: int) -> list[tuple[Any, ...]]:
    """The rows of `pairs` for a run: every declared relation (tilegate.judge.crosstile) at each
    setting of the other axes and each value of its axis where both rows were measured."""
    from tilegate.judge.crosstile import relation_points

    out: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for faster, than, per, where in run.relations():
        for setting, groups in relation_points(run, faster, than, per, where).items():
            for value, group in groups.items():
                row = run.find(faster, group)
                ratio = run.ratio(faster, than, group)
                if row is None or ratio is None:
                    continue
                key = (faster, than, per, _json(dict(setting)), _json(value))
                out[key] = (run_id, *key, row.key, float(ratio))
    return list(out.values())


_LEGACY = "legacy:"  # the name a parameter column is read under (`Store.case_table`)


def _legacy_columns(columns: Mapping[tuple[str, str], int]) -> list[tuple[str, str]]:
    """The parameter columns of a store before version 4: every column of `runs` (r, the fixed
    values) and of `cases` (c, the grid's) that this version does not have, in column order."""
    known = {
        "runs": set(_RUN_COLUMNS),
        "cases": {*CASE_COLUMNS, *_RENAMED},
    }
    order = sorted(columns, key=lambda tc: (tc[0] != "runs", columns[tc]))
    return [(t, c) for t, c in order if c not in known[t]]


def _legacy_params(legacy: Sequence[tuple[str, str]], values: Sequence[Any]) -> str:
    """`params` of a row stored without it, from its parameter columns (NULL ones left out)."""
    out: dict[str, Any] = {}
    for (_, name), v in zip(legacy, values, strict=True):
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            continue
        out[name] = v.item() if isinstance(v, np.generic) else v
    return _json(out)


def _twin_pairs(
    table: Mapping[str, np.ndarray], legacy: Sequence[tuple[str, str]]
) -> list[StoredPair]:
    """A store before version 3 has no pairs table: its pairs are its twin rows, each along the
    last of the case's own parameter columns at the values of the others (what its upgrade
    stores), by run and case."""
    own = [c for t, c in legacy if t == "cases"]
    if not own:
        return []
    per, others = own[-1], own[:-1]
    out = []
    for j in range(len(table["case_id"])):
        twin, ratio = table["twin"][j], table["ratio_to_twin"][j]
        if twin is None or not np.isfinite(ratio):
            continue
        params = json.loads(table["params"][j])
        if per not in params:
            continue
        setting = {k: params[k] for k in others if k in params}
        out.append(
            StoredPair(
                int(table["run_id"][j]),
                str(table["variant"][j]),
                str(twin),
                per,
                setting,
                params[per],
                str(table["case_id"][j]),
                float(ratio),
            )
        )
    return sorted(out, key=lambda p: (p.run_id, p.case_id))


def _check_schema(path: Path, con: duckdb.DuckDBPyConnection) -> int:
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        version = (
            con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if "meta" in tables
            else None
        )
    except duckdb.Error as err:
        raise InputError(
            f"history store {path} cannot be read ({err}); it is corrupt. It was not changed: "
            "restore it from its backup (CI: the perf-history branch) or move it away to start a new store."
        ) from err
    if not {"meta", "runs", "cases"} <= tables or version is None:
        raise InputError(
            f"history store {path} is a DuckDB database but not a tilegate history store (tables: "
            f"{', '.join(sorted(tables)) or 'none'}). It was not changed; point --store at another file."
        )
    if version[0] not in {str(v) for v in _READS}:
        raise InputError(
            f"history store {path} has schema_version {version[0]}; this tilegate reads versions "
            f"{', '.join(map(str, _READS))}. Use the tilegate that wrote it."
        )
    return int(version[0])


def _columns(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], int]:
    """(table, column) of the store's runs and cases tables, each with its position."""
    rows = con.execute(
        "SELECT table_name, column_name, column_index FROM duckdb_columns() "
        "WHERE table_name IN ('runs', 'cases') AND NOT internal"
    ).fetchall()
    return {(str(t), str(c)): int(i) for t, c, i in rows}


def _outdated(con: duckdb.DuckDBPyConnection, version: int) -> bool:
    """Whether the store needs `_upgrade`: an older version, or a version-3 store written
    before runs.reference, cases.tflops / gbps and the renamed ratios."""
    cols = _columns(con)
    want = {("runs", "reference")} | {("cases", c) for c in ("tflops", "gbps", *_ADDED)}
    want |= {("cases", n) for n in _RENAMED.values()}
    return version < SCHEMA_VERSION or not want <= cols.keys() or bool(_legacy_columns(cols))


def _upgrade(path: Path, con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Up to SCHEMA_VERSION in one transaction. 1 -> 2: the two link columns (NULL for the runs
    already stored). 2 -> 3: the `pairs` table with the stored twin rows as pairs (`_twin_pairs`),
    the ratios to the reference under their names (`ratio_to_torch` -> `ratio_to_reference`, the
    base's too), `runs.reference` (`torch`, where the run measured it), `cases.tflops` and
    `cases.gbps` (NULL: those versions stored no throughput). 3 -> 4: the parameter columns
    (`_legacy_columns`) read into `params` where a row has none, then dropped."""
    try:
        cols = _columns(con)
        legacy = _legacy_columns(cols)
        pairs = _twin_pairs(_legacy_table(con, cols), legacy) if version < 3 else []
        con.execute("BEGIN TRANSACTION")
        if version < 2:
            for col in _LINK_COLUMNS:
                con.execute(f"ALTER TABLE runs ADD COLUMN {col} VARCHAR")
        for old, new in _RENAMED.items():
            if ("cases", old) in cols:
                con.execute(f"ALTER TABLE cases RENAME COLUMN {old} TO {new}")
        if ("runs", "reference") not in cols:
            con.execute("ALTER TABLE runs ADD COLUMN reference VARCHAR")
            con.execute(f"UPDATE runs SET reference = {_LEGACY_REFERENCE_SQL}")
        for col in ("tflops", "gbps", "params", *_ADDED):
            if ("cases", col) not in cols:
                kind = {"params": "VARCHAR", "peak_bytes": "BIGINT"}.get(col, "DOUBLE")
                con.execute(f"ALTER TABLE cases ADD COLUMN {col} {kind}")
        if legacy:
            filled = _legacy_table(con, cols)
            frame = {  # noqa: F841 (read by SQL)
                "run_id": np.array([int(r) for r in filled["run_id"]], dtype=object),
                "case_id": np.array([str(c) for c in filled["case_id"]], dtype=object),
                "params": np.array(list(filled["params"]), dtype=object),
            }
            con.execute(
                "UPDATE cases SET params = f.params FROM frame f "
                "WHERE cases.run_id = f.run_id AND cases.case_id = f.case_id "
                "AND cases.params IS NULL"
            )
            for table, col in legacy:
                con.execute(f'ALTER TABLE {table} DROP COLUMN "{col}"')
        if version < 3:
            con.execute(_SCHEMA[_SCHEMA.index("CREATE TABLE pairs") :])
            if pairs:
                pframe = {  # noqa: F841 (read by SQL)
                    "run_id": np.array([p.run_id for p in pairs], dtype=object),
                    "faster": np.array([p.faster for p in pairs], dtype=object),
                    "than": np.array([p.than for p in pairs], dtype=object),
                    "per": np.array([p.per for p in pairs], dtype=object),
                    "setting": np.array([_json(dict(p.setting)) for p in pairs], dtype=object),
                    "value": np.array([_json(p.value) for p in pairs], dtype=object),
                    "case_id": np.array([p.case_id for p in pairs], dtype=object),
                    "ratio": np.array([p.ratio for p in pairs], dtype=object),
                }
                con.execute(f"INSERT INTO pairs ({', '.join(PAIR_COLUMNS)}) SELECT * FROM pframe")
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    except duckdb.Error as err:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise InputError(
            f"history store {path}: could not upgrade it to schema version {SCHEMA_VERSION} ({err}); "
            "it was not changed"
        ) from err


def _legacy_table(
    con: duckdb.DuckDBPyConnection, cols: Mapping[tuple[str, str], int]
) -> dict[str, np.ndarray]:
    """The case table of a store being upgraded, as `Store.case_table` reads it."""
    version = 3 if ("cases", "params") in cols else 2
    return Store(Path("(upgrading)"), con, False, version).case_table()


@contextmanager
def open_store(
    path: str | Path = DEFAULT_STORE,
    *,
    write: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
) -> Iterator[Store]:
    """Open the store under its lock; create it (only when `write`) if the file does not exist."""
    p = Path(path)
    if not p.exists() and not write:
        raise InputError(
            f"history store {p} does not exist. Create it with `tilegate history add RESULTS --store {p}` "
            "(or `history import DIR`)."
        )
    if p.exists() and not p.is_file():
        raise InputError(f"history store {p} is not a file")
    p.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(p) + ".lock")
    try:
        lock.acquire(timeout=lock_timeout)
    except Timeout as err:
        raise InputError(
            f"history store {p} is locked by another tilegate process ({p}.lock) and stayed locked for "
            f"{lock_timeout:g} s; nothing was done. Wait for it to finish (or raise --lock-timeout)."
        ) from err
    try:
        new = not p.exists()
        try:
            con = duckdb.connect(str(p), read_only=not write)
        except duckdb.Error as err:
            raise InputError(
                f"history store {p} cannot be opened as a DuckDB database ({str(err).splitlines()[0]}). "
                "It was not changed: restore it from its backup (CI: the perf-history branch) or move it "
                "away to start a new store."
            ) from err
        try:
            if not new and _half_created(con):
                # a first `history add` killed while creating it: DuckDB's file, no table yet
                if not write:
                    raise InputError(
                        f"history store {p} is half-created: a DuckDB file with no table (a first "
                        "`history add` killed while creating it?). `tilegate history add RESULTS "
                        f"--store {p}` finishes it."
                    )
                new = True
            if new:
                _create(p, con)
            version = _check_schema(p, con)
            if write and _outdated(con, version):
                _upgrade(p, con, version)
                version = SCHEMA_VERSION
            yield Store(p, con, write, version)
        except BaseException:
            if new and write:  # a refused first write leaves no empty store behind
                con.close()
                for leftover in (p, Path(f"{p}.wal")):
                    leftover.unlink(missing_ok=True)
            raise
        finally:
            con.close()
    finally:
        lock.release()


def _half_created(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the database holds nothing of anyone's: no table, sequence or view."""
    try:
        found = [
            con.execute(f"SELECT count(*) FROM {what}").fetchone()
            for what in (
                "duckdb_tables() WHERE NOT internal",
                "duckdb_sequences()",
                "duckdb_views() WHERE NOT internal",
            )
        ]
    except duckdb.Error:
        return False  # _check_schema names what is wrong with it
    return all(n == (0,) for n in found)


def _create(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("BEGIN TRANSACTION")
        con.execute(_SCHEMA)
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_by", f"tilegate {__version__}"),
                ("created_at", dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")),
            ],
        )
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    except duckdb.Error as err:
        raise InputError(f"history store {path}: could not create it ({err})") from err
