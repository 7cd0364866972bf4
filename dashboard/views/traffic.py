"""Your traffic: upload a trace, see which (method, depth) wins per shard, the tax of today's default, and the
``--speculative-config`` to deploy; saved traces; compare two traces.

UI only: reading and storing go through ingest (ingest.traces.assigned.read_assigned, ingest.trace_store), every
number comes from analysis.rescore*. Uploads are capped (:func:`max_upload_mb`), written to a private temp
folder under a fixed name (the uploaded file name is only ever a display label) and removed right after
reading. Bad input is one error line, and nothing is stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import altair as alt
import polars as pl
import streamlit as st

from analysis.rescore import compare as rescore_compare
from analysis.rescore import summary as rescore_summary
from analysis.rescore import workload as rescore_workload
from analysis.rescore.config import NEEDS_DRAFT_MODEL, parse_choice, parse_draft_models
from analysis.rescore.core import RescoreOptions, rescore
from analysis.rescore.shard import DESCRIPTION as SHARD_DESCRIPTION
from analysis.rescore.shard import SHARD_BY
from analysis.rescore.stored import list_traces, load_trace
from analysis.rescore.trace import bucketize
from dashboard import charts, data, export, md, report, state, theme, widgets
from ingest import open_store
from ingest.errors import InputError, UsageError
from ingest.paths import DATA_DIR
from ingest.settings import load as load_settings
from ingest.tempfiles import make_temp_dir
from ingest.trace_store import peek_columns, store_trace
from ingest.traces import DEFAULT_LIMITS, FORMAT_CHOICES, Limits, TraceFrame, TraceMapping
from ingest.traces.assigned import read_assigned

PAGE = "traffic"


def max_upload_mb() -> int:
    """The page's upload cap in MB. The server-wide cap is .streamlit/config.toml's maxUploadSize (200 MB); the
    page enforces its own, the ``max_upload_mb`` setting (ingest.settings), which an operator (or a test) may
    lower, never raise above 200."""
    return min(200, load_settings().max_upload_mb)

SUFFIXES = (".csv", ".jsonl", ".json", ".parquet", ".csv.gz", ".jsonl.gz", ".json.gz")
AS_ASSIGNED = "as assigned"
# Bundled synthetic traces in the public formats' shapes (data/samples/traces/make_samples.py): a first look
# for someone with no trace at hand. Stored like an upload, so they are listed and compared like one.
SAMPLES_DIR = DATA_DIR / "samples" / "traces"
SAMPLES = {"Azure code (synthetic sample)": "azure_code.csv", "Azure conversation (synthetic sample)": "azure_conv.csv",
           "BurstGPT (synthetic sample)": "burstgpt.csv", "Mooncake (synthetic sample)": "mooncake.jsonl"}
FIELDS = ("input_tokens", "output_tokens", "timestamp", "workload", "shard", "prompt", "drafted_tokens",
          "accepted_tokens")


@st.cache_data(ttl=600, show_spinner=False)
def _stored(path: str, st_: tuple) -> pl.DataFrame:
    with data.reader().connection() as con:
        return list_traces(con)


@st.cache_data(ttl=600, max_entries=8, show_spinner="Re-scoring the trace…")
def _rescored(path: str, st_: tuple, trace_id: str, opts: RescoreOptions, workload: str | None = None
              ) -> tuple[dict, dict]:
    with data.reader().connection() as con:
        frame, meta = load_trace(con, trace_id)
        frame, source = rescore_workload.assign_stored(frame, meta, workload)
        meta = {**meta, "workload_source": source.as_dict()}
        b = bucketize(frame, opts.shard_by)
        doc = rescore(con, b, opts, meta)
    summary = {"input": rescore_summary.length_histogram(frame, "input_tokens"),
               "output": rescore_summary.length_histogram(frame, "output_tokens"),
               "rate": rescore_summary.arrival_rate(b)}
    return doc, summary


def _safe_name(name: str) -> str:
    return re.sub(r"[^\w .()\-]", "_", name)[:120] or "upload"


def _suffix(name: str) -> str:
    low = name.lower()
    return next((s for s in sorted(SUFFIXES, key=len, reverse=True) if low.endswith(s)), ".csv")


def _read_and_store(path: Path, fmt: str, mapping: TraceMapping | None, name: str,
                    limits: Limits, source_path: str) -> tuple[TraceFrame, str, bool]:
    """Read, validate and classify a trace file (format detected by the reader when ``auto``), then store it.
    The workload is chosen when re-scoring (the Workload box), not here: one stored trace, any assignment."""
    tf, assignment = read_assigned(path, fmt, None, mapping, name, limits)
    with open_store.session(data.db_path()) as con:
        trace_id, new = store_trace(con, tf, assignment=assignment, source_path=source_path)
    return tf, trace_id, new


@contextlib.contextmanager
def _spooled(up, progress: Callable[[float], None] | None = None) -> Iterator[Path]:
    """The upload streamed (4 MiB at a time) into a private temp file under a fixed name, at most
    :func:`max_upload_mb`; removed on every path out. The folder is named for this process, so if the
    server is killed mid-upload the next start removes it (ingest.tempfiles)."""
    tmp = make_temp_dir("upload")
    try:
        path = tmp / ("upload" + _suffix(up.name))
        cap_mb = max_upload_mb()
        cap = cap_mb * 1024 * 1024
        up.seek(0)
        with path.open("wb") as fh:
            while block := up.read(1 << 22):
                if fh.tell() + len(block) > cap:
                    raise InputError(Path(_safe_name(up.name)), 0, f"upload is over the {cap_mb} MB limit "
                                     "(the page's cap: $SPECTUNE_MAX_UPLOAD_MB, at most the server's "
                                     "maxUploadSize in .streamlit/config.toml)")
                fh.write(block)
                if progress is not None:
                    progress(fh.tell() / max(up.size, 1))
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # uploaded bytes never outlive the request


def _ingest(up, fmt: str, mapping: TraceMapping | None) -> tuple[str, bool]:
    """Upload → temp file (fixed name) → read, validate, classify → store. Returns (trace_id, new)."""
    bar = st.progress(0.0, text="Receiving the upload…")
    with _spooled(up, lambda f: bar.progress(min(0.3, 0.3 * f), text="Receiving the upload…")) as path:
        bar.progress(0.35, text="Reading and validating every request…")
        # An upload may inflate (.gz) to at most 10× the upload cap: a zip bomb stops early, not at 4 GiB.
        limits = dataclasses.replace(DEFAULT_LIMITS, max_decompressed_bytes=10 * max_upload_mb() * 1024 * 1024)
        tf, trace_id, new = _read_and_store(path, fmt, mapping, _safe_name(up.name), limits, "upload")
        bar.progress(1.0, text=f"Stored {tf.frame.height:,} requests as trace {trace_id}.")
        return trace_id, new


def _ingest_sample(file: str) -> tuple[str, bool]:
    """A bundled sample trace → store, through the same reader as an upload."""
    path = SAMPLES_DIR / file
    _, trace_id, new = _read_and_store(path, "auto", None, f"sample {file}", DEFAULT_LIMITS, str(path))
    return trace_id, new


def _sample_section() -> str | None:
    """No file at hand: load one of the bundled synthetic traces instead."""
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    pick = c1.selectbox("No trace at hand? Try a bundled sample", list(SAMPLES), key=f"{PAGE}.sample",
                        help="Synthetic traces written by data/samples/traces/make_samples.py in the real "
                             "formats' shapes; they are not production data.")
    if not c2.button("Load sample", key=f"{PAGE}.load_sample"):
        return None
    try:
        trace_id, new = _ingest_sample(SAMPLES[pick])
    except InputError as exc:
        st.error(md.text(exc.one_line()))
        return None
    st.success(f"Sample trace {md.text(trace_id)} {'stored' if new else 'was already stored'}.")
    return trace_id


def _columns(up) -> list[str]:
    with _spooled(up) as path:
        return peek_columns(path)


def _mapping_form(up, message: str) -> TraceMapping | None:
    """The file's format is unknown: let the user say which column is which."""
    st.warning(f"{md.text(message)}\n\nMap the file's columns below.", icon=":material/table_view:")
    try:
        cols = ["—", *_columns(up)]
    except InputError as exc:
        st.error(md.text(exc.one_line()))
        return None
    with st.form(f"{PAGE}.mapform"):
        picks = {f: st.selectbox(f, cols, key=f"{PAGE}.map.{f}") for f in FIELDS}
        unit = st.selectbox("timestamp unit", ("s", "ms", "us", "datetime"), key=f"{PAGE}.map.unit")
        if not st.form_submit_button("Read with this mapping"):
            return None
    chosen = {f: c for f, c in picks.items() if c != "—"}
    mapping = TraceMapping(timestamp_unit=unit, **chosen)
    if mapping.problems():
        st.error(md.text("; ".join(mapping.problems())))
        return None
    return mapping


