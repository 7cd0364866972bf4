"""The Production page's section for acceptance by segment inside one server: logged requests (``python -m ingest
requests``) split by one request label, each segment's acceptance from its own requests with a 95 % interval,
against the benchmark band, over time, with the drift decision per segment. Layout only: the numbers come from
analysis.production.request_segments through dashboard.data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from analysis.labels import candidate
from analysis.production.request_segments import PREFERRED_KEYS, default_key
from dashboard import charts, data, export, md, production_chart, segment_chart, widgets
from dashboard.state import Param

PAGE = "production"


def by_param(keys: list[str]) -> Param:
    """The label to split by: tenant, else route, else workload, else the first label the requests carry."""
    ordered = [k for k in PREFERRED_KEYS if k in keys] + [k for k in keys if k not in PREFERRED_KEYS]
    return widgets.p_one("by", "Split requests by label", ordered, default_key(keys))


def _verdict(s: dict) -> None:
    rec, name = s.get("recommendation"), md.text(f"{s['target']} · {s['segment']}")
    if s["status"] == "winner_changed":
        st.error(f"**{name}** runs {md.text(candidate(s['method'], s['depth']))}; with this segment's acceptance "
                 f"**{md.text(candidate(rec['method'], rec['depth']))}** is now the pick "
                 f"({rec['gain_vs_deployed_pct']:+.1f} % vs running). Deploy: {md.text(rec['vllm_args'] or '')}",
                 icon=":material/notifications_active:")
    elif rec:
        st.success(f"**{name}** ({md.text(candidate(s['method'], s['depth']))}): no change — pick "
                   f"{md.text(candidate(rec['method'], rec['depth']))} ({'clear' if rec['clear'] else 'tie'}).")
    else:
        st.info(f"**{name}**: " + md.text(f"{s['status'].replace('_', ' ')} — {s.get('why', '')}"))


def render(v: dict[str, Any], win: int, window_label: Callable[[int], str]) -> None:
    by = v["by"]
    doc = data.request_segments_doc(data.db_path(), data.stamp(), by, float(win))
    fr = data.request_segment_frames(doc)
    st.subheader(md.text(f"Acceptance by {by} inside one server"))
    st.caption("From logged requests: each response's per-request spec-decode metrics (vLLM "
               "`--per-request-spec-decode-metrics`), imported with `spectune requests`, summed per value "
               "of the request label. Acceptance rate = accepted / drafted tokens (vLLM's definition); error bars: "
               "95 % bootstrap over the segment's requests (none below 5 requests). Grey bars: the benchmark's "
               "acceptance band for what the deployment runs.")
    for s in doc["segments"]:
        _verdict(s)
    seg = fr["segments"]
    if seg.height:
        name = export.slug(PAGE, "by", by, window_label(win))
        title = f"Acceptance by {by} · from requests"
        method = doc["segments"][0]["method"] or ""
        spec = production_chart.finished(segment_chart.by_segment(seg, method), "").to_dict(validate=False)
        st.vega_lite_chart(charts.titled_tooltips(spec), width="content", key=f"{PAGE}.byseg")
        export.buttons(lambda: production_chart.finished(segment_chart.by_segment(seg, method), title, export=True),
                       seg, name, f"{PAGE}.byseg")
        widgets.table(seg.select("target", "segment", "config", "requests", "acceptance_rate", "ci_low", "ci_high",
                                 "acceptance_length", "benchmark_acceptance", "gap_pct", "status", "recommended",
                                 "deploy"))
        wf = fr["windows"]
        if wf.height:
            ttitle = f"Acceptance by {by} over time · {window_label(win)} windows"
            st.markdown(f"**{md.text(ttitle)}**")
            st.vega_lite_chart(charts.titled_tooltips(production_chart.finished(
                segment_chart.over_time(wf), "").to_dict(validate=False)), width="content", key=f"{PAGE}.bysegt")
            export.buttons(lambda: production_chart.finished(segment_chart.over_time(wf), ttitle, export=True), wf,
                           export.slug(name, "windows"), f"{PAGE}.bysegt")
    for w in doc["warnings"]:
        st.caption(f"⚠ {md.text(w)}")
