"""Load: speedup over ``none`` against concurrency per method — where speculation stops paying.

Speedup = metric(method) / metric(none) at the same GPU, family, workload and concurrency (inverted for
lower-is-better metrics, so > 1 is always better). With ``best_depth`` each method is shown at its best
depth for each load. The interval is the percentile interval of the ratio of paired bootstrap replicates
(the two cells' bootstraps are independent, so pairing by index is a valid draw of the ratio).
"""

from __future__ import annotations

from dataclasses import replace

import duckdb
import numpy as np
import polars as pl

from analysis import frames
from analysis.cellvalues import Slo, metric_values, percentile_bounds
from analysis.metrics import get_metric

# per model (and dataset where given), as analysis.winners.GROUP: a speedup is over the same model's `none`
KEY = ("gpu", "family", "model", "workload", "dataset", "concurrency")


def speedup_vs_load(con: duckdb.DuckDBPyConnection, f: frames.Filters, metric: str = "output_throughput", *,
                    best_depth: bool = True, slo: Slo | None = None) -> pl.DataFrame:
    """Rows: KEY, method, depth, value, baseline, speedup, ci_low, ci_high (speedup interval)."""
    m = get_metric(metric)
    with_none = replace(f, methods=(*f.methods, "none") if f.methods else ())
    cells, reps = metric_values(con, with_none, metric, slo)
    # speedup against load: a figure whose load is not stated has no place on that axis
    cells = cells.with_row_index("_i").filter(pl.col("concurrency").is_not_null())
    base = cells.filter(pl.col("method") == "none").select(*KEY, pl.col("value").alias("baseline"),
                                                          pl.col("_i").alias("_b"))
    spec = cells.filter(pl.col("method") != "none").join(base, on=list(KEY), how="inner", nulls_equal=True)
    if spec.height == 0:
        return pl.DataFrame(schema={**{k: cells.schema[k] for k in KEY}, "method": pl.String, "depth": pl.Int32,
                                    "value": pl.Float64, "baseline": pl.Float64, "speedup": pl.Float64,
                                    "ci_low": pl.Float64, "ci_high": pl.Float64, "backend": pl.String})
    v = spec["value"].to_numpy().astype(float)
    b = spec["baseline"].to_numpy().astype(float)
    with np.errstate(all="ignore"):
        ratio = v / b if m.higher_is_better else b / v
        if reps.size:
            rv, rb = reps[spec["_i"].to_numpy()], reps[spec["_b"].to_numpy()]
            lo, hi = percentile_bounds(rv / rb if m.higher_is_better else rb / rv)
        else:
            lo = hi = np.full(spec.height, np.nan)
    out = spec.with_columns(pl.Series("speedup", ratio), pl.Series("ci_low", lo), pl.Series("ci_high", hi))
    out = out.with_columns(pl.col("speedup", "ci_low", "ci_high").fill_nan(None))
    if best_depth:
        out = (out.sort("speedup", descending=True, nulls_last=True)
               .unique(subset=[*KEY, "method"], keep="first", maintain_order=True))
    return out.select(*KEY, "method", "depth", "value", "baseline", "speedup", "ci_low", "ci_high", "backend"
                      ).sort(*KEY, "method")


def break_even(speedups: pl.DataFrame) -> pl.DataFrame:
    """Per GPU × family × workload × method: the lowest concurrency where the speedup is no longer > 1
    (null when speculation still pays at every measured load)."""
    speedups = _with_group_columns(speedups)
    losing = speedups.filter(pl.col("speedup") <= 1.0)
    keys = ["gpu", "family", "model", "workload", "dataset", "method"]
    first = losing.group_by(keys).agg(pl.col("concurrency").min().alias("stops_paying_at"))
    return speedups.select(keys).unique().join(first, on=keys, how="left", nulls_equal=True).sort(keys)


def with_gaps(speedups: pl.DataFrame, best_depth: bool = True) -> pl.DataFrame:
    """The speedup rows plus a null-speedup row wherever a line (a method, or a method × depth) has no cell at
    a load its group measured: a chart's line then breaks there instead of drawing straight across loads with
    no data between."""
    if speedups.height == 0:
        return speedups
    given = speedups.columns
    speedups = _with_group_columns(speedups)
    group = ["gpu", "family", "model", "workload", "dataset"]
    line = [*group, "method"] + ([] if best_depth else ["depth"])
    loads = speedups.select(*group, "concurrency").unique()
    lines = speedups.select(line).unique()
    grid = lines.join(loads, on=group, how="inner", nulls_equal=True)
    keys = [*line, "concurrency"]
    out = grid.join(speedups, on=keys, how="left", nulls_equal=True)
    return out.select(given).sort(*[k for k in KEY if k in given], "method", "depth", nulls_last=True)


def _with_group_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``model``/``dataset`` as null where a frame has none (a hand-built frame, an older export): one group."""
    return frame.with_columns(pl.lit(None, pl.String).alias(k) for k in ("model", "dataset") if k not in frame.columns)
