"""Two small query helpers that respect DuckDB 2.0's result rules.

DuckDB 2.0 refuses new work on a connection while an ``execute()`` result is unfinished, and
``fetchone()`` leaves it unfinished. Reads therefore go through :func:`one` (fetches everything) or
:func:`frame` (a relation straight to polars, without the DB-API copy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import polars as pl


def one(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> tuple | None:
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
    return con.sql(sql, params=list(params) if params else None).pl()
