"""Explore frames: metric vs depth with intervals (baseline repeated per depth) and per-position acceptance."""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis import explore, frames
from ingest import store

F = frames.Filters(gpus=("MI300X",), families=("Gemma",), workloads=("code",), concurrency=(1,))


def test_by_depth_has_intervals_around_values_and_a_flat_baseline(default_db):
    with store.session(default_db, read_only=True) as con:
        d = explore.by_depth(con, F, "acceptance_length")
        t = explore.by_depth(con, F, "output_throughput")
    spec = t.filter(~pl.col("baseline"))
    assert ((spec["ci_low"] <= spec["value"]) & (spec["value"] <= spec["ci_high"])).all()
    base = t.filter(pl.col("baseline"))
    assert sorted(base["depth"].to_list()) == sorted(spec["depth"].unique().to_list())
    assert base["value"].n_unique() == 1
    # acceptance length of the baseline is undefined (no drafts), never a made-up number
    assert d.filter(pl.col("baseline"))["value"].null_count() == d.filter(pl.col("baseline")).height


def test_positions_multiply_back_to_cumulative(default_db):
    with store.session(default_db, read_only=True) as con:
        p = explore.by_position(con, F)
    assert p.height > 0 and "none" not in set(p["method"])
    for grp in p.partition_by(["method", "depth"]):
        assert np.allclose(np.cumprod(grp["conditional"].to_numpy()), grp["acceptance"].to_numpy())
    # τ from the position profile: 1 + Σ r_i
    one = p.filter((pl.col("method") == p["method"][0]) & (pl.col("depth") == p["depth"][0]))
    assert abs(explore.expected_tau(one["conditional"].to_list()) - (1 + one["acceptance"].sum())) < 1e-9
