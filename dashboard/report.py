"""The Report button: the current view as a self-contained HTML file and as a PDF.

Both carry the title, the filters, the charts, the tables, the provenance of the runs behind them and —
whenever simulated rows are in the view — the simulated label. HTML: the charts as one inline Vega-Lite
spec with the Vega JavaScript embedded (``inline=True``; no CDN, opens offline) plus escaped HTML tables.
PDF: a text page (title, filters, label, provenance, tables) and one page per chart, each rendered by
vl-convert, merged with pypdf — pure Python, offline.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import altair as alt
import polars as pl
import streamlit as st
from pypdf import PdfWriter

from dashboard import charts, export

SIM_LABEL = ("SIMULATED DATA: these numbers come from spectune's calibrated simulator (backend 'sim'), "
             "not from measurements on real GPUs.")
MAX_TABLE_ROWS = 200
LINES_PER_PAGE = 60


@dataclass
class Report:
    title: str
    filters: dict[str, str]
    charts: list[tuple[str, alt.TopLevelMixin]] = field(default_factory=list)  # unconfigured charts
    tables: list[tuple[str, pl.DataFrame]] = field(default_factory=list)
    provenance: pl.DataFrame | None = None
    simulated: bool = False
    created: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))


PROVENANCE_COLS = ("run_id", "backend", "engine_version", "gpu_model", "host", "started_at", "source", "cells",
                   "requests")


def _provenance(r: Report) -> pl.DataFrame:
    if r.provenance is None or r.provenance.height == 0:
        return pl.DataFrame()
    return r.provenance.select([c for c in PROVENANCE_COLS if c in r.provenance.columns])


def _html_table(frame: pl.DataFrame) -> str:
    frame = frame.head(MAX_TABLE_ROWS)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row) + "</tr>"
                   for row in frame.iter_rows())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(r: Report) -> bytes:
    header = [f"<h1>{html.escape(r.title)}</h1>", f"<p class='meta'>spectune report · {html.escape(r.created)}</p>"]
    if r.simulated:
        header.append(f"<p class='sim'>{html.escape(SIM_LABEL)}</p>")
    header.append("<h2>Filters</h2><ul>" + "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in r.filters.items()) + "</ul>")
    tail = [f"<h2>{html.escape(name)}</h2>{_html_table(t)}" for name, t in r.tables]
    prov = _provenance(r)
    if prov.height:
        tail.append(f"<h2>Provenance</h2>{_html_table(prov)}")
    style = ("<style>body{font-family:sans-serif;margin:24px;} table{border-collapse:collapse;font-size:12px;"
             "margin-bottom:16px;} td,th{border:1px solid #ccc;padding:2px 6px;} .sim{background:#fff3cd;"
             "border:1px solid #e0a800;padding:8px;font-weight:bold;} .meta{color:#666;}</style>")
    if r.charts:
        combined = alt.vconcat(*[c for _, c in r.charts]).configure_view(stroke=None)
        page = export.chart_bytes(combined, "html").decode()
    else:
        page = "<!DOCTYPE html><html><head><meta charset='UTF-8'></head><body></body></html>"
    page = page.replace("</head>", style + "</head>", 1)
    page = page.replace("<body>", "<body>" + "".join(header), 1)
    page = page.replace("</body>", "".join(tail) + "</body>", 1)
    return page.encode()


def _text_lines(r: Report) -> list[str]:
    lines = [f"spectune report · {r.created}", ""]
    if r.simulated:
        lines += ["*** " + SIM_LABEL + " ***", ""]
    lines.append("Filters")
    lines += [f"  {k}: {v}" for k, v in r.filters.items()]
    for name, t in [*r.tables, ("Provenance", _provenance(r))]:
        if t.height == 0:
            continue
        lines += ["", name]
        with pl.Config(tbl_rows=MAX_TABLE_ROWS, tbl_cols=20, tbl_width_chars=150, fmt_str_lengths=40,
                       tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
            lines += str(t.head(MAX_TABLE_ROWS)).splitlines()
    return lines


def to_pdf(r: Report) -> bytes:
    lines = _text_lines(r)
    pages: list[alt.TopLevelMixin] = []
    for i in range(0, max(len(lines), 1), LINES_PER_PAGE):
        title = r.title if i == 0 else f"{r.title} (continued)"
        pages.append(charts.text_page(lines[i:i + LINES_PER_PAGE], title).configure_view(stroke=None))
    for name, c in r.charts:
        sub = "SIMULATED DATA (backend sim)" if r.simulated else ""
        pages.append(alt.vconcat(c, title=alt.Title(name, subtitle=sub, anchor="start")).configure_view(stroke=None))
    writer = PdfWriter()
    for p in pages:
        writer.append(io.BytesIO(export.chart_bytes(p, "pdf")))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def button(make: Callable[[], Report], name: str, key: str) -> None:
    """The Report button: a popover with the HTML and PDF downloads (built only when clicked)."""
    with st.popover("Report", icon=":material/description:"):
        st.caption("The current view — title, filters, charts, tables, provenance — as one file.")
        st.download_button("HTML report", data=lambda: to_html(make()), file_name=f"{name}_report.html",
                           mime="text/html", key=f"report.{key}.html", on_click="ignore")
        st.download_button("PDF report", data=lambda: to_pdf(make()), file_name=f"{name}_report.pdf",
                           mime="application/pdf", key=f"report.{key}.pdf", on_click="ignore")


def simulated_in(frames_: Sequence[pl.DataFrame]) -> bool:
    return any("backend" in f.columns and (f["backend"] == "sim").any() for f in frames_)
