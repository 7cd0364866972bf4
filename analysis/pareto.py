"""Trade-offs: throughput against tail latency per cell, and the Pareto front of each group.

A cell is on the front when no other cell of its group (GPU × model × workload × dataset × load, across methods
and depths) has at least its throughput and at most its latency, with one of the two strictly better. The front
is per load: the load is the traffic a deployment gets, not a knob to trade (across loads, throughput and
latency both grow with concurrency and the front would mix operating points no one can choose between).
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from analysis import frames
from analysis.metrics import get_metric

FRONT_GROUP = ("gpu", "family", "model", "workload", "dataset", "concurrency")  # per model, as winners
LATENCIES = ("p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms")


def front_mask(throughput: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """True where a point is Pareto-optimal (maximise throughput, minimise latency); NaN never is."""
    x = np.asarray(throughput, dtype=float)
    y = np.asarray(latency, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    mask = np.zeros(x.size, dtype=bool)
    idx = np.flatnonzero(ok)
    # sort by throughput desc, then latency asc: a point is on the front when its latency beats every
    # latency seen so far (all of which have at least its throughput)
    order = idx[np.lexsort((y[idx], -x[idx]))]
    best = np.inf
    for i in order:
        if y[i] < best:
            mask[i] = True
            best = y[i]
    return mask


def tradeoff(con: duckdb.DuckDBPyConnection, f: frames.Filters, latency: str = "p99_e2e_ms") -> pl.DataFrame:
    """Cells with ``output_throughput``, ``latency`` (the chosen column) and ``on_front`` per group."""
    if latency not in LATENCIES:
        raise ValueError(f"unknown latency {latency!r} (expected one of {', '.join(LATENCIES)})")
    get_metric(latency)
    cells = frames.cells(con, f).select(
        "gpu", "family", "model", "workload", "dataset", "concurrency", "method", "depth", "output_throughput",
        pl.col(latency).alias("latency"), "backend", "run_id", "cell_id")
    # a figure without the latency (published point figures) has no place on a throughput-vs-latency front
    cells = cells.filter(pl.col("latency").is_not_null() & pl.col("output_throughput").is_not_null())
    if cells.height == 0:
        return cells.with_columns(pl.lit(False).alias("on_front"))
    cells = cells.with_row_index("_i")
    mask = np.zeros(cells.height, dtype=bool)
    for grp in cells.partition_by(list(FRONT_GROUP)):
        idx = grp["_i"].to_numpy()
        mask[idx] = front_mask(grp["output_throughput"].to_numpy(), grp["latency"].to_numpy())
    return cells.with_columns(pl.Series("on_front", mask)).drop("_i")
