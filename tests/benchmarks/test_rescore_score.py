"""Smoke test of ``benchmarks/rescore_score.py``: the scorer measured in-process against an older tree, both in
subprocesses on a real store. Here the "older tree" is this one, so the documents must be identical; no timing
assertions (speed is measured, not tested)."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.traces import make_trace
from tests.conftest import REPO


def test_rescore_score_measures_both_trees_and_compares_their_documents(tmp_path, default_db):
    trace = make_trace(600, tmp_path / "t.parquet", "parquet", seed=3)
    out = subprocess.run([sys.executable, "benchmarks/rescore_score.py", str(trace), "--repeats", "1", "--before",
                          str(REPO), "--db", str(default_db)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["documents_identical"] is True
    for side in ("after", "before"):
        assert len(doc[side]["cpu_s"]) == 1 and doc[side]["cpu_s_median"] > 0 and doc[side]["shards"] >= 1
    assert doc["cpu_ratio"] > 0
