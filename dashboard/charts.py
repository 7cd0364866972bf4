"""Altair chart builders: every chart the pages show and export (heatmaps, curves, scatters, bars).

Builders take frames that :mod:`analysis` already computed and only map columns to marks; colours come
from :mod:`dashboard.theme` so a method has one colour everywhere. Label strings for heatmap cells are
assembled here (presentation), never numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import altair as alt
import polars as pl
import streamlit as st

from analysis import labels as notation
from analysis import vocabulary
from analysis.metrics import METRICS
from dashboard import theme

SELECTION = "cell"  # name of the heatmap click selection (read back by st.altair_chart on_select)
SELECT_FIELDS = ["gpu", "family", "model", "dataset", "workload"]  # what a click names: one group of one model
CELL_W, CELL_H = 176, 72
LINE_H = 16  # label line height at theme.FONT_SIZE
EDGE_LABEL = "edge of grid"  # heatmap text under a winner at the deepest/shallowest depth measured (analysis)
TIE_SLOTS = 8  # a tie cell is hatched: stripes cycling through the tied methods, every other one lighter


# Streamlit's chart theme drops colliding axis labels (labelOverlap) and cuts them at 100 px: on an axis whose
# labels name rows (candidates, families) every row keeps its label, and each row gets the room for one.
ROW_H = 20  # px per candidate row (labels at 12 px)
ROW_H_BOX = 34  # px per box-plot row
LABEL_LIMIT = 320  # px: the longest candidate label ("draft_model·16") and family names fit whole
LEGEND_LABEL_LIMIT = 320  # px: legend entries ("eagle3", "draft_model", "concurrency 64") are never cut


def rows_height(n_rows: int, per_row: int = ROW_H, floor: int = 120) -> int:
    """The height of a chart with one labelled row per item: it follows the row count."""
    return max(per_row * n_rows, floor)


def _row_axis(**kw: Any) -> alt.Axis:
    """An axis whose labels are rows: every label drawn, none cut."""
    return alt.Axis(labelOverlap=False, labelLimit=LABEL_LIMIT, **{"labelFontSize": 12, **kw})


SIM_NOTE = "SIMULATED DATA: spectune's calibrated simulator (backend sim), not measurements on real GPUs"


def _legend_layout(orient: str) -> dict:
    if orient == "top":
        return {"orient": orient, "direction": "horizontal", "titleOrient": "left", "labelLimit": LEGEND_LABEL_LIMIT}
    return {"orient": orient, "labelLimit": LEGEND_LABEL_LIMIT}


def method_color(present: list[str] | None = None, title: str = "method", legend: bool = True,
                 orient: str = "right") -> alt.Color:
    """The method colour channel. The family × workload grids put it on top in the app (on the right of a
    three-column grid it runs past the page of a 1280-pixel screen, and the legend is what gets cut) and on
    the right in exports (where a top legend would sit above the title)."""
    # symbolOpacity 1: a legend otherwise takes the opacity of the faintest layer (a 95 % band) and fades out
    domain, rng = theme.scale_domain_range(present or [])
    return alt.Color("method:N", scale=alt.Scale(domain=domain, range=rng), title=title,
                     legend=alt.Legend(**_legend_layout(orient), symbolOpacity=1) if legend else None)


def _fmt(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "–"
    return f"{v:,.{digits}f}" if abs(v) < 1e5 else f"{v:,.0f}"


def _digits(metric: str) -> int:
    return 3 if metric in ("acceptance_rate", "acceptance_length") else 1


def cand(method: str, depth: int | None) -> str:
    """A candidate's short name: ``eagle3·3``; the baseline has no depth (analysis.labels, one notation)."""
    return notation.candidate(method, depth)


def _cand_expr() -> pl.Expr:
    return notation.candidate_expr()


