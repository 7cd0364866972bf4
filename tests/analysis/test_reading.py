"""Opening the store for a read and checking dimension values against it (analysis/reading.py)."""

from __future__ import annotations

import pytest

from analysis.reading import checked, open_store
from ingest.errors import UsageError


def test_an_explicit_store_must_exist_and_is_never_created(tmp_path):
    missing = tmp_path / "none.duckdb"
    with pytest.raises(UsageError, match="no such store"):
        open_store(missing)
    assert not missing.exists()


def test_an_existing_store_opens_read_only(default_db):
    with open_store(default_db) as con:
        assert con.execute("SELECT count(*) FROM cells").fetchall()[0][0] > 0
        with pytest.raises(Exception, match="read-only"):
            con.execute("CREATE TABLE x (a INTEGER)")


def test_values_are_checked_case_fixed_with_a_note_and_unknown_ones_refused(default_db, capsys):
    with open_store(default_db) as con:
        dims = checked(con, family="qwen", gpu=[])
        assert dims["family"] == ("Qwen",) and dims["gpu"] == ()
        assert "Qwen" in capsys.readouterr().err
        with pytest.raises(UsageError, match="did you mean"):
            checked(con, family="Qwenn")
