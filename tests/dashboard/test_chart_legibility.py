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
            "speedup": (load.speedup_vs_load(con, frames.Filters(gpus=(gpu,)), best_depth=False), False),
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
