"""The p_best winner rule (issue 27) on the default store and on real imported point figures (issue 26 item 4).

Done-when of issue 27, checked on the default data: every cell lists its candidates with p_best summing to 1;
every verdict agrees with p_best and the stated thresholds; the median tied set is ≤ 8 candidates; no cell ties
`none` next to a gain over it whose interval excludes 0. Point figures (an SGLang bench_speculative import:
no per-request samples) are judged with the stated run-to-run noise.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.frames import Filters
from analysis.gains import gain_text
from analysis.metrics import get_metric
from analysis.winners import decide, decide_groups, p_best, point_noise_replicates, winners
from ingest import store
from tests.conftest import REPO, cli

THROUGHPUT = get_metric("output_throughput")
SGLANG = REPO / "data" / "samples" / "results" / "sglang_bench_speculative.jsonl"


@pytest.fixture(scope="module")
def default_doc(default_db: Path) -> dict:
    with store.session(default_db, read_only=True) as con:
        return winners(con, "output_throughput")


def _tied_size(c: dict) -> int:
    return 1 if c["clear"] else len(c["tied"])


def _check_cell(c: dict, rule: dict) -> None:
    """One cell's verdict against its own p_best and the stated thresholds."""
    where = f"{c['gpu']}/{c['family']}/{c['workload']}/c{c['concurrency']}"
    ps = [x["p_best"] for x in c["candidates"]]
    assert all(p is not None for p in ps), where
    assert abs(sum(ps) - 1) <= 1e-9, where
    assert (c["candidates"][0]["method"], c["candidates"][0]["depth"]) == (c["winner"]["method"], c["winner"]["depth"])
    assert c["winner"]["p_best"] == c["p_best_winner"] == ps[0]
    assert c["clear"] == (ps[0] >= rule["clear_at"] - 1e-9), where
    assert (c["verdict"] == "clear") <= c["clear"], where  # "clear" never claimed below clear_at
    if c["clear"]:
        assert c["tied"] == [] and c["verdict"] in ("clear", "equivalent"), where
        return
    tied = c["tied"]
    assert (tied[0]["method"], tied[0]["depth"]) == (c["winner"]["method"], c["winner"]["depth"])
    others = tied[1:]
    reached = [t for t in others if t["p_best"] >= rule["tie_at"] - 1e-9]
    # every candidate at or above tie_at is tied; a tie below it names only its likeliest other candidate
    above = {(x["method"], x["depth"]) for x in c["candidates"][1:] if x["p_best"] >= rule["tie_at"] - 1e-9}
    above -= {("none", 0)} if _none_separated(c) else set()
    assert {(t["method"], t["depth"]) for t in reached} == above, where
    if not reached:
        assert len(others) == 1 and others[0]["p_best"] == max(x["p_best"] for x in c["candidates"][1:]), where
    assert c["verdict"] in ("tie", "equivalent"), where


def _none_separated(c: dict) -> bool:
    ci = c.get("gain_vs_none_ci_pct")
    return bool(ci) and ci[0] is not None and ci[0] > 0


def test_done_when_on_the_default_data(default_doc, capsys):
    doc = default_doc
    rule = doc["p_best_rule"]
    assert (rule["clear_at"], rule["tie_at"]) == (0.95, 0.05) and "0.95" in rule["text"]
    cells = doc["cells"]
    # the default store holds the 72 simulated cells and the published (imported) ones since realnums
    sim = [c for c in cells if c["backend"] == "sim"]
    assert len(sim) == 72 and len(cells) > 72
    for c in cells:
        _check_cell(c, rule)
        assert not (_none_separated(c) and any(t["method"] == "none" for t in c["tied"]))
    assert all(c["uncertainty"] == "bootstrap+model" for c in sim)
    sizes = [_tied_size(c) for c in cells]
    median = statistics.median(sizes)
    clear = sum(c["clear"] for c in cells)
    with capsys.disabled():
        print(f"\np_best on the default data: median tied set {median:g} of "
              f"{statistics.median(len(c['candidates']) for c in cells):g} candidates (max {max(sizes)}); "
              f"clear cells {clear} of {len(cells)}; verdicts "
              f"{ {v: sum(c['verdict'] == v for c in cells) for v in ('clear', 'equivalent', 'tie')} }")
    assert median <= 8


def test_every_gain_says_its_interval_and_reads_not_separable_when_it_includes_zero(default_doc):
    for c in default_doc["cells"]:
        for holder in (c, c["pick"]):
            gain, ci, text = holder["gain_vs_none_pct"], holder["gain_vs_none_ci_pct"], holder["gain_vs_none_text"]
            who = c["winner"] if holder is c else c["pick"]
            if who["method"] == "none":
                assert text == "no speculation is the best point estimate"
                continue
            assert gain is not None and ci is not None and ci[0] <= ci[1]
            if ci[0] <= 0 <= ci[1]:
                assert text.startswith("not separable from no speculation (")
            else:
                assert text.endswith("vs none") and text.startswith(f"{gain:+.0f}" if abs(gain) >= 10 else "+")
        d = c["default"]
        if d is not None and (d["method"], d["depth"]) != (c["pick"]["method"], c["pick"]["depth"]):
            lo, hi = d["pick_gain_ci_pct"]
            assert ("not separable from mtp·3 (your default)" in d["pick_gain_text"]) == (lo <= 0 <= hi)


