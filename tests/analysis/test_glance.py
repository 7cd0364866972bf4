"""The one-sentence summary over all loads: every figure counted from the document, ties said as ties,
simulated data said so; the CLI's ``summary`` is the same function."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.glance import summary
from tests.conftest import cli


def _cell(gpu: str, fam: str, wl: str, conc: int, verdict: str, pick: tuple[str, int], gain: float,
          default_tied: bool = False) -> dict:
    return {"gpu": gpu, "family": fam, "workload": wl, "concurrency": conc, "verdict": verdict,
            "pick": {"method": pick[0], "depth": pick[1]},
            "default": {"label": "mtp·3", "pick_gain_pct": gain, "tied": default_tied, "equivalent": False}}


def _doc(cells: list[dict], simulated: bool = False) -> dict:
    return {"cells": cells, "simulated": simulated, "metric": "output_throughput", "equivalence_margin_pct": 2.0}


def test_counts_methods_depths_and_load_changes():
    cells = [_cell("A", "Qwen", "code", 1, "clear", ("dflash", 5), 20.0),
             _cell("A", "Qwen", "code", 64, "clear", ("mtp", 2), 4.0),
             _cell("A", "Kimi", "chat", 1, "equivalent", ("eagle3", 2), 30.0),
             _cell("A", "Kimi", "chat", 64, "tie", ("eagle3", 2), 10.0, default_tied=True)]
    s = summary(_doc(cells))
    assert (s["clear_cells"], s["equivalent_cells"], s["tie_cells"]) == (2, 1, 1)
    assert s["pick_methods"] == ["dflash", "eagle3", "mtp"] and s["pick_depths"] == [2, 5]
    assert s["groups_pick_changes_with_load"] == 1 and s["groups_with_several_loads"] == 2
    assert s["default_median_left_pct"] == 15.0 and s["default_not_separable_cells"] == 1
    assert s["text"] == ("Of 4 cells (2 groups × 2 loads), 2 clear, 1 equivalent within 2 %, 1 tied under the "
                         "evidence; no universal winner: the sensible picks use 3 methods and 2 depths; the pick "
                         "changes with load in 1 of 2 groups; `mtp·3` everywhere leaves a median 15.0 % on the "
                         "table on point estimates (not separable from the pick in 1 of 4 cells).")


def test_all_ties_on_simulated_data_are_said_so():
    cells = [_cell("A", "Qwen", "code", c, "tie", ("mtp", 3), 0.0, default_tied=True) for c in (1, 16)]
    s = summary(_doc(cells, simulated=True))
    assert s["text"].startswith("Simulated data: no cell has a clear winner: all 2 cells")
    assert "one sensible pick everywhere" in s["text"]
    assert "the pick changes with load in 0 of 1 group" in s["text"]
    assert "gives up nothing on the median cell" in s["text"]


def test_cli_json_carries_the_summary_over_all_loads(default_db: Path):
    res = cli("analysis", "winners", "--db", str(default_db), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    s = doc["summary"]
    # stated loads in order, then null ("load not stated": the published cells the default store ships)
    assert s["loads"] == sorted({c["concurrency"] for c in doc["cells"]}, key=lambda x: (x is None, x or 0))
    assert len(s["loads"]) > 2 and s["loads"][-1] is None and s["load_not_stated_cells"] == 28
    assert s == summary({k: v for k, v in doc.items() if k != "summary"})
    assert s["text"].startswith("Simulated data:")
    assert all(c["pick"]["label"] and c["tie_text"] for c in doc["cells"])
    assert all("— pick " in c["tie_text"] for c in doc["cells"] if c["verdict"] != "clear")


def test_cli_margin_flag_changes_equivalence_and_text_uses_one_notation(default_db: Path):
    wide = json.loads(cli("analysis", "winners", "--db", str(default_db), "--json", "--margin", "50",
                          "--concurrency", "64").stdout)
    narrow = json.loads(cli("analysis", "winners", "--db", str(default_db), "--json", "--margin", "0",
                            "--concurrency", "64").stdout)
    assert wide["equivalence_margin_pct"] == 50 and narrow["equivalence_margin_pct"] == 0
    assert sum(len(c["equivalent"]) for c in wide["cells"]) > sum(len(c["equivalent"]) for c in narrow["cells"])
    assert all(len(c["equivalent"]) == 1 or all(e["gap_pct"] == 0 for e in c["equivalent"]) for c in narrow["cells"])
    bad = cli("analysis", "winners", "--db", str(default_db), "--margin", "-3")
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "--margin" in bad.stderr
    text = cli("analysis", "winners", "--db", str(default_db), "--metric", "p99_e2e_ms")
    assert text.returncode == 0, text.stderr
    import re

    from analysis.labels import OLD_NOTATION
    body = "\n".join(line for line in text.stdout.splitlines() if "vllm serve" not in line)
    assert not re.search(OLD_NOTATION, body), re.search(OLD_NOTATION, body)
    assert "— pick " in text.stdout and "sensible pick" in text.stdout


def test_not_separable_means_the_gain_interval_includes_zero_and_ties_say_their_size():
    """One meaning of "not separable" (docs/metrics.md): the pick's gain over the default has an interval
    containing 0 — whatever the tied flag says; the flag counts only without an interval."""
    cells = [_cell("A", "Qwen", "code", c, "tie", ("mtp", 4), 5.0) for c in (1, 16, 64)]
    cells[0]["default"]["pick_gain_ci_pct"] = [-2.0, 11.0]  # includes 0: not separable
    cells[1]["default"].update(pick_gain_ci_pct=[1.0, 9.0], tied=True)  # excludes 0: separable, tied or not
    cells[2]["default"]["tied"] = True  # no interval: the tied flag decides
    for c, n in zip(cells, (3, 5, 9), strict=True):
        c["tied"] = [{"method": "mtp", "depth": d} for d in range(n)]
    doc = {**_doc(cells), "p_best_rule": {"clear_at": 0.95, "tie_at": 0.05}}
    s = summary(doc)
    assert s["default_not_separable_cells"] == 2 and s["median_tied"] == 5
    assert "each between a median 5 candidates with a real chance of being best (p ≥ 0.05)" in s["text"]


def test_the_plain_answer_says_what_to_run_where_and_how_sure():
    """Clear cells: "run X on <where> (clear in N of M cells)", the rest to measure; no clear cell: the picks we
    would try, how often each, and "measure before you deploy"; simulated data says so."""
    cells = [_cell("A", "Qwen", "code", 1, "clear", ("dflash", 5), 20.0),
             _cell("B", "Qwen", "chat", 1, "clear", ("dflash", 5), 20.0),
             _cell("A", "Kimi", "chat", 1, "clear", ("mtp", 2), 4.0),
             _cell("A", "Kimi", "chat", 64, "tie", ("eagle3", 2), 10.0)]
    s = summary(_doc(cells))
    assert s["answer"] == ("On these measurements: run dflash·5 on A code and B chat (clear in 2 of 4 cells); "
                           "mtp·2 on A chat (clear in 1 of 4 cells); the other 1 cell is ties or equivalent: "
                           "measure before you deploy there.")
    ties = [_cell("A", "Qwen", "code", c, "tie", ("mtp", d), 0.0) for c, d in ((1, 3), (16, 3), (64, 4))]
    s = summary(_doc(ties, simulated=True))
    assert s["answer"] == ("On simulated data no cell has a clear winner: the picks we would try are mtp·3 (2 of 3 "
                           "cells), mtp·4 (1 of 3 cells); measure before you deploy.")
    assert summary(_doc([]))["answer"] == "No cells match these filters."


def test_the_plain_answer_names_the_model_and_dataset_of_a_clear_pick():
    """A pick is per model: the answer says which model (its short name) and dataset it is clear for, and puts
    the published figures' answer before the rest's."""
    from analysis.glance import lead

    pub = [{**_cell("MI300X", "Kimi", "code", None, "clear", ("dflash", 7), 0.0), "model": "moonshotai/Kimi-K2.5",
            "dataset": "MBPP", "source_url": "https://example.org/post"},
           {**_cell("MI300X", "Qwen", "code", None, "tie", ("mtp", 7), 0.0), "model": "Qwen/Qwen3.5-122B-A10B",
            "dataset": "HumanEval", "source_url": "https://example.org/post"}]
    s = summary(_doc(pub))
    assert s["answer"] == ("On the published figures: run dflash·7 for Kimi-K2.5 on MI300X code (MBPP) (clear in 1 "
                           "of 2 cells); the other 1 cell is ties or equivalent: measure before you deploy there.")
    sim = [_cell("A", "Qwen", "code", 1, "tie", ("mtp", 3), 0.0)]
    assert lead(_doc(pub), _doc(sim, simulated=True)) == (
        s["answer"] + " " + summary(_doc(sim, simulated=True))["answer"])
