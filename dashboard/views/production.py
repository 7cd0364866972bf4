"""Production: acceptance by traffic segment over time, collected by ``spectune watch``, against the
benchmark's expectation for what the segment runs; restarts and config changes annotated; the current
recommendation per segment (re-scored with its production acceptance); an A/B readout when two targets
serve the segment; acceptance by a request label (tenant, route, workload) inside one server from an imported
request log (dashboard/segment_view.py)."""

from __future__ import annotations

from functools import partial

import streamlit as st

from analysis.labels import candidate
from dashboard import charts, data, export, md, production_chart, segment_view, widgets
from dashboard.state import Param

PAGE = "production"
WINDOWS = (60, 300, 900, 3600, 21_600, 86_400)
AB_BLOCKS = (5, 10, 60, 300)
AB_METRICS = ("p99_tpot_ms", "p99_ttft_ms", "p99_e2e_ms", "acceptance_rate", "output_throughput_per_gpu")


def _window_label(s: int) -> str:
    return f"{s // 60} min" if s < 3600 else f"{s // 3600} h"


def _config_label(method: str, depth: int) -> str:
    return "no speculative decoding" if method == "none" else candidate(method, depth)


def _deploy(vllm_args: str) -> str:
    # the baseline has no flag to paste: say what to drop instead of printing an empty command
    if not vllm_args:
        return "`vllm serve` without `--speculative-config`"
    return f"`{vllm_args}`" if "`" not in vllm_args else md.text(vllm_args)  # a code span cannot hold a backtick


st.title("Production")
segments = data.production_segments(data.db_path(), data.stamp())
label_keys = data.request_label_keys(data.db_path(), data.stamp())  # logged requests: segments inside one server
if not segments and not label_keys:
    st.info("No production samples yet. Collect them with `spectune watch TARGETS.toml` "
            "(vLLM /metrics URLs or a Prometheus server; see docs/watch.md), or import a gateway's request log "
            "with `spectune requests FILE --target NAME` for acceptance by tenant, route or workload "
            "inside one server.")
    st.stop()

params = [
    *([widgets.p_one("seg", "Segment", segments, segments[0])] if segments else []),
    Param("win", "one", 3600, WINDOWS, label="Window", format_func=_window_label),
    *([widgets.p_bool("pos", "Per-position rates"),
       Param("abm", "one", AB_METRICS[0], AB_METRICS, label="A/B metric"),
       Param("abblock", "one", 60, AB_BLOCKS, label="A/B pairing block", format_func=lambda s: f"{s} s")]
      if segments else []),
    *([segment_view.by_param(label_keys)] if label_keys else []),
]
v = widgets.setup(PAGE, params)
if not segments:  # only logged requests: acceptance by segment inside one server, nothing from the watch
    segment_view.render(v, int(v["win"]), _window_label)
    widgets.finish(PAGE, params)
    st.stop()
seg, win = v["seg"], int(v["win"])
doc = data.production_doc(data.db_path(), data.stamp(), seg, float(win))
fr = data.production_frames(doc)
recs = fr["recommendations"]
simulated = any(bool(s.get("benchmark") and s["benchmark"].get("simulated")) for s in doc["segments"])
if simulated:
    st.warning("The benchmark expectation for this segment comes from **simulated** cells (backend `sim`); "
               "production acceptance is measured by your servers.", icon=":material/science:")
st.caption("Acceptance rate = accepted / drafted tokens per window, from the servers' own counter deltas "
           "(vLLM's definition); error bars: 95 % interval (bootstrap over scrape intervals, never narrower than "
           "a Wilson interval over the drafts). A hollow point has too few tokens to tell: no interval. Grey band: "
           "the benchmark's acceptance for the same family, method, depth and workload. Red rules: restarts; "
           "purple: config changes. All times UTC.")
if doc.get("period"):
    st.caption(f"Period: {production_chart.utc_text(doc['period']['start'])} → "
               f"{production_chart.utc_text(doc['period']['end'])}")

