"""Bad targets never crash the watcher, never write a bad sample, and never cost the good targets theirs.

Faults come from a local HTTP server of the tests' own (tests/ingest/watch/faults.py): a counter reset
mid-window, a target that hangs, HTTP 500, garbage and truncated exposition text, a Prometheus that
answers an error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.production import deltas, load
from ingest import sql, store
from ingest.watch.loop import WatchOptions, watch
from ingest.watch.targets import load_targets
from tests.conftest import REPO
from tests.ingest.watch.faults import REAL, exposition, fault_server

ROUNDS = 4


def _good(n: int):
    return 200, exposition(100 * (n + 1), [60 * (n + 1), 40 * (n + 1), 20 * (n + 1)]), 0.0


def _reset(n: int):
    # calls 0, 1: one server; call 2: it restarted (new start time, small counters); call 3: counting on
    if n < 2:
        return 200, exposition(100 * (n + 1), [50 * (n + 1), 30 * (n + 1), 10 * (n + 1)]), 0.0
    m = n - 1
    return 200, exposition(10 * m, [5 * m, 3 * m, 1 * m], start=2.0e9), 0.0


def _cut_mid_number() -> str:
    i = REAL.index("vllm:spec_decode_num_accepted_tokens_total{")
    line_end = REAL.index("\n", i)
    return REAL[: line_end - 2]  # "... 9.0" → "... 9" and no final newline


def _cut_at_line() -> str:
    i = REAL.index("vllm:spec_decode_num_accepted_tokens_per_pos_total{")
    return REAL[: REAL.index("\n", i) + 1]  # position 0 only: the per-position counts no longer add up


PROM_ERROR = json.dumps({"status": "error", "errorType": "bad_data", "error": "1:10: parse error: unexpected"})


def _targets_file(tmp: Path, s) -> Path:
    rows = {"good": "/good", "reset": "/reset", "hang": "/hang", "http500": "/500", "garbage": "/garbage",
            "binary": "/binary", "truncated": "/truncated", "cutline": "/cutline", "notvllm": "/notvllm"}
    text = "timeout_s = 20\n"  # generous for the answering targets on a busy machine; the hang gets 0.5 s
    for name, path in rows.items():
        text += (f'[[target]]\nname = "{name}"\nurl = "{s.url(path)}"\nsegment = "seg"\nfamily = "F"\n'
                 f'method = "ngram"\ndepth = 3\n' + ("timeout_s = 0.5\n" if name == "hang" else ""))
    text += f'[[target]]\nname = "prom"\nkind = "prometheus"\nurl = "{s.url("/prom")}"\n'
    text += f'[[target]]\nname = "prom500"\nkind = "prometheus"\nurl = "{s.url("/p5")}"\n'
    p = tmp / "targets.toml"
    p.write_text(text)
    return p


def _routes(s) -> None:
    s.routes.update({
        "/good": _good, "/reset": _reset,
        "/hang": lambda n: (200, REAL, 30.0),
        "/500": lambda n: (500, "internal error", 0.0),
        "/garbage": lambda n: (200, "vllm:spec_decode_num_drafts_total{{{ nonsense\n", 0.0),
        "/binary": lambda n: (200, b"\x00\xff\xfe vllm:" + os.urandom(64), 0.0),
        "/truncated": lambda n: (200, _cut_mid_number(), 0.0),
        "/cutline": lambda n: (200, _cut_at_line(), 0.0),
        "/notvllm": lambda n: (200, "# TYPE up gauge\nup 1\n", 0.0),
        "/prom/api/v1/query_range": lambda n: (400, PROM_ERROR, 0.0),
        "/p5/api/v1/query_range": lambda n: (503, "service unavailable", 0.0),
    })


BAD = ("hang", "http500", "garbage", "binary", "truncated", "cutline", "notvllm", "prom", "prom500")


def test_each_bad_target_is_a_warning_and_the_good_ones_land(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        _routes(s)
        cfg = load_targets(_targets_file(tmp_path, s))
        report = watch(cfg, WatchOptions(db=db, interval_s=0.2, max_rounds=ROUNDS, quiet=True))
    assert report.rounds == ROUNDS
    by = {t.name: t for t in report.targets.values()}
    assert by["good"].samples == ROUNDS and by["reset"].samples == ROUNDS
    for name in BAD:
        assert by[name].failed_rounds == ROUNDS and by[name].samples == 0, name
    why = {name: by[name].last_error for name in BAD}
    assert "0.5 s" in why["hang"]
    assert "500" in why["http500"] and "503" in why["prom500"]
    assert "does not parse" in why["garbage"]
    assert "cut off" in why["truncated"]
    assert "per position" in why["cutline"]
    assert "no vllm:" in why["notvllm"]
    assert "bad_data" in why["prom"] and "parse error" in why["prom"]
    assert "not UTF-8" in why["binary"] or "does not parse" in why["binary"]
    assert all(any(w.startswith(f"target {n}:") for w in report.warnings) for n in BAD)
    with store.session(db, read_only=True) as con:
        stored = dict(sql.frame(con, "SELECT target, count(*) FROM watch_samples GROUP BY 1").iter_rows())
        errors = dict(sql.frame(con, "SELECT target, count(*) FROM watch_events WHERE kind = 'error' GROUP BY 1")
                      .iter_rows())
        samples = load.samples(con, targets=("reset",))
    assert stored == {"good": ROUNDS, "reset": ROUNDS}, "no bad target wrote a sample"
    assert errors == dict.fromkeys(BAD, ROUNDS)
    # the counter reset: the increase over the restart counts from zero, so no accepted token goes missing
    iv = deltas.intervals(samples)
    assert iv["reset"].to_list() == [False, True, False]
    assert iv["accepted_tokens"].to_list() == [90.0, 9.0, 9.0]
    assert iv["drafts"].to_list() == [100.0, 10.0, 10.0]


def test_rewriting_the_same_round_adds_nothing(tmp_path: Path) -> None:
    from ingest.watch import land
    from ingest.watch.exposition import parse

    cfg_text = '[[target]]\nname = "a"\nurl = "http://127.0.0.1:9/metrics"\n'
    (tmp_path / "t.toml").write_text(cfg_text)
    t = load_targets(tmp_path / "t.toml").targets[0]
    batch = land.Batch(rows=[land.Row("a", t, 1_790_000_000.25, parse(REAL))])
    first = land.write_to(tmp_path / "s.duckdb", batch)
    again = land.write_to(tmp_path / "s.duckdb", batch)
    assert first["watch_samples"] == 1 and first["watch_positions"] == 3 and first["watch_histograms"] > 20
    assert set(again.values()) == {0}


def test_sigterm_stops_the_watch_between_rounds_and_keeps_every_round(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        s.routes["/good"] = _good
        s.routes["/hang"] = lambda n: (200, REAL, 30.0)
        p = tmp_path / "t.toml"
        p.write_text(f'timeout_s = 1\n[[target]]\nname = "good"\nurl = "{s.url("/good")}"\n'
                     f'[[target]]\nname = "hang"\nurl = "{s.url("/hang")}"\n')
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "ingest", "watch", str(p), "--interval", "0.3", "--db",
                                 str(db), "--json"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while s.calls.get("/good", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["stopped_by"] == "SIGTERM"
    with store.session(db, read_only=True) as con:
        n = sql.one(con, "SELECT count(*) FROM watch_samples WHERE target = 'good'")[0]
    assert n == doc["rounds"] == next(t["samples"] for t in doc["targets"] if t["name"] == "good") >= 3
    assert "Traceback" not in err and "warning: target hang: no complete answer within 1 s" in err


@pytest.mark.parametrize("body, needle", [
    ('[[target]]\nname = "a"\nurl = "https://user:pw@h/metrics"\n', "credentials in a URL are refused"),
    ('[[target]]\nname = "a"\nurl = "ftp://h/metrics"\n', "expected an http:// or https:// URL"),
    ('[[target]]\nname = "a"\nurl = "http://h/metrics"\nmethod = "magic"\n', "method: expected one of"),
    ('[[target]]\nname = "a"\nurl = "http://h/metrics"\nbogus = 1\n', "unknown key(s) bogus"),
    ('[[target]]\nname = "a"\nurl = "http://h/m"\n[[target]]\nname = "a"\nurl = "http://h/n"\n', "appears twice"),
    ('[[target]]\nname = "a"\nurl = "http://h/m"\nselector = "{job=1}"\n', "only for kind"),
    ('[[target]]\nname = "a"\nkind = "prometheus"\nurl = "http://h"\nselector = "job"\n', "label matchers"),
    ('[[target]]\nname = "a"\nurl = "http://h/m"\ntoken_env = "not a var"\n', "environment variable name"),
    ('[[target]]\nname = "a"\nurl = "http://h/m"\ndepth = -1\n', "depth: expected an integer"),
    ("[[target]\n", "expected valid TOML"),
    ("interval_s = 5\n", "at least one [[target]]"),
    ("\xff\xfe", "UTF-8"),
])
def test_bad_targets_files_exit_2_with_one_line(tmp_path: Path, body: str, needle: str, capsys) -> None:
    from ingest.__main__ import main

    p = tmp_path / "t.toml"
    p.write_bytes(body.encode("latin-1") if body.startswith("\xff") else body.encode())
    assert main(["watch", str(p), "--once", "--db", str(tmp_path / "s.duckdb")]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith(f"error: {p}:") and needle in line, line
    assert not (tmp_path / "s.duckdb").exists(), "a refused targets file writes nothing"


def test_a_bom_and_padding_are_fine_and_the_error_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text('\ufeff\n\n# fleet\n[[target]]\nname = "a"\nurl = "http://h:1/metrics"\n\n\n'
                 '[[target]]\nname = "b"\nurl = "http://h:1/metrics"\nmethod = "nope"\n', encoding="utf-8")
    from ingest.errors import InputError

    with pytest.raises(InputError) as exc:
        load_targets(p)
    assert exc.value.line == 10  # the line naming the target
