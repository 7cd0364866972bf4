"""A/B readout on constructed arms: a faster config wins with an interval, equal configs tie, little data is
too early; histogram quantiles follow Prometheus' histogram_quantile."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from analysis.production.ab import ABOptions, histogram_quantile
from analysis.production.report import ab_report
from ingest import store
from tests.analysis.production import fleet


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    les = np.array([0.1, 0.2, 0.4, np.inf])
    counts = np.array([10.0, 30.0, 40.0, 40.0])
    assert histogram_quantile(0.5, les, counts) == pytest.approx(0.15)  # rank 20: halfway through (0.1, 0.2]
    assert histogram_quantile(0.1, les, counts) == pytest.approx(0.04)
    assert histogram_quantile(0.99, les, np.array([10.0, 30.0, 38.0, 40.0])) == pytest.approx(0.4)  # +Inf → last le
    assert np.isnan(histogram_quantile(0.5, les, np.zeros(4)))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ab.duckdb"


def _arms(db: Path, tpot_a: float, tpot_b: float, n: int = 40, rate_b: float = 0.6) -> None:
    a = fleet.target("dep-a", "chat", "F", "ngram", 2, "g", "chat")
    b = fleet.target("dep-b", "chat", "F", "ngram", 4, "g", "chat")
    fleet.write(db, fleet.series(a, 0.7, n=n, tpot_s=tpot_a, seed=1) + fleet.series(b, rate_b, n=n, tpot_s=tpot_b,
                                                                                       seed=2))


def test_the_faster_arm_wins_with_an_interval(db: Path) -> None:
    _arms(db, 0.030, 0.020)
    with store.session(db, read_only=True) as con:
        doc = ab_report(con, ("chat",), None, None, None, None, ABOptions(metric="p99_tpot_ms"))
        acc = ab_report(con, (), "dep-a", "dep-b", None, None, ABOptions(metric="acceptance_rate"))
    assert doc["verdict"] == "winner" and doc["winner"] == "dep-b" and doc["gain_pct"] > 20
    lo, hi = doc["difference_ci"]
    assert 0 < lo <= doc["difference"] <= hi
    assert doc["a"]["metrics"]["p99_tpot_ms"]["value"] > doc["b"]["metrics"]["p99_tpot_ms"]["value"]
    assert (doc["a"]["depth"], doc["b"]["depth"]) == (2, 4)
    # the shared window in UTC with its offset: from the end of the first scrape interval (the first sample is
    # only the baseline)
    assert doc["window"]["start"] == datetime.fromtimestamp(fleet.T0 + 15, UTC).isoformat()
    assert doc["window"]["end"].endswith("+00:00")
    assert acc["verdict"] == "winner" and acc["winner"] == "dep-a"
    assert acc["a"]["metrics"]["acceptance_rate"]["value"] == pytest.approx(0.7, abs=0.03)


def test_equal_arms_tie_and_little_data_is_too_early(db: Path, tmp_path: Path) -> None:
    _arms(db, 0.020, 0.020, rate_b=0.7)
    short = tmp_path / "short.duckdb"
    _arms(short, 0.030, 0.020, n=4)
    with store.session(db, read_only=True) as con:
        tie = ab_report(con, ("chat",), None, None, None, None, ABOptions(metric="p99_tpot_ms"))
    with store.session(short, read_only=True) as con:
        early = ab_report(con, ("chat",), None, None, None, None, ABOptions(metric="p99_tpot_ms"))
    assert tie["verdict"] == "tie" and tie["winner"] is None
    lo, hi = tie["difference_ci"]
    assert lo <= 0 <= hi or abs(tie["gain_pct"]) <= 2
    assert early["verdict"] == "too_early" and "shared block" in early["why"]


def test_a_store_holding_nan_buckets_and_lying_counters_reads_as_without_them(db: Path, tmp_path: Path) -> None:
    """A store written before the watch refused lies (NaN bucket bounds, counters beyond 2**53) is read around
    them: the readout equals the clean store's, with no ``KeyError: nan``."""
    import dataclasses

    _arms(db, 0.030, 0.020)
    a = fleet.target("dep-a", "chat", "F", "ngram", 2, "g", "chat")
    b = fleet.target("dep-b", "chat", "F", "ngram", 4, "g", "chat")
    rows = fleet.series(a, 0.7, n=40, tpot_s=0.030, seed=1) + fleet.series(b, 0.6, n=40, tpot_s=0.020, seed=2)
    for r in rows:
        r.sample = dataclasses.replace(r.sample, histograms={m: {**h, float("nan"): 1e9, float("-inf"): 3.0}
                                                             for m, h in r.sample.histograms.items()})
    lie = rows[10]
    lie.sample = dataclasses.replace(lie.sample, values={**lie.sample.values, "generation_tokens": 1e306,
                                                         "requests_ok": float("inf")})
    dirty = tmp_path / "dirty.duckdb"
    fleet.write(dirty, rows)
    opts = ABOptions(metric="p99_tpot_ms")
    with store.session(db, read_only=True) as con:
        clean = ab_report(con, ("chat",), None, None, None, None, opts)
    with store.session(dirty, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM watch_histograms WHERE isnan(le)").fetchall() == [(80 * 3,)]
        got = ab_report(con, ("chat",), None, None, None, None, opts)
        thr = ab_report(con, ("chat",), None, None, None, None, ABOptions(metric="output_throughput_per_gpu"))
    assert got["verdict"] == clean["verdict"] == "winner" and got["winner"] == "dep-b"
    assert got["a"]["metrics"]["p99_tpot_ms"] == clean["a"]["metrics"]["p99_tpot_ms"]
    assert thr["a"]["metrics"]["output_throughput_per_gpu"]["value"] < 1e6, "the 1e306 never reaches a sum"
