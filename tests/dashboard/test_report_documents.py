"""The Winners and Your-traffic reports end to end: documents from a real store (a copy of the default store
whose family and workload names carry non-ASCII characters) and a real sample trace, summaries from
analysis.report, rendered as PDF and HTML; pages go through pdftoppm, the text layer through pypdf."""

from __future__ import annotations

import html as html_mod
import shutil
from pathlib import Path

import pytest

from analysis import frames
from analysis.rescore import summary as rescore_summary
from analysis.rescore.core import RescoreOptions, rescore
from analysis.winners import winners as winners_doc
from dashboard import report
from ingest import store
from ingest.traces import read_trace
from tests.dashboard.test_report import commands_in, pdf_pngs, pdf_text

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "traces"
FAMILY = "Qwen–Müller·ß"
WORKLOAD = "chät ≈ code"


@pytest.fixture(scope="module")
def unicode_store(default_db, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("unicode") / "store.duckdb"
    shutil.copy(default_db, path)
    con = store.connect(path, read_only=False)
    con.execute("UPDATE cells SET family = ? WHERE family = ?", [FAMILY, "Qwen"])
    con.execute("UPDATE cells SET workload = ? WHERE workload = ?", [WORKLOAD, "code"])
    con.close()
    return path


@pytest.fixture(scope="module")
def unicode_doc(unicode_store) -> dict:
    con = store.connect(unicode_store, read_only=True)
    try:
        return winners_doc(con, "output_throughput", frames.Filters(concurrency=(16,), gpus=("MI355X",)))
    finally:
        con.close()


def _recommended(c: dict) -> str:
    """The command a cell's answer deploys: the clear winner's, else the sensible pick's."""
    return (c["deploy"] if c.get("verdict", "clear") == "clear" else c["pick"]["deploy"])["command"]


def _winners_report(doc: dict, fonts: str) -> tuple[report.Report, dict]:
    fams = sorted({c["family"] for c in doc["cells"]})
    wls = sorted({c["workload"] for c in doc["cells"]})
    r = report.winners_report(doc, report.View("output_throughput", "Output throughput (tok/s)", 16), ["MI355X"],
                              fams, wls, {"Metric": "Output throughput", "SLO: TTFT ≤ (ms)": "2000"}, None)
    r.fonts = fonts
    return r, doc


@pytest.mark.parametrize("fonts", ["auto", "bundled"])
def test_winners_report_pdf_carries_every_command_and_the_unicode_names(unicode_doc, fonts, tmp_path):
    r, doc = _winners_report(unicode_doc, fonts)
    data = report.to_pdf(r)
    pages = pdf_text(data)
    assert len(pdf_pngs(data, tmp_path)) == len(pages)
    whole = commands_in("\n".join(pages))
    assert {c["family"] for c in doc["cells"]} >= {FAMILY} and {c["workload"] for c in doc["cells"]} >= {WORKLOAD}
    assert "Question" in pages[0] and "Answer" in pages[0] and commands_in(pages[0]).count("vllm serve ") >= 1
    for c in doc["cells"]:  # every answer's whole deploy command, every group's name, as written
        assert _recommended(c) in whole
        # the model names the group (a longer name than the family's: the cell may wrap it)
        assert f"MI355X · {c['model'].rsplit('/', 1)[-1]} · {c['workload']}" in " ".join(whole.split())
        w = c["winner"]
        assert (f"{w['method']}·{w['depth']}" if w["method"] != "none" else "none") in whole
    assert "SLO" not in whole and "Figure 1. MI355X winners — the pick per model × workload" in whole
    flat = " ".join(whole.split())  # a narrow column wraps its title
    # the gain only with its certainty (one vocabulary), the verdict and pick with its chance
    assert "Model family" in flat and "Pick vs none [95 % interval]" in flat and "gain_vs_none_pct" not in flat
    assert "Verdict · pick (p)" in flat


def test_winners_report_html_has_the_same_structure(unicode_doc):
    r, doc = _winners_report(unicode_doc, "auto")
    page = report.to_html(r).decode()
    for c in doc["cells"]:
        assert html_mod.escape(_recommended(c)) in page
    assert html_mod.escape(FAMILY) in page and html_mod.escape(WORKLOAD) in page
    assert "<th>Model family</th>" in page and "<th>family</th>" not in page and "SLO" not in page
    assert page.index("<h2>Question</h2>") < page.index("<figure>") < page.index("<h2>MI355X winners</h2>")


def test_traffic_report_pdf_has_the_whole_deploy_command_on_page_one(default_db, tmp_path):
    con = store.connect(default_db, read_only=True)
    try:
        doc = rescore(con, read_trace(SAMPLES / "azure_code.csv").frame,
                      RescoreOptions(families=("Qwen",), gpus=("MI355X",), draft_models={
                          "dspark": "/models/drafters/Qwen3.5-397B-A17B-dspark-drafter-final-checkpoint",
                          "dflash": "/models/drafters/Qwen3.5-397B-A17B-dflash-drafter-final-checkpoint",
                          "eagle3": "/models/drafters/Qwen3.5-397B-A17B-eagle3-drafter-final-checkpoint"}))
    finally:
        con.close()
    tables = [("Recommendations", rescore_summary.recommendations(doc).drop("vllm_args", "command"))]
    r = report.traffic_report(doc, report.View("output_throughput", "Output throughput"), "azure_code.csv",
                              {"Metric": "Output throughput", "SLO: TPOT ≤ (ms)": "50"}, [], tables, None)
    data = report.to_pdf(r)
    pages = pdf_text(data)
    assert len(pdf_pngs(data, tmp_path)) == len(pages)
    for rec in doc["recommendations"]:
        cmd = rec["deploy"]["command"]
        assert len(cmd) > 100 and cmd in commands_in(pages[0])  # whole, not `{"method":"dspark…`
    assert "today's mtp·3" in pages[0] and "SLO" not in "".join(pages)
    flat = " ".join(" ".join(pages).split())
    assert "Gain vs default (%)" in flat and "gain_vs_default_pct" not in flat
