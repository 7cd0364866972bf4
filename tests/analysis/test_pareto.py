"""Pareto fronts: the pure rule on constructed points, and fronts per group on the default store."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis import frames, pareto
from ingest import store


def test_front_keeps_only_undominated_points():
    tput = np.array([100.0, 90.0, 120.0, 80.0, 120.0, np.nan])
    lat = np.array([50.0, 40.0, 70.0, 60.0, 90.0, 10.0])
    # 3 (80, 60) is dominated by 0 (100, 50); 4 (120, 90) by 2 (120, 70); NaN is never on the front
    assert pareto.front_mask(tput, lat).tolist() == [True, True, True, False, False, False]


def test_ties_in_throughput_keep_the_lower_latency_only():
    assert pareto.front_mask(np.array([10.0, 10.0]), np.array([5.0, 6.0])).tolist() == [True, False]


def test_fronts_are_per_group_and_undominated(default_db):
    with store.session(default_db, read_only=True) as con:
        df = pareto.tradeoff(con, frames.Filters(gpus=("MI300X",)), "p99_tpot_ms")
    assert df.height > 0 and df["on_front"].any()
    loads = df.filter(pl.col("on_front")).group_by("gpu", "family", "workload").agg(pl.col("concurrency").n_unique())
    assert loads["concurrency"].min() == df["concurrency"].n_unique() > 1  # a front at every load of every group
    for grp in df.partition_by(["gpu", "family", "workload", "concurrency"]):
        front = grp.filter(grp["on_front"])
        for row in front.iter_rows(named=True):
            better = grp.filter((grp["output_throughput"] >= row["output_throughput"])
                                & (grp["latency"] <= row["latency"])
                                & ((grp["output_throughput"] > row["output_throughput"])
                                   | (grp["latency"] < row["latency"])))
            assert better.height == 0, row


def test_unknown_latency_is_refused(default_db):
    with store.session(default_db, read_only=True) as con, pytest.raises(ValueError):
        pareto.tradeoff(con, frames.Filters(), "p99_e2e_ms; DROP TABLE cells")
