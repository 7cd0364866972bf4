"""The results store: opening the DuckDB file, checking its schema version, and the only code that writes it.

Writes are idempotent and atomic: a cell (its row, positions, requests and bootstrap replicates) lands in
one transaction keyed by (run_id, cell_id); writing it again is a no-op. Rows go in through DuckDB's
Arrow path (``INSERT ... SELECT`` from a registered Arrow table), never row by row. A DB file locked by
another process is waited on with a message on stderr naming the holder (PID and command, from DuckDB's
lock error and the ``<store>.holder`` sidecar each writer leaves while it has the store open), up to
``$SPECTUNE_LOCK_TIMEOUT`` seconds (default 60); then a :class:`StoreLockedError` (exit 2) says who holds
it and what to do. Read-only commands wait too: DuckDB gives no snapshot of a file another process writes.

The sidecar is written, read and removed through ingest/safefile.py (a link, FIFO or device at its name is left
alone, with one warning). A store path that is not a usable spectune store — a folder, FIFO or device, an empty or
non-DuckDB file, a foreign DuckDB file (refused, never converted), a missing core table, a non-numeric schema
version, a file DuckDB cannot open — is a :class:`StoreError`: one line ``error: <store>: <what is wrong>``, exit 2,
nothing written (:func:`check_file` runs before DuckDB opens the file, so nothing blocks on a FIFO or reads a device).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from ingest import cellstats, ddl, goodput, paths, safefile, sql, steady
from ingest import settings as settings_mod
from ingest.bulk import bootstrap_frames, keep_cells, segments, steady_columns  # noqa: F401 (re-exported)
from ingest.errors import UsageError
from ingest.records import CellKey, RunInfo, SpecCounters, conform_requests

REPO_ROOT = paths.ROOT
DEFAULT_DB = paths.DEFAULT_DB
default_db_path = paths.default_db_path
LOCK_WAIT_S = settings_mod.LOCK_TIMEOUT.default


class StoreError(UsageError):
    """The store file is not one spectune can use: missing parts, damaged, foreign, or not a file (exit 2,
    one line ``error: <store>: <what is wrong>``)."""


class SchemaVersionError(UsageError):
    """The DB was written by a newer spectune."""


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


LOCK_ENV = settings_mod.LOCK_TIMEOUT.env  # seconds a command waits for a store another process holds


class StoreLockedError(UsageError):
    """Another process held the store for longer than the lock timeout."""


def lock_timeout_s(settings: settings_mod.Settings | None = None) -> float:
    """The lock wait in seconds (0 = do not wait): the ``lock_timeout_s`` setting (``$SPECTUNE_LOCK_TIMEOUT``;
    default: this process's settings), whose default is :data:`LOCK_WAIT_S`."""
    return (settings if settings is not None else settings_mod.load()).lock_timeout_s


HOLDER_MAX_BYTES = 4096  # a holder record is ~100 bytes; anything bigger is not ours


def holder_path(path: Path) -> Path:
    """The sidecar naming the process that has the store open for writing."""
    return path.with_name(path.name + ".holder")


def command_name(argv: list[str] | None = None) -> str:
    """What the user ran, in a few words: ``runner run``, ``ingest trace``, ``streamlit run``."""
    argv = sys.argv if argv is None else argv
    if not argv or not argv[0]:
        return "python"
    prog = Path(argv[0])
    words = [w for w in argv[1:] if not w.startswith("-")]
    if prog.name == "__main__.py":
        return " ".join([prog.parent.name, *words[:1]])
    return " ".join([prog.stem, *words[:2]])[:80]


def _write_holder(path: Path) -> None:
    # Through ingest/safefile.py: a link, FIFO or device at the name is left alone (a read-only folder too: the
    # lock message then falls back to /proc).
    record = {"pid": os.getpid(), "command": command_name(), "since": _now().isoformat(timespec="seconds")}
    safefile.write_sidecar(holder_path(path), json.dumps(record).encode())


def _read_holder(path: Path) -> dict:
    """The holder record, or {} when there is none or it is not one of ours."""
    raw = safefile.read_sidecar(holder_path(path), HOLDER_MAX_BYTES)
    try:
        record = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _is_own_holder(raw: bytes) -> bool:
    try:
        record = json.loads(raw)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("pid") == os.getpid() and "command" in record


def clear_holder(path: Path) -> None:
    """Remove the holder sidecar when it is this process's own record (never anyone else's, never a link)."""
    safefile.remove_if_ours(holder_path(path), _is_own_holder, limit=HOLDER_MAX_BYTES)


def _holder(path: Path, exc: Exception) -> str:
    """'PID 123 (runner run)': DuckDB names the PID holding the lock; the sidecar or /proc names its command."""
    m = re.search(r"\(PID (\d+)\)", str(exc))
    pid = int(m.group(1)) if m else None
    command = None
    record = _read_holder(path)
    if record and isinstance(record.get("pid"), int) and (pid is None or record.get("pid") == pid):
        pid, command = record["pid"], str(record.get("command"))[:80]
    if command is None and pid is not None:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            command = command_name([a.decode(errors="replace") for a in args[1:] if a]) or None
        except OSError:
            pass
    if pid is None:
        return "another process"
    return f"PID {pid}" + (f" ({command})" if command else "")


DUCKDB_MAGIC = b"DUCK"  # bytes 8–11 of every DuckDB database file


def check_file(path: Path) -> None:
    """Refuse, before DuckDB opens it, a store path DuckDB would block on or misread: a folder, a FIFO or a device
    (also through a link), or a write-ahead log beside it that is not a regular file. A missing path passes (the
    caller decides); a regular file is DuckDB's to judge (:func:`_unusable` words its refusal). Raises
    :class:`StoreError`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path}: is {safefile.describe(st.st_mode)}, not a store file")
    wal = Path(str(path) + ".wal")
    try:
        wal_mode = os.stat(wal).st_mode
    except OSError:
        return
    if not stat.S_ISREG(wal_mode):
        raise StoreError(f"{wal}: the store's write-ahead log is {safefile.describe(wal_mode)}, not a regular file; "
                         "remove it")


def _unusable(path: Path, exc: BaseException, read_only: bool) -> StoreError:
    """Why DuckDB would not open a regular file, in words: empty, not DuckDB's, or DuckDB's own reason.
    (Judged after DuckDB tried, not before: a store another process is creating is empty for an instant, and
    DuckDB then reports its lock, which is waited on.)"""
    try:
        with open(path, "rb") as fh:  # a regular file (check_file): this cannot block
            head = fh.read(16)
    except OSError:
        head = None
    if head == b"":
        return StoreError(f"{path}: is an empty file, not a spectune store (remove it to start a new store there)")
    if head is not None and head[8:12] != DUCKDB_MAGIC:
        return StoreError(f"{path}: is not a DuckDB file (not a spectune store)")
    how = "for reading" if read_only else "for writing"
    return StoreError(f"{path}: cannot be opened {how}: {_duckdb_reason(exc, path)}")


def _duckdb_reason(exc: BaseException, path: Path | None = None) -> str:
    """DuckDB's message, one short line: its kind prefix and the quoted path are noise next to our own path."""
    text = " ".join(str(exc).split())
    text = re.sub(r"^[A-Za-z ]+ Error: ", "", text)
    if path is not None:
        text = text.replace(f' "{path}"', "").replace(f'"{path}"', "the file")
    return text[:300]


def _open(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """Connect, waiting up to ``wait_s`` for another process's lock with a message on stderr; a lock held
    longer is a :class:`StoreLockedError` naming the holder. Writers record themselves in the sidecar. A file
    DuckDB cannot open (damaged, truncated, read-only for a writer) is a :class:`StoreError` naming it."""
    check_file(path)
    deadline = time.monotonic() + wait_s
    delay, told = 0.05, False
    while True:
        try:
            con = sql.quiet_connect(str(path), read_only=read_only)
        except duckdb.Error as exc:  # another process holds the write lock, or the file is not usable
            if not isinstance(exc, duckdb.IOException) or "lock" not in str(exc).lower():
                raise _unusable(path, exc, read_only) from None
            holder = _holder(path, exc)
            if time.monotonic() > deadline:
                raise StoreLockedError(
                    f"{path}: the store is held by {holder} for more than {wait_s:g} s; wait for it to finish "
                    f"and run this again, or set {LOCK_ENV}=<seconds> to wait longer") from None
            if not told:
                told = True
                print(f"waiting for the store, held by {holder} (up to {wait_s:g} s; {LOCK_ENV} sets it)…",
                      file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
            continue
        if not read_only:
            _write_holder(path)
        return con


def check_version(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    found = stored_version(con, path)
    if found > ddl.SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: store schema version {found} is newer than this spectune ({ddl.SCHEMA_VERSION}); "
            "upgrade spectune or use another --db"
        )


CORE_TABLES = ("runs", "cells")  # in every spectune store since schema 1: one missing is damage, not age


def _check_spectune(have: set[tuple[str, str]], path: Path) -> None:
    """A DuckDB file with tables is spectune's only when it has spectune's ``meta`` table and its core tables:
    a foreign file is refused (never converted: no table is added to it), a damaged one named as such."""
    tables = {t for t, _ in have}
    if not {("meta", "key"), ("meta", "value")} <= have:
        raise StoreError(f"{path}: a DuckDB file that is not a spectune store (no spectune meta table"
                         + (f"; it holds {len(tables)} other table(s)" if tables else "") + "); use another --db")
    missing = [t for t in CORE_TABLES if t not in tables]
    if missing:
        raise StoreError(f"{path}: the store is damaged: table {', '.join(missing)} is missing; restore it from a "
                         "backup or an export, or use another --db")


def _type_kind(duck_type: str) -> str:
    """The kind of a DuckDB column type that matters to readers: a number read as text (or the reverse) breaks
    every comparison, while INTEGER against SMALLINT does not."""
    t = duck_type.upper()
    if t.endswith("[]") or t.startswith(("STRUCT", "MAP", "LIST")):
        return "nested"
    if t.startswith(("VARCHAR", "TEXT", "STRING", "BLOB")):
        return "text"
    if t.startswith(("TIMESTAMP", "DATE", "TIME")):
        return "time"
    if t.startswith("BOOL"):
        return "boolean"
    return "number"


DUCKDB_HEADER_BYTES = 3 * 4096  # DuckDB's file header and its two database headers, before the first block


def _check_size(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A file shorter than the blocks DuckDB says are in use was cut short (a copy interrupted, a full disk):
    refused at open, before a write lands in new blocks of a store whose old ones are gone. Conservative: only
    the used blocks count (free ones may lie past the end on some file systems)."""
    row = con.execute("PRAGMA database_size").fetchall()
    if not row:
        return
    block_size, used = int(row[0][2]), int(row[0][4])
    need = DUCKDB_HEADER_BYTES + used * block_size
    try:
        size = path.stat().st_size
    except OSError:
        return
    if size < need:
        raise StoreError(f"{path}: the store is damaged: the file is cut short ({size} bytes where its {used} "
                         f"blocks in use need {need}); restore it from a backup or an export, or use another --db")


def _check_types(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A column of a kind spectune never writes (a text ``depth``, say) is damage: named, exit 2, nothing
    written — instead of a DuckDB binder error on the first query, or rows appended to it."""
    rows = con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() "
                       "WHERE database_name = current_database() AND schema_name = current_schema()").fetchall()
    for table, column, kind in rows:
        want = ddl.COLUMN_TYPES.get(table, {}).get(column)
        if want is not None and _type_kind(kind) != _type_kind(want):
            raise StoreError(f"{path}: the store is damaged: column {table}.{column} is {kind} where spectune "
                             f"stores {want}; restore it from a backup or an export, or use another --db")


def _store_columns(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    """(table, column) of every column in the store's main schema."""
    return {(t, c) for t, c in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = current_schema()").fetchall()}


def _outdated(con: duckdb.DuckDBPyConnection, have: set[tuple[str, str]], path: Path) -> bool:
    """An older schema version, a table this spectune has that the store lacks, or a table without a column."""
    tables = {t for t, _ in have}
    return (stored_version(con, path) < ddl.SCHEMA_VERSION or any(t not in tables for t in ddl.COLUMNS)
            or any(t in tables and (t, c) not in have for t, cols in ddl.COLUMNS.items() for c in cols))


_ENSURED: set[str] = set()  # stores whose schema this process already created or checked


def stored_version(con: duckdb.DuckDBPyConnection, path: Path | str = "the store") -> int:
    row = sql.one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
    if not row:
        return 0
    try:
        return int(str(row[0]).strip())
    except ValueError:
        raise StoreError(f"{path}: the store is damaged: its schema version {str(row[0])[:40]!r} is not a "
                         "number") from None


STEADY_BEFORE = "stored before steady-state figures (schema 1): whole window"


def _fill_added(con: duckdb.DuckDBPyConnection, added: list[str]) -> None:
    """Columns just added to an older store get what their rows can honestly carry: cells stored before
    steady-state figures existed take the whole-window figure as their steady one, flagged in
    ``steady_fallback`` (re-run or re-import a cell for its own steady figure)."""
    if "cells.steady_output_throughput" in added:
        con.execute("""UPDATE cells SET steady_output_throughput = output_throughput,
                       steady_output_throughput_per_gpu = output_throughput_per_gpu,
                       steady_fallback = ? WHERE steady_output_throughput IS NULL AND steady_fallback IS NULL""",
                    [STEADY_BEFORE])
    if "cells.mode" in added:  # schema 7: a cell stored before modes ran one depth, or the schedule it names
        con.execute("UPDATE cells SET mode = CASE WHEN schedule IS NOT NULL THEN 'schedule' ELSE 'fixed' END "
                    "WHERE mode IS NULL")
    if "cell_bootstrap.steady_output_throughput" in added:
        con.execute("UPDATE cell_bootstrap SET steady_output_throughput = output_throughput "
                    "WHERE steady_output_throughput IS NULL")


def _load_not_stated(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 4: ``cells.concurrency`` may be NULL ("load not stated"). Before it, the published-results importer
    stored a figure without a load as 0; those cells (and only those: a runner never measures at 0) become
    NULL so they are never read as, or pooled with, a stated load."""
    con.execute("ALTER TABLE cells ALTER COLUMN concurrency DROP NOT NULL")
    con.execute("""UPDATE cells SET concurrency = NULL WHERE concurrency = 0
                   AND run_id IN (SELECT run_id FROM runs WHERE backend = 'import')""")


def ensure_schema(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    found = None
    have = _store_columns(con)
    if have:  # an existing file: spectune's (else refused before any table is added), checked for damage
        _check_spectune(have, path)
        _check_types(con, path)
        _check_size(con, path)
        check_version(con, path)
        found = stored_version(con, path)
        if str(path.resolve()) in _ENSURED and found == ddl.SCHEMA_VERSION:
            return
    with transaction(con):  # a store killed while being created has all its tables or none
        for statement in ddl.DDL:
            con.execute(statement)
        _fill_added(con, add_missing_columns(con))
        if found is not None and found < 3:  # cell_slo_hist is new in schema 3: bin the stored requests once
            goodput.backfill(con)
        if found is not None and found < 4:
            _load_not_stated(con)
        con.execute(
            "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(ddl.SCHEMA_VERSION)],
        )
    _ENSURED.add(str(path.resolve()))


def add_missing_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Columns this spectune added to an existing table (nullable, so old rows read as null): a store
    written before a column existed keeps working. Returns ``table.column`` for each one added."""
    have: dict[str, set[str]] = {}
    for table, column in _store_columns(con):
        have.setdefault(table, set()).add(column)
    added = []
    for table, types in ddl.COLUMN_TYPES.items():
        for col, kind in types.items():
            if table in have and col not in have[table]:
                con.execute(f'ALTER TABLE {table} ADD COLUMN "{col}" {kind}')
                added.append(f"{table}.{col}")
    return added


def _upgrade(path: Path, wait_s: float) -> None:
    """A store from an older spectune (an older schema version, or without a column this one has), opened
    read-only: bring it up to date once (briefly writable), so readers may select every column of this schema."""
    _ENSURED.discard(str(path.resolve()))
    try:
        rw = _open(path, False, wait_s)
    except duckdb.IOException as exc:
        raise UsageError(f"{path}: store schema is older than this spectune and cannot be upgraded here "
                         f"({exc}); open it once writable") from None
    try:
        with contextlib.closing(rw):
            ensure_schema(rw, path)
    finally:
        clear_holder(path)


def _open_reader(path: Path, wait_s: float) -> duckdb.DuckDBPyConnection:
    """One read-only connection that has checked the store is spectune's, not newer, and complete (an
    outdated store is upgraded first, then opened again)."""
    con = _open(path, True, wait_s)
    try:
        have = _store_columns(con)
        _check_spectune(have, path)
        _check_types(con, path)
        _check_size(con, path)
        check_version(con, path)
        old = _outdated(con, have, path)
    except Exception:
        con.close()
        raise
    if not old:
        return con
    con.close()
    _upgrade(path, wait_s)
    return _open(path, True, wait_s)


def connect(
    db: str | Path | None = None, *, read_only: bool = False, wait_s: float | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open the store at ``db`` (None: the default path) as it is. Commands open through ingest/open_store.py,
    which builds or refreshes the embedded default data first when ``db`` is the default store."""
    path = Path(db) if db else default_db_path()
    if not path.exists() and read_only:
        raise UsageError(f"{path}: no such store (run `spectune run` or `spectune results` first)")
    if not path.parent.exists():
        raise UsageError(f"{path}: parent folder does not exist")
    wait = lock_timeout_s() if wait_s is None else wait_s
    if read_only:
        return _open_reader(path, wait)
    con = _open(path, read_only, wait)
    try:
        ensure_schema(con, path)
    except Exception:
        con.close()
        clear_holder(path)  # a refused store (foreign, damaged) is left as it was found: no sidecar either
        raise
    return con


@contextlib.contextmanager
def session(db: str | Path | None = None, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived connection: writers open per unit of work so other processes can take turns."""
    con = connect(db, read_only=read_only)
    try:
        yield con
    finally:
        con.close()
        if not read_only:
            clear_holder(Path(db) if db else default_db_path())


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height == 0:
        return
    cols = ddl.COLUMNS[table]
    frame = frame.select([c for c in cols if c in frame.columns])
    view = f"_incoming_{table}"
    # string_view Arrow (polars' own layout): no per-row string conversion on the way into DuckDB
    con.register(view, frame.to_arrow(compat_level=pl.CompatLevel.newest()))
    try:
        names = ", ".join(f'"{c}"' for c in frame.columns)
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}")
    finally:
        con.unregister(view)


# ---- runs -------------------------------------------------------------------------------------------

def write_run(con: duckdb.DuckDBPyConnection, run: RunInfo) -> bool:
    """Record a run's provenance; an existing run id is left as it is. Returns True when new."""
    exists = sql.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run.run_id])
    if exists:
        return False
    row = {c: getattr(run, c, None) for c in ddl.COLUMNS["runs"]}
    _insert(con, "runs", pl.DataFrame([row], schema_overrides={"finished_at": pl.Datetime("us")}))
    return True


def finish_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    con.execute("UPDATE runs SET finished_at = ? WHERE run_id = ?", [_now(), run_id])


def find_run_by_file_hash(con: duckdb.DuckDBPyConnection, file_hash: str) -> str | None:
    row = sql.one(con, "SELECT run_id FROM runs WHERE file_hash = ?", [file_hash])
    return row[0] if row else None


# ---- cells ------------------------------------------------------------------------------------------

# cell columns a writer states (how the numbers came to be, and the config keys they were measured with)
LABEL_COLUMNS = ("origin", "draft_model", "source_url", "speculative_extra")

def cell_status(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, str]:
    """cell_id → status for every cell already in a run (what ``--resume`` skips)."""
    rows = con.execute("SELECT cell_id, status FROM cells WHERE run_id = ?", [run_id]).fetchall()
    return dict(rows)


def delete_cell(con: duckdb.DuckDBPyConnection, run_id: str, cell_id: str) -> None:
    for table in ("cells", "positions", "requests", "cell_bootstrap", "model_draws", "cell_slo_hist"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ? AND cell_id = ?", [run_id, cell_id])


def _cell_frames(
    run_id: str, key: CellKey, requests: pl.DataFrame, *, status: str, error: str | None,
    window_s: float | None, gpu_count: int, counters: SpecCounters | None,
    itl_ms: np.ndarray | None, headline: dict[str, float] | None, labels: dict[str, str | None] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
    model_factors: dict[str, np.ndarray] | None = None,
) -> dict[str, pl.DataFrame]:
    cell_id = key.cell_id
    reqs = conform_requests(requests)
    metrics = cellstats.derive(
        reqs, depth=key.depth, window_s=window_s, gpu_count=gpu_count, counters=counters, itl_ms=itl_ms
    )
    values = dict(metrics.values)
    if headline:  # an imported file's own numbers win over recomputation
        values.update({k: v for k, v in headline.items() if v is not None})
    boot = (cellstats.bootstrap(reqs, metrics, depth=key.depth, seed=cellstats.seed_for(cell_id))
            if reqs.height and status == "ok" else None)
    if boot is not None:  # simulated cells: the model's draws ride on the sampling replicates (steady ones too)
        boot = cellstats.apply_model_factors(boot, model_factors)
    steady_values, steady_reps = steady.cell(
        reqs, concurrency=key.concurrency, gpu_count=gpu_count, whole_window=values.get("output_throughput"),
        whole_replicates=boot["output_throughput"] if boot is not None else None,
        replicated_point=metrics.values.get("output_throughput"))  # what cellstats.bootstrap scaled them by
    values.update(steady_values)
    row = {"run_id": run_id, "cell_id": cell_id, **key.as_dict(), "status": status, "error": error,
           **values, **{k: v for k, v in (labels or {}).items() if k in LABEL_COLUMNS}, "written_at": _now()}
    frames = {"cells": pl.DataFrame([row], infer_schema_length=None)}
    positions = headline.get("positions") if headline and "positions" in headline else metrics.positions
    if positions:
        frames["positions"] = pl.DataFrame({
            "run_id": run_id, "cell_id": cell_id,
            "position": list(range(1, len(positions) + 1)), "acceptance": [float(p) for p in positions],
        })
        ivals = cellstats.position_intervals(reqs, cellstats.seed_for(cell_id)) if status == "ok" else []
        if len(ivals) == len(positions) and not (headline and "positions" in headline):
            frames["positions"] = frames["positions"].with_columns(
                pl.Series("ci_low", [lo for lo, _ in ivals], dtype=pl.Float64),
                pl.Series("ci_high", [hi for _, hi in ivals], dtype=pl.Float64))
    if reqs.height:
        frames["requests"] = reqs.with_columns(
            pl.lit(run_id).alias("run_id"), pl.lit(cell_id).alias("cell_id")
        )
        if boot is not None:
            if model_factors:
                frames["model_draws"] = pl.DataFrame({
                    "run_id": run_id, "cell_id": cell_id,
                    "replicate": np.arange(cellstats.BOOTSTRAP_REPLICATES, dtype=np.int16),
                    **{k: np.asarray(model_factors.get(k, np.ones(cellstats.BOOTSTRAP_REPLICATES)), dtype=float)
                       for k in cellstats.METRIC_KEYS},
                })
            frames["cell_bootstrap"] = pl.DataFrame({
                "run_id": run_id, "cell_id": cell_id,
                "replicate": np.arange(cellstats.BOOTSTRAP_REPLICATES, dtype=np.int16), **boot,
                "steady_output_throughput": steady_reps,
            })
    elif replicates and status == "ok":  # a cell without requests (a prediction) states its own replicates
        n = max(len(v) for v in replicates.values())
        frames["cell_bootstrap"] = pl.DataFrame({
            "run_id": run_id, "cell_id": cell_id, "replicate": np.arange(n, dtype=np.int16),
            **{m: np.asarray(replicates[m], dtype=float) for m in ddl.COLUMNS["cell_bootstrap"][3:] if m in replicates},
        })
    return frames


def cell_frames(
    run_id: str, key: CellKey, requests: pl.DataFrame, *, window_s: float | None, gpu_count: int,
    counters: SpecCounters | None = None, itl_ms: np.ndarray | None = None, status: str = "ok",
    error: str | None = None, headline: dict[str, float] | None = None,
    labels: dict[str, str | None] | None = None, replicates: dict[str, np.ndarray] | None = None,
    model_factors: dict[str, np.ndarray] | None = None,
) -> dict[str, pl.DataFrame]:
    """The rows one cell would land as (cells, positions, requests, cell_bootstrap, model_draws), without writing.

    For importers that land many cells from several files in one transaction via :func:`write_tables_bulk`.
    """
    return _cell_frames(run_id, key, requests, status=status, error=error, window_s=window_s,
                        gpu_count=gpu_count, counters=counters, itl_ms=itl_ms, headline=headline, labels=labels,
                        replicates=replicates,
                        model_factors=model_factors)


def write_cell(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    key: CellKey,
    requests: pl.DataFrame,
    *,
    window_s: float | None,
    gpu_count: int,
    counters: SpecCounters | None = None,
    itl_ms: np.ndarray | None = None,
    status: str = "ok",
    error: str | None = None,
    headline: dict[str, float] | None = None,
    replace: bool = False,
    labels: dict[str, str | None] | None = None,
    replicates: dict[str, np.ndarray] | None = None,
    model_factors: dict[str, np.ndarray] | None = None,
) -> bool:
    """Land one cell atomically. Returns False (and writes nothing) when it is already there.

    ``labels``: :data:`LABEL_COLUMNS` values (origin, draft_model). ``replicates``: bootstrap replicates per
    metric for a cell without requests (a factorized plan's prediction)."""
    frames = _cell_frames(
        run_id, key, requests, status=status, error=error, window_s=window_s, gpu_count=gpu_count,
        counters=counters, itl_ms=itl_ms, headline=headline, labels=labels, replicates=replicates,
        model_factors=model_factors,
    )
    with transaction(con):
        exists = sql.one(con,
            "SELECT status FROM cells WHERE run_id = ? AND cell_id = ?", [run_id, key.cell_id]
        )
        if exists and not replace:
            return False
        if exists:
            delete_cell(con, run_id, key.cell_id)
        for table in ("cells", "positions", "requests", "model_draws", "cell_bootstrap"):
            if table in frames:
                _insert(con, table, frames[table])
        if "requests" in frames:
            goodput.land(con, _slo_columns(frames["requests"]))
    return True


def _slo_columns(requests: pl.DataFrame) -> sql.ArrowStream:
    """The columns goodput bins read; one an input lacks is null, as it would be in the requests table."""
    kinds = {"ok": pl.Boolean, "ttft_ms": pl.Float64, "tpot_ms": pl.Float64}
    cols = [pl.col(c) if c in requests.columns else pl.lit(None, kinds[c]).alias(c) for c in kinds]
    return sql.ArrowStream(requests.select("run_id", "cell_id", *cols))


def write_failed_cell(con: duckdb.DuckDBPyConnection, run_id: str, key: CellKey, error: str,
                      *, replace: bool = False) -> bool:
    return write_cell(con, run_id, key, pl.DataFrame(), window_s=None, gpu_count=0, status="failed",
                      error=error, replace=replace)


def write_tables_bulk(
    con: duckdb.DuckDBPyConnection, tables: dict[str, pl.DataFrame], *, extra: dict[str, pl.DataFrame] | None = None
) -> dict[str, int]:
    """Land pre-built tables (an exported store, the embedded default data) in one transaction.

    Cells already present (same run_id, cell_id) are skipped with all their rows; bootstrap replicates
    are recomputed for new cells when the input does not carry them. ``extra`` holds tables without cell
    keys (e.g. ``published``) that land as given in the same transaction. Returns rows added per table.
    """
    cells = tables["cells"]
    if cells.height == 0 and not extra:
        return {}
    existing = sql.frame(con, "SELECT run_id, cell_id FROM cells")
    new_cells = cells.join(existing, on=["run_id", "cell_id"], how="anti") if existing.height else cells
    added: dict[str, int] = {"cells": new_cells.height}
    keys = new_cells.select("run_id", "cell_id")
    out = {"cells": new_cells}
    for table in ("positions", "requests", "model_draws", "cell_bootstrap"):
        frame = tables.get(table)
        if frame is not None and frame.height:
            out[table] = keep_cells(frame, keys)
    if "steady_output_throughput" not in new_cells.columns:  # rows written before schema 2
        out["cells"] = new_cells = steady_columns(new_cells, out.get("requests", pl.DataFrame()))
    if "cell_bootstrap" not in out and "requests" in out:
        out["cell_bootstrap"] = bootstrap_frames(new_cells, out["requests"], out.get("model_draws"))
    # Bulk rows need not keep their input order (readers ORDER BY request_index): DuckDB then writes compressed
    # row groups in parallel, instead of rewriting them at the next checkpoint (~40 % of a 10 M-row load).
    con.execute("SET preserve_insertion_order = false")
    try:
        with transaction(con):
            if "runs" in tables:
                runs = tables["runs"]
                have = sql.frame(con, "SELECT run_id FROM runs")
                runs = runs.join(have, on="run_id", how="anti") if have.height else runs
                _insert(con, "runs", runs)
            for table, frame in out.items():
                _insert(con, table, frame)
                added[table] = frame.height
            if out.get("requests") is not None and out["requests"].height:
                goodput.land(con, _slo_columns(out["requests"]))
            for table, frame in (extra or {}).items():
                _insert(con, table, frame)
                added[table] = frame.height
    finally:
        con.execute("RESET preserve_insertion_order")
    return added


def export_tables(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None = None) -> dict[str, pl.DataFrame]:
    """The rows of the given runs (all when None), as polars frames, for Parquet export."""
    out = {}
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    for table in ("runs", "cells", "positions", "requests", "model_draws"):
        if table not in have:  # a store made before model draws existed
            continue
        if run_ids is None:
            out[table] = sql.frame(con, f"SELECT * FROM {table}")
        else:
            out[table] = sql.frame(con, f"SELECT * FROM {table} WHERE run_id IN (SELECT unnest(?))", [run_ids])
    return out


# ---- traces -----------------------------------------------------------------------------------------

def write_trace(
    con: duckdb.DuckDBPyConnection, *, trace_id: str, name: str, fmt: str, file_hash: str,
    source_path: str, frame: pl.DataFrame, workload_mix: dict[str, float], workload_assignment: str,
) -> bool:
    """Store a normalised trace once per file hash. Returns False when it was already stored."""
    with transaction(con):
        if sql.one(con, "SELECT 1 FROM traces WHERE trace_id = ?", [trace_id]):
            return False
        _insert(con, "traces", pl.DataFrame([{
            "trace_id": trace_id, "name": name, "format": fmt, "file_hash": file_hash,
            "source_path": source_path, "created_at": _now(), "requests": frame.height,
            "workload_mix": json.dumps(workload_mix), "workload_assignment": workload_assignment,
        }]))
        cols = [c for c in ddl.COLUMNS["trace_requests"] if c in frame.columns and c != "trace_id"]
        _insert(con, "trace_requests", frame.select(cols).with_columns(pl.lit(trace_id).alias("trace_id")))
    return True


# ---- request logs (ingest/requestlog.py) --------------------------------------------------------------

def write_request_log(con: duckdb.DuckDBPyConnection, log: dict, rows: pl.DataFrame) -> str | None:
    """Store a request log once per file hash (``log['log_id']``), its rows in the same transaction. Returns
    None when new, else the target the same file was already imported for."""
    with transaction(con):
        have = sql.one(con, "SELECT target FROM request_logs WHERE log_id = ?", [log["log_id"]])
        if have:
            return str(have[0])
        _insert(con, "request_logs", pl.DataFrame([{**log, "imported_at": _now()}]))
        _insert(con, "request_log_rows", rows.with_columns(pl.lit(log["log_id"]).alias("log_id")))
    return None
