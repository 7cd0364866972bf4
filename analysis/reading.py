"""Opening the store for a read-only answer, and checking dimension values against what it holds.

Every read-only command (winners, curve, rescore, drift, ab) opens the store the same way: an explicit store must
exist (reading never creates one), the default store is built on first use. Dimension values a user typed are
checked against the store (case fixed with a note on stderr; an unknown value is bad input).
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

from analysis.choices import resolve_values
from ingest import store
from ingest.errors import UsageError
from ingest.open_store import connect as connect_store


def open_store(db: Path | None) -> duckdb.DuckDBPyConnection:
    """Analysis only reads: an explicit --db must exist (the default store is built on first use)."""
    if db is not None and not Path(db).exists():
        raise UsageError(f"{db}: no such store")
    if db is None and store.default_db_path().exists():
        return connect_store(None, read_only=True)
    return connect_store(db, read_only=db is not None)


def checked(con, **given: list[str] | str | None) -> dict[str, tuple[str, ...]]:
    """Dimension flags checked against the store (case fixed, with a note on stderr; unknown → exit 2)."""
    values = {k: ([v] if isinstance(v, str) else list(v or [])) for k, v in given.items()}
    dims, notes = resolve_values(con, values)
    for note in notes:
        print(note, file=sys.stderr)
    return dims
