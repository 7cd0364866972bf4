"""``spectune trace`` (also ``python -m ingest trace``): stores a trace once with provenance; bad input exits 2,
one line, writes nothing."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ingest import sql, store
from ingest.traces import FORMAT_CHOICES
from spectune.cli import main
from tests.conftest import cli

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "data" / "samples" / "traces"
CORPUS = REPO / "tests" / "corpus" / "traces"
# Generated cases (sparse multi-GB files …) and reader-only limits run in tests/ingest/traces and
# tests/reliability; a format name the CLI's choices reject is an argparse usage error, tested below.
CASES = [c for c in tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["case"]
         if "generate" not in c and "limits" not in c and c["format"] in FORMAT_CHOICES]
GENERIC_MAP = ["--map", "input_tokens=prompt_tokens", "--map", "output_tokens=completion_tokens",
               "--map", "workload=task", "--map", "shard=tenant", "--map", "timestamp=arrival_ms",
               "--timestamp-unit", "ms", "--map", "drafted_tokens=spec_draft_tokens",
               "--map", "accepted_tokens=spec_accepted_tokens"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse rejects a flag before anything runs
        rc = int(exc.code)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _traces(db: Path) -> tuple[int, int]:
    with store.session(db, read_only=True) as con:
        return (sql.one(con, "SELECT count(*) FROM traces")[0], sql.one(con, "SELECT count(*) FROM trace_requests")[0])


def test_a_trace_is_stored_once_with_provenance(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    rc, out, _ = _run(capsys, "trace", str(SAMPLES / "azure_conv.csv"), "--db", str(db), "--json")
    doc = json.loads(out)
    assert rc == 0 and {"trace_id", "format", "requests", "workload_mix"} <= set(doc)
    assert doc["format"] == "azure" and doc["workload_mix"] == {"chat": 1.0} and doc["new"]
    assert doc["trace_id"] == doc["file_hash"][:16] and _traces(db) == (1, doc["requests"])
    copy = tmp_path / "renamed.csv"  # same bytes under another name: the same trace
    copy.write_bytes((SAMPLES / "azure_conv.csv").read_bytes())
    rc, out, _ = _run(capsys, "trace", str(copy), "--db", str(db), "--json", "--name", "again")
    again = json.loads(out)
    assert rc == 0 and again["trace_id"] == doc["trace_id"] and not again["new"] and _traces(db) == (1, 500)
    with store.session(db, read_only=True) as con:
        row = sql.one(con, "SELECT name, format, file_hash, source_path, workload_assignment FROM traces")
    assert row[:3] == ("azure_conv.csv", "azure", doc["file_hash"]) and row[3].endswith("azure_conv.csv")
    assert json.loads(row[4]) == {"classifier": 0, "given": 500, "unknown": 0}


def test_prompts_are_classified_and_mapped_columns_used(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    rc, out, err = _run(capsys, "trace", str(SAMPLES / "sharegpt.json"), "--db", str(db), "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["workload_assignment"]["classifier"] == doc["requests"]
    assert set(doc["workload_mix"]) == {"code", "chat", "reasoning"} and "estimated" in err
    rc, out, _ = _run(capsys, "trace", str(SAMPLES / "generic.csv"), "--db", str(db), "--json", *GENERIC_MAP)
    doc = json.loads(out)
    assert rc == 0 and set(doc["workload_mix"]) == {"code", "chat", "reasoning"}
    assert doc["workload_assignment"]["given"] == doc["requests"]
    rc, out, _ = _run(capsys, "trace", str(SAMPLES / "mooncake.jsonl"), "--db", str(db), "--workload", "code",
                      "--json")
    assert rc == 0 and json.loads(out)["workload_mix"] == {"code": 1.0}


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(case, tmp_path, capsys):
    db = tmp_path / "new.duckdb"
    argv = ["trace", str(CORPUS / case["file"]), "--format", case["format"], "--db", str(db)]
    for fld, col in case.get("mapping", {}).items():
        argv += ["--timestamp-unit", col] if fld == "timestamp_unit" else ["--map", f"{fld}={col}"]
    if "workload" in case:
        argv += ["--workload", case["workload"]]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {CORPUS / case['file']}:{case['line']}: "), err
    assert case["contains"] in err
    assert not db.exists()  # nothing was written: not even an empty store


def test_enough_kinds_of_broken_input_are_covered():
    assert len(CASES) >= 25


def test_bad_input_leaves_an_existing_store_unchanged(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    assert _run(capsys, "trace", str(SAMPLES / "azure_code.csv"), "--db", str(db))[0] == 0
    before = _traces(db)
    big = tmp_path / "big_line.csv"
    big.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900," + "9" * 5_000_000 + ",3\n")
    fake = tmp_path / "not.parquet"
    fake.write_text("input_tokens,output_tokens\n1,2\n")
    for path in (big, fake, CORPUS / "nul_bytes.csv", CORPUS / "mooncake_deep_nesting.jsonl"):
        rc, _out, err = _run(capsys, "trace", str(path), "--db", str(db))
        assert rc == 2 and err.count("\n") == 1 and err.startswith(f"error: {path}:")
    assert _traces(db) == before


@pytest.mark.parametrize("args", [["--map", "input_tokens"], ["--map", "nonsense=x"], ["--map", "prompt=a", "--map",
                                  "prompt=b"], ["--format", "xls"], ["--timestamp-unit", "days"], ["--workload", " "]])
def test_bad_flags_are_usage_errors(tmp_path, capsys, args):
    db = tmp_path / "s.duckdb"
    rc, out, err = _run(capsys, "trace", str(SAMPLES / "generic.csv"), "--db", str(db), *args)
    assert rc == 2 and out == "" and not db.exists()
    assert err.startswith("error: ") and err.count("\n") == 1


def test_the_real_command_line(tmp_path):
    db = tmp_path / "s.duckdb"
    ok = cli("ingest", "trace", str(SAMPLES / "burstgpt.csv"), "--db", str(db), "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["format"] == "burstgpt" and doc["requests"] > 0
    bad = cli("ingest", "trace", str(CORPUS / "azure_negative_tokens.csv"), "--db", str(db))
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert "Traceback" not in bad.stderr and _traces(db)[0] == 1


def test_the_summary_line_says_what_was_dropped(tmp_path, capsys):
    """BurstGPT's failed requests (Response tokens 0) are dropped; the plain output says so, not only --json."""
    trace = tmp_path / "BurstGPT_1.csv"
    trace.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     "5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n"
                     "118,GPT-4,0,276,276,API log\n120,GPT-4,300,0,300,API log\n")
    rc, out, _ = _run(capsys, "trace", str(trace), "--db", str(tmp_path / "s.duckdb"))
    assert rc == 0 and "burstgpt, 1 requests" in out
    assert "; dropped 2 with 0 output tokens, 1 with 0 input tokens → trace" in out
    rc, out, _ = _run(capsys, "trace", str(SAMPLES / "azure_code.csv"), "--db", str(tmp_path / "s.duckdb"))
    assert rc == 0 and "dropped" not in out


