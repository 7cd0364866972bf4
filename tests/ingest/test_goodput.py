"""The per-cell SLO histogram (ingest/goodput.py): goodput on the grid equals the request-row scan, exactly."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import polars as pl
import pytest

from analysis import frames
from analysis.winners import winners
from ingest import goodput, sql, store
from ingest.records import CellKey, RunInfo

KEY = CellKey("eagle3", 3, "Qwen", "Qwen/Qwen3.5-397B-A17B", "code", "MI355X", 16)
GRID = list(itertools.product(goodput.TTFT_GRID_MS, goodput.TPOT_GRID_MS))


def _scan(con, keys: pl.DataFrame, ttft: float, tpot: float) -> pl.DataFrame:
    con.register("_keys", sql.ArrowStream(keys.select("run_id", "cell_id")))
    try:
        return frames._goodput_scan(con, ttft, tpot).sort("run_id", "cell_id")
    finally:
        con.unregister("_keys")


def _keys(con) -> pl.DataFrame:
    return sql.frame(con, "SELECT run_id, cell_id FROM cells WHERE status = 'ok'")


def _edge_requests() -> pl.DataFrame:
    """Values exactly on grid points, between them, beyond the grid, failed, missing and NaN."""
    ttft = [50.0, 50.0001, 2000.0, 2000.5, 10000.0, 10001.0, None, 100.0, float("nan"), 120.0, 300.0, 1.0]
    tpot = [5.0, 50.0, 50.0, 49.999, 200.0, 1.0, 10.0, None, 10.0, float("nan"), 250.0, 0.0]
    ok = [True] * 7 + [True, True, True, True, False]
    n = len(ttft)
    return pl.DataFrame({"request_index": np.arange(n), "input_tokens": [10] * n, "output_tokens": [20] * n,
                         "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": [3000.0] * n,
                         "start_s": np.arange(n) * 0.1, "ok": ok}, strict=False)


def test_every_grid_slo_matches_the_scan_on_edge_values(tmp_path):
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="vllm", source="test"))
        store.write_cell(con, "r1", KEY, _edge_requests(), window_s=4.0, gpu_count=1)
        keys = _keys(con)
        assert sql.one(con, "SELECT sum(requests) FROM cell_slo_hist")[0] == 12
        for ttft, tpot in GRID:
            got = frames.goodput(con, keys, ttft, tpot).sort("run_id", "cell_id")
            assert got.to_dicts() == _scan(con, keys, ttft, tpot).to_dicts(), (ttft, tpot)
        # by hand: SLO 2000 / 50 is met by 50/5, 50.0001/50, 2000/50, 100/None(=0) → 4 of 12
        assert frames.goodput(con, keys, 2000.0, 50.0)["meeting"].to_list() == [4]


def test_the_default_store_answers_every_grid_slo_like_the_scan(default_db, tmp_path):
    path = tmp_path / "d.duckdb"
    shutil.copy(default_db, path)
    with store.session(path, read_only=True) as con:
        keys = _keys(con)
        hist_cells = sql.one(con, "SELECT count(DISTINCT (run_id, cell_id)) FROM cell_slo_hist")[0]
        assert hist_cells == sql.one(con, "SELECT count(*) FROM cells WHERE n_requests > 0")[0] > 1000
        for ttft, tpot in [(2000.0, 50.0), (50.0, 5.0), (10000.0, 200.0), (500.0, 25.0), (1500.0, 100.0)]:
            got = frames.goodput(con, keys, ttft, tpot).sort("run_id", "cell_id")
            assert got.to_dicts() == _scan(con, keys, ttft, tpot).to_dicts(), (ttft, tpot)
            assert got["meeting"].sum() > 0


def test_off_grid_slos_and_cells_without_a_histogram_are_scanned(tmp_path):
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="vllm", source="test"))
        store.write_cell(con, "r1", KEY, _edge_requests(), window_s=4.0, gpu_count=1)
        other = CellKey("eagle3", 2, "Qwen", "Qwen/Qwen3.5-397B-A17B", "code", "MI355X", 16)
        store.write_cell(con, "r1", other, _edge_requests(), window_s=2.0, gpu_count=1)
        con.execute("DELETE FROM cell_slo_hist WHERE cell_id = ?", [other.cell_id])  # as an old store's cell
        keys = _keys(con)
        for ttft, tpot in [(2000.0, 50.0), (1234.5, 33.3)]:
            got = frames.goodput(con, keys, ttft, tpot).sort("run_id", "cell_id")
            assert got.height == 2 and got.to_dicts() == _scan(con, keys, ttft, tpot).to_dicts()


def test_a_schema_2_store_is_backfilled_once_and_deletes_follow_cells(tmp_path):
    path = tmp_path / "v2.duckdb"
    with store.session(path) as con:
        store.write_run(con, RunInfo(run_id="r1", backend="vllm", source="test"))
        store.write_cell(con, "r1", KEY, _edge_requests(), window_s=4.0, gpu_count=1)
        expected = sql.frame(con, "SELECT * FROM cell_slo_hist ORDER BY ttft_bin, tpot_bin")
        con.execute("DROP TABLE cell_slo_hist")
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store._ENSURED.clear()
    with store.session(path, read_only=True) as con:  # a reader upgrades the store once
        assert sql.frame(con, "SELECT * FROM cell_slo_hist ORDER BY ttft_bin, tpot_bin").equals(expected)
    with store.session(path) as con:
        store.delete_cell(con, "r1", KEY.cell_id)
        assert sql.one(con, "SELECT count(*) FROM cell_slo_hist")[0] == 0


def test_goodput_winners_are_the_same_with_and_without_the_histogram(default_db, tmp_path):
    path = tmp_path / "d.duckdb"
    shutil.copy(default_db, path)
    f = frames.Filters(families=("Qwen",), concurrency=(16,))
    with store.session(path, read_only=True) as con:
        with_hist = winners(con, "goodput", f, slo_ttft_ms=2000.0, slo_tpot_ms=50.0)
    with store.session(path) as con:
        con.execute("DELETE FROM cell_slo_hist")
    with store.session(path, read_only=True) as con:
        scanned = winners(con, "goodput", f, slo_ttft_ms=2000.0, slo_tpot_ms=50.0)
    assert with_hist["cells"] and with_hist == scanned


@pytest.mark.parametrize("bad", [{"ok": None}, {"ttft_ms": None}])
def test_requests_without_ok_or_ttft_never_meet(tmp_path, bad):
    reqs = _edge_requests().with_columns(**{k: pl.lit(v, pl.Boolean if k == "ok" else pl.Float64)
                                            for k, v in bad.items()})
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="vllm", source="test"))
        store.write_cell(con, "r1", KEY, reqs, window_s=4.0, gpu_count=1)
        got = frames.goodput(con, _keys(con), 10000.0, 200.0)
        assert got["meeting"].to_list() == [0] and got["n"].to_list() == [12]