st.subheader("Current recommendation")
for s in doc["segments"]:
    rec = s.get("recommendation")
    if s["status"] == "winner_changed":
        how = "is now the clear pick" if rec["clear"] else "leads (a tie among the leaders) and the running config " \
            "is clearly beaten"
        st.error(f"**{md.text(s['segment'])}** runs {candidate(s['method'], s['depth'])}; with its production "
                 "acceptance "
                 f"**{_config_label(rec['method'], rec['depth'])}** {how} "
                 f"({rec['gain_vs_deployed_pct']:+.1f} % vs running). Deploy: {_deploy(rec['vllm_args'])}",
                 icon=":material/notifications_active:")
    elif s["status"] == "acceptance_outside_band" and rec:
        side = "below" if (s.get("gap_pct") or 0) < 0 else "above"
        st.warning(f"**{md.text(s['segment'])}** ({candidate(s['method'], s['depth'])}): production acceptance "
                   f"is **outside the benchmark band** ({side}, {s['gap_pct']:+.1f} %): the benchmark no longer "
                   "describes this traffic — re-measure on it. The pick still holds for now: "
                   f"{_config_label(rec['method'], rec['depth'])} ({'clear' if rec['clear'] else 'tie'}).",
                   icon=":material/warning:")
    elif rec:
        st.success(f"**{md.text(s['segment'])}** ({candidate(s['method'], s['depth'])}): no change — pick "
                   f"{_config_label(rec['method'], rec['depth'])} ({'clear' if rec['clear'] else 'tie'}).")
    else:
        st.info(f"**{md.text(s['segment'])}**: " + md.text(f"{s['status'].replace('_', ' ')} — {s.get('why', '')}"))
widgets.table(recs)
name = export.slug(PAGE, seg, _window_label(win))
export.buttons(None, recs, name + "_recommendations", f"{PAGE}.recs")

for s in doc["segments"]:
    config = candidate(s['method'], s['depth'])
    wf = fr["windows"].filter(fr["windows"]["config"] == config)
    notes = fr["annotations"]
    title = f"Acceptance · {seg} · {config} · {_window_label(win)} windows"
    st.subheader(md.text(title))
    chart = partial(production_chart.acceptance_over_time, wf, notes, s["method"] or "")
    st.vega_lite_chart(charts.titled_tooltips(production_chart.finished(chart(), "").to_dict(validate=False)),
                       width="content", key=f"{PAGE}.acc.{config}")
    export.buttons(lambda chart=chart, title=title: production_chart.finished(chart(), title, export=True), wf,
                   export.slug(name, config), f"{PAGE}.acc.{config}")
    if v["pos"]:
        pf = fr["positions"].filter(fr["positions"]["config"] == config)
        ptitle = f"Per-position acceptance · {seg} · {config}"
        st.markdown(f"**{md.text(ptitle)}**")
        st.vega_lite_chart(charts.titled_tooltips(production_chart.finished(
            production_chart.positions_over_time(pf), "").to_dict(validate=False)), width="content",
            key=f"{PAGE}.pos.{config}")
        export.buttons(lambda pf=pf, ptitle=ptitle: production_chart.finished(
            production_chart.positions_over_time(pf), ptitle, export=True), pf, export.slug(name, config, "positions"),
            f"{PAGE}.pos.{config}")
if fr["annotations"].height:
    st.markdown("**Restarts and config changes**")
    widgets.table(fr["annotations"])

ab = data.production_ab(data.db_path(), data.stamp(), seg, v["abm"], float(v["abblock"]))
if ab is not None:
    st.subheader(md.text(f"A/B · {ab['a']['target']} vs {ab['b']['target']}"))
    verdict = ab["verdict"]
    if verdict == "winner":
        st.markdown(f"**Clear: {md.text(ab['winner'])}** is better by {ab['gain_pct']:.1f} % on {ab['metric']} "
                    f"(difference 95 %: {ab['difference_ci']}; {ab['blocks']} paired blocks of {ab['block_s']:g} s).")
    elif verdict == "tie":
        st.markdown(f"**Tie** on {ab['metric']}: the difference's 95 % interval {ab['difference_ci']} includes zero "
                    f"or lies within {ab['margin_pct']:g} %.")
    else:
        st.markdown(f"**Too early to tell**: {md.text(ab.get('why'))}")
    arms = data.ab_frame(ab)
    if arms.height:
        abt = f"A/B · {ab['metric']} · {seg}"
        st.vega_lite_chart(charts.titled_tooltips(production_chart.finished(
            production_chart.ab_chart(arms, ab["metric"]), "").to_dict(validate=False)), width="content",
            key=f"{PAGE}.ab")
        export.buttons(lambda: production_chart.finished(production_chart.ab_chart(arms, ab["metric"]), abt,
                                                         export=True), arms, export.slug(name, "ab"), f"{PAGE}.ab")
for w in doc["warnings"]:
    st.caption(f"⚠ {md.text(w)}")
if label_keys:
    segment_view.render(v, win, _window_label)
widgets.finish(PAGE, params)
