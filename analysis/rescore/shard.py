"""How a trace is split into shards: one per-request key expression per ``--shard-by`` kind.

Owns the shard kinds and their keys. Every kind is a polars expression over one request's columns in
ingest.traces' schema (``workload``, ``shard``, ``output_tokens``, ``timestamp_s``), so any reader that
groups requests — the in-memory bucketing of analysis.rescore.trace or a streaming reader that sees each
request once — gets the same shard for a request by evaluating :func:`key_expr` on it; no kind needs a
second pass or a trace-wide statistic.

* ``workload`` — the request's workload (``unknown`` when unlabelled);
* ``column`` — the trace's own shard column (tenant, endpoint …; a generic file names it with
  ``--map shard=COLUMN``), ``(none)`` where a request has none;
* ``output_length`` — coarse output-length buckets (:data:`OUTPUT_EDGES`, in tokens): short answers
  and long generations favour different depths;
* ``hour`` — hour of day counted from the trace's first request (readers store arrival times relative
  to the first request, so this is the trace's own clock, not wall-clock time); ``(no timestamps)``
  for a request without an arrival time;
* ``none`` — one shard, ``all``;
* ``auto`` — ``column`` when the trace has a shard column, else ``workload`` (resolved by the reader,
  which knows whether any request carries one).
"""

from __future__ import annotations

from itertools import pairwise

import polars as pl

SHARD_BY = ("auto", "workload", "column", "output_length", "hour", "none")
NO_SHARD = "(none)"
ALL_SHARD = "all"
NO_TIME = "(no timestamps)"
# Output-length bucket edges (tokens): < 64, 64–255, 256–1023, ≥ 1024.
OUTPUT_EDGES = (64, 256, 1024)
DESCRIPTION = {
    "workload": "the request's workload",
    "column": "the trace's shard column",
    "output_length": "output length (tokens: " + ", ".join(
        ["<64", *(f"{a}–{b - 1}" for a, b in pairwise(OUTPUT_EDGES)),
         f"≥{OUTPUT_EDGES[-1]}"]) + ")",
    "hour": "hour of day counted from the trace's first request",
    "none": "one shard for the whole trace",
}


def output_label(lo: int | None, hi: int | None) -> str:
    """The shard name of an output-length bucket [lo, hi) (None: open end)."""
    if lo is None:
        return f"output <{hi}"
    if hi is None:
        return f"output ≥{lo}"
    return f"output {lo}–{hi - 1}"


def _output_key() -> pl.Expr:
    out = pl.col("output_tokens")
    expr = pl.when(out < OUTPUT_EDGES[0]).then(pl.lit(output_label(None, OUTPUT_EDGES[0])))
    for lo, hi in pairwise([*OUTPUT_EDGES, None]):
        cond = out >= lo if hi is None else (out >= lo) & (out < hi)
        expr = expr.when(cond).then(pl.lit(output_label(lo, hi)))
    return expr.otherwise(pl.lit(output_label(None, OUTPUT_EDGES[0])))


def _hour_key() -> pl.Expr:
    hour = (pl.col("timestamp_s") // 3600).mod(24).cast(pl.Int32)
    return (pl.when(pl.col("timestamp_s").is_null()).then(pl.lit(NO_TIME))
            .otherwise(pl.format("hour {}", hour.cast(pl.String).str.zfill(2))))


def key_expr(shard_by: str) -> pl.Expr:
    """The per-request shard key of a resolved kind (not ``auto``) as a String expression."""
    if shard_by == "workload":
        return pl.col("workload").cast(pl.String)
    if shard_by == "column":
        return pl.col("shard").cast(pl.String).fill_null(NO_SHARD)
    if shard_by == "output_length":
        return _output_key()
    if shard_by == "hour":
        return _hour_key()
    if shard_by == "none":
        return pl.lit(ALL_SHARD)
    raise ValueError(f"shard_by must be one of {', '.join(SHARD_BY)} (resolved, not auto), got {shard_by!r}")


def resolve(shard_by: str, has_shard_column: bool) -> str:
    """``auto`` → ``column`` when any request carries a shard, else ``workload``; other kinds unchanged."""
    if shard_by not in SHARD_BY:
        raise ValueError(f"shard_by must be one of {', '.join(SHARD_BY)}, got {shard_by!r}")
    if shard_by == "auto":
        return "column" if has_shard_column else "workload"
    return shard_by


def warnings(shard_by: str, has_time: bool, has_shard_column: bool) -> list[str]:
    """What the chosen sharding could not do on this trace."""
    if shard_by == "hour" and not has_time:
        return [f"shard by hour: the trace has no timestamps, so every request is in one shard {NO_TIME!r}"]
    if shard_by == "column" and not has_shard_column:
        return [f"shard by column: no request carries a shard (tenant/endpoint) column, so every request is in "
                f"one shard {NO_SHARD!r}; a generic file names its column with --map shard=COLUMN"]
    return []
