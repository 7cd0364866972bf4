"""The p_best rule's edges a user pays for: identical replicates split every column (a tie), and ties are
decided column by column on the paired replicates — not by each candidate's own interval against the winner's
point.

The replicates are built so the two rules disagree, with enough of them (20 000) that the share's own noise
(≤ 0.004 sd) is far smaller than the margins the verdicts rest on (worked out in each test's docstring).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.gains import interval
from analysis.metrics import get_metric
from analysis.winners import decide, decide_groups

THROUGHPUT = get_metric("output_throughput")
P99 = get_metric("p99_e2e_ms")
B = 20_000


def _z(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(B)


def test_identical_replicates_split_every_column_and_tie():
    """winner and candidate are level in every replicate: each column is split, p_best 0.5 each → tie."""
    same = 100.0 + 5.0 * _z(1)
    d = decide(np.array([100.0, 100.0]), np.vstack([same, same]), THROUGHPUT)
    assert d.tied == [0, 1] and not d.clear
    assert d.p_best == [0.5, 0.5]
    # the same for a lower-is-better metric (the sign flip must not turn the 0 into a win)
    d = decide(np.array([300.0, 300.0]), np.vstack([same + 200, same + 200]), P99)
    assert d.tied == [0, 1] and not d.clear


def test_a_constant_positive_difference_is_clear():
    """The other side of the zero edge: every replicate 0.5 apart is a clear win, however noisy each cell."""
    base = 100.0 + 20.0 * _z(2)
    d = decide(np.array([100.5, 100.0]), np.vstack([base + 0.5, base]), THROUGHPUT)
    assert d.tied == [0] and d.clear


def test_independent_noise_100_vs_90_sd_5_is_a_tie():
    """Difference 10 with sd 5·√2 = 7.07: the candidate is ahead with chance Φ(−1.41) = 0.079 ≥ 0.05 → tie
    (the winner's p_best 0.921 < 0.95). The candidate's own interval, 90 ± 9.8 = [80.2, 99.8], excludes the
    winner's 100: the wrong rule says clear."""
    reps = np.vstack([100.0 + 5.0 * _z(3), 90.0 + 5.0 * _z(4)])
    d = decide(np.array([100.0, 90.0]), reps, THROUGHPUT)
    assert d.order == [0, 1] and d.tied == [0, 1] and not d.clear
    assert abs(d.p_best[1] - 0.079) < 0.01
    _lo, hi = d.intervals[1]
    assert hi < 100.0  # the case really separates the rules: the winner's point is outside the candidate's own band


def test_shared_noise_100_vs_97_sd_10_is_clear():
    """Both cells share noise of sd 10 (a common bootstrap draw) plus their own sd 0.5: the difference is
    3 ± 1.96·0.71 = [1.6, 4.4], clear. Each own interval (±19.6) contains the other's point: the wrong rule ties."""
    shared = 10.0 * _z(5)
    reps = np.vstack([100.0 + shared + 0.5 * _z(6), 97.0 + shared + 0.5 * _z(7)])
    d = decide(np.array([100.0, 97.0]), reps, THROUGHPUT)
    assert d.tied == [0] and d.clear
    lo, hi = d.intervals[1]
    assert lo < 97.0 < 100.0 < hi


def test_shared_noise_on_a_lower_is_better_metric_is_clear():
    """The same construction for latency (300 beats 309): the paired difference decides, in the good direction."""
    shared = 30.0 * _z(8)
    reps = np.vstack([309.0 + shared + 1.0 * _z(9), 300.0 + shared + 1.0 * _z(10)])
    d = decide(np.array([309.0, 300.0]), reps, P99)
    assert d.order == [1, 0] and d.tied == [1] and d.clear


def test_grouped_verdicts_use_the_paired_difference_too():
    """decide_groups (what the CLI and the heatmap show) gives the same two verdicts and names the tied set."""
    cells = pl.DataFrame({
        "gpu": ["G"] * 4, "family": ["F"] * 4, "workload": ["indep", "indep", "shared", "shared"],
        "concurrency": [1] * 4, "method": ["mtp", "eagle3", "mtp", "eagle3"], "depth": [3, 2, 3, 2],
        "backend": ["vllm"] * 4, "run_id": ["r"] * 4, "cell_id": ["a1", "a2", "b1", "b2"],
    })
    shared = 10.0 * _z(11)
    reps = np.vstack([100.0 + 5.0 * _z(12), 90.0 + 5.0 * _z(13),
                      100.0 + shared + 0.5 * _z(14), 97.0 + shared + 0.5 * _z(15)])
    doc = decide_groups(cells, np.array([100.0, 90.0, 100.0, 97.0]), reps, THROUGHPUT)
    by = {c["workload"]: c for c in doc["cells"]}
    assert not by["indep"]["clear"]
    assert [(t["method"], t["depth"]) for t in by["indep"]["tied"]] == [("mtp", 3), ("eagle3", 2)]
    assert by["shared"]["clear"] and by["shared"]["tied"] == []
    assert by["shared"]["winner"]["method"] == "mtp" and by["shared"]["runner_up"]["method"] == "eagle3"
    for c in doc["cells"]:  # every candidate listed with its chance, the chances summing to 1
        assert abs(sum(x["p_best"] for x in c["candidates"]) - 1) < 1e-9
        assert [t["p_best"] for t in c["tied"]] == [x["p_best"] for x in c["candidates"]][: len(c["tied"])]
    assert doc["p_best_rule"]["clear_at"] == 0.95 and doc["p_best_rule"]["tie_at"] == 0.05


def test_equal_points_keep_their_input_order_even_among_many_candidates():
    """A group holds 20+ cells (methods × depths 1–8). Equal point values rank in input order — the same answer on
    every run and machine — checked against Python's stable sort, with enough candidates that numpy's default
    (introsort) would reorder them."""
    values = np.array([100.0, 90.0, 80.0] * 8)[np.random.default_rng(3).permutation(24)]
    reps = values[:, None] + np.random.default_rng(4).normal(0, 1, (24, 400))
    d = decide(values, reps, THROUGHPUT)
    assert d.order == sorted(range(24), key=lambda i: -values[i])
    d = decide(values, reps, P99)
    assert d.order == sorted(range(24), key=lambda i: values[i])


def test_a_candidate_without_a_value_ranks_last_and_is_never_tied():
    reps = np.vstack([100.0 + _z(20)[:400], np.full(400, np.nan), 99.5 + _z(21)[:400]])
    for metric, values, best in ((THROUGHPUT, [100.0, np.nan, 99.5], 0), (P99, [100.0, np.nan, 99.5], 2)):
        d = decide(np.array(values), reps, metric)
        assert d.order[0] == best and d.order[-1] == 1
        assert 1 not in d.tied and sorted(d.tied) == [0, 2]


def test_without_any_replicates_everyone_is_tied_with_the_winner():
    """A metric without replicates (an empty array): no difference can be called, the winner first in the tie,
    and nobody's chance of being best is known."""
    d = decide(np.array([50.0, 100.0, 75.0]), np.empty((0, 0)), THROUGHPUT)
    assert d.order == [1, 2, 0] and d.tied == [1, 2, 0] and not d.clear
    assert d.p_best == [None, None, None]
    assert all(np.isnan(lo) and np.isnan(hi) for lo, hi in d.intervals)


def test_the_thresholds_decide_how_sure_clear_is():
    """Difference 3 with sd 2·√2 = 2.83: the winner is best in Φ(1.06) = 0.855 of the columns — not clear at the
    default 0.95, clear at 0.8; the runner-up (0.145) is tied at tie-at 0.05, not at 0.2 (then it is still
    named: a tie always names its likeliest other candidate). The level only sets the candidates' intervals."""
    reps = np.vstack([100.0 + 2.0 * _z(30), 97.0 + 2.0 * _z(31)])
    values = np.array([100.0, 97.0])
    d = decide(values, reps, THROUGHPUT)
    assert not d.clear and abs(d.p_best[0] - 0.855) < 0.01
    assert decide(values, reps, THROUGHPUT, clear_at=0.8).clear
    assert decide(values, reps, THROUGHPUT, clear_at=0.9, tie_at=0.2).tied == [0, 1]
    half = decide(values, reps, THROUGHPUT, level=0.5)
    assert not half.clear
    # the candidates' own intervals at that level too: the 25 % and 75 % points
    assert half.intervals == [tuple(np.percentile(r, [25, 75])) for r in reps]


def test_replicates_that_agree_now_and_then_split_those_columns():
    """The winner is ahead in 90 % of the paired replicates and exactly level in 10 % of them: those columns are
    split, p_best = 0.90 + 0.05 = 0.95 (clear, exactly at the threshold) and the candidate's 0.05 (at tie-at,
    but a clear winner names no tie). Level in 20 %: 0.90 vs 0.10 — a tie."""
    cand = 100.0 + 5.0 * _z(32)
    for every, p_win, clear in ((10, 0.95, True), (5, 0.90, False)):
        ahead = np.where(np.arange(B) % every == 0, 0.0, 1.0 + np.abs(_z(33)))
        d = decide(np.array([101.0, 100.0]), np.vstack([cand + ahead, cand]), THROUGHPUT)
        assert abs(d.p_best[0] - p_win) < 1e-9 and d.clear is clear
        assert d.tied == ([0] if clear else [0, 1])


def test_one_rows_interval_at_any_level_is_numpys_percentiles():
    r = 10.0 + _z(40)[:500]
    assert interval(r) == tuple(np.percentile(r, [2.5, 97.5]))
    assert interval(r, 0.5) == tuple(np.percentile(r, [25, 75]))
    assert interval(r.astype(np.float32).tolist(), 0.8) == tuple(np.percentile(np.asarray(r, np.float32).astype(float),
                                                                                [10, 90]))
