"""Trade-offs: output throughput against tail latency for every cell, the Pareto front of each family ×
workload at each load, and — under an SLO the user sets — the goodput winner heatmap."""

from __future__ import annotations

from functools import partial

import streamlit as st

from analysis.pareto import LATENCIES
from dashboard import charts, data, drill, export, heatmap_spec, interactive, report, widgets

PAGE = "tradeoffs"

dims = data.dimension_values(data.db_path(), data.stamp())
params = [
    widgets.p_one("gpu", "GPU", dims["gpu"]),
    widgets.p_one("lat", "Latency axis", LATENCIES, format_func=widgets.metric_label),
    widgets.p_many("conc", "Concurrency", dims["concurrency"]),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", dims["method"]),
    widgets.p_depth(dims["depth"]),
    *widgets.p_slo(),
    widgets.p_one("gconc", "Goodput heatmap concurrency", dims["concurrency"]),
]

st.title("Trade-offs")
st.caption("Each point is a cell (method · depth · concurrency). Ringed points on a dashed line form the "
           "Pareto front of their load (one line per concurrency): nothing else at that load is both faster and "
           "lower-latency.")
v = widgets.setup(PAGE, params, sidebar=[p.key for p in params if p.key != "gconc"])
f = widgets.filters(v, gpus=[v["gpu"]])
slo = widgets.slo(v)
points = data.tradeoff(data.db_path(), data.stamp(), f, v["lat"])
widgets.banner(widgets.any_simulated(points))
lat_label = widgets.metric_label(v["lat"])
simulated = widgets.any_simulated(points)
name = export.slug(PAGE, v["lat"], v["gpu"])
scatter_title = f"Output throughput vs {lat_label} · {v['gpu']} · Pareto front per load ringed"
if points.height == 0:
    st.info("No cells match these filters.")
else:
    # interactive (Plotly): zoom, hover, and a box/lasso/click selection that narrows the table below it; the
    # exported figure is the Altair one (PNG/SVG/PDF)
    event = interactive.show(interactive.tradeoff_figure(points, lat_label, simulated), key=f"{PAGE}.scatter",
                             on_select="rerun", selection_mode=interactive.SELECTION_MODES)
    latency_title = {"latency": lat_label}  # the column holds the latency axis the user picked
    export.buttons(partial(charts.exported, "tradeoff", points, lat_label, title=scatter_title, simulated=simulated),
                   points, name, f"{PAGE}.scatter", titles=latency_title)
    picked = interactive.selected(points, event)
    if picked is None:
        st.caption("Drag a box or lasso over points (or click one) to list those cells below; double-click the "
                   "chart to clear. Zoom: the toolbar's magnifier, then drag.")
    else:
        st.markdown(f"**Selected cells: {picked.height}**")
        widgets.table(picked.drop("run_id", "cell_id"), latency_title, key=f"{PAGE}.selected")
    with st.expander("Pareto-optimal cells"):
        widgets.table(points.filter(points["on_front"]).drop("run_id", "cell_id", "on_front"), latency_title)

st.subheader(f"Goodput winners under the SLO: TTFT ≤ {slo.ttft_ms:g} ms and TPOT ≤ {slo.tpot_ms:g} ms")
st.selectbox("Concurrency", params[-1].options, key=f"{PAGE}.gconc")
gf = widgets.filters(v, gpus=[v["gpu"]], concurrency=[v["gconc"]])
doc = data.winners_doc(data.db_path(), data.stamp(), "goodput", gf, slo, False)
families = [x for x in dims["family"] if not v["fam"] or x in v["fam"]]
workloads = [x for x in dims["workload"] if not v["wl"] or x in v["wl"]]
gp_params = drill.params(doc)
drill.seed_and_keep(PAGE, gp_params)
if doc["cells"]:
    key = f"{PAGE}.goodput"
    title = f"goodput (req/s) · concurrency {v['gconc']}"
    charts.display(heatmap_spec.spec(doc, v["gpu"], families, workloads, title), key=key,
                   on_select=drill.click_handler(PAGE, key))
    rows = charts.winner_rows(doc)
    export.buttons(partial(charts.exported, "winner_heatmap", doc, v["gpu"], families, workloads, title, select=False,
                           simulated=doc["simulated"]),
                   rows.drop("text_color", "lines"), export.slug(PAGE, "goodput", v["gpu"], f"c{v['gconc']}"), key)
    drill.panel(PAGE, doc, gp_params, v["gconc"], "goodput", gf, slo, "Goodput (req/s)")


def _report() -> report.Report:
    return report.Report(
        title=f"spectune — trade-offs on {v['gpu']}", filters=widgets.described(v, params),
        charts=[(scatter_title, charts.tradeoff_chart(points, lat_label, legend_orient="right")),
                ("Goodput winners", charts.winner_heatmap(doc, v["gpu"], families, workloads, "goodput",
                                                          select=False))],
        tables=[("Pareto-optimal cells", points.filter(points["on_front"]).drop("run_id", "cell_id"))],
        provenance=data.runs(data.db_path(), data.stamp()), simulated=widgets.any_simulated(points))


st.divider()
if points.height and doc["cells"]:
    report.button(_report, name, PAGE)
widgets.finish(PAGE, [*params, *gp_params])
