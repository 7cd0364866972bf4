"""The candidate and tax tables of a re-scoring document: gains relative to each shard's default, in the metric's
good direction — checked on a hand-written document and on a real re-scoring of a synthetic store."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.rescore import RescoreOptions, rescore
from analysis.rescore import summary as rescore_summary
from analysis.rescore.config import Choice
from ingest import store
from tests.analysis.rescore.test_core import _trace, synthetic_store


def _cand(shard: str, method: str, depth: int, value: float, is_default: bool = False) -> dict:
    return {"family": "Qwen", "gpu": "MI355X", "shard": shard, "method": method, "depth": depth, "value": value,
            "is_default": is_default}


def _gains(doc: dict) -> dict[tuple[str, str], float]:
    frame = rescore_summary.candidates(doc)
    return {(r["shard"], r["candidate"]): r["gain_vs_default_pct"] for r in frame.iter_rows(named=True)}


def test_gains_of_a_hand_written_document():
    cands = [_cand("a", "mtp", 3, 100.0, True), _cand("a", "eagle3", 2, 150.0), _cand("a", "none", 0, 80.0),
             _cand("b", "none", 0, 200.0, True), _cand("b", "mtp", 3, 250.0)]
    gains = _gains({"higher_is_better": True, "candidates": cands})
    assert gains == pytest.approx({("a", "mtp·3"): 0.0, ("a", "eagle3·2"): 50.0, ("a", "none"): -20.0,
                                   ("b", "none"): 0.0, ("b", "mtp·3"): 25.0})
    # latency: lower is better, so halving it is +100 % (the default's value is twice the candidate's)
    lat = [_cand("a", "mtp", 3, 200.0, True), _cand("a", "eagle3", 2, 100.0), _cand("a", "none", 0, 250.0)]
    assert _gains({"higher_is_better": False, "candidates": lat}) == pytest.approx(
        {("a", "mtp·3"): 0.0, ("a", "eagle3·2"): 100.0, ("a", "none"): -20.0})
    assert rescore_summary.candidates({"higher_is_better": True, "candidates": []}).height == 0


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    db = synthetic_store(tmp_path_factory.mktemp("summary") / "s.duckdb",
                         {("none", 0): 20.0, ("eagle3", 3): 10.0, ("mtp", 3): 12.0, ("dflash", 2): 5.0})
    with store.session(db, read_only=True) as c:
        return rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3)))


def test_the_default_gains_nothing_and_the_winner_gains_what_the_recommendation_says(doc: dict):
    frame = rescore_summary.candidates(doc)
    (rec,) = doc["recommendations"]
    assert (rec["method"], rec["depth"]) == ("dflash", 2) and rec["gain_vs_default_pct"] > 50
    shard = frame.filter(frame["shard"] == rec["shard"])
    default = shard.filter(shard["is_default"])
    assert default["candidate"].to_list() == ["mtp·3"] and default["gain_vs_default_pct"].to_list() == [0.0]
    winner = shard.filter(shard["candidate"] == "dflash·2")
    # the document rounds to 0.01
    assert winner["gain_vs_default_pct"][0] == pytest.approx(rec["gain_vs_default_pct"], abs=0.006)
    # every candidate's gain is its value against the default's, computed here from the document's values
    base = default["value"][0]
    for r in shard.iter_rows(named=True):
        assert r["gain_vs_default_pct"] == pytest.approx((r["value"] / base - 1) * 100)
    slower = shard.filter(shard["candidate"] == "none")["gain_vs_default_pct"][0]
    assert slower < 0  # 20 ms TPOT against the default's 12: a loss


def test_the_tax_table_is_the_recommendations_gain_per_shard(doc: dict):
    tax = rescore_summary.tax(doc)
    (rec,) = doc["recommendations"]
    assert tax.to_dicts() == [{"family": rec["family"], "gpu": rec["gpu"], "shard": rec["shard"], "method": "dflash",
                               "depth": 2, "gain_vs_default_pct": rec["gain_vs_default_pct"],
                               "gain_ci_low": rec["gain_ci_pct"][0], "gain_ci_high": rec["gain_ci_pct"][1],
                               "requests": rec["requests"]}]
    lo, hi = rec["gain_ci_pct"]
    assert lo < rec["gain_vs_default_pct"] < hi


def test_a_shard_without_its_default_keeps_its_candidates_without_a_gain():
    cands = [_cand("a", "mtp", 3, 100.0, True), _cand("a", "eagle3", 2, 150.0), _cand("c", "eagle3", 2, 90.0)]
    frame = rescore_summary.candidates({"higher_is_better": True, "candidates": cands})
    assert frame.height == 3
    assert frame.filter(frame["shard"] == "c")["gain_vs_default_pct"].to_list() == [None]


def test_columns_empty_in_the_first_hundred_candidates_keep_their_later_values():
    """Goodput is only scored under an SLO; a document may carry it only for later shards."""
    cands = [{**_cand(f"s{i}", "mtp", 3, 100.0, True), "goodput": None} for i in range(120)]
    cands[-1]["goodput"] = 1.5
    frame = rescore_summary.candidates({"higher_is_better": True, "candidates": cands})
    assert frame.height == 120 and frame["goodput"].to_list()[-1] == 1.5


def test_a_latency_gain_is_the_defaults_latency_over_the_winners(tmp_path: Path):
    """Lower is better: the gain is default / winner − 1 (a winner at half the default's p99 gains +100 %)."""
    db = synthetic_store(tmp_path / "s.duckdb", {("none", 0): 20.0, ("mtp", 3): 12.0, ("dflash", 2): 5.0})
    with store.session(db, read_only=True) as c:
        doc = rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3), metric="p99_e2e_ms"))
    (rec,) = doc["recommendations"]
    assert not doc["higher_is_better"] and (rec["method"], rec["depth"]) == ("dflash", 2)
    value = {(x["method"], x["depth"]): x["value"] for x in doc["candidates"]}
    want = (value[("mtp", 3)] / value[("dflash", 2)] - 1) * 100
    assert want > 0 and rec["gain_vs_default_pct"] == pytest.approx(want, abs=0.01)


def test_a_depth_schedule_is_named_by_its_ranges_and_other_candidates_by_the_notation():
    """Candidates carry a ``label`` only when they follow a depth schedule; the rest are named method·depth."""
    sched = {**_cand("a", "mtp", 4, 120.0), "label": "mtp·1-8→4,9-64→2"}
    cands = [{**_cand("a", "mtp", 3, 100.0, True), "label": None}, sched,
             {**_cand("a", "none", 0, 80.0), "label": None}]
    frame = rescore_summary.candidates({"higher_is_better": True, "candidates": cands})
    assert frame["candidate"].to_list() == ["mtp·3", "mtp·1-8→4,9-64→2", "none"]
    assert frame["gain_vs_default_pct"].to_list() == pytest.approx([0.0, 20.0, -20.0])
