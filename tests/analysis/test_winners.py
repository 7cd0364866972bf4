"""The winner rule: a constructed tie is a tie, a constructed clear win is clear, noise never wins."""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.metrics import get_metric
from analysis.winners import decide, decide_groups

THROUGHPUT = get_metric("output_throughput")
P99 = get_metric("p99_e2e_ms")


def _reps(mean: float, sd: float, seed: int, n: int = 200) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_clear_win_is_clear():
    reps = np.vstack([_reps(100, 1, 1), _reps(80, 1, 2), _reps(60, 1, 3)])
    d = decide(reps.mean(axis=1), reps, THROUGHPUT)
    assert d.order[0] == 0 and d.clear and d.tied == [0]


def test_overlapping_candidates_tie_and_are_named():
    reps = np.vstack([_reps(100, 5, 1), _reps(99, 5, 2), _reps(60, 1, 3)])
    d = decide(np.array([100.0, 99.0, 60.0]), reps, THROUGHPUT)
    assert not d.clear and sorted(d.tied) == [0, 1]


def test_lower_is_better_metrics_pick_the_smallest():
    reps = np.vstack([_reps(500, 2, 1), _reps(300, 2, 2)])
    d = decide(np.array([500.0, 300.0]), reps, P99)
    assert d.order[0] == 1 and d.clear


def test_without_replicates_no_winner_is_claimed_clear():
    nan = np.full((2, 200), np.nan)
    d = decide(np.array([100.0, 50.0]), nan, THROUGHPUT)
    assert d.order[0] == 0 and not d.clear


def test_groups_report_gain_vs_baseline_and_runner_up():
    cells = pl.DataFrame({
        "gpu": ["MI355X"] * 3, "family": ["Qwen"] * 3, "workload": ["code"] * 3, "concurrency": [1] * 3,
        "method": ["none", "mtp", "eagle3"], "depth": [0, 3, 3], "backend": ["sim"] * 3,
        "run_id": ["r"] * 3, "cell_id": ["a", "b", "c"],
    })
    reps = np.vstack([_reps(100, 1, 1), _reps(150, 1, 2), _reps(120, 1, 3)])
    res = decide_groups(cells, np.array([100.0, 150.0, 120.0]), reps, THROUGHPUT)
    (cell,) = res["cells"]
    assert cell["winner"]["method"] == "mtp" and cell["clear"]
    assert cell["runner_up"]["method"] == "eagle3"
    assert cell["gain_vs_none_pct"] == 50.0
    assert cell["margin_pct"] == 25.0
    assert res["simulated"] is True
