"""Answers never outlive their data (ingest/storestamp.py keys the answer cache): a change of the store's content is
seen when its mtime is put back, when it is read through a link while its WAL sits beside the real file, and when
two writes land within one second on a file system with one-second times. Real stores, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb

from tests.conftest import cli

ARGS = ("winners", "--json", "--family", "Qwen")


def _winners(db: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    res = cli("analysis", *ARGS, "--db", str(db), env=env, timeout=180)
    assert res.returncode == 0, res.stderr
    return res


def _fresh(db: Path) -> dict:
    return json.loads(_winners(db, {"SPECTUNE_CACHE": "off"}).stdout)


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


def test_a_change_in_place_with_its_mtime_put_back_is_seen(store_copy, cache_env):
    before = os.stat(store_copy)
    cached = json.loads(_winners(store_copy, cache_env).stdout)
    _scale(store_copy, 0.2)
    os.utime(store_copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(store_copy)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    answer = json.loads(_winners(store_copy, cache_env).stdout)
    assert answer == _fresh(store_copy) and _values(answer) != _values(cached)


def test_a_store_read_through_a_link_sees_the_wal_beside_the_real_file(store_copy, cache_env, tmp_path):
    elsewhere = tmp_path / "view"
    elsewhere.mkdir()
    link = elsewhere / "store.duckdb"
    link.symlink_to(store_copy)
    cached = json.loads(_winners(link, cache_env).stdout)
    _scale(store_copy, 3.0, checkpoint=False)  # written through the real path: its WAL is beside the real file
    assert Path(str(store_copy) + ".wal").exists() and not Path(str(link) + ".wal").exists()
    answer = json.loads(_winners(link, cache_env).stdout)
    assert answer == _fresh(link) and _values(answer) != _values(cached)


def test_two_writes_within_one_second_are_both_seen(store_copy, cache_env):
    second = (int(os.stat(store_copy).st_mtime) - 60) * 10**9  # a whole second, as a 1-second file system keeps it
    os.utime(store_copy, ns=(second, second))
    answers = [json.loads(_winners(store_copy, cache_env).stdout)]
    for factor in (2.0, 1.5):  # dspark ahead, then further ahead: each write changes the winning values
        _scale(store_copy, factor)
        os.utime(store_copy, ns=(second, second))  # both writes fall in the same second of mtime
        answers.append(json.loads(_winners(store_copy, cache_env).stdout))
        assert answers[-1] == _fresh(store_copy)
    assert len({json.dumps(_values(a)) for a in answers}) == 3
