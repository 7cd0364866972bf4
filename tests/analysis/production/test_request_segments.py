"""Acceptance by segment inside one deployment, from a request log imported with the real importer into a copy of
the default store: per tenant the sums, rate, length, per-position rates and 95 % intervals from requests; the
drift decision per tenant (a tenant whose acceptance fell far below the benchmark changes the winner, exit 3; one
at the benchmark does not); ``--segment``/``--by``/``--since`` filters; tiny and all-zero segments honest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from analysis.production.request_segments import LARGE, MIN_REQUESTS, SegmentQuery, ratio_intervals, segments_report
from ingest import sql, store
from tests.analysis.production import fleet, requestlogs
from tests.conftest import cli

K = 6


@pytest.fixture(scope="module")
def seg_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("reqseg")
    db = tmp / "s.duckdb"
    shutil.copy(default_db, db)
    fleet.without_model_error(db)
    with store.session(db, read_only=True) as con:
        bench = sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                             "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0]
    rows = (requestlogs.lines({"tenant": "same", "route": "/v1/chat"}, bench, K, seed=1)
            + requestlogs.lines({"tenant": "low", "route": "/v1/completions"}, bench * 0.3, K, seed=2)
            + requestlogs.lines({"tenant": "tiny", "route": "/v1/chat"}, bench, K, n=3, seed=3))
    log = requestlogs.write(tmp / "gw.jsonl", rows)
    res = cli("ingest", "requests", str(log), "--target", "kimi-prod", "--family", "Kimi", "--method", "dspark",
              "--gpu", "MI355X", "--workload", "code", "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db, rows


def _sums(rows: list[dict], tenant: str) -> tuple[int, int, int]:
    specs = [r["response"]["metrics"]["speculative_decoding"] for r in rows if r["labels"]["tenant"] == tenant]
    return (sum(s["num_accepted_draft_tokens"] for s in specs), sum(s["num_draft_tokens"] for s in specs),
            sum(s["num_spec_steps"] for s in specs))


def test_each_tenant_is_its_requests_sums_with_intervals_and_the_low_one_changes_the_winner(seg_db) -> None:
    db, rows = seg_db
    with store.session(db, read_only=True) as con:
        doc = segments_report(con, SegmentQuery(window_s=300))
    assert doc["by"] == "tenant" and doc["label_keys"] == ["route", "tenant"]
    seg = {s["value"]: s for s in doc["segments"]}
    assert [s["value"] for s in doc["segments"]] == ["low", "same", "tiny"]
    for t, s in seg.items():
        acc, dtok, steps = _sums(rows, t)
        p = s["production"]
        assert (p["accepted_tokens"], p["draft_tokens"], p["drafts"]) == (acc, dtok, steps)
        assert p["acceptance_rate"] == pytest.approx(acc / dtok, abs=1e-6)
        assert p["acceptance_length"] == pytest.approx(1 + acc / steps, abs=1e-6)
        assert len(p["per_position"]) == K and p["per_position"] == sorted(p["per_position"], reverse=True)
        assert (s["family"], s["method"], s["depth"], s["gpu"], s["workload"]) == ("Kimi", "dspark", K, "MI355X",
                                                                                 "code")
    same, low, tiny = seg["same"], seg["low"], seg["tiny"]
    for s in (same, low):
        lo, hi = s["production"]["acceptance_rate_ci"]
        assert lo < s["production"]["acceptance_rate"] < hi and hi - lo < 0.1
        assert sum(w["requests"] for w in s["windows"]) == 60 and len(s["windows"]) >= 2
        assert all(w["window"].endswith("+00:00") for w in s["windows"])  # a time zone on every timestamp
    assert low["production"]["acceptance_rate_ci"][1] < same["production"]["acceptance_rate_ci"][0]
    assert tiny["production"]["acceptance_rate_ci"] == [None, None]  # 3 requests: no interval drawn as if measured
    assert same["status"] == "no_change" and abs(same["gap_pct"]) < 10
    assert low["status"] == "winner_changed" and low["gap_pct"] < -50 and low["outside_band"]
    rec = low["recommendation"]
    assert (rec["method"], rec["depth"]) != ("dspark", K) and rec["vllm_args"]
    assert doc["changed"] == ["kimi-prod · tenant=low"]


def test_drift_cli_reports_request_segments_and_exits_3_only_for_the_changed_one(seg_db) -> None:
    db, _rows = seg_db
    changed = cli("analysis", "drift", "--db", str(db), "--json")
    assert changed.returncode == 3, changed.stderr
    doc = json.loads(changed.stdout)
    assert doc["request_segments"]["changed"] == ["kimi-prod · tenant=low"] and doc["segments"] == []
    fine = cli("analysis", "drift", "--segment", "same", "--db", str(db))
    assert fine.returncode == 0, fine.stderr
    assert "kimi-prod · tenant=same: dspark·6" in fine.stdout and "no change" in fine.stdout
    assert "tenant=low" not in fine.stdout
    by_route = cli("analysis", "drift", "--by", "route", "--db", str(db), "--json")
    segs = json.loads(by_route.stdout)["request_segments"]["segments"]
    assert sorted(s["value"] for s in segs) == ["/v1/chat", "/v1/completions"]
    assert sum(s["requests"] for s in segs) == 123
    for args, words in ((["--by", "nope"], "--by 'nope': no logged request has that label"),
                        (["--segment", "ghost"], "--segment 'ghost': no such segment")):
        bad = cli("analysis", "drift", *args, "--db", str(db))
        assert bad.returncode == 2 and bad.stderr.startswith("error: " + words) and bad.stderr.count("\n") == 1
    later = cli("analysis", "drift", "--since", "2030-01-01T00:00:00Z", "--db", str(db), "--json")
    assert later.returncode == 0 and json.loads(later.stdout)["request_segments"]["segments"] == []


def test_a_store_without_request_logs_refuses_by(default_db: Path) -> None:
    res = cli("analysis", "drift", "--by", "tenant", "--db", str(default_db))
    assert res.returncode == 2 and "no request log" in res.stderr


def test_all_zero_and_all_accepted_segments_get_the_binomial_bound_not_a_point() -> None:
    n = 24
    zero = ratio_intervals(np.zeros(n), [np.full(n, 30.0)], seed=1, tops=[1.0])[0]
    assert zero == (0.0, pytest.approx(1 - 0.025 ** (1 / n)))
    full = ratio_intervals(np.full(n, 30.0), [np.full(n, 30.0)], seed=1, tops=[1.0])[0]
    assert full == (pytest.approx(0.025 ** (1 / n)), 1.0)
    assert ratio_intervals(np.ones(MIN_REQUESTS - 1), [np.ones(MIN_REQUESTS - 1)], seed=1, tops=[1.0]) == [
        (None, None)]


def test_a_million_requests_get_the_bootstraps_interval_in_one_pass() -> None:
    import time

    rng = np.random.default_rng(0)
    den = rng.integers(0, 60, 1_000_000).astype(float)
    num = np.minimum(den, rng.binomial(60, 0.4, 1_000_000)).astype(float)
    t0 = time.perf_counter()
    ((lo, hi),) = ratio_intervals(num, [den], seed=2, tops=[1.0])
    assert time.perf_counter() - t0 < 5
    assert lo < num.sum() / den.sum() < hi and hi - lo < 0.01
    # at the switch-over the linearised interval is the bootstrap's: same ratio, same units
    part_n, part_d = num[:LARGE + 1], den[:LARGE + 1]
    ((dlo, dhi),) = ratio_intervals(part_n, [part_d], seed=2, tops=[1.0])
    ((blo, bhi),) = ratio_intervals(part_n[:LARGE], [part_d[:LARGE]], seed=2, tops=[1.0])
    assert dhi - dlo == pytest.approx(bhi - blo, rel=0.15) and dlo == pytest.approx(blo, abs=(bhi - blo) * 0.2)


def test_a_label_with_many_values_shows_the_largest_and_folds_the_rest(tmp_path: Path) -> None:
    """A label such as a user id: 60 values, each re-scored, would take hours; the 50 largest are segments, the
    other 10 one "(other values)" segment, and every request still counts once."""
    from analysis.production.request_segments import MAX_SEGMENTS, OTHER

    db = tmp_path / "s.duckdb"
    rows = [r for i in range(60) for r in requestlogs.lines({"user": f"u{i:02d}"}, 0.5, 4, n=2 + (i < 50), seed=i)]
    res = cli("ingest", "requests", str(requestlogs.write(tmp_path / "gw.jsonl", rows)), "--target", "t",
              "--db", str(db))
    assert res.returncode == 0, res.stderr
    with store.session(db, read_only=True) as con:
        doc = segments_report(con, SegmentQuery(by="user", decide=False))
    names = [s["value"] for s in doc["segments"]]
    assert len(names) == MAX_SEGMENTS + 1 and names[-1] == OTHER and set(names[:-1]) == {f"u{i:02d}" for i in range(50)}
    assert sum(s["requests"] for s in doc["segments"]) == len(rows) and doc["segments"][-1]["requests"] == 20
    assert any("60 values" in w for w in doc["warnings"])


def test_a_depth_change_inside_one_log_is_two_configs_of_the_same_tenant(tmp_path: Path) -> None:
    """The server restarted with another num_speculative_tokens mid-log: each response says its own k, so the
    tenant's requests split by config instead of mixing depths in one rate."""
    rows = (requestlogs.lines({"tenant": "a"}, 0.6, 4, n=10, seed=1)
            + requestlogs.lines({"tenant": "a"}, 0.4, 6, n=10, seed=2, start=fleet.T0 + 1000))
    db = tmp_path / "s.duckdb"
    res = cli("ingest", "requests", str(requestlogs.write(tmp_path / "gw.jsonl", rows)), "--target", "t",
              "--method", "ngram", "--db", str(db), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["depths"] == [4, 6], res.stderr
    with store.session(db, read_only=True) as con:
        doc = segments_report(con, SegmentQuery(decide=False))
    assert [(s["value"], s["depth"], s["requests"], len(s["production"]["per_position"])) for s in doc["segments"]] == [
        ("a", 4, 10, 4), ("a", 6, 10, 6)]
