"""Every other page in the real app: renders, a key interaction changes the chart spec, the URL restores the
view, bad parameters warn instead of failing, and the simulated banner shows."""

from __future__ import annotations

import json

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates

from analysis.frames import Filters
from analysis.pareto import tradeoff
from ingest import store
from tests.dashboard.conftest import chart_specs, figure_title, open_page, plotly_figures

PAGES = ["views/explore.py", "views/tradeoffs.py", "views/gpus.py", "views/load.py", "views/datasets.py"]


def banner(at) -> bool:
    return any("Simulated data on screen" in w.value for w in at.warning)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_with_banner_and_survives_bad_params(page: str):
    at = open_page(page)
    assert banner(at)
    bad = open_page(page, query={"gpu": "'; DROP TABLE runs; --", "metric": "<b>x</b>", "conc": "1e9",
                                 "fam": ["Qwen", "Nope"], "a": "??", "pfam": "=cmd|' /C calc'!A0"})
    assert any("not valid" in w.value for w in bad.warning)


def test_explore_metric_and_overlay_change_the_spec():
    at = open_page("views/explore.py", query={"metric": "acceptance_length", "fam": "Qwen"})
    curves = chart_specs(at)[0]
    assert {r["family"] for r in curves["rows"]} == {"Qwen"}
    at.sidebar.toggle(key="explore.pub").set_value(True).run()
    with_pub = chart_specs(at)[0]
    assert any(r.get("kind") == "published" for r in with_pub["rows"])
    at.sidebar.selectbox(key="explore.metric").set_value("p99_e2e_ms").run()
    assert chart_specs(at)[0]["rows"] != with_pub["rows"]


def test_explore_restores_gpu_and_concurrency_from_the_url():
    at = open_page("views/explore.py", query={"gpu": "MI355X", "conc": "64", "meth": ["mtp", "none"]})
    rows = chart_specs(at)[0]["rows"]
    assert {r["gpu"] for r in rows} == {"MI355X"} and {r["concurrency"] for r in rows} == {64}
    assert {r["method"] for r in rows} == {"mtp", "none"}


def scatter(at) -> dict:
    """The Trade-offs scatter: the page's one interactive (Plotly) figure of throughput vs latency."""
    (fig,) = [f for f in plotly_figures(at) if figure_title(f).startswith("Output throughput vs")]
    return fig


def scatter_points(fig: dict) -> list[list]:
    """One customdata row per drawn cell: run id, cell id, candidate, concurrency, on the front, backend, …"""
    return [c for t in fig["figure"]["data"] if t["mode"] == "markers" for c in t["customdata"]]


def test_tradeoffs_front_and_goodput_heatmap_follow_the_slo():
    at = open_page("views/tradeoffs.py", query={"gpu": "MI300X", "gconc": "64"})
    points = scatter_points(scatter(at))
    assert any(p[4] for p in points) and not all(p[4] for p in points)
    heat = chart_specs(at)[0]
    at.sidebar.number_input(key="tradeoffs.slo_tpot").set_value(6.0).run()
    assert chart_specs(at)[0]["rows"] != heat["rows"]
    before = scatter(at)
    at.sidebar.selectbox(key="tradeoffs.lat").set_value("p99_ttft_ms").run()
    after = scatter(at)
    assert [t.get("x") for t in after["figure"]["data"]] != [t.get("x") for t in before["figure"]["data"]]
    layout = after["figure"]["layout"]
    assert {v["title"]["text"] for k, v in layout.items() if k.startswith("xaxis") and "text" in v.get("title", {})
            } == {"p99 TTFT (ms)"}  # the bottom row's axes name the latency picked


def _select(at, fig: dict, points: list[dict], box: bool = True) -> None:
    """Send the app the selection event the browser sends after a box drag over ``points`` (Plotly's own
    selection state cannot be set through session state: Streamlit allows no writes to it)."""
    ws = WidgetStates()
    ws.CopyFrom(at._tree.get_widget_states())
    w = ws.widgets.add()
    w.id = fig["id"]
    w.string_value = json.dumps({"selection": {
        "points": points, "point_indices": list(range(len(points))),
        "box": [{"xref": "x", "yref": "y", "x": [1, 2], "y": [1, 2]}] if box else [], "lasso": []}})
    at._run(ws)
    assert not at.exception, [e.message for e in at.exception]


