"""The screen's heatmap spec (dashboard.heatmap_spec) is the Altair builder's spec, dict for dict.

The page draws :func:`heatmap_spec.spec`; exports, reports and the PNG/SVG buttons draw
``charts.winner_heatmap`` through Altair. They must describe the same chart: every load × GPU of the default
store and of the 12.1 M-row store, for three metrics, with and without the click selection, for all
families, one family and a family that is absent; and the spec is valid Vega-Lite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import altair as alt
import pytest

from analysis import frames, winners
from dashboard import charts, heatmap_spec
from ingest import store

FAMILIES = ["Gemma", "Kimi", "MiniMax", "Qwen"]
WORKLOADS = ["chat", "code", "reasoning"]
VIEWS = [(FAMILIES, WORKLOADS), (["Qwen"], ["code", "chat"]), (["Absent"], ["chat"])]


def _same_view_names(spec: dict) -> dict:
    """Altair names the selection's view ``view_<random>_<n>``; the dict builder a fixed name."""
    text = json.dumps(spec, sort_keys=True)
    return json.loads(re.sub(rf"view_[0-9a-f]+_\d+|{heatmap_spec.OUTLINE_VIEW}", "VIEW", text))


def _assert_equal_everywhere(doc_all: dict) -> int:
    checked = 0
    for conc in sorted({c["concurrency"] for c in doc_all["cells"]}, key=lambda x: (x is None, x or 0)):
        doc = {**doc_all, "cells": [c for c in doc_all["cells"] if c["concurrency"] == conc]}
        for gpu in sorted({c["gpu"] for c in doc["cells"]}):
            for fams, wls in VIEWS:
                for select in (True, False) if fams == FAMILIES else (True,):
                    label = f"throughput · concurrency {conc}"
                    altair = charts.finish(charts.winner_heatmap(doc, gpu, fams, wls, label, select=select))
                    fast = heatmap_spec.spec(doc, gpu, fams, wls, label, select=select)
                    assert _same_view_names(fast) == _same_view_names(altair.to_dict(validate=False)), (
                        conc, gpu, fams, select)
                    checked += 1
    return checked


@pytest.mark.parametrize("metric", ["output_throughput", "p99_tpot_ms", "goodput"])
def test_equals_the_altair_heatmap_on_the_default_store(default_db: Path, metric: str) -> None:
    with store.session(default_db, read_only=True) as con:
        # with the model's error on every simulated cell ties (hatched, halo labels); sampling noise alone
        # leaves clear winners (solid cells) too
        docs = [winners.winners(con, metric, frames.Filters(), model_error=e) for e in (True, False)]
    assert all(d["cells"] for d in docs)
    if metric != "goodput":  # goodput's cells have no model draws: the same (clear) verdicts either way
        assert {c["clear"] for d in docs for c in d["cells"]} == {True, False}
    for doc_all in docs:
        assert _assert_equal_everywhere(doc_all) >= 6 * (len(VIEWS) + 1)


def test_equals_the_altair_heatmap_on_the_big_store(big_store: tuple[Path, dict]) -> None:
    with store.session(big_store[0], read_only=True) as con:
        doc_all = winners.winners(con, "output_throughput", frames.Filters(), best_depth_per_method=True)
    assert _assert_equal_everywhere(doc_all) >= 6 * (len(VIEWS) + 1)


def test_is_valid_vega_lite(default_db: Path) -> None:
    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "output_throughput", frames.Filters(concurrency=(1,)))
    spec = heatmap_spec.spec(doc, "MI300X", FAMILIES, WORKLOADS, "throughput")
    alt.TopLevelLayerSpec.validate(spec)  # raises on any schema error
    assert spec["params"][0]["views"] == [spec["layer"][-1]["name"]]  # the click selection is on the outline
    assert sum(len(rows) for rows in spec["datasets"].values()) > 0