def test_the_tie_sentence_says_each_named_candidates_chance(default_doc):
    c = next(c for c in default_doc["cells"] if c["verdict"] == "tie")
    chances = sorted((t["p_best"] for t in c["tied"]), reverse=True)
    assert c["tie_text"].startswith("tie: ")
    assert f"(p {chances[0]:.2f})" in c["tie_text"].split(" and ")[0]
    assert f"— pick {c['pick']['label']} (" in c["tie_text"]


def test_thresholds_are_settable_and_stated(default_db: Path):
    with store.session(default_db, read_only=True) as con:
        loose = winners(con, "output_throughput", Filters(concurrency=(1,)), clear_at=0.1, tie_at=0.1)
        for bad in ({"clear_at": 0.0}, {"clear_at": 0.5, "tie_at": 0.6}, {"tie_at": -0.1}):
            with pytest.raises(ValueError):
                winners(con, "output_throughput", Filters(concurrency=(1,)), **bad)
    assert loose["p_best_rule"]["clear_at"] == 0.1 and loose["p_best_rule"]["tie_at"] == 0.1
    for c in loose["cells"]:
        _check_cell(c, loose["p_best_rule"])
    assert any(c["clear"] for c in loose["cells"])  # some winner is best in ≥ 10 % of the draws


def test_best_depth_mode_computes_p_best_among_each_methods_best_depth(default_db: Path):
    with store.session(default_db, read_only=True) as con:
        doc = winners(con, "output_throughput", Filters(concurrency=(1,)), best_depth_per_method=True)
    for c in doc["cells"]:
        methods = [x["method"] for x in c["candidates"]]
        assert len(methods) == len(set(methods))  # one candidate per method
        _check_cell(c, doc["p_best_rule"])


def test_goodput_gets_p_best_from_its_binomial_replicates(default_db: Path):
    with store.session(default_db, read_only=True) as con:
        doc = winners(con, "goodput", Filters(concurrency=(16,), gpus=("MI300X",)))
    assert doc["cells"]
    for c in doc["cells"]:
        _check_cell(c, doc["p_best_rule"])
        assert c["uncertainty"] == "bootstrap"


