"""Acceptance provenance in the winners document and CLI: each candidate says where its acceptance came from
(per-request | counters) and, when the per-request sums disagreed with the counters, why it is suspect; a
synthetic-acceptance cost cell never wins; the drill-down lists the suspects."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from analysis.drilldown import Group, candidates, suspects
from analysis.winners import winners
from ingest import store
from ingest.records import CellKey, RunInfo, SpecCounters, conform_requests
from tests.conftest import cli


def _requests(n: int, e2e: float, steps: int = 10) -> pl.DataFrame:
    return conform_requests(pl.DataFrame({
        "request_index": list(range(n)), "output_tokens": [32] * n, "ttft_ms": [5.0] * n, "tpot_ms": [1.0] * n,
        "e2e_ms": [e2e + i * 0.01 for i in range(n)], "start_s": [0.0] * n, "ok": [True] * n,
        "spec_steps": [steps] * n, "drafted_tokens": [3 * steps] * n, "accepted_tokens": [2 * steps] * n,
        "accepted_per_pos": [[steps, steps, 0]] * n}))


def _store(tmp: Path) -> Path:
    db = tmp / "s.duckdb"
    with store.session(db) as con:
        store.write_run(con, RunInfo("R", "vllm", "m.toml"))
        good = _requests(20, 100.0)
        counters = SpecCounters(drafts=200, draft_tokens=600, accepted_tokens=400, accepted_per_pos=[200, 200, 0])
        store.write_cell(con, "R", CellKey("ngram", 3, "F", "m", "code", "cpu", 1), good, window_s=10.0,
                         gpu_count=1, counters=counters)
        off = SpecCounters(drafts=230, draft_tokens=690, accepted_tokens=430, accepted_per_pos=[230, 200, 0])
        store.write_cell(con, "R", CellKey("eagle3", 3, "F", "m", "code", "cpu", 1), _requests(20, 120.0),
                         window_s=12.0, gpu_count=1, counters=off)
        # a synthetic cost cell with the highest throughput must not win
        store.write_cell(con, "R", CellKey("eagle3", 3, "F", "m", "code", "cpu", 1, synthetic_rates=(1.0, 1.0, 1.0)),
                         _requests(20, 10.0), window_s=1.0, gpu_count=1)
    return db


def test_candidates_carry_acceptance_source_and_suspect_reason(tmp_path: Path) -> None:
    db = _store(tmp_path)
    with store.session(db, read_only=True) as con:
        doc = winners(con, "output_throughput")
        ranked = candidates(con, Group("cpu", "F", "code", 1), "output_throughput")
    (cell,) = doc["cells"]
    assert (cell["winner"]["method"], cell["winner"]["acceptance_source"]) == ("ngram", "per-request")
    assert cell["winner"]["acceptance_suspect"] is None
    eagle = next(c for c in cell["top3"] if c["method"] == "eagle3")
    assert eagle["acceptance_suspect"].startswith("per-request verify steps sum 200 != /metrics counter delta 230")
    assert len(cell["top3"]) == 2, "the synthetic cost cell is no candidate"
    assert ranked.height == 2 and [label for label, _ in suspects(ranked)] == ["eagle3·3"]


def test_the_cli_says_why_an_acceptance_is_suspect(tmp_path: Path) -> None:
    db = _store(tmp_path)
    res = cli("analysis", "winners", "--db", str(db))
    assert res.returncode == 0, res.stderr
    assert "acceptance suspect (eagle3·3): per-request verify steps sum 200 != /metrics counter delta 230" in res.stdout
    doc = json.loads(cli("analysis", "winners", "--db", str(db), "--json").stdout)
    assert {c["method"]: c["acceptance_source"] for c in doc["cells"][0]["top3"]} == {"ngram": "per-request",
                                                                                     "eagle3": "per-request"}
