"""Reports: self-contained offline HTML (spec inline, no external script) and a multi-page PDF."""

from __future__ import annotations

import html as html_mod
import io
import re

import altair as alt
import polars as pl
from pypdf import PdfReader

from dashboard import report


def _report(simulated: bool) -> report.Report:
    df = pl.DataFrame({"family": ["Qwen", "Gemma"], "v": [1.5, 2.5]})
    chart = alt.Chart(df.to_arrow()).mark_bar().encode(x="family:N", y="v:Q")
    prov = pl.DataFrame({"run_id": ["r1"], "backend": ["sim" if simulated else "vllm"], "cells": [2]})
    return report.Report(title="Test <report>", filters={"Metric": "Output throughput"}, charts=[("c1", chart)],
                         tables=[("Table <1>", df.with_columns(pl.lit("=evil()").alias("note")))],
                         provenance=prov, simulated=simulated)


def test_html_is_self_contained_and_labelled():
    html = report.to_html(_report(True)).decode()
    assert not re.search(r"<script[^>]+src=[\"']?https?:", html)
    assert '"family"' in html and "Qwen" in html  # the chart spec and its data are inline
    assert html_mod.escape(report.SIM_LABEL) in html and "Test &lt;report&gt;" in html and "Table &lt;1&gt;" in html
    assert "<h2>Provenance</h2>" in html


def test_html_without_simulated_rows_has_no_label():
    assert html_mod.escape(report.SIM_LABEL) not in report.to_html(_report(False)).decode()


def test_pdf_has_a_text_page_and_a_chart_page():
    data = report.to_pdf(_report(True))
    assert data[:5] == b"%PDF-"
    pdf = PdfReader(io.BytesIO(data))
    assert len(pdf.pages) == 2
    text = pdf.pages[0].extract_text()
    assert "SIMULATED" in text and "Output throughput" in text and "r1" in text


def _outside_scripts(html: str) -> str:
    """The document a reader sees: everything but the contents of <script> elements."""
    return re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S | re.I)


def test_html_header_filters_and_tables_are_in_the_document_not_inside_the_inline_script():
    # the inline vega-embed bundle contains "<body>" and "</head>" in its own strings: a report that put its
    # header after the first "<body>" hid title, label, filters and tables inside the JavaScript
    page = _outside_scripts(report.to_html(_report(True)).decode())
    assert "<h1>Test &lt;report&gt;</h1>" in page and html_mod.escape(report.SIM_LABEL) in page
    assert "<h2>Filters</h2>" in page and "<h2>Table &lt;1&gt;</h2>" in page and "<h2>Provenance</h2>" in page
    assert page.index("<h1>") < page.index('id="vis"') < page.index("<h2>Table")  # title, charts, tables


def test_html_report_keeps_hostile_chart_data_inside_its_script():
    df = pl.DataFrame({"shard": ["</script><script>alert(1)</script>"], "v": [1.0]})
    r = report.Report(title="t", filters={}, charts=[("c", alt.Chart(df.to_arrow()).mark_bar().encode(
        x="shard:N", y="v:Q"))], tables=[("t", df)])
    html = report.to_html(r).decode()
    assert "<script>alert(1)" not in html and "&lt;/script&gt;&lt;script&gt;alert(1)" in html


def test_pdf_tables_line_up_in_a_fixed_width_font_with_rounded_numbers():
    df = pl.DataFrame({"family": ["Qwen", "Gemma"], "workload": ["code", "chat"], "value": [94.2417, 153.0481],
                       "verdict": ["clear winner", "tie (2 tied)"]})
    lines = report.table_lines(df)
    assert lines[0].split() == ["family", "workload", "value", "verdict"]
    assert lines[2].split()[2:4] == ["94.2", "clear"] and lines[3].split()[2] == "153.0"  # one format per column
    assert len({ln.index(ln.split()[3]) for ln in (lines[0], lines[2], lines[3])}) == 1  # columns line up
    text = PdfReader(io.BytesIO(report.to_pdf(report.Report(title="T", filters={}, tables=[("Cells", df)])))
                     ).pages[0].extract_text()
    assert "94.2" in text and "94.2417" not in text and "clear winner" in text


def test_a_wide_long_table_splits_into_column_groups_and_renders_fast():
    import time

    wide = pl.DataFrame({"family": ["Qwen"] * 250, "workload": ["code"] * 250,
                         **{f"column_{i}": [f"value {i} " * 3] * 250 for i in range(12)}})
    lines = report.table_lines(wide)
    heads = [ln for ln in lines if ln.startswith("family")]
    assert len(heads) > 1 and all(h.split()[:2] == ["family", "workload"] for h in heads)  # keys repeated
    assert max(len(ln) for ln in lines) <= report.pdf.CHARS_PER_LINE
    assert any("50 more rows" in ln for ln in lines)  # capped at MAX_TABLE_ROWS, and says so
    t = time.perf_counter()
    data = report.to_pdf(report.Report(title="T", filters={}, tables=[("Wide", wide)], simulated=True))
    assert time.perf_counter() - t < 3  # text pages are written directly (the Data page's report took ~60 s)
    pdf = PdfReader(io.BytesIO(data))
    assert len(pdf.pages) > 2 and "SIMULATED" in pdf.pages[0].extract_text()


def test_pdf_chart_pages_carry_their_name_and_the_simulated_label():
    pdf = PdfReader(io.BytesIO(report.to_pdf(_report(True))))
    chart_page = pdf.pages[-1].extract_text()
    assert "SIMULATED DATA" in chart_page and "c1" in chart_page
    assert "SIMULATED" not in PdfReader(io.BytesIO(report.to_pdf(_report(False)))).pages[-1].extract_text()
