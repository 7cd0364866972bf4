"""A trace reduced to what re-scoring needs: request counts per shard × time × workload × length bucket.

Owns the one pass over the requests. Re-scoring never loops over requests in Python: the trace (a
polars frame or lazy frame in ingest.traces' schema, or a stored trace) is grouped once into
``shard × time bucket × workload × output-length bucket`` rows carrying the request count and the
output/input token sums, plus per-workload sums of observed speculative-decoding counters. Everything
downstream scores those rows, so the cost depends on the number of buckets, not of requests.

* output-length buckets are half-octaves (``floor(2·log2 L)``: 1, 2, 3, 4, 6, 8, 11, 16 … tokens);
* time buckets are ``max(10 s, duration / 1000)`` wide (the whole duration when shorter than 10 s), so a
  one-week trace has ~1000 buckets; a trace without timestamps (or all at one instant) has one bucket
  and no arrival rate;
* shards: a per-request key of analysis.rescore.shard (``auto``: the trace's shard column when it has
  one, else the workload; or output-length bucket, hour of day, none); the 20 busiest shards are kept
  and the rest pooled as ``(other)``; requests without a workload are ``unknown``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.rescore import shard as shard_keys
from analysis.rescore.shard import ALL_SHARD, NO_SHARD, SHARD_BY  # noqa: F401 (re-exported names)

UNKNOWN = "unknown"
OTHER_SHARD = "(other)"
MAX_SHARDS = 20
MIN_BUCKET_S = 10.0
MAX_TIME_BUCKETS = 1000
NEEDED = ("timestamp_s", "input_tokens", "output_tokens", "workload", "shard", "drafted_tokens", "accepted_tokens")


@dataclass(slots=True)
class TraceBuckets:
    """The grouped trace. ``rows``: shard, t, workload, lb, n, out_sum, in_sum (one row per non-empty bucket)."""

    rows: pl.DataFrame
    requests: int
    shards: list[str]  # busiest first
    shard_by: str  # a resolved analysis.rescore.shard kind: workload | column | output_length | hour | none
    has_time: bool
    duration_s: float | None
    bucket_s: float
    bucket_len: np.ndarray  # seconds each time bucket covers (the last one may be shorter)
    counters: pl.DataFrame  # workload, requests, drafted, accepted (requests that carried counters)

    def shard_rows(self, shard: str) -> pl.DataFrame:
        return self.rows.filter(pl.col("shard") == shard)

    def workload_mix(self, shard: str | None = None) -> dict[str, float]:
        rows = self.rows if shard is None else self.shard_rows(shard)
        agg = rows.group_by("workload").agg(pl.col("n").sum()).sort(["n", "workload"], descending=[True, False])
        total = float(agg["n"].sum()) or 1.0
        return {w: round(n / total, 6) for w, n in agg.iter_rows()}

    def summary(self) -> dict:
        shards = []
        per = self.rows.group_by("shard").agg(pl.col("n").sum())
        counts = dict(per.iter_rows())
        span = float(self.bucket_len.sum()) if self.has_time else None
        for s in self.shards:
            n = int(counts.get(s, 0))
            shards.append({"shard": s, "requests": n, "share": round(n / self.requests, 6),
                           "workload_mix": self.workload_mix(s),
                           "arrival_rate_rps": round(n / span, 6) if span else None})
        return {"requests": self.requests, "workload_mix": self.workload_mix(), "shards": shards,
                "shard_by": self.shard_by, "has_timestamps": self.has_time, "duration_s": self.duration_s}


def length_bucket(expr: pl.Expr) -> pl.Expr:
    """Half-octave bucket of a token count (≥ 1)."""
    return (pl.max_horizontal(expr, pl.lit(1)).cast(pl.Float64).log(2) * 2).floor().cast(pl.Int16)


def bucket_bounds(lb: int) -> tuple[float, float]:
    """[lo, hi) token range of a half-octave bucket."""
    return 2.0 ** (lb / 2), 2.0 ** ((lb + 1) / 2)


def bucketize(trace: pl.DataFrame | pl.LazyFrame, shard_by: str = "auto") -> TraceBuckets:
    """Group a trace (ingest.traces schema; extra columns ignored) into re-scoring buckets."""
    if shard_by not in SHARD_BY:
        raise ValueError(f"shard_by must be one of {', '.join(SHARD_BY)}, got {shard_by!r}")
    lf = trace.lazy() if isinstance(trace, pl.DataFrame) else trace
    have = set(lf.collect_schema().names())
    missing = {"input_tokens", "output_tokens"} - have
    if missing:
        raise ValueError(f"trace lacks columns {sorted(missing)}")
    lf = lf.select([pl.col(c) if c in have else pl.lit(None).alias(c) for c in NEEDED]).with_columns(
        pl.col("workload").cast(pl.String).fill_null(UNKNOWN), pl.col("shard").cast(pl.String),
        pl.col("timestamp_s").cast(pl.Float64),
    )
    stats = lf.select(
        pl.len().alias("n"), pl.col("timestamp_s").null_count().alias("ts_null"),
        pl.col("timestamp_s").min().alias("t0"), pl.col("timestamp_s").max().alias("t1"),
        pl.col("shard").is_not_null().any().alias("has_shard"),
    ).collect().row(0, named=True)
    n = int(stats["n"])
    if n == 0:
        raise ValueError("trace has no requests")
    shard_by = shard_keys.resolve(shard_by, bool(stats["has_shard"]))
    duration = float(stats["t1"] - stats["t0"]) if stats["ts_null"] == 0 else None
    has_time = duration is not None and duration > 0 and n >= 2
    bucket_s = max(min(MIN_BUCKET_S, duration), duration / MAX_TIME_BUCKETS) if has_time else 1.0
    n_buckets = max(1, math.ceil(duration / bucket_s - 1e-9)) if has_time else 1
    t_expr = (((pl.col("timestamp_s") - stats["t0"]) / bucket_s).floor().cast(pl.Int32).clip(0, n_buckets - 1)
              if has_time else pl.lit(0, pl.Int32))
    lf = lf.with_columns(shard_keys.key_expr(shard_by).alias("shard"), t_expr.alias("t"),
                         length_bucket(pl.col("output_tokens")).alias("lb"))
    rows = lf.group_by(["shard", "t", "workload", "lb"]).agg(
        pl.len().alias("n"), pl.col("output_tokens").cast(pl.Int64).sum().alias("out_sum"),
        pl.col("input_tokens").cast(pl.Int64).sum().alias("in_sum"),
    )
    counters = lf.filter(pl.col("drafted_tokens").is_not_null() & pl.col("accepted_tokens").is_not_null()).group_by(
        "workload").agg(pl.len().alias("requests"), pl.col("drafted_tokens").cast(pl.Int64).sum().alias("drafted"),
                        pl.col("accepted_tokens").cast(pl.Int64).sum().alias("accepted"))
    rows, counters = pl.collect_all([rows, counters])
    rows, shards = _cap_shards(rows)
    lengths = np.full(n_buckets, bucket_s)
    if has_time:
        lengths[-1] = duration - (n_buckets - 1) * bucket_s  # the last bucket ends with the trace
    return TraceBuckets(rows=rows.sort(["shard", "t", "workload", "lb"]), requests=n, shards=shards,
                        shard_by=shard_by, has_time=has_time, duration_s=duration, bucket_s=bucket_s,
                        bucket_len=lengths, counters=counters.sort("workload"))


def _cap_shards(rows: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    per = rows.group_by("shard").agg(pl.col("n").sum()).sort(["n", "shard"], descending=[True, False])
    names = per["shard"].to_list()
    if len(names) <= MAX_SHARDS:
        return rows, names
    keep = names[: MAX_SHARDS - 1]
    rows = rows.with_columns(pl.when(pl.col("shard").is_in(keep)).then(pl.col("shard"))
                             .otherwise(pl.lit(OTHER_SHARD)).alias("shard"))
    rows = rows.group_by(["shard", "t", "workload", "lb"]).agg(pl.col("n", "out_sum", "in_sum").sum())
    return rows, [*keep, OTHER_SHARD]


def time_profile(buckets: TraceBuckets, shard: str | None = None) -> pl.DataFrame:
    """Arrival rate per time bucket (requests/s), for charts: t_start_s, requests, rate_rps."""
    rows = buckets.rows if shard is None else buckets.shard_rows(shard)
    per = rows.group_by("t").agg(pl.col("n").sum()).sort("t")
    t = per["t"].to_numpy()
    return pl.DataFrame({"t_start_s": t * buckets.bucket_s, "requests": per["n"],
                         "rate_rps": per["n"].to_numpy() / buckets.bucket_len[t]})


def describe_bucket(lb: int) -> str:
    lo, hi = bucket_bounds(lb)
    return f"{math.ceil(lo)}–{math.ceil(hi) - 1}"