def test_a_unit_or_one_column_alone_completes_the_well_known_names(tmp_path, capsys):
    """The unit-ambiguity error points at --timestamp-unit, and that flag alone is enough (no full --map)."""
    db = tmp_path / "s.duckdb"
    trace = tmp_path / "mine.csv"
    trace.write_text("timestamp,prompt_tokens,completion_tokens,model\n0,100,10,a\n1500,200,20,b\n4500,300,30,a\n")
    rc, _, err = _run(capsys, "trace", str(trace), "--db", str(db))
    assert rc == 2 and "cannot tell the unit" in err and "--timestamp-unit" in err
    rc, out, _ = _run(capsys, "trace", str(trace), "--db", str(db), "--json", "--timestamp-unit", "ms")
    assert rc == 0 and json.loads(out)["requests"] == 3
    with store.session(db, read_only=True) as con:
        times = [r[0] for r in con.execute("SELECT timestamp_s FROM trace_requests ORDER BY request_index").fetchall()]
    assert times == [0.0, 1.5, 4.5]
    # One column named, the rest found by name: the model column becomes the shard.
    rc, out, _ = _run(capsys, "trace", str(trace), "--db", str(tmp_path / "t.duckdb"), "--json",
                      "--map", "shard=model", "--timestamp-unit", "s")
    assert rc == 0
    with store.session(tmp_path / "t.duckdb", read_only=True) as con:
        rows = con.execute("SELECT timestamp_s, shard FROM trace_requests ORDER BY request_index").fetchall()
    assert rows == [(0.0, "a"), (1500.0, "b"), (4500.0, "a")]
    # A mapping that names the token columns is taken as complete, as before: nothing else is read.
    rc, out, _ = _run(capsys, "trace", str(trace), "--db", str(tmp_path / "u.duckdb"), "--json",
                      "--map", "input_tokens=prompt_tokens", "--map", "output_tokens=completion_tokens")
    assert rc == 0
    with store.session(tmp_path / "u.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM trace_requests WHERE timestamp_s IS NOT NULL OR shard IS NOT NULL"
                           ).fetchall()[0][0] == 0
    # Still refused when nothing can complete it.
    bare = tmp_path / "bare.csv"
    bare.write_text("a,b\n1,2\n")
    rc, _, err = _run(capsys, "trace", str(bare), "--db", str(tmp_path / "v.duckdb"), "--timestamp-unit", "s")
    assert rc == 2 and "mapping needs input_tokens or prompt" in err and not (tmp_path / "v.duckdb").exists()
