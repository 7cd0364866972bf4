"""One vocabulary on the pages (issue 27 items 3–4), in the real app (AppTest) on the default store: the legends
name only the verdicts drawn, the landing page opens with analysis.glance's plain answer, and no heatmap cell
states a gain without its interval."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from analysis import frames, vocabulary
from analysis.glance import lead, split_published, summary
from analysis.metrics import get_metric
from analysis.winners import decide_groups, winners
from dashboard import charts, heatmap_spec, load_strip
from ingest import store
from tests.dashboard.conftest import chart_specs, open_page, plain


def _title(chart: dict) -> str:
    t = chart["spec"].get("title", "")
    return t.get("text", "") if isinstance(t, dict) else str(t)


def _layers(spec: dict) -> list[dict]:
    out, todo = [], [spec]
    while todo:
        s = todo.pop()
        out.append(s)
        todo += s.get("layer", []) + s.get("vconcat", []) + ([s["spec"]] if "spec" in s else [])
    return out


def _channel(spec: dict, name: str) -> dict:
    return next(s["encoding"][name] for s in _layers(spec) if name in s.get("encoding", {}))


def _present(states: set[str]) -> list[str]:
    return [v for v in vocabulary.VERDICTS if v in states]


def test_heatmap_and_load_strip_legends_name_only_the_verdicts_on_screen():
    at = open_page(query={"conc": "1"})
    heatmaps = [c for c in chart_specs(at) if "winner by" in _title(c)]
    assert heatmaps
    for chart in heatmaps:
        states = {r["state"] for r in chart["rows"] if r.get("state")}
        shape = _channel(chart["spec"], "shape")  # each cell's verdict marker and its legend
        assert shape["scale"]["domain"] == _present(states) and shape["title"] == "verdict"
        assert shape["scale"]["range"] == [charts.VERDICT_SHAPE[v] for v in _present(states)]
    at = open_page()  # every load at once
    strips = [c for c in chart_specs(at) if "sensible pick at every load" in _title(c)]
    assert strips
    for chart in strips:
        states = {r["verdict"] for r in chart["rows"]}
        opacity = _channel(chart["spec"], "opacity")
        assert opacity["scale"]["domain"] == _present(states)
        assert opacity["scale"]["range"] == [load_strip.SHADE[v] for v in _present(states)]
        # the method swatches are drawn at the strongest shade on screen: faint when every cell is a tie
        color = _channel(chart["spec"], "color")
        assert color["legend"]["symbolOpacity"] == max(load_strip.SHADE[v] for v in states)


def _mixed_doc() -> dict:
    """Hand-set values: F/code is clearly won by mtp, H/code ties mtp and eagle3 (see test_heatmap_colour)."""
    cells = pl.DataFrame({
        "gpu": ["G"] * 6, "family": ["F"] * 3 + ["H"] * 3, "workload": ["code"] * 6, "concurrency": [1] * 6,
        "method": ["none", "mtp", "eagle3"] * 2, "depth": [0, 3, 2] * 2, "backend": ["vllm"] * 6,
        "run_id": ["r"] * 6, "cell_id": list("abcdef")})
    values = np.array([100.0, 150.0, 120.0, 100.0, 130.0, 127.0])
    rng = np.random.default_rng(0)
    reps = np.vstack([v + s * rng.standard_normal(400) for v, s in zip(values, [1, 1, 1, 5, 5, 5], strict=True)])
    return decide_groups(cells, values, reps, get_metric("output_throughput"))


def test_a_legend_follows_the_states_present_in_both_builders():
    doc = _mixed_doc()
    assert {c["verdict"] for c in doc["cells"]} == {"clear", "tie"}
    for d, want in ((doc, ["clear", "tie"]), ({**doc, "cells": [c for c in doc["cells"] if c["clear"]]}, ["clear"])):
        fast = heatmap_spec.spec(d, "G", ["F", "H"], ["code"], "throughput")
        slow = charts.finish(charts.winner_heatmap(d, "G", ["F", "H"], ["code"], "throughput")).to_dict()
        for spec in (fast, slow):
            assert _channel(spec, "shape")["scale"]["domain"] == want


def _default_doc(default_db: Path) -> dict:
    with store.session(default_db, read_only=True) as con:
        return winners(con, "output_throughput", frames.Filters(), margin_pct=2.0)


def test_the_landing_page_opens_with_glances_plain_answer(default_db: Path):
    published, rest = split_published(_default_doc(default_db))
    expected = lead(published, rest)
    # the published figures' answer first (real numbers), then the simulated cells' (said so)
    assert expected == f"{summary(published)['answer']} {summary(rest)['answer']}"
    at = open_page()
    assert at.info and plain(at.info[0].value) == expected
    # first on the page: right under the title, before the published table and every chart
    assert at.main[0].type == "title" or at.main[0].proto.WhichOneof("type") == "heading"
    assert plain(at.main[1].value) == expected
    assert expected.startswith("On the published figures")
    assert "On simulated data" in expected and "measure before you deploy" in expected
    assert any(plain(c.value) == summary(rest)["text"] for c in at.caption)  # the figures follow, in small


def test_no_heatmap_cell_states_a_gain_without_its_interval(default_db: Path):
    doc = _default_doc(default_db)
    by = {(c["gpu"], c["family"], c.get("model"), c.get("dataset"), c["workload"], c["concurrency"]): c
          for c in doc["cells"]}
    at = open_page(query={"conc": "1"})
    labels = [r for chart in chart_specs(at) if "winner by" in _title(chart) for r in chart["rows"] if r.get("label")]
    assert labels
    for r in labels:
        c = by[(r["gpu"], r["family"], r.get("model"), r.get("dataset"), r["workload"], r["concurrency"])]
        words = vocabulary.cell_words(c)
        for line in r["label"].split("\n"):
            if "%" in line:  # a gain only with its 95 % interval
                assert re.fullmatch(r"[+-][\d.]+ % \[[+-][\d.]+, [+-][\d.]+\]", line), line
            assert "vs none" not in line
        assert r["label"].startswith(f"{words.verdict}\npick {words.pick} ({vocabulary.p_text(words.pick_p)})")
        ci = (c.get("pick") or {}).get("gain_vs_none_ci_pct")
        if ci and ci[0] <= 0 <= ci[1] and c["pick"]["method"] != "none":
            assert vocabulary.NOT_SEPARABLE in r["label"].split("\n")
        # the tooltip gives the chances of the top candidates
        assert r["chances"] == words.chances and re.search(r" p (0|1)\.\d\d", words.chances)
