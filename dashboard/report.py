"""The Report button: the current view as a self-contained HTML file and as a PDF a team lead can forward.

Both have one structure: page 1 is the summary (the question, the answer per group or shard with its gain,
interval, confidence in words and the whole deploy command, what is simulated and what measured), then the
filters that apply, then the charts inline with captions, then the tables with human column titles, then the
provenance of the runs. The content is decided in :mod:`analysis.report` (summary, applicable filters, human
titles); this module only lays it out. HTML: one offline file, each chart an SVG picture from vl-convert (no
script, no CDN). PDF: ReportLab (:mod:`dashboard.pdf`) with embedded Unicode fonts, charts as vl-convert PNGs.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import altair as alt
import polars as pl
import streamlit as st

from analysis.labels import human_table
from analysis.report import filters
from analysis.report import traffic as report_traffic
from analysis.report import winners as report_winners
from analysis.report.document import Summary, shell_lines
from dashboard import charts, export, pdf

SIM_LABEL = ("SIMULATED DATA: these numbers come from spectune's calibrated simulator (backend 'sim'), "
             "not from measurements on real GPUs.")
MAX_TABLE_ROWS = 200


@dataclass
class Report:
    title: str
    filters: dict[str, str]
    # (name, chart) or (name, chart, caption); charts unconfigured
    charts: list[tuple] = field(default_factory=list)
    tables: list[tuple[str, pl.DataFrame]] = field(default_factory=list)
    provenance: pl.DataFrame | None = None
    simulated: bool = False
    created: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    summary: Summary | None = None  # page 1: question, answers, sources
    metric: str = ""  # the view's metric: filters that do not apply to it are left out
    fonts: str = "auto"  # PDF fonts: "auto" (system DejaVu, else ReportLab's Vera) or "bundled" (Vera)


PROVENANCE_COLS = ("run_id", "backend", "engine_version", "gpu_model", "host", "started_at", "source", "cells",
                   "requests")


def _provenance(r: Report) -> pl.DataFrame:
    if r.provenance is None or r.provenance.height == 0:
        return pl.DataFrame()
    return r.provenance.select([c for c in PROVENANCE_COLS if c in r.provenance.columns])


def cell_text(v: object, digits: int | None = None) -> str:
    """One table cell as a reader wants it: floats rounded (``digits``, else by their size), large counts with
    thousands separators, no "None"."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "NaN"
        return f"{v:,.{_digits(abs(v)) if digits is None else digits}f}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 100_000 else str(v)
    if isinstance(v, list | tuple):
        return ", ".join(cell_text(x) for x in v)
    return str(v)


def _digits(magnitude: float) -> int:
    return 1 if magnitude >= 100 else 2 if magnitude >= 1 else 3


def column_texts(col: pl.Series) -> list[str]:
    """A column's cells as text, every float of the column with the same number of decimals."""
    digits = None
    if col.dtype.is_float():
        finite = col.filter(col.is_finite()).abs()
        digits = _digits(float(finite.max())) if finite.len() else 1
    return [cell_text(v, digits) for v in col.to_list()]


def shown_filters(r: Report) -> dict[str, str]:
    return filters.applicable(r.filters, r.metric) if r.metric else dict(r.filters)


def _chart_list(r: Report) -> list[tuple[str, alt.TopLevelMixin, str]]:
    return [(c[0], c[1], c[2] if len(c) > 2 else "") for c in r.charts]


def _titled(name: str, c: alt.TopLevelMixin) -> alt.TopLevelMixin:
    return c if _has_title(c) else charts.titled(c, name)


def _has_title(c: alt.TopLevelMixin) -> bool:
    return c.to_dict(validate=False).get("title") is not None


def _tables(r: Report) -> list[tuple[str, pl.DataFrame]]:
    """The tables as a reader sees them (human titles, one candidate column), provenance last."""
    out = [(name, human_table(t)) for name, t in r.tables if t.height]
    prov = _provenance(r)
    if prov.height:
        out.append(("Provenance", human_table(prov)))
    return out


