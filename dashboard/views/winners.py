"""Winners (landing page): who wins where. First, with no interaction, the published winner per model × dataset
(the shipped published tables, e.g. vLLM's AMD post: the source named, "load not stated"; analysis.glance.published).
Then the simulated (or measured) part, under the simulated banner when it is simulated: by default every load at
once — per GPU, the sensible pick of each model × workload at each measured load (dashboard.load_strip) under a
one-sentence summary (analysis.glance, the same as ``spectune winners --json``'s ``summary``); one click
on a load opens its heatmap (rows = model, columns = workload) with the drill-down of a cell.
Numbers come from analysis.winners (DESIGN's winner
rule) and analysis.equivalence (margin, sensible pick)."""

from __future__ import annotations

from functools import partial

import polars as pl
import streamlit as st

from analysis.labels import group_label
from dashboard import charts, data, drill, export, heatmap_spec, load_strip, md, report, state, widgets

PAGE = "winners"
ALL = "all"


def _load_label(c: object) -> str:
    return "every load (at a glance)" if c == ALL else f"concurrency {c}"


def _open_load(c: int) -> None:
    st.session_state[f"{PAGE}.conc"] = c


dims = data.dimension_values(data.db_path(), data.stamp())
params = [
    widgets.p_metric(),
    widgets.p_one("conc", "Load", (ALL, *dims["concurrency"]), default=ALL, format_func=_load_label),
    widgets.p_many("gpu", "GPUs", dims["gpu"]),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", dims["method"]),
    widgets.p_depth(dims["depth"]),
    *widgets.p_slo(),
    widgets.p_margin(),
    widgets.p_bool("best", "Best depth per method only"),
]

st.title("Who wins where")
answer_slot = st.empty()  # the plain answer opens the page; filled once the document is read
st.caption("The fastest speculative-decoding method and depth per model × workload (× dataset), per GPU, in one "
           "vocabulary: **best** = the best point estimate; **p** = a candidate's chance of being best over the "
           "paired replicates; **clear** = the best has p ≥ 0.95; **tie** = others keep p ≥ 0.05; "
           "**equivalent** = within the equivalence margin; **pick** = what we recommend and why (shallowest "
           "depth, then the method you deploy today, then no drafter needed). A gain over no speculation is "
           "always shown with its 95 % interval, or as \"not separable from none\".")
sidebar = [p.key for p in params if not p.key.startswith("slo")]
v = widgets.setup(PAGE, params, sidebar=sidebar)
if v["metric"] == "goodput":
    with st.sidebar:
        for p in params:
            if p.key.startswith("slo"):
                widgets.render(PAGE, p, st.sidebar)
    v = state.values(PAGE, params)

all_loads = v["conc"] == ALL
f_all = widgets.filters(v, concurrency=())
f = f_all if all_loads else widgets.filters(v, concurrency=[v["conc"]])
slo = widgets.slo(v)
margin = float(v["margin"])
doc_every = data.winners_doc(data.db_path(), data.stamp(), v["metric"], f_all, slo, bool(v["best"]), margin)
label = widgets.metric_label(v["metric"])
# published figures (a source URL, load not stated) first, on their own: never under the simulated banner
pub_doc, doc_all = data.split_published(doc_every)
pub = data.published_winners(pub_doc)
if pub["rows"]:
    st.subheader("Published results: the best method per model × dataset")
    for url in pub["sources"]:
        st.markdown(f"Source: {md.link(url)} — figures as published (no per-request samples), "
                    "**load not stated** by the source.")
    st.caption(md.text(pub["text"]))
    # the one vocabulary: the verdict and pick with its chance, its gain only with its 95 % interval
    widgets.table(pl.DataFrame(pub["rows"]).select("model", "dataset", "workload", "gpu", "best", "headline", "gain",
                                                   "load", "source"), key=f"{PAGE}.published")
    st.subheader("Simulated loads" if doc_all["simulated"] else "Your measurements")
# one load's cells are the same decisions (a group is GPU × model × workload × load): filter, don't recompute
doc = doc_all if all_loads else {**doc_all, "cells": [c for c in doc_all["cells"] if c["concurrency"] == v["conc"]]}
widgets.banner(doc["simulated"])
glance = data.glance(doc_all)
# analysis.glance words the answer: the published figures' first, then the simulated (or measured) cells'
answer_slot.info(md.text(data.lead_answer(pub_doc, doc_all)), icon=":material/summarize:")
st.caption(md.text(glance["text"]))
families = [x for x in dims["family"] if not v["fam"] or x in v["fam"]]
workloads = [x for x in dims["workload"] if not v["wl"] or x in v["wl"]]
gpus = [g for g in dims["gpu"] if (not v["gpu"] or g in v["gpu"]) and any(c["gpu"] == g for c in doc["cells"])]
where = "every load" if all_loads else f"concurrency {v['conc']}"

