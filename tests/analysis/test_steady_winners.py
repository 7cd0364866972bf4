"""The output-throughput winner rule decides on the steady-state figure: on the simulator, doubling the requests
per cell moves no c=64 winner's value by more than its interval — while the whole-window figure does move."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis import frames
from analysis.winners import winners
from ingest import store
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix
from tests.conftest import cli

REDUCED = """
name = "steady-{n}"
gpus = ["MI300X"]
[methods.none]
[methods.mtp]
depths = [2, 4]
[methods.eagle3]
depths = [2, 5]
[methods.dflash]
depths = [3, 6]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[families.Gemma]
model = "google/gemma-4-31B-it"
[workloads.code]
max_tokens = 256
[workloads.chat]
max_tokens = 256
temperature = 0.7
[load]
concurrency = [64]
[run]
requests_per_cell = {n}
"""
N = 160  # 2.5 requests per slot at c = 64: the whole window still holds a long drain


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for n in (N, 2 * N):
        folder = tmp_path_factory.mktemp(f"steady{n}")
        (folder / "m.toml").write_text(REDUCED.format(n=n))
        db = folder / "s.duckdb"
        summary = run_matrix(load_matrix(folder / "m.toml"), RunOptions(backend="sim", db=db))
        assert summary.cells_ok == 7 * 4 and summary.cells_failed == 0
        out[n] = db
    return out


def _doc(db: Path) -> dict:
    with store.connect(db, read_only=True) as con:
        return winners(con, "output_throughput")


def _values(db: Path, column: str) -> dict[tuple, tuple[float, float, float]]:
    """(family, workload, method, depth) → (value, ci_low, ci_high) of a cells column and its replicates."""
    from analysis.gains import interval

    with store.connect(db, read_only=True) as con:
        cells = frames.cells(con)
        reps = frames.sampling_replicates(con, cells, column)  # sampling noise only: what more requests shrink
    out = {}
    for i, row in enumerate(cells.iter_rows(named=True)):
        lo, hi = interval(reps[i])
        out[(row["family"], row["workload"], row["method"], row["depth"])] = (row[column], lo, hi)
    return out


def test_doubling_the_requests_moves_no_c64_winner_by_more_than_its_interval(stores):
    base, doubled = _doc(stores[N]), _doc(stores[2 * N])
    once = _values(stores[N], "steady_output_throughput")
    again = _values(stores[2 * N], "steady_output_throughput")
    whole_2n = _values(stores[2 * N], "output_throughput")
    assert len(base["cells"]) == 4 and all(c["concurrency"] == 64 for c in base["cells"])
    for c in base["cells"]:
        w = c["winner"]
        assert w["steady_fallback"] is None  # decided on the steady window, not the fallback
        value_2n = again[(c["family"], c["workload"], w["method"], w["depth"])][0]
        key = (c["family"], c["workload"], w["method"], w["depth"])
        # the sampling intervals (the model's error does not shrink with requests): the two runs are independent
        # estimates, so their difference is held to the two widths combined
        width = float(np.hypot(once[key][2] - once[key][1], again[key][2] - again[key][1]))
        print(f"c=64 {c['family']}/{c['workload']} winner {w['method']}:{w['depth']}: steady {w['value']:.1f} "
              f"[{w['ci_low']:.1f}, {w['ci_high']:.1f}] at {N} requests, {value_2n:.1f} at {2 * N}; whole window "
              f"{w['whole_window_value']:.1f} → {whole_2n[key][0]:.1f}")  # shown by pytest -s
        assert abs(value_2n - w["value"]) <= width, (c["family"], c["workload"], w, value_2n)
        assert w["whole_window_value"] < w["value"]  # the whole window is shown next to it, diluted by the drain
    assert {(c["family"], c["workload"]) for c in doubled["cells"]} == {(c["family"], c["workload"])
                                                                        for c in base["cells"]}


def test_the_whole_window_figure_fails_the_same_check(stores):
    """The check has teeth: on the whole window, doubling the requests moves the figures beyond their intervals."""
    base, again = _values(stores[N], "output_throughput"), _values(stores[2 * N], "output_throughput")
    moved = [k for k, (v, lo, hi) in base.items() if abs(again[k][0] - v) > hi - lo]
    assert len(moved) >= len(base) // 2


def test_steady_window_holds_most_requests_at_the_default_matrix_counts(repo: Path):
    """The default matrix runs enough requests at c = 64 that the steady window holds most of them."""
    from ingest.records import CellKey
    from runner.simulate import simulate_cell

    matrix = load_matrix(repo / "runner" / "matrices" / "default.toml")
    n = matrix.requests_for(64)
    for method, depth, workload in (("none", 0, "reasoning"), ("eagle3", 8, "code")):
        key = CellKey(method, depth, "Qwen", "Qwen/Qwen3.5-397B-A17B", workload, "MI300X", 64)
        res = simulate_cell(key, n, max_output_tokens=matrix.workload(workload).max_tokens)
        frames_ = store.cell_frames("r", key, res.requests, window_s=res.window_s, gpu_count=res.gpu_count,
                                    counters=res.counters)
        row = frames_["cells"].row(0, named=True)
        assert row["steady_fallback"] is None and row["steady_requests"] >= 0.75 * n, row


def test_cli_prints_both_figures_and_json_names_the_columns(stores):
    proc = cli("analysis", "winners", "--db", str(stores[N]))
    assert proc.returncode == 0, proc.stderr
    assert "whole window" in proc.stdout and proc.stdout.startswith("SIMULATED")
    doc = json.loads(cli("analysis", "winners", "--json", "--db", str(stores[N])).stdout)
    assert doc["value_column"] == "steady_output_throughput" and doc["whole_window_column"] == "output_throughput"
    assert all({"whole_window_value", "steady_fallback"} <= set(c["winner"]) for c in doc["cells"])
