"""Interactive figures (Plotly) for the views a reader zooms, hovers and selects in: the drill-down's per-request
latency distribution and the Trade-offs scatter, whose box/lasso selection narrows a table of the selected cells.

Built from the frames analysis/ already gives (through dashboard.data): no SQL and no math here, only drawing and
reading a selection back. Same vocabulary as the Altair charts (candidate names from analysis.labels, method
colours from dashboard.theme, the same titles); a figure of simulated numbers says so in its subtitle. Exported
figures (PNG/SVG/PDF buttons, reports) stay Altair + vl-convert (dashboard.charts, dashboard.export).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import polars as pl
import streamlit as st
from plotly.subplots import make_subplots

from analysis import labels as notation
from dashboard import theme
from dashboard.charts import LOG_TICKS, ROW_H_BOX, SIM_NOTE, rows_height

SELECTION_MODES = ("box", "lasso", "points")
PANEL_H = 230  # one family × workload panel of the trade-off grid, in px (the grid takes the column's width)
KEY_COLS = ("run_id", "cell_id")  # what a point carries back in a selection (customdata): one cell of one run


def _title(text: str, simulated: bool) -> dict:
    """A left-aligned title; a figure of simulated numbers carries :data:`charts.SIM_NOTE` as its subtitle."""
    out: dict[str, Any] = {"text": text, "x": 0, "xanchor": "left"}
    if simulated:
        out["subtitle"] = {"text": SIM_NOTE, "font": {"color": theme.SIM_COLOR}}
    return out


def _log_axis(title: str | None = None) -> dict:
    """A log axis ticked at 1-2-5 of each decade, as the Altair trade-off chart."""
    return {"type": "log", "tickvals": LOG_TICKS, "tickformat": "~s", "title": {"text": title} if title else None}


def latency_figure(dist: pl.DataFrame, column: str = "e2e_ms", simulated: bool = False) -> go.Figure:
    """Per-request latency distribution of the leading candidates and the baseline, drawn from the box statistics
    and binned outliers analysis.distribution computed (box = IQR, line = median, whiskers to the last request
    within 1.5 IQR, dots = outliers per bin, bigger = more requests): the same figure as charts.latency_chart,
    zoomable over a long tail."""
    d = dist.filter(pl.col("latency") == column)
    box = d.filter(pl.col("part") == "box")
    out = d.filter(pl.col("part") == "outliers")
    name = column.replace("_ms", "")
    order = box["candidate"].to_list()
    fig = go.Figure()
    for r in box.iter_rows(named=True):
        colour = theme.color_of(r["method"])
        fig.add_trace(go.Box(
            y=[r["candidate"]], q1=[r["q1"]], median=[r["median"]], q3=[r["q3"]], lowerfence=[r["whisker_low"]],
            upperfence=[r["whisker_high"]], orientation="h", name=r["candidate"], legendgroup=r["method"],
            marker_color=colour, line_color=colour, fillcolor=colour, boxpoints=False, showlegend=False,
            hoverinfo="x+name", customdata=[[r["n"], r["n_outliers"]]]))
    if out.height:
        size = out["count"].to_list()
        top = max(size) or 1
        fig.add_trace(go.Scatter(
            x=out["value"].to_list(), y=out["candidate"].to_list(), mode="markers", name="outliers",
            marker={"color": [theme.color_of(m) for m in out["method"]], "opacity": 0.6,
                    "size": size, "sizemode": "area", "sizeref": 2.0 * top / 16 ** 2, "sizemin": 3},
            customdata=out["count"].to_list(), showlegend=False,
            hovertemplate=(f"%{{y}}<br>{name} bin centre (ms): %{{x:,.1f}}<br>requests: %{{customdata}}"
                           "<extra>outliers in bin</extra>")))
    fig.update_layout(
        title=_title(f"Request {name.upper()} distribution", simulated),
        xaxis={"title": {"text": f"request {name} (ms)"}, "zeroline": False},
        yaxis={"categoryorder": "array", "categoryarray": order[::-1], "title": None, "automargin": True},
        height=rows_height(len(order), ROW_H_BOX) + (150 if simulated else 120), margin={"l": 10, "r": 10},
        dragmode="zoom")
    return fig


def tradeoff_figure(points: pl.DataFrame, latency_label: str, simulated: bool = False) -> go.Figure:
    """Output throughput vs the chosen latency for every cell (analysis.pareto.tradeoff), one panel per family ×
    workload on log axes, a colour per method and a symbol per concurrency; each load's Pareto front
    (``on_front``) ringed and joined by a dashed line. Every point carries its run and cell id back in a
    selection (:func:`selected`)."""
    families = list(dict.fromkeys(points["family"].to_list()))
    workloads = list(dict.fromkeys(points["workload"].to_list()))
    loads = sorted(set(points["concurrency"].to_list()))
    symbols = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]
    d = points.with_columns(notation.candidate_expr().alias("candidate"))
    fig = make_subplots(rows=len(families), cols=len(workloads), shared_xaxes=False, shared_yaxes=False,
                        row_titles=families, column_titles=workloads, horizontal_spacing=0.06,
                        vertical_spacing=0.08 if len(families) > 1 else 0.1)
    hover = ("%{customdata[2]} @c%{customdata[3]}<br>" + notation.title("output_throughput") + ": %{y:,.1f}<br>"
             + latency_label + ": %{x:,.1f}<br>on the front: %{customdata[4]}<br>backend: %{customdata[5]}"
             "<extra>%{customdata[6]} · %{customdata[7]}</extra>")
    shown: set[str] = set()
    for i, fam in enumerate(families, 1):
        for j, wl in enumerate(workloads, 1):
            panel = d.filter((pl.col("family") == fam) & (pl.col("workload") == wl))
            for c in loads:  # each load's front: a dashed line through its ringed cells, by latency
                front = panel.filter(pl.col("on_front") & (pl.col("concurrency") == c)).sort("latency")
                if front.height:
                    fig.add_trace(go.Scatter(
                        x=front["latency"].to_list(), y=front["output_throughput"].to_list(), mode="lines+markers",
                        line={"color": theme.INK_SOFT, "dash": "dash", "width": 1},
                        marker={"size": 14, "color": "rgba(0,0,0,0)", "line": {"color": theme.INK_SOFT, "width": 1.5}},
                        name="Pareto front", legendgroup="front", showlegend="front" not in shown,
                        hoverinfo="skip"), row=i, col=j)
                    shown.add("front")
            for m in theme.methods_in_order(sorted(set(panel["method"]))):
                g = panel.filter(pl.col("method") == m)
                fig.add_trace(go.Scatter(
                    x=g["latency"].to_list(), y=g["output_throughput"].to_list(), mode="markers", name=m,
                    legendgroup=m, showlegend=m not in shown,
                    marker={"color": theme.color_of(m), "size": 8, "opacity": 0.85,
                            "symbol": [symbols[loads.index(c) % len(symbols)] for c in g["concurrency"]]},
                    customdata=g.select(*KEY_COLS, "candidate", "concurrency", "on_front", "backend", "family",
                                        "workload").rows(),
                    hovertemplate=hover), row=i, col=j)
                shown.add(m)
    fig.update_xaxes(**_log_axis())
    fig.update_yaxes(**_log_axis())
    for i in range(1, len(families) + 1):
        fig.update_yaxes(title_text="output tok/s", row=i, col=1)
    for j in range(1, len(workloads) + 1):
        fig.update_xaxes(title_text=latency_label, row=len(families), col=j)
    symbol_key = " · ".join(f"c={c}: {symbols[k % len(symbols)]}" for k, c in enumerate(loads))
    fig.update_layout(
        title=_title(f"Output throughput vs {latency_label} · symbol = concurrency ({symbol_key})", simulated),
        height=PANEL_H * len(families) + 170,
        legend={"title": {"text": "method"}, "orientation": "h", "y": -0.08 if len(families) > 2 else -0.2},
        dragmode="select", clickmode="event+select", margin={"l": 10, "r": 40})
    return fig


def selected(points: pl.DataFrame, event: Any) -> pl.DataFrame | None:
    """The cells a Plotly selection event names (by run and cell id, carried in each point's customdata), in the
    frame's order; None when nothing is selected (a box or lasso over no point selects nothing as well)."""
    sel = (event or {}).get("selection") or {}
    picked = {tuple(p["customdata"][:len(KEY_COLS)]) for p in sel.get("points") or []
              if isinstance(p.get("customdata"), list | tuple) and len(p["customdata"]) >= len(KEY_COLS)}
    if not picked and not (sel.get("box") or sel.get("lasso")):
        return None
    keys = pl.DataFrame(sorted(picked), schema={k: points.schema[k] for k in KEY_COLS}, orient="row")
    return points.join(keys, on=list(KEY_COLS), how="semi", maintain_order="left")


def show(fig: go.Figure, key: str, **kwargs: Any) -> Any:
    """Draw a figure across the column (never past the page's edge) at its own height, the Streamlit theme on."""
    return st.plotly_chart(fig, key=key, width="stretch", config={"displaylogo": False}, **kwargs)
