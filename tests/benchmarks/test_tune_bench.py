"""Smoke test of ``benchmarks/tune.py`` on a small setting (one world, a 10-cell matrix, 300 truth requests per cell):
it runs end to end as a subprocess and prints both figures with their same-run baselines. No target assertions:
the figures are measured (benchmarks/RESULTS.md), not tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO
from tests.runner.test_tune import RACE


def test_tune_benchmark_prints_its_figures(tmp_path):
    matrix = tmp_path / "race.toml"
    matrix.write_text(RACE)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_DB": str(tmp_path / "never-used.duckdb")}
    out = subprocess.run([sys.executable, "benchmarks/tune.py", "--matrix", str(matrix), "--worlds", "1",
                          "--truth-requests", "300", "--workdir", str(tmp_path / "w"), "--json"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    share, correct = doc["figures"]["tune_gpu_share"], doc["figures"]["tune_correct_share"]
    assert share["median"] > 0 and share["full_grid_gpu_hours"] > 0 and share["factorized_gpu_hours"] > 0
    assert correct["groups"] == 2 and 0 <= correct["correct"] <= 2 and "target" in correct
    (world,) = doc["worlds"]
    assert world["world"] == 1 and len(world["judged"]) == 2
    assert {"pick", "truth_best", "gap_pct", "correct"} <= set(world["judged"][0])
    assert not (tmp_path / "never-used.duckdb").exists()
