"""Every chart builder produces a schema-valid Vega-Lite spec that vl-convert renders offline."""

from __future__ import annotations

import html
import json
import re

import duckdb
import pytest

from analysis import drilldown, explore, frames, gpu_compare, load, pareto, published, winners
from dashboard import charts, export, theme
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
            "latency": (drilldown.latency_summary(con, ranked), "tpot_ms"),
            "depth_curves": (explore.by_depth(con, F, "acceptance_length"), "τ",
                             published.overlay("acceptance_length")),
            "tradeoff": (pareto.tradeoff(con, frames.Filters(gpus=("MI300X",))), "p99 e2e"),
            "ratio_heatmap": (gpu_compare.ratios(con, frames.Filters(concurrency=(1,)), "MI300X", "MI355X"),
                              "MI300X", "MI355X", ["Gemma", "Qwen"], ["code", "chat"]),
            "speedup": (load.speedup_vs_load(con, F),),
            "efficiency": (gpu_compare.efficiency(con, F), "tok_s_per_watt", "tok/s/W"),
        }


HEADLINE = "verdict · pick (chance of being best)"  # the heatmap tooltip's title (charts.TOOLTIP)


def _marks(svg: bytes) -> list[dict[str, str]]:
    """The data marks of a rendered SVG, each as its fields: Vega writes a mark's datum into its aria-label
    ("field: value; field: value"); axis and legend labels (no "; ") are left out. A value may itself hold
    "; " or ": " (the provenance text does): inside the provenance field, a piece continues it unless it starts
    with a field name the tests read."""
    fields = ("family", "workload", "#1 [95% CI]", HEADLINE, "method", "candidate", "value")
    free_text = ("where it comes from", "provenance", "verdict in words")
    out = []
    for label in re.findall(r'aria-label="([^"]*)"', svg.decode()):
        pieces = html.unescape(label).split("; ")
        if len(pieces) < 2:
            continue
        mark: dict[str, str] = {}
        last = None
        for piece in pieces:
            key, sep, value = piece.partition(": ")
            if (last in free_text and key not in fields) or not sep:
                if last is not None:
                    mark[last] += "; " + piece
            else:
                mark[key], last = value, key
        out.append(mark)
    return out


@pytest.mark.parametrize("kind", sorted(charts.BUILDERS))
def test_builder_renders(built: dict, kind: str):
    chart = charts.build(kind, *built[kind])
    chart.to_dict()  # schema validation (the app skips it for speed)
    svg = export.chart_bytes(chart, "svg")
    assert svg[:200].count(b"<svg") == 1
    assert len(_marks(svg)) >= 2  # the picture has the data drawn in it, not only axes and a frame


def _best_by_sql(db, gpu: str, conc: int) -> dict[tuple[str, str], tuple[str, int, float]]:
    """(family, workload) → (method, depth, value) of the highest (steady-state) output throughput — the figure the
    winner rule decides on — straight from the cells."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.sql("""SELECT family, workload, arg_max(method, steady_output_throughput),
                                 arg_max(depth, steady_output_throughput), max(steady_output_throughput) FROM cells
                          WHERE gpu = ? AND concurrency = ? AND status = 'ok' GROUP BY ALL""",
                       params=[gpu, conc]).fetchall()
    finally:
        con.close()
    return {(f, w): (m, int(d), float(v)) for f, w, m, d, v in rows}


def test_the_rendered_heatmap_shows_each_cells_best_candidate(built: dict, default_db):
    """Every cell of the SVG names, as #1, the candidate with the highest throughput in the store (computed here in
    SQL); a clear cell is drawn in that method's colour channel ("method")."""
    svg = export.chart_bytes(charts.build("winner_heatmap", *built["winner_heatmap"]), "svg")
    best = _best_by_sql(default_db, "MI300X", 1)
    seen, clear, filled = set(), set(), set()
    for mark in _marks(svg):
        if "#1 [95% CI]" not in mark:
            continue
        key = (mark["family"], mark["workload"])
        method, depth, value = best[key]
        name = "none" if method == "none" else f"{method}·{depth}"
        assert mark["#1 [95% CI]"].startswith(f"{name}: {value:,.1f} ["), (key, mark)
        seen.add(key)
        if mark[HEADLINE].startswith("clear · pick "):
            clear.add(key)
            if "method" in mark:  # the filled rect (labels carry the tooltip, not the colour channel)
                assert mark["method"] == method, key
                filled.add(key)
    # the default data calls no cell clear (the model's own error is in its intervals, docs/simulator.md); the
    # winner's colour on clear cells is held by test_heatmap_colour.py on hand-set values
    assert seen == set(best) and filled == clear


