"""Every chart is legible at every size of the data (issue 14 item 3), checked on its Vega-Lite spec and on the
SVG Vega draws from it under Streamlit's own chart theme (which drops colliding axis labels and cuts them at
100 px): one label per row, the chart's height following the row count, legends never cut, on the default
data and on a store with 9 methods × 8 depths."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import vl_convert

from analysis import drilldown, explore, frames, gpu_compare, load, pareto, published, winners
from dashboard import charts
from ingest import store
from tests.dashboard.wide_store import build_wide_store

# Streamlit's chart theme (streamlit/static/js/CustomTheme*.js): what a chart inherits on screen unless it says
# otherwise. Merged under each spec's own config before rendering.
STREAMLIT_AXIS = {"labelOverlap": True, "labelLimit": 100, "labelFontSize": 12, "labelPadding": 16}
MIN_ROW_PX = 14  # one 12-px label per row needs at least this much height


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wide_store(tmp_path_factory.mktemp("wide"))


def chart_args(db: Path, gpu: str, gpu_b: str | None, family: str, workload: str) -> dict[str, tuple]:
    """Every builder's arguments on one store, as its page computes them (one group for the drill-down)."""
    with store.session(db, read_only=True) as con:
        dims = frames.distinct_values(con)
        g = drilldown.Group(gpu, family, workload, dims["concurrency"][0])
        ranked = drilldown.candidates(con, g, "output_throughput")
        one = frames.Filters(gpus=(gpu,), concurrency=(dims["concurrency"][0],))
        out = {
            "winner_heatmap": (winners.winners(con, "output_throughput", one), gpu, dims["family"],
                               dims["workload"], "throughput"),
            "candidates": (ranked, "Output throughput (tok/s)"),
            "positions": (drilldown.positions(con, g),),
            "positions_grid": (explore.by_position(con, one), "acceptance"),
            "latency": (drilldown.latency_summary(con, ranked), "e2e_ms"),
            "depth_curves": (explore.by_depth(con, one, "acceptance_length"), "acceptance length",
                             published.overlay("acceptance_length")),
            "tradeoff": (pareto.tradeoff(con, frames.Filters(gpus=(gpu,))), "p99 end-to-end latency (ms)"),
            "speedup": (load.with_gaps(load.speedup_vs_load(con, frames.Filters(gpus=(gpu,)))), True),
            "efficiency": (gpu_compare.efficiency(con, frames.Filters(concurrency=(dims["concurrency"][0],))),
                           "output_throughput_per_gpu", "output tok/s per GPU"),
        }
        if gpu_b:
            out["ratio_heatmap"] = (gpu_compare.ratios(con, frames.Filters(concurrency=(1,)), gpu, gpu_b),
                                    gpu, gpu_b, dims["family"], dims["workload"])
        return out


STORES = {"default": ("MI300X", "MI355X", "Qwen", "code"), "wide": ("MI300X", None, "Qwen", "code")}


@pytest.fixture(scope="module")
def args_by_store(default_db: Path, wide_db: Path) -> dict[str, dict[str, tuple]]:
    return {"default": chart_args(default_db, *STORES["default"]), "wide": chart_args(wide_db, *STORES["wide"])}


def _walk(node, path=()):
    if isinstance(node, dict):
        yield node, path
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def _rows(spec: dict) -> list[dict]:
    return [r for ds in spec.get("datasets", {}).values() for r in ds]


def _distinct(spec: dict, field: str) -> set:
    return {r[field] for r in _rows(spec) if r.get(field) is not None}


def row_axes(spec: dict) -> list[tuple[dict, dict]]:
    """(encoding channel, the view holding it) of every nominal y channel: an axis whose labels name rows."""
    out = []
    for node, _ in _walk(spec):
        enc = node.get("encoding") if isinstance(node, dict) else None
        y = (enc or {}).get("y")
        if isinstance(y, dict) and y.get("type") == "nominal" and "field" in y and y.get("axis", {}) is not None:
            out.append((y, node))
    return out


def legends(spec: dict) -> list[tuple[str, dict]]:
    out = []
    for node, _ in _walk(spec):
        enc = node.get("encoding") if isinstance(node, dict) else None
        for ch in ("color", "shape", "opacity", "size", "strokeDash"):
            c = (enc or {}).get(ch)
            if (isinstance(c, dict) and "field" in c and c.get("legend", {}) is not None
                    and c.get("type") != "quantitative"):
                out.append((c["field"], c.get("legend") or {}))
    return out


def _height(spec: dict, view: dict) -> float:
    for node, _ in _walk(spec):
        if isinstance(node, dict) and "height" in node and isinstance(node["height"], int | float) and (
                view is node or any(v is view for v, _ in _walk(node))):
            return float(node["height"])
    return 0.0


def on_streamlit(spec: dict) -> dict:
    out = copy.deepcopy(spec)
    cfg = out.setdefault("config", {})
    cfg["axis"] = {**STREAMLIT_AXIS, **cfg.get("axis", {})}
    return out


def drawn_labels(svg: str, role: str) -> list[str]:
    """The text of every label of ``role`` (axis-label, legend-label) Vega drew."""
    out = []
    for group in re.findall(rf'<g class="mark-text role-{role}"[^>]*>(.*?)</g>', svg, flags=re.S):
        out += [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.findall(r"<text[^>]*>(.*?)</text>", group, re.S)]
    return out


CASES = [(s, k) for s in STORES for k in sorted(charts.BUILDERS) if not (s == "wide" and k == "ratio_heatmap")]