def _upload_section() -> str | None:
    """Upload widgets; a new trace id when a file was stored in this run."""
    st.subheader("Upload a trace")
    cap_mb = max_upload_mb()
    st.caption(f"Azure, BurstGPT, Mooncake, ShareGPT, vLLM JSONL, Spec-Bench, or any CSV/JSONL/Parquet with token "
               f"counts (up to {cap_mb} MB; .gz accepted). The file is read, validated, stored once per "
               "content (same bytes = same trace) and deleted.")
    fmt = st.selectbox("Format", FORMAT_CHOICES, key=f"{PAGE}.format")
    up = st.file_uploader("Trace file", key=f"{PAGE}.upload", type=[s.lstrip(".") for s in SUFFIXES])
    if up is None:
        return _sample_section()
    if up.size > cap_mb * 1024 * 1024:
        st.error(md.text(f"error: {_safe_name(up.name)}: {up.size:,} bytes is over the {cap_mb} MB limit"))
        return None
    done = st.session_state.setdefault(f"{PAGE}.done", {})
    sig = (up.file_id, fmt)
    if sig in done:
        return None
    mapping = None
    if st.session_state.get(f"{PAGE}.needs_map") == up.file_id:
        mapping = _mapping_form(up, st.session_state.get(f"{PAGE}.map_msg", ""))
        if mapping is None:
            return None
    try:
        trace_id, new = _ingest(up, fmt, mapping)
    except InputError as exc:
        text = exc.one_line().replace(str(exc.path), _safe_name(up.name))
        if mapping is None and ("unrecognised" in text or "pass a mapping" in text):
            st.session_state[f"{PAGE}.needs_map"], st.session_state[f"{PAGE}.map_msg"] = up.file_id, text
            st.rerun()
        st.error(md.text(text))
        return None
    done[sig] = trace_id
    st.session_state.pop(f"{PAGE}.needs_map", None)
    st.success(f"Trace {md.text(trace_id)} {'stored' if new else 'was already stored (same content)'}.")
    return trace_id


