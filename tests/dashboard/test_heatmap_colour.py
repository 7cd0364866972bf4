"""A heatmap cell is filled with the colour of the method that won it (a tie: stripes of exactly the tied methods).

The winners document is built from hand-set values (no store), so the expected winner of every cell is known
without reading the code under test: F/code is won by mtp (150 against eagle3's 120, runner-up), H/code is a
tie of mtp and eagle3 (130 against 129 with noise sd 5), G2's only cell by ngram.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.metrics import get_metric
from analysis.winners import decide_groups
from dashboard import charts, theme

EXPECTED_CLEAR = {("G", "F", "code"): "mtp", ("G2", "F", "code"): "ngram"}
EXPECTED_TIE = {("G", "H", "code"): {"mtp", "eagle3"}}


def _doc() -> dict:
    cells = pl.DataFrame({
        "gpu": ["G"] * 6 + ["G2"] * 2, "family": ["F"] * 3 + ["H"] * 3 + ["F"] * 2, "workload": ["code"] * 8,
        "concurrency": [1] * 8, "method": ["none", "mtp", "eagle3"] * 2 + ["none", "ngram"],
        "depth": [0, 3, 2] * 2 + [0, 4], "backend": ["vllm"] * 8, "run_id": ["r"] * 8, "cell_id": list("abcdefgh"),
    })
    values = np.array([100.0, 150.0, 120.0, 100.0, 130.0, 129.0, 100.0, 140.0])
    sd = [1, 1, 1, 5, 5, 5, 1, 1]
    rng = np.random.default_rng(0)
    reps = np.vstack([v + s * rng.standard_normal(400) for v, s in zip(values, sd, strict=True)])
    return decide_groups(cells, values, reps, get_metric("output_throughput"))


def test_winner_rows_carry_the_winners_method_not_the_runner_ups():
    doc = _doc()
    rows = {(r["gpu"], r["family"], r["workload"]): r for r in charts.winner_rows(doc).iter_rows(named=True)}
    assert {k: rows[k]["method"] for k in EXPECTED_CLEAR} == EXPECTED_CLEAR
    assert rows[("G", "F", "code")]["top1"].startswith("mtp·3: 150.0")
    assert rows[("G", "F", "code")]["text_color"] == theme.TEXT_ON.get("mtp", "#000000")
    tie = rows[("G", "H", "code")]
    assert not tie["clear"] and tie["method"] == "mtp"
    # 130 vs 129 is within the 2 % margin: equivalent, and the shallower eagle3·2 is the sensible pick
    assert tie["label"].startswith("equivalent\npick eagle3·2 (p ") and tie["pick"] == "eagle3·2"
    assert tie["headline"].startswith("equivalent · pick eagle3·2 (p ")


def _fills(spec: dict) -> dict[tuple[str, str, str], set[str]]:
    """(gpu, family, workload) → the methods its rect marks are coloured by, from the spec's datasets."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for layer in spec["layer"]:
        if layer["mark"]["type"] != "rect" or layer["encoding"].get("color", {}).get("field") != "method":
            continue
        for row in spec["datasets"][layer["data"]["name"]]:
            out.setdefault((row["gpu"], row["family"], row["workload"]), set()).add(row["method"])
    return out


def test_the_heatmap_fills_each_cell_with_its_winners_colour():
    doc = _doc()
    for gpu in ("G", "G2"):
        spec = charts.winner_heatmap(doc, gpu, ["F", "H"], ["code"], "throughput").to_dict()
        fills = _fills(spec)
        want = {k: {m} for k, m in EXPECTED_CLEAR.items() if k[0] == gpu}
        want |= {k: ms for k, ms in EXPECTED_TIE.items() if k[0] == gpu}
        assert fills == want
