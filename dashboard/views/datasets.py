"""Data: the runs behind every chart with their provenance (backend, engine, GPU, dates, row counts), the
store's table sizes, and the published reference table with links to its sources."""

from __future__ import annotations

import polars as pl
import streamlit as st

from dashboard import data, export, md, report, widgets

PAGE = "data"

pub_all = data.published_table()
params = [
    widgets.p_many("pfam", "Published: model family", sorted(set(pub_all["model_family"].drop_nulls()))),
    widgets.p_many("pmeth", "Published: method", sorted(set(pub_all["method"].drop_nulls()))),
    widgets.p_many("pgpu", "Published: GPU", sorted(set(pub_all["gpu"].drop_nulls()))),
]

st.title("Data")
v = widgets.setup(PAGE, params)
runs = data.runs(data.db_path(), data.stamp())
widgets.banner(widgets.any_simulated(runs))
st.subheader("Runs in the store")
st.caption("Every chart reads the latest successful row per cell across these runs. Backend `sim` = simulated "
           "(no GPU: “GPUs” empty). “GPUs per server” = GPUs per server of each GPU model (tensor parallelism, "
           "per family).")
cols = [c for c in ("run_id", "backend", "engine_version", "gpu_model", "gpu_count", "gpus_per_server", "host",
                    "started_at", "finished_at", "source", "cells", "cells_failed", "requests", "notes")
        if c in runs.columns]
widgets.table(runs.select(cols))
export.buttons(None, runs.select(cols), export.slug(PAGE, "runs"), f"{PAGE}.runs")
counts = data.table_counts(data.db_path(), data.stamp())
st.caption("Rows per table: " + ", ".join(f"{t} {n:,}" for t, n in counts.iter_rows()))
st.caption(f"Store: {md.text(data.db_path())}")

st.subheader("Published reference results")
st.caption("Measurements from blogs, papers and model cards (data/published_results.csv, sources in "
           "data/SOURCES.md). Turn on “Overlay published points” on the Explore page to compare.")
pub = pub_all
for key, col in (("pfam", "model_family"), ("pmeth", "method"), ("pgpu", "gpu")):
    if v[key]:
        pub = pub.filter(pl.col(col).is_in(v[key]))
widgets.table(pub.drop("line"),
              column_config={"source_url": st.column_config.LinkColumn("Source", display_text="open")})
export.buttons(None, pub, export.slug(PAGE, "published"), f"{PAGE}.published")


def _report() -> report.Report:
    return report.Report(title="spectune — data provenance", filters=widgets.described(v, params),
                         # what was measured first, where it was published last (a URL is 40 characters of a
                         # 160-character PDF line)
                         tables=[("Rows per table", counts), ("Published reference (filtered)", pub.drop("line").select(
                             [c for c in pub.columns if c != "line" and not c.startswith("source")]
                             + [c for c in pub.columns if c.startswith("source")]))],
                         provenance=runs, simulated=widgets.any_simulated(runs))


st.divider()
report.button(_report, export.slug(PAGE), PAGE)
widgets.finish(PAGE, params)
