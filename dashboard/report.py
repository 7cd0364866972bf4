"""The Report button: the current view as a self-contained HTML file and as a PDF.

Both carry the title, the filters, the charts, the tables, the provenance of the runs behind them and —
whenever simulated rows are in the view — the simulated label. HTML: the charts as one inline Vega-Lite
spec with the Vega JavaScript embedded (``inline=True``; no CDN, opens offline) plus escaped HTML tables.
PDF: text pages (title, filters, label, tables, provenance; written directly by :mod:`dashboard.pdf`, so
tables line up and a long table costs nothing) and one page per chart rendered by vl-convert, each with
its name and the simulated label, merged with pypdf — pure Python, offline.
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

from dashboard import charts, export, pdf

SIM_LABEL = ("SIMULATED DATA: these numbers come from spectune's calibrated simulator (backend 'sim'), "
             "not from measurements on real GPUs.")
MAX_TABLE_ROWS = 200
MAX_CELL = 40  # characters of one cell in the PDF's text tables


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


def _html_table(frame: pl.DataFrame) -> str:
    more = frame.height - MAX_TABLE_ROWS
    frame = frame.head(MAX_TABLE_ROWS)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    texts = [column_texts(frame[c]) for c in frame.columns]
    body = "".join("<tr>" + "".join(f"<td>{html.escape(col[r])}</td>" for col in texts) + "</tr>"
                   for r in range(frame.height))
    note = f"<p class='meta'>… and {more:,} more rows (download the data as CSV or Parquet).</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())  # no line breaks or tabs inside a cell
    return text if len(text) <= width else text[:width - 1] + "…"


def table_lines(frame: pl.DataFrame, width: int = pdf.CHARS_PER_LINE) -> list[str]:
    """A table as aligned fixed-width text: numbers right-aligned, cells clipped at :data:`MAX_CELL`; a table
    wider than ``width`` is split into column groups, each repeating the leading text columns (its keys:
    family, workload …)."""
    more = frame.height - MAX_TABLE_ROWS
    frame = frame.head(MAX_TABLE_ROWS)
    cols = [str(c) for c in frame.columns]
    cells = [[_clip(t, MAX_CELL) for t in column_texts(frame[c])] for c in frame.columns]
    numeric = [frame[c].dtype.is_numeric() for c in frame.columns]
    widths = [max([len(_clip(h, MAX_CELL))] + [len(x) for x in col]) for h, col in zip(cols, cells, strict=True)]
    keys: list[int] = []
    for i in range(min(2, len(cols))):
        if numeric[i] or sum(widths[j] + 2 for j in [*keys, i]) > width // 3:
            break
        keys.append(i)
    groups: list[list[int]] = []
    for i in range(len(cols)):
        if groups and sum(widths[j] + 2 for j in groups[-1]) + widths[i] <= width:
            groups[-1].append(i)
        elif not groups or i in keys:
            groups.append([i])
        else:
            groups.append([*keys, i])
    out: list[str] = []
    for g in groups:
        if out:
            out.append("")

        def fmt(texts: list[str], g: list[int] = g) -> str:
            return "  ".join(t.rjust(widths[j]) if numeric[j] else t.ljust(widths[j])
                             for j, t in zip(g, texts, strict=True)).rstrip()

        out.append(fmt([_clip(cols[j], MAX_CELL) for j in g]))
        out.append("  ".join("-" * widths[j] for j in g))
        out += [fmt([cells[j][r] for j in g]) for r in range(frame.height)]
    if more > 0:
        out.append(f"... and {more:,} more rows (download the data as CSV or Parquet)")
    return out


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
        # each chart keeps its own colour scale and legend (a ratio heatmap next to method bars, say)
        combined = alt.vconcat(*[charts.titled(c, name) if not _has_title(c) else c for name, c in r.charts],
                               spacing=32).resolve_scale(color="independent")
        page = export.chart_bytes(charts.finish(combined, export=True), "html").decode()
    else:
        page = f"<!DOCTYPE html>\n<html>\n<head><meta charset='UTF-8'></head>\n<body>\n{CHART_DIV}\n</body>\n</html>"
    # The inline vega-embed bundle itself contains "<head>", "<body>" and "</body>" in string literals: cut
    # the page at the template's own chart <div> (after the bundle) and at its last </body>, never at the
    # first occurrence of a tag.
    at = page.index(CHART_DIV)
    head_end = page.rindex("</head>", 0, at)
    body_end = page.rindex("</body>")
    title = f"<title>{html.escape(r.title)}</title>"
    header.append("<h2>Charts</h2>" if r.charts else "")
    page = (page[:head_end] + title + style + page[head_end:at] + "".join(header) + page[at:body_end]
            + "".join(tail) + page[body_end:])
    return page.encode()


CHART_DIV = '<div class="vega-visualization" id="vis"></div>'


def _has_title(c: alt.TopLevelMixin) -> bool:
    return c.to_dict(validate=False).get("title") is not None


def _text_lines(r: Report) -> list[pdf.Line]:
    L = pdf.Line
    lines = [L(f"spectune report · {r.created}"), L("")]
    if r.simulated:
        lines += [L("*** " + SIM_LABEL + " ***", strong=True), L("")]
    lines.append(L("Filters", strong=True))
    lines += [L(f"  {k}: {v}") for k, v in r.filters.items()]
    if r.charts:
        lines += [L(""), L("Charts (one page each, after the tables)", strong=True)]
        lines += [L(f"  {name}") for name, _ in r.charts]
    for name, t in [*r.tables, ("Provenance", _provenance(r))]:
        if t.height == 0:
            continue
        lines += [L(""), L(name, strong=True)] + [L(x) for x in table_lines(t)]
    return lines


def to_pdf(r: Report) -> bytes:
    writer = PdfWriter()
    writer.append(io.BytesIO(pdf.text_pdf(pdf.paginate(r.title, _text_lines(r)))))
    for name, c in r.charts:
        page = c if _has_title(c) else charts.titled(c, name)
        writer.append(io.BytesIO(export.chart_bytes(charts.finish(page, export=True, simulated=r.simulated), "pdf")))
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
