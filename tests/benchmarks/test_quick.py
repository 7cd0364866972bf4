"""Smoke test of the benchmark harness: ``python benchmarks/run.py --quick --json`` runs end to end on real
parts (generated export → real store, the real app under AppTest, ``streamlit run`` + Chromium, the runner's
client against a stub) and prints every documented figure. No timing assertions: speed is measured, not
tested (benchmarks/RESULTS.md)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

from tests.conftest import REPO

KEYS = ("winners_10m_s", "winners_10m_pandas_s", "rescore_1m_csv_s", "rescore_10m_parquet_s", "ingest_rows_per_s",
        "page_rerun_s", "cold_start_s", "dashboard_rss_mb", "client_cpu_ms_per_request", "watch_cpu_pct_100_targets")


def test_quick_run_prints_every_documented_figure(tmp_path, default_db):
    # The default store the harness would build first in its workdir is the session's one, already built by the
    # same builder (ingest/default_data.py): a second run in the same workdir reuses it likewise.
    (tmp_path / "default").mkdir()
    shutil.copy(default_db, tmp_path / "default" / "spectune.duckdb")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(tmp_path / "never-used.duckdb")}
    out = subprocess.run([sys.executable, "benchmarks/run.py", "--quick", "--json", "--workdir", str(tmp_path)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert set(doc) >= {"figures", "machine", "sizes"}
    assert doc["machine"]["cpus"] >= 1 and doc["machine"]["load_avg_start"]
    for key in KEYS:
        f = doc["figures"][key]
        assert {"median", "min", "max", "repeats", "unit"} <= set(f), key
        assert f["repeats"] >= 1 and all(math.isfinite(f[k]) and f[k] > 0 for k in ("median", "min", "max")), key
        assert f["min"] <= f["median"] <= f["max"], key
    # the baseline computed the same answer in the same run
    agree = doc["figures"]["winners_10m_pandas_s"]["agreement"]
    assert agree["groups"] > 0 and agree["same_winner"] == agree["groups"]
    assert doc["figures"]["ingest_rows_per_s"]["rows"] == doc["sizes"]["store_rows"]
    assert doc["sizes"]["store_rows_requested"] <= doc["sizes"]["store_rows"]
    assert not (tmp_path / "never-used.duckdb").exists()
    # the quick watch round is 5 s (sizes says so), the measured window spans it, and its target (set at the full
    # run's 15 s) gets no verdict
    watch = doc["figures"]["watch_cpu_pct_100_targets"]
    assert doc["sizes"]["watch_interval_s"] == 5.0 <= watch["window_s"][0] and "meets_target" not in watch
