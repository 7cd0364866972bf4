"""Kept answers never outlive their data (analysis/derived_read.py: the derived rows carry the data stamp of the
store's content): a change of the store's content is seen when its mtime is put back, when it is read through a
link while its WAL sits beside the real file, and when two writes land within one second on a file system with
one-second times. Changes are made with DuckDB itself, outside spectune (no refresh follows them). Real stores,
real subprocesses; the live answer is computed in this process by the same function the refresh uses."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from analysis import derived, derived_read
from ingest import store
from tests.analysis.test_derived import heavy, probe


@pytest.fixture
def kept_store(default_db: Path, tmp_path: Path) -> Path:
    """A copy of the default store with its derived data current."""
    path = tmp_path / "store.duckdb"
    shutil.copy(default_db, path)
    derived.refresh_store(path)
    return path


def _winners(db: Path) -> tuple[dict, str]:
    """(document, heavy modules imported) of a fresh ``winners --json``."""
    res = probe(db, "winners", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), heavy(res)


def _live(db: Path) -> dict:
    with store.session(db, read_only=True) as con:
        return json.loads(json.dumps(derived.winners_document(con)))


def _scale(db: Path, factor: float, *, checkpoint: bool = True) -> None:
    """Change the store's numbers in place (same size on disk); without ``checkpoint`` the change stays in the WAL."""
    con = duckdb.connect(str(db))
    if not checkpoint:
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("UPDATE cells SET steady_output_throughput = steady_output_throughput * ? "
                "WHERE family = 'Qwen' AND method = 'dspark'", [factor])
    con.close()


def _values(doc: dict) -> list[float]:
    return [c["winner"]["value"] for c in doc["cells"]]


def test_a_change_in_place_with_its_mtime_put_back_is_seen(kept_store):
    for factor in (0.2, 5.0, 0.2, 5.0):  # earlier writes leave freed blocks: the next change keeps the file's size
        _scale(kept_store, factor)
    derived.refresh_store(kept_store)
    before = os.stat(kept_store)
    kept, loaded = _winners(kept_store)
    assert loaded == ""  # the kept answer
    _scale(kept_store, 0.2)
    os.utime(kept_store, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(kept_store)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    answer, loaded = _winners(kept_store)
    assert loaded == "numpy,polars"  # not current any more: computed
    assert answer == _live(kept_store) and _values(answer) != _values(kept)


def test_a_store_read_through_a_link_sees_the_wal_beside_the_real_file(kept_store, tmp_path):
    elsewhere = tmp_path / "view"
    elsewhere.mkdir()
    link = elsewhere / "store.duckdb"
    link.symlink_to(kept_store)
    kept, loaded = _winners(link)
    assert loaded == ""
    _scale(kept_store, 3.0, checkpoint=False)  # written through the real path: its WAL is beside the real file
    assert Path(str(kept_store) + ".wal").exists() and not Path(str(link) + ".wal").exists()
    answer, _ = _winners(link)
    assert answer == _live(link) and _values(answer) != _values(kept)


def test_two_writes_within_one_second_are_both_seen(kept_store):
    second = (int(os.stat(kept_store).st_mtime) - 60) * 10**9  # a whole second, as a 1-second file system keeps it
    os.utime(kept_store, ns=(second, second))
    answers = [_winners(kept_store)[0]]
    for factor in (2.0, 1.5):  # dspark ahead, then further ahead: each write changes the winning values
        _scale(kept_store, factor)
        os.utime(kept_store, ns=(second, second))  # both writes fall in the same second of mtime
        answers.append(_winners(kept_store)[0])
        assert answers[-1] == _live(kept_store)
    assert len({json.dumps(_values(a)) for a in answers}) == 3


def test_a_store_of_another_schema_version_or_a_held_lock_is_not_read(kept_store):
    assert derived_read.kept_winners(kept_store) is not None
    con = duckdb.connect(str(kept_store))  # a writer holds the store: the live path waits for it, says so
    try:
        assert derived_read.kept_winners(kept_store) is None
    finally:
        con.close()
    with store.session(kept_store) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    assert derived_read.kept_winners(kept_store) is None  # the live path refuses it with its own message
