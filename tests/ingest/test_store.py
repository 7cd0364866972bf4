"""The store: schema, version refusal, idempotent and atomic cell writes through the Arrow path."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import sqlalchemy
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateTable

from ingest import schema, sql, store
from ingest.records import CellKey, RunInfo, SpecCounters
from tests.conftest import cli


def _requests(n: int = 50, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    ttft = rng.uniform(20, 80, n)
    out = rng.integers(20, 200, n)
    e2e = ttft + out * rng.uniform(8, 12, n)
    return pl.DataFrame({
        "request_index": np.arange(n), "input_tokens": rng.integers(100, 900, n), "output_tokens": out,
        "ttft_ms": ttft, "tpot_ms": (e2e - ttft) / (out - 1), "e2e_ms": e2e, "start_s": np.arange(n) * 0.1,
        "drafted_tokens": out * 3, "accepted_tokens": out * 2,
    })


KEY = CellKey("eagle3", 3, "Qwen", "Qwen/Qwen3.5-397B-A17B", "code", "MI355X", 16)


def _counts(con) -> dict[str, int]:
    return {t: sql.one(con, f"SELECT count(*) FROM {t}")[0]
            for t in ("runs", "cells", "positions", "requests", "cell_bootstrap")}


def test_write_cell_is_idempotent(tmp_path):
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="sim", source="test"))
        counters = SpecCounters(drafts=100, draft_tokens=300, accepted_tokens=180, accepted_per_pos=[80, 60, 40])
        assert store.write_cell(con, "r1", KEY, _requests(), window_s=10.0, gpu_count=2, counters=counters)
        before = _counts(con)
        assert not store.write_cell(con, "r1", KEY, _requests(seed=1), window_s=11.0, gpu_count=2, counters=counters)
        assert not store.write_run(con, RunInfo(run_id="r1", backend="sim", source="again"))
        assert _counts(con) == before
        assert before == {"runs": 1, "cells": 1, "positions": 3, "requests": 50, "cell_bootstrap": 200}
        row = sql.one(con, "SELECT acceptance_rate, acceptance_length, output_throughput_per_gpu FROM cells")
        assert row[0] == pytest.approx(180 / 300)
        assert row[1] == pytest.approx(1 + 180 / 100)
        assert row[2] == pytest.approx(_requests()["output_tokens"].sum() / 10.0 / 2)


def test_a_failing_write_lands_nothing(tmp_path, monkeypatch):
    real_insert = store._insert

    def failing_insert(con, table, frame):
        if table == "requests":
            raise RuntimeError("disk full (injected)")
        real_insert(con, table, frame)

    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="sim", source="test"))
        monkeypatch.setattr(store, "_insert", failing_insert)
        with pytest.raises(RuntimeError):
            store.write_cell(con, "r1", KEY, _requests(), window_s=10.0, gpu_count=2)
        monkeypatch.setattr(store, "_insert", real_insert)
        assert _counts(con)["cells"] == 0 and _counts(con)["requests"] == 0
        assert store.write_cell(con, "r1", KEY, _requests(), window_s=10.0, gpu_count=2)


def test_failed_cell_then_retry_replaces_it(tmp_path):
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo(run_id="r1", backend="vllm", source="test"))
        assert store.write_failed_cell(con, "r1", KEY, "server crashed")
        assert store.cell_status(con, "r1") == {KEY.cell_id: "failed"}
        assert store.write_cell(con, "r1", KEY, _requests(), window_s=5.0, gpu_count=1, replace=True)
        assert store.cell_status(con, "r1") == {KEY.cell_id: "ok"}
        assert _counts(con)["cells"] == 1


def test_newer_schema_version_is_refused(tmp_path):
    path = tmp_path / "future.duckdb"
    with store.session(path) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(store.SchemaVersionError, match="newer than this spectune"):
        store.connect(path)
    proc = cli("analysis", "winners", "--db", str(path))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "schema version 99" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_version_1_store_gains_the_new_cell_columns_in_place(tmp_path):
    path = tmp_path / "v1.duckdb"
    with store.session(path) as con:
        store.write_cell(con, "r1", KEY, _requests(), window_s=5.0, gpu_count=1)
        for column in ("origin", "draft_model"):  # back to what v1 wrote
            con.execute(f"ALTER TABLE cells DROP COLUMN {column}")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store._ENSURED.clear()
    with store.session(path, read_only=True) as con:  # a reader migrates once, then reads
        cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_name = 'cells'").fetchall()}
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()[0][0]
        kept = con.execute("SELECT count(*), count(origin) FROM cells").fetchall()[0]
    assert {"origin", "draft_model"} <= cols and version == str(schema.SCHEMA_VERSION)
    assert kept == (1, 0)  # the old cell is kept; its NULL origin reads as measured
    with store.session(path) as con:
        store.write_cell(con, "r2", KEY, _requests(), window_s=5.0, gpu_count=1,
                         labels={"origin": "confirmed", "draft_model": "/m/d", "status": "x"})
        row = con.execute("SELECT origin, draft_model, status FROM cells WHERE run_id = 'r2'").fetchall()[0]
    assert row == ("confirmed", "/m/d", "ok")  # only label columns are taken from labels


def test_schema_is_portable_sqlalchemy():
    """The same table objects compile for other SQL databases (a team can move the store)."""
    for dialect in (sqlite.dialect(), postgresql.dialect()):
        for table in schema.metadata.sorted_tables:
            assert "CREATE TABLE" in str(CreateTable(table).compile(dialect=dialect))
    engine = sqlalchemy.create_engine("sqlite://")
    schema.metadata.create_all(engine)
    assert set(sqlalchemy.inspect(engine).get_table_names()) >= {"runs", "cells", "requests", "positions"}


def test_cell_id_is_stable_and_dimensional():
    same = CellKey("eagle3", 3, "Qwen", "Qwen/Qwen3.5-397B-A17B", "code", "MI355X", 16)
    assert same.cell_id == KEY.cell_id
    assert CellKey("eagle3", 4, "Qwen", KEY.model, "code", "MI355X", 16).cell_id != KEY.cell_id
    assert CellKey("eagle3", 3, "Qwen", KEY.model, "code", "MI355X", 64).cell_id != KEY.cell_id
    assert CellKey("none", 5, "Qwen", KEY.model, "code", "MI355X", 16).depth == 0


def test_committed_ddl_is_what_sqlalchemy_compiles():
    """ingest/ddl.py (what the store runs) is exactly the SQLAlchemy schema compiled; regenerate with
    ``python -m ingest.schema`` when this fails."""
    from ingest import ddl

    assert schema.DDL_MODULE.read_text(encoding="utf-8") == schema.render_ddl_module()
    assert list(ddl.DDL) == schema.ddl_statements()
    assert ddl.SCHEMA_VERSION == schema.SCHEMA_VERSION
    assert {t.name: tuple(schema.column_names(t)) for t in schema.metadata.tables.values()} == ddl.COLUMNS


def test_every_store_connection_has_the_progress_bar_off(tmp_path):
    """DuckDB's progress bar goes to stdout and would break a --json document."""
    path = tmp_path / "s.duckdb"
    for con in (store.connect(path), sql.quiet_connect()):
        with con:
            assert sql.one(con, "SELECT current_setting('enable_progress_bar')")[0] is False
    with store.connect(path, read_only=True) as con:
        assert sql.one(con, "SELECT current_setting('enable_progress_bar')")[0] is False