def test_the_rendered_candidate_bars_are_every_cell_of_the_group(built: dict, default_db):
    svg = export.chart_bytes(charts.build("candidates", *built["candidates"]), "svg")
    con = duckdb.connect(str(default_db), read_only=True)
    try:
        want = {("none" if m == "none" else f"{m}·{d}", round(v, 3)) for m, d, v in con.sql(
            "SELECT method, depth, output_throughput FROM cells WHERE gpu = 'MI300X' AND family = 'Qwen' "
            "AND workload = 'code' AND concurrency = 1 AND status = 'ok'").fetchall()}
    finally:
        con.close()
    got = {(m["candidate"], round(float(m["value"].replace(",", "")), 3)) for m in _marks(svg) if "candidate" in m}
    assert got == want


def test_exported_heatmap_has_no_selection_but_the_shown_one_does(built: dict):
    shown = charts.build("winner_heatmap", *built["winner_heatmap"]).to_dict()
    exported = charts.build("winner_heatmap", *built["winner_heatmap"], select=False)
    assert [p["name"] for p in shown.get("params", [])] == [charts.SELECTION]
    assert "params" not in exported.to_dict()
    assert export.chart_bytes(exported, "png")[:4] == b"\x89PNG"


def test_winner_rows_name_ties_and_gains(built: dict):
    rows = charts.winner_rows(built["winner_heatmap"][0])
    ties = rows.filter(~rows["clear"])
    # a tie in the one vocabulary: the verdict, then the pick with its chance of being best
    assert ties.height > 0 and all(re.match(r"(tie|equivalent)\npick \S+ \(p (\d\.\d\d|< 0\.01|\?)\)", t)
                                   for t in ties["label"])
    assert (ties["headline"] == ties["state"] + " · pick " + ties["pick"] + ties["label"].str.extract(
        r"pick \S+( \(p [^)]*\))")).all()
    assert all(r["top1"] for r in rows.iter_rows(named=True))


@pytest.mark.parametrize("kind", sorted(charts.BUILDERS))
def test_an_exported_chart_has_a_title_and_the_simulated_label(built: dict, kind: str):
    svg = export.chart_bytes(charts.exported(kind, *built[kind], title="Slide title", simulated=True), "svg")
    assert b"SIMULATED DATA" in svg and b"Slide title" in svg
    assert b'fill="#ffffff"' in svg.lower()[:2000]  # a white background, not transparent, for any slide theme
    assert b"SIMULATED" not in export.chart_bytes(charts.exported(kind, *built[kind]), "svg")


def _legends(node: object) -> list[dict]:
    out = []
    if isinstance(node, dict):
        if isinstance(node.get("color"), dict) and node["color"].get("field") == "method" and node["color"].get(
                "legend"):
            out.append(node["color"]["legend"])
        for v in node.values():
            out += _legends(v)
    elif isinstance(node, list):
        for v in node:
            out += _legends(v)
    return out


@pytest.mark.parametrize("kind", ["depth_curves", "speedup", "candidates"])
def test_method_legends_are_opaque_even_under_a_faint_band(built: dict, kind: str):
    legends = _legends(charts.build(kind, *built[kind]).to_dict())
    assert legends and all(lg.get("symbolOpacity") == 1 for lg in legends)


@pytest.mark.parametrize("kind", ["depth_curves", "positions_grid", "tradeoff", "speedup", "efficiency",
                                  "ratio_heatmap"])
