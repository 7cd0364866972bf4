"""Resume: a finished run resumed adds nothing; a run killed with SIGKILL and resumed equals an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
from polars.testing import assert_frame_equal

from ingest import sql, store
from tests.conftest import REPO, cli

COMPARE = {
    "cells": "SELECT * EXCLUDE (written_at) FROM cells ORDER BY cell_id",
    "requests": "SELECT * FROM requests ORDER BY cell_id, request_index",
    "positions": "SELECT * FROM positions ORDER BY cell_id, position",
    "cell_bootstrap": "SELECT * FROM cell_bootstrap ORDER BY cell_id, replicate",
}


def _tables(db) -> dict[str, pl.DataFrame]:
    with store.session(db, read_only=True) as con:
        return {name: sql.frame(con, q) for name, q in COMPARE.items()}


def test_resume_of_a_finished_run_adds_no_rows(tmp_path, small_matrix):
    db = tmp_path / "s.duckdb"
    first = json.loads(cli("runner", "run", "--matrix", str(small_matrix), "--db", str(db), "--json").stdout)
    assert first["cells_ok"] == 2 * 2 * 4 * 2 * 2 and first["cells_failed"] == 0
    before = {k: v.height for k, v in _tables(db).items()}
    again = json.loads(cli("runner", "run", "--matrix", str(small_matrix), "--db", str(db), "--resume",
                           "--json").stdout)
    assert again["run_id"] == first["run_id"]
    assert again["cells_ok"] == 0 and again["cells_skipped"] == first["cells_ok"]
    assert {k: v.height for k, v in _tables(db).items()} == before


def _killed_run(matrix, db, after_s: float) -> int:
    """Start a run, SIGKILL it after ``after_s`` seconds, return how many cells had landed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "runner", "run", "--matrix", str(matrix), "--db", str(db),
                             "--run-id", "R", "--json"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    if not db.exists():
        return 0
    with store.session(db, read_only=True) as con:
        return sql.one(con, "SELECT count(*) FROM cells")[0]


def test_sigkill_then_resume_equals_uninterrupted(tmp_path, small_matrix):
    whole = tmp_path / "whole.duckdb"
    t0 = time.monotonic()
    assert cli("runner", "run", "--matrix", str(small_matrix), "--db", str(whole), "--run-id", "R",
               "--json").returncode == 0
    duration = time.monotonic() - t0
    expected = _tables(whole)
    total = expected["cells"].height
    # kill at several points of the run (the same run, killed repeatedly, must still converge)
    killed = tmp_path / "killed.duckdb"
    landed = [_killed_run(small_matrix, killed, duration * f) for f in (0.45, 0.6, 0.8)]
    assert any(0 < n < total for n in landed), f"no kill interrupted the run part-way: {landed} of {total}"
    resumed = cli("runner", "run", "--matrix", str(small_matrix), "--db", str(killed), "--run-id", "R",
                  "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    got = _tables(killed)
    for name in COMPARE:
        assert_frame_equal(expected[name], got[name], check_exact=True)
