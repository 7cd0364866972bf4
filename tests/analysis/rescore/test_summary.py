"""The candidate and tax tables of a re-scoring document: gains relative to each shard's default, in the metric's
good direction — checked on a hand-written document and on a real re-scoring of a synthetic store."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.rescore import summary as rescore_summary
from analysis.rescore.config import Choice
from analysis.rescore.core import RescoreOptions, rescore
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


def test_the_answer_reads_in_words_not_symbols():
    """A schedule is said as depths at batch ranges; a gain with its 95 % interval in words; a tie names the tied
    configurations with their chances (issue 27: "dspark·1-4→8,5-32→6" and "→ static" could not be decoded)."""
    from analysis.rescore.summary import recommendation_words, schedule_words

    sched = [[1, 4, 8], [5, 32, 6], [33, 64, 3]]
    svs = {"static": {"method": "dspark", "depth": 6}, "scheduled": {"method": "dspark", "schedule": sched},
           "gain_pct": 1.7, "gain_ci_pct": [0.3, 4.7], "chosen": "static", "rule": "the schedule is chosen only when …"}
    assert schedule_words(svs) == ("a depth schedule for dspark (8 at batch 1–4, 6 at 5–32, 3 at 33–64) would add "
                                   "1.7 % (95 % interval +0.3 to +4.7 %) against static dspark·6; we recommend static "
                                   "dspark·6 (the schedule is chosen only when …)")
    r = {"method": "dspark", "depth": 8, "schedule": sched, "gain_vs_default_pct": 19.0, "gain_ci_pct": [2.5, 31.0],
         "gain_vs_default_text": "+19 % [+2.5, +31] vs mtp·3 (default)", "clear": False, "p_best": 0.4,
         "tied": [{"method": "dspark", "depth": 8, "schedule": sched, "p_best": 0.4},
                  {"method": "dspark", "depth": 6, "schedule": None, "p_best": 0.3}]}
    text = recommendation_words(r)
    assert text == ("run dspark with a depth schedule (8 at batch 1–4, 6 at 5–32, 3 at 33–64) (p 0.40): +19 % over "
                    "your default (95 % interval +2.5 to +31 %); tie with dspark·6 (p 0.30): any of them is as good")
    assert "→" not in text and "-4" not in text
    r.update(gain_ci_pct=[-1.0, 3.0], gain_vs_default_pct=1.0, clear=True, tied=[], schedule=None)
    assert recommendation_words(r) == ("run dspark·8: not separable from your default (+1.0 %, 95 % interval -1.0 "
                                       "to +3.0 %); clear (p 0.40)")
