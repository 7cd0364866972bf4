"""The drill-down panel shared by every heatmap: one cell's full detail (every method × depth with its
interval, acceptance by draft position, per-request latency distribution), with its downloads.

A heatmap click (Altair point selection, ``on_select``) and the fallback selectbox both write the same
widget key, ``<page>.cell``, whose value is ``GPU|family|workload|model|dataset`` (validated against the cells
shown), each part with ``%`` and ``|`` percent-encoded (:func:`cell_id`): an imported workload may contain ``|``, and
a value (or link) whose parts hold neither reads exactly as before.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import partial

import streamlit as st

from analysis import vocabulary
from analysis.cellvalues import Slo
from analysis.drilldown import Group, suspects
from analysis.frames import Filters
from analysis.labels import group_label, load
from analysis.schedule import schedule_table
from dashboard import charts, data, export, interactive, md, state, widgets
from dashboard.state import Param

LATENCY_COLS = ("e2e_ms", "ttft_ms", "tpot_ms")
_ENCODED = re.compile("%(25|7C)", re.IGNORECASE)


def _part(text: str) -> str:
    return text.replace("%", "%25").replace("|", "%7C")


def cell_id(gpu: str, family: str, workload: str, model: str | None = "", dataset: str | None = "") -> str:
    """``GPU|family|workload|model|dataset``: one group of one model (the dataset empty when none is given); a
    ``|`` or ``%`` inside a part is written ``%7C`` / ``%25``, so the value always splits back into five parts."""
    return "|".join(_part(str(x or "")) for x in (gpu, family, workload, model, dataset))


def parts(value: str) -> tuple[str, str, str, str, str]:
    """The five parts of a :func:`cell_id` value, decoded (missing trailing parts are empty)."""
    got = [_ENCODED.sub(lambda m: "%" if m.group(1) == "25" else "|", x) for x in value.split("|")]
    gpu, family, workload, model, dataset = [*got, "", "", "", ""][:5]
    return gpu, family, workload, model, dataset


def of(c: dict) -> str:
    """The drill-down value of a winners group."""
    return cell_id(c["gpu"], c["family"], c["workload"], c.get("model"), c.get("dataset"))


def cell_label(value: str) -> str:
    if not value:
        return "— pick a cell —"
    gpu, family, workload, model, dataset = parts(value)
    return group_label({"gpu": gpu, "family": family, "workload": workload, "model": model, "dataset": dataset},
                       with_load=False)


def params(doc: dict) -> list[Param]:
    cells = ("", *dict.fromkeys(of(c) for c in doc["cells"]))
    return [Param("cell", "one", "", cells, label="Cell", format_func=cell_label),
            Param("dlat", "one", "e2e_ms", LATENCY_COLS, label="Latency",
                  format_func=lambda c: c.replace("_ms", "").upper())]


def on_click(page: str, chart_key: str) -> None:
    """Selection callback: copy the clicked cell into the drill-down selectbox's state."""
    ev = st.session_state.get(chart_key)
    picked = (ev or {}).get("selection", {}).get(charts.SELECTION) or []
    if picked:
        p = picked[0]
        st.session_state[f"{page}.cell"] = cell_id(p.get("gpu", ""), p.get("family", ""), p.get("workload", ""),
                                                   p.get("model"), p.get("dataset"))


def click_handler(page: str, chart_key: str) -> partial:
    return partial(on_click, page, chart_key)


