"""Practical equivalence and the sensible pick: a margin makes small differences equal, ties name their pick by
the stated rule (shallowest, then the deployed method, then no drafter), a 30 % gap reads differently from 1 %."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis.equivalence import judge, pick_among
from analysis.metrics import get_metric
from analysis.winners import decide, decide_groups

THROUGHPUT = get_metric("output_throughput")
P99 = get_metric("p99_e2e_ms")


def _reps(mean: float, sd: float, seed: int, n: int = 200) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def _cells(methods: list[str], depths: list[int]) -> pl.DataFrame:
    n = len(methods)
    return pl.DataFrame({"gpu": ["MI355X"] * n, "family": ["Qwen"] * n, "workload": ["code"] * n,
                         "concurrency": [1] * n, "method": methods, "depth": depths, "backend": ["vllm"] * n,
                         "run_id": ["r"] * n, "cell_id": [f"c{i}" for i in range(n)]})


def test_a_narrow_interval_within_the_margin_is_equivalent_not_clear():
    # 100 vs 99: the intervals are tight (sd 0.05) so the winner rule separates them, yet 1 % is within 2 %
    reps = np.vstack([_reps(100, 0.05, 1), _reps(99, 0.05, 2), _reps(60, 0.05, 3)])
    values = np.array([100.0, 99.0, 60.0])
    d = decide(values, reps, THROUGHPUT)
    assert d.clear  # the statistics alone call it
    j = judge(["eagle3", "dflash", "none"], [4, 2, 0], values, d.order, d.tied, THROUGHPUT, 2.0)
    assert j.verdict == "equivalent" and j.equivalent == [0, 1]
    assert j.pick == 1 and j.pick_reason == "shallowest"  # dflash·2 is shallower than eagle3·4
    j0 = judge(["eagle3", "dflash", "none"], [4, 2, 0], values, d.order, d.tied, THROUGHPUT, 0.5)
    assert j0.verdict == "clear" and j0.pick == 0  # a margin below the gap: the clear winner stands


def test_a_tie_beyond_the_margin_stays_a_tie_and_still_names_its_pick():
    # wide intervals: 100, 99.5 and 70 cannot be separated; 70 is 30 % behind, 99.5 only 0.5 %
    reps = np.vstack([_reps(100, 30, 1), _reps(99.5, 30, 2), _reps(70, 30, 3)])
    values = np.array([100.0, 99.5, 70.0])
    d = decide(values, reps, THROUGHPUT)
    assert sorted(d.tied) == [0, 1, 2]
    j = judge(["mtp", "mtp", "ngram"], [5, 3, 2], values, d.order, d.tied, THROUGHPUT, 2.0)
    assert j.verdict == "tie" and j.beyond == [2] and j.equivalent == [0, 1]
    assert j.pick == 1  # never the 30 %-behind ngram·2, though it is the shallowest of the tied set
    assert j.gaps[2] == pytest.approx(30.0) and j.gaps[1] == pytest.approx(0.5)


def test_pick_rule_order_depth_then_deployed_then_no_drafter():
    # same depth: the deployed method wins the tie-break; then the method that needs no drafter checkpoint
    assert pick_among([("eagle3", 3), ("mtp", 3)], "mtp") == (1, "deployed method")
    assert pick_among([("eagle3", 3), ("ngram", 3)], "mtp") == (1, "no drafter needed")
    assert pick_among([("dflash", 3), ("eagle3", 3)], "mtp") == (0, "best point estimate")
    assert pick_among([("eagle3", 5), ("none", 0)], "mtp") == (1, "no speculation needed")
    i, why = pick_among([("mtp", 4), ("eagle3", 3), ("dflash", 3)], "mtp")
    assert i == 1 and why == "shallowest, then best point estimate"


def test_lower_is_better_gaps_and_pick():
    reps = np.vstack([_reps(500, 200, 1), _reps(505, 200, 2), _reps(700, 200, 3)])
    values = np.array([500.0, 505.0, 700.0])
    d = decide(values, reps, P99)
    j = judge(["dspark", "mtp", "eagle3"], [6, 2, 1], values, d.order, d.tied, P99, 2.0)
    assert j.gaps[1] == pytest.approx(1.0) and j.gaps[2] == pytest.approx(40.0)
    assert j.equivalent == [0, 1] and j.pick == 1


def test_groups_carry_verdict_pick_tie_text_and_the_default():
    cells = _cells(["none", "mtp", "eagle3", "dflash", "ngram"], [0, 3, 2, 2, 2])
    reps = np.vstack([_reps(100, 30, 1), _reps(150, 30, 2), _reps(149, 30, 3), _reps(148.5, 30, 4),
                      _reps(140, 30, 5)])
    res = decide_groups(cells, np.array([100.0, 150.0, 149.0, 148.5, 140.0]), reps, THROUGHPUT, margin_pct=2.0,
                        default=("mtp", 3))
    (cell,) = res["cells"]
    assert res["equivalence_margin_pct"] == 2.0 and "shallowest" in res["pick_rule"]
    assert cell["verdict"] == "tie"
    assert [e["label"] for e in cell["equivalent"]] == ["mtp·3", "eagle3·2", "dflash·2"]
    assert cell["pick"]["label"] == "eagle3·2" and cell["pick"]["reason"].startswith("shallowest")
    # ngram·2, 6.7 % behind, still best in ≥ 5 % of the replicates: a tie beyond the margin, chances stated
    assert cell["tied"][-1]["method"] == "ngram"
    p = {(t["method"], t["depth"]): t["p_best"] for t in cell["tied"]}
    assert p[("ngram", 2)] >= 0.05 and cell["tie_text"].startswith("tie: ")
    named = sorted(p.items(), key=lambda kv: -kv[1])[:2]
    assert cell["tie_text"].startswith(f"tie: {named[0][0][0]}·{named[0][0][1]} (p {named[0][1]:.2f}), ")
    assert "— pick eagle3·2 (shallowest" in cell["tie_text"]
    assert cell["default"]["label"] == "mtp·3" and cell["default"]["equivalent"]
    assert cell["default"]["pick_gain_pct"] == pytest.approx(149 / 150 * 100 - 100, abs=1e-4)


def test_a_wider_margin_turns_the_same_evidence_into_an_equivalent_set():
    cells = _cells(["mtp", "eagle3"], [3, 2])
    reps = np.vstack([_reps(150, 0.1, 1), _reps(145, 0.1, 2)])
    values = np.array([150.0, 145.0])
    strict = decide_groups(cells, values, reps, THROUGHPUT, margin_pct=2.0)["cells"][0]
    loose = decide_groups(cells, values, reps, THROUGHPUT, margin_pct=5.0)["cells"][0]
    assert strict["verdict"] == "clear" and strict["pick"]["label"] == "mtp·3"
    assert strict["tie_text"] == "clear: mtp·3 (p 1.00), 3.3 % ahead of eagle3·2"
    assert loose["verdict"] == "equivalent" and loose["pick"]["label"] == "eagle3·2"
    assert loose["tie_text"] == "equivalent within 5 %: mtp·3 and eagle3·2 — pick eagle3·2 (shallowest)"


def test_a_margin_outside_0_to_100_is_refused():
    cells = _cells(["mtp"], [3])
    with pytest.raises(ValueError):
        decide_groups(cells, np.array([1.0]), np.vstack([_reps(1, 0.1, 1)]), THROUGHPUT, margin_pct=-1)


def test_a_zero_best_value_still_names_a_pick():
    # goodput can be 0 everywhere under a strict SLO: the best is its own pick, equal zeros are equivalent
    j = judge(["mtp", "eagle3", "none"], [3, 2, 0], np.array([0.0, 0.0, 0.0]), [0, 1, 2], [0, 1, 2],
              get_metric("goodput"), 2.0)
    assert j.verdict == "equivalent" and j.pick == 2 and j.pick_reason == "no speculation needed"
