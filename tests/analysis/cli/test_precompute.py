"""Answers computed when the store is written (analysis/cli/precompute.py, ingest/cli/answers.py): a real store
copy, the real ingest and runner CLIs as subprocesses, and a fresh interpreter that says whether the next
``winners`` call computed (imported DuckDB, polars, numpy) or replayed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.analysis.cli.test_answer_cache import _heavy, _probe
from tests.conftest import REPO, cli

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
MATRIX = """
name = "pre"
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


def _answers(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["SPECTUNE_CACHE_DIR"]).glob("*.json"))


def test_an_import_leaves_the_next_winners_call_a_replay_equal_to_the_computed_answer(store_copy, cache_env):
    before = cli("analysis", "winners", "--json", db=store_copy, env={"SPECTUNE_CACHE": "off"})
    imported = cli("ingest", "results", str(SAMPLE), "--json", db=store_copy, env=cache_env)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["files"][0]["rows"] == 1  # JSON stays one document: the child prints nothing
    assert len(_answers(cache_env)) == 2  # winners --json and winners
    replay = _probe(store_copy, cache_env, "winners", "--json")
    text = _probe(store_copy, cache_env, "winners")
    assert replay.returncode == text.returncode == 0
    assert _heavy(replay) == "" and _heavy(text) == ""
    fresh = cli("analysis", "winners", "--json", db=store_copy, env={"SPECTUNE_CACHE": "off"})
    assert replay.stdout == fresh.stdout != before.stdout  # the new store's answer, not the old one
    computed_text = cli("analysis", "winners", db=store_copy, env={"SPECTUNE_CACHE": "off"})
    assert text.stdout == computed_text.stdout and "SIMULATED" in text.stdout


def test_other_flags_are_computed_on_their_first_call(store_copy, cache_env):
    assert cli("ingest", "results", str(SAMPLE), db=store_copy, env=cache_env).returncode == 0
    other = _probe(store_copy, cache_env, "winners", "--json", "--family", "Qwen")
    assert other.returncode == 0 and _heavy(other) == "duckdb,numpy,polars"


def test_with_the_cache_off_an_import_computes_nothing(store_copy, tmp_path):
    env = {"SPECTUNE_CACHE": "off", "SPECTUNE_CACHE_DIR": str(tmp_path / "answers")}
    assert cli("ingest", "results", str(SAMPLE), db=store_copy, env=env).returncode == 0
    assert not (tmp_path / "answers").exists()


def test_a_failed_import_computes_nothing(store_copy, cache_env, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"num_prompts": 3,')
    res = cli("ingest", "results", str(broken), db=store_copy, env=cache_env)
    assert res.returncode == 2 and res.stderr.startswith("error: ")
    assert not Path(cache_env["SPECTUNE_CACHE_DIR"]).exists()


def test_an_unwritable_cache_changes_nothing_of_the_import(store_copy, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    env = {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(blocker / "answers")}
    res = cli("ingest", "results", str(SAMPLE), "--json", db=store_copy, env=env)
    assert res.returncode == 0 and res.stderr == ""
    assert json.loads(res.stdout)["files"][0]["rows"] == 1
    assert blocker.read_text() == "x"


def test_a_trace_import_and_a_run_precompute_too(store_copy, cache_env, tmp_path):
    trace = cli("ingest", "trace", str(REPO / "data" / "samples" / "traces" / "azure_code.csv"), db=store_copy,
                env=cache_env)
    assert trace.returncode == 0, trace.stderr
    assert _heavy(_probe(store_copy, cache_env, "winners", "--json")) == ""
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX)
    run = cli("runner", "run", "--matrix", str(matrix), "--backend", "sim", "--json", db=store_copy, env=cache_env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["cells_ok"] == 2
    replay = _probe(store_copy, cache_env, "winners", "--json")
    assert _heavy(replay) == ""
    assert replay.stdout == cli("analysis", "winners", "--json", db=store_copy,
                                env={"SPECTUNE_CACHE": "off"}).stdout


def test_precompute_main_reports_a_failure(tmp_path, cache_env, monkeypatch):
    from analysis.cli import precompute

    for k, v in cache_env.items():
        monkeypatch.setenv(k, v)
    missing = tmp_path / "nope.duckdb"
    assert precompute.main(["--db", str(missing)]) == 1  # an explicit --db that does not exist: exit 2 inside
    assert not missing.exists() and not _answers(cache_env)


def test_an_import_keeps_the_new_stores_rescore_matrices(store_copy, cache_env, monkeypatch):
    from analysis.cli import matrix_cache
    from analysis.rescore.matrix import load_matrices
    from ingest import store
    from tests.analysis.cli.test_matrix_cache import _equal

    assert cli("ingest", "results", str(SAMPLE), db=store_copy, env=cache_env).returncode == 0
    for k, v in {**cache_env, "SPECTUNE_DB": str(store_copy)}.items():  # the key the next rescore computes
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(REPO)
    key = matrix_cache.answer_cache.key(matrix_cache._words((), ()), store_copy)
    kept = matrix_cache.kept(key)
    assert kept is not None
    with store.session(store_copy, read_only=True) as con:
        _equal(kept, load_matrices(con))  # the matrices of the store with the import in it
