"""Provenance: runs with row counts and per-table sizes, straight from the store."""

from __future__ import annotations

from analysis import provenance
from ingest import sql, store


def test_runs_and_table_counts_match_the_store(default_db):
    with store.session(default_db, read_only=True) as con:
        runs = provenance.runs(con)
        counts = dict(provenance.table_counts(con).iter_rows())
        n_req = sql.one(con, "SELECT count(*) FROM requests")[0]
    assert runs["backend"].to_list() == ["sim"]
    assert int(runs["requests"][0]) == n_req == counts["requests"]
    assert int(runs["cells"][0]) == counts["cells"]
    assert set(counts) >= {"runs", "cells", "positions", "requests", "cell_bootstrap"}