@pytest.mark.parametrize(("which", "kind"), CASES)
def test_every_row_has_its_label_and_no_legend_is_cut(args_by_store: dict, which: str, kind: str):
    spec = charts.build(kind, *args_by_store[which][kind]).to_dict()
    for y, view in row_axes(spec):
        axis = y.get("axis") or {}
        assert axis.get("labelOverlap") is False, (kind, y["field"])  # Streamlit's theme would drop labels
        values = _distinct(spec, y["field"])
        if isinstance(y.get("sort"), list):
            assert values <= set(y["sort"]), (kind, values - set(y["sort"]))
        longest = max((len(str(v)) for v in values), default=0)
        assert axis.get("labelLimit", 0) >= 8 * longest, (kind, y["field"])
        assert _height(spec, view) >= MIN_ROW_PX * len(values), (kind, y["field"], len(values))
    for field, legend in legends(spec):
        longest = max((len(str(v)) for v in _distinct(spec, field)), default=0)
        assert legend.get("labelLimit", 0) >= 8 * longest, (kind, field)
    svg = vl_convert.vegalite_to_svg(json.dumps(on_streamlit(spec)))
    cut = [t for t in drawn_labels(svg, "axis-label") + drawn_labels(svg, "legend-label") if t.endswith("…")]
    assert not cut, (kind, cut)
    for y, _ in row_axes(spec):
        drawn = set(drawn_labels(svg, "axis-label"))
        assert {str(v) for v in _distinct(spec, y["field"])} <= drawn, (kind, y["field"])


def test_the_wide_store_has_nine_methods_and_eight_depths(args_by_store: dict):
    ranked = args_by_store["wide"]["candidates"][0]
    assert ranked["method"].n_unique() == 9 and ranked.filter(pl.col("method") != "none")["depth"].n_unique() == 8
    assert ranked.height == 65


def _layers(spec: dict) -> list[dict]:
    return [n for n, _ in _walk(spec) if isinstance(n, dict) and "mark" in n]


def _mark(layer: dict) -> str:
    m = layer["mark"]
    return m if isinstance(m, str) else m.get("type", "")


@pytest.mark.parametrize("which", list(STORES))
def test_the_pareto_front_is_drawn_per_load_with_1_2_5_ticks(args_by_store: dict, which: str):
    points = args_by_store[which]["tradeoff"][0]
    spec = charts.build("tradeoff", *args_by_store[which]["tradeoff"]).to_dict()
    front = [n for n in _layers(spec) if _mark(n) == "line"]
    assert front and front[0]["encoding"]["detail"]["field"] == "concurrency"
    for ch in ("x", "y"):
        values = next(n["encoding"][ch]["axis"]["values"] for n in _layers(spec) if "axis" in n["encoding"].get(ch, {}))
        assert {round(v / 10 ** np.floor(np.log10(v))) for v in values} == {1, 2, 5}
    # one front per load: every load of every group has cells on its front, and none dominates another there
    fronts = points.filter(pl.col("on_front")).group_by("family", "workload").agg(pl.col("concurrency").n_unique())
    assert fronts["concurrency"].min() == points["concurrency"].n_unique() > 1


@pytest.mark.parametrize("which", list(STORES))
def test_box_plot_whiskers_are_drawn_in_the_methods_colour_on_either_theme(args_by_store: dict, which: str):
    spec = charts.build("latency", *args_by_store[which]["latency"]).to_dict()
    rules = [n for n in _layers(spec) if _mark(n) == "rule"]
    assert rules and all("color" in n["encoding"] and "color" not in (n["mark"] if isinstance(n["mark"], dict)
                                                                         else {}) for n in rules)
    dark = json.dumps(charts.theme.for_screen(spec, dark=True))
    assert '"#000000"' not in dark and '"black"' not in dark  # nothing drawn in black ink on a dark background


@pytest.mark.parametrize("which", list(STORES))
def test_load_lines_break_where_no_load_joins_them_and_depths_are_a_strip(args_by_store: dict, which: str):
    s = args_by_store[which]["speedup"][0]
    spec = charts.build("speedup", *args_by_store[which]["speedup"]).to_dict()
    assert "vconcat" in spec  # the best depths are a strip of rows under the grid, not labels on the points
    texts = [n for n in _layers(spec) if _mark(n) == "text"]
    assert len(texts) == 1 and texts[0]["encoding"]["y"]["field"] == "method"
    # every line has a row at every load of its group: a missing cell is a null that breaks the line
    per_line = s.group_by("family", "workload", "method").agg(pl.len())
    assert per_line["len"].n_unique() == 1


@pytest.fixture
def on_wide_store(wide_db: Path):
    import os

    old = os.environ["SPECTUNE_DB"]
    os.environ["SPECTUNE_DB"] = str(wide_db)
    yield wide_db
    os.environ["SPECTUNE_DB"] = old


@pytest.mark.parametrize(("page", "query"), [
    ("views/winners.py", {"conc": "1", "cell": "MI300X|Qwen|code"}), ("views/explore.py", {"pub": "1"}),
    ("views/load.py", {}), ("views/tradeoffs.py", {"cell": "MI300X|Qwen|code"})])
def test_pages_on_the_wide_store_label_every_row(on_wide_store, page: str, query: dict):
    from tests.dashboard.conftest import chart_specs, open_page

    at = open_page(page, query)  # asserts no exception
    specs = chart_specs(at)
    assert specs
    for item in specs:
        for y, _ in row_axes(item["spec"]):
            assert (y.get("axis") or {}).get("labelOverlap") is False, (page, y["field"])
    if "cell" in query:  # the drill-down's candidates: all 65, each on its own row
        # the candidates chart by its title (the heatmap's key also speaks of a 95 % interval)
        cand = next(s for s in specs if "Every candidate" in json.dumps(s["spec"].get("title", "")))
        assert len({r["candidate"] for r in cand["rows"]}) == 65
