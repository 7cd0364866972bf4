"""The drift report between two runs in words (analysis/compare_markdown.py), on a real comparison of the default
store's runs and on the rules themselves."""

from __future__ import annotations

from analysis.compare import CompareOptions, compare_runs, resolve_run
from analysis.compare_markdown import fmt, movers, pair, to_markdown
from ingest import store


def _cell(delta: float, significant: bool) -> dict:
    return {"metrics": {"output_throughput": {"significant": significant, "delta_pct": delta}}}


def test_movers_are_the_significant_changes_largest_first():
    report = {"cells": [_cell(1.0, True), _cell(-9.0, True), _cell(50.0, False), _cell(4.0, True)]}
    top = movers(report, "output_throughput", 2)
    assert [c["metrics"]["output_throughput"]["delta_pct"] for c in top] == [-9.0, 4.0]


def test_labels():
    assert fmt(None) == "–" and fmt(2.345, pct=True) == "+2.3 %" and fmt(1234.5) == "1234"
    assert pair({"method": "none", "depth": 0}) == "none" and "3" in pair({"method": "mtp", "depth": 3})


def test_a_real_report_in_markdown(default_db):
    with store.connect(default_db, read_only=True) as con:
        run_b = resolve_run(con, "latest")
        run_a = resolve_run(con, "previous", before=run_b)
        report = compare_runs(con, run_a, run_b, CompareOptions())
    text = to_markdown(report)
    assert text.startswith(f"# spectune drift report: {run_b} vs {run_a}")
    assert f"winners changed: {report['winners_changed']}" in text
    assert ("No winner changed" in text) == (not report["retune"])
