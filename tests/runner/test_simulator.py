"""The simulator backend: deterministic per cell, independent of order, and labelled simulated."""

from __future__ import annotations

import itertools

from polars.testing import assert_frame_equal

from ingest import sql, store
from ingest.records import CellKey
from runner.simulate import simulate_cell
from tests.conftest import cli

A = CellKey("dspark", 4, "Kimi", "moonshotai/Kimi-K2.5", "reasoning", "MI300X", 16)
B = CellKey("ngram", 2, "Gemma", "google/gemma-4-31B-it", "chat", "MI355X", 1)


def test_same_cell_same_samples_in_any_order():
    a1, b1 = simulate_cell(A, 120), simulate_cell(B, 120)
    b2, a2 = simulate_cell(B, 120), simulate_cell(A, 120)
    assert_frame_equal(a1.requests, a2.requests)
    assert_frame_equal(b1.requests, b2.requests)
    assert a1.counters == a2.counters and a1.window_s == a2.window_s


def test_different_cells_differ_and_counters_are_consistent():
    a = simulate_cell(A, 120)
    assert a.counters.draft_tokens == a.counters.drafts * A.depth
    assert sum(a.counters.accepted_per_pos) == a.counters.accepted_tokens
    assert a.requests["accepted_tokens"].sum() == a.counters.accepted_tokens
    # per-position acceptance r_i is non-increasing
    pos = a.counters.accepted_per_pos
    assert all(x >= y for x, y in itertools.pairwise(pos))
    assert not simulate_cell(B, 120).requests.equals(a.requests)


def test_sim_runs_are_labelled_simulated(tmp_path, small_matrix):
    db = tmp_path / "s.duckdb"
    proc = cli("runner", "run", "--matrix", str(small_matrix), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT DISTINCT backend FROM runs")[0] == "sim"
        assert "simulated" in sql.one(con, "SELECT notes FROM runs")[0]