def test_tradeoffs_scatter_is_interactive_with_one_point_per_cell_and_a_selection_narrows_a_table(default_db):
    at = open_page("views/tradeoffs.py", query={"gpu": "MI300X"})
    fig = scatter(at)
    with store.session(default_db, read_only=True) as con:
        cells = tradeoff(con, Filters(gpus=("MI300X",)), "p99_e2e_ms")
    points = scatter_points(fig)
    assert len(points) == cells.height >= 100  # one point per cell (method · depth · load), every cell drawn
    assert {(p[0], p[1]) for p in points} == set(zip(cells["run_id"], cells["cell_id"], strict=True))
    assert {(p[2], p[3]) for p in points} >= {("none", 1), ("eagle3·3", 64)}  # analysis.labels' notation
    assert fig["selection"] and len(fig["selection"]) == 3  # box, lasso and click select
    layout = fig["figure"]["layout"]
    assert layout["xaxis"]["type"] == "log" and layout["yaxis"]["type"] == "log" and layout["dragmode"] == "select"
    assert "SIMULATED DATA" in layout["title"]["subtitle"]["text"]  # simulated numbers say so on the figure
    assert not any(m.value.startswith("**Selected cells") for m in at.markdown)
    # a box over every mtp cell at c=64 (as the browser reports it: each point with its customdata)
    want = [p for p in points if p[2].startswith("mtp·") and p[3] == 64]
    _select(at, fig, [{"curve_number": 1, "point_index": i, "customdata": p} for i, p in enumerate(want)])
    assert any(m.value == f"**Selected cells: {len(want)}**" for m in at.markdown)
    table = at.dataframe[0].value
    assert len(table) == len(want) and set(table["Candidate"]) == {p[2] for p in want}
    assert set(table["Concurrency"]) == {64}
    # a box over empty space selects nothing: an empty table, not every cell
    _select(at, scatter(at), [])
    assert any(m.value == "**Selected cells: 0**" for m in at.markdown) and len(at.dataframe[0].value) == 0


def test_gpus_page_compares_any_two_gpus():
    at = open_page("views/gpus.py", query={"a": "MI300X", "b": "MI355X", "conc": "1"})
    ratio = chart_specs(at)[0]
    assert ratio["rows"] and all(r["ratio"] > 0 for r in ratio["rows"])
    changes = at.dataframe[0].value  # human titles; the winner columns are named after the GPUs compared
    # each GPU's verdict · pick (p) as the Winners heatmap reads it, then each GPU's best point estimate
    assert list(changes.columns) == ["Model family", "Model", "Workload", "Dataset", "Concurrency",
                                     "Verdict · pick (p) on MI300X", "Verdict · pick (p) on MI355X",
                                     "Best on MI300X", "Best on MI355X", "Verdict", "Method changes?"]
    assert set(changes["Verdict"]) <= {"same", "changes", "not clear"}
    at.sidebar.selectbox(key="gpus.b").set_value("MI300X").run()
    assert any("two different GPUs" in i.value for i in at.info)


def test_load_page_speedups_and_break_even():
    at = open_page("views/load.py", query={"gpu": "MI355X", "fam": "Gemma"})
    rows = chart_specs(at)[0]["rows"]
    assert {r["family"] for r in rows} == {"Gemma"} and {r["concurrency"] for r in rows} == {1, 16, 64}
    at.sidebar.multiselect(key="load.meth").set_value(["ngram"]).run()
    assert {r["method"] for r in chart_specs(at)[0]["rows"]} == {"ngram"}
    be = at.dataframe[0].value
    assert list(be.columns) == ["GPU", "Model family", "Model", "Workload", "Dataset", "Method",
                                "Stops paying at (concurrency)"]
    assert set(be["Method"]) == {"ngram"}
    # a concurrency stays a number (sorting is numeric); empty = still pays at every measured load
    assert be["Stops paying at (concurrency)"].dtype.kind in "fi"


def _line_detail(spec: dict) -> object:
    grid = spec["spec"]["vconcat"][0] if "vconcat" in spec["spec"] else spec["spec"]  # best depths: + a strip
    line = next(layer for layer in grid["spec"]["layer"] if layer["mark"]["type"] == "line")
    return line["encoding"].get("detail")


