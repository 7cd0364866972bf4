"""Which run ``--resume`` continues: the newest run of this exact matrix file and backend — never an older one,
never a run of an edited file or of another backend — and what it says when there is none.

In-process (runner.execute's public functions on a real store file), so it runs in the mutation job too. The run
ids are chosen so that alphabetical order is the reverse of time order.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

from ingest import sql, store
from runner.execute import RunOptions, pending_cells, pending_cells_detail, resolve_run_id, run_matrix
from runner.matrix import load_matrix

MATRIX = """
name = "resume"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 64
[load]
concurrency = [1]
[run]
requests_per_cell = 12
"""


def _matrix(tmp_path: Path, text: str = MATRIX, name: str = "m.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_matrix(path)


def _run(matrix, db: Path, run_id: str) -> None:
    summary = run_matrix(matrix, RunOptions(db=db, run_id=run_id))
    assert summary.cells_ok == len(matrix.cells()) and summary.cells_failed == 0
    time.sleep(0.01)  # distinct started_at even on a coarse clock


def test_resume_continues_the_newest_of_two_runs(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    _run(m, db, "zz-older")
    _run(m, db, "aa-newer")
    assert resolve_run_id(m, RunOptions(db=db, resume=True)) == ("aa-newer", True)
    again = run_matrix(m, RunOptions(db=db, resume=True))
    assert again.run_id == "aa-newer" and again.cells_ok == 0 and again.cells_skipped == len(m.cells())
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM runs")[0] == 2


def test_a_newer_run_of_an_edited_file_or_another_backend_is_not_resumed(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    _run(m, db, "mine")
    edited = _matrix(tmp_path, MATRIX.replace("requests_per_cell = 12", "requests_per_cell = 13"), "m2.toml")
    _run(edited, db, "edited-later")
    assert resolve_run_id(m, RunOptions(db=db, resume=True)) == ("mine", True)
    assert resolve_run_id(edited, RunOptions(db=db, resume=True)) == ("edited-later", True)
    other_backend, resuming = resolve_run_id(m, RunOptions(db=db, resume=True, backend="vllm"))
    assert not resuming and other_backend.startswith("resume-vllm-")


def test_an_explicit_run_id_wins_and_without_resume_a_run_is_new(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    _run(m, db, "first")
    assert resolve_run_id(m, RunOptions(db=db, run_id="given", resume=True)) == ("given", True)
    assert resolve_run_id(m, RunOptions(db=db, run_id="given")) == ("given", False)
    new_id, resuming = resolve_run_id(m, RunOptions(db=db))
    assert not resuming and new_id.startswith("resume-sim-") and new_id != "first"
    assert new_id != resolve_run_id(m, RunOptions(db=db))[0]  # a random suffix: two new runs never collide


def test_resume_with_nothing_to_resume_says_so(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    notes: list[str] = []
    new_id, resuming = resolve_run_id(m, RunOptions(db=db, resume=True), notes.append)
    assert not resuming and new_id.startswith("resume-sim-")
    assert len(notes) == 1 and "no earlier sim run of" in notes[0] and new_id in notes[0]
    assert f"of {m.path} in {db};" in notes[0]  # names the store it looked in
    _run(m, db, "before-edit")
    edited = _matrix(tmp_path, MATRIX.replace("max_tokens = 64", "max_tokens = 65"))  # same path, new content
    notes.clear()
    new_id, resuming = resolve_run_id(edited, RunOptions(db=db, resume=True), notes.append)
    assert not resuming and len(notes) == 1
    assert "changed since run before-edit" in notes[0] and "--run-id before-edit --resume" in notes[0]


def test_resume_without_db_names_the_default_store(tmp_path: Path, monkeypatch):
    env_db = tmp_path / "env.duckdb"
    with store.session(env_db):  # an empty store of our own (the default path would build the default data)
        pass
    monkeypatch.setenv("SPECTUNE_DB", str(env_db))
    m = _matrix(tmp_path)
    notes: list[str] = []
    new_id, resuming = resolve_run_id(m, RunOptions(resume=True), notes.append)
    assert not resuming and new_id.startswith("resume-sim-")
    assert len(notes) == 1 and f"of {m.path} in {env_db};" in notes[0]


def test_pending_cells_skip_what_the_run_already_has(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    _run(m, db, "r")
    todo, skipped = pending_cells(m, "r", RunOptions(db=db))
    assert (todo, skipped) == ([], len(m.cells()))
    todo, skipped = pending_cells(m, "other", RunOptions(db=db))
    assert [k.cell_id for k in todo] == [k.cell_id for k in m.cells()] and skipped == 0


def test_a_new_run_id_is_matrix_backend_utc_stamp_and_six_hex_digits(tmp_path: Path, monkeypatch):
    # a zone far from UTC: the stamp must still be UTC (run ids sort by time across machines)
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        new_id, resuming = resolve_run_id(_matrix(tmp_path), RunOptions(db=tmp_path / "s.duckdb", backend="vllm"))
        after = datetime.now(UTC)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    got = re.fullmatch(r"resume-vllm-(\d{8}T\d{6})-([0-9a-f]{6})", new_id)
    assert got is not None and not resuming, new_id
    stamp = datetime.strptime(got[1], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    assert before <= stamp <= after


def test_failed_cells_are_skipped_unless_retried_and_only_limits_the_cells(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    m = _matrix(tmp_path)
    _run(m, db, "r")
    ok, failed = (k.cell_id for k in m.cells())
    with store.session(db) as con:
        con.execute("UPDATE cells SET status = 'failed' WHERE run_id = 'r' AND cell_id = ?", [failed])

    def ids(opts: RunOptions, run_id: str = "r") -> tuple[list[str], int, int]:
        todo, skipped, skipped_failed = pending_cells_detail(m, run_id, opts)
        return [k.cell_id for k in todo], skipped, skipped_failed

    assert ids(RunOptions(db=db)) == ([], 2, 1)  # both skipped, one of them a failure
    assert ids(RunOptions(db=db, retry_failed=True)) == ([failed], 1, 0)
    assert ids(RunOptions(db=db, only=frozenset({ok}))) == ([], 1, 0)
    assert ids(RunOptions(db=db, retry_failed=True, only=frozenset({failed}))) == ([failed], 0, 0)
    assert ids(RunOptions(db=db, only=frozenset({failed})), "new") == ([failed], 0, 0)
    with store.session(db) as con:
        con.execute("UPDATE cells SET status = 'failed' WHERE run_id = 'r'")
    assert ids(RunOptions(db=db)) == ([], 2, 2)
