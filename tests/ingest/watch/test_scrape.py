"""A target's ``timeout_s`` covers fetching AND parsing its page; a page that is slow to parse fails that
target's scrape (a warning, a gap) and no other target's.

Pages from a hostile server on 127.0.0.1: 100,000 distinct series (seconds of label parsing), and one series
with 100,000 labels (prometheus_client's parser is worse than linear in labels: 13 s for that line alone).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from ingest import sql, store
from ingest.watch.loop import WatchOptions, watch
from ingest.watch.targets import load_targets
from tests.ingest.watch.faults import fault_server
from tests.ingest.watch.hostile import counters, many_labels, many_series


def _targets(tmp: Path, s, hostile_timeout: float) -> Path:
    p = tmp / "t.toml"
    p.write_text(f'[[target]]\nname = "hostile"\nurl = "{s.url("/hostile")}"\ntimeout_s = {hostile_timeout}\n'
                 f'[[target]]\nname = "good"\nurl = "{s.url("/good")}"\ntimeout_s = 3\n')
    return p


def test_a_page_slow_to_parse_ends_the_round_near_its_timeout_and_the_other_target_lands(tmp_path: Path) -> None:
    salt = uuid.uuid4().hex  # never seen by the series cache: every line is parsed
    page = counters(0) + many_series(100_000, salt)
    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        s.routes["/hostile"] = lambda n: (200, page, 0.0)
        # the good target answers while the hostile page is being parsed: the event loop must still be free
        s.routes["/good"] = lambda n: (200, counters(n), 0.4)
        cfg = load_targets(_targets(tmp_path, s, 1))
        t0 = time.monotonic()
        report = watch(cfg, WatchOptions(db=db, once=True, quiet=True))
        elapsed = time.monotonic() - t0
    by = report.targets
    assert by["hostile"].failed_rounds == 1 and by["hostile"].samples == 0
    assert "no complete answer within 1 s" in by["hostile"].last_error
    assert "parsing stopped at line" in by["hostile"].last_error
    assert by["good"].failed_rounds == 0 and by["good"].samples == 1, by["good"].last_error
    # unbounded, this page parses for ~5 s; with the parse inside the timeout the round ends near 1 s
    assert elapsed < 2.5, f"the round took {elapsed:.1f} s with timeout_s = 1"
    with store.session(db, read_only=True) as con:
        stored = dict(sql.frame(con, "SELECT target, count(*) FROM watch_samples GROUP BY 1").iter_rows())
        errors = sql.frame(con, "SELECT target, detail FROM watch_events WHERE kind = 'error'")
    assert stored == {"good": 1}, "the hostile target stored nothing: a gap, not a partial page"
    assert errors["target"].to_list() == ["hostile"] and "within 1 s" in errors["detail"][0]


def test_a_series_with_100000_labels_is_refused_at_once_and_the_rest_of_the_page_lands(tmp_path: Path) -> None:
    page = counters(0) + many_labels(100_000)
    db = tmp_path / "s.duckdb"
    with fault_server() as s:
        s.routes["/hostile"] = lambda n: (200, page, 0.0)
        s.routes["/good"] = lambda n: (200, counters(n), 0.0)
        cfg = load_targets(_targets(tmp_path, s, 5))
        t0 = time.monotonic()
        report = watch(cfg, WatchOptions(db=db, once=True, quiet=True))
        elapsed = time.monotonic() - t0
    assert elapsed < 3, f"the round took {elapsed:.1f} s"
    assert report.targets["hostile"].samples == 1 and report.targets["good"].samples == 1
    assert any("hostile: 1 series refused by the label caps" in w for w in report.warnings), report.warnings
    with store.session(db, read_only=True) as con:
        row = sql.frame(con, "SELECT drafts, accepted_tokens, prompt_tokens FROM watch_samples "
                             "WHERE target = 'hostile'").row(0, named=True)
    assert row["drafts"] == 100 and row["accepted_tokens"] == 120
    assert row["prompt_tokens"] is None, "the refused series' field is unknown, not a sum without it"