def winner_rows(doc: dict) -> pl.DataFrame:
    """One row per heatmap cell from an ``analysis.winners`` document: names, labels, tooltip text. The words
    (verdict, pick, its chance, its gain with the interval) are :func:`analysis.vocabulary.cell_words`, the same
    on every page and report."""
    d = _digits(doc["metric"])
    rows = []
    for c in doc["cells"]:
        w = c["winner"]
        words = vocabulary.cell_words(c)
        tied = [cand(t["method"], t["depth"]) for t in c["tied"]]
        gain = c.get("gain_vs_none_pct")
        edge = c.get("grid_edge")
        edge_txt = f"\n{EDGE_LABEL}" if edge else ""
        pick_name = words.pick
        # the verdict, the pick with its chance of being best, and its gain only with its certainty
        label = (f"{words.verdict}\npick {pick_name} ({vocabulary.p_text(words.pick_p)})"
                 + (f"\n{words.gain}" if words.gain else "") + edge_txt)
        top = [f"{cand(t['method'], t['depth'])}: {_fmt(t['value'], d)} "
               f"[{_fmt(t['ci_low'], d)}, {_fmt(t['ci_high'], d)}]"
               + (f" (acceptance suspect: {t['acceptance_suspect']})" if t.get("acceptance_suspect") else "")
               for t in c["top3"]]
        rows.append({
            "gpu": c["gpu"], "family": c["family"], "model": c.get("model"), "dataset": c.get("dataset"),
            "row": notation.row_label(c), "workload": c["workload"], "concurrency": c["concurrency"],
            "method": w["method"], "depth": w["depth"], "value": w["value"], "gain_vs_none_pct": gain,
            "clear": c["clear"], "verdict": c.get("tie_text") or (
                "clear winner" if c["clear"] else f"tie ({len(tied)} tied)"),
            "state": words.verdict, "headline": words.headline, "best": words.best, "chances": words.chances,
            "gain": words.gain, "pick": pick_name, "pick_rule": words.why,
            "tied": ", ".join(tied), "label": label.rstrip("\n"),
            "lines": label.rstrip("\n").count("\n") + 1,
            "text_color": theme.TEXT_ON.get(w["method"], "#000000"),
            "top1": top[0] if top else "", "top2": top[1] if len(top) > 1 else "",
            "top3": top[2] if len(top) > 2 else "", "backend": c["backend"],
            "origin": c.get("origin", "measured"),
            "command": (c.get("deploy") or {}).get("command", ""),
            "grid_edge": edge["text"] if edge else "",
            "whole_window": "" if w.get("whole_window_value") is None else (
                f"{_fmt(w['whole_window_value'], d)}" + (f" (steady window not used: {w['steady_fallback']})"
                                                          if w.get("steady_fallback") else "")),
            "provenance": (c.get("provenance") or {}).get("summary", ""),
        })
    return pl.DataFrame(rows, schema_overrides={"gain_vs_none_pct": pl.Float64, "value": pl.Float64,
                                                "dataset": pl.String, "model": pl.String, "concurrency": pl.Int64})


def row_order(rows: pl.DataFrame, families: list[str]) -> list[str]:
    """The heatmap's rows (one per model, and dataset where given), grouped by family in ``families`` order."""
    if not rows.height:
        return []
    pairs = rows.select("family", "row").unique().sort("family", "row").rows()
    rank = {f: i for i, f in enumerate(families)}
    return [r for f, r in sorted(pairs, key=lambda p: (rank.get(p[0], len(rank)), p[1])) if f in rank or not families]


