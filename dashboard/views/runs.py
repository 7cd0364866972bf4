"""Runs & drift: every run with its provenance, the imported files, and a comparison of two runs.

Runs come from :func:`dashboard.data.runs`; the comparison from :func:`analysis.compare.compare_runs`
through a cached function here (keyed by the store stamp, like every query in dashboard/data.py). The
two runs and the metric are URL parameters (validated against the runs that exist). Changed winners
follow the rule stated on the page (see analysis/compare.py); "re-tune these shards" lists where to move.
"""

from __future__ import annotations

import json

import polars as pl
import streamlit as st

from analysis.compare import COMPARED, CompareOptions, compare_runs
from analysis.compare_markdown import to_markdown
from analysis.labels import candidate, title
from dashboard import data, export, widgets

PAGE = "runs"
RUN_COLUMNS = ("run_id", "backend", "started_at", "finished_at", "source", "host", "gpu_model", "engine_version",
               "cells", "cells_failed", "requests", "importer", "notes")
STATUS_ORDER = {"changed": 0, "unsettled": 1, "not_comparable": 2, "same": 3}


@st.cache_data(ttl=data.TTL_S, show_spinner="Comparing runs…")
def drift(path: str, st_: tuple, run_a: str, run_b: str, metric: str) -> dict:
    with data.StoreReader(path).connection() as con:
        return compare_runs(con, run_a, run_b, CompareOptions(metric=metric))


def _pair(side: dict) -> str:
    return side["method"] if side["method"] == "none" else candidate(side['method'], side['depth'])


def imports_table(runs: pl.DataFrame) -> pl.DataFrame:
    imported = runs.filter(pl.col("importer").fill_null("") != "")
    return imported.select(pl.col("source").alias("file"), pl.col("importer").alias("format"),
                           pl.col("started_at").alias("imported_at"),
                           pl.col("file_hash").str.slice(0, 12).alias("file_hash"), "cells", "requests", "run_id",
                           "notes")


def retune_table(report: dict) -> pl.DataFrame:
    return pl.DataFrame([{
        "shard": r["shard"], "from": _pair(r["from"]), "to": _pair(r["to"]), "gain_pct": r["gain_pct"],
        "speculative_config": json.dumps(r["speculative_config"]) if r["speculative_config"] else "none",
    } for r in report["retune"]], schema={"shard": pl.String, "from": pl.String, "to": pl.String,
                                          "gain_pct": pl.Float64, "speculative_config": pl.String})


def groups_table(report: dict) -> pl.DataFrame:
    rows = sorted(report["groups"], key=lambda g: STATUS_ORDER[g["status"]])
    return pl.DataFrame([{
        "gpu": g["gpu"], "family": g["family"], "workload": g["workload"], "concurrency": g["concurrency"],
        "winner_a": _pair(g["a"]) + ("" if g["a"]["clear"] else " (tie)"),
        "winner_b": _pair(g["b"]) + ("" if g["b"]["clear"] else " (tie)"), "status": g["status"],
        "gain_pct": g["gain_pct"]} for g in rows])


def cells_table(report: dict, metric: str, everything: bool) -> pl.DataFrame:
    rows = []
    for c in report["cells"]:
        v = c["metrics"][metric]
        if everything or v["significant"]:
            rows.append({"gpu": c["gpu"], "family": c["family"], "workload": c["workload"],
                         "concurrency": c["concurrency"], "candidate": _pair(c), "a": v["a"], "b": v["b"],
                         "change_pct": v["delta_pct"], "ci_low": v["ci_low"], "ci_high": v["ci_high"],
                         "significant": v["significant"]})
    return pl.DataFrame(rows)


st.title("Runs & drift")
runs = data.runs(data.db_path(), data.stamp())
widgets.banner(widgets.any_simulated(runs))

