"""Provenance of what the store holds: runs (backend, engine, GPU, dates, row counts) and table sizes."""

from __future__ import annotations

import duckdb
import polars as pl

from analysis import frames
from ingest.sql import frame as query

TABLES = ("runs", "cells", "positions", "requests", "cell_bootstrap", "traces", "trace_requests", "watch_samples",
          "watch_events")


def runs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per run with its provenance and how many cells, failed cells and requests it holds."""
    return frames.runs(con).with_columns(pl.col("requests").cast(pl.Int64))


def table_counts(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Rows per store table (identifiers from the fixed allow-list above)."""
    present = set(query(con, "SELECT table_name FROM information_schema.tables")["table_name"].to_list())
    parts = [f"SELECT '{t}' AS table_name, count(*) AS rows FROM {t}" for t in TABLES if t in present]
    if not parts:
        return pl.DataFrame(schema={"table_name": pl.String, "rows": pl.Int64})
    return query(con, " UNION ALL ".join(parts))
