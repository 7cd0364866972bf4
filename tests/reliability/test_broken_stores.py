"""Broken, foreign and special-file stores (ingest/store.py ``check_file``, ``_check_spectune``; ingest/errors.py
``store_failure``): ``winners``, ``ingest results`` and ``runner run`` each say one line ``error: <store>: <what is
wrong>``, exit 2, write nothing (the file's bytes and its folder unchanged) and never hang. Real files and
processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO
from tests.reliability.conftest import TINY_MATRIX, assert_clean_usage_error, run_cli

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
REQUEST_LOG = REPO / "tests" / "ingest" / "data" / "requestlog_vllm032.jsonl"  # real vLLM 0.32 responses
COMMANDS = {
    "winners": ("analysis", "winners", "--json"),
    "ingest": ("ingest", "results", str(SAMPLE), "--json"),
    "runner": ("runner", "run", "--matrix", "{matrix}", "--backend", "sim", "--json"),
    "requests": ("ingest", "requests", str(REQUEST_LOG), "--target", "gw", "--json"),
}


def _copy(template: Path, db: Path) -> None:
    shutil.copyfile(template, db)


def _zero_bytes(template: Path, db: Path) -> None:
    db.write_bytes(b"")


def _folder(template: Path, db: Path) -> None:
    db.mkdir()
    (db / "inside.txt").write_text("a folder named like a store")


def _truncated(template: Path, db: Path) -> None:
    data = template.read_bytes()
    db.write_bytes(data[: len(data) * 2 // 5])


def _noise(template: Path, db: Path) -> None:
    db.write_bytes(hashlib.shake_256(b"not a store").digest(300_000))


def _fifo(template: Path, db: Path) -> None:
    os.mkfifo(db)


def _dev_zero(template: Path, db: Path) -> None:
    db.symlink_to("/dev/zero")


def _without_cells(template: Path, db: Path) -> None:
    _copy(template, db)
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE cells")
    con.close()


def _version_word(template: Path, db: Path) -> None:
    _copy(template, db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = 'four-ish' WHERE key = 'schema_version'")
    con.close()


def _text_depth(template: Path, db: Path) -> None:
    _copy(template, db)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE cells ALTER depth TYPE VARCHAR")  # another tool rewrote the column as text
    con.close()


def _foreign(template: Path, db: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE invoices (number INTEGER, customer VARCHAR, total DECIMAL(10, 2))")
    con.execute("INSERT INTO invoices VALUES (7, 'ACME', 120.50), (8, 'Initech', 99.99)")
    con.execute("CREATE TABLE meta (k INTEGER)")  # a table named like ours, but not ours
    con.close()


def _scribbled(template: Path, db: Path) -> None:
    _copy(template, db)
    fd = os.open(db, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        for offset in range(256 * 1024, size, 128 * 1024):  # past the headers: data and metadata blocks
            os.pwrite(fd, hashlib.shake_256(str(offset).encode()).digest(8192), offset)
    finally:
        os.close(fd)


def _fifo_wal(template: Path, db: Path) -> None:
    _copy(template, db)
    os.mkfifo(str(db) + ".wal")


BROKEN: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "zero-bytes": (_zero_bytes, "empty file"),
    "folder": (_folder, "is a folder"),
    "truncated": (_truncated, ""),  # found at open or at the first read of a missing block: either way one line
    "noise": (_noise, "not a DuckDB file"),
    "fifo": (_fifo, "is a FIFO"),
    "dev-zero": (_dev_zero, "is a device"),
    "no-cells": (_without_cells, "table cells is missing"),
    "version-word": (_version_word, "schema version 'four-ish' is not a number"),
    "foreign": (_foreign, "not a spectune store"),
    "text-depth": (_text_depth, "column cells.depth is VARCHAR where spectune stores"),
    "scribbled": (_scribbled, ""),
    "fifo-wal": (_fifo_wal, "write-ahead log is a FIFO"),
}


# Damage DuckDB finds only when it reads the block: a writer that lands something first has changed the file.
DAMAGE_FOUND_LATE = frozenset({"truncated", "scribbled"})


def _snapshot(folder: Path) -> dict[str, object]:
    """Every entry of the folder: a regular file by its bytes' hash, anything else by its kind (never opened)."""
    out: dict[str, object] = {}
    for entry in sorted(folder.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISREG(mode):
            out[entry.name] = hashlib.sha256(entry.read_bytes()).hexdigest()
        elif stat.S_ISDIR(mode):
            out[entry.name] = ("dir", _snapshot(entry))
        else:
            out[entry.name] = ("special", stat.S_IFMT(mode), os.readlink(entry) if stat.S_ISLNK(mode) else None)
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_store_is_one_line_exit_2_and_nothing_written(case, command, tiny_store_template, tmp_path):
    folder = tmp_path / "stores"
    folder.mkdir()
    db = folder / "results.duckdb"
    make, said = BROKEN[case]
    make(tiny_store_template, db)
    before = _snapshot(folder)
    matrix = tmp_path / "tiny.toml"
    matrix.write_text(TINY_MATRIX)
    module, *words = (w.format(matrix=matrix) for w in COMMANDS[command])
    proc = run_cli(module, *words, "--db", str(db), timeout=120)
    line = assert_clean_usage_error(proc)
    named = f"{db}.wal" if case == "fifo-wal" else str(db)
    assert line.startswith(f"error: {named}: "), line
    assert said in line, line
    assert proc.stdout == ""
    if command == "runner" and case in DAMAGE_FOUND_LATE:
        return  # a run may land its run row before reading the damaged block (docs/reliability.md §5d)
    assert _snapshot(folder) == before


def test_a_read_only_store_refuses_a_write_in_one_line(tiny_store, tmp_path):
    before = _snapshot(tiny_store.parent)
    made = subprocess.run(["chattr", "+i", str(tiny_store)], capture_output=True, text=True, check=False)
    assert made.returncode == 0, f"chattr +i is needed to make a file read-only for root: {made.stderr}"
    try:
        proc = run_cli("ingest", "results", str(SAMPLE), "--db", str(tiny_store), timeout=120)
        line = assert_clean_usage_error(proc)
        assert line.startswith(f"error: {tiny_store}: cannot be opened for writing"), line
        # Reading a read-only store still works.
        assert run_cli("analysis", "winners", "--json", "--db", str(tiny_store), timeout=120).returncode == 0
    finally:
        subprocess.run(["chattr", "-i", str(tiny_store)], check=False)
    assert _snapshot(tiny_store.parent) == before
