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


def test_a_line_breaks_where_a_load_has_no_cell():
    rows = {"gpu": ["A"] * 5, "family": ["F"] * 5, "workload": ["w"] * 5, "concurrency": [1, 16, 64, 1, 64],
            "method": ["mtp", "mtp", "mtp", "ngram", "ngram"], "depth": [2, 3, 3, 2, 4],
            "value": [1.0] * 5, "baseline": [1.0] * 5, "speedup": [1.2, 1.1, 0.9, 1.3, 1.0],
            "ci_low": [1.0] * 5, "ci_high": [1.5] * 5, "backend": ["sim"] * 5}
    s = pl.DataFrame(rows)
    out = load.with_gaps(s)
    assert out.height == 6 and out.columns == s.columns
    gap = out.filter((pl.col("method") == "ngram") & (pl.col("concurrency") == 16))
    assert gap.height == 1 and gap["speedup"][0] is None  # ngram has no cell at c=16: no segment 1 → 64
    assert out.filter(pl.col("speedup").is_not_null()).sort(s.columns).equals(s.sort(s.columns))
    # every depth its own line: mtp·2 has only c=1, mtp·3 only 16 and 64; ngram·2 and ngram·4 one load each
    assert load.with_gaps(s, best_depth=False).filter(pl.col("speedup").is_null()).height == 3 * 4 - 5
