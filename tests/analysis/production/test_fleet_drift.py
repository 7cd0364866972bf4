"""Drift on a real fleet's benchmark: cells measured without per-request data (counters only, NaN acceptance
replicates — what ``runner run --endpoint`` stores against servers without the per-request flag), production
acceptance outside the benchmark band (its own alert, exit 3), time zones on every timestamp, and tiny windows
that are "too few tokens to tell" rather than exact points. Real DuckDB stores, the real CLI."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from analysis.production.expectation import expectation
from analysis.production.report import ProductionQuery, production_report
from analysis.production.windows import MIN_INTERVALS
from ingest import sql, store
from tests.analysis.production import fleet
from tests.conftest import cli


@pytest.fixture(scope="module")
def fleet_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    return fleet.counters_only_store(tmp_path_factory, default_db)


@pytest.fixture(scope="module")
def doc(fleet_db: tuple[Path, float]) -> dict:
    res = cli("analysis", "drift", "--db", str(fleet_db[0]), "--window", "300", "--json")
    assert res.returncode == 3, res.stderr  # not 1: no traceback on counters-only cells
    return json.loads(res.stdout)


def _seg(doc: dict, name: str) -> dict:
    return next(s for s in doc["segments"] if s["segment"] == name)


def test_counters_only_cells_give_acceptance_and_a_band_from_their_counters(fleet_db: tuple[Path, float]) -> None:
    db, bench = fleet_db
    with store.session(db, read_only=True) as con:
        nan_reps = sql.one(con, "SELECT count(*) FROM cell_bootstrap b JOIN cells c USING (run_id, cell_id) "
                                "WHERE c.family = 'Kimi' AND c.gpu = 'MI355X' AND c.depth > 0 "
                                "AND NOT isnan(b.acceptance_rate)")[0]
        cells = sql.frame(con, "SELECT acceptance_rate, drafts FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                               "AND workload = 'code' AND method = 'dspark' AND depth = 6")
        exp = expectation(con, "Kimi", "dspark", 6, "code", "MI355X")
    assert nan_reps == 0, "the benchmark cells have no per-request acceptance to resample"
    assert exp is not None and exp["band_source"] == "counters" and exp["provenance"] == "measured"
    assert exp["acceptance_rate"] == pytest.approx(bench, abs=1e-6)
    # at these draft counts the Wilson interval is the normal one: check it against p ± 1.96·√(p(1−p)/n)
    lows = [p - 1.96 * math.sqrt(p * (1 - p) / n) for p, n in cells.iter_rows()]
    highs = [p + 1.96 * math.sqrt(p * (1 - p) / n) for p, n in cells.iter_rows()]
    assert exp["band"][0] == pytest.approx(min(lows), abs=2e-4) and exp["band"][1] == pytest.approx(max(highs),
                                                                                                    abs=2e-4)
    assert exp["band"][0] < bench < exp["band"][1]


def test_drift_decides_every_segment_on_counters_only_cells(doc: dict) -> None:
    same, low, f90, tiny = (_seg(doc, f"seg-{n}") for n in ("same", "low", "f90", "tiny"))
    assert same["status"] == "no_change" and same["outside_band"] is False
    assert low["status"] == "winner_changed" and low["outside_band"] is True
    assert f90["status"] == "acceptance_outside_band" and f90["outside_band"] is True and f90["gap_pct"] < -5
    _lo, hi = f90["production"]["acceptance_rate_ci"]
    assert hi < f90["benchmark"]["band"][0], "the whole production interval lies below the band"
    assert (f90["recommendation"]["method"], f90["recommendation"]["depth"]) == ("dspark", 6)
    # a handful of drafts: no interval, no verdict on the band, no alert
    assert tiny["production"]["interval"] == "too few tokens to tell"
    assert tiny["production"]["acceptance_rate_ci"] == [None, None] and tiny["outside_band"] is None
    assert tiny["status"] == "no_change"
    assert doc["changed"] == ["seg-low"] and doc["outside_band"] == ["seg-f90"]
    assert sorted(doc["alert"]) == ["seg-f90", "seg-low"]


def test_acceptance_outside_the_band_alone_exits_3_and_says_so(fleet_db: tuple[Path, float]) -> None:
    out = cli("analysis", "drift", "--segment", "seg-f90", "--db", str(fleet_db[0]))
    assert out.returncode == 3, out.stderr
    assert "ACCEPTANCE OUTSIDE BAND: production is below the benchmark band" in out.stdout
    assert "WINNER CHANGED" not in out.stdout and "--speculative-config" in out.stdout
    quiet = cli("analysis", "drift", "--segment", "seg-same", "--segment", "seg-tiny", "--db", str(fleet_db[0]))
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "(too few tokens to tell)" in quiet.stdout and "no change" in quiet.stdout


def _timestamps(node, key: str = "") -> list[str]:
    if isinstance(node, dict):
        return [t for k, v in node.items() for t in _timestamps(v, k)]
    if isinstance(node, list):
        return [t for v in node for t in _timestamps(v, key)]
    return [node] if key in ("ts", "window", "start", "end") and isinstance(node, str) else []


def test_every_timestamp_has_its_time_zone(doc: dict, fleet_db: tuple[Path, float]) -> None:
    stamps = _timestamps(doc)
    assert len(stamps) > 10 and doc["period"]["start"] in stamps
    assert any(a["kind"] == "config_change" for a in _seg(doc, "seg-same")["annotations"])
    for s in stamps:
        ts = datetime.fromisoformat(s)
        assert ts.tzinfo is not None and ts.utcoffset().total_seconds() == 0 and s.endswith("+00:00"), s
    assert datetime.fromisoformat(doc["period"]["start"]) == datetime.fromtimestamp(fleet.T0 + 15, UTC)
    text = cli("analysis", "drift", "--segment", "seg-same", "--db", str(fleet_db[0])).stdout
    assert text.startswith("period 2026-11-30 00:53:35 UTC → 2026-11-30 01:03:05 UTC"), text


def test_windows_of_a_tiny_segment_are_never_exact_points(fleet_db: tuple[Path, float]) -> None:
    with store.session(fleet_db[0], read_only=True) as con:
        rep = production_report(con, ProductionQuery(segments=("seg-tiny", "seg-same"), window_s=60, decide=False))
    tiny = next(s for s in rep["segments"] if s["segment"] == "seg-tiny")["windows"]
    same = next(s for s in rep["segments"] if s["segment"] == "seg-same")["windows"]
    assert tiny and all(w["interval"] == "too few tokens to tell" and w["acceptance_rate_ci"] == [None, None]
                        for w in tiny)
    assert all(w["acceptance_rate"] is None or 0 <= w["acceptance_rate"] <= 1 for w in tiny)
    # a busy segment: every full minute has its interval around the rate; only a minute cut by the period's
    # edge with fewer than MIN_INTERVALS scrape intervals in it has none
    full = [w for w in same if w["intervals"] >= MIN_INTERVALS]
    assert len(full) >= 5 and all(w["interval"] == "95 %" and w["acceptance_rate_ci"][0] < w["acceptance_rate"]
                                  < w["acceptance_rate_ci"][1] for w in full)
    assert all(w["interval"] == "too few tokens to tell" for w in same if w["intervals"] < MIN_INTERVALS)


def test_a_changed_winner_is_called_clear_only_when_it_is(doc: dict, fleet_db: tuple[Path, float]) -> None:
    low = _seg(doc, "seg-low")
    out = cli("analysis", "drift", "--segment", "seg-low", "--db", str(fleet_db[0])).stdout
    if low["recommendation"]["clear"]:
        assert "now wins clearly" in out
    else:  # the leaders tie: the alert is that the running config is clearly beaten, not a clear new winner
        assert low["deployed_clearly_beaten"] and "now wins clearly" not in out
        assert "the running config is clearly beaten (tie: " in out


def test_the_nightly_job_alerts_on_acceptance_outside_the_band_alone(fleet_db: tuple[Path, float],
                                                                     tmp_path: Path) -> None:
    """deploy/nightly/spectune-production.sh: no winner changed, one segment's acceptance left the band → exit 3
    and the alert command runs with the report."""
    import os
    import shutil
    import subprocess

    from tests.conftest import REPO

    db = tmp_path / "p.duckdb"
    shutil.copy(fleet_db[0], db)
    with store.session(db) as con:
        con.execute("DELETE FROM watch_samples WHERE segment NOT IN ('seg-f90', 'seg-same')")
    alert = tmp_path / "alert.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_HOME": str(REPO), "SPECTUNE_DB": str(db),
           "SPECTUNE_TARGETS": "", "SPECTUNE_REPORTS": str(tmp_path / "r"), "SPECTUNE_PRODUCTION_SINCE": "0",
           "SPECTUNE_ALERT_CMD": f'cp "$SPECTUNE_DRIFT_JSON" {alert}'}
    res = subprocess.run(["bash", str(REPO / "deploy" / "nightly" / "spectune-production.sh")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 3, res.stdout + res.stderr
    doc = json.loads(alert.read_text())
    assert doc["changed"] == [] and doc["outside_band"] == doc["alert"] == ["seg-f90"]
    assert "ACCEPTANCE OUTSIDE BAND" in res.stdout and "acceptance left the benchmark band" in res.stdout
