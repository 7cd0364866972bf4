"""The metric registry: names, directions, the allow-list, and the speedup factor in each metric's good direction."""

from __future__ import annotations

import math

import pytest

from analysis.metrics import CELL_COLUMNS, METRICS, get_metric, speedup

LOWER_IS_BETTER = {"p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms"}


def test_directions_and_replicates():
    assert set(METRICS) == {"output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate",
                            "acceptance_length", "goodput"}
    assert {n for n, m in METRICS.items() if not m.higher_is_better} == LOWER_IS_BETTER
    assert {n for n, m in METRICS.items() if not m.bootstrapped} == {"goodput"}
    assert all(m.name == n for n, m in METRICS.items())


def test_better_follows_the_direction():
    tput, p99 = get_metric("output_throughput"), get_metric("p99_e2e_ms")
    assert tput.better(2.0, 1.0) and not tput.better(1.0, 2.0) and not tput.better(1.0, 1.0)
    assert p99.better(1.0, 2.0) and not p99.better(2.0, 1.0) and not p99.better(1.0, 1.0)


def test_unknown_metric_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown metric 'tput' \(expected one of output_throughput, p99_e2e_ms"):
        get_metric("tput")


def test_speedup_is_the_improvement_factor():
    assert speedup(150.0, 100.0, get_metric("output_throughput")) == 1.5
    assert speedup(50.0, 100.0, get_metric("p99_e2e_ms")) == 2.0  # half the latency: twice as good
    assert math.isnan(speedup(150.0, 0.0, get_metric("output_throughput")))
    assert math.isnan(speedup(0.0, 100.0, get_metric("p99_e2e_ms")))


def test_every_bootstrapped_metric_is_a_cell_column():
    assert {m.name for m in METRICS.values() if m.bootstrapped} <= set(CELL_COLUMNS)
    assert len(CELL_COLUMNS) == len(set(CELL_COLUMNS))
