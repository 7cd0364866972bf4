"""Derived data in the store (analysis/derived.py, analysis/derived_read.py): real store copies, the real ingest and
runner CLIs as subprocesses, and a fresh interpreter that says whether ``winners`` read the kept answer (imported
neither polars nor numpy) or computed it. No timing here: benchmarks/startup.py measures the speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis import derived, derived_read
from analysis.rescore.matrix import load_matrices
from ingest import store
from tests.conftest import REPO, cli

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
TRACE = REPO / "data" / "samples" / "traces" / "azure_code.csv"
MATRIX = """
name = "derived"
gpus = ["MI300X"]
[methods.none]
[methods.ngram]
depths = [3]
[families.Gemma]
model = "google/gemma-4-31B-it"
[workloads.code]
[load]
concurrency = [1]
"""
# In a fresh interpreter: run the CLI and report whether polars or numpy were imported (the kept answer needs
# neither; a computed one needs both).
PROBE = ("import sys\nfrom analysis.__main__ import main\ncode = main(sys.argv[1:])\n"
         "heavy = sorted(m for m in ('polars', 'numpy', 'pyarrow') if m in sys.modules)\n"
         "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\nraise SystemExit(code)\n")


@pytest.fixture
def store_copy(default_db: Path, tmp_path: Path) -> Path:
    """A copy of the default store as built, without derived data, to write to. (The shared default store may
    already hold derived rows: any test's default-options ``winners`` on it keeps its answer there.)"""
    return derived.live_copy(default_db, tmp_path / "store.duckdb")


def probe(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", PROBE, *args, "--db", str(db)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def heavy(proc: subprocess.CompletedProcess) -> str:
    return next(line for line in proc.stderr.splitlines() if line.startswith("HEAVY=")).removeprefix("HEAVY=")


def current(db: Path) -> set[str]:
    with store.session(db, read_only=True) as con:
        return set(derived_read.current(con))


def test_an_import_leaves_current_derived_data_and_winners_reads_it(store_copy, tmp_path):
    assert current(store_copy) == set()  # a store as built from the embedded data has none yet
    imported = cli("ingest", "results", str(SAMPLE), "--json", db=store_copy)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["files"][0]["rows"] == 1 and imported.stderr == ""
    assert current(store_copy) == {"winners", "matrices"}  # refreshed in the same process, after the data landed
    kept_json, kept_text = probe(store_copy, "winners", "--json"), probe(store_copy, "winners")
    assert kept_json.returncode == kept_text.returncode == 0
    assert heavy(kept_json) == ""  # the kept document: neither polars nor numpy imported
    live = derived.live_copy(store_copy, tmp_path / "live.duckdb")
    live_json, live_text = probe(live, "winners", "--json"), probe(live, "winners")
    assert heavy(live_json) == "numpy,polars"  # computed
    assert kept_json.stdout == live_json.stdout  # byte for byte the live answer
    assert kept_text.stdout == live_text.stdout and "SIMULATED" in kept_text.stdout
    assert any(c["backend"] == "import" for c in json.loads(kept_json.stdout)["cells"])  # the import is in it


def test_options_other_than_the_defaults_are_computed(store_copy):
    derived.refresh_store(store_copy)
    other = probe(store_copy, "winners", "--json", "--family", "Qwen")
    assert other.returncode == 0 and heavy(other) == "numpy,polars"
    assert {c["family"] for c in json.loads(other.stdout)["cells"]} == {"Qwen"}


def test_a_failed_import_leaves_the_derived_data_as_it_was(store_copy, tmp_path):
    derived.refresh_store(store_copy)
    with store.session(store_copy, read_only=True) as con:
        before = con.execute("SELECT name, data_stamp, computed_at FROM derived ORDER BY name").fetchall()
    broken = tmp_path / "broken.json"
    broken.write_text('{"num_prompts": 3,')
    res = cli("ingest", "results", str(broken), db=store_copy)
    assert res.returncode == 2 and res.stderr.startswith("error: ")
    with store.session(store_copy, read_only=True) as con:
        assert con.execute("SELECT name, data_stamp, computed_at FROM derived ORDER BY name").fetchall() == before


def test_a_trace_import_and_a_run_refresh_too(store_copy, tmp_path):
    derived.refresh_store(store_copy)
    trace = cli("ingest", "trace", str(TRACE), db=store_copy)
    assert trace.returncode == 0, trace.stderr
    assert current(store_copy) == {"winners", "matrices"}  # a trace is no input: still current
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX)
    run = cli("runner", "run", "--matrix", str(matrix), "--backend", "sim", "--json", db=store_copy)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["cells_ok"] == 2
    assert current(store_copy) == {"winners", "matrices"}  # the run's cells are in the kept answer
    kept = probe(store_copy, "winners", "--json")
    assert heavy(kept) == ""
    assert kept.stdout == probe(derived.live_copy(store_copy, tmp_path / "live.duckdb"), "winners", "--json").stdout


def _session_members(sid: int) -> list[int]:
    """Processes still in session ``sid`` (field 6 of /proc/PID/stat)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid:  # after ')': state, ppid, pgrp, session
            out.append(int(entry.name))
    return out


@pytest.mark.parametrize("command", ["ingest", "runner"])
def test_a_write_leaves_no_process_behind(store_copy, tmp_path, command):
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX)
    argv = (["-m", "ingest", "results", str(SAMPLE)] if command == "ingest"
            else ["-m", "runner", "run", "--matrix", str(matrix), "--backend", "sim"])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # its own session: anything it starts (and does not wait for) stays in it, detached or not
    proc = subprocess.Popen([sys.executable, *argv, "--db", str(store_copy)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert _session_members(proc.pid) == []
    assert current(store_copy) == {"winners", "matrices"}  # the refresh ran, and ended with the command


def _same_matrices(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key, m in a.items():
        n = b[key]
        assert (m.family, m.gpu, m.replicates, m.models, m.tensor_parallel_size, m.draft_models,
                m.speculative_extras) == (n.family, n.gpu, n.replicates, n.models, n.tensor_parallel_size,
                                          n.draft_models, n.speculative_extras)
        assert list(m.cells) == list(n.cells)
        for k, c in m.cells.items():
            d = n.cells[k]
            for f in derived.CELL_FIELDS:
                x, y = getattr(c, f), getattr(d, f)
                assert x == y or (isinstance(x, float) and np.isnan(x) and np.isnan(y)), (key, k, f)
            for f in derived.ARRAYS:
                np.testing.assert_array_equal(getattr(c, f), getattr(d, f))
                assert getattr(c, f).flags.writeable


def test_the_kept_matrices_are_the_live_ones(store_copy):
    assert cli("ingest", "results", str(SAMPLE), db=store_copy).returncode == 0
    with store.session(store_copy, read_only=True) as con:
        assert "matrices" in derived_read.current(con)
        kept = derived._read_matrices(con)
        assert kept and any(c.ttft.size > 1 for m in kept.values() for c in m.cells.values())
        _same_matrices(kept, load_matrices(con))
        _same_matrices(derived.matrices(con), kept)
        qwen = derived.matrices(con, ("Qwen",))  # filtered: computed live, as before
        _same_matrices(qwen, load_matrices(con, ("Qwen",)))


def test_rescore_answers_the_same_with_and_without_the_kept_matrices(store_copy, tmp_path):
    derived.refresh_store(store_copy)
    live = derived.live_copy(store_copy, tmp_path / "live.duckdb")
    kept = cli("analysis", "rescore", str(TRACE), "--json", db=store_copy)
    computed = cli("analysis", "rescore", str(TRACE), "--json", db=live)
    assert kept.returncode == computed.returncode == 0, kept.stderr + computed.stderr
    assert json.loads(kept.stdout) == json.loads(computed.stdout)


def test_a_code_version_bump_makes_the_kept_data_stale(store_copy, monkeypatch):
    derived.refresh_store(store_copy)
    monkeypatch.setattr(derived_read, "CODE_VERSION", derived_read.CODE_VERSION + 1)
    assert current(store_copy) == set()
    assert derived_read.kept_winners(store_copy) is None
    assert derived.refresh_store(store_copy) == ["winners", "matrices"]
    assert current(store_copy) == {"winners", "matrices"}


def test_the_default_stores_first_build_keeps_the_answer_it_computed(tmp_path):
    db = tmp_path / "default" / "spectune.duckdb"  # $SPECTUNE_DB: the default store, not there yet
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db)}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", PROBE, "winners", "--json"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600)

    first = run()
    assert first.returncode == 0, first.stderr
    assert "first start: building the default store" in first.stderr and "polars" in heavy(first)
    assert current(db) == {"winners", "matrices"}  # kept by the call that built the store
    second = run()
    assert second.returncode == 0 and heavy(second) == "" and second.stdout == first.stdout


def test_a_document_computed_from_other_data_is_not_kept(store_copy):
    """The default store keeps what ``winners`` computed only when the store still has the data it was computed
    from (another process may have written in between): else the refresh computes it again."""
    stale = {"cells": ["computed before another write"]}
    with store.session(store_copy) as con:
        assert derived.refresh(con, winners_doc=stale, doc_stamp="v1 another store") == ["winners", "matrices"]
        body = derived_read.current(con)["winners"]
        assert json.loads(body) == json.loads(json.dumps(derived.winners_document(con)))
        con.execute("DELETE FROM derived")
        stamp = derived_read.data_stamp(con)
        derived.refresh(con, winners_doc=stale, doc_stamp=stamp)  # the same data: the given document is kept
        assert json.loads(derived_read.current(con)["winners"]) == stale