# ---- charts (Altair; colours from dashboard.theme) ----------------------------------------------------

# Bars and lines that are not methods are drawn in the neutral ink: a blue would read as mtp's colour.
def _bars(frame: pl.DataFrame, x: str, y: str, title: str, sort: list[str] | None = None) -> alt.Chart:
    return alt.Chart(frame).mark_bar(color=theme.INK_SOFT).encode(
        x=alt.X(f"{x}:N", sort=sort, title=None), y=alt.Y(f"{y}:Q", title=y.replace("_", " ")),
        tooltip=list(frame.columns)).properties(title=title, width=320, height=200)


def _rate_chart(rate: pl.DataFrame) -> alt.Chart:
    return alt.Chart(rate).mark_line(color=theme.INK_SOFT).encode(
        x=alt.X("t_start_s:Q", title="seconds from the first request"), y=alt.Y("rate_rps:Q", title="requests/s"),
        tooltip=["t_start_s", "requests", "rate_rps"]).properties(title="Arrival rate", width=400, height=200)


def _heatmap(cands: pl.DataFrame) -> alt.LayerChart:
    """One row per candidate, one column per shard: a grid of 40+ method·depth candidates stays inside the page
    (laid out the other way it ran 1,400 px wide), with a label on every row."""
    base = alt.Chart(cands).encode(x=alt.X("shard:N", title=None, axis=alt.Axis(labelAngle=0, labelLimit=160)),
                                   y=alt.Y("candidate:N", title=None, sort=None, axis=alt.Axis(labelOverlap=False)))
    rect = base.mark_rect().encode(
        color=alt.Color("gain_vs_default_pct:Q", title="% vs default", scale=alt.Scale(scheme="blueorange",
                                                                                       domainMid=0)),
        stroke=alt.condition("datum.is_winner", alt.value(theme.SELECTED_STROKE), alt.value(None)),
        tooltip=["shard", "candidate", "value", "ci_low", "ci_high", "gain_vs_default_pct", "measured_share"])
    text = base.mark_text(fontSize=10).encode(text=alt.Text("gain_vs_default_pct:Q", format="+.0f"))
    return (rect + text).properties(title="Every candidate per shard, % vs your default (outlined = winner)",
                                    width=min(900, max(160, 110 * cands["shard"].n_unique())), height=alt.Step(18))


