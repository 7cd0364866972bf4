"""The landing page's across-load chart: per GPU, the sensible pick of every model × workload at every
measured load side by side (one small heatmap per load), so the way the answer moves with load is seen at once.

Cells come from an ``analysis.winners`` document over all loads (``verdict``, ``pick``, ``tie_text`` from
analysis.equivalence); the fill is the pick's method (the app's fixed colours), its strength the verdict (solid:
clear; lighter: equivalent within the margin; faint: a tie the evidence cannot separate). No math here.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from analysis import vocabulary
from analysis.labels import candidate_of, row_label
from dashboard import charts, theme, vl

SHADE = {"clear": 1.0, "equivalent": 0.75, "tie": 0.4}
MARK = {"clear": "clear", "equivalent": "≈ equivalent", "tie": "tie"}
SUBTITLE = ("every cell names its pick; its shade is its verdict; the tooltip gives the pick's chance of "
            "being best and its gain with the 95 % interval")


# field, title: the same words as the heatmap's tooltip (analysis.vocabulary)
TOOLTIP = (("headline", "verdict · pick (chance of being best)"), ("pick_reason", "why this pick"),
           ("gain", "pick vs none [95 % interval]"), ("best", "best point estimate"),
           ("chances", "chance of being best (top candidates)"), ("tie_text", "verdict in words"))


def rows(doc: dict, gpu: str) -> pl.DataFrame:
    """One row per (model [· dataset], workload, load) of ``gpu``: pick, verdict, the words of the tie. A group
    whose load is not stated has no place on the load axis: the landing page lists those in its own table."""
    out = []
    for c in doc["cells"]:
        if c["gpu"] != gpu or not c.get("pick") or c["concurrency"] is None:
            continue
        p, w = c["pick"], c["winner"]
        words = vocabulary.cell_words(c)
        out.append({"family": c["family"], "row": row_label(c), "model": c.get("model"),
                    "workload": c["workload"], "concurrency": int(c["concurrency"]),
                    "method": p["method"], "pick": candidate_of(p),
                    "best": candidate_of(w), "verdict": c["verdict"],
                    "mark": MARK.get(c["verdict"], c["verdict"]), "shade": SHADE.get(c["verdict"], 1.0),
                    "tie_text": c.get("tie_text", ""), "pick_reason": words.why, "headline": words.headline,
                    "gain": words.gain, "chances": words.chances})
    return pl.DataFrame(out, schema={"family": pl.String, "row": pl.String, "model": pl.String,
                                     "workload": pl.String, "concurrency": pl.Int64,
                                     "method": pl.String, "pick": pl.String, "best": pl.String,
                                     "verdict": pl.String, "mark": pl.String, "shade": pl.Float64,
                                     "tie_text": pl.String, "pick_reason": pl.String, "headline": pl.String,
                                     "gain": pl.String, "chances": pl.String})


def _states(d: pl.DataFrame) -> list[str]:
    """The verdicts on screen, in legend order: the opacity legend names only these."""
    return [v for v in vocabulary.VERDICTS if v in set(d["verdict"])] if d.height else []


def _opacity_legend(states: list[str]) -> dict:
    return {"orient": "right", "title": "verdict", "symbolType": "square", "symbolFillColor": theme.INK_SOFT,
            "symbolStrokeColor": theme.INK_SOFT, "labelLimit": 300,
            "labelExpr": "datum.label == 'tie' ? 'tie (faint)' : "
                         "datum.label == 'equivalent' ? 'equivalent (lighter)' : 'clear (solid)'"}


def _swatch_opacity(states: list[str]) -> float:
    """The method legend's swatches at the strongest shade drawn (faint when every cell is a tie)."""
    return max((SHADE.get(v, 1.0) for v in states), default=1.0)


