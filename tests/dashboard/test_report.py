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
