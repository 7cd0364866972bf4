"""``analysis curve`` says where its points come from: ``simulated`` and per-point ``backend`` in JSON, the
SIMULATED line in the text; throughput is the steady-state figure with the whole-window one beside it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from analysis.curves import curve
from ingest import store
from ingest.records import CellKey, RunInfo
from tests.conftest import cli

# one model: the default store also ships published Qwen models' cells (tests/analysis/test_published_winners.py)
ARGS = ("--family", "Qwen", "--method", "eagle3", "--workload", "code", "--model", "Qwen3.5-122B-A10B")


def test_simulated_points_are_labelled(default_db: Path):
    doc = json.loads(cli("analysis", "curve", *ARGS, "--json", db=default_db).stdout)
    assert doc["simulated"] is True and doc["backends"] == ["sim"]
    assert doc["points"] and all(p["backend"] == "sim" and p["simulated"] is True for p in doc["points"])
    assert all({"output_throughput", "whole_window_output_throughput", "steady_fallback"} <= set(p)
               for p in doc["points"])
    text = cli("analysis", "curve", *ARGS, db=default_db).stdout
    assert text.startswith("SIMULATED data") and "[sim]" in text and "whole window" in text


def _measured_store(tmp: Path) -> Path:
    db = tmp / "m.duckdb"
    n = 60
    reqs = pl.DataFrame({"request_index": np.arange(n, dtype=np.int32), "output_tokens": np.full(n, 100, np.int32),
                         "ttft_ms": np.full(n, 20.0), "e2e_ms": np.full(n, 1000.0),
                         "start_s": np.arange(n, dtype=float), "ok": np.ones(n, bool)})
    with store.session(db) as con:
        store.write_run(con, RunInfo(run_id="m", backend="vllm", source="test"))
        for depth in (2, 3):
            store.write_cell(con, "m", CellKey("eagle3", depth, "Qwen", "q", "code", "MI300X", 1), reqs,
                             window_s=60.0, gpu_count=1)
    return db


def test_measured_points_are_not_labelled_simulated(tmp_path: Path):
    db = _measured_store(tmp_path)
    with store.connect(db, read_only=True) as con:
        doc = curve(con, "Qwen", "eagle3", "code")
    assert doc["simulated"] is False and [p["backend"] for p in doc["points"]] == ["vllm", "vllm"]
    point = doc["points"][0]
    # back to back at c = 1: steady = tokens / busy time (60 s); the whole window is first send to last finish
    assert point["output_throughput"] == 100.0 and point["whole_window_output_throughput"] == 100.0
    text = cli("analysis", "curve", *ARGS[:-2], "--db", str(db)).stdout  # every model of the family (here one)
    assert "SIMULATED" not in text and "[vllm]" in text