def chart(doc: dict, gpu: str, families: list[str], workloads: list[str], metric_label: str) -> alt.FacetChart:
    """Small multiples: one family × workload heatmap per load, labelled with the pick and its verdict."""
    d = rows(doc, gpu)
    present = sorted(set(d["method"])) if d.height else []
    domain, rng = theme.scale_domain_range(present)
    band = alt.Scale(paddingInner=0.06)
    base = alt.Chart().encode(
        x=alt.X("workload:N", sort=workloads, title=None, scale=band,
                axis=alt.Axis(orient="top", labelAngle=0, labelFontSize=12, ticks=False, domain=False)),
        y=alt.Y("row:N", sort=charts.row_order(d, families), title=None, scale=band,
                # a row per family: every label drawn, none cut (Streamlit's theme drops overlapping ones)
                axis=alt.Axis(labelFontSize=12, ticks=False, domain=False, labelOverlap=False, labelLimit=320)))
    tooltip = [alt.Tooltip("model:N"), alt.Tooltip("workload:N"), alt.Tooltip("concurrency:Q"),
               *(alt.Tooltip(f"{f}:N", title=t) for f, t in TOOLTIP)]
    states = _states(d)
    rect = base.mark_rect().encode(
        color=alt.Color("method:N", scale=alt.Scale(domain=domain, range=rng), title="pick's method",
                        legend=alt.Legend(orient="right", symbolOpacity=_swatch_opacity(states), labelLimit=300)),
        # an explicit ordinal scale: a nominal opacity gets a point scale, which ignores a one-value range
        opacity=alt.Opacity("verdict:N", scale=alt.Scale(type="ordinal", domain=states,
                                                         range=[SHADE[v] for v in states]),
                            legend=alt.Legend(**_opacity_legend(states))), tooltip=tooltip)
    name = base.mark_text(fontSize=12, fontWeight="bold", dy=-6, color="#000000").encode(text="pick:N",
                                                                                          tooltip=tooltip)
    mark = base.mark_text(fontSize=10, dy=9, color="#000000").encode(text="mark:N", tooltip=tooltip)
    return alt.layer(rect, name, mark, data=d.to_arrow()).properties(
        # fits a 1280 px laptop
        width=66 * max(len(workloads), 1), height=44 * max(len(charts.row_order(d, families)), 1)).facet(
        column=alt.Column("concurrency:O", title="concurrency (requests in flight)",
                          header=alt.Header(labelFontSize=12, labelExpr="'c = ' + datum.value")),
    ).properties(title=alt.Title(
        f"{gpu} · sensible pick at every load, by {metric_label}", anchor="start",
        subtitle=[SUBTITLE]))


def spec(doc: dict, gpu: str, families: list[str], workloads: list[str], metric_label: str) -> dict:
    """The screen's spec: ``charts.finish(chart(…)).to_dict()`` written as plain dicts (dashboard/vl.py; ~2 ms
    against Altair's ~0.1 s a rerun, plus ~0.1 s hashing ``doc`` for a cache key). The exports and reports
    draw :func:`chart`; tests/dashboard/test_load_strip.py holds the two equal."""
    d = rows(doc, gpu)
    domain, rng = theme.scale_domain_range(sorted(set(d["method"])) if d.height else [])
    band = {"paddingInner": 0.06}
    x = {"axis": {"domain": False, "labelAngle": 0, "labelFontSize": 12, "orient": "top", "ticks": False},
         "field": "workload", "scale": band, "sort": workloads, "title": None, "type": "nominal"}
    y = {"axis": {"domain": False, "labelFontSize": 12, "labelLimit": 320, "labelOverlap": False, "ticks": False},
         "field": "row", "scale": band, "sort": charts.row_order(d, families), "title": None, "type": "nominal"}
    tooltip = [vl.nominal("model"), vl.nominal("workload"), {"field": "concurrency", "type": "quantitative"},
               *(vl.nominal(f, title=t) for f, t in TOOLTIP)]
    states = _states(d)
    rect = {"mark": {"type": "rect"}, "encoding": {
        "color": {"field": "method", "legend": {"labelLimit": 300, "orient": "right",
                                                "symbolOpacity": _swatch_opacity(states)},
                  "scale": {"domain": domain, "range": rng}, "title": "pick's method", "type": "nominal"},
        "opacity": {"field": "verdict", "legend": _opacity_legend(states),
                    "scale": {"domain": states, "range": [SHADE[v] for v in states], "type": "ordinal"},
                    "type": "nominal"},
        "tooltip": tooltip, "x": x, "y": y}}
    name = {"mark": {"type": "text", "color": "#000000", "dy": -6, "fontSize": 12, "fontWeight": "bold"},
            "encoding": {"text": vl.nominal("pick"), "tooltip": tooltip, "x": x, "y": y}}
    mark = {"mark": {"type": "text", "color": "#000000", "dy": 9, "fontSize": 10},
            "encoding": {"text": vl.nominal("mark"), "tooltip": tooltip, "x": x, "y": y}}
    datasets: dict[str, list[dict]] = {}
    return vl.top_level(
        datasets, data=vl.dataset(d, datasets),
        facet={"column": {"field": "concurrency", "header": {"labelExpr": "'c = ' + datum.value", "labelFontSize": 12},
                          "title": "concurrency (requests in flight)", "type": "ordinal"}},
        spec={"layer": [rect, name, mark], "height": 44 * max(len(charts.row_order(d, families)), 1),
              "width": 66 * max(len(workloads), 1)},
        title={"text": f"{gpu} · sensible pick at every load, by {metric_label}", "anchor": "start",
               "subtitle": [SUBTITLE]})


def exported(doc: dict, gpu: str, families: list[str], workloads: list[str], metric_label: str,
             simulated: bool = False) -> alt.TopLevelMixin:
    return charts.finish(chart(doc, gpu, families, workloads, metric_label), export=True, simulated=simulated)
