"""Drill-down of one group: every candidate ranked with intervals, positions, request samples."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from analysis import drilldown, frames, winners
from ingest import store

G = drilldown.Group("MI355X", "Kimi", "reasoning", 16)


def independent_throughput(db, g: drilldown.Group) -> pl.DataFrame:
    """Each cell of the group: throughput from its requests and its interval from its replicates, in SQL."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql("""
            WITH c AS (SELECT run_id, cell_id, window_s FROM cells
                       WHERE gpu = ? AND family = ? AND workload = ? AND concurrency = ? AND status = 'ok'),
                 v AS (SELECT c.cell_id, sum(r.output_tokens) / any_value(c.window_s) AS value
                       FROM c JOIN requests r USING (run_id, cell_id) WHERE coalesce(r.ok, true) GROUP BY c.cell_id),
                 b AS (SELECT c.cell_id, quantile_cont(bs.steady_output_throughput, 0.025) AS ci_low,
                              quantile_cont(bs.steady_output_throughput, 0.975) AS ci_high
                       FROM c JOIN cell_bootstrap bs USING (run_id, cell_id) GROUP BY c.cell_id)
            SELECT * FROM v JOIN b USING (cell_id) ORDER BY value DESC""",
            params=[g.gpu, g.family, g.workload, g.concurrency]).pl()
    finally:
        con.close()


def test_candidates_are_ranked_and_agree_with_winners(default_db):
    with store.session(default_db, read_only=True) as con:
        ranked = drilldown.candidates(con, G, "output_throughput")
        doc = winners.winners(con, "output_throughput", G.filters())
        samples = drilldown.latency_summary(con, ranked)
        pos = drilldown.positions(con, G)
    assert ranked["rank"].to_list() == list(range(1, ranked.height + 1))
    # recomputed from the raw rows: the whole-window figure Σ output tokens of successful requests / window per
    # cell, and the steady figure's replicate quantiles (linear, as numpy) — not the headline values drill-down
    # reads. The ranking itself is by the steady figure the winner rule decides on (docs/metrics.md).
    want = independent_throughput(default_db, G)
    assert ranked["value"].to_list() == sorted(ranked["value"].to_list(), reverse=True)
    assert set(ranked["cell_id"]) == set(want["cell_id"])
    by_id = {r["cell_id"]: r for r in want.iter_rows(named=True)}
    for r in ranked.iter_rows(named=True):
        assert r["output_throughput"] == pytest.approx(by_id[r["cell_id"]]["value"], rel=1e-9)
        assert r["ci_low"] == pytest.approx(by_id[r["cell_id"]]["ci_low"], rel=1e-9)
        assert r["ci_high"] == pytest.approx(by_id[r["cell_id"]]["ci_high"], rel=1e-9)
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    w = doc["cells"][0]["winner"]
    assert (ranked["method"][0], ranked["depth"][0]) == (w["method"], w["depth"])
    assert set(samples["candidate"]) >= {"none"} and samples["candidate"].n_unique() == 4
    none_e2e = samples.filter((pl.col("candidate") == "none") & (pl.col("latency") == "e2e_ms")
                              & (pl.col("part") == "box"))
    assert none_e2e["n"].to_list() == [ranked.filter(pl.col("method") == "none")["n_requests"][0]]
    assert set(pos["method"]) == set(ranked["method"]) - {"none"}


def test_lower_is_better_ranks_ascending(default_db):
    with store.session(default_db, read_only=True) as con:
        ranked = drilldown.candidates(con, G, "p99_e2e_ms", frames.Filters(methods=("none", "mtp")))
    assert set(ranked["method"]) == {"none", "mtp"}
    assert ranked["value"].to_list() == sorted(ranked["value"].to_list())
