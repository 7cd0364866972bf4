"""Stored traces, read back for re-scoring and for the dashboard's list (read-only, bound parameters).

Owns the lookup of a trace by id or unique id prefix (at least 6 hex digits) and the list of stored
traces with their provenance (name, format, file hash, requests, workload mix, how workloads were
assigned, when). The requests come back in ingest.traces' schema (no prompt text: it is not stored).
"""

from __future__ import annotations

import json
import re

import duckdb
import polars as pl

from ingest.errors import UsageError
from ingest.sql import frame as query

TRACE_ID = re.compile(r"^[0-9a-f]{6,64}$")
COLUMNS = ("request_index", "timestamp_s", "input_tokens", "output_tokens", "workload", "shard",
           "drafted_tokens", "accepted_tokens")


def looks_like_id(text: str) -> bool:
    return bool(TRACE_ID.match(text.strip().lower()))


def list_traces(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per stored trace, newest first."""
    return query(con, """
        SELECT trace_id, name, format, file_hash, requests, workload_mix, workload_assignment, created_at
        FROM traces ORDER BY created_at DESC, trace_id
    """)


def resolve(con: duckdb.DuckDBPyConnection, ref: str) -> dict:
    """The stored trace's row for an id or unique id prefix; UsageError when none or several match."""
    ref = ref.strip().lower()
    if not looks_like_id(ref):
        raise UsageError(f"{ref!r} is neither a file nor a trace id (6–64 hex digits)")
    rows = query(con, "SELECT * FROM traces WHERE starts_with(trace_id, ?) OR starts_with(file_hash, ?) "
                      "ORDER BY trace_id", [ref, ref])
    if rows.height == 0:
        raise UsageError(f"no file and no stored trace with id {ref!r}")
    if rows.height > 1:
        raise UsageError(f"trace id prefix {ref!r} matches {rows.height} traces; give more digits")
    row = rows.row(0, named=True)
    for key in ("workload_mix", "workload_assignment"):
        try:
            row[key] = json.loads(row[key]) if row[key] else {}
        except (TypeError, ValueError):
            row[key] = {}
    return row


def load_trace(con: duckdb.DuckDBPyConnection, ref: str) -> tuple[pl.DataFrame, dict]:
    """(requests frame, provenance) of a stored trace."""
    row = resolve(con, ref)
    cols = ", ".join(COLUMNS)
    frame = query(con, f"SELECT {cols} FROM trace_requests WHERE trace_id = ? ORDER BY request_index",
                  [row["trace_id"]])
    meta = {"trace_id": row["trace_id"], "name": row["name"], "format": row["format"],
            "file_hash": row["file_hash"], "source": "store", "workload_assignment": row["workload_assignment"],
            "created_at": str(row["created_at"])}
    return frame, meta
