"""Prometheus mode against a REAL Prometheus (Debian's ``prometheus`` binary on a loopback port, a config and
a tsdb folder of the test's own) scraping two vLLM-shaped exposition servers on 127.0.0.1 every second.

- One stored sample per Prometheus step: a live watch re-polls the last few steps every round, and each
  (instance, step) lands once, on the step grid, one step apart, with no gaps in the windows.
- An incomplete step lands nothing: while server B's page leaves out its per-position series (Prometheus marks
  them stale), B's steps are dropped whole — no row without a depth, no second "ngram·?" segment.
- A backfill over the range the live watch stored lands nothing new: live and backfill share the grid.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from analysis.production import deltas, load
from analysis.production.report import ProductionQuery, production_report
from ingest import sql, store
from runner.vllm.server import free_port
from tests.conftest import REPO, cli
from tests.ingest.watch.faults import exposition, fault_server
from tests.ingest.watch.hostile import counters

GAP = range(8, 12)  # server B's scrapes that leave out the per-position series


def _no_positions(n: int) -> str:
    text = counters(n)
    return "".join(line + "\n" for line in text.splitlines() if "_per_pos_" not in line)


@contextmanager
def prometheus(tmp: Path, targets: list[str]) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("the prometheus binary is missing: scripts/test.sh installs it (apt-get install -y prometheus)")
    port = free_port()
    jobs = "".join(f"  - job_name: vllm-{i}\n    scrape_interval: 1s\n    scrape_timeout: 1s\n"
                   f"    static_configs:\n      - targets: ['{t}']\n" for i, t in enumerate(targets))
    (tmp / "prometheus.yml").write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                        f"scrape_configs:\n{jobs}")
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen([binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, f"prometheus never became ready (log: {tmp / 'prometheus.log'})"
            try:
                if httpx.get(f"{url}/-/ready", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _wait(pred, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_one_sample_per_step_and_an_incomplete_step_lands_nothing(tmp_path: Path) -> None:
    with ExitStack() as stack:
        a = stack.enter_context(fault_server())
        b = stack.enter_context(fault_server())
        a.routes["/metrics"] = lambda n: (200, counters(n), 0.0)
        b.routes["/metrics"] = lambda n: (200, _no_positions(n) if n in GAP else counters(n), 0.0)
        inst_a, inst_b = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        url = stack.enter_context(prometheus(tmp_path, [inst_a, inst_b]))
        _wait(lambda: a.calls.get("/metrics", 0) >= 3 and b.calls.get("/metrics", 0) >= 3, "first scrapes")
        targets = tmp_path / "t.toml"  # no depth: it is read from the per-position series
        targets.write_text(f'[[target]]\nname = "prom"\nkind = "prometheus"\nurl = "{url}"\n'
                           'selector = \'{job=~"vllm-.*"}\'\nsegment = "seg"\nfamily = "F"\nmethod = "ngram"\n'
                           'timeout_s = 10\n')
        db = tmp_path / "live.duckdb"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        watcher = subprocess.Popen([sys.executable, "-m", "ingest", "watch", str(targets), "--interval", "1",
                                    "--db", str(db), "--json"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            # past B's gap and long enough after it that every step around it was polled by several rounds
            _wait(lambda: b.calls.get("/metrics", 0) >= GAP.stop + 10 or watcher.poll() is not None, "scrapes")
        finally:
            watcher.send_signal(signal.SIGTERM)
            out, err = watcher.communicate(timeout=60)
        assert watcher.returncode == 0 and "Traceback" not in err, err[-3000:]
        doc = json.loads(out)
        assert doc["targets"][0]["failed_rounds"] == 0, doc
        with store.session(db, read_only=True) as con:
            rows = sql.frame(con, "SELECT target, epoch_ms(ts) AS ms, depth, drafts FROM watch_samples ORDER BY 1, 2")
            s = load.samples(con)
            report = production_report(con, ProductionQuery(window_s=1e9, decide=False))
        tid_a, tid_b = f"prom@{inst_a}", f"prom@{inst_b}"

        # --- one sample per step: on the 1 s grid, each step once, consecutive steps 1 s apart -------------
        ms_a = rows.filter(target=tid_a)["ms"].to_list()
        assert len(ms_a) >= 10, rows
        assert all(m % 1000 == 0 for m in ms_a), "every stored timestamp is a step of the 1 s grid"
        assert len(set(ms_a)) == len(ms_a)
        # exactly Prometheus' own steps of A over that range (a scrape Prometheus missed on a busy machine is
        # a step it has not, and so not one the watch stores either)
        r = httpx.get(f"{url}/api/v1/query_range", params={
            "query": f'vllm:spec_decode_num_drafts_total{{instance="{inst_a}"}}', "start": ms_a[0] / 1000,
            "end": ms_a[-1] / 1000, "step": "1"}, timeout=10, trust_env=False).json()
        (series,) = r["data"]["result"]
        assert ms_a == [round(float(ts) * 1000) for ts, _ in series["values"]]
        assert sum(y - x for x, y in itertools.pairwise(ms_a)) / (len(ms_a) - 1) < 1100, ms_a
        assert doc["added"]["watch_samples"] == rows.height == sum(t["samples"] for t in doc["targets"]), \
            "re-polled steps are not counted (nor stored) again"
        iv_a = deltas.intervals(s.filter(target=tid_a))
        assert iv_a["gap"].sum() == 0 and iv_a["reset"].sum() == 0
        # counters only grow along the steps (a step never mixes in an older scrape's value)
        drafts_a = rows.filter(target=tid_a)["drafts"].to_list()
        assert drafts_a == sorted(drafts_a)

        # --- the incomplete steps of B landed nothing -----------------------------------------------------
        b_rows = rows.filter(target=tid_b)
        assert b_rows.height >= 5 and b_rows["depth"].to_list() == [3] * b_rows.height, "no row without a depth"
        assert rows["depth"].null_count() == 0
        assert [(g["segment"], g["method"], g["depth"]) for g in report["segments"]] == [("seg", "ngram", 3)], \
            "one segment, no second 'ngram·?'"
        ms_b = b_rows["ms"].to_list()
        missing = [m for m in range(ms_b[0], ms_b[-1] + 1, 1000) if m not in set(ms_b)]
        assert missing, "B's steps without per-position series are a gap, not rows"
        assert "Prometheus step(s) dropped (incomplete step:" in err, err[-3000:]

        # --- a backfill over what the live watch stored adds nothing: the same grid -----------------------
        since, until = ms_a[0] / 1000, ms_a[-1] / 1000
        again = cli("ingest", "watch", str(targets), "--since", str(since), "--until", str(until), "--interval",
                    "1", "--db", str(db), "--json", timeout=300)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["added"]["watch_samples"] == 0
        # and into a fresh store it lands exactly the live watch's complete steps of A
        fresh = tmp_path / "backfill.duckdb"
        back = cli("ingest", "watch", str(targets), "--since", str(since), "--until", str(until), "--interval",
                   "1", "--db", str(fresh), "--json", timeout=300)
        assert back.returncode == 0, back.stderr
        with store.session(fresh, read_only=True) as con:
            back_a = sql.frame(con, "SELECT epoch_ms(ts) AS ms FROM watch_samples WHERE target = ? ORDER BY 1",
                               [tid_a])["ms"].to_list()
        assert back_a == ms_a


def test_exposition_helper_pages_are_what_the_test_assumes() -> None:
    from ingest.watch.exposition import parse

    assert parse(counters(2)).per_pos == [180, 120, 60]
    s = parse(_no_positions(2))
    assert s.per_pos == [] and s.values["accepted_tokens"] == 360, "B's gap pages: counters without positions"
    assert exposition(1, [1]).endswith("\n")


def test_a_prometheus_answer_too_large_to_read_in_time_fails_that_target_near_its_timeout(tmp_path: Path) -> None:
    from ingest.watch.loop import WatchOptions, watch
    from ingest.watch.targets import load_targets

    # one answer of 500,000 values, each at a step of its own (6 MB: quick to send, ~0.6 s to decode, ~2.5 s to
    # read); the other queries answer nothing
    values = ",".join(f'[{i},"1"]' for i in range(500_000))
    huge = ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"i:1"},"values":['
            + values + "]}]}}")
    empty = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}})
    with fault_server() as s:
        s.routes["/prom/api/v1/query_range"] = lambda n: (200, huge if n == 0 else empty, 0.0)
        s.routes["/good"] = lambda n: (200, counters(n), 0.0)
        p = tmp_path / "t.toml"
        p.write_text(f'[[target]]\nname = "prom"\nkind = "prometheus"\nurl = "{s.url("/prom")}"\ntimeout_s = 1\n'
                     f'[[target]]\nname = "good"\nurl = "{s.url("/good")}"\ntimeout_s = 5\n')
        q = tmp_path / "good.toml"
        q.write_text(f'[[target]]\nname = "good"\nurl = "{s.url("/good")}"\n')
        started = time.monotonic()
        watch(load_targets(q), WatchOptions(db=tmp_path / "s.duckdb", once=True, quiet=True))
        base = time.monotonic() - started  # a round's own cost here (the store made, a page landed)
        started = time.monotonic()
        report = watch(load_targets(p), WatchOptions(db=tmp_path / "s.duckdb", once=True, quiet=True))
        elapsed = time.monotonic() - started
    assert report.targets["prom"].failed_rounds == 1, report.targets["prom"]
    assert "within 1 s" in report.targets["prom"].last_error
    assert report.targets["good"].samples == 1
    # unbounded, the answer was read whole (~3 s, ~15 s on a loaded machine) and the target "succeeded"; bounded,
    # the round stops waiting at the 1 s deadline (the decode, ~0.6 s, cannot be interrupted and holds the
    # interpreter while it runs; the rest is a loaded machine's slack)
    assert elapsed < base + 4, f"the round took {elapsed:.1f} s with timeout_s = 1 ({base:.1f} s without it)"


def test_a_prometheus_answering_too_many_or_too_long_instances_keeps_the_first_thousand(tmp_path: Path) -> None:
    from ingest.watch.loop import WatchOptions, watch
    from ingest.watch.prometheus import MAX_INSTANCE_CHARS, MAX_INSTANCES
    from ingest.watch.targets import load_targets

    def answer(n: int):
        # a whole second inside the live round's window [now - 6 s, now - 2 s] (4 steps back, settled 2 s, on the
        # 1 s grid) even when this answer comes up to 3 s after the round started (a loaded machine)
        ts = int(time.time()) - 5
        result = [{"metric": {"instance": "h" * (MAX_INSTANCE_CHARS + 40)}, "values": [[ts, "1"]]}]
        result += [{"metric": {"instance": f"10.0.{i // 250}.{i % 250}:8000"}, "values": [[ts, "1"]]}
                   for i in range(MAX_INSTANCES + 200)]
        return 200, json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}), 0.0

    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        s.routes["/prom/api/v1/query_range"] = answer
        p = tmp_path / "t.toml"
        p.write_text(f'[[target]]\nname = "prom"\nkind = "prometheus"\nurl = "{s.url("/prom")}"\ntimeout_s = 20\n')
        report = watch(load_targets(p), WatchOptions(db=db, interval_s=1, once=True, quiet=True))
    assert report.targets["prom"].failed_rounds == 0, report.targets["prom"]
    assert any(f"201 instance(s) refused (more than {MAX_INSTANCES}" in w for w in report.warnings), report.warnings
    with store.session(db, read_only=True) as con:
        n, longest = sql.one(con, "SELECT count(DISTINCT target), max(length(target)) FROM watch_samples")
    assert n == MAX_INSTANCES and longest < MAX_INSTANCE_CHARS + len("prom@")
