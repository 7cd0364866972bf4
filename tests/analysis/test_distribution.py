"""Latency distributions are summarised in DuckDB: the box statistics and binned outliers agree with numpy on
the raw request rows, and the frame's size does not grow with the requests."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest

from analysis import distribution, drilldown
from ingest import store

G = drilldown.Group("MI355X", "Kimi", "reasoning", 16)


def raw(db, run_id: str, cell_id: str, column: str) -> np.ndarray:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(f"SELECT {column} FROM requests WHERE run_id = ? AND cell_id = ? AND coalesce(ok, true) "
                           f"AND {column} IS NOT NULL", [run_id, cell_id]).fetchall()
    finally:
        con.close()
    return np.array([r[0] for r in rows], dtype=float)


def test_box_statistics_and_outliers_match_the_raw_rows(default_db):
    with store.session(default_db, read_only=True) as con:
        ranked = drilldown.candidates(con, G, "output_throughput")
        dist = drilldown.latency_summary(con, ranked)
    picks = pl.concat([ranked.filter(pl.col("method") != "none").head(3), ranked.filter(pl.col("method") == "none")])
    assert dist.filter(pl.col("part") == "box").height == picks.height * len(distribution.LATENCY_COLUMNS)
    for r in picks.iter_rows(named=True):
        label = drilldown.candidate_label(r["method"], r["depth"])
        for col in distribution.LATENCY_COLUMNS:
            v = raw(default_db, r["run_id"], r["cell_id"], col)
            mine = dist.filter((pl.col("candidate") == label) & (pl.col("latency") == col))
            box = mine.filter(pl.col("part") == "box").to_dicts()[0]
            q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
            assert (box["n"], box["q1"], box["median"], box["q3"]) == (len(v), pytest.approx(q1), pytest.approx(med),
                                                                       pytest.approx(q3))
            inside = v[(v >= q1 - 1.5 * (q3 - q1)) & (v <= q3 + 1.5 * (q3 - q1))]
            assert (box["whisker_low"], box["whisker_high"]) == (pytest.approx(inside.min()),
                                                                  pytest.approx(inside.max()))
            bins = mine.filter(pl.col("part") == "outliers")
            assert box["n_outliers"] == len(v) - len(inside) == int(bins["count"].sum() or 0)
            assert bins.height <= distribution.OUTLIER_BINS
            if bins.height:
                assert v.min() <= bins["value"].min() and bins["value"].max() <= v.max()
    assert dist["candidate"].unique(maintain_order=True).to_list()[-1] == "none"


def test_no_candidates_give_an_empty_frame_with_the_schema(default_db):
    with store.session(default_db, read_only=True) as con:
        out = distribution.latency_distribution(con, pl.DataFrame(schema={
            "run_id": pl.String, "cell_id": pl.String, "candidate": pl.String, "method": pl.String}))
    assert out.height == 0 and dict(out.schema) == distribution.SCHEMA
