"""``python -m analysis rescore``: a file or a stored trace in, the DESIGN JSON (or a table) out; bad input exits 2."""

from __future__ import annotations

import json
import shlex
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
    (["--family", "Nope"], "no simulated or measured cells"),
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


# ---- honest answers (issue 14 item 5): the default, the workload's source, shards, drafters ---------------

def _doc(db, *args: str) -> dict:
    proc = cli("analysis", "rescore", *args, "--family", "Qwen", "--gpu", "MI355X", "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_renaming_a_mooncake_file_cannot_change_the_answer_silently(default_db, tmp_path):
    named, plain = tmp_path / "conversation_trace.jsonl", tmp_path / "prod.jsonl"
    for p in (named, plain):
        shutil.copy(SAMPLES / "mooncake.jsonl", p)
    a, b = _doc(default_db, str(named)), _doc(default_db, str(plain))
    assert a["trace"]["workload_source"]["source"] == "file name" and a["trace"]["workload_mix"] == {"chat": 1.0}
    assert b["trace"]["workload_mix"] == {"unknown": 1.0}
    assert any("workload from the file name" in w for w in a["warnings"])
    assert any("are 'unknown'" in w for w in b["warnings"])
    answer = lambda d: [(r["shard"], r["label"], r["gain_vs_default_pct"]) for r in d["recommendations"]]  # noqa: E731
    if answer(a) != answer(b):  # a different answer is never a silent one
        assert a["warnings"] and b["warnings"]
    chosen = [_doc(default_db, str(p), "--workload", "chat") for p in (named, plain)]
    assert answer(chosen[0]) == answer(chosen[1]) == answer(a)
    for d in chosen:
        assert d["trace"]["workload_source"]["source"] == "selector" and d["warnings"] == []


def test_a_never_measured_or_missing_default_carries_a_warning(default_db):
    trace = str(SAMPLES / "azure_conv.csv")
    deep = _doc(default_db, trace, "--default", "mtp:9")
    assert deep["default_status"][0]["status"] == "extrapolated"
    assert deep["recommendations"][0]["default_provenance"] == {"model:depth": 1.0}
    assert any("default mtp·9 never measured (extrapolated)" in w for w in deep["warnings"])
    missing = _doc(default_db, trace, "--default", "suffix:3")
    assert missing["recommendations"][0]["gain_vs_default_pct"] is None
    assert any("default suffix·3 not in the store" in w for w in missing["warnings"])
    measured = _doc(default_db, trace, "--default", "mtp·3")
    assert measured["default_status"][0]["status"] == "measured"
    assert not any(w.startswith("default ") for w in measured["warnings"])


def test_shard_by_output_length_and_hour_and_a_drafter_for_the_command(default_db):
    doc = _doc(default_db, str(SAMPLES / "azure_code.csv"), "--shard-by", "output_length")
    assert doc["trace"]["shard_by"] == "output_length" and len(doc["recommendations"]) >= 2
    assert all(r["shard"].startswith("output ") for r in doc["recommendations"])
    doc = _doc(default_db, str(SAMPLES / "burstgpt.csv"), "--shard-by", "hour", "--workload", "chat")
    assert {r["shard"] for r in doc["recommendations"]} == {f"hour {h:02d}" for h in range(5)}
    doc = _doc(default_db, str(SAMPLES / "azure_code.csv"), "--default", "none",
               *(x for m in ("eagle3", "dflash", "dspark") for x in ("--drafter", f"{m}=org/{m} model")))
    for r in doc["recommendations"]:
        argv = shlex.split(r["deploy"]["command"])
        if r["method"] in ("eagle3", "dflash", "dspark"):
            assert json.loads(argv[-1])["model"] == f"org/{r['method']} model" and not r["deploy"]["note"]
    proc = cli("analysis", "rescore", str(SAMPLES / "azure_code.csv"), "--drafter", "eagle3=a\nb", db=default_db)
    assert proc.returncode == 2 and "control character" in proc.stderr


def test_the_table_says_the_operating_concurrency_and_the_workload_source(default_db):
    proc = cli("analysis", "rescore", str(SAMPLES / "azure_code.csv"), "--family", "Qwen", "--gpu", "MI355X",
               db=default_db)
    assert proc.returncode == 0, proc.stderr
    assert "workload from file name" in proc.stdout and "default mtp·3" in proc.stdout
    assert "scored at a mean concurrency of" in proc.stdout and "(arrival rate)" in proc.stdout
    assert "warning: workload from the file name" in proc.stdout
