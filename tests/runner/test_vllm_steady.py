"""The vLLM runner path stamps request sends on the load's own clock, so its cells get a steady-state window
like simulated ones: against the stand-in server process (tests/runner/fake_vllm.py) at concurrency 4, never
more than 4 requests are in flight, the window is found and holds most requests, and the figure is not below
the whole-window one (which includes ramp-up and drain)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ingest import sql, store
from tests.runner.test_vllm_backend import run, write_matrix


def test_measured_cells_get_a_steady_window(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok"], methods="[methods.none]", concurrency="[4]", requests=8,
                        run_extra="requests_per_slot = 15")
    summary = run(tmp_path, path)
    assert (summary.cells_ok, summary.cells_failed) == (1, 0), summary.failures
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        cell = sql.frame(con, "SELECT * FROM cells").row(0, named=True)
        reqs = sql.frame(con, "SELECT start_s, e2e_ms FROM requests ORDER BY request_index")
        reps = sql.frame(con, "SELECT steady_output_throughput AS v FROM cell_bootstrap")["v"].to_numpy()
    assert cell["n_requests"] == 60  # max(8, 15 × 4)
    start = reqs["start_s"].to_numpy()
    end = start + reqs["e2e_ms"].to_numpy() / 1e3
    assert start.min() >= 0 and end.max() <= cell["window_s"] + start.min() + 1e-6  # one clock for both
    in_flight = [int(((start <= t) & (end > t)).sum()) for t in start]
    assert max(in_flight) <= 4
    assert cell["steady_fallback"] is None, cell["steady_fallback"]
    assert cell["steady_requests"] >= 40 and 0 < cell["steady_window_s"] <= cell["window_s"]
    # the drain is left out, so the steady figure is not below the whole window's beyond the server's jitter
    assert cell["steady_output_throughput"] >= cell["output_throughput"] * 0.95
    assert np.isfinite(reps).all() and reps.size == 200
