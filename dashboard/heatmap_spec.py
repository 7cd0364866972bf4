"""The winner heatmap's Vega-Lite spec for the screen, written as plain dicts (issue 16: page rerun ≤ 0.3 s).

Owns :func:`spec`: the same JSON as ``charts.finish(charts.winner_heatmap(...)).to_dict()`` — same layers,
encodings, datasets and titles, so the page draws exactly what the Altair builder (which PNG/SVG/PDF exports
and reports keep using) describes; ``tests/dashboard/test_heatmap_spec.py`` holds the two equal over every load,
GPU and filter of the default and the 12.1 M-row store, and validates the result against the Vega-Lite schema.
Why a second path: Altair's build cost ~160 ms of CPU per heatmap on every rerun after a filter change, most
of the page's time; these dicts take ~3 ms (dashboard/vl.py). No math: rows and labels come from
:func:`charts.winner_rows`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis import vocabulary
from analysis.labels import row_label
from dashboard import charts, theme
from dashboard.vl import dataset as _dataset
from dashboard.vl import nominal as _nominal
from dashboard.vl import top_level

OUTLINE_VIEW = "view_heatmap_outline"  # the view the click selection lives on (Altair names it view_<uuid>_<n>)
_BAND = {"paddingInner": 0.04, "paddingOuter": 0.02}


def _tooltip(cells: list[dict]) -> list[dict]:
    tips = [_nominal(f, title=t) if t else _nominal(f) for f, t in charts.TOOLTIP]
    if any(c.get("grid_edge") for c in cells):
        tips.append(_nominal("grid_edge", title="depth grid"))
    if any(c["winner"].get("whole_window_value") is not None for c in cells):
        tips.append(_nominal("whole_window", title="#1 whole window"))
    return tips


def spec(doc: dict, gpu: str, families: list[str], workloads: list[str], metric_label: str,
         select: bool = True) -> dict:
    """The finished spec of ``charts.winner_heatmap(doc, gpu, …)`` (with :func:`charts.finish`), as a dict."""
    cells = [c for c in doc["cells"] if c["gpu"] == gpu]
    rows = charts.winner_rows({**doc, "cells": cells})
    tied_methods = {(c["gpu"], row_label(c), c["workload"]): [t["method"] for t in c["tied"]] for c in cells}
    fams = charts.row_order(rows, families) if rows.height else families
    wls = [w for w in workloads if w in set(rows["workload"])] if rows.height else workloads
    stripes = charts._tie_stripes(rows, tied_methods) if rows.height else rows
    x = {"axis": {"domain": False, "labelAngle": 0, "labelFontSize": 13, "labelPadding": 6, "orient": "top",
                  "ticks": False}, "field": "workload", "scale": _BAND, "sort": wls, "title": None, "type": "nominal"}
    y = {"axis": {"domain": False, "labelFontSize": 13, "labelLimit": charts.LABEL_LIMIT, "labelOverlap": False,
                  "ticks": False}, "field": "row", "scale": _BAND, "sort": fams, "title": None, "type": "nominal"}
    tooltip = _tooltip(cells)
    domain, rng = theme.scale_domain_range(sorted(set(stripes["method"])) if stripes.height else [])
    color = {"field": "method", "legend": {"labelLimit": charts.LEGEND_LABEL_LIMIT, "orient": "right",
                                           "symbolOpacity": 1},
             "scale": {"domain": domain, "range": rng}, "title": "method", "type": "nominal"}
    datasets: dict[str, list[dict]] = {}
    states = [v for v in vocabulary.VERDICTS if v in set(rows["state"])] if rows.height else []
    marker = {"data": _dataset(rows, datasets), "mark": dict(charts.VERDICT_MARK),
              "encoding": {"shape": {"field": "state", "legend": dict(charts.VERDICT_LEGEND),
                                     "scale": {"domain": states, "range": [charts.VERDICT_SHAPE[v] for v in states]},
                                     "title": "verdict", "type": "nominal"},
                           "x": {**x, "bandPosition": charts.MARKER_AT},
                           "y": {**y, "bandPosition": charts.MARKER_AT * 2}}}
    layers: list[dict] = [
        {"data": _dataset(rows.filter(pl.col("clear")), datasets), "mark": {"type": "rect"},
         "encoding": {"color": color, "tooltip": tooltip, "x": x, "y": y}},
        {"data": _dataset(stripes.filter(~pl.col("clear")), datasets), "mark": {"type": "rect"},
         "encoding": {"color": color, "opacity": {"field": "shade", "scale": None, "type": "quantitative"},
                      "tooltip": tooltip, "x": x,
                      "xOffset": {"field": "slot", "scale": {"paddingInner": 0, "paddingOuter": 0},
                                  "type": "ordinal"}, "y": y}},
    ]
    text = {"type": "text", "fontSize": theme.FONT_SIZE, "fontWeight": "bold", "lineBreak": "\n"}
    for n_lines in sorted(set(rows["lines"])) if rows.height else []:
        part = rows.filter(pl.col("lines") == n_lines)
        lift = -charts.LINE_H / 2 * (n_lines - 1)
        ties = part.filter(~pl.col("clear"))
        if ties.height:  # the white halo under the text on hatched cells
            layers.append({"data": _dataset(ties, datasets),
                           "mark": {**text, "dy": lift, "stroke": "#FFFFFF", "strokeJoin": "round", "strokeWidth": 4},
                           "encoding": {"text": _nominal("label"), "x": x, "y": y}})
        layers.append({"data": _dataset(part, datasets), "mark": {**text, "dy": lift},
                       "encoding": {"color": {"condition": {"test": "datum.clear", "field": "text_color",
                                                            "scale": None, "type": "nominal"}, "value": "#000000"},
                                    "text": _nominal("label"), "tooltip": tooltip, "x": x, "y": y}})
    layers.append(marker)
    outline: dict[str, Any] = {"data": _dataset(rows, datasets),
                               "mark": {"type": "rect", "fill": "#FFFFFF", "fillOpacity": 0},
                               "encoding": {"tooltip": tooltip, "x": x, "y": y}}
    out = top_level(datasets, layer=[*layers, outline], height=charts.CELL_H * max(len(fams), 1),
                    title={"text": f"{gpu} · winner by {metric_label}", "anchor": "start",
                           "subtitle": charts._heatmap_key(doc["metric"])},
                    width=charts.CELL_W * max(len(wls), 1))
    if select:  # the click selection on the outline layer (on top, so a click on a label selects its cell)
        on = [{"param": charts.SELECTION, "value": theme.SELECTED_STROKE, "empty": False}]
        outline["encoding"] = {"stroke": {"condition": on, "value": "transparent"},
                               "strokeWidth": {"condition": [{**on[0], "value": 4}], "value": 0}, **outline["encoding"]}
        outline["name"] = OUTLINE_VIEW
        out["params"] = [{"name": charts.SELECTION, "select": {"type": "point", "fields": list(charts.SELECT_FIELDS),
                                                               "on": "click"}, "views": [OUTLINE_VIEW]}]
    return out
