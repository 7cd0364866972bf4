"""Drill-down of one group: every candidate ranked with intervals, positions, request samples."""

from __future__ import annotations

import polars as pl

from analysis import drilldown, frames, winners
from ingest import store

G = drilldown.Group("MI355X", "Kimi", "reasoning", 16)


def test_candidates_are_ranked_and_agree_with_winners(default_db):
    with store.session(default_db, read_only=True) as con:
        ranked = drilldown.candidates(con, G, "output_throughput")
        doc = winners.winners(con, "output_throughput", G.filters())
        samples = drilldown.latency_samples(con, ranked)
        pos = drilldown.positions(con, G)
    assert ranked["rank"].to_list() == list(range(1, ranked.height + 1))
    assert ranked["value"].to_list() == sorted(ranked["value"].to_list(), reverse=True)
    w = doc["cells"][0]["winner"]
    assert (ranked["method"][0], ranked["depth"][0]) == (w["method"], w["depth"])
    assert set(samples["candidate"]) >= {"none"} and samples["candidate"].n_unique() == 4
    assert samples.filter(pl.col("candidate") == "none").height == ranked.filter(
        pl.col("method") == "none")["n_requests"][0]
    assert set(pos["method"]) == set(ranked["method"]) - {"none"}


def test_lower_is_better_ranks_ascending(default_db):
    with store.session(default_db, read_only=True) as con:
        ranked = drilldown.candidates(con, G, "p99_e2e_ms", frames.Filters(methods=("none", "mtp")))
    assert set(ranked["method"]) == {"none", "mtp"}
    assert ranked["value"].to_list() == sorted(ranked["value"].to_list())
