"""The watch's memory is bounded in bytes: a target that sends fresh long labels every scrape does not grow it.

The real ``python -m ingest watch`` process scrapes a hostile server on 127.0.0.1 whose every page carries ~9 MB
of series never seen before; its resident memory (``VmRSS`` in /proc/PID/status) is read over 30 rounds
(~270 MB of fresh labels) and must stay flat, while every round still lands the page's spec-decode counters
and warns once that the extra series were refused. The caches themselves are checked against their byte caps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from ingest import sql, store
from ingest.watch import exposition
from ingest.watch.bounded import ByteLRU, text_bytes
from ingest.watch.exposition import MAX_PAGE_LABEL_BYTES, SERIES_CACHE_BYTES, parse
from tests.conftest import REPO
from tests.ingest.watch.faults import fault_server
from tests.ingest.watch.hostile import counters, fresh_long_labels

SERIES, LABEL_CHARS = 1500, 6000  # ~9 MB of new series text every page (the body cap is 32 MiB)
WARM, MEASURED = 6, 30


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


def _wait_calls(s, path: str, n: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while s.calls.get(path, 0) < n:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"only {s.calls.get(path, 0)} scrapes of {path} in {timeout} s"
        time.sleep(0.05)


def test_fresh_long_labels_every_scrape_do_not_grow_the_watch(tmp_path: Path) -> None:
    salt = uuid.uuid4().hex
    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        s.routes["/hostile"] = lambda n: (200, counters(n) + fresh_long_labels(n, salt, series=SERIES,
                                                                                 label_chars=LABEL_CHARS), 0.0)
        targets = tmp_path / "t.toml"
        targets.write_text(f'timeout_s = 20\n[[target]]\nname = "hostile"\nurl = "{s.url("/hostile")}"\n'
                           'segment = "seg"\nfamily = "F"\nmethod = "ngram"\ndepth = 3\n')
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "ingest", "watch", str(targets), "--interval", "0.2",
                                 "--db", str(db), "--json"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            _wait_calls(s, "/hostile", WARM, proc)
            base = _rss_kb(proc.pid)
            peak = base
            for n in range(WARM + 1, WARM + MEASURED + 1):
                _wait_calls(s, "/hostile", n, proc)
                peak = max(peak, _rss_kb(proc.pid))
            end = _rss_kb(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
    sent_mb = MEASURED * SERIES * LABEL_CHARS / 1e6
    growth_mb = (end - base) / 1024
    # Unbounded, the series cache alone grew ~20 MB a round here (the labels twice: key and parsed value).
    assert growth_mb < 40, f"RSS grew {growth_mb:.0f} MB over {MEASURED} rounds of {sent_mb:.0f} MB fresh labels"
    assert (peak - base) / 1024 < 80, f"RSS peaked {(peak - base) / 1024:.0f} MB above the warm level"
    assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
    doc = json.loads(out)
    (t,) = doc["targets"]
    assert t["failed_rounds"] == 0 and t["samples"] == doc["rounds"] >= WARM + MEASURED
    # one warning a scrape for the refused series, not one per series
    assert err.count("series refused by the label caps") == doc["rounds"], err[-2000:]
    with store.session(db, read_only=True) as con:
        rows = sql.frame(con, "SELECT drafts, prompt_tokens FROM watch_samples ORDER BY ts")
    assert rows.height == doc["rounds"] and rows["drafts"].null_count() == 0
    assert rows["prompt_tokens"].null_count() == rows.height, "a capped field is unknown, never a partial sum"


def test_the_series_cache_stays_under_its_byte_cap_and_a_page_under_its_label_cap() -> None:
    salt = uuid.uuid4().hex
    for n in range(12):  # ~4 MB of fresh series text parsed a page: the 16 MiB cache fills and turns over
        s = parse(counters(n) + fresh_long_labels(n, salt, series=1200, label_chars=4000))
        assert s.values["drafts"] == 100 * (n + 1)
        assert exposition._SERIES.bytes <= SERIES_CACHE_BYTES
        parsed = 1200 - s.capped
        assert parsed > 0 and parsed * 4000 <= MAX_PAGE_LABEL_BYTES < (parsed + 1) * 4100
    # a page within the caps is parsed whole and summed
    s = parse(counters(0) + fresh_long_labels(0, salt + "ok", series=3, label_chars=100))
    assert s.capped == 0 and s.values["prompt_tokens"] == 3


def test_a_byte_lru_evicts_least_recently_used_first() -> None:
    c: ByteLRU[str, str] = ByteLRU(3 * (512 + 100), lambda k, v: text_bytes(v))
    for k in "abc":
        c.put(k, k * 100)
    assert c.get("a") == "a" * 100  # a is now the most recent
    c.put("d", "d" * 100)
    assert "b" not in c and all(k in c for k in "acd") and c.bytes <= c.max_bytes
    c.put("huge", "x" * 10_000)  # larger than the whole cap: not kept, nothing evicted for it
    assert "huge" not in c and len(c) == 3