def _tax_chart(tax: pl.DataFrame) -> alt.LayerChart:
    color = charts.method_color(tax["method"].unique().to_list(), title="recommended")
    base = alt.Chart(tax).encode(y=alt.Y("shard:N", title=None))
    bars = base.mark_bar().encode(x=alt.X("gain_vs_default_pct:Q", title="gain over your default (%)"), color=color,
                                  tooltip=list(tax.columns))
    err = base.mark_rule(color=theme.INK, strokeWidth=2).encode(x="gain_ci_low:Q", x2="gain_ci_high:Q")
    return (bars + err).properties(title="The tax: what your default leaves on the table", width=520,
                                   height=alt.Step(26))


def _show(chart: alt.TopLevelMixin, frame: pl.DataFrame, name: str, key: str, context: str, simulated: bool) -> None:
    """Draw at the chart's own size (stretched to the column, its legend would be cut off); the exported file
    says which trace, family, GPU and default it is about, and carries the simulated label."""
    charts.display(charts.finish(chart).to_dict(validate=False), key=f"{PAGE}.{key}")
    export.buttons(lambda: charts.finish(charts.titled(chart, str(chart.title), context), export=True,
                                         simulated=simulated), frame, f"{name}_{key}", f"{PAGE}.{key}")


def _nothing_to_score(exc: UsageError) -> str:
    """Why a trace cannot be re-scored with these sidebar choices, in one Markdown-safe sentence."""
    return md.text(f"Nothing to score this trace against: {' '.join(str(exc).split())}. Pick another model "
                   "family or GPU in the sidebar (they list the store's values; not every pair was measured).")


# ---- page ---------------------------------------------------------------------------------------------

dims = data.dimension_values(data.db_path(), data.stamp())
choices = ["none", *[f"{m}:{d}" for m in dims["method"] if m != "none" for d in dims["depth"] if d > 0]]
drafter_methods = [m for m in dims["method"] if m in NEEDS_DRAFT_MODEL]
params = [
    widgets.p_one("fam", "Model family", dims["family"]),
    widgets.p_one("gpu", "GPU", dims["gpu"]),
    widgets.p_one("default", "What you run today", choices, default="mtp:3" if "mtp:3" in choices else "none",
                  format_func=lambda c: c.replace(":", "·")),  # shown as mtp·3; the URL keeps mtp:3
    widgets.p_one("workload", "Workload", (AS_ASSIGNED, *dims["workload"]),
                  format_func=lambda w: "as assigned (file, file name or classifier)" if w == AS_ASSIGNED else w),
    widgets.p_one("metric", "Pick winners by", ("output_throughput", "p99_e2e_ms", "goodput"),
                  format_func=widgets.metric_label),
    widgets.p_one("shard", "Shard by", SHARD_BY,
                  format_func=lambda k: "auto (shard column, else workload)" if k == "auto"
                  else f"{k.replace('_', ' ')}: {SHARD_DESCRIPTION[k]}"),
    *widgets.p_slo(),
]
st.title("Your traffic")
st.caption("Which speculative method and depth wins on *your* requests, per shard, what the default costs you, "
           "and the exact vLLM flag to deploy. Predictions come from the measured matrix (per workload, "
           "output-length bucket and load) with the acceptance/cost model filling gaps (docs/rescoring.md).")