def test_load_lines_join_a_method_across_loads_even_when_its_best_depth_changes():
    at = open_page("views/load.py", query={"gpu": "MI300X"})
    chart = chart_specs(at)[0]
    assert _line_detail(chart) is None  # one line per method: the best depth may differ between loads
    depths = {}
    for r in chart["rows"]:
        if r.get("speedup") is not None:  # a null row breaks a line where a load has no cell
            depths.setdefault((r["family"], r["workload"], r["method"]), set()).add(r["depth"])
    assert any(len(d) > 1 for d in depths.values()), "the default data has a best depth that changes with load"
    at.sidebar.toggle(key="load.alldepths").set_value(True).run()
    assert _line_detail(chart_specs(at)[0]) == {"field": "depth", "type": "ordinal"}


def test_data_page_lists_runs_and_published_links():
    at = open_page("views/datasets.py", query={"pmeth": "dspark"})
    runs, pub = at.dataframe[0].value, at.dataframe[1].value
    # the simulated run, and the two import runs of the shipped published table (cells, per-position rates)
    assert sorted(runs["Backend"]) == ["import", "import", "sim"]
    assert int(runs[runs["Backend"] == "sim"]["Requests"].iloc[0]) > 0
    assert pub["Candidate"].str.fullmatch(r"dspark·(\d+|\?)").all() and pub["Source"].str.startswith("http").all()




def test_gpus_page_states_gpus_per_server_and_the_ratio_per_gpu():
    at = open_page("views/gpus.py", query={"a": "MI300X", "b": "MI355X", "conc": "1", "fam": "Qwen"})
    assert any("Qwen 4 × MI300X vs 2 × MI355X" in c.value for c in at.caption)
    rows = chart_specs(at)[0]["rows"]
    assert all(r["label"].endswith("/GPU") and "\n" in r["label"] for r in rows)  # server, then per GPU
    assert all(abs(r["ratio_per_gpu"] - 2 * r["ratio"]) < 1e-9 for r in rows)


def test_data_page_gives_gpus_per_server_not_a_zero_gpu_count():
    runs = open_page("views/datasets.py").dataframe[0].value
    with_cells = runs[runs["Cells"] > 0]  # the per-position import run holds rates of the cells run, no cells
    assert runs["GPUs"].isna().all() and with_cells["GPUs per server"].str.contains("MI300X ×").all()


def test_explore_overlay_keeps_the_measured_scale_and_names_what_it_leaves_out():
    at = open_page("views/explore.py", query={"metric": "output_throughput", "pub": "1"})
    rows = chart_specs(at)[0]["rows"]
    measured = [v for r in rows if r.get("kind") == "measured" for v in (r["value"], r["ci_low"], r["ci_high"])
                if v is not None]
    lo, hi = min(measured), max(measured)
    drawn = [r["value"] for r in rows if r.get("kind") == "published"]
    assert all(lo - (hi - lo) <= v <= hi + (hi - lo) for v in drawn)
    assert any(c.value.startswith("Not drawn:") for c in at.caption)


def test_explore_shows_the_published_per_position_acceptance():
    """The published cells (load not stated) are one load choice away: their per-position acceptance, one facet
    row per model · dataset, with the post's own figures."""
    import csv

    from tests.conftest import REPO

    at = open_page("views/explore.py", {"gpu": "MI300X", "conc": "load not stated", "meth": "mtp"})
    charts_ = chart_specs(at)
    pos = next(c for c in charts_ if any("position" in r for r in c["rows"]))
    rows = [r for r in pos["rows"] if r.get("model") == "Qwen/Qwen3.5-122B-A10B" and r.get("dataset") == "GSM8K"
            and r.get("depth") == 7]
    with open(REPO / "data" / "published" / "vllm-amd-2026-08" / "positions.csv", newline="", encoding="utf-8") as fh:
        want = {int(r["position"]): float(r["acceptance_rate"]) for r in csv.DictReader(fh)
                if r["model"] == "Qwen/Qwen3.5-122B-A10B" and r["dataset"] == "GSM8K" and r["method"] == "mtp"
                and r["depth"] == "7"}
    assert len(want) == 7 and {r["position"]: r["acceptance"] for r in rows} == want
    assert {r["row"] for r in rows} == {"Qwen3.5-122B-A10B · GSM8K"}
    assert pos["spec"]["facet"]["row"]["field"] == "row"
