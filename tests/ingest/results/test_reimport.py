"""Re-importing what the store already holds adds no row, even when the file hash is new.

A run lands, is exported, and the export (and a re-written copy of it with other bytes, so a new file hash) is
imported into the same store: every cell is reported as a duplicate and no table grows. The two duplicate filters
are each checked on their own — the importer's (``land``: what it reports) and the store's
(``write_tables_bulk``: what it writes) — so neither can hide behind the other. In-process, on a real store file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ingest import sql, store
from ingest.results import read_files
from ingest.results.land import land
from ingest.results.spectune_parquet import export_runs
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix

MATRIX = """
name = "reimport"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [2, 3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 64
[load]
concurrency = [1, 4]
[run]
requests_per_cell = 10
"""
TABLES = ("cells", "requests", "positions", "cell_bootstrap")


def _counts(db: Path) -> dict[str, int]:
    with store.session(db, read_only=True) as con:
        return {t: sql.one(con, f"SELECT count(*) FROM {t}")[0] for t in TABLES}


def _landed(tmp_path: Path) -> tuple[Path, Path, int]:
    """A store holding one simulated run, and that run's export folder."""
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX)
    db = tmp_path / "s.duckdb"
    summary = run_matrix(load_matrix(matrix), RunOptions(db=db, run_id="R"))
    out = tmp_path / "export"
    with store.session(db) as con:
        export_runs(con, ["R"], out)
    return db, out, summary.cells_ok


def _import(db: Path, folder: Path) -> dict:
    with store.session(db) as con:
        (report,) = land(con, read_files([folder]))
    return report


def test_an_export_imported_into_its_own_store_adds_nothing(tmp_path: Path):
    db, out, n = _landed(tmp_path)
    before = _counts(db)
    assert n == 2 * 3 and before["cells"] == n and before["requests"] == n * 10
    report = _import(db, out)
    assert (report["rows"], report["duplicates"], report["requests"]) == (0, n, 0)
    assert _counts(db) == before
    # the same rows under a new file hash (re-written with another compression): still nothing new
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("runs", "cells", "positions", "requests"):
        pl.read_parquet(out / f"{name}.parquet").write_parquet(copy / f"{name}.parquet", compression="snappy")
    again = _import(db, copy)
    assert again["file_hash"] != report["file_hash"] and "already_imported_as" not in again
    assert (again["rows"], again["duplicates"]) == (0, n)
    assert _counts(db) == before


def test_a_partly_known_export_adds_only_its_new_cells(tmp_path: Path):
    db, out, n = _landed(tmp_path)
    cells = pl.read_parquet(out / "cells.parquet")
    gone = cells["cell_id"][0]
    with store.session(db) as con:  # the store lost one cell: the export brings back exactly that one
        for t in TABLES:
            con.execute(f"DELETE FROM {t} WHERE cell_id = ?", [gone])
    report = _import(db, out)
    assert (report["rows"], report["duplicates"]) == (1, n - 1)
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM cells WHERE cell_id = ?", [gone])[0] == 1
        assert sql.one(con, "SELECT count(*) FROM requests WHERE cell_id = ?", [gone])[0] == 10
    assert _counts(db)["cells"] == n


def test_the_store_skips_cells_it_has_on_its_own(tmp_path: Path):
    """write_tables_bulk without the importer in front: handed every table of the run again, it adds no row."""
    db, out, _n = _landed(tmp_path)
    before = _counts(db)
    tables = {name: pl.read_parquet(out / f"{name}.parquet") for name in ("runs", "cells", "positions", "requests")}
    with store.session(db) as con:
        added = store.write_tables_bulk(con, tables)
    assert added["cells"] == 0 and all(v == 0 for v in added.values())
    assert _counts(db) == before