def _tie_stripes(rows: pl.DataFrame, tied_methods: dict[tuple, list[str]]) -> pl.DataFrame:
    out = []
    for r in rows.iter_rows(named=True):
        key = (r["gpu"], r["row"], r["workload"])
        ms = tied_methods.get(key) or [r["method"]]
        for s in range(TIE_SLOTS):
            tie = not r["clear"]
            out.append({**r, "slot": s, "method": ms[s // 2 % len(ms)] if tie else r["method"],
                        "shade": 0.6 if tie and s % 2 else 1.0})
    return pl.DataFrame(out, schema_overrides=rows.schema)


# the heatmap's tooltip: field, title (None: the field's name)
TOOLTIP = (("family", None), ("model", None), ("workload", None), ("headline", "verdict · pick (chance of being best)"),
           ("pick_rule", "why this pick"), ("gain", "pick vs none [95 % interval]"),
           ("best", "best point estimate"), ("chances", "chance of being best (top candidates)"),
           ("verdict", "verdict in words"), ("tied", "tied set"), ("top1", "#1 [95% CI]"), ("top2", "#2 [95% CI]"),
           ("top3", "#3 [95% CI]"), ("backend", None), ("provenance", "where it comes from"))
# each cell's verdict marker in its top-left corner (black on white, legible on any fill) and its legend
VERDICT_SHAPE = {"clear": "square", "equivalent": "diamond", "tie": "circle"}
VERDICT_MARK = {"type": "point", "filled": True, "size": 70, "color": "#000000", "stroke": "#FFFFFF",
                "strokeWidth": 1.5, "opacity": 1}
VERDICT_LEGEND = {"orient": "right", "labelLimit": LEGEND_LABEL_LIMIT, "symbolFillColor": "#000000",
                  "labelExpr": "datum.label == 'tie' ? 'tie (hatched)' : "
                               "datum.label == 'equivalent' ? 'equivalent (hatched)' : 'clear (solid)'"}
MARKER_AT = 0.06  # the marker's position inside its cell (band fraction from the top-left)


def _at_band(channel: Any, where: float) -> Any:
    """A copy of a band position channel that points ``where`` (0–1) into the band instead of its middle."""
    out = channel.copy(deep=True)
    out.bandPosition = where
    return out


def winner_heatmap(doc: dict, gpu: str, families: list[str], workloads: list[str], metric_label: str,
                   select: bool = True) -> alt.LayerChart:
    """Rows = model (with the dataset where given, grouped by family), columns = workload; fill = the clear best's
    method, or stripes of the tied methods' colours; text = verdict, pick (p), the pick's gain with its interval
    (analysis.vocabulary); a corner marker per verdict with a legend of the verdicts present; the tooltip adds
    why this pick, the top candidates' chances and the top 3 with 95 % intervals."""
    cells = [c for c in doc["cells"] if c["gpu"] == gpu]
    rows = winner_rows({**doc, "cells": cells})
    tied_methods = {(c["gpu"], notation.row_label(c), c["workload"]): [t["method"] for t in c["tied"]] for c in cells}
    fams = row_order(rows, families) if rows.height else families
    wls = [w for w in workloads if w in set(rows["workload"])] if rows.height else workloads
    stripes = _tie_stripes(rows, tied_methods) if rows.height else rows
    band = alt.Scale(paddingInner=0.04, paddingOuter=0.02)
    x = alt.X("workload:N", sort=wls, title=None, scale=band,
              axis=alt.Axis(orient="top", labelAngle=0, labelFontSize=13, labelPadding=6, ticks=False, domain=False))
    y = alt.Y("row:N", sort=fams, title=None, scale=band,
              axis=_row_axis(labelFontSize=13, ticks=False, domain=False))
    tooltip = [alt.Tooltip(f"{f}:N", title=t) if t else alt.Tooltip(f"{f}:N") for f, t in TOOLTIP]
    if any(c.get("grid_edge") for c in cells):
        tooltip.append(alt.Tooltip("grid_edge:N", title="depth grid"))
    if any(c["winner"].get("whole_window_value") is not None for c in cells):
        tooltip.append(alt.Tooltip("whole_window:N", title="#1 whole window"))
    present = sorted(set(stripes["method"])) if stripes.height else []
    states = [v for v in vocabulary.VERDICTS if v in set(rows["state"])] if rows.height else []
    sel = alt.selection_point(name=SELECTION, fields=SELECT_FIELDS, on="click", empty=False)
    # clear cells are one rect (no seams); ties are drawn as stripes through an x offset
    solid = alt.Chart(rows.filter(pl.col("clear")).to_arrow()).mark_rect().encode(
        x=x, y=y, color=method_color(present, "method"), tooltip=tooltip)
    hatch = alt.Chart(stripes.filter(~pl.col("clear")).to_arrow()).mark_rect().encode(
        x=x, y=y, xOffset=alt.XOffset("slot:O", scale=alt.Scale(paddingInner=0, paddingOuter=0)),
        color=method_color(present, "method"), opacity=alt.Opacity("shade:Q", scale=None), tooltip=tooltip)
    # on top of the labels so a click anywhere in a cell (text included) selects it; fillOpacity 0 with a
    # fill still catches pointer events
    outline = alt.Chart(rows.to_arrow()).mark_rect(fill="#FFFFFF", fillOpacity=0).encode(
        x=x, y=y, tooltip=tooltip,
    )
    # the verdict legend names only the states on screen; each cell carries its verdict's marker
    marker = alt.Chart(rows.to_arrow()).mark_point(**{k: v for k, v in VERDICT_MARK.items() if k != "type"}).encode(
        x=_at_band(x, MARKER_AT), y=_at_band(y, MARKER_AT * 2),
        shape=alt.Shape("state:N", title="verdict", scale=alt.Scale(
            domain=states, range=[VERDICT_SHAPE[v] for v in states]), legend=alt.Legend(**VERDICT_LEGEND)))
    if select:  # exports and reports have no selection: no stroke condition on an absent signal
        outline = outline.encode(
            stroke=alt.when(sel).then(alt.value(theme.SELECTED_STROKE)).otherwise(alt.value("transparent")),
            strokeWidth=alt.when(sel).then(alt.value(4)).otherwise(alt.value(0))).add_params(sel)
    labels = []
    # Vega puts a multi-line label's first line on the row centre: lift each label by half its height
    for n_lines in sorted(set(rows["lines"])) if rows.height else []:
        part = rows.filter(pl.col("lines") == n_lines)
        lift = -LINE_H / 2 * (n_lines - 1)
        ties = part.filter(~pl.col("clear"))
        if ties.height:  # a white halo keeps black text legible on the hatching
            labels.append(alt.Chart(ties.to_arrow()).mark_text(
                lineBreak="\n", fontSize=theme.FONT_SIZE, fontWeight="bold", stroke="#FFFFFF", strokeWidth=4,
                strokeJoin="round", dy=lift).encode(x=x, y=y, text="label:N"))
        labels.append(alt.Chart(part.to_arrow()).mark_text(
            lineBreak="\n", fontSize=theme.FONT_SIZE, fontWeight="bold", dy=lift).encode(
            x=x, y=y, text="label:N", tooltip=tooltip,
            color=alt.condition("datum.clear", alt.Color("text_color:N", scale=None), alt.value("#000000"))))
    return alt.layer(solid, hatch, *labels, marker, outline).properties(
        width=CELL_W * max(len(wls), 1), height=CELL_H * max(len(fams), 1),
        title=alt.Title(f"{gpu} · winner by {metric_label}", subtitle=_heatmap_key(doc["metric"]), anchor="start"))


def _heatmap_key(metric: str) -> list[str]:
    """The heatmap's subtitle: how to read a tie and the "% vs none" under each winner. For a lower-is-better
    metric a bare "+54 %" reads as "54 % more latency", so it says which way it goes."""
    lines = ["clear = the best has p ≥ 0.95 (p: chance of being best)",
             "tie / equivalent = hatched: stripes show the tied methods",
             "pick (p) = what we recommend (shallowest within the margin, deployed method, no drafter)",
             "below it: the pick's gain over none with its 95 % interval, or \"not separable from none\"",
             f"{EDGE_LABEL} = the winner's depth is the deepest (or shallowest) measured for its method: "
             "one outside the grid may do better"]
    m = METRICS.get(metric)
    if m is not None and m.whole_window_column:
        lines.append("decided on steady-state throughput (all slots busy; ramp-up and wind-down left out); "
                     "the whole-window figure is in the tooltip")
    if m is not None and not m.higher_is_better:
        lines.append("gain over none = how much better than no speculation: +50 % means none's value is 1.5× the "
                     "pick's")
    return lines


def finish(chart: alt.TopLevelMixin, *, export: bool = False, simulated: bool = False) -> alt.TopLevelMixin:
    """Top-level configuration for a chart shown or exported on its own (not inside a report concat).

    ``autosize: pad`` keeps each view at its declared size and grows the chart around it; Streamlit's
    default squeezes title, axes and legend into the declared width × height, shrinking the cells.

    ``export``: a file for a slide or a report — white background, a margin, fonts a size up, and, when
    ``simulated``, :data:`SIM_NOTE` above the chart (a picture travels without the page's banner)."""
    if simulated:
        chart = alt.vconcat(chart, title=alt.Title(SIM_NOTE, anchor="start", orient="top", fontSize=13,
                                                   fontWeight="bold", color=theme.SIM_COLOR, offset=10))
    out = chart.configure_view(stroke=None).configure_title(subtitleColor=theme.INK_SOFT).properties(
        autosize=alt.AutoSizeParams(type="pad"))
    if export:
        out = out.properties(background="#FFFFFF", padding=16).configure_axis(
            labelFontSize=12, titleFontSize=13).configure_legend(labelFontSize=12, titleFontSize=13).configure_header(
            labelFontSize=13, titleFontSize=13).configure_title(fontSize=16, subtitleFontSize=13,
                                                                subtitleColor=theme.INK_SOFT)
    return out


def titled(chart: alt.TopLevelMixin, title: str, subtitle: str = "") -> alt.TopLevelMixin:
    """The chart with a title (left-aligned, like the heatmaps') replacing its own, for charts whose page
    shows the title as a heading instead; exports and reports always carry one."""
    if not title:
        return chart
    # the title goes on a wrapper: a chart's own title sits below its top legend, a wrapper's above it
    inner = chart.copy(deep=False)
    inner.title = alt.Undefined
    return alt.vconcat(inner, title=alt.Title(title, subtitle=subtitle or alt.Undefined, anchor="start"))


def candidates_chart(ranked: pl.DataFrame, metric_label: str) -> alt.LayerChart:
    """Every method × depth of one group: point estimate and 95 % interval, best first."""
    df = ranked.with_columns(_cand_expr().alias("candidate"))
    order = df["candidate"].to_list()
    base = alt.Chart(df.to_arrow()).encode(
        y=alt.Y("candidate:N", sort=order, title=None, axis=_row_axis()),
        color=method_color(sorted(set(df["method"]))),
        tooltip=["method:N", "depth:Q", alt.Tooltip("value:Q", format=",.3f"),
                 alt.Tooltip("ci_low:Q", format=",.3f"), alt.Tooltip("ci_high:Q", format=",.3f"), "rank:Q"])
    bars = base.mark_rule(strokeWidth=3).encode(x=alt.X("ci_low:Q", title=metric_label, scale=alt.Scale(zero=False)),
                                                x2="ci_high:Q")
    pts = base.mark_point(filled=True, size=70).encode(x="value:Q")
    return alt.layer(bars, pts).properties(width=520, height=rows_height(len(order)),
                                           title="Every candidate with its 95 % interval")


def positions_chart(pos: pl.DataFrame, value: str = "acceptance", title: str = "") -> alt.Chart:
    """Acceptance by draft position, one line per (method, depth)."""
    y_title = "cumulative acceptance r_i" if value == "acceptance" else "conditional acceptance p_i"
    df = pos.with_columns(_cand_expr().alias("candidate"))
    return alt.Chart(df.to_arrow()).mark_line(point=True).encode(
        x=alt.X("position:O", title="draft position", axis=alt.Axis(labelAngle=0)),
        y=alt.Y(f"{value}:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=method_color(sorted(set(df["method"]))), detail="candidate:N",
        # a legend for depth too: with several depths per method the lines differ only by their shade
        opacity=alt.Opacity("depth:O", scale=alt.Scale(range=[0.35, 1.0]),
                            legend=alt.Legend(title="depth", labelLimit=LEGEND_LABEL_LIMIT, symbolType="circle",
                                              symbolFillColor=theme.INK_SOFT, symbolStrokeColor=theme.INK_SOFT)),
        tooltip=["method:N", "depth:Q", "position:Q", alt.Tooltip(f"{value}:Q", format=".3f")],
    ).properties(width=360, height=240, title=title or "Acceptance by draft position")


def positions_grid(pos: pl.DataFrame, value: str = "acceptance", legend_orient: str = "top") -> alt.FacetChart:
    """Acceptance by draft position for every (method, depth), faceted family × workload."""
    y_title = "cumulative r_i" if value == "acceptance" else "conditional p_i"
    df = pos.with_columns(_cand_expr().alias("candidate"))
    return alt.Chart(df.to_arrow()).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=alt.X("position:O", title="draft position", axis=alt.Axis(labelAngle=0)),
        y=alt.Y(f"{value}:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=method_color(sorted(set(df["method"])), orient=legend_orient), detail="candidate:N",
        opacity=alt.Opacity("depth:O", legend=None, scale=alt.Scale(range=[0.35, 1.0])),
        tooltip=["method:N", "depth:Q", "position:Q", alt.Tooltip(f"{value}:Q", format=".3f")],
    ).properties(width=220, height=150).facet(row=alt.Row(f"{_facet_row(df)}:N", title=None),
                                              column=alt.Column("workload:N", title=None))


def _facet_row(df: pl.DataFrame) -> str:
    """Facet rows per model (``row``: model · dataset) when the frame has them, else per family."""
    return "row" if "row" in df.columns else "family"


def latency_chart(dist: pl.DataFrame, column: str = "e2e_ms") -> alt.LayerChart:
    """Per-request latency distribution of the leading candidates and the baseline, from the box statistics
    and binned outliers :mod:`analysis.distribution` computed in DuckDB (box = IQR, white tick = median,
    whiskers to the last request within 1.5 IQR, dots = outliers per bin, bigger = more requests)."""
    d = dist.filter(pl.col("latency") == column)
    box = d.filter(pl.col("part") == "box")
    out = d.filter(pl.col("part") == "outliers")
    order = box["candidate"].to_list()
    name = column.replace("_ms", "")
    y = alt.Y("candidate:N", sort=order, title=None, axis=_row_axis())
    color = method_color(sorted(set(box["method"])), legend=False)
    tip = ["candidate:N", alt.Tooltip("n:Q", title="requests"), alt.Tooltip("q1:Q", format=",.1f"),
           alt.Tooltip("median:Q", format=",.1f"), alt.Tooltip("q3:Q", format=",.1f"),
           alt.Tooltip("whisker_low:Q", format=",.1f"), alt.Tooltip("whisker_high:Q", format=",.1f"),
           alt.Tooltip("n_outliers:Q", title="outliers")]
    base = alt.Chart(box.to_arrow()).encode(y=y, color=color, tooltip=tip)
    # whiskers in the method's colour: a black rule disappears on the dark theme
    whisker = base.mark_rule(strokeWidth=1.5).encode(
        x=alt.X("whisker_low:Q", title=f"request {name} (ms)"), x2="whisker_high:Q")
    iqr = base.mark_bar(size=22).encode(x="q1:Q", x2="q3:Q")
    median = base.mark_tick(color="#FFFFFF", size=22, thickness=2).encode(x="median:Q")
    dots = alt.Chart(out.to_arrow()).mark_circle(opacity=0.6).encode(
        y=y, x="value:Q", color=color,
        size=alt.Size("count:Q", title="outliers in bin", scale=alt.Scale(range=[12, 160]), legend=None),
        tooltip=["candidate:N", alt.Tooltip("value:Q", title=f"{name} bin centre (ms)", format=",.1f"),
                 alt.Tooltip("count:Q", title="requests")])
    return alt.layer(whisker, iqr, median, dots).properties(
        width=520, height=rows_height(len(order), ROW_H_BOX), title=f"Request {name.upper()} distribution")


def depth_curves(df: pl.DataFrame, metric_label: str, overlay: pl.DataFrame | None = None,
                 legend_orient: str = "top") -> alt.FacetChart:
    """Metric vs depth per method with 95 % bands, faceted family × workload; ``none`` dashed;
    published points (if given) as black-outlined diamonds."""
    data = df.with_columns(pl.lit("measured").alias("kind"), pl.lit(None, pl.String).alias("source_url"))
    if overlay is not None and overlay.height:
        ov = overlay.select("family", "workload", "method", pl.col("depth").cast(data.schema["depth"]),
                            pl.col("value"), pl.lit("published").alias("kind"), "source_url")
        if "row" in data.columns:  # a family-level published point is drawn in each of its models' rows
            ov = ov.join(data.select("family", "row").unique(), on="family")
        data = pl.concat([data, ov], how="diagonal_relaxed")
    present = sorted(set(data["method"].drop_nulls()))
    base = alt.Chart().encode(x=alt.X("depth:O", title="depth (num_speculative_tokens)", axis=alt.Axis(labelAngle=0)),
                              color=method_color(present, orient=legend_orient))
    measured = alt.datum.kind == "measured"
    band = base.transform_filter(measured).mark_area(opacity=0.18).encode(y="ci_low:Q", y2="ci_high:Q")
    line = base.transform_filter(measured).mark_line(point=True).encode(
        y=alt.Y("value:Q", title=metric_label, scale=alt.Scale(zero=False)),
        strokeDash=alt.condition("datum.method == 'none'", alt.value([5, 4]), alt.value([1, 0])),
        tooltip=["method:N", "depth:Q", alt.Tooltip("value:Q", format=",.3f"),
                 alt.Tooltip("ci_low:Q", format=",.3f"), alt.Tooltip("ci_high:Q", format=",.3f"), "backend:N"])
    pub = base.transform_filter(alt.datum.kind == "published").mark_point(
        shape="diamond", size=90, filled=True, stroke=theme.INK, strokeWidth=1).encode(
        y="value:Q", tooltip=["method:N", "depth:Q", alt.Tooltip("value:Q", format=",.3f"), "source_url:N"])
    return alt.layer(band, line, pub, data=data.to_arrow()).properties(width=220, height=170).facet(
        row=alt.Row(f"{_facet_row(data)}:N", title=None), column=alt.Column("workload:N", title=None))


# Log-axis ticks at 1-2-5 of each decade (Vega's own log ticks, thinned by Streamlit's overlap rule, read
# 50 / 400 / 3k); only the ones inside a panel's domain are drawn.
LOG_TICKS = [k * 10.0 ** e for e in range(-1, 8) for k in (1, 2, 5)]


def tradeoff_chart(df: pl.DataFrame, latency_label: str, legend_orient: str = "top") -> alt.FacetChart:
    """Throughput vs tail latency per cell; the Pareto front of each load drawn as a line (one per load: a
    front never joins different concurrencies), its cells ringed."""
    d = df.with_columns(pl.format("{} @c{}", _cand_expr(), "concurrency").alias("candidate"))
    present = sorted(set(d["method"]))
    # nice=False: a "nice" log domain rounds out to whole decades and leaves most of each panel empty
    log = alt.Scale(type="log", nice=False, padding=8)
    axis = alt.Axis(format="~s", values=LOG_TICKS, labelOverlap="greedy", labelFlush=True, gridOpacity=0.6)
    base = alt.Chart().encode(x=alt.X("latency:Q", title=latency_label, scale=log, axis=axis),
                              y=alt.Y("output_throughput:Q", title="output tok/s", scale=log, axis=axis))
    pts = base.mark_point(filled=True, size=45, opacity=0.8).encode(
        color=method_color(present, orient=legend_orient),
        shape=alt.Shape("concurrency:O", title="concurrency", legend=alt.Legend(
            **_legend_layout(legend_orient), symbolFillColor=theme.INK_SOFT, symbolStrokeColor=theme.INK_SOFT)),
        tooltip=["candidate:N", alt.Tooltip("output_throughput:Q", format=",.1f"),
                 alt.Tooltip("latency:Q", format=",.1f"), "on_front:N", "backend:N"])
    front = base.transform_filter(alt.datum.on_front).mark_line(color=theme.INK, strokeDash=[4, 3]).encode(
        detail="concurrency:O", order="latency:Q")
    ring = base.transform_filter(alt.datum.on_front).mark_point(size=160, color=theme.INK, strokeWidth=1.5)
    # the same grid as Explore and Load (rows = family, columns = workload): it fits the page's width
    return alt.layer(front, pts, ring, data=d.to_arrow()).properties(width=220, height=170).facet(
        row=alt.Row("family:N", title=None), column=alt.Column("workload:N", title=None))


def ratio_heatmap(df: pl.DataFrame, gpu_a: str, gpu_b: str, families: list[str], workloads: list[str]
                  ) -> alt.FacetChart:
    """Per method (best depth on each GPU): ratio B/A of the whole-server figure by family × workload, diverging
    around 1; for rate metrics the ratio per GPU under it (a server of B may have fewer GPUs than one of A)."""
    per_gpu = "ratio_per_gpu" in df.columns and df["ratio_per_gpu"].is_not_null().any()
    label = pl.format("×{}", pl.col("ratio").round(2))
    if per_gpu:  # first line the whole server (the colour), second per GPU
        label = pl.concat_str([label, pl.format("×{}/GPU", pl.col("ratio_per_gpu").round(2))], separator="\n")
    d = df.with_columns(label.alias("label"))
    base = alt.Chart().encode(x=alt.X("workload:N", sort=workloads, title=None,
                                      axis=alt.Axis(orient="top", labelAngle=0)),
                              y=alt.Y("family:N", sort=families, title=None, axis=_row_axis()))
    tip = ["method:N", "family:N", "workload:N", "depth_a:Q", alt.Tooltip("value_a:Q", format=",.1f"),
           "depth_b:Q", alt.Tooltip("value_b:Q", format=",.1f"), alt.Tooltip("ratio:Q", format=".3f")]
    if "gpus_a" in df.columns:
        tip += [alt.Tooltip("gpus_a:Q", title=f"GPUs per server ({gpu_a})"),
                alt.Tooltip("gpus_b:Q", title=f"GPUs per server ({gpu_b})")]
    if per_gpu:
        tip.append(alt.Tooltip("ratio_per_gpu:Q", title="ratio per GPU", format=".3f"))
    rect = base.mark_rect().encode(
        color=alt.Color("ratio:Q", title=f"{gpu_b} / {gpu_a} (server)",
                        scale=alt.Scale(scheme="blueorange", domainMid=1.0),
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=LEGEND_LABEL_LIMIT)),
        tooltip=tip)
    text = base.mark_text(fontSize=10, color="#000000", lineBreak="\n", dy=-6 if per_gpu else 0).encode(
        text="label:N")
    return alt.layer(rect, text, data=d.to_arrow()).properties(width=64 * max(len(workloads), 1),
                                                               height=(40 if per_gpu else 30) * max(len(families), 1)
                                                               ).facet(
        facet=alt.Facet("method:N", title=None, sort=theme.methods_in_order(list(set(d["method"])))), columns=3)


def speedup_chart(df: pl.DataFrame, best_only: bool = True, legend_orient: str = "top") -> alt.TopLevelMixin:
    """Speedup over ``none`` vs concurrency per method, with 95 % bands and the break-even line at 1.

    ``best_only``: each point is the method's best depth at that load, so one line per method joins them
    (the best depth may change with load); the depths are a strip under the grid, one row per method (labels
    on the points overlap where the methods meet, at high load). Otherwise one line per (method, depth).
    Rows with a null speedup (:func:`analysis.load.with_gaps`) break a line where a load has no cell.
    """
    present = sorted(set(df["method"]))
    detail = {} if best_only else {"detail": "depth:O"}
    # padding: the depth digits at the lowest and highest load sit inside the panel, not on its edge
    x = alt.X("concurrency:Q", scale=alt.Scale(type="log", base=2, padding=10), title="concurrency")
    base = alt.Chart().encode(x=x, color=method_color(present, orient=legend_orient))
    band = base.mark_area(opacity=0.15).encode(y="ci_low:Q", y2="ci_high:Q", **detail)
    y = alt.Y("speedup:Q", title="speedup vs none", scale=alt.Scale(zero=False))
    line = base.mark_line(point=True).encode(
        y=y, **detail,
        tooltip=["method:N", "depth:Q", "concurrency:Q", alt.Tooltip("speedup:Q", format=".3f"),
                 alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f"), "backend:N"])
    rule = alt.Chart().mark_rule(color=theme.INK_SOFT, strokeDash=[3, 3]).encode(y=alt.datum(1.0))
    grid = alt.layer(band, line, rule, data=df.to_arrow()).properties(width=210, height=170).facet(
        row=alt.Row("family:N", title=None), column=alt.Column("workload:N", title=None))
    if not best_only:
        return grid
    methods = theme.methods_in_order(present)
    depths = df.filter(pl.col("speedup").is_not_null())
    strip = alt.Chart(depths.to_arrow()).mark_text(fontSize=11, fontWeight="bold").encode(
        x=x, y=alt.Y("method:N", sort=methods, title=None, axis=_row_axis(labelFontSize=11)),
        text="depth:Q", color=method_color(present, orient=legend_orient),
        tooltip=["method:N", "concurrency:Q", "depth:Q"],
    ).properties(width=210, height=rows_height(len(methods), 16, 40)).facet(
        row=alt.Row("family:N", title=None), column=alt.Column("workload:N", title=None))
    return alt.vconcat(grid, strip.properties(title=alt.Title("best depth per load (each method's row)",
                                                              anchor="start", fontSize=12)))


def efficiency_chart(df: pl.DataFrame, value: str, axis_title: str, legend_orient: str = "top") -> alt.FacetChart:
    """Bars per method, one per GPU (lighter = the first GPU), faceted family × workload; each panel has its
    own y scale (a small dense model's bars would otherwise flatten every MoE panel): compare within a panel."""
    present = sorted(set(df["method"]))
    return alt.Chart(df.to_arrow()).mark_bar().encode(
        x=alt.X("method:N", sort=theme.methods_in_order(present), title=None),
        xOffset="gpu:N", y=alt.Y(f"{value}:Q", title=axis_title),
        color=method_color(present, orient=legend_orient),
        opacity=alt.Opacity("gpu:N", scale=alt.Scale(range=[0.55, 1.0]),
                            legend=alt.Legend(**_legend_layout(legend_orient))),
        tooltip=["gpu:N", "method:N", "depth:Q", alt.Tooltip(f"{value}:Q", format=",.2f"),
                 *([alt.Tooltip("gpu_count:Q", title="GPUs per server")] if "gpu_count" in df.columns else [])],
    ).properties(width=180, height=150).facet(row=alt.Row("family:N", title=None),
                                              column=alt.Column("workload:N", title=None)
                                              ).resolve_scale(y="independent")


BUILDERS: dict[str, Callable[..., alt.TopLevelMixin]] = {
    "winner_heatmap": winner_heatmap, "candidates": candidates_chart, "positions": positions_chart,
    "latency": latency_chart, "positions_grid": positions_grid, "depth_curves": depth_curves,
    "tradeoff": tradeoff_chart,
    "ratio_heatmap": ratio_heatmap, "speedup": speedup_chart, "efficiency": efficiency_chart,
}


GRIDS = {"positions_grid", "depth_curves", "tradeoff", "speedup", "efficiency"}  # family × workload facets


def build(kind: str, *args: Any, **kwargs: Any) -> alt.TopLevelMixin:
    """A finished (top-level configured) chart from the builder registry."""
    return finish(BUILDERS[kind](*args, **kwargs))


@st.cache_data(max_entries=256, show_spinner=False)
def spec(kind: str, *args: Any, **kwargs: Any) -> dict:
    """The Vega-Lite spec of a chart, cached by its inputs. Schema validation is skipped here (it costs
    ~40 ms a chart on every rerun); the builders are validated by the tests, which call ``to_dict()``."""
    return build(kind, *args, **kwargs).to_dict(validate=False)


def exported(kind: str, *args: Any, title: str = "", subtitle: str = "", simulated: bool = False,
             **kwargs: Any) -> alt.TopLevelMixin:
    """The chart as a file gets it (PNG/SVG/PDF buttons): with ``title`` (for charts whose page shows theirs
    as a heading, or whose own title does not say which view it is), export styling and, when
    ``simulated``, the simulated-data label."""
    if kind in GRIDS:
        kwargs.setdefault("legend_orient", "right")
    return finish(titled(BUILDERS[kind](*args, **kwargs), title, subtitle), export=True, simulated=simulated)


def dark_theme() -> bool:
    try:
        return st.context.theme.type == "dark"
    except Exception:  # no browser session (bare mode, AppTest)
        return False


def titled_tooltips(node: Any) -> Any:
    """The spec with a human title (analysis.labels) on every tooltip field that has none: a tooltip without
    one shows the machine name (``gain_vs_default_pct``)."""
    if isinstance(node, list):
        return [titled_tooltips(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: titled_tooltips(v) for k, v in node.items()}
    tips = out.get("tooltip")
    if isinstance(tips, dict | list):
        out["tooltip"] = [({**t, "title": notation.title(t["field"])}
                           if isinstance(t, dict) and isinstance(t.get("field"), str) and "title" not in t else t)
                          for t in (tips if isinstance(tips, list) else [tips])]
    return out


def display(chart_spec: dict, **kwargs: Any) -> Any:
    """Draw a finished chart's spec in the app, with background ink that reads on the active theme and human
    tooltip titles.

    width="content": keep the spec's own cell sizes (stretching a heatmap squeezes its rows and labels).

    Inline datasets go to Streamlit as Arrow IPC bytes, which it passes through; given row lists it would
    build a pandas frame per dataset first (~5 ms each, a fifth of a rerun)."""
    shown = titled_tooltips(theme.for_screen(chart_spec, dark_theme()))
    if isinstance(shown.get("datasets"), dict):
        shown["datasets"] = {name: _arrow_ipc(rows) if isinstance(rows, list) else rows
                             for name, rows in shown["datasets"].items()}
    return st.vega_lite_chart(shown, width="content", **kwargs)


def _arrow_ipc(rows: list[dict]) -> bytes | list[dict]:
    """A dataset's rows as one Arrow IPC stream (what Streamlit sends the browser for a chart's data)."""
    import pyarrow as pa  # Streamlit's own dependency, loaded by then

    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # mixed types in a column: Streamlit's own path
        return rows
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def show(kind: str, *args: Any, key: str, on_select: Any = "ignore", **kwargs: Any) -> None:
    display(spec(kind, *args, **kwargs), key=key, on_select=on_select)