def caption(i: int, name: str, text: str) -> str:
    return f"Figure {i}. {name}" + (f" — {text}" if text else "")


# ---- HTML ------------------------------------------------------------------------------------------------

STYLE = ("<style>body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px;max-width:1400px;}"
         "table{border-collapse:collapse;font-size:12px;margin-bottom:16px;}td,th{border:1px solid #ccc;"
         "padding:2px 6px;vertical-align:top;text-align:left;}td.num{text-align:right;}th{background:#eee;}"
         ".sim{background:#fff3cd;border:1px solid #e0a800;padding:8px;font-weight:bold;}.meta{color:#666;}"
         "pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:4px 6px;margin:2px 0;}"
         ".answer{font-weight:bold;font-size:14px;}.note{font-style:italic;color:#555;margin:2px 0;}"
         "figure{margin:12px 0 24px 0;}figcaption{font-style:italic;color:#555;}"
         "figure img{max-width:100%;height:auto;}</style>")


def _e(text: object) -> str:
    return html.escape(str(text))


def _html_table(frame: pl.DataFrame) -> str:
    more = frame.height - MAX_TABLE_ROWS
    frame = frame.head(MAX_TABLE_ROWS)
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    texts = [column_texts(frame[c]) for c in frame.columns]
    kinds = [" class='num'" if frame[c].dtype.is_numeric() else "" for c in frame.columns]
    body = "".join("<tr>" + "".join(f"<td{k}>{_e(col[i])}</td>" for col, k in zip(texts, kinds, strict=True))
                   + "</tr>" for i in range(frame.height))
    note = f"<p class='meta'>… and {more:,} more rows (download the data as CSV or Parquet).</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def _html_summary(s: Summary) -> str:
    out = [f"<h2>Question</h2><p>{_e(s.question)}</p>", "<h2>Answer</h2>"]
    if s.answers:
        rows = []
        for a in s.answers:
            notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in a.notes)
            cmd = f"<pre class='cmd'>{_e(a.command)}</pre>" if a.command else ""
            rows.append(f"<tr><td>{_e(a.group)}</td><td class='answer'>{_e(a.candidate)}</td><td>{_e(a.gain)}</td>"
                        f"<td>{_e(a.confidence)}</td></tr><tr><td colspan='4'>{cmd}{notes}</td></tr>")
        out.append("<table class='answers'><thead><tr><th>Group</th><th>Deploy</th><th>Gain</th><th>Confidence</th>"
                   f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    else:
        out.append("<p>No answer: nothing matches these filters.</p>")
    out.append("<h2>Where the numbers come from</h2><ul>" + "".join(f"<li>{_e(x)}</li>" for x in s.sources)
               + "</ul>")
    if s.warnings:
        out.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{_e(x)}</li>" for x in s.warnings) + "</ul>")
    return "".join(out)


def to_html(r: Report) -> bytes:
    parts = [f"<h1>{_e(r.title)}</h1>", f"<p class='meta'>spectune report · {_e(r.created)}</p>"]
    if r.simulated:
        parts.append(f"<p class='sim'>{_e(SIM_LABEL)}</p>")
    if r.summary is not None:
        parts.append(_html_summary(r.summary))
    shown = shown_filters(r)
    if shown:
        parts.append("<h2>Filters</h2><ul>" + "".join(f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in shown.items())
                     + "</ul>")
    chart_list = _chart_list(r)
    if chart_list:
        parts.append("<h2>Charts</h2>")
    for i, (name, c, text) in enumerate(chart_list, start=1):
        svg = export.chart_bytes(charts.finish(_titled(name, c), export=True, simulated=r.simulated), "svg")
        # an <img> picture: its SVG runs no script and its ids cannot clash with another chart's
        src = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
        parts.append(f"<figure><img src='{src}' alt='{_e(name)}'><figcaption>{_e(caption(i, name, text))}"
                     "</figcaption></figure>")
    parts += [f"<h2>{_e(name)}</h2>{_html_table(t)}" for name, t in _tables(r)]
    page = (f"<!DOCTYPE html>\n<html lang='en'>\n<head><meta charset='UTF-8'><title>{_e(r.title)}</title>{STYLE}"
            f"</head>\n<body>\n{''.join(parts)}\n</body>\n</html>\n")
    return page.encode()


# ---- PDF -------------------------------------------------------------------------------------------------

def _pdf_summary(s: Summary, st_: pdf.Styles) -> list:
    flow: list = [*pdf.heading(st_, "Question"), st_.para(s.question, "body"), *pdf.heading(st_, "Answer")]
    if s.answers:
        widths = [150.0, 95.0, 215.0]
        widths.append(pdf.FRAME_W - sum(widths))
        width = pdf.code_chars(pdf.FRAME_W - 8, st_.f)
        cells = [[st_.para(h, "head") for h in ("Group", "Deploy", "Gain", "Confidence")]]
        spans = []
        for a in s.answers:
            cells.append([st_.para(a.group, "cell"), st_.para(a.candidate, "answer"), st_.para(a.gain, "cell"),
                          st_.para(a.confidence, "cell")])
            below = ([st_.lines(shell_lines(a.command, width), "code")] if a.command else []) + [
                st_.para(n, "note") for n in a.notes]
            cells.append([below or "", "", "", ""])
            spans.append(len(cells) - 1)
        t = pdf.Table(cells, colWidths=widths, repeatRows=1, hAlign="LEFT")
        t.setStyle(pdf.TableStyle([
            ("GRID", (0, 0), (-1, -1), 0.25, pdf.colors.HexColor("#bbbbbb")),
            ("BACKGROUND", (0, 0), (-1, 0), pdf.colors.HexColor("#eeeeee")),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            *[("SPAN", (0, i), (-1, i)) for i in spans],
            *[("BACKGROUND", (0, i), (-1, i), pdf.colors.HexColor("#f6f6f6")) for i in spans],
        ]))
        flow.append(t)
    else:
        flow.append(st_.para("No answer: nothing matches these filters.", "body"))
    flow += pdf.heading(st_, "Where the numbers come from")
    flow += [st_.para("• " + x, "body") for x in s.sources]
    if s.warnings:
        flow += pdf.heading(st_, "Warnings")
        flow += [st_.para("• " + x, "body") for x in s.warnings]
    return flow


def _pdf_table(name: str, frame: pl.DataFrame, st_: pdf.Styles) -> list:
    more = frame.height - MAX_TABLE_ROWS
    frame = frame.head(MAX_TABLE_ROWS)
    head = [str(c) for c in frame.columns]
    cols = [column_texts(frame[c]) for c in frame.columns]
    numeric = [frame[c].dtype.is_numeric() for c in frame.columns]
    natural, least = pdf.column_widths(st_, head, cols)
    keys = [i for i in range(min(2, len(head))) if not numeric[i]]
    keys = keys[:1] if keys and keys[0] != 0 else keys
    flow: list = pdf.heading(st_, name)
    for g in pdf.column_groups(least, keys):
        widths = pdf.fitted([natural[j] for j in g], [least[j] for j in g])
        rows = [[cols[j][i] for j in g] for i in range(frame.height)]
        flow += [pdf.table(st_, [head[j] for j in g], rows, [numeric[j] for j in g], widths), pdf.Spacer(1, 6)]
    if more > 0:
        flow.append(st_.para(f"… and {more:,} more rows (download the data as CSV or Parquet).", "meta"))
    return flow


def to_pdf(r: Report) -> bytes:
    f = pdf.fonts(r.fonts)
    st_ = pdf.Styles(f)
    flow: list = [st_.para(r.title, "title"), st_.para(f"spectune report · {r.created}", "meta")]
    if r.simulated:
        flow.append(st_.para(SIM_LABEL, "sim"))
    if r.summary is not None:
        flow += _pdf_summary(r.summary, st_)
    shown = shown_filters(r)
    if shown:
        flow += pdf.heading(st_, "Filters")
        flow += [st_.para(f"{k}: {v}", "body") for k, v in shown.items()]
    chart_list = _chart_list(r)
    if chart_list:
        flow += pdf.heading(st_, "Charts")
    for i, (name, c, text) in enumerate(chart_list, start=1):
        png = export.chart_bytes(charts.finish(_titled(name, c), export=True, simulated=r.simulated), "png")
        flow.append(pdf.KeepTogether([pdf.image(png), st_.para(caption(i, name, text), "caption")]))
    for name, t in _tables(r):
        flow += _pdf_table(name, t, st_)
    return pdf.build(flow, f, r.title, f"{r.title} · spectune report · {r.created}",
                     SIM_LABEL if r.simulated else None)


@dataclass(frozen=True)
class View:
    """What a page shows, as its report needs it: the metric (name and label) and the load."""

    metric: str
    metric_label: str
    concurrency: object = None


def winners_report(doc: dict, view: View, gpus: Sequence[str], families: Sequence[str], workloads: Sequence[str],
                   shown_filters: dict[str, str], provenance: pl.DataFrame | None,
                   charts_: list[tuple] | None = None, tables: list[tuple[str, pl.DataFrame]] | None = None) -> Report:
    """The Winners page's report from its ``analysis.winners`` document: summary, one heatmap per GPU, one
    table per GPU (or the page's own charts and tables, e.g. its every-load view)."""
    at = f"{view.metric_label} · concurrency {view.concurrency}"
    if tables is None:
        tables = []
        for g in gpus:
            rows = charts.winner_rows({**doc, "cells": [c for c in doc["cells"] if c["gpu"] == g]})
            if rows.height:
                tables.append((f"{g} winners", rows.select(
                    "family", "workload", "headline", "pick", "pick_rule", "gain", "chances", "method", "depth",
                    "value", "verdict", "tied", "top1", "top2", "top3", "origin", "grid_edge", "whole_window",
                    "provenance").rename({"value": view.metric_label})))
    if charts_ is None:
        charts_ = [(f"{g} winners", charts.winner_heatmap(doc, g, families, workloads, at, select=False),
                    f"the pick per model × workload on {g} by {view.metric_label} at concurrency "
                    f"{view.concurrency}: verdict, pick (p = its chance of being best), its gain over none with "
                    "the 95 % interval")
                   for g in gpus]
    return Report(
        title=f"spectune — winners by {view.metric_label}, concurrency {view.concurrency}",
        filters=shown_filters, metric=view.metric,
        summary=report_winners.summary(doc, view.metric_label, view.concurrency),
        charts=charts_, tables=tables, provenance=provenance, simulated=doc["simulated"])


def traffic_report(doc: dict, view: View, trace_name: str, shown_filters: dict[str, str],
                   chart_list: list[tuple], tables: list[tuple[str, pl.DataFrame]],
                   provenance: pl.DataFrame | None) -> Report:
    """The Your-traffic page's report from its ``analysis.rescore`` document (the page's own charts)."""
    return Report(title=f"spectune — your traffic ({trace_name})", filters=shown_filters, metric=view.metric,
                  summary=report_traffic.summary(doc, trace_name, view.metric_label), charts=chart_list,
                  tables=tables, provenance=provenance, simulated=doc["simulated"])


def button(make: Callable[[], Report], name: str, key: str) -> None:
    """The Report button: a popover with the HTML and PDF downloads (built only when clicked)."""
    with st.popover("Report", icon=":material/description:"):
        st.caption("The current view as one file: a summary (question, answer, deploy command), the filters, "
                   "the charts, the tables and the provenance.")
        st.download_button("HTML report", data=lambda: to_html(make()), file_name=f"{name}_report.html",
                           mime="text/html", key=f"report.{key}.html", on_click="ignore")
        st.download_button("PDF report", data=lambda: to_pdf(make()), file_name=f"{name}_report.pdf",
                           mime="application/pdf", key=f"report.{key}.pdf", on_click="ignore")


def simulated_in(frames_: Sequence[pl.DataFrame]) -> bool:
    return any("backend" in f.columns and (f["backend"] == "sim").any() for f in frames_)