def test_faceted_charts_fit_the_main_column_of_a_laptop_screen(default_db, kind: str):
    """A wide-layout page on a 1280 px screen has ~820 px for a chart; a wider one is cut off with its legend.
    Measured with every family and workload of the default data."""
    import re

    from analysis import frames as fr

    with store.session(default_db, read_only=True) as con:
        f = fr.Filters(gpus=("MI300X",), concurrency=(1,))
        args = {"depth_curves": (explore.by_depth(con, f, "output_throughput"), "Output throughput (tok/s)"),
                "positions_grid": (explore.by_position(con, f),),
                "tradeoff": (pareto.tradeoff(con, fr.Filters(gpus=("MI300X",))), "p99 end-to-end latency (ms)"),
                "speedup": (load.speedup_vs_load(con, fr.Filters(gpus=("MI300X",))),),
                "efficiency": (gpu_compare.efficiency(con, fr.Filters(concurrency=(1,))), "tok_s_per_watt",
                               "output tok/s per watt"),
                "ratio_heatmap": (gpu_compare.ratios(con, fr.Filters(concurrency=(1,)), "MI300X", "MI355X"),
                                  "MI300X", "MI355X", ["Gemma", "Kimi", "MiniMax", "Qwen"],
                                  ["chat", "code", "reasoning"])}[kind]
    svg = export.chart_bytes(charts.build(kind, *args), "svg")[:500].decode()
    assert float(re.search(r'width="([\d.]+)"', svg).group(1)) <= 800


def test_background_ink_reads_on_both_themes(built: dict):
    shown = charts.build("tradeoff", *built["tradeoff"]).to_dict()
    assert theme.INK in json.dumps(shown)  # exports keep the dark ink (white background)
    light, dark = theme.for_screen(shown), theme.for_screen(shown, dark=True)
    for spec, ink in ((light, theme.SCREEN_INK), (dark, theme.DARK_INK)):
        text = json.dumps(spec)
        assert theme.INK not in text and theme.INK_SOFT not in text and ink[theme.INK] in text
    assert theme.SELECTED_STROKE in json.dumps(theme.for_screen(charts.build(
        "winner_heatmap", *built["winner_heatmap"]).to_dict()))  # what is drawn on cells keeps its colour


def test_a_lower_is_better_heatmap_says_which_way_its_percentages_go(default_db):
    with store.session(default_db, read_only=True) as con:
        doc = winners.winners(con, "p99_tpot_ms", frames.Filters(concurrency=(1,), gpus=("MI300X",)))
    subtitle = charts.winner_heatmap(doc, "MI300X", ["Qwen"], ["code"], "p99 TPOT (ms)").to_dict()["title"]["subtitle"]
    assert any("better than no speculation" in line for line in subtitle)
    tput = charts.winner_heatmap({**doc, "metric": "output_throughput"}, "MI300X", ["Qwen"], ["code"], "tok/s")
    assert not any("better than" in line for line in tput.to_dict()["title"]["subtitle"])


def test_screen_datasets_travel_as_the_same_rows_in_arrow() -> None:
    """charts.display hands Streamlit each dataset as Arrow IPC bytes: the browser gets the same rows (nulls,
    ints, floats, booleans, text with line breaks); a column of mixed types stays a row list (Streamlit's path)."""
    import polars as pl
    import pyarrow as pa

    rows = [{"method": "none", "depth": None, "value": 1.5, "clear": True, "label": "none\nbaseline"},
            {"method": "dspark", "depth": 4, "value": 2.0, "clear": False, "label": "TIE (2 tied)"}]
    sent = charts._arrow_ipc(rows)
    assert isinstance(sent, bytes)
    assert pl.from_arrow(pa.ipc.open_stream(sent).read_all()).to_dicts() == rows
    assert pa.ipc.open_stream(charts._arrow_ipc([])).read_all().num_rows == 0
    mixed = [{"v": 1}, {"v": "one"}]
    assert charts._arrow_ipc(mixed) is mixed
