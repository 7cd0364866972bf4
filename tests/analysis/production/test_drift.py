"""The drift decision on the default store: a constructed drift that changes the winner is flagged (exit 3),
one that does not is not; the benchmark expectation and the gap are reported with their provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.production.report import ProductionQuery, production_report
from ingest import sql, store
from tests.analysis.production import fleet
from tests.conftest import cli


@pytest.fixture(scope="module")
def drift_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("drift") / "s.duckdb"
    shutil.copy(default_db, db)
    fleet.without_model_error(db)
    with store.session(db, read_only=True) as con:
        bench = sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                             "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0]
    for name, rate in (("same", bench), ("low", bench * 0.3)):
        t = fleet.target(name, f"seg-{name}", "Kimi", "dspark", 6, "MI355X", "code")
        fleet.write(db, fleet.series(t, rate, seed=1))
    return db


def test_a_drift_that_changes_the_winner_is_flagged_and_one_that_does_not_is_not(drift_db: Path) -> None:
    with store.session(drift_db, read_only=True) as con:
        doc = production_report(con, ProductionQuery(window_s=300))
    seg = {s["segment"]: s for s in doc["segments"]}
    same, low = seg["seg-same"], seg["seg-low"]
    assert same["status"] == "no_change" and abs(same["gap_pct"]) < 10
    assert (same["at_production_acceptance"]["method"], same["at_production_acceptance"]["depth"]) == (
        same["at_benchmark_acceptance"]["method"], same["at_benchmark_acceptance"]["depth"])
    assert low["status"] == "winner_changed" and low["gap_pct"] < -50 and low["outside_band"]
    rec, before = low["recommendation"], low["at_benchmark_acceptance"]
    assert (rec["method"], rec["depth"]) != (before["method"], before["depth"])
    # the deployed dspark·6 is clearly beaten (outside the tied set, gain interval above 0) even where the new
    # leaders tie among themselves: that is a change worth the alert
    assert rec["clear"] or (low["deployed_clearly_beaten"] and rec["gain_ci_pct"][0] > 0)
    assert not same["deployed_clearly_beaten"]
    assert low["benchmark"]["provenance"] == "simulated" and low["simulated"]
    assert doc["changed"] == ["seg-low"]
    assert len(low["windows"]) >= 2 and all(w["acceptance_rate"] < 0.3 for w in low["windows"])


def test_drift_cli_exits_3_only_when_a_winner_changed(drift_db: Path) -> None:
    changed = cli("analysis", "drift", "--db", str(drift_db), "--json")
    assert changed.returncode == 3, changed.stderr
    assert json.loads(changed.stdout)["changed"] == ["seg-low"]
    fine = cli("analysis", "drift", "--segment", "seg-same", "--db", str(drift_db))
    assert fine.returncode == 0, fine.stderr
    assert "seg-same: dspark·6 on Kimi/MI355X/code" in fine.stdout and "no change" in fine.stdout
    bad = cli("analysis", "drift", "--segment", "nope", "--db", str(drift_db))
    assert bad.returncode == 2 and bad.stderr.startswith("error: --segment 'nope': no such segment")


def test_production_nightly_script_watches_drifts_and_alerts(drift_db: Path, tmp_path: Path) -> None:
    """deploy/nightly/spectune-production.sh: a watch round (a dead target is only a warning), the drift report,
    the alert on exit 3; a store without the drifted segment is quiet (exit 0)."""
    import os
    import subprocess

    from tests.conftest import REPO

    db = tmp_path / "p.duckdb"
    shutil.copy(drift_db, db)
    targets = tmp_path / "targets.toml"
    targets.write_text('timeout_s = 1\n[[target]]\nname = "gone"\nurl = "http://127.0.0.1:9/metrics"\n'
                       'segment = "elsewhere"\n')
    reports, alerts = tmp_path / "reports", tmp_path / "alert.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_HOME": str(REPO), "SPECTUNE_DB": str(db),
           "SPECTUNE_TARGETS": str(targets), "SPECTUNE_REPORTS": str(reports), "SPECTUNE_PRODUCTION_SINCE": "0",
           "SPECTUNE_ALERT_CMD": f'cp "$SPECTUNE_DRIFT_JSON" {alerts}'}
    script = REPO / "deploy" / "nightly" / "spectune-production.sh"
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 3, res.stdout + res.stderr
    latest = reports / "production-latest"
    doc = json.loads((latest / "production.json").read_text())
    assert doc["changed"] == ["seg-low"] and json.loads(alerts.read_text()) == doc
    assert "WINNER CHANGED" in (latest / "production.txt").read_text()
    watch = json.loads((latest / "watch.json").read_text())
    assert watch["targets"][0]["failed_rounds"] == 1 and "gone" in (latest / "watch.err").read_text()
    with store.session(db) as con:
        con.execute("DELETE FROM watch_samples WHERE segment = 'seg-low'")
    alerts.unlink()
    quiet = subprocess.run(["bash", str(script)], env={**env, "SPECTUNE_TARGETS": ""}, capture_output=True,
                           text=True, timeout=600)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert not alerts.exists()


@pytest.mark.parametrize("args, needle", [
    (["drift", "--segment", "x'; DROP TABLE watch_samples; --"], "no such segment"),
    (["drift", "--segment", "\u202eseg-low"], "no such segment"),
    (["drift", "--since", "yesterday"], "expected ISO 8601"),
    (["drift", "--window", "0"], "--window must be"),
    (["ab", "--a", "low"], "give both --a and --b"),
    (["ab", "--segment", "seg-low"], "an A/B needs exactly two"),
    (["ab", "--a", "x", "--b", "y", "--block", "-1"], "--block must be"),
])
def test_bad_drift_and_ab_arguments_are_one_line_and_change_nothing(drift_db: Path, args, needle, capsys) -> None:
    from analysis.__main__ import main

    before = drift_db.stat().st_mtime_ns
    assert main([*args, "--db", str(drift_db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and needle in err, err
    assert drift_db.stat().st_mtime_ns == before
    with store.session(drift_db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM watch_samples")[0] > 0


def test_drift_reads_around_counters_that_lie_in_an_old_store(drift_db: Path, tmp_path: Path) -> None:
    """Finite counters near 1e306 (written before the watch refused them) read as unknown: drift decides the
    segment as on clean data (no traceback, exit 0 or 3 — not 1), and the lying samples cost only their own
    intervals."""
    import dataclasses

    db = tmp_path / "lies.duckdb"
    shutil.copy(drift_db, db)
    t = fleet.target("liar", "seg-liar", "Kimi", "dspark", 6, "MI355X", "code")
    with store.session(db, read_only=True) as con:
        bench = sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                             "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0]
    rows = fleet.series(t, bench, seed=3)
    for i, big in ((5, 1e306), (20, float(2**53))):
        s = rows[i].sample
        rows[i].sample = dataclasses.replace(s, values={k: big for k in s.values})
    fleet.write(db, rows)
    res = cli("analysis", "drift", "--db", str(db), "--json")
    assert res.returncode in (0, 3), res.stderr
    liar = next(s for s in json.loads(res.stdout)["segments"] if s["segment"] == "seg-liar")
    assert liar["status"] == "no_change" and abs(liar["gap_pct"]) < 10
    # 39 intervals of ~400 drafts × 6, less the four that touch a lying sample: nothing near 1e306 summed in
    assert 30 * 400 * 6 < liar["production"]["draft_tokens"] < 40 * 400 * 6
