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


def test_a_simulated_run_states_gpus_per_server_not_a_gpu_count_of_zero(default_db):
    with store.session(default_db, read_only=True) as con:
        runs = provenance.runs(con)
        per = sql.frame(con, "SELECT gpu, list_sort(list(DISTINCT gpu_count)) AS n FROM cells WHERE status = 'ok' "
                             "GROUP BY gpu ORDER BY gpu")
    assert runs["gpu_count"].to_list() == [None]  # the simulator ran on no GPU: not "0 GPUs"
    want = ", ".join(f"{g} ×" + "/".join(str(x) for x in n) for g, n in per.iter_rows())
    assert runs["gpus_per_server"].to_list() == [want] and "MI300X ×1/4/8" in want
