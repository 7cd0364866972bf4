"""Reading the derived data kept in the store (analysis/derived.py computes and writes it): the store's data stamp,
which items are current, and the kept ``winners`` answer — with DuckDB and the standard library only, so a
``winners`` whose answer is kept answers in about the time of importing DuckDB (no polars, numpy or pyarrow).

An item is current when its row in ``derived`` carries :data:`CODE_VERSION` and the data stamp of the store as it is
now. The data stamp is a fingerprint of the rows the answers are computed from, taken by DuckDB from the store's
content: row count and sum of row hashes of :data:`HASHED` (every row of cells, runs, published rows and meta), row
counts of :data:`COUNTED` (a cell's positions, requests, replicates, model draws and SLO bins, which a spectune write
lands and removes only together with the cell's row, whose ``written_at`` then changes; a raw SQL edit of those rows
alone, leaving their cell's row as it was, is the one change not seen). Because it is the content, not
the file, a change is seen whatever happens to the file's times, a link to it or its write-ahead log.

Anything unexpected on the way (no store, not a regular file, another schema version, a lock, a damaged file)
means "not kept": the caller computes live, through the full store checks (ingest/store.py), which say what is
wrong.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import duckdb

from ingest import ddl, default_stamp, paths

CODE_VERSION = 2  # bump whenever what analysis/derived.py computes changes (the winners document, the matrices)
WINNERS = "winners"
MATRICES = "matrices"
HASHED = ("meta", "runs", "cells", "published")
COUNTED = ("positions", "requests", "cell_bootstrap", "model_draws", "cell_slo_hist")


def data_stamp(con: duckdb.DuckDBPyConnection) -> str:
    """The fingerprint of the store's input rows (module docstring), as one string."""
    parts = [f"(SELECT count(*)::VARCHAR || ':' || coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR FROM {name} t)"
             for name in HASHED]
    parts += [f"(SELECT count(*)::VARCHAR FROM {name})" for name in COUNTED]
    row = con.execute(f"SELECT concat_ws(' ', {', '.join(parts)})").fetchall()
    return f"v{CODE_VERSION} {row[0][0]}"


def current(con: duckdb.DuckDBPyConnection, stamp: str | None = None) -> dict[str, str | None]:
    """name → body of every derived item that is current for the store as it is now."""
    stamp = data_stamp(con) if stamp is None else stamp
    rows = con.execute("SELECT name, body FROM derived WHERE data_stamp = ? AND code_version = ?",
                       [stamp, CODE_VERSION]).fetchall()
    return dict(rows)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _wal_ok(path: str) -> bool:
    """No write-ahead log beside the file, or a regular one (DuckDB would block on a FIFO there)."""
    try:
        return stat.S_ISREG(os.stat(path + ".wal").st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def kept_winners(db: str | Path | None) -> str | None:
    """The ``winners --json`` document kept for the store at ``db`` (None: the default store) when it is current,
    as printed; None when there is none, it is not current, or anything is unexpected (the caller computes live)."""
    return read_winners(db)[0]


def read_winners(db: str | Path | None) -> tuple[str | None, str | None]:
    """(kept ``winners --json`` document or None, the store's data stamp now or None when it could not be taken):
    :func:`kept_winners` with the stamp it compared, which a caller that then computes live hands to
    analysis/derived.py (the answer is kept only if the store still has that stamp)."""
    path = Path(db) if db is not None else paths.default_db_path()
    given, real = os.fspath(path), os.path.realpath(path)
    if not (_regular(real) and _wal_ok(given) and _wal_ok(real)):
        return None, None
    if path.resolve() in (paths.default_db_path().resolve(), paths.DEFAULT_DB.resolve()) and not (
            default_stamp.is_current(path)):
        return None, None  # the embedded default data changed: the live path refreshes the store first
    try:
        con = duckdb.connect(given, read_only=True)
    except duckdb.Error:  # locked by a writer, damaged, not DuckDB's: the live path waits or says what is wrong
        return None, None
    try:
        con.execute("SET enable_progress_bar = false")  # as ingest/sql.py quiet_connect (which imports polars)
        con.execute("SET threads = 1")  # a few small scans: worker threads cost more than they save, more so under load
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        if not version or version[0][0] != str(ddl.SCHEMA_VERSION):
            return None, None
        stamp = data_stamp(con)
        return current(con, stamp).get(WINNERS), stamp
    except duckdb.Error:  # not a spectune store of this schema: the live path says so
        return None, None
    finally:
        con.close()
