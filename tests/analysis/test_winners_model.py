"""The model-draw half of the winner rule (``decide(..., model=…)``): a candidate ahead of the winner under any
draw of the model's constants is tied with it — strictly ahead, in the metric's good direction — and the tied list
keeps the ranking's order. Hand-computed cases: the replicates share one noise vector, so the sampling rule alone
calls every candidate clear and only the model draws can tie.
"""

from __future__ import annotations

import numpy as np

from analysis.metrics import get_metric
from analysis.winners import decide

THROUGHPUT = get_metric("output_throughput")
P99 = get_metric("p99_e2e_ms")


def _reps(values: list[float]) -> np.ndarray:
    noise = np.random.default_rng(7).standard_normal(400)
    return np.array(values)[:, None] + noise[None, :]  # paired differences are constant: all clear by sampling


def test_without_model_draws_the_shared_noise_makes_every_candidate_clear():
    values = [100.0, 95.0, 89.5]
    d = decide(np.array(values), _reps(values), THROUGHPUT)
    assert d.clear and d.tied == [0]


def test_a_candidate_ahead_under_one_draw_is_tied_and_one_behind_by_half_a_unit_is_not():
    """Draw 2: the winner makes 100·0.9 = 90; candidate 1 makes 95·1.1 = 104.5 (ahead: tied); candidate 2 makes
    89.5·1.0 = 89.5, half a token/s behind (not tied); draw 1 changes nothing."""
    values = [100.0, 95.0, 89.5]
    model = np.array([[1.0, 0.9], [1.0, 1.1], [1.0, 1.0]])
    d = decide(np.array(values), _reps(values), THROUGHPUT, model=model)
    assert d.tied == [0, 1] and not d.clear
    assert d.order == [0, 1, 2]


def test_equal_under_a_draw_is_not_ahead_for_a_lower_is_better_metric():
    """p99 latency: the winner's 48 ms × 1.25 = 60 ms equals the runner-up's 60 ms × 1.0 exactly under draw 2 —
    not ahead, so still clear; a runner-up at 59 ms would be ahead (tied)."""
    values = [48.0, 60.0]
    model = np.array([[1.0, 1.25], [1.0, 1.0]])
    d = decide(np.array(values), _reps(values), P99, model=model)
    assert d.clear and d.tied == [0]
    closer = [48.0, 59.0]
    d = decide(np.array(closer), _reps(closer), P99, model=model)
    assert d.tied == [0, 1]


def test_tied_candidates_follow_the_ranking_not_their_index():
    """Values 80, 100, 95, 90 rank 1, 2, 3, 0. Under draw 2 the winner (100·0.5 = 50) is passed by index 2
    (95) and index 0 (80), not by index 3 (90·0.5 = 45): tied = [1, 2, 0] in rank order."""
    values = [80.0, 100.0, 95.0, 90.0]
    model = np.array([[1.0, 1.0], [1.0, 0.5], [1.0, 1.0], [1.0, 0.5]])
    d = decide(np.array(values), _reps(values), THROUGHPUT, model=model)
    assert d.order == [1, 2, 3, 0]
    assert d.tied == [1, 2, 0]