v = widgets.setup(PAGE, params)
new_id = _upload_section()
stored = _stored(data.db_path(), data.stamp())
ids = ["", *stored["trace_id"].to_list()]
names = dict(zip(stored["trace_id"].to_list(), stored["name"].to_list(), strict=True))
trace_param = state.Param("trace", "one", "", tuple(ids), label="Trace")
if new_id:
    st.session_state[state.widget_key(PAGE, trace_param)] = new_id
state.warn(state.seed(PAGE, [trace_param]))
label = lambda t: "—" if not t else f"{names.get(t, '')} · {t}"  # noqa: E731
tid = st.selectbox("Trace", ids, key=state.widget_key(PAGE, trace_param), format_func=label)

slo = widgets.slo(v)
drafters: dict[str, str] = {}
with st.expander("Drafter checkpoints for the deploy command", expanded=False):
    st.caption("EAGLE-3, DFlash, DSpark, draft_model and medusa run a separately trained drafter: its path goes "
               "into the printed `vllm serve` command (empty: the drafter the benchmark ran with, else a "
               "placeholder the shell refuses until you fill it in).")
    cols = st.columns(max(1, min(3, len(drafter_methods))))
    for i, method in enumerate(drafter_methods):
        path_ = cols[i % len(cols)].text_input(f"{method} drafter", key=f"{PAGE}.drafter.{method}",
                                               placeholder=f"org/{method}-drafter or /models/{method}")
        if path_.strip():
            try:
                drafters.update(parse_draft_models([f"{method}={path_.strip()}"]))
            except UsageError as exc:
                st.error(md.text(exc.one_line()))
opts = RescoreOptions(families=(v["fam"],), gpus=(v["gpu"],), default=parse_choice(v["default"]), metric=v["metric"],
                      slo_ttft_ms=slo.ttft_ms if v["metric"] == "goodput" else None,
                      slo_tpot_ms=slo.tpot_ms if v["metric"] == "goodput" else None, shard_by=v["shard"],
                      draft_models=drafters)
doc = None
selector = None if v["workload"] == AS_ASSIGNED else v["workload"]
if tid:
    try:
        doc, summary = _rescored(data.db_path(), data.stamp(), tid, opts, selector)
    except UsageError as exc:  # e.g. a linked family × GPU with no cells: say so, the page stays usable
        st.warning(_nothing_to_score(exc), icon=":material/search_off:")
