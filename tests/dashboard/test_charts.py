"""Every chart builder produces a schema-valid Vega-Lite spec that vl-convert renders offline."""

from __future__ import annotations

import pytest

from analysis import drilldown, explore, frames, gpu_compare, load, pareto, published, winners
from dashboard import charts, export
from ingest import store

F = frames.Filters(gpus=("MI300X",), families=("Qwen", "Gemma"), concurrency=(1,))


@pytest.fixture(scope="module")
def built(default_db) -> dict:
    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "output_throughput", frames.Filters(concurrency=(1,)))
        g = drilldown.Group("MI300X", "Qwen", "code", 1)
        ranked = drilldown.candidates(con, g, "output_throughput")
        return {
            "winner_heatmap": (doc, "MI300X", ["Gemma", "Kimi", "MiniMax", "Qwen"], ["chat", "code", "reasoning"],
                               "throughput"),
            "candidates": (ranked, "throughput"),
            "positions": (drilldown.positions(con, g),),
            "positions_grid": (explore.by_position(con, F), "conditional"),
            "latency": (drilldown.latency_samples(con, ranked), "tpot_ms"),
            "depth_curves": (explore.by_depth(con, F, "acceptance_length"), "τ",
                             published.overlay("acceptance_length")),
            "tradeoff": (pareto.tradeoff(con, frames.Filters(gpus=("MI300X",))), "p99 e2e"),
            "ratio_heatmap": (gpu_compare.ratios(con, frames.Filters(concurrency=(1,)), "MI300X", "MI355X"),
                              "MI300X", "MI355X", ["Gemma", "Qwen"], ["code", "chat"]),
            "speedup": (load.speedup_vs_load(con, F),),
            "efficiency": (gpu_compare.efficiency(con, F), "tok_s_per_watt", "tok/s/W"),
        }


@pytest.mark.parametrize("kind", sorted(charts.BUILDERS))
def test_builder_renders(built: dict, kind: str):
    chart = charts.build(kind, *built[kind])
    chart.to_dict()  # schema validation (the app skips it for speed)
    assert export.chart_bytes(chart, "svg")[:200].count(b"<svg") == 1


def test_exported_heatmap_has_no_selection_but_the_shown_one_does(built: dict):
    shown = charts.build("winner_heatmap", *built["winner_heatmap"]).to_dict()
    exported = charts.build("winner_heatmap", *built["winner_heatmap"], select=False)
    assert [p["name"] for p in shown.get("params", [])] == [charts.SELECTION]
    assert "params" not in exported.to_dict()
    assert export.chart_bytes(exported, "png")[:4] == b"\x89PNG"


def test_winner_rows_name_ties_and_gains(built: dict):
    rows = charts.winner_rows(built["winner_heatmap"][0])
    ties = rows.filter(~rows["clear"])
    assert ties.height > 0 and all(t.startswith("TIE\n") and "≈" in t for t in ties["label"])
    assert all(r["top1"] for r in rows.iter_rows(named=True))
