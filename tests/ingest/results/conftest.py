"""Fixtures for result-import tests: real DuckDB stores under tmp_path, the sample files, table counts."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "data" / "samples" / "results"
TABLES = ("runs", "cells", "positions", "requests", "cell_bootstrap", "published")


def counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    finally:
        con.close()


@pytest.fixture
def empty_db(tmp_path: Path) -> Path:
    from ingest import store

    path = tmp_path / "store.duckdb"
    store.connect(path).close()
    return path


@pytest.fixture
def default_copy(default_db: Path, tmp_path: Path) -> Path:
    """A writable copy of the embedded default store."""
    path = tmp_path / "default.duckdb"
    shutil.copyfile(default_db, path)
    return path
