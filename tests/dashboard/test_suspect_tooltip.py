"""A suspect acceptance is said in the heatmap tooltip (the drill-down shows it as a warning)."""

from __future__ import annotations

from dashboard.charts import winner_rows


def _cand(method: str, value: float, suspect: str | None = None) -> dict:
    return {"method": method, "depth": 3, "value": value, "ci_low": value - 1, "ci_high": value + 1,
            "acceptance_source": "per-request", "acceptance_suspect": suspect}


def test_the_tooltip_names_a_suspect_acceptance_and_its_reason() -> None:
    doc = {"metric": "output_throughput", "cells": [{
        "gpu": "cpu", "family": "F", "workload": "code", "concurrency": 1, "winner": _cand("ngram", 10.0),
        "clear": True, "tied": [], "gain_vs_none_pct": None, "backend": "vllm",
        "top3": [_cand("ngram", 10.0), _cand("eagle3", 8.0, "per-request verify steps sum 200 != 230")]}]}
    row = winner_rows(doc).row(0, named=True)
    assert "suspect" not in row["top1"]
    assert row["top2"].endswith("(acceptance suspect: per-request verify steps sum 200 != 230)")
