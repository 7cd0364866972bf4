"""Opening DuckDB connections quietly, and two small query helpers that respect DuckDB 2.0's result rules.

Every connection spectune opens goes through :func:`quiet_connect`: DuckDB prints a progress bar on stdout for
long queries, which would corrupt a ``--json`` document (the setting is per connection, not global).
DuckDB 2.0 refuses new work on a connection while an ``execute()`` result is unfinished, and
``fetchone()`` leaves it unfinished. Reads therefore go through :func:`one` (fetches everything) or
:func:`frame` (a relation straight to polars over the Arrow C stream, without the DB-API copy);
:class:`ArrowStream` hands a polars frame to ``con.register`` the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import polars as pl


def quiet_connect(database: str = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with the progress bar off (stdout stays one JSON document)."""
    con = duckdb.connect(database, read_only=read_only)
    con.execute("SET enable_progress_bar = false")
    return con


def one(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> tuple | None:
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
    # Through the Arrow C stream (PyCapsule), not ``.pl()``: the same Arrow data, without importing pyarrow
    # (~0.1-0.4 s of every command's start).
    return pl.DataFrame(con.sql(sql, params=list(params) if params else None))


class ArrowStream:
    """A polars frame seen only through the Arrow C stream interface, for ``con.register``.

    DuckDB converts a polars frame it is handed with ``to_arrow()``, which imports pyarrow (~0.1-0.4 s); an
    object exposing only ``__arrow_c_stream__`` is read zero-copy without it.
    """

    def __init__(self, df: pl.DataFrame) -> None:
        self._df = df

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._df.__arrow_c_stream__(requested_schema)
