"""Opening a store the way commands, the runner and the dashboard do: the default store is built from the embedded
data on first use and refreshed when that data changed, then ingest/store.py opens it.

This sits above the store (ingest/store.py knows nothing of the default data) and above the default data's
builder (ingest/default_data.py, which writes through the store and lands the published tables through the result
readers). A path other than the default store's is opened as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import duckdb

from ingest import default_stamp, paths, store


def is_default(path: Path) -> bool:
    """``path`` is the default store's (``$SPECTUNE_DB`` or the built-in location)."""
    return path.resolve() in (paths.default_db_path().resolve(), paths.DEFAULT_DB.resolve())


def ensure_default(path: Path, *, refresh: bool = True) -> None:
    """Build the default store at ``path`` when it is missing; refresh its default runs when the embedded data
    changed since (``refresh``). Nothing to do — the common case — costs one stat per default file."""
    if path.exists() and (not refresh or default_stamp.is_current(path)):
        return
    # Deliberately lazy: the builder lands the published tables through the result readers (ingest.results),
    # which an ordinary read of a current default store must not import (tests/test_startup.py: `winners --json`).
    from ingest import default_data

    if path.exists():
        default_data.refresh_if_stale(path)
        return
    with default_data.stderr_progress(path) as progress:
        default_data.build_default_db(path, progress=progress)


def connect(
    db: str | Path | None = None, *, read_only: bool = False, wait_s: float | None = None,
    refresh_default: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open the store (building the embedded default data on first use of the default path, and refreshing
    its default runs when that data changed since: ingest/default_data.py)."""
    path = Path(db) if db else paths.default_db_path()
    if is_default(path):
        ensure_default(path, refresh=refresh_default)
    return store.connect(path, read_only=read_only, wait_s=wait_s)


@contextlib.contextmanager
def session(db: str | Path | None = None, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived connection (as :func:`ingest.store.session`), the default store built or refreshed first."""
    path = Path(db) if db else paths.default_db_path()
    if is_default(path):
        ensure_default(path)
    with store.session(path, read_only=read_only) as con:
        yield con