def test_a_version_3_store_upgrades_to_load_not_stated(tmp_path):
    """Schema 4: cells.concurrency nullable, dataset and source_url columns; an old import's 0 (= not stated)
    becomes NULL, a measured cell's load is kept."""
    path = tmp_path / "v3.duckdb"
    published = CellKey("mtp", 3, "Qwen", KEY.model, "code", "MI300X", 0)
    with store.session(path) as con:
        store.write_cell(con, "measured", KEY, _requests(), window_s=5.0, gpu_count=1)
        store.write_run(con, RunInfo(run_id="import-x", backend="import", source="p.csv", importer="published_csv"))
        store.write_cell(con, "import-x", published, pl.DataFrame(), window_s=None, gpu_count=0)
        for column in ("dataset", "source_url"):  # back to what v3 wrote
            con.execute(f"ALTER TABLE cells DROP COLUMN {column}")
        con.execute("ALTER TABLE cells ALTER COLUMN concurrency SET NOT NULL")
        con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    store._ENSURED.clear()
    with store.session(path, read_only=True) as con:
        got = dict(con.execute("SELECT run_id, concurrency FROM cells").fetchall())
        nullable = con.execute("SELECT is_nullable FROM duckdb_columns() WHERE table_name = 'cells' "
                               "AND column_name = 'concurrency'").fetchall()[0][0]
        cols = {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'cells'")
                .fetchall()}
    assert got == {"measured": 16, "import-x": None} and nullable
    assert {"dataset", "source_url"} <= cols


def test_dataset_and_load_not_stated_in_the_cell_id():
    assert CellKey("mtp", 3, "Qwen", KEY.model, "code", "MI300X", 16, dataset=None).cell_id == CellKey(
        "mtp", 3, "Qwen", KEY.model, "code", "MI300X", 16).cell_id  # unset dataset: every old id unchanged
    ids = {CellKey("mtp", 3, "Qwen", KEY.model, "code", "MI300X", c, dataset=d).cell_id
           for c in (None, 0, 16) for d in (None, "HumanEval", "MBPP")}
    assert len(ids) == 9


def test_a_version_6_store_upgrades_to_modes(tmp_path):
    """Schema 7: cells.mode. A store of schema 6 gets the column, filled from what its cells ran: a schedule cell
    is `schedule`, every other cell `fixed`; a new adaptive cell says `adaptive` and has its own id."""
    path = tmp_path / "v6.duckdb"
    sched = CellKey("mtp", 5, "Qwen", KEY.model, "code", "MI300X", 16, schedule=((1, 8, 5), (9, 64, 3)))
    with store.session(path) as con:
        store.write_cell(con, "r", KEY, _requests(), window_s=5.0, gpu_count=1)
        store.write_cell(con, "r", sched, _requests(), window_s=5.0, gpu_count=1)
        con.execute("ALTER TABLE cells DROP COLUMN mode")  # back to what v6 wrote
        con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    store._ENSURED.clear()
    with store.session(path, read_only=True) as con:  # a reader upgrades the store once
        got = dict(con.execute("SELECT cell_id, mode FROM cells").fetchall())
        version = sql.one(con, "SELECT value FROM meta WHERE key = 'schema_version'")[0]
    assert got == {KEY.cell_id: "fixed", sched.cell_id: "schedule"} and version == "7"
    adaptive = CellKey("dspark", 8, "Qwen", KEY.model, "code", "MI300X", 16, adaptive=True)
    fixed = CellKey("dspark", 8, "Qwen", KEY.model, "code", "MI300X", 16)
    assert adaptive.cell_id != fixed.cell_id and adaptive.server_config != fixed.server_config
    with store.session(path) as con:
        store.write_cell(con, "r", adaptive, _requests(), window_s=5.0, gpu_count=1)
        assert sql.one(con, "SELECT mode FROM cells WHERE cell_id = ?", [adaptive.cell_id])[0] == "adaptive"
