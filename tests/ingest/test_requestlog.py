"""``python -m ingest requests``: a gateway's request log with real vLLM 0.32 response objects (captured from the
CPU server with ``--per-request-spec-decode-metrics summary``: six non-streamed bodies and one final stream chunk
without a ``ts``) lands whole; broken, padded, lying or hostile logs are one ``error: file:line:`` line, exit 2,
and nothing is written; a store of schema 4 is upgraded in place."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

from ingest import ddl, sql, store
from ingest.__main__ import main
from tests.conftest import cli

REAL = Path(__file__).parent / "data" / "requestlog_vllm032.jsonl"


def _lines() -> list[dict]:
    return [json.loads(x) for x in REAL.read_text().splitlines()]


def _spec(obj: dict) -> dict:
    return obj["response"]["metrics"]["speculative_decoding"]


def _run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(["requests", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_real_vllm_responses_land_with_their_labels_and_sums(tmp_path: Path, capsys) -> None:
    db = tmp_path / "s.duckdb"
    code, out, err = _run(capsys, str(REAL), "--target", "cpu-1", "--family", "TinyLlama", "--method", "ngram",
                          "--db", str(db), "--json")
    assert code == 0, err
    doc = json.loads(out)
    lines = _lines()
    assert doc["requests"] == len(lines) and doc["skipped"] == 0 and doc["new"] and doc["labels"] == ["route", "tenant"]
    with store.session(db, read_only=True) as con:
        rows = sql.frame(con, "SELECT * FROM request_log_rows ORDER BY line")
        log = sql.one(con, "SELECT target, family, method, requests FROM request_logs")
    assert log == ("cpu-1", "TinyLlama", "ngram", len(lines))
    assert rows["accepted_tokens"].to_list() == [_spec(x)["num_accepted_draft_tokens"] for x in lines]
    assert rows["draft_tokens"].to_list() == [_spec(x)["num_draft_tokens"] for x in lines]
    assert rows["spec_steps"].to_list() == [_spec(x)["num_spec_steps"] for x in lines]
    assert rows["acceptance_histogram"].to_list() == [_spec(x)["acceptance_histogram"] for x in lines]
    assert rows["completion_tokens"].to_list() == [x["response"]["usage"]["completion_tokens"] for x in lines]
    assert [json.loads(t) for t in rows["labels"]] == [x["labels"] for x in lines]
    # the stream chunk's line has no ts: the response's own ``created`` stands in
    assert rows["ts"][-1].timestamp() == pytest.approx(lines[-1]["response"]["created"], abs=1)
    again = cli("ingest", "requests", str(REAL), "--target", "cpu-1", "--db", str(db))
    assert again.returncode == 0 and "already imported (for target cpu-1)" in again.stdout
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM request_log_rows")[0] == len(lines)


def _with(bad: str | bytes, at: int = 3) -> bytes:
    """The real log with ``bad`` as line ``at``."""
    raw = REAL.read_bytes().splitlines(keepends=True)
    line = bad if isinstance(bad, bytes) else bad.encode()
    return b"".join(raw[:at - 1]) + line + b"".join(raw[at - 1:])


def _spec_line(**change: object) -> str:
    obj = _lines()[0]
    spec = _spec(obj)
    for k, v in change.items():
        if v is None:
            spec.pop(k)
        else:
            spec[k] = v
    return json.dumps(obj) + "\n"


def _obj_line(**change: object) -> str:
    obj = _lines()[0]
    obj.update(change)
    return json.dumps(obj) + "\n"


BAD: dict[str, tuple[bytes, str]] = {
    "not JSON": (_with("{not json}\n"), "not JSON"),
    "a list": (_with("[1, 2]\n"), "one JSON object per line"),
    "labels not an object": (_with(_obj_line(labels=["a"])), "'labels' must be an object"),
    "label value an object": (_with(_obj_line(labels={"tenant": {"x": 1}})), "must be text, a number"),
    "label too long": (_with(_obj_line(labels={"tenant": "x" * 300})), "1..256 characters"),
    "time without zone": (_with(_obj_line(ts="2026-12-03T10:00:00")), "has no time zone"),
    "time not a time": (_with(_obj_line(ts="yesterday")), "not an ISO 8601 time"),
    "time out of range": (_with(_obj_line(ts=1e20)), "between 1970 and 2100"),
    "time a boolean": (_with(_obj_line(ts=True)), "'ts' is bool"),
    "no time at all": (_with(_obj_line(ts=None, response={**_lines()[0]["response"], "created": None})),
                       "'ts' is missing"),
    "no response": (_with(_obj_line(response=None)), "'response' is missing"),
    "response a list": (_with(_obj_line(response=[1])), "must be the JSON object"),
    "response text not JSON": (_with(_obj_line(response="{oops")), "'response' is text that is not JSON"),
    "histogram sum": (_with(_spec_line(num_spec_steps=99)), "sums to"),
    "accepted mismatch": (_with(_spec_line(num_accepted_draft_tokens=1)), "num_accepted_draft_tokens is 1"),
    "more drafted than possible": (_with(_spec_line(num_draft_tokens=10_000)), "impossible"),
    "histogram length": (_with(_spec_line(acceptance_histogram=[0, 4])), "must be 4 whole numbers"),
    "negative count": (_with(_spec_line(num_draft_tokens=-1)), "whole numbers ≥ 0"),
    "boolean count": (_with(_spec_line(num_spec_steps=True)), "whole numbers ≥ 0"),
    "fractional count": (_with(_spec_line(num_draft_tokens=12.5)), "whole numbers ≥ 0"),
    "depth zero": (_with(_spec_line(num_spec_tokens=0)), "not a speculation depth"),
    "missing key": (_with(_spec_line(num_spec_steps=None)), "lacks num_spec_steps"),
    "NUL padding": (_with(b"\x00" * 4096 + b"\n"), "NUL bytes"),
    "not UTF-8": (_with(b'{"labels": {"tenant": "\xff\xfe"}}\n'), "not UTF-8"),
    "deep nesting": (_with("[" * 100_000 + "]" * 100_000 + "\n"), "nested too deeply"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_line_is_one_error_naming_it_and_nothing_is_written(case: str, tmp_path: Path, capsys) -> None:
    data, words = BAD[case]
    log = tmp_path / "log.jsonl"
    log.write_bytes(data)
    db = tmp_path / "s.duckdb"
    store.connect(db).close()
    before = _digest(db)
    code, out, err = _run(capsys, str(log), "--target", "t", "--db", str(db))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {log}:3: ") and words in err, err
    assert _digest(db) == before
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM request_log_rows")[0] == 0


def test_a_log_cut_mid_line_names_the_cut_and_a_fresh_store_is_not_even_created(tmp_path: Path, capsys) -> None:
    raw = REAL.read_bytes()
    log = tmp_path / "cut.jsonl"
    log.write_bytes(raw[: len(raw) - 200])  # a gateway killed mid-write: the last line stops in the middle
    db = tmp_path / "new.duckdb"
    code, _out, err = _run(capsys, str(log), "--target", "t", "--db", str(db))
    assert code == 2 and err.startswith(f"error: {log}:7: not JSON") and "cut short" in err, err
    assert not db.exists()


def test_blank_lines_crlf_and_a_bom_are_read_as_the_same_requests(tmp_path: Path, capsys) -> None:
    lines = REAL.read_text().splitlines()
    padded = tmp_path / "padded.jsonl"
    padded.write_bytes(("\ufeff" + "\r\n\r\n".join(lines) + "\r\n   \r\n\n\n").encode())
    db = tmp_path / "s.duckdb"
    code, out, err = _run(capsys, str(padded), "--target", "t", "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["requests"] == len(lines)
    with store.session(db, read_only=True) as con:
        got = sql.one(con, "SELECT sum(accepted_tokens), max(line) FROM request_log_rows")
    assert got == (sum(_spec(json.loads(x))["num_accepted_draft_tokens"] for x in lines), 2 * len(lines) - 1)


def test_responses_without_metrics_are_skipped_with_a_warning_and_all_of_them_are_refused(tmp_path, capsys) -> None:
    lines = _lines()
    off = [{**x, "response": {**x["response"], "metrics": None}} for x in lines]  # a server without the flag
    err_resp = {"labels": {"tenant": "c"}, "ts": 1796311700,
                "response": {"object": "error", "message": "too long", "type": "BadRequestError", "code": 400}}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(x) + "\n" for x in [*lines, off[0], err_resp]))
    code, out, err = _run(capsys, str(mixed), "--target", "t", "--db", str(tmp_path / "m.duckdb"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["requests"] == len(lines) and doc["skipped"] == 2
    assert doc["skipped_why"] == {"no metrics.speculative_decoding": 1, "error response": 1}
    assert err.startswith(f"warning: {mixed}: 2 line(s) skipped")
    none = tmp_path / "off.jsonl"
    none.write_text("".join(json.dumps(x) + "\n" for x in off))
    code, _out, err = _run(capsys, str(none), "--target", "t", "--db", str(tmp_path / "n.duckdb"))
    assert code == 2 and err.startswith(f"error: {none}:0: no request with per-request spec-decode metrics")
    assert "--per-request-spec-decode-metrics" in err and not (tmp_path / "n.duckdb").exists()


def test_gzip_reads_the_same_and_a_gzip_bomb_stops_at_the_cap(tmp_path: Path, capsys) -> None:
    gz = tmp_path / "log.jsonl.gz"
    gz.write_bytes(gzip.compress(REAL.read_bytes()))
    code, out, err = _run(capsys, str(gz), "--target", "t", "--db", str(tmp_path / "g.duckdb"), "--json")
    assert code == 0 and json.loads(out)["requests"] == len(_lines()), err
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:
        for _ in range(64):
            fh.write(b"\n" * (1 << 20))  # 64 MiB of blank lines in ~64 KiB
    db = tmp_path / "b.duckdb"
    code, _out, err = _run(capsys, str(bomb), "--target", "t", "--db", str(db), "--max-file-bytes", "8MiB")
    assert code == 2 and "8,388,608-byte import limit (--max-file-bytes)" in err and err.count("\n") == 1, err
    assert not db.exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "missing"])
def test_special_files_are_refused_before_a_read(kind: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "log.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    code, _out, err = _run(capsys, str(path), "--target", "t", "--db", str(tmp_path / "s.duckdb"))
    assert code == 2 and err.startswith(f"error: {path}:0: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("flag", [["--target", ""], ["--target", "a\nb"], ["--target", "t", "--gpu", "x" * 300]])
def test_bad_flags_are_usage_errors(flag: list[str], tmp_path: Path, capsys) -> None:
    code, _out, err = _run(capsys, str(REAL), *flag, "--db", str(tmp_path / "s.duckdb"))
    assert code == 2 and err.startswith("error: --") and err.count("\n") == 1, err
    assert not (tmp_path / "s.duckdb").exists()


def test_a_schema_4_store_is_upgraded_and_keeps_its_rows(default_db: Path, tmp_path: Path) -> None:
    """A store written before request logs (schema 4: no request tables) gains them on first use, cells intact."""
    import shutil

    db = tmp_path / "v4.duckdb"
    shutil.copy(default_db, db)
    with store.session(db) as con:
        cells = sql.one(con, "SELECT count(*) FROM cells")[0]
        con.execute("DROP TABLE request_log_rows")
        con.execute("DROP TABLE request_logs")
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    store._ENSURED.clear()  # another process, as a user upgrading spectune would be
    res = cli("ingest", "requests", str(REAL), "--target", "t", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT value FROM meta WHERE key = 'schema_version'")[0] == str(ddl.SCHEMA_VERSION)
        assert sql.one(con, "SELECT count(*) FROM cells")[0] == cells
        assert sql.one(con, "SELECT count(*) FROM request_log_rows")[0] == len(_lines())
    assert ddl.SCHEMA_VERSION == 7  # pinned: a schema change is noticed here (7: cells.mode)


@pytest.mark.parametrize("kind", ["zero-byte", "foreign"])
def test_a_broken_or_foreign_store_is_refused_and_left_as_it_was(kind: str, tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "s.duckdb"
    if kind == "zero-byte":
        db.write_bytes(b"")
    else:
        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE invoices (id INTEGER)")
        con.close()
    before = _digest(db)
    res = cli("ingest", "requests", str(REAL), "--target", "t", "--db", str(db))
    assert res.returncode == 2 and res.stderr.startswith(f"error: {db}: ") and res.stderr.count("\n") == 1
    assert res.stdout == "" and _digest(db) == before
