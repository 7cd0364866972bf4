"""The answer cache of read-only commands (analysis/cli/answer_cache.py): real stores, real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

from analysis.cli import answer_cache
from tests.conftest import REPO, cli

# In a fresh interpreter: run the CLI and report whether DuckDB, polars or numpy were imported.
PROBE = ("import sys\nfrom analysis.__main__ import main\ncode = main(sys.argv[1:])\n"
         "heavy = sorted(m for m in ('duckdb', 'polars', 'numpy') if m in sys.modules)\n"
         "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\nraise SystemExit(code)\n")


def _probe(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    import os

    full = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(db), **env}
    return subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, env=full, capture_output=True, text=True,
                          timeout=300)


def _heavy(proc: subprocess.CompletedProcess) -> str:
    return next(line for line in proc.stderr.splitlines() if line.startswith("HEAVY=")).removeprefix("HEAVY=")


def test_second_call_replays_the_same_answer_without_importing_the_engines(store_copy, cache_env):
    first = _probe(store_copy, cache_env, "winners", "--json", "--family", "qwen")
    second = _probe(store_copy, cache_env, "winners", "--json", "--family", "qwen")
    assert first.returncode == second.returncode == 0
    assert _heavy(first) == "duckdb,numpy,polars" and _heavy(second) == ""
    assert second.stdout == first.stdout and json.loads(second.stdout)["cells"]
    # stderr is replayed too: the case-fixing note for "qwen" appears on both calls
    assert "Qwen" in first.stderr and first.stderr.split("HEAVY=")[0] == second.stderr.split("HEAVY=")[0]
    assert len(list(Path(cache_env["SPECTUNE_CACHE_DIR"]).glob("*.json"))) == 1


def test_a_write_to_the_store_makes_a_new_answer(store_copy, cache_env):
    before = cli("analysis", "winners", "--json", db=store_copy, env=cache_env)
    con = duckdb.connect(str(store_copy))
    con.execute("UPDATE cells SET steady_output_throughput = steady_output_throughput * 3 WHERE method = 'ngram'")
    con.close()
    after = cli("analysis", "winners", "--json", db=store_copy, env=cache_env)
    fresh = cli("analysis", "winners", "--json", db=store_copy, env={"SPECTUNE_CACHE": "off"})
    assert before.returncode == after.returncode == fresh.returncode == 0
    assert after.stdout != before.stdout
    assert json.loads(after.stdout) == json.loads(fresh.stdout)


def test_other_arguments_other_answers(store_copy, cache_env):
    qwen = cli("analysis", "winners", "--json", "--family", "Qwen", db=store_copy, env=cache_env)
    gemma = cli("analysis", "winners", "--json", "--family", "Gemma", db=store_copy, env=cache_env)
    assert {c["family"] for c in json.loads(qwen.stdout)["cells"]} == {"Qwen"}
    assert {c["family"] for c in json.loads(gemma.stdout)["cells"]} == {"Gemma"}


def test_errors_are_not_kept_and_off_keeps_nothing(store_copy, cache_env, tmp_path):
    bad = cli("analysis", "winners", "--json", "--family", "Nope", db=store_copy, env=cache_env)
    assert bad.returncode == 2 and "Nope" in bad.stderr
    assert not list(Path(cache_env["SPECTUNE_CACHE_DIR"]).glob("*.json"))
    off = {**cache_env, "SPECTUNE_CACHE": "off"}
    assert cli("analysis", "curve", "--family", "Qwen", "--method", "mtp", "--workload", "code", "--json",
               db=store_copy, env=off).returncode == 0
    assert not Path(cache_env["SPECTUNE_CACHE_DIR"]).exists()


def test_an_unusable_or_corrupt_cache_never_breaks_a_command(store_copy, cache_env, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    unusable = {**cache_env, "SPECTUNE_CACHE_DIR": str(blocker / "answers")}
    proc = cli("analysis", "winners", "--json", db=store_copy, env=unusable)
    assert proc.returncode == 0 and json.loads(proc.stdout)["cells"]
    good = cli("analysis", "winners", "--json", db=store_copy, env=cache_env)
    for entry in Path(cache_env["SPECTUNE_CACHE_DIR"]).glob("*.json"):
        entry.write_text('{"stdout": 3')  # torn write
    again = cli("analysis", "winners", "--json", db=store_copy, env=cache_env)
    assert again.returncode == 0 and again.stdout == good.stdout


def test_the_key_follows_code_data_store_and_environment(store_copy, tmp_path, monkeypatch):
    code, data = tmp_path / "code", tmp_path / "data"
    for pkg in answer_cache.PACKAGES:
        (code / pkg).mkdir(parents=True)
        (code / pkg / "m.py").write_text("x = 1\n")
    data.mkdir()
    (data / "published_results.csv").write_text("a\n1\n")
    monkeypatch.setattr(answer_cache, "ROOT", code)
    monkeypatch.setattr(answer_cache, "DATA_DIR", data)
    argv = ["analysis", "winners", "--json"]
    base = answer_cache.key(argv, store_copy)
    assert base == answer_cache.key(argv, store_copy)
    (code / "analysis" / "m.py").write_text("x = 2\n")
    k_code = answer_cache.key(argv, store_copy)
    (data / "published_results.csv").write_text("a\n1\n2\n")
    k_data = answer_cache.key(argv, store_copy)
    (data / "other.duckdb").write_text("a store beside the data is not data")
    assert answer_cache.key(argv, store_copy) == k_data
    monkeypatch.setenv("SPECTUNE_LOCK_TIMEOUT", "5")
    k_env = answer_cache.key(argv, store_copy)
    Path(str(store_copy) + ".wal").write_bytes(b"w")
    k_wal = answer_cache.key(argv, store_copy)
    assert len({base, k_code, k_data, k_env, k_wal}) == 5
    assert answer_cache.key(argv, tmp_path / "missing.duckdb") is None
