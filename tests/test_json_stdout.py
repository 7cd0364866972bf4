"""JSON stays JSON: every command's --json stdout is exactly one JSON document, on a large store.

The store holds the embedded default run plus a generated 1.5 M-request run (benchmarks/generate.py), so the
commands' queries are big enough that DuckDB would draw its progress bar (stdout) if a connection had it on
(tests/ingest/test_store.py checks the setting itself on every kind of connection). Warnings go to stderr.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, cli

SAMPLES = REPO / "data" / "samples"


@pytest.fixture(scope="module")
def large_store(tmp_path_factory):
    from benchmarks.generate import make_export
    from ingest.default_data import build_default_db

    tmp = tmp_path_factory.mktemp("large")
    db = tmp / "large.duckdb"
    build_default_db(db)
    make_export(1_500_000, tmp / "export")
    res = cli("ingest", "results", str(tmp / "export"), "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    json.loads(res.stdout)
    return db


COMMANDS = [
    ("analysis", "winners", "--json"),
    ("analysis", "winners", "--metric", "p99_e2e_ms", "--best-depth", "--json"),
    ("analysis", "curve", "--family", "Qwen", "--method", "mtp", "--workload", "code", "--json"),
    ("analysis", "rescore", str(SAMPLES / "traces" / "azure_code.csv"), "--json"),
    ("analysis", "compare", "RUN_A", "RUN_B", "--json"),
    ("ingest", "trace", str(SAMPLES / "traces" / "burstgpt.csv"), "--json"),
    ("ingest", "results", str(SAMPLES / "results" / "sglang_bench_serving.jsonl"), "--set", "method=eagle3",
     "--set", "depth=3", "--json"),
    ("runner", "plan", "--matrix", "runner/matrices/default.toml", "--json"),
    ("spectune", "winners", "--family", "qwen", "--json"),
]


def _run_ids(db) -> list[str]:
    from ingest import sql, store

    with store.connect(db, read_only=True) as con:
        return [r[0] for r in sql.frame(con, "SELECT run_id FROM runs ORDER BY run_id").rows()]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_stdout_is_one_json_document(large_store, argv):
    if "RUN_A" in argv:  # the default simulated run against the generated one
        a, b = _run_ids(large_store)[:2]
        argv = tuple({"RUN_A": a, "RUN_B": b}.get(x, x) for x in argv)
    proc = cli(*argv, db=large_store)
    assert proc.returncode in (0, 3), proc.stderr  # compare: 3 = a winner changed
    json.loads(proc.stdout)  # the whole of stdout: nothing before or after the document


def test_export_json(large_store, tmp_path):
    run_id = _run_ids(large_store)[0]
    proc = cli("ingest", "export", "--run", run_id, "--out", str(tmp_path / "out"), "--json", db=large_store)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
