"""GPUs: any two GPUs side by side — per-method ratio heatmaps, whether the winner changes with the GPU,
and output tok/s per GPU and per watt of board power."""

from __future__ import annotations

from functools import partial

import polars as pl
import streamlit as st

from dashboard import charts, data, export, report, widgets

PAGE = "gpus"

dims = data.dimension_values(data.db_path(), data.stamp())
gpus = dims["gpu"]
params = [
    widgets.p_one("a", "GPU A", gpus, gpus[0] if gpus else ""),
    widgets.p_one("b", "GPU B", gpus, gpus[-1] if gpus else ""),
    widgets.p_metric([m for m in widgets.METRICS if m != "goodput"]),
    widgets.p_one("conc", "Concurrency", dims["concurrency"]),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", dims["method"]),
    widgets.p_depth(dims["depth"]),
]

st.title("GPUs")
st.caption("Each method at its best depth on each GPU (what you would deploy there). Ratio = B / A in the "
           "metric's good direction: above 1, GPU B is better.")
v = widgets.setup(PAGE, params)
a, b = v["a"], v["b"]
slo = widgets.slo(v)
f = widgets.filters(v, gpus=[a, b])
label = widgets.metric_label(v["metric"])
families = [x for x in dims["family"] if not v["fam"] or x in v["fam"]]
workloads = [x for x in dims["workload"] if not v["wl"] or x in v["wl"]]
name = export.slug(PAGE, v["metric"], a, "vs", b, f"c{v['conc']}")
ratios = pl.DataFrame()
changes = pl.DataFrame()
eff = pl.DataFrame()
if a == b:
    st.info("Pick two different GPUs.")
else:
    ratios = data.gpu_ratios(data.db_path(), data.stamp(), f, a, b, v["metric"], slo)
    doc_a = data.winners_doc(data.db_path(), data.stamp(), v["metric"], widgets.filters(v, gpus=[a]), slo, False)
    doc_b = data.winners_doc(data.db_path(), data.stamp(), v["metric"], widgets.filters(v, gpus=[b]), slo, False)
    eff = data.gpu_efficiency(data.db_path(), data.stamp(), f)
    widgets.banner(doc_a["simulated"] or doc_b["simulated"])
    st.subheader(f"{label}: {b} / {a} per method")
    if ratios.height:
        charts.show("ratio_heatmap", ratios, a, b, families, workloads, key=f"{PAGE}.ratio")
        export.buttons(partial(charts.build, "ratio_heatmap", ratios, a, b, families, workloads), ratios, name,
                       f"{PAGE}.ratio")
    st.subheader("Does the winner change with the GPU?")
    changes = data.winner_changes(doc_a, doc_b).rename({"winner_a": f"winner on {a}", "winner_b": f"winner on {b}"})
    n_changed = changes.filter(pl.col("verdict") == "changes").height
    st.markdown(f"**{n_changed}** of {changes.height} cells change winner clearly; "
                f"{changes.filter(pl.col('verdict') == 'not clear').height} differ only within a tie.")
    st.dataframe(changes, hide_index=True)
    export.buttons(None, changes, name + "_winner-changes", f"{PAGE}.changes")
    st.subheader("Efficiency: tok/s per GPU and per watt (board power from data/gpu_specs.csv)")
    left, right = st.columns(2)
    with left:
        charts.show("efficiency", eff, "output_throughput_per_gpu", "output tok/s per GPU", key=f"{PAGE}.eff.gpu")
        export.buttons(partial(charts.build, "efficiency", eff, "output_throughput_per_gpu", "output tok/s per GPU"),
                       eff, name + "_per-gpu", f"{PAGE}.eff.gpu")
    with right:
        charts.show("efficiency", eff, "tok_s_per_watt", "output tok/s per watt", key=f"{PAGE}.eff.watt")
        export.buttons(partial(charts.build, "efficiency", eff, "tok_s_per_watt", "output tok/s per watt"),
                       eff, name + "_per-watt", f"{PAGE}.eff.watt")


def _report() -> report.Report:
    return report.Report(
        title=f"spectune — {a} vs {b}", filters=widgets.described(v, params),
        charts=[(f"{b} / {a}", charts.ratio_heatmap(ratios, a, b, families, workloads)),
                ("tok/s per watt", charts.efficiency_chart(eff, "tok_s_per_watt", "output tok/s per watt"))],
        tables=[("Winner by GPU", changes), ("Ratios", ratios)],
        provenance=data.runs(data.db_path(), data.stamp()), simulated=widgets.any_simulated(eff))


st.divider()
if ratios.height:
    report.button(_report, name, PAGE)
widgets.finish(PAGE, params)
