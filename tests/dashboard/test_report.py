"""Reports: the PDF (ReportLab) and the offline HTML share one structure — summary page, filters that apply,
charts inline with captions, human-titled tables, provenance. The PDFs are rendered to PNG with pdftoppm and
their text layer read with pypdf: the whole deploy command and every non-ASCII label must come back unchanged,
with the system's DejaVu and with the Vera fonts inside the reportlab wheel (a requirements.txt-only machine)."""

from __future__ import annotations

import html as html_mod
import io
import re
import shutil
import subprocess
from pathlib import Path

import altair as alt
import polars as pl
import pytest
from PIL import Image
from pypdf import PdfReader

from analysis.report.document import Answer, Summary
from dashboard import report

COMMAND = ("vllm serve Qwen/Qwen3.5-397B-A17B --tensor-parallel-size 2 --speculative-config "
           "'{\"method\":\"dspark\",\"num_speculative_tokens\":8,\"model\":\"/models/drafters/qwen3.5-397b-dspark"
           "-drafter-checkpoint-final\"}'")
FAMILY = "Qwen–Müller"  # en dash, umlaut
WORKLOAD = "résumé·chat"


def _summary() -> Summary:
    return Summary(question="Which method and depth is fastest?",
                   answers=(Answer(group=f"MI355X · {FAMILY} · {WORKLOAD}", candidate="dflash·5",
                                   gain="+29.4 % vs none (95 % interval −3.1 % to +72.6 %)",
                                   confidence="tie with eagle3·2: dflash·5 ≈ eagle3·2 within the 95 % interval",
                                   command=COMMAND, notes=("a note",)),),
                   sources=("24 of 24 answers simulated.",))


def _report(simulated: bool = True, metric: str = "output_throughput", fonts: str = "auto") -> report.Report:
    df = pl.DataFrame({"family": [FAMILY, "Gemma"], "workload": [WORKLOAD, "code"], "method": ["dflash", "none"],
                       "depth": [5, 0], "gain_vs_none_pct": [29.4417, 0.0], "tied": ["dflash·5 ≈ eagle3·2", ""]})
    chart = alt.Chart(df.to_arrow()).mark_bar().encode(x="family:N", y="gain_vs_none_pct:Q")
    prov = pl.DataFrame({"run_id": ["r1"], "backend": ["sim" if simulated else "vllm"], "cells": [2]})
    return report.Report(title="Test <report>", filters={"Metric": "Output throughput", "Depths": "1–8",
                                                         "SLO: TTFT ≤ (ms)": "2000"},
                         charts=[("c1", chart, "gain per family")],
                         tables=[("Table <1>", df.with_columns(pl.lit("=evil()").alias("note")))],
                         provenance=prov, simulated=simulated, summary=_summary(), metric=metric, fonts=fonts)


def _outside_scripts(html: str) -> str:
    return re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S | re.I)


def pdf_text(data: bytes) -> list[str]:
    return [p.extract_text() for p in PdfReader(io.BytesIO(data)).pages]


def pdf_pngs(data: bytes, tmp_path: Path) -> list[Path]:
    """Every page rendered by poppler's pdftoppm (a real reader: a broken PDF fails here)."""
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(data)
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(tmp_path / "page")], check=True, timeout=120)
    return sorted(tmp_path.glob("page-*.png"))


def commands_in(text: str) -> str:
    """The page's text with shell continuation lines joined (what a pasted command reads as)."""
    return text.replace(" \\\n", " ")


def test_html_has_the_summary_then_filters_charts_with_captions_tables_with_human_titles():
    page = report.to_html(_report()).decode()
    assert "<script" not in page and not re.search(r"(src|href)=[\"']?https?:", page)  # offline, no script
    assert html_mod.escape(report.SIM_LABEL) in page and "<h1>Test &lt;report&gt;</h1>" in page
    order = [page.index(x) for x in ("<h2>Question</h2>", "<h2>Answer</h2>", "<h2>Where the numbers come from",
                                     "<h2>Filters</h2>", "<h2>Charts</h2>", "<figure>", "<h2>Table &lt;1&gt;",
                                     "<h2>Provenance</h2>")]
    assert order == sorted(order)
    assert html_mod.escape(COMMAND) in page  # whole, in a <pre> that wraps without cutting
    assert "<figcaption>Figure 1. c1 — gain per family</figcaption>" in page
    assert "data:image/svg+xml;base64," in page
    heads = re.findall(r"<th>(.*?)</th>", page)
    assert {"Model family", "Workload", "Candidate", "Gain vs none (%)", "Run", "Backend"} <= set(heads)
    assert not {"family", "gain_vs_none_pct", "method", "depth", "run_id"} & set(heads)
    assert "<td>dflash·5</td>" in page and "<td>none</td>" in page  # one notation
    for label in (FAMILY, WORKLOAD, "≈", "–"):
        assert label in page


