"""``python -m analysis rescore``: a file or a stored trace in, the DESIGN JSON (or a table) out; bad input exits 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import cli

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "data" / "samples" / "traces"
CORPUS = REPO / "tests" / "corpus" / "traces"


def test_file_in_design_json_out(default_db):
    proc = cli("analysis", "rescore", str(SAMPLES / "azure_code.csv"), "--family", "Qwen", "--gpu", "MI355X",
               "--default", "eagle3:2", "--json", db=default_db)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["default"] == {"method": "eagle3", "depth": 2}
    assert doc["trace"]["requests"] == 500 and doc["trace"]["workload_mix"] == {"code": 1.0}
    assert [s["shard"] for s in doc["trace"]["shards"]] == ["code"]
    (rec,) = doc["recommendations"]
    assert (rec["family"], rec["gpu"], rec["shard"]) == ("Qwen", "MI355X", "code")
    assert rec["speculative_config"]["method"] == rec["method"] and rec["gain_vs_default_pct"] > 0
    assert doc["trace"]["source"] == "file" and doc["simulated"]


def test_code_and_conversation_samples_differ_through_the_cli(default_db):
    docs = [json.loads(cli("analysis", "rescore", str(SAMPLES / name), "--family", "Kimi", "--gpu", "MI355X",
                           "--json", db=default_db).stdout) for name in ("azure_code.csv", "azure_conv.csv")]
    a, b = (d["recommendations"][0] for d in docs)
    assert (a["method"], a["depth"], a["gain_vs_default_pct"]) != (b["method"], b["depth"], b["gain_vs_default_pct"])


def test_stored_trace_by_id_and_the_table_output(default_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(default_db, db)
    stored = json.loads(cli("ingest", "trace", str(SAMPLES / "sharegpt.json"), "--db", str(db), "--json").stdout)
    proc = cli("analysis", "rescore", stored["trace_id"][:10], "--gpu", "MI300X", "--family", "Gemma",
               "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("SIMULATED data")
    assert "vllm serve google/gemma-4-31B-it" in proc.stdout and "tax of the default" in proc.stdout
    doc = json.loads(cli("analysis", "rescore", stored["trace_id"], "--gpu", "MI300X", "--family", "Gemma",
                         "--json", "--db", str(db)).stdout)
    assert doc["trace"]["source"] == "store" and doc["trace"]["name"] == "sharegpt.json"
    assert {r["shard"] for r in doc["recommendations"]} == {"code", "chat", "reasoning"}


@pytest.mark.parametrize(("args", "needle"), [
    (["--default", "mtp:0"], "--default"),
    (["--default", "warp:3"], "unknown method"),
    (["--concurrency", "-4"], "--concurrency"),
    (["--family", "Nope"], "no simulated cells"),
    (["--draft-model", "eagle3"], "--draft-model"),
    (["--metric", "acceptance_rate"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(default_db, args, needle):
    proc = cli("analysis", "rescore", str(SAMPLES / "azure_code.csv"), *args, db=default_db)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and needle in proc.stderr


@pytest.mark.parametrize("name", ["azure_nan_tokens.csv", "binary_junk.csv", "sharegpt_truncated.json",
                                  "mooncake_string_tokens.jsonl", "azure_duplicate_headers.csv"])
def test_bad_trace_files_exit_2_with_file_and_line(default_db, name):
    proc = cli("analysis", "rescore", str(CORPUS / name), db=default_db)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"error: {CORPUS / name}:") and "Traceback" not in proc.stderr


def test_unknown_trace_ids_and_missing_stores(default_db, tmp_path):
    cases = (("deadbeefdeadbeef", "no file and no stored trace"),
             ("no/such/file.csv", "error: no/such/file.csv:0: no such file"))
    for ref, needle in cases:
        proc = cli("analysis", "rescore", ref, db=default_db)
        assert proc.returncode == 2 and needle in proc.stderr and proc.stderr.count("\n") == 1
    proc = cli("analysis", "rescore", str(SAMPLES / "azure_code.csv"), "--db", str(tmp_path / "none.duckdb"))
    assert proc.returncode == 2 and "no such store" in proc.stderr
    assert not (tmp_path / "none.duckdb").exists()


def test_a_timestamp_unit_alone_is_enough_for_a_generic_file(default_db, tmp_path):
    """rescore takes --map/--timestamp-unit like ingest trace: one flag, the rest found by name."""
    trace = tmp_path / "mine.jsonl"
    trace.write_text("".join(f'{{"timestamp": {i * 250}, "prompt_tokens": {200 + i}, "completion_tokens": {50 + i}}}\n'
                             for i in range(40)))
    refused = cli("analysis", "rescore", str(trace), "--family", "Qwen", "--gpu", "MI355X", db=default_db)
    assert refused.returncode == 2 and "--timestamp-unit" in refused.stderr
    proc = cli("analysis", "rescore", str(trace), "--family", "Qwen", "--gpu", "MI355X", "--timestamp-unit", "ms",
               "--json", db=default_db)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trace"]["requests"] == 40 and doc["recommendations"]
    assert doc["load"]["source"] == "arrival_rate" and doc["trace"]["duration_s"] == pytest.approx(9.75)
