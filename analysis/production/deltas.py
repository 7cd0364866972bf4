"""Cumulative counters → per-interval increases, with counter resets and gaps handled as Prometheus does.

Between two consecutive samples of a target the increase is ``value − previous``. When any counter went
backwards, or ``process_start_time_seconds`` changed, the server restarted in between: the increase is
the new value itself (counted from zero since the restart — what ``rate()`` assumes), and the interval is
flagged ``reset``. An interval longer than :data:`GAP_FACTOR` × the target's median interval is flagged
``gap`` (its increase is still exact: counters are cumulative; it is just coarser). A target's first
sample only sets the baseline. Each interval carries the labels of its later sample (a relabel or config
change applies from the sample that first shows it).
"""

from __future__ import annotations

import polars as pl

COUNTERS = ("drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "prompt_tokens", "requests_ok")
GAP_FACTOR = 3.0


def _reset_expr() -> pl.Expr:
    went_back = pl.lit(False)
    for c in COUNTERS:
        went_back = went_back | (pl.col(c) < pl.col(c).shift(1).over("target")).fill_null(False)
    restarted = ((pl.col("process_start_s") != pl.col("process_start_s").shift(1).over("target"))
                 .fill_null(False))
    return went_back | restarted


def intervals(samples: pl.DataFrame) -> pl.DataFrame:
    """One row per (target, later sample): dt_s, counter increases, ``reset``, ``gap`` and the labels."""
    if samples.height == 0:
        return samples.with_columns(pl.lit(0.0).alias("dt_s"), pl.lit(False).alias("reset"),
                                    pl.lit(False).alias("gap")).clear()
    s = samples.sort("target", "ts").with_columns(_reset_expr().alias("reset"))
    prev_ts = pl.col("ts").shift(1).over("target")
    dt = (pl.col("ts") - prev_ts).dt.total_microseconds() / 1e6
    out = s.with_columns(
        dt.alias("dt_s"),
        *[pl.when(pl.col("reset")).then(pl.col(c)).otherwise(pl.col(c) - pl.col(c).shift(1).over("target"))
          .alias(c) for c in COUNTERS],
    ).filter(pl.col("dt_s").is_not_null() & (pl.col("dt_s") > 0))
    median = out.group_by("target").agg(pl.col("dt_s").median().alias("_med"))
    return (out.join(median, on="target", how="left")
            .with_columns((pl.col("dt_s") > GAP_FACTOR * pl.col("_med")).alias("gap")).drop("_med"))


def keyed_intervals(frame: pl.DataFrame, keys: list[str], resets: pl.DataFrame) -> pl.DataFrame:
    """Increases of a cumulative ``frame`` (target, ts, *keys, value column ``v``) between consecutive samples,
    using the sample-level ``resets`` (target, ts, reset) so positions and histogram buckets reset together."""
    if frame.height == 0:
        return frame
    by = ["target", *keys]
    f = frame.sort(*by, "ts").with_columns(pl.col("v").shift(1).over(by).alias("_prev"),
                                           pl.col("ts").shift(1).over(by).alias("_pts"))
    f = f.filter(pl.col("_pts").is_not_null()).join(resets.select("target", "ts", "reset"), on=["target", "ts"],
                                                     how="inner")
    return f.with_columns(pl.when(pl.col("reset") | (pl.col("v") < pl.col("_prev"))).then(pl.col("v"))
                          .otherwise(pl.col("v") - pl.col("_prev")).alias("v")).drop("_prev", "_pts")


def restarts(iv: pl.DataFrame) -> pl.DataFrame:
    """(target, ts) where a server restarted — the page's restart annotations."""
    return iv.filter(pl.col("reset")).select("target", "ts", "segment")
