"""The history store: an embedded DuckDB database file of measured runs, appended, never rewritten.

Schema version 4: `_SCHEMA`. The store knows no benchmark: a case's parameters are its `params`
(JSON, the results row's: its grid point and the fixed values, named by the declaration), its
throughput the results row's (`tflops` from the declared work's flops, else `gbps` from its
bytes), its pairs the declared relations (tilegate.judge.crosstile). A store of another schema
version is refused, naming it (the reader of versions 1 to 3 went with issue 51's legacy
readers); a version-4 store written before `peak_bytes` and `pct_of_peak` reads them as NULL and
gains them at its first write. The columns' meanings, a run's identity (GPU slug, commit,
datetime, profile: adding one already stored is refused), the lock, the transactions and a
corrupt store: docs/history.md, "The store".
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
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
    peak_bytes BIGINT,  -- peak GPU memory of one call (tilegate.judge.memory); NULL: not measured
    pct_of_peak DOUBLE,  -- of the bound its declared work gives (tilegate.peaks); NULL: none
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

_ADDED = {"peak_bytes": "BIGINT", "pct_of_peak": "DOUBLE"}  # version 4 stores before them: NULL


def _table_columns(table: str) -> tuple[str, ...]:
    """The columns of a table of `_SCHEMA`, in order."""
    body = _SCHEMA.split(f"CREATE TABLE {table} (")[1].split("\n)")[0]
    return tuple(re.findall(r"^    ([a-z0-9_]+) ", body, re.M))


CASE_COLUMNS = _table_columns("cases")
PAIR_COLUMNS = _table_columns("pairs")


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

    def env_change(self, later: StoredRun) -> tuple[str, ...]:
        """What changed in the environment facts that void comparisons, from this run to
        `later`: e.g. ("triton 3.6.0 -> 3.9.0",)."""
        return tuple(
            f"{k} {getattr(self, k)} -> {getattr(later, k)}"
            for k in ("triton", "torch", "driver", "cuda")
            if getattr(self, k) != getattr(later, k)
        )


_RUN_COLUMNS = tuple(f.name for f in fields(StoredRun))  # the columns of runs, in order


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

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection, writable: bool) -> None:
        self.path = path
        self._con = con
        self._writable = writable
        self._columns = _columns(con)

    @property
    def location(self) -> Path:
        return self.path

    # --- reading ------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = (), numpy: bool = False) -> Any:
        """The rows (`numpy`: the columns, as numpy arrays) a query returns."""
        try:
            done = self._con.execute(sql, list(params))
            return done.fetchnumpy() if numpy else done.fetchall()
        except duckdb.Error as err:
            raise InputError(f"history store {self.path}: query failed ({err})") from err

    def runs(self, gpu: str | None = None) -> list[StoredRun]:
        """Stored runs in measurement order (measured_at, then run id), optionally of one GPU."""
        where = "WHERE gpu = ?" if gpu else ""
        rows = self._query(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs {where} ORDER BY measured_at, run_id",
            [gpu] if gpu else [],
        )
        return [StoredRun(*r) for r in rows]

    def gpus(self) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT gpu FROM runs ORDER BY gpu")]

    def case_table(self, gpu: str | None = None) -> dict[str, np.ndarray]:
        """Every stored case row (of one GPU), as columns (numpy arrays; NULL is None / NaN)."""
        where = "WHERE r.gpu = ?" if gpu else ""
        cols = ", ".join(
            f"c.{c}" if ("cases", c) in self._columns else f"NULL::DOUBLE AS {c}"  # `_ADDED`
            for c in CASE_COLUMNS
        )
        res = self._query(
            f"SELECT r.gpu, {cols} FROM cases c JOIN runs r USING (run_id) {where} "
            "ORDER BY r.gpu, c.case_id, r.measured_at, c.run_id",
            [gpu] if gpu else [],
            numpy=True,
        )
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
        return out

    def pairs(self, gpu: str | None = None) -> list[StoredPair]:
        """Every stored pair point (of one GPU), by run, pair and value."""
        where = "WHERE r.gpu = ?" if gpu else ""
        rows = self._query(
            f"SELECT {', '.join(f'p.{c}' for c in PAIR_COLUMNS)} FROM pairs p "
            f"JOIN runs r USING (run_id) {where} ORDER BY r.measured_at, p.run_id, p.faster, "
            "p.than, p.per, p.setting, p.value",
            [gpu] if gpu else [],
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
        with _transaction(self._con, self.path, "adding failed", "; nothing was added"):
            for run, judged, ident in todo:
                link = (links or {}).get(run.path, Links())
                added.append(self._insert(run, judged, ident, stamp, link))
        skipped = tuple(describe_identity(*i) for i in identities if i in existing)
        return AddResult(tuple(added), skipped)

    def prune(self, keep: int) -> int:
        """Keep the latest `keep` runs of each GPU (by measured_at); delete the rest. Returns how many went."""
        if keep < 1:
            raise InputError(f"prune: keep must be at least 1 (got {keep})")
        old = "SELECT run_id FROM (SELECT run_id, row_number() OVER (PARTITION BY gpu ORDER BY measured_at DESC, run_id DESC) AS n FROM runs) WHERE n > ?"
        with _transaction(self._con, self.path, "prune failed", "; nothing deleted"):
            (gone,) = self._con.execute(f"SELECT count(*) FROM ({old})", [keep]).fetchone() or (0,)
            self._con.execute(f"DELETE FROM cases WHERE run_id IN ({old})", [keep])
            self._con.execute(f"DELETE FROM pairs WHERE run_id IN ({old})", [keep])
            self._con.execute(f"DELETE FROM runs WHERE run_id IN ({old})", [keep])
        return int(gone)

    # the store interface (tilegate.store): what it holds, load, save
    query = gpus
    load = runs
    save = add

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


def _check_schema(path: Path, con: duckdb.DuckDBPyConnection) -> None:
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
    if version[0] != str(SCHEMA_VERSION):
        raise InputError(
            f"history store {path} has schema_version {version[0]}; this tilegate reads version "
            f"{SCHEMA_VERSION}. Use the tilegate that wrote it (versions 1 to 3: a `history add` by "
            "tilegate 833b842 or older upgrades it to 4)."
        )


def _columns(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], int]:
    """(table, column) of the store's runs and cases tables, each with its position."""
    rows = con.execute(
        "SELECT table_name, column_name, column_index FROM duckdb_columns() "
        "WHERE table_name IN ('runs', 'cases') AND NOT internal"
    ).fetchall()
    return {(str(t), str(c)): int(i) for t, c, i in rows}


