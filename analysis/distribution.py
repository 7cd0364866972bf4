"""Per-request latency distributions summarised in DuckDB: box statistics and binned outliers per candidate.

A chart of per-request latency must not carry the request rows (a cell of a big store holds tens of
thousands, and Altair refuses more than 5,000 rows): DuckDB reduces each candidate's requests to one box row
(quartiles, Tukey whiskers at 1.5 IQR clipped to the data, counts) and at most :data:`OUTLIER_BINS` rows of
outliers (requests beyond the whiskers, counted per equal-width bin of the candidate's range), for every
latency column at once. The frame's size depends on the number of candidates, never on the requests.
"""

from __future__ import annotations

import duckdb
import polars as pl

from ingest.sql import ArrowStream
from ingest.sql import frame as query

LATENCY_COLUMNS = ("ttft_ms", "tpot_ms", "e2e_ms")
OUTLIER_BINS = 40
WHISKER_IQR = 1.5

SCHEMA = {"candidate": pl.String, "method": pl.String, "latency": pl.String, "part": pl.String,
          "n": pl.Int64, "q1": pl.Float64, "median": pl.Float64, "q3": pl.Float64,
          "whisker_low": pl.Float64, "whisker_high": pl.Float64, "n_outliers": pl.Int64,
          "value": pl.Float64, "count": pl.Int64}

# One pass over the picked cells' requests (ok or unknown status); UNPIVOT drops NULL latencies (a one-token
# answer has no TPOT). part = 'box' rows carry the statistics, part = 'outliers' rows a bin centre and count.
_SQL = """
WITH req AS (
    SELECT k.candidate, k.method, q.ttft_ms, q.tpot_ms, q.e2e_ms
    FROM requests q JOIN _picks k USING (run_id, cell_id)
    WHERE coalesce(q.ok, TRUE)
), long AS (
    UNPIVOT req ON ttft_ms, tpot_ms, e2e_ms INTO NAME latency VALUE v
), stats AS (
    SELECT candidate, method, latency, count(*) AS n, min(v) AS lo, max(v) AS hi,
           quantile_cont(v, 0.25) AS q1, quantile_cont(v, 0.5) AS median, quantile_cont(v, 0.75) AS q3
    FROM long GROUP BY candidate, method, latency
), fenced AS (
    SELECT l.candidate, l.method, l.latency, l.v, s.lo, s.hi,
           l.v < s.q1 - ? * (s.q3 - s.q1) OR l.v > s.q3 + ? * (s.q3 - s.q1) AS outlier
    FROM long l JOIN stats s USING (candidate, method, latency)
), whiskers AS (
    SELECT candidate, method, latency, min(v) FILTER (WHERE NOT outlier) AS whisker_low,
           max(v) FILTER (WHERE NOT outlier) AS whisker_high, count(*) FILTER (WHERE outlier) AS n_outliers
    FROM fenced GROUP BY candidate, method, latency
), bins AS (
    SELECT candidate, method, latency,
           least(floor((v - lo) / nullif(hi - lo, 0) * ?), ? - 1) AS b, any_value(lo) AS lo, any_value(hi) AS hi,
           count(*) AS count
    FROM fenced WHERE outlier GROUP BY candidate, method, latency, b
)
SELECT s.candidate, s.method, s.latency, 'box' AS part, s.n, s.q1, s.median, s.q3, w.whisker_low,
       w.whisker_high, w.n_outliers, NULL::DOUBLE AS value, NULL::BIGINT AS count
FROM stats s JOIN whiskers w USING (candidate, method, latency)
UNION ALL
SELECT candidate, method, latency, 'outliers', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       coalesce(lo + (b + 0.5) * (hi - lo) / ?, lo), count
FROM bins
"""


def latency_distribution(con: duckdb.DuckDBPyConnection, picks: pl.DataFrame) -> pl.DataFrame:
    """Box rows and binned-outlier rows (see the module docstring) per candidate and latency column.

    ``picks``: run_id, cell_id, candidate (its label), method — one row per candidate to summarise."""
    if picks.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    con.register("_picks", ArrowStream(picks.select("run_id", "cell_id", "candidate", "method")))
    try:
        out = query(con, _SQL, [WHISKER_IQR, WHISKER_IQR, OUTLIER_BINS, OUTLIER_BINS, OUTLIER_BINS])
    finally:
        con.unregister("_picks")
    order = {c: i for i, c in enumerate(picks["candidate"].to_list())}
    out = out.cast({k: v for k, v in SCHEMA.items() if k in out.columns})
    return (out.with_columns(pl.col("candidate").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
            .sort("_o", "latency", "part", "value", nulls_last=True).drop("_o"))
