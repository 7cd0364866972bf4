"""Derived data in the store: what answers need, computed when data lands and kept in the store's ``derived`` tables.

Owns two derived items, each computed by the same function a live read uses:

- ``winners``: the ``winners --json`` document with the default rule options and no filters
  (:func:`winners_document`: analysis.winners.winners and the summary, as the CLI computes them);
- ``matrices``: the unfiltered re-scoring matrices (analysis/rescore/matrix.py ``load_matrices``), as rows of
  ``derived_matrices`` / ``derived_matrix_cells``.

Each is stored with the data stamp of the store it was computed from and :data:`analysis.derived_read.CODE_VERSION`
(analysis/derived_read.py reads them with DuckDB only). :func:`refresh` brings them up to date in one transaction on a
writable connection; :func:`refresh_store` opens the store for it. Every command that writes the store calls
:func:`refresh_store` in its own process once its data landed (no child process); ``winners`` on the default store
keeps the answer it had to compute live (the first build, a refresh of the embedded data). Readers use a current
item and compute live when it is not current or the options are not the defaults (:func:`matrices`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from analysis import derived_read
from analysis.glance import summary
from analysis.rescore.matrix import CellSamples, Matrix, load_matrices
from analysis.winners import winners
from ingest import open_store, store
from ingest.sql import ArrowStream

ARRAYS = ("ttft", "tpot", "out", "thr_ratio", "p99_ratio")  # a cell's samples, '<f8' bytes each
CELL_FIELDS = ("method", "depth", "workload", "concurrency", "in_mean", "tau", "backend", "cell_id", "provenance")


def winners_document(con: duckdb.DuckDBPyConnection) -> dict | None:
    """The default ``winners`` document (the CLI's defaults are winners()'s defaults); None when there are no cells
    (the CLI then says so, exit 2)."""
    res = winners(con)
    if not res["cells"]:
        return None
    res["summary"] = summary(res)
    return res


def refresh(con: duckdb.DuckDBPyConnection, *, winners_doc: dict | None = None, doc_stamp: str | None = None
            ) -> list[str]:
    """Recompute the derived items that are not current, in one transaction; returns their names.
    ``winners_doc``: the default document, when the caller computed it already from the store with data stamp
    ``doc_stamp`` (used only when the store still has that stamp; else computed again here)."""
    done = []
    with store.transaction(con):
        stamp = derived_read.data_stamp(con)
        have = derived_read.current(con, stamp)
        now = datetime.now(UTC).replace(tzinfo=None)
        if derived_read.WINNERS not in have:
            doc = winners_doc if winners_doc is not None and doc_stamp == stamp else winners_document(con)
            _put(con, derived_read.WINNERS, stamp, now, json.dumps(doc) if doc is not None else None)
            done.append(derived_read.WINNERS)
        if derived_read.MATRICES not in have:
            _put_matrices(con, load_matrices(con))
            _put(con, derived_read.MATRICES, stamp, now, None)
            done.append(derived_read.MATRICES)
    return done


def refresh_store(db: str | Path | None, *, wait_s: float | None = None, winners_doc: dict | None = None,
                  doc_stamp: str | None = None) -> list[str]:
    """:func:`refresh` on the store at ``db`` (None: the default store), opened writable for it."""
    con = open_store.connect(db, wait_s=wait_s, refresh_default=False)
    try:
        return refresh(con, winners_doc=winners_doc, doc_stamp=doc_stamp)
    finally:
        con.close()
        store.clear_holder(Path(db) if db else store.default_db_path())


def after_write(db: str | Path | None) -> list[str]:
    """What a command that wrote the store calls once its data landed: :func:`refresh_store`, in this process. A
    refresh that cannot run (another process took the store meanwhile, past the lock wait) is said on stderr and
    changes nothing else: the data landed, and readers compute live until the next refresh."""
    try:
        return refresh_store(db)
    except (store.StoreLockedError, store.StoreError, duckdb.Error, OSError) as exc:
        print(f"warning: derived answers not refreshed ({' '.join(str(exc).split())[:200]}); "
              "winners computes live until the next write", file=sys.stderr)
        return []


def after_landing(code: int, db: str | Path | None) -> int:
    """A writing command's exit code ``code``, passed through: when it is 0 its data landed, so :func:`after_write`
    runs first (the one wrapper of every command that writes the store: results, trace, requests, run)."""
    if code == 0:
        after_write(db)
    return code


def live_copy(db: str | Path, dest: Path) -> Path:
    """A copy of the store at ``db`` at ``dest`` without derived rows: every answer on it is computed live (what the
    benchmarks and tests hold the kept answers against). Returns ``dest``."""
    shutil.copy(db, dest)
    with store.session(dest) as con:
        for table in ("derived", "derived_matrices", "derived_matrix_cells"):
            con.execute(f"DELETE FROM {table}")
    return dest


def keep_default_answer(doc: dict, stamp: str | None) -> None:
    """After ``winners`` computed the default document live on the default store (just built, its embedded data
    refreshed, or changed elsewhere) from data with stamp ``stamp`` (None: not known): keep it and the matrices, so
    the next call reads them. Skipped without waiting when another process holds the store; a store that cannot be
    written stays as it is."""
    with contextlib.suppress(store.StoreLockedError, store.StoreError, duckdb.Error, OSError):
        refresh_store(None, wait_s=0.0, winners_doc=doc, doc_stamp=stamp)


def _put(con: duckdb.DuckDBPyConnection, name: str, stamp: str, now: datetime, body: str | None) -> None:
    con.execute("INSERT INTO derived VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "data_stamp = excluded.data_stamp, code_version = excluded.code_version, "
                "computed_at = excluded.computed_at, body = excluded.body",
                [name, stamp, derived_read.CODE_VERSION, now, body])


def _put_matrices(con: duckdb.DuckDBPyConnection, matrices: dict[tuple[str, str], Matrix]) -> None:
    con.execute("DELETE FROM derived_matrix_cells")
    con.execute("DELETE FROM derived_matrices")
    heads = pl.DataFrame({
        "family": [m.family for m in matrices.values()], "gpu": [m.gpu for m in matrices.values()],
        "replicates": [m.replicates for m in matrices.values()],
        "models": [json.dumps(m.models) for m in matrices.values()],
        "tensor_parallel_size": [m.tensor_parallel_size for m in matrices.values()],
        "draft_models": [json.dumps(m.draft_models) for m in matrices.values()],
        "speculative_extras": [json.dumps(m.speculative_extras) for m in matrices.values()],
    }, schema_overrides={"family": pl.String, "gpu": pl.String, "replicates": pl.Int32,
                         "tensor_parallel_size": pl.Int32})
    rows = [(m.family, m.gpu, c) for m in matrices.values() for c in m.cells.values()]
    cells = pl.DataFrame({
        "family": [f for f, _, _ in rows], "gpu": [g for _, g, _ in rows],
        **{f: [getattr(c, f) for _, _, c in rows] for f in CELL_FIELDS},
        **{a: [np.ascontiguousarray(getattr(c, a), dtype="<f8").tobytes() for _, _, c in rows] for a in ARRAYS},
    }, schema_overrides={"family": pl.String, "gpu": pl.String, "method": pl.String, "depth": pl.Int32,
                         "workload": pl.String, "concurrency": pl.Int32, "in_mean": pl.Float64, "tau": pl.Float64,
                         "backend": pl.String, "cell_id": pl.String, "provenance": pl.String,
                         **{a: pl.Binary for a in ARRAYS}})
    for table, frame in (("derived_matrices", heads), ("derived_matrix_cells", cells)):
        if frame.height:
            con.register("_derived_rows", ArrowStream(frame))
            try:
                names = ", ".join(frame.columns)
                con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _derived_rows")
            finally:
                con.unregister("_derived_rows")


def _read_matrices(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], Matrix]:
    out: dict[tuple[str, str], Matrix] = {}
    for family, gpu, reps, models, tp, drafts, extras in con.execute(
            "SELECT family, gpu, replicates, models, tensor_parallel_size, draft_models, speculative_extras "
            "FROM derived_matrices ORDER BY rowid").fetchall():
        out[(family, gpu)] = Matrix(family, gpu, replicates=reps, models=json.loads(models), tensor_parallel_size=tp,
                                    draft_models=json.loads(drafts), speculative_extras=json.loads(extras))
    names = ", ".join(("family", "gpu", *CELL_FIELDS, *ARRAYS))
    # In the order load_matrices filled them (rowid: insertion order), so every dict iterates as a live load's.
    for row in con.execute(f"SELECT {names} FROM derived_matrix_cells ORDER BY rowid").fetchall():
        family, gpu = row[0], row[1]
        fields = dict(zip(CELL_FIELDS, row[2:2 + len(CELL_FIELDS)], strict=True))
        # copies: writable arrays, as a live load gives (frombuffer's views of bytes are read-only)
        blobs = row[2 + len(CELL_FIELDS):]
        arrays = {a: np.frombuffer(b, dtype="<f8").copy() for a, b in zip(ARRAYS, blobs, strict=True)}
        cell = CellSamples(**fields, **arrays)
        out[(family, gpu)].cells[(cell.method, cell.depth, cell.workload, cell.concurrency)] = cell
    return out


def matrices(con: duckdb.DuckDBPyConnection, families: tuple[str, ...] = (), gpus: tuple[str, ...] = ()
             ) -> dict[tuple[str, str], Matrix]:
    """``load_matrices(con, families, gpus)``: read from the store's derived rows when unfiltered and current,
    else computed live."""
    if not families and not gpus and derived_read.MATRICES in derived_read.current(con):
        return _read_matrices(con)
    return load_matrices(con, families, gpus)