def test_filters_are_listed_only_when_they_apply():
    assert "SLO: TTFT" not in report.to_html(_report(metric="output_throughput")).decode()
    assert "SLO: TTFT" in report.to_html(_report(metric="goodput")).decode()
    assert not any("SLO" in t for t in pdf_text(report.to_pdf(_report(metric="p99_e2e_ms"))))


def test_html_without_simulated_rows_has_no_label():
    assert html_mod.escape(report.SIM_LABEL) not in report.to_html(_report(False)).decode()


def test_html_report_escapes_hostile_names():
    df = pl.DataFrame({"shard": ["</script><script>alert(1)</script>"], "v": [1.0]})
    r = report.Report(title="t", filters={}, charts=[("c", alt.Chart(df.to_arrow()).mark_bar().encode(
        x="shard:N", y="v:Q"))], tables=[("t", df)])
    page = report.to_html(r).decode()
    assert "<script" not in page and "&lt;/script&gt;&lt;script&gt;alert(1)" in page


@pytest.mark.parametrize("fonts", ["auto", "bundled"])
def test_pdf_summary_page_holds_the_whole_command_and_unicode_labels(fonts, tmp_path):
    if fonts == "auto" and not report.pdf.SYSTEM_DEJAVU.is_dir():
        pytest.fail("fonts-dejavu-core is not installed (scripts/test.sh installs it)")
    data = report.to_pdf(_report(fonts=fonts))
    pages = pdf_text(data)
    first = pages[0]
    for text in ("Question", "Which method and depth is fastest?", "Answer", "dflash·5", "≈", "–", "−3.1 %",
                 FAMILY, WORKLOAD, "Where the numbers come from", "SIMULATED DATA"):
        assert text in first, text
    assert COMMAND in commands_in(first)  # whole, on page 1
    whole = "\n".join(pages)
    assert whole.index("Question") < whole.index("Filters") < whole.index("Figure 1. c1 — gain per family") \
        < whole.index("Table <1>") < whole.index("Provenance")
    assert "Model family" in whole and "Gain vs none (%)" in whole and "gain_vs_none_pct" not in whole
    assert "Depths: 1–8" in whole and "?" not in whole.replace("?\n", "").replace("fastest?", "")
    pngs = pdf_pngs(data, tmp_path)
    assert len(pngs) == len(pages)
    for png in pngs:  # every page drew something (not a blank or unreadable page)
        lo, hi = Image.open(png).convert("L").getextrema()
        assert lo < 128 < hi


def test_bundled_font_is_the_wheel_s_own_and_spells_only_what_it_lacks():
    f = report.pdf.fonts("bundled")
    assert "reportlab" in str(report.pdf.BUNDLED_VERA) and f.source.startswith("Vera")
    assert report.pdf.fit("dflash·5 ≈ – →", f) == "dflash·5 ≈ – ->"
    if report.pdf.SYSTEM_DEJAVU.is_dir():
        assert report.pdf.fit("→ τ", report.pdf.fonts("auto")) == "→ τ"


def test_pdf_chart_pages_carry_the_simulated_label_and_a_long_table_repeats_its_header(tmp_path):
    wide = pl.DataFrame({"family": ["Qwen"] * 250, "workload": ["code"] * 250,
                         **{f"column_{i}": [f"value {i} " * 3] * 250 for i in range(12)}})
    r = report.Report(title="T", filters={}, tables=[("Wide", wide)], simulated=True,
                      charts=[("c1", alt.Chart(wide.head(3).to_arrow()).mark_bar().encode(x="family:N"))])
    data = report.to_pdf(r)
    pages = pdf_text(data)
    assert len(pages) > 3 and all("SIMULATED DATA" in p for p in pages)
    assert sum(p.count("Workload") for p in pages) >= 3  # the header row repeats on every page of the table
    assert "50 more rows" in pages[-1]
    assert len(pdf_pngs(data, tmp_path)) == len(pages)
    assert not any("SIMULATED" in p for p in pdf_text(report.to_pdf(_report(False))))


def test_cells_read_as_a_reader_wants_them():
    assert report.column_texts(pl.Series([94.2417, 153.0481])) == ["94.2", "153.0"]
    assert report.cell_text(None) == "" and report.cell_text(True) == "yes" and report.cell_text(1234567) == "1,234,567"


def test_pdftoppm_is_installed():
    assert shutil.which("pdftoppm"), "poppler-utils is not installed (scripts/test.sh installs it)"
