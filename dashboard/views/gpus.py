"""GPUs: any two GPUs side by side — per-method ratio heatmaps, whether the winner changes with the GPU,
and output tok/s per GPU and per watt of board power."""

from __future__ import annotations

from functools import partial

import polars as pl
import streamlit as st

from dashboard import charts, data, export, md, report, widgets

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
# the GPUs' names head the columns; "best" is the point estimate, the pick and its verdict read as on the heatmap
winner_titles = {"winner_a": f"Best on {a}", "winner_b": f"Best on {b}",
                 "pick_a": f"Pick on {a}", "pick_b": f"Pick on {b}",
                 "cell_verdict_a": f"Verdict on {a}", "cell_verdict_b": f"Verdict on {b}",
                 "headline_a": f"Verdict · pick (p) on {a}", "headline_b": f"Verdict · pick (p) on {b}"}
eff = pl.DataFrame()
if a == b:
    st.info("Pick two different GPUs.")
else:
    ratios = data.gpu_ratios(data.db_path(), data.stamp(), f, a, b, v["metric"], slo)
    doc_a = data.winners_doc(data.db_path(), data.stamp(), v["metric"], widgets.filters(v, gpus=[a]), slo, False)
    doc_b = data.winners_doc(data.db_path(), data.stamp(), v["metric"], widgets.filters(v, gpus=[b]), slo, False)
    eff = data.gpu_efficiency(data.db_path(), data.stamp(), f)
    simulated = doc_a["simulated"] or doc_b["simulated"]
    widgets.banner(simulated)
    ratio_title = f"{label}: {b} / {a} per method · concurrency {v['conc']}"
    st.subheader(md.text(ratio_title))
    if ratios.height:
        servers = data.gpu_servers(ratios)
        st.caption("GPUs per server (tensor parallelism): " + md.text("; ".join(
            f"{r['family']} {r['gpus_a']} × {a} vs {r['gpus_b']} × {b}" for r in servers.iter_rows(named=True)))
            + ". A ratio compares whole servers; where the servers have different GPU counts, the ratio per GPU "
            "(for throughput and goodput) is the second line of each cell (×…/GPU) and matches the per-GPU bars below.")
        charts.show("ratio_heatmap", ratios, a, b, families, workloads, key=f"{PAGE}.ratio")
        export.buttons(partial(charts.exported, "ratio_heatmap", ratios, a, b, families, workloads, title=ratio_title,
                               subtitle="each method at its best depth on each GPU; above 1, GPU B is better; whole "
                               "server, and per GPU where stated",
                               simulated=simulated), ratios, name, f"{PAGE}.ratio")
    st.subheader("Does the answer change with the GPU?")
    changes = data.winner_changes(doc_a, doc_b)
    n_changed = changes.filter(pl.col("verdict") == "changes").height
    st.markdown(f"**{n_changed}** of {changes.height} cells have a different clear best on each GPU; "
                f"{changes.filter(pl.col('verdict') == 'not clear').height} differ only within a tie. Each GPU's "
                "verdict and pick (with its chance p of being best) read as on the Winners heatmap; "
                "*best* is the best point estimate.")
    shown = ["family", "model", "workload", "dataset", "concurrency", "headline_a", "headline_b", "winner_a",
             "winner_b", "verdict", "method_changes"]
    widgets.table(changes.select([c for c in shown if c in changes.columns]), winner_titles)
    export.buttons(None, changes, name + "_winner-changes", f"{PAGE}.changes", titles=winner_titles)
    st.subheader("Efficiency: tok/s per GPU and per watt (board power from data/gpu_specs.csv)")
    # one under the other: each is a full family × workload grid, too wide for half the page
    for col, axis, suffix in (("output_throughput_per_gpu", "output tok/s per GPU", "per-gpu"),
                              ("tok_s_per_watt", "output tok/s per watt", "per-watt")):
        eff_title = f"{axis[0].upper()}{axis[1:]} · {a} vs {b} · concurrency {v['conc']}"
        st.markdown(f"**{md.text(eff_title)}** (each panel has its own y scale)")
        charts.show("efficiency", eff, col, axis, key=f"{PAGE}.eff.{suffix}")
        export.buttons(partial(charts.exported, "efficiency", eff, col, axis, title=eff_title,
                               subtitle="each method at its best depth; lighter bar = " + sorted({a, b})[0]
                               + "; each panel has its own y scale",
                               simulated=simulated), eff, name + f"_{suffix}", f"{PAGE}.eff.{suffix}")


def _report() -> report.Report:
    return report.Report(
        title=f"spectune — {a} vs {b}", filters=widgets.described(v, params),
        charts=[(ratio_title, charts.ratio_heatmap(ratios, a, b, families, workloads)),
                (f"Output tok/s per watt · {a} vs {b} · concurrency {v['conc']}",
                 charts.efficiency_chart(eff, "tok_s_per_watt", "output tok/s per watt", legend_orient="right"))],
        tables=[("Winner by GPU", changes.rename(winner_titles, strict=False)), ("Ratios", ratios)],
        provenance=data.runs(data.db_path(), data.stamp()), simulated=widgets.any_simulated(eff))


st.divider()
if ratios.height:
    report.button(_report, name, PAGE)
widgets.finish(PAGE, params)