drill_params = drill.params(doc)
state.warn(drill.seed_and_keep(PAGE, drill_params))

if not doc["cells"]:
    st.info("No cells match these filters. Widen the filters in the sidebar.")
shown: list[tuple[str, object]] = []
if all_loads:
    loads = sorted({c["concurrency"] for c in doc["cells"]})
    with st.container(horizontal=True, gap="small"):
        st.markdown("One load's heatmap and the drill-down of a cell:")
        for c in loads:
            st.button(f"c = {c}", key=f"{PAGE}.open.{c}", on_click=_open_load, args=(c,))
    for gpu in gpus:
        key = f"{PAGE}.loads.{gpu}"
        charts.display(load_strip.spec(doc, gpu, families, workloads, label), key=key)
        rows = load_strip.rows(doc, gpu)
        export.buttons(partial(load_strip.exported, doc, gpu, families, workloads, label,
                               simulated=doc["simulated"]),
                       rows.drop("shade"), export.slug(PAGE, v["metric"], gpu, "all-loads"), key)
        shown.append((gpu, rows))
else:
    for gpu in gpus:
        key = f"{PAGE}.heatmap.{gpu}"
        # the dict builder draws what charts.winner_heatmap (the exports' Altair chart) describes, ~100× faster
        charts.display(heatmap_spec.spec(doc, gpu, families, workloads, f"{label} · concurrency {v['conc']}"),
                       key=key, on_select=drill.click_handler(PAGE, key))
        rows = charts.winner_rows({**doc, "cells": [c for c in doc["cells"] if c["gpu"] == gpu]})
        export.buttons(partial(charts.exported, "winner_heatmap", doc, gpu, families, workloads,
                               f"{label} · concurrency {v['conc']}", select=False, simulated=doc["simulated"]),
                       rows.drop("text_color", "lines"), export.slug(PAGE, v["metric"], gpu, f"c{v['conc']}"), key)
        shown.append((gpu, rows))

ties = [c for c in doc["cells"] if c.get("verdict", "tie" if not c["clear"] else "clear") != "clear"]
if ties:
    with st.expander(f"{len(ties)} cell(s) without a clear winner (tie: the best's p < 0.95, or equivalent within "
                     f"{margin:g} %) — each names its sensible pick"):
        for c in ties:
            st.markdown(f"- **{md.text(group_label(c))}**: {md.text(c.get('tie_text', ''))}")

edges = [c for c in doc["cells"] if c.get("at_grid_edge")]
if edges:
    with st.expander(f"{len(edges)} cell(s) whose best point estimate is at the edge of the depth grid: a depth "
                     "outside it may do better"):
        for c in edges:
            st.markdown(f"- **{md.text(group_label(c))}**: " + md.text(
                f"{charts.cand(c['winner']['method'], c['winner']['depth'])} — {c['grid_edge']['text']}"))

if all_loads:
    st.caption("Drill-down: open one load above (or pick it under Load in the sidebar), then click a cell.")
else:
    drill.panel(PAGE, doc, drill_params, v["conc"], v["metric"], f, slo, label)


def _report() -> report.Report:
    view = report.View(v["metric"], label, "every load" if all_loads else v["conc"])
    if not all_loads:
        return report.winners_report(doc, view, gpus, families, workloads, widgets.described(v, params),
                                     data.runs(data.db_path(), data.stamp()))
    charts_ = [(f"{g} sensible pick at every load", load_strip.chart(doc, g, families, workloads, label),
                f"the sensible pick per model family × workload on {g} by {label}, one panel per load")
               for g in gpus]
    tables = [(f"{g} sensible pick at every load", rows.drop("shade")) for g, rows in shown]
    return report.winners_report(doc, view, gpus, families, workloads, widgets.described(v, params),
                                 data.runs(data.db_path(), data.stamp()), charts_=charts_, tables=tables)


st.divider()
report.button(_report, export.slug(PAGE, v["metric"], "all-loads" if all_loads else f"c{v['conc']}"), PAGE)
widgets.finish(PAGE, [*params, *drill_params])
