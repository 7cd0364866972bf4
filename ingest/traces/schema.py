"""The one normalised schema every trace format becomes, and the :class:`TraceFrame` that carries it.

A row is one request. ``request_index`` is the request's 0-based position in the file's own order
(before rows are dropped or re-sorted), so a user can find it again in their file. ``timestamp_s`` is
seconds from the first kept request, or null for formats without arrival times. ``workload`` null
means "unknown" (the summary reports it so). Counts the file did not carry (prompt text only) were
estimated by :mod:`ingest.traces.tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

TRACE_SCHEMA: dict[str, pl.DataType] = {
    "request_index": pl.Int64(),
    "timestamp_s": pl.Float64(),
    "input_tokens": pl.Int32(),
    "output_tokens": pl.Int32(),
    "workload": pl.String(),
    "shard": pl.String(),
    "prompt": pl.String(),
    "drafted_tokens": pl.Int64(),
    "accepted_tokens": pl.Int64(),
}

UNKNOWN_WORKLOAD = "unknown"
SUMMARY_SHARDS_MAX = 100  # the summary lists at most this many shard names (the frame keeps them all)


def empty_trace() -> pl.DataFrame:
    """A zero-row frame with the trace schema (for callers that need the shape)."""
    return pl.DataFrame(schema=TRACE_SCHEMA)


@dataclass(slots=True)
class TraceFrame:
    """A normalised trace plus where it came from and what was left out."""

    frame: pl.DataFrame
    format: str
    file_hash: str  # sha256 of the file's bytes as given (the compressed bytes for .gz)
    name: str
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows not kept
    warnings: tuple[str, ...] = ()  # things changed on the way in (sorted rows, defaulted counts)

    def summary(self) -> dict[str, Any]:
        """Requests, workload mix, shards, duration and mean lengths, as plain JSON-able values."""
        df = self.frame
        n = df.height
        mix_rows = (
            df.select(pl.col("workload").fill_null(UNKNOWN_WORKLOAD))
            .group_by("workload")
            .len()
            .sort(["len", "workload"], descending=[True, False])
            .rows()
        )
        shards = df.get_column("shard").drop_nulls().unique().sort().to_list()
        ts = df.get_column("timestamp_s")
        duration = float(ts.max() - ts.min()) if ts.null_count() < n else None  # type: ignore[operator]
        return {
            "name": self.name,
            "format": self.format,
            "file_hash": self.file_hash,
            "requests": n,
            "workload_mix": {w: round(c / n, 6) for w, c in mix_rows} if n else {},
            "shards": shards[:SUMMARY_SHARDS_MAX],
            "shard_count": len(shards),
            "duration_s": duration,
            "mean_input_tokens": float(df.get_column("input_tokens").mean()) if n else None,  # type: ignore[arg-type]
            "mean_output_tokens": float(df.get_column("output_tokens").mean()) if n else None,  # type: ignore[arg-type]
            "has_prompts": bool(df.get_column("prompt").null_count() < n),
            "has_acceptance_counters": bool(df.get_column("accepted_tokens").null_count() < n),
            "dropped": dict(self.dropped),
            "warnings": list(self.warnings),
        }
