"""Provenance: runs with row counts and per-table sizes, straight from the store."""

from __future__ import annotations

from analysis import provenance
from ingest import sql, store


def test_runs_and_table_counts_match_the_store(default_db):
    with store.session(default_db, read_only=True) as con:
        runs = provenance.runs(con)
        counts = dict(provenance.table_counts(con).iter_rows())
        n_req = sql.one(con, "SELECT count(*) FROM requests")[0]
    # the simulated run, and the import runs of the shipped published table (cells; per-position rates)
    assert sorted(runs["backend"].to_list()) == ["import", "import", "sim"]
    assert int(runs["requests"].sum()) == n_req == counts["requests"]
    assert int(runs["cells"].sum()) == counts["cells"]
    assert set(counts) >= {"runs", "cells", "positions", "requests", "cell_bootstrap"}


def test_a_simulated_run_states_gpus_per_server_not_a_gpu_count_of_zero(default_db):
    with store.session(default_db, read_only=True) as con:
        runs = provenance.runs(con)
        per = sql.frame(con, "SELECT gpu, list_sort(list(DISTINCT c.gpu_count)) AS n FROM cells c JOIN runs "
                             "USING (run_id) WHERE status = 'ok' AND backend = 'sim' GROUP BY gpu ORDER BY gpu")
    # the simulator ran on no GPU, an imported table does not say its host's: never "0 GPUs"
    assert runs["gpu_count"].to_list() == [None, None, None]
    want = ", ".join(f"{g} ×" + "/".join(str(x) for x in n) for g, n in per.iter_rows())
    sim = runs.filter(runs["backend"] == "sim")
    assert sim["gpus_per_server"].to_list() == [want] and "MI300X ×1/4/8" in want
