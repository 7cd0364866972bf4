"""The words of a winners cell (analysis.vocabulary): verdict, pick with its chance, the gain only with its
certainty, the chances of the top candidates — from the document's own figures, on hand-set and real cells."""

from __future__ import annotations

from pathlib import Path

from analysis import vocabulary
from analysis.winners import winners
from ingest import store


def _cell(verdict: str, pick: tuple[str, int, float | None], gain: float | None, ci: list | None) -> dict:
    return {"winner": {"method": "mtp", "depth": 6, "p_best": 0.4}, "clear": verdict == "clear", "verdict": verdict,
            "p_best_winner": 0.4,
            "pick": {"method": pick[0], "depth": pick[1], "p_best": pick[2], "reason": "shallowest",
                     "gain_vs_none_pct": gain, "gain_vs_none_ci_pct": ci},
            "candidates": [{"method": "mtp", "depth": 6, "p_best": 0.4}, {"method": "mtp", "depth": 4, "p_best": 0.35},
                           {"method": "dspark", "depth": 8, "p_best": 0.2}, {"method": "none", "depth": 0,
                                                                             "p_best": 0.05}]}


def test_a_tie_names_its_pick_with_its_chance_and_a_gain_with_its_interval():
    w = vocabulary.cell_words(_cell("tie", ("mtp", 4, 0.35), 38.2, [21.0, 55.4]))
    assert w.headline == "tie · pick mtp·4 (p 0.35)" and w.best == "mtp·6" and w.why == "shallowest"
    assert w.gain == "+38 % [+21, +55]"
    assert w.chances == "mtp·6 p 0.40, mtp·4 p 0.35, dspark·8 p 0.20"


def test_a_gain_whose_interval_includes_zero_is_not_separable_and_none_never_claims_a_gain():
    assert vocabulary.cell_words(_cell("tie", ("mtp", 4, 0.35), 9.0, [-3.0, 20.0])).gain == "not separable from none"
    assert vocabulary.cell_words(_cell("tie", ("none", 0, 0.05), None, None)).gain == "no speculation"
    assert vocabulary.gain_short(5.0, None) == "+5.0 % (no interval)"
    assert vocabulary.p_text(None) == "p ?"


def test_a_clear_cell_says_clear_and_the_verdicts_present_keep_legend_order():
    c = _cell("clear", ("mtp", 6, 0.97), 50.0, [30.0, 70.0])
    assert vocabulary.cell_words(c).headline == "clear · pick mtp·6 (p 0.97)"
    assert vocabulary.cell_words(c).why == "clear winner"
    assert vocabulary.verdicts_present([_cell("tie", ("mtp", 4, 0.3), 1, [0, 2]), c]) == ["clear", "tie"]


def test_every_default_cell_has_words_that_agree_with_its_document(default_db: Path):
    with store.session(default_db, read_only=True) as con:
        doc = winners(con, "output_throughput")
    for c in doc["cells"]:
        w = vocabulary.cell_words(c)
        assert w.verdict == c["verdict"] and w.pick == c["pick"]["label"]
        assert w.pick_p == c["pick"].get("p_best")
        ci = c["pick"].get("gain_vs_none_ci_pct")
        if c["pick"]["method"] != "none" and ci:
            assert (w.gain == vocabulary.NOT_SEPARABLE) == (ci[0] <= 0 <= ci[1])
            assert w.gain == vocabulary.NOT_SEPARABLE or "[" in w.gain
