"""ingest/storestamp.py on real DuckDB files: the stamp follows the store's content (checkpointed or still in the
WAL, through a link, with file times put back), stays put when nothing changed, and refuses special files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from ingest import storestamp


def _store(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (k INTEGER, v DOUBLE)")
    con.execute("INSERT INTO t SELECT range, range * 0.5 FROM range(5000)")
    con.close()
    return path


def _update(path: Path, value: float, *, checkpoint: bool = True) -> None:
    con = duckdb.connect(str(path))
    if not checkpoint:
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("UPDATE t SET v = ? WHERE k = 17", [value])
    con.close()


def test_reads_do_not_change_the_stamp_and_a_write_with_its_times_put_back_does(tmp_path):
    db = _store(tmp_path / "s.duckdb")
    for warm in (1.0, 2.0):  # let the file reach its working size: later updates reuse its free blocks
        _update(db, warm)
    first = storestamp.store_stamp(db)
    con = duckdb.connect(str(db), read_only=True)
    con.execute("SELECT sum(v) FROM t").fetchall()
    con.close()
    assert storestamp.store_stamp(db) == first
    st = os.stat(db)
    for value in (123.0, 124.0):  # DuckDB's file alternates between two sizes: two writes end where they began
        _update(db, value)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(db).st_size == st.st_size and storestamp.store_stamp(db) != first


def test_a_change_still_in_the_wal_beside_the_real_file_is_seen_through_a_link(tmp_path):
    db = _store(tmp_path / "real.duckdb")
    link = tmp_path / "elsewhere" / "link.duckdb"
    link.parent.mkdir()
    link.symlink_to(db)
    before = storestamp.store_stamp(link)
    _update(db, -1.0, checkpoint=False)
    assert Path(str(db) + ".wal").exists()
    after = storestamp.store_stamp(link)
    assert after != before and after is not None


def test_a_large_wal_is_stamped_by_its_ends(tmp_path):
    db = _store(tmp_path / "s.duckdb")
    wal = Path(str(db) + ".wal")
    wal.write_bytes(os.urandom(storestamp.WHOLE_WAL_BYTES + 4096))
    before = storestamp.store_stamp(db)
    with wal.open("ab") as fh:
        fh.write(b"one more commit")
    assert before is not None and storestamp.store_stamp(db) not in (None, before)


def test_no_stamp_for_a_missing_or_special_store_or_wal(tmp_path):
    assert storestamp.store_stamp(tmp_path / "missing.duckdb") is None
    fifo = tmp_path / "fifo.duckdb"
    os.mkfifo(fifo)
    assert storestamp.store_stamp(fifo) is None
    zero = tmp_path / "zero.duckdb"
    zero.symlink_to("/dev/zero")
    assert storestamp.store_stamp(zero) is None
    db = _store(tmp_path / "s.duckdb")
    os.mkfifo(str(db) + ".wal")
    assert storestamp.store_stamp(db) is None  # and nothing waited on the FIFO


def test_a_copy_of_another_store_over_it_is_seen(tmp_path):
    db, other = _store(tmp_path / "s.duckdb"), _store(tmp_path / "o.duckdb")
    _update(other, 99.0)
    st = os.stat(db)
    before = storestamp.store_stamp(db)
    shutil.copyfile(other, db)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert storestamp.store_stamp(db) != before