st.subheader("Runs")
st.caption("Every runner invocation and every imported file, newest first, with where it came from.")
cols = [c for c in RUN_COLUMNS if c in runs.columns]
widgets.table(runs.select(cols))
export.buttons(None, runs.select(cols), export.slug(PAGE, "runs"), f"{PAGE}.runs")

st.subheader("Imported files")
imports = imports_table(runs)
if imports.height:
    st.caption("Files brought in with `spectune results` (backend `import`, or the original backend for "
               "spectune exports). Importing the same file again adds nothing.")
    widgets.table(imports)
else:
    st.info("No imported files yet: `spectune results FILE...` brings in vLLM bench, Spec-Bench, "
            "SGLang, spectune exports and published tables.")

st.subheader("Compare two runs")
with_results = runs.filter(pl.col("cells") - pl.col("cells_failed") > 0)["run_id"].to_list()
if len(with_results) < 2:
    st.info("Two runs with results are needed to compare.")
    st.stop()
params = [
    widgets.p_one("run_a", "Run A (before)", with_results, default=with_results[1]),
    widgets.p_one("run_b", "Run B (after)", with_results, default=with_results[0]),
    widgets.p_metric([m for m in widgets.METRICS if widgets.METRICS[m].bootstrapped]),
    widgets.p_one("cellm", "Per-cell change in", COMPARED, default="acceptance_rate", format_func=title),
    widgets.p_bool("allcells", "Every common cell (not only significant changes)"),
]
v = widgets.setup(PAGE, params, sidebar=[])  # drawn in the page body below, not in the sidebar
for p, col in zip(params[:3], st.columns(3), strict=True):
    widgets.render(PAGE, p, col)
if v["run_a"] == v["run_b"]:
    st.warning("Choose two different runs.")
    widgets.finish(PAGE, params)
    st.stop()
report = drift(data.db_path(), data.stamp(), v["run_a"], v["run_b"], v["metric"])
c1, c2, c3, c4 = st.columns(4)
c1.metric("Cells compared", report["cells_compared"])
c2.metric("Winners changed", report["winners_changed"])
c3.metric("Unsettled (tie)", report["winners_unsettled"])
c4.metric("Throughput changed", report["cells_changed"]["output_throughput"])
st.caption(f"Rule: {report['rule']}. Not comparable (a run lacks the other's winner): "
           f"{report['winners_not_comparable']}. Intervals: 95 % from bootstrap replicates (B − A).")

retune = retune_table(report)
if retune.height:
    st.markdown("**Re-tune these shards**")
    widgets.table(retune)
    export.buttons(None, retune, export.slug(PAGE, "retune", v["run_b"]), f"{PAGE}.retune")
else:
    st.success("No winner changed between these runs: nothing to re-tune.")
if report["groups"]:
    st.markdown("**Winner per group in each run**")
    widgets.table(groups_table(report))

widgets.render(PAGE, params[3], st.container())
widgets.render(PAGE, params[4], st.container())
cells = cells_table(report, v["cellm"], v["allcells"])
cellm = title(v["cellm"])
st.markdown(f"**Change in {cellm[:1].lower() + cellm[1:]} per cell** (B − A)")
sides = {"a": f"{title(v['cellm'])} in A", "b": f"{title(v['cellm'])} in B"}  # the metric the user picked
if cells.height:
    widgets.table(cells, sides)
    export.buttons(None, cells, export.slug(PAGE, "cells", v["cellm"]), f"{PAGE}.cells", titles=sides)
else:
    st.caption("No cell changed significantly." if not v["allcells"] else "No cells in common.")
with st.container(horizontal=True, gap="small"):
    st.download_button("Drift report (markdown)", to_markdown(report), file_name="drift.md", mime="text/markdown",
                       on_click="ignore", key=f"dl.{PAGE}.md")
    st.download_button("Drift report (JSON)", json.dumps(report), file_name="drift.json",
                       mime="application/json", on_click="ignore", key=f"dl.{PAGE}.json")
widgets.finish(PAGE, params)