if doc is not None:
    widgets.banner(doc["simulated"])
    for w in doc["warnings"]:  # the banner: what the answer rests on that the user did not choose
        st.warning(md.text(w), icon=":material/report:")
    name = export.slug(PAGE, tid, v["fam"], v["gpu"])
    t = doc["trace"]
    load_kpi = rescore_summary.operating_load(doc)
    src = t.get("workload_source") or {}
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("Requests", f"{t['requests']:,}")
    c2.metric("Shards", len(t["shards"]), help=f"by {SHARD_DESCRIPTION.get(t['shard_by'], t['shard_by'])}")
    c3.metric("Unknown workload", f"{t['workload_mix'].get('unknown', 0.0):.0%}")
    c4.metric("Workload from", src.get("source", "—"),
              help="which source labelled most requests: " + ", ".join(f"{k} {n:,}" for k, n in
                                                                       (src.get("counts") or {}).items()))
    c5.metric("Scored at concurrency", load_kpi["value"], help=load_kpi["how"])
    st.caption("Workloads: " + md.text(", ".join(f"{w} {s:.0%} (scored as {t['workload_scored_as'].get(w)})"
                                                for w, s in t["workload_mix"].items())))
    mix = rescore_summary.mix_frame(t["workload_mix"])
    ctx = (f"trace {names.get(tid, '')} ({tid}) · {v['fam']} on {v['gpu']} · today: {opts.default.label}",
           bool(doc["simulated"]))
    a, b = st.columns(2)
    with a:
        _show(_bars(mix, "workload", "share", "Workload mix"), mix, name, "mix", *ctx)
    with b:
        _show(_bars(summary["output"], "bin", "requests", "Output tokens", summary["output"]["bin"].to_list()),
              summary["output"], name, "output", *ctx)
    a, b = st.columns(2)
    with a:
        _show(_bars(summary["input"], "bin", "requests", "Input tokens", summary["input"]["bin"].to_list()),
              summary["input"], name, "input", *ctx)
    with b:
        if summary["rate"].height:
            _show(_rate_chart(summary["rate"]), summary["rate"], name, "rate", *ctx)
        else:
            st.info(f"No timestamps: scored at a fixed concurrency of {doc['recommendations'][0]['load']['grid']}"
                    if doc["recommendations"] else "No timestamps.")
    st.subheader("Recommendations")
    recs = rescore_summary.recommendations(doc)
    widgets.table(recs.drop("vllm_args", "command"))
    cands = rescore_summary.candidates(doc)
    if cands.height:
        _show(_heatmap(cands), cands, name, "heatmap", *ctx)
        _show(_tax_chart(rescore_summary.tax(doc)), rescore_summary.tax(doc), name, "tax", *ctx)
    st.subheader("Deploy")
    for r in doc["recommendations"]:  # the answer in words (analysis.rescore.summary), the same as the CLI's
        st.markdown(f"**{md.text(r['shard'])}**: {md.text(rescore_summary.recommendation_words(r))}.")
        svs = r.get("static_vs_scheduled")
        if svs:
            words = rescore_summary.schedule_words(svs)
            st.markdown(md.text(f"Depth schedule per batch size: {words[0].upper()}{words[1:]} on this shard's loads."))
        st.code(r["deploy"]["command"], language="bash")
        if r["deploy"]["note"]:
            st.warning(md.text(r["deploy"]["note"]))
    if doc["acceptance"]["drift"]:
        st.subheader("Production vs benchmark acceptance")
        widgets.table(pl.DataFrame(doc["acceptance"]["drift"]))

    def _report() -> report.Report:
        tables = [("Recommendations", recs.drop("vllm_args", "command")), ("Tax", rescore_summary.tax(doc))]
        if doc["acceptance"]["drift"]:
            tables.append(("Acceptance drift", pl.DataFrame(doc["acceptance"]["drift"])))
        metric_label = widgets.metric_label(v["metric"])
        shown = [("Candidates", _heatmap(cands),
                  f"{metric_label} of every scored candidate per shard, relative to today's default"),
                 ("Tax", _tax_chart(rescore_summary.tax(doc)),
                  "what keeping today's default costs per shard, with its 95 % interval")] if cands.height else []
        return report.traffic_report(doc, report.View(v["metric"], metric_label), names.get(tid, tid),
                                     {**widgets.described(v, params), "Trace": label(tid)}, shown, tables,
                                     data.runs(data.db_path(), data.stamp()))

    report.button(_report, name, PAGE)

st.divider()
st.subheader("Saved traces")
widgets.table(stored)
if len(ids) > 2:
    st.subheader("Compare two traces")
    c1, c2 = st.columns(2)
    ta = c1.selectbox("Trace A", ids[1:], key=f"{PAGE}.cmp_a", format_func=label)
    tb = c2.selectbox("Trace B", ids[1:], index=1, key=f"{PAGE}.cmp_b", format_func=label)
    if ta and tb and ta != tb:
        try:
            da, _ = _rescored(data.db_path(), data.stamp(), ta, opts, selector)
            db, _ = _rescored(data.db_path(), data.stamp(), tb, opts, selector)
        except UsageError as exc:
            st.warning(_nothing_to_score(exc), icon=":material/search_off:")
            widgets.finish(PAGE, params)
            state.write_url(PAGE, [trace_param])
            st.stop()
        cmp = rescore_compare.compare(da, db)
        st.metric("Mix drift (total variation)", f"{cmp['total_variation']:.1%}")
        widgets.table(cmp["mix_drift"])
        st.markdown("**The recommendation changes**" if cmp["any_change"] else "**Same recommendation for both**")
        widgets.table(cmp["changes"])
        export.buttons(None, cmp["changes"], export.slug(PAGE, "compare", ta, tb), f"{PAGE}.cmp")
widgets.finish(PAGE, params)
state.write_url(PAGE, [trace_param])
