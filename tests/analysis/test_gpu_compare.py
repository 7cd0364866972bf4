"""GPU comparison: ratios of each method's best depth, winner changes without claims from ties, per watt."""

from __future__ import annotations

import polars as pl
import pytest

from analysis import costmodel, frames, gpu_compare
from analysis.metrics import get_metric
from ingest import store


def test_ratio_is_best_b_over_best_a(default_db):
    f = frames.Filters(concurrency=(16,), families=("Qwen",))
    with store.session(default_db, read_only=True) as con:
        r = gpu_compare.ratios(con, f, "MI300X", "MI355X")
        cells = frames.cells(con, frames.Filters(concurrency=(16,), families=("Qwen",)))
    assert r.height > 0
    row = r.row(0, named=True)
    pick = cells.filter((pl.col("workload") == row["workload"]) & (pl.col("method") == row["method"]))
    column = get_metric("output_throughput").value_column  # the steady-state figure the winner rule uses
    best_a = pick.filter(pl.col("gpu") == "MI300X")[column].max()
    best_b = pick.filter(pl.col("gpu") == "MI355X")[column].max()
    assert abs(row["ratio"] - best_b / best_a) < 1e-9


def _doc(cells: list[tuple[str, int, bool, list[tuple[str, int]]]]) -> dict:
    return {"cells": [{"family": "F", "workload": f"w{i}", "concurrency": 1,
                       "winner": {"method": m, "depth": d}, "clear": clear,
                       "tied": [{"method": tm, "depth": td} for tm, td in tied]}
                      for i, (m, d, clear, tied) in enumerate(cells)]}


def test_winner_change_verdicts():
    a = _doc([("mtp", 3, True, []), ("mtp", 3, True, []), ("mtp", 3, False, [("mtp", 3), ("eagle3", 2)])])
    b = _doc([("mtp", 3, True, []), ("eagle3", 2, True, []), ("eagle3", 2, True, [])])
    out = gpu_compare.winner_changes(a, b)
    assert out["verdict"].to_list() == ["same", "changes", "not clear"]


def test_efficiency_divides_by_board_power(default_db):
    with store.session(default_db, read_only=True) as con:
        e = gpu_compare.efficiency(con, frames.Filters(concurrency=(1,)))
    power = {g: s.power_w for g, s in costmodel.gpu_specs().items()}
    for row in e.head(20).iter_rows(named=True):
        assert abs(row["tok_s_per_watt"] - row["output_throughput_per_gpu"] / power[row["gpu"]]) < 1e-9


def test_ratios_state_gpus_per_server_and_the_ratio_per_gpu(default_db):
    with store.session(default_db, read_only=True) as con:
        r = gpu_compare.ratios(con, frames.Filters(concurrency=(1,)), "MI300X", "MI355X")
        lat = gpu_compare.ratios(con, frames.Filters(concurrency=(1,)), "MI300X", "MI355X", "p99_e2e_ms")
    qwen = r.filter(pl.col("family") == "Qwen")
    assert set(qwen["gpus_a"]) == {4} and set(qwen["gpus_b"]) == {2}  # the default matrix's tensor parallelism
    for row in r.iter_rows(named=True):
        assert row["ratio_per_gpu"] == pytest.approx(row["ratio"] * row["gpus_a"] / row["gpus_b"])
    # a server of 2 MI355X about matches one of 4 MI300X: about twice the throughput per GPU
    assert qwen["ratio"].median() < 1.1 and qwen["ratio_per_gpu"].median() > 1.8
    assert lat["ratio_per_gpu"].null_count() == lat.height  # a latency is not divided by GPUs
    assert gpu_compare.servers(r).filter(pl.col("family") == "Qwen").rows() == [("Qwen", 4, 2)]


def test_winner_changes_carry_each_sides_pick_and_verdict_as_the_heatmap_shows_them(default_db):
    """The GPUs page and the Winners heatmap name the same pick and verdict for a cell (one vocabulary)."""
    from analysis.winners import winners

    with store.session(default_db, read_only=True) as con:
        docs = [winners(con, "output_throughput", frames.Filters(gpus=(g,), concurrency=(1,)))
                for g in ("MI300X", "MI355X")]
    out = gpu_compare.winner_changes(*docs)
    assert out.height == 12
    for side, doc in zip("ab", docs, strict=True):
        by = {(c["family"], c["workload"]): c for c in doc["cells"]}
        for r in out.iter_rows(named=True):
            c = by[(r["family"], r["workload"])]
            assert r[f"pick_{side}"] == c["pick"]["label"] and r[f"cell_verdict_{side}"] == c["verdict"]
