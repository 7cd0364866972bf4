"""Load: speedup over ``none`` against concurrency per method — where speculation stops paying."""

from __future__ import annotations

from functools import partial

import streamlit as st

from dashboard import charts, data, export, report, widgets

PAGE = "load"

dims = data.dimension_values(data.db_path(), data.stamp())
params = [
    widgets.p_metric([m for m in widgets.METRICS if m not in ("acceptance_rate", "acceptance_length")]),
    widgets.p_one("gpu", "GPU", dims["gpu"]),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", [m for m in dims["method"] if m != "none"]),
    widgets.p_depth(dims["depth"]),
    widgets.p_bool("alldepths", "Every depth (not only each method's best)"),
    *widgets.p_slo(),
]

st.title("Load")
st.caption("Speedup over `none` at the same GPU, family, workload and concurrency (> 1 = speculation pays), "
           "with 95 % bootstrap bands. Below the dotted line at 1, speculation costs more than it gives. "
           "A method's *best* depth is its best point estimate at that load, not a pick: the pick per load, "
           "with its verdict and chance of being best, is on the Winners page.")
v = widgets.setup(PAGE, params, sidebar=[p.key for p in params if not p.key.startswith("slo")])
if v["metric"] == "goodput":
    for p in params:
        if p.key.startswith("slo"):
            widgets.render(PAGE, p)
f = widgets.filters(v, gpus=[v["gpu"]])
slo = widgets.slo(v)
s = data.speedups(data.db_path(), data.stamp(), f, v["metric"], not v["alldepths"], slo)
widgets.banner(widgets.any_simulated(s))
label = widgets.metric_label(v["metric"])
name = export.slug(PAGE, v["metric"], v["gpu"])
speedup_title = f"Speedup over none in {label} vs concurrency · {v['gpu']}"
speedup_sub = ("each method at its best depth per load (the strip below names it)" if not v["alldepths"]
               else "every depth") + \
    "; 95 % bootstrap bands; below the dotted line at 1, speculation costs"
if s.height == 0:
    st.info("No cells (with a `none` baseline) match these filters.")
else:
    best_only = not v["alldepths"]
    lines = data.speedup_lines(s, best_only)
    charts.show("speedup", lines, best_only, key=f"{PAGE}.speedup")
    export.buttons(partial(charts.exported, "speedup", lines, best_only, title=speedup_title, subtitle=speedup_sub,
                           simulated=widgets.any_simulated(s)), s, name, f"{PAGE}.speedup")
    st.subheader("Where speculation stops paying")
    be = data.break_even(s)
    st.caption("The lowest measured concurrency at which the speedup is no longer above 1; “None”: speculation "
               "still pays at every measured load (the column stays numeric, so it sorts by concurrency).")
    widgets.table(be)
    export.buttons(None, be, name + "_break-even", f"{PAGE}.breakeven")


def _report() -> report.Report:
    return report.Report(title=f"spectune — speedup vs load on {v['gpu']}", filters=widgets.described(v, params),
                         metric=v["metric"],
                         charts=[(speedup_title, charts.speedup_chart(data.speedup_lines(s, not v["alldepths"]),
                                                                     not v["alldepths"], legend_orient="right"))],
                         tables=[("Break-even", data.break_even(s))],
                         provenance=data.runs(data.db_path(), data.stamp()), simulated=widgets.any_simulated(s))


st.divider()
if s.height:
    report.button(_report, name, PAGE)
widgets.finish(PAGE, params)