def _add_columns(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    """A version-4 store written before the `_ADDED` columns gains them (NULL), in one transaction."""
    missing = {c: kind for c, kind in _ADDED.items() if ("cases", c) not in _columns(con)}
    if not missing:
        return
    with _transaction(con, path, f"could not add {sorted(missing)}", checkpoint=None):
        for col, kind in missing.items():
            con.execute(f"ALTER TABLE cases ADD COLUMN {col} {kind}")


@contextmanager
def _transaction(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    failed: str,
    tail: str = "",
    checkpoint: str | None = "checkpoint failed",
) -> Iterator[None]:
    """One transaction, rolled back on any failure, then a checkpoint: the write-ahead log folded
    into the file, so that copying the one .duckdb file (a CI artifact, a branch) copies
    everything. A DuckDB error is an InputError naming the store: `failed` (`checkpoint` where
    the checkpoint failed; None: `failed` too) and the error, then `tail`."""
    try:
        con.execute("BEGIN TRANSACTION")
        yield
        con.execute("COMMIT")
    except BaseException as err:
        with contextlib.suppress(duckdb.Error):  # no transaction was open
            con.execute("ROLLBACK")
        if isinstance(err, duckdb.Error):
            raise InputError(f"history store {path}: {failed} ({err}){tail}") from err
        raise
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error as err:
        raise InputError(f"history store {path}: {checkpoint or failed} ({err})") from err


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
            _check_schema(p, con)
            if write:
                _add_columns(p, con)
            yield Store(p, con, write)
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
    with _transaction(con, path, "could not create it", checkpoint=None):
        con.execute(_SCHEMA)
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_by", f"tilegate {__version__}"),
                ("created_at", dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")),
            ],
        )
