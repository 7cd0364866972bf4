"""Storing a read traffic trace with its provenance: one trace per file hash, written once, atomically.

Owns the trace id (the first 16 hex digits of the file's sha256, so the same bytes uploaded twice —
under any name — are one trace) and the JSON kept with it: the workload mix (``unknown`` included) and
how workloads were assigned (given by the file or the per-file choice, classified from prompt text,
unknown). Prompt text is not stored (the ``trace_requests`` table has no column for it); workloads are
assigned before storing so nothing is lost. Writing goes through :func:`ingest.store.write_trace`
(one transaction), so bad input — which fails while reading, before this module runs — writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl

from ingest import store
from ingest.traces import TraceFrame
from ingest.traces.csvread import read_header
from ingest.traces.limits import DEFAULT_LIMITS
from ingest.traces.schema import UNKNOWN_WORKLOAD
from ingest.traces.source import open_source

ID_CHARS = 16


def trace_id_for(file_hash: str) -> str:
    return file_hash[:ID_CHARS]


def workload_mix(frame: pl.DataFrame) -> dict[str, float]:
    n = frame.height
    if n == 0:
        return {}
    rows = (frame.select(pl.col("workload").fill_null(UNKNOWN_WORKLOAD)).group_by("workload").len()
            .sort(["len", "workload"], descending=[True, False]).rows())
    return {w: round(c / n, 6) for w, c in rows}


def store_trace(con: duckdb.DuckDBPyConnection, tf: TraceFrame, *, assignment: dict[str, int],
                source_path: str | None = None, name: str | None = None) -> tuple[str, bool]:
    """Write ``tf`` (workloads already assigned) unless its file is stored already. Returns (trace_id, new)."""
    trace_id = trace_id_for(tf.file_hash)
    new = store.write_trace(
        con, trace_id=trace_id, name=name or tf.name, fmt=tf.format, file_hash=tf.file_hash,
        source_path=source_path or "", frame=tf.frame, workload_mix=workload_mix(tf.frame),
        workload_assignment=json.dumps(assignment, sort_keys=True),
    )
    return trace_id, new


def peek_columns(path: str | Path) -> list[str]:
    """Column names (CSV header, first JSONL record's keys, Parquet schema) for a mapping form.

    The file goes through the readers' safety pre-scan first (size caps, binary junk, encodings), so a
    hostile upload fails here with the same one-line InputError as when it is read.
    """
    with open_source(path, DEFAULT_LIMITS) as src:
        if src.is_parquet:
            try:
                return pl.scan_parquet(src.data_path, glob=False).collect_schema().names()
            except (pl.exceptions.PolarsError, OSError):
                raise src.fail(0, "not a readable Parquet file") from None
        text = src.head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
        if text.startswith("{"):
            try:
                first = json.loads(text.splitlines()[0])
            except ValueError:
                raise src.fail(1, "first line is not a JSON object; expected JSONL") from None
            return [str(k) for k in first] if isinstance(first, dict) else []
        return read_header(src).names