def panel(page: str, doc: dict, ps: list[Param], concurrency: int | None, metric: str, f: Filters, slo: Slo,
          metric_label: str) -> str | None:
    """Draw the picker and, when a cell is picked, its detail. Returns the picked cell id (or None)."""
    st.subheader("Drill-down")
    cols = st.columns([3, 2])
    with cols[0]:
        st.selectbox("Cell (or click one in a heatmap)", ps[0].options, key=f"{page}.cell",
                     format_func=cell_label)
    with cols[1]:
        st.radio("Latency distribution", ps[1].options, key=f"{page}.dlat", format_func=ps[1].format_func,
                 horizontal=True)
    picked = st.session_state.get(f"{page}.cell") or ""
    if not picked or picked not in ps[0].options:
        st.caption("Click a heatmap cell, or pick one above, to see every method × depth behind its winner.")
        return None
    gpu, family, workload, model, dataset = parts(picked)
    group = Group(gpu, family, workload, concurrency, model or None, dataset or None)
    ranked, pos, samples = data.drill(data.db_path(), data.stamp(), group, metric, f, slo)
    verdict = next((c for c in doc["cells"] if of(c) == picked), None)
    shown = cell_label(picked)
    if verdict:
        w = verdict["winner"]
        text = verdict.get("tie_text") or (
            f"clear winner {charts.cand(w['method'], w['depth'])}" if verdict["clear"] else
            "tie between " + ", ".join(charts.cand(t["method"], t["depth"]) for t in verdict["tied"]))
        origin = verdict.get("origin", "measured")
        if origin != "measured":
            text += (" (predicted: a cost-model value, not measured)" if origin == "predicted"
                     else " (confirmed: measured to check a prediction)")
        words = vocabulary.cell_words(verdict)  # the same words as the heatmap cell and every other page
        st.markdown(f"**{md.text(f'{shown} · {load(concurrency)}')}** — **{md.text(words.headline)}**")
        st.markdown(md.text(f"Why this pick: {words.why}; best point estimate {words.best} "
                            f"({vocabulary.p_text(words.best_p)}); pick vs none: {words.gain or '–'}. "
                            f"Chance of being best: {words.chances or '–'}."))
        st.caption(f"Verdict in words: {md.text(text)}")
        if (verdict.get("provenance") or {}).get("summary"):  # analysis says where the winner's numbers come from
            st.caption(f"Where the winner's numbers come from: {md.text(verdict['provenance']['summary'])}")
        deploy = (verdict.get("pick") or {}).get("deploy") or verdict.get("deploy")  # deploy the sensible pick
        if deploy:
            st.code(deploy["command"], language="bash")
            if deploy["note"]:
                st.warning(md.text(deploy["note"]))
        if verdict.get("predicted"):
            st.caption("Predicted (not measured) among the top candidates: "
                       + md.text(", ".join(charts.cand(p["method"], p["depth"]) for p in verdict["predicted"])))
    for label, reason in suspects(ranked):
        st.warning(md.text(f"Acceptance of {label} is suspect: {reason}"))
    name = export.slug(page, "detail", metric, gpu, model.rsplit("/", 1)[-1] or family, workload, dataset,
                       f"c{concurrency}")
    where = f"{shown} · {load(concurrency)}"  # an exported chart says which cell
    sim = bool(doc.get("simulated"))
    charts.show("candidates", ranked, metric_label, key=f"{page}.drill.cand")
    export.buttons(partial(charts.exported, "candidates", ranked, metric_label, simulated=sim,
                           title=f"Every candidate with its 95 % interval · {where}"), ranked, name,
                   f"{page}.drill.cand")
    left, right = st.columns(2)
    with left:
        args = (pos, "acceptance", "Cumulative acceptance r_i by position")
        charts.show("positions", *args, key=f"{page}.drill.pos")
        export.buttons(partial(charts.exported, "positions", *args, title=f"{args[2]} · {where}", simulated=sim),
                       pos, name + "_positions", f"{page}.drill.pos")
    with right:
        args = (pos, "conditional", "Conditional acceptance p_i by position")
        charts.show("positions", *args, key=f"{page}.drill.cond")
        export.buttons(partial(charts.exported, "positions", *args, title=f"{args[2]} · {where}", simulated=sim),
                       None, name + "_conditional", f"{page}.drill.cond")
    lat = st.session_state.get(f"{page}.dlat") or "e2e_ms"
    # interactive (Plotly): zoom into a long tail; the exported figure is the Altair one
    interactive.show(interactive.latency_figure(samples, lat, sim), key=f"{page}.drill.lat")
    lat_title = f"Request {lat.replace('_ms', '').upper()} distribution · {where}"
    export.buttons(partial(charts.exported, "latency", samples, lat, title=lat_title, simulated=sim), samples,
                   name + f"_{lat}", f"{page}.drill.lat")
    with st.expander("Every candidate (table)"):
        widgets.table(ranked.drop("run_id", "cell_id"))
    _schedules(page, metric, f, gpu, family, workload)
    return picked


def _schedules(page: str, metric: str, f: Filters, gpu: str, family: str, workload: str) -> None:
    """The depth schedule per batch size of each method of this GPU × family × workload (analysis.schedule)."""
    if metric == "goodput":
        st.caption("Depth schedules are derived for metrics with stored replicates (not goodput).")
        return
    doc = data.schedules_doc(data.db_path(), data.stamp(), metric,
                             replace(f, gpus=(gpu,), families=(family,), workloads=(workload,), concurrency=()))
    rows = schedule_table(doc)
    st.markdown("**Depth schedule per batch size** (`num_speculative_tokens_per_batch_size`, across every load)")
    if not rows.height:
        st.caption("No method has cells at two or more loads and depths here.")
        return
    widgets.table(rows.drop("command"), key=f"{page}.drill.sched")
    best = doc["schedules"][0] if doc["schedules"] else None
    for s in doc["schedules"]:
        if s["recommended"] and (best is None or not best["recommended"]
                                 or s["gain_vs_static_pct"] > best["gain_vs_static_pct"]):
            best = s
    if best and best["recommended"]:
        st.code(best["deploy"]["command"], language="bash")


def seed_and_keep(page: str, ps: list[Param]) -> list[str]:
    """Seed the drill-down widgets from the URL; a cell that is no longer shown is reset quietly."""
    key = f"{page}.cell"
    linked = st.query_params.get("cell")
    if key not in st.session_state and linked and linked.count("|") == 2:
        # a link from before groups were per model (GPU|family|workload) opens the one model's group it names
        legacy = [o for o in ps[0].options if o.startswith(linked + "|")]
        if len(legacy) == 1:
            st.session_state[key] = legacy[0]
    problems = state.seed(page, ps)
    if st.session_state.get(key) not in ps[0].options:
        st.session_state[key] = ""
    return problems
