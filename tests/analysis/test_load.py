"""Speedup vs load: ratios to the `none` cell of the same group, intervals that contain them, break-even."""

from __future__ import annotations

import polars as pl

from analysis import frames, load
from analysis.metrics import get_metric
from ingest import store


def test_speedup_is_value_over_baseline_with_an_interval(default_db):
    f = frames.Filters(gpus=("MI355X",), families=("Qwen",), workloads=("code",))
    with store.session(default_db, read_only=True) as con:
        s = load.speedup_vs_load(con, f, best_depth=False)
        cells = frames.cells(con, f)
    assert set(s["method"]) == set(cells["method"]) - {"none"}
    column = get_metric("output_throughput").value_column  # the steady-state figure the winner rule uses
    base = cells.filter(pl.col("method") == "none").select("concurrency", pl.col(column).alias("b"))
    j = s.join(base, on="concurrency")
    assert ((j["speedup"] - j["value"] / j["b"]).abs() < 1e-9).all()
    ok = s.filter(pl.col("ci_low").is_not_null())
    assert ok.height == s.height and ((ok["ci_low"] <= ok["speedup"]) & (ok["speedup"] <= ok["ci_high"])).all()


def test_best_depth_keeps_one_row_per_method_and_load(default_db):
    with store.session(default_db, read_only=True) as con:
        s = load.speedup_vs_load(con, frames.Filters(gpus=("MI300X",), families=("Gemma",)))
    assert s.group_by("family", "workload", "concurrency", "method").len()["len"].max() == 1


def test_lower_is_better_metrics_invert_the_ratio(default_db):
    f = frames.Filters(gpus=("MI300X",), families=("Kimi",), workloads=("chat",), concurrency=(1,))
    with store.session(default_db, read_only=True) as con:
        s = load.speedup_vs_load(con, f, "p99_tpot_ms", best_depth=False)
    assert ((s["speedup"] - s["baseline"] / s["value"]).abs() < 1e-9).all()


def test_break_even_is_the_first_losing_load():
    s = pl.DataFrame({"gpu": ["g"] * 3, "family": ["f"] * 3, "workload": ["w"] * 3, "method": ["m"] * 3,
                      "concurrency": [1, 16, 64], "speedup": [1.5, 0.95, 0.8]})
    assert load.break_even(s)["stops_paying_at"].to_list() == [16]
    assert load.break_even(s.with_columns(pl.lit(1.2).alias("speedup")))["stops_paying_at"].to_list() == [None]
