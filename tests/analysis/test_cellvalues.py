"""Per-cell values with bootstrap intervals, including goodput under an SLO."""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis import frames
from analysis.cellvalues import Slo, metric_values, percentile_bounds
from ingest import store


def test_percentile_bounds_need_enough_replicates():
    reps = np.vstack([np.arange(100, dtype=float), np.r_[np.arange(5, dtype=float), np.full(95, np.nan)]])
    lo, hi = percentile_bounds(reps)
    assert 1 < lo[0] < 4 and 95 < hi[0] < 99
    assert np.isnan(lo[1]) and np.isnan(hi[1])


def test_goodput_tightens_with_the_slo(default_db):
    f = frames.Filters(gpus=("MI300X",), families=("Qwen",), workloads=("chat",), concurrency=(64,))
    with store.session(default_db, read_only=True) as con:
        loose, _ = metric_values(con, f, "goodput", Slo(600_000, 60_000))
        tight, _ = metric_values(con, f, "goodput", Slo(1.0, 0.1))
        thr, reps = metric_values(con, f, "output_throughput")
    assert (loose["value"] > 0).all() and (tight["value"] == 0).all()
    assert reps.shape == (thr.height, 200)
    assert thr.filter(pl.col("ci_low") > pl.col("value")).height == 0
