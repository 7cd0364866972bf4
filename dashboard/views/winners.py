"""Winners (landing page): who wins where — one heatmap per GPU, rows = family, columns = workload, at one
concurrency; click a cell for its detail. Numbers come from analysis.winners (DESIGN's winner rule)."""

from __future__ import annotations

from functools import partial

import streamlit as st

from dashboard import charts, data, drill, export, report, state, widgets

PAGE = "winners"

dims = data.dimension_values(data.db_path(), data.stamp())
params = [
    widgets.p_metric(),
    widgets.p_one("conc", "Concurrency", dims["concurrency"]),
    widgets.p_many("gpu", "GPUs", dims["gpu"]),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", dims["method"]),
    widgets.p_depth(dims["depth"]),
    *widgets.p_slo(),
    widgets.p_bool("best", "Best depth per method only"),
]

st.title("Who wins where")
st.caption("The fastest speculative-decoding method and depth per model family × workload, per GPU. "
           "A winner is claimed only when its 95 % bootstrap interval against the runner-up excludes zero.")
sidebar = [p.key for p in params if not p.key.startswith("slo")]
v = widgets.setup(PAGE, params, sidebar=sidebar)
if v["metric"] == "goodput":
    with st.sidebar:
        for p in params:
            if p.key.startswith("slo"):
                widgets.render(PAGE, p, st.sidebar)
    v = state.values(PAGE, params)

f = widgets.filters(v)
slo = widgets.slo(v)
doc = data.winners_doc(data.db_path(), data.stamp(), v["metric"], f, slo, bool(v["best"]))
widgets.banner(doc["simulated"])
label = widgets.metric_label(v["metric"])
families = [x for x in dims["family"] if not v["fam"] or x in v["fam"]]
workloads = [x for x in dims["workload"] if not v["wl"] or x in v["wl"]]
gpus = [g for g in dims["gpu"] if (not v["gpu"] or g in v["gpu"]) and any(c["gpu"] == g for c in doc["cells"])]

drill_params = drill.params(doc)
state.warn(drill.seed_and_keep(PAGE, drill_params))

if not doc["cells"]:
    st.info("No cells match these filters. Widen the filters in the sidebar.")
shown: list[tuple[str, object]] = []
for gpu in gpus:
    key = f"{PAGE}.heatmap.{gpu}"
    charts.show("winner_heatmap", doc, gpu, families, workloads, f"{label} · concurrency {v['conc']}", key=key,
                on_select=drill.click_handler(PAGE, key))
    rows = charts.winner_rows({**doc, "cells": [c for c in doc["cells"] if c["gpu"] == gpu]})
    export.buttons(partial(charts.exported, "winner_heatmap", doc, gpu, families, workloads,
                           f"{label} · concurrency {v['conc']}", select=False, simulated=doc["simulated"]),
                   rows.drop("text_color", "lines"), export.slug(PAGE, v["metric"], gpu, f"c{v['conc']}"), key)
    shown.append((gpu, rows))

ties = [c for c in doc["cells"] if not c["clear"]]
if ties:
    with st.expander(f"{len(ties)} tied cell(s): no clear winner at 95 %"):
        for c in ties:
            st.markdown(f"- **{c['gpu']} · {c['family']} · {c['workload']}**: "
                        + " ≈ ".join(charts.cand(t["method"], t["depth"]) for t in c["tied"]))

edges = [c for c in doc["cells"] if c.get("at_grid_edge")]
if edges:
    with st.expander(f"{len(edges)} winner(s) at the edge of the depth grid: a depth outside it may do better"):
        for c in edges:
            st.markdown(f"- **{c['gpu']} · {c['family']} · {c['workload']}**: "
                        f"{charts.cand(c['winner']['method'], c['winner']['depth'])} — {c['grid_edge']['text']}")

drill.panel(PAGE, doc, drill_params, v["conc"], v["metric"], f, slo, label)


def _report() -> report.Report:
    return report.winners_report(doc, report.View(v["metric"], label, v["conc"]), gpus, families, workloads,
                                 widgets.described(v, params), data.runs(data.db_path(), data.stamp()))


st.divider()
report.button(_report, export.slug(PAGE, v["metric"], f"c{v['conc']}"), PAGE)
widgets.finish(PAGE, [*params, *drill_params])