def _sglang_store(tmp_path: Path) -> Path:
    db = tmp_path / "point.duckdb"
    store.connect(db).close()
    res = cli("ingest", "results", str(SGLANG), "--set", "method=eagle3", "--set", "family=Qwen", "--set",
              "model=Qwen/Qwen3-8B", "--set", "workload=chat", "--set", "gpu=MI300X", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    return db


def test_point_figures_are_judged_with_the_stated_noise(tmp_path: Path):
    """SGLang's table has no per-request samples. With σ = 3 %: at c=4 eagle3·5 is 8.8 % ahead of eagle3·3 —
    clear; at c=16 eagle3·3 and eagle3·5 are 0.6 % apart — equivalent; at c=1, 2.9 % apart — a tie with both
    chances said. σ = 0 makes every best clear; σ = 10 % makes the 8.8 % lead a tie."""
    db = _sglang_store(tmp_path)
    with store.session(db, read_only=True) as con:
        docs = {pct: winners(con, "output_throughput", point_noise_pct=pct) for pct in (3.0, 0.0, 10.0)}
        again = winners(con, "output_throughput")
    doc = docs[3.0]
    assert doc["point_noise_pct"] == 3.0 and doc["backends"] == ["import"]
    by = {c["concurrency"]: c for c in doc["cells"]}
    for c in doc["cells"]:
        _check_cell(c, doc["p_best_rule"])
        assert c["uncertainty"] == "stated noise σ=3%"
        assert all(x["uncertainty"] == "stated noise σ=3%" for x in c["candidates"])
    assert by[4]["verdict"] == "clear" and by[4]["clear"]
    assert by[16]["verdict"] == "equivalent" and by[16]["pick"]["label"] == "eagle3·3"
    assert by[1]["verdict"] == "tie" and len(by[1]["tied"]) == 2
    assert [x["p_best"] for x in again["cells"][0]["candidates"]] == [
        x["p_best"] for x in doc["cells"][0]["candidates"]]  # seeded from the cell id: the same on every run
    assert all(c["clear"] for c in docs[0.0]["cells"])
    assert not {c["concurrency"]: c for c in docs[10.0]["cells"]}[4]["clear"]
    assert docs[10.0]["cells"][0]["uncertainty"] == "stated noise σ=10%"


def test_point_noise_replicates_fill_only_rows_without_any():
    values = np.array([100.0, 50.0, np.nan])
    reps = np.vstack([np.full(200, 101.0), np.full(200, np.nan), np.full(200, np.nan)])
    out, filled = point_noise_replicates(values, reps, ["a", "b", "c"], 3.0)
    assert filled.tolist() == [False, True, False]
    assert (out[0] == 101.0).all() and np.isnan(out[2]).all()
    log = np.log(out[1] / 50.0)
    assert abs(log.std() - 0.03) < 0.006 and abs(log.mean()) < 0.01
    out2, _ = point_noise_replicates(values, np.zeros((0, 0)), ["a", "b", "c"], 3.0)
    assert out2.shape == (3, 200) and (out2[1] == out[1]).all()  # same cell id, same draws


def test_p_best_splits_ties_ignores_empty_columns_and_nan_never_wins():
    reps = np.array([[1.0, 5.0, np.nan, 2.0],
                     [1.0, np.nan, np.nan, 3.0],
                     [0.0, 4.0, np.nan, np.nan]])
    # column 0: rows 0 and 1 level (½ each); column 1: row 0 (row 1 NaN); column 2 ignored; column 3: row 1
    assert p_best(reps, True).tolist() == pytest.approx([(0.5 + 1) / 3, (0.5 + 1) / 3, 0.0])
    assert p_best(reps, False).tolist() == pytest.approx([1 / 3, 0.0, 2 / 3])
    assert np.isnan(p_best(np.full((2, 3), np.nan), True)).all()


def test_none_is_taken_out_of_a_tie_when_its_gain_interval_excludes_zero():
    """With tie_at 0.01 (below the interval's 2.5 % tail) `none` can reach the tied set while the winner's gain
    over it excludes 0: `none` best in 2 % of the columns, the winner's ratio below 1 only there. The paired
    interval wins: `none` is not tied, and the gain reads as a gain."""
    z = np.random.default_rng(1).standard_normal(1000)
    winner = 150.0 + 5.0 * z
    other = 149.0 + 5.0 * z + 3.0
    other[:300] -= 20.0  # the runner-up is best in 70 % of the columns…
    none = 100.0 + np.zeros(1000)
    none[:20] = 400.0  # …`none` in 2 %
    reps = np.vstack([winner, other, none])
    values = np.array([150.0, 149.0, 100.0])
    d = decide(values, reps, THROUGHPUT, tie_at=0.01)
    assert 2 in d.tied  # the rule alone ties it
    cells = pl.DataFrame({"gpu": ["G"] * 3, "family": ["F"] * 3, "workload": ["w"] * 3, "concurrency": [1] * 3,
                          "method": ["mtp", "eagle3", "none"], "depth": [3, 2, 0], "backend": ["vllm"] * 3,
                          "run_id": ["r"] * 3, "cell_id": ["a", "b", "c"]})
    (c,) = decide_groups(cells, values, reps, THROUGHPUT, tie_at=0.01)["cells"]
    assert c["gain_vs_none_ci_pct"][0] > 0 and c["gain_vs_none_text"].endswith("vs none")
    assert [t["method"] for t in c["tied"]] == ["mtp", "eagle3"]


def test_gain_text_in_words():
    assert gain_text(38.2, [21.0, 55.4], "none") == "+38 % [+21, +55] vs none"
    assert gain_text(4.0, [-1.5, 9.0], "none") == "not separable from no speculation (+4.0 % [-1.5, +9.0])"
    assert gain_text(12.0, [3.0, 20.0], "mtp·3 (your default)") == "+12 % [+3.0, +20] vs mtp·3 (your default)"
    assert gain_text(None, None, "none") is None


def test_cli_flags_state_and_change_the_rule(tmp_path: Path):
    db = _sglang_store(tmp_path)
    res = cli("analysis", "winners", "--db", str(db), "--json", "--clear-at", "0.9", "--tie-at", "0.1",
              "--point-noise", "5")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["p_best_rule"]["clear_at"] == 0.9 and doc["p_best_rule"]["tie_at"] == 0.1
    assert doc["point_noise_pct"] == 5.0 and doc["cells"][0]["uncertainty"] == "stated noise σ=5%"
    text = cli("analysis", "winners", "--db", str(db))
    assert text.returncode == 0 and "p_best ≥ 0.95" in text.stdout and "(p 0." in text.stdout
    assert "[uncertainty: stated noise σ=3%]" in text.stdout
    for bad in (["--clear-at", "0"], ["--tie-at", "0.99", "--clear-at", "0.9"], ["--point-noise", "-1"]):
        res = cli("analysis", "winners", "--db", str(db), *bad)
        assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stdout == ""
