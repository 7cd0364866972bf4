"""Explore: any metric against depth per method with 95 % bands, faceted family × workload, and
acceptance by draft position; optionally the published reference points overlaid."""

from __future__ import annotations

from functools import partial

import polars as pl
import streamlit as st

from dashboard import charts, data, export, report, widgets

PAGE = "explore"

dims = data.dimension_values(data.db_path(), data.stamp())
params = [
    widgets.p_metric(),
    widgets.p_one("gpu", "GPU", dims["gpu"]),
    widgets.p_one("conc", "Concurrency", widgets.load_options(dims)),
    widgets.p_many("fam", "Model families", dims["family"]),
    widgets.p_many("wl", "Workloads", dims["workload"]),
    widgets.p_many("meth", "Methods", dims["method"]),
    widgets.p_depth(dims["depth"]),
    widgets.p_bool("pub", "Overlay published points"),
    widgets.p_one("pos", "Position view", ("acceptance", "conditional"),),
    *widgets.p_slo(),
]

st.title("Explore")
st.caption("Any metric against depth, per method, with 95 % bootstrap bands. `none` is the dashed baseline.")
v = widgets.setup(PAGE, params, sidebar=[p.key for p in params if p.key not in ("pos", "slo_ttft", "slo_tpot")])
if v["metric"] == "goodput":
    for p in params:
        if p.key.startswith("slo"):
            widgets.render(PAGE, p)
f = widgets.filters(v, gpus=[v["gpu"]])
slo = widgets.slo(v)
label = widgets.metric_label(v["metric"])
curves = data.by_depth(data.db_path(), data.stamp(), v["metric"], f, slo)
positions = data.by_position(data.db_path(), data.stamp(), f)
widgets.banner(widgets.any_simulated(curves))
overlay = None
if v["pub"]:
    published = data.published_overlay(v["metric"], tuple(sorted(set(curves["family"]))),
                                       tuple(sorted(set(curves["workload"]))), tuple(sorted(set(curves["method"]))))
    overlay, left_out, span = data.overlay_in_range(published, curves)
    if overlay.height:
        st.caption(f"◆ {overlay.height} published point(s) (black-outlined diamonds; any GPU, see the Data page "
                   "for sources). Published setups differ from these cells: read them as reference, not as a match.")
    if left_out.height and span is not None:
        named = "; ".join(f"{charts.cand(r['method'], r['depth'])} {r['workload']} {r['value']:,.4g}"
                          + (f" ({r['gpu']})" if r.get("gpu") else "") for r in left_out.head(6).to_dicts())
        more = f" and {left_out.height - 6} more" if left_out.height > 6 else ""
        st.caption(f"Not drawn: {left_out.height} published point(s) outside the measured range "
                   f"({span[0]:,.4g}–{span[1]:,.4g}), so they do not rescale every panel: {named}{more}.")
    if not published.height:
        st.info("No published points for this metric and selection (they exist for acceptance length, "
                "acceptance rate and total output throughput at a stated depth).")

name = export.slug(PAGE, v["metric"], v["gpu"], f"c{v['conc']}")
simulated = widgets.any_simulated(curves)
curves_title = f"{label} vs depth · {v['gpu']} · concurrency {v['conc']}"
if curves.height == 0:
    st.info("No cells match these filters.")
else:
    st.subheader(curves_title)
    charts.show("depth_curves", curves, label, overlay, key=f"{PAGE}.curves")
    export.buttons(partial(charts.exported, "depth_curves", curves, label, overlay, title=curves_title,
                           subtitle="95 % bootstrap bands; dashed = none (no speculation)", simulated=simulated),
                   curves if overlay is None else pl.concat([curves, overlay], how="diagonal_relaxed"), name,
                   f"{PAGE}.curves")
    st.subheader("Acceptance by draft position")
    st.radio("Show", ("acceptance", "conditional"), key=f"{PAGE}.pos", horizontal=True,
             format_func=lambda x: "cumulative r_i" if x == "acceptance" else "conditional p_i")
    pos_view = st.session_state.get(f"{PAGE}.pos", "acceptance")
    charts.show("positions_grid", positions, pos_view, key=f"{PAGE}.positions")
    pos_title = (f"{'Cumulative' if pos_view == 'acceptance' else 'Conditional'} acceptance by draft position · "
                 f"{v['gpu']} · concurrency {v['conc']}")
    export.buttons(partial(charts.exported, "positions_grid", positions, pos_view, title=pos_title,
                           simulated=simulated), positions, name + "_positions", f"{PAGE}.positions.dl")


def _report() -> report.Report:
    return report.Report(title=f"spectune — {label} vs depth", filters=widgets.described(v, params),
                         metric=v["metric"],
                         charts=[(curves_title, charts.depth_curves(curves, label, overlay, legend_orient="right"))],
                         tables=[("Cells", curves.drop("run_id", "cell_id"))],
                         provenance=data.runs(data.db_path(), data.stamp()),
                         simulated=simulated)


st.divider()
if curves.height:
    report.button(_report, name, PAGE)
widgets.finish(PAGE, params)
