"""Provenance of what the store holds: runs (backend, engine, GPU, dates, row counts) and table sizes."""

from __future__ import annotations

import duckdb
import polars as pl

from analysis import frames
from ingest.sql import frame as query

TABLES = ("runs", "cells", "positions", "requests", "cell_bootstrap", "traces", "trace_requests", "watch_samples",
          "watch_events")


def runs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per run with its provenance and how many cells, failed cells and requests it holds.

    ``gpu_count`` is the GPUs the run's host had: a simulated run had none (the simulator stores 0), so it is
    empty there rather than a count of 0; ``gpus_per_server`` says how many GPUs each GPU model's servers used
    (tensor parallelism, from the cells: e.g. ``MI300X ×1/4/8``), which differs by family and GPU model."""
    out = frames.runs(con).with_columns(pl.col("requests").cast(pl.Int64))
    per = query(con, """
        WITH g AS (SELECT run_id, gpu, array_to_string(list_sort(list(DISTINCT gpu_count)), '/') AS counts
                   FROM cells WHERE status = 'ok' AND gpu_count IS NOT NULL GROUP BY run_id, gpu)
        SELECT run_id, string_agg(gpu || ' ×' || counts, ', ' ORDER BY gpu) AS gpus_per_server
        FROM g GROUP BY run_id""")
    out = out.join(per, on="run_id", how="left")
    if "gpu_count" in out.columns and "backend" in out.columns:
        # 0 is never a host's GPU count: a simulated run had none, an imported file does not say its host's
        unknown = (pl.col("backend") == "sim") | (pl.col("gpu_count") == 0)
        out = out.with_columns(pl.when(unknown).then(None).otherwise(pl.col("gpu_count")).alias("gpu_count"))
    return out


def table_counts(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Rows per store table (identifiers from the fixed allow-list above)."""
    present = set(query(con, "SELECT table_name FROM information_schema.tables")["table_name"].to_list())
    parts = [f"SELECT '{t}' AS table_name, count(*) AS rows FROM {t}" for t in TABLES if t in present]
    if not parts:
        return pl.DataFrame(schema={"table_name": pl.String, "rows": pl.Int64})
    return query(con, " UNION ALL ".join(parts))
