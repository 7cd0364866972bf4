"""The simulator's c = 1 picks held against vLLM's AMD post's measured winners (analysis/sim_vs_published.py).

``pytest -s`` prints the table; docs/simulator.md must carry it (``python scripts/validation_table.py``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis import calibration, sim_vs_published

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def test_every_simulated_model_of_the_post_is_compared_and_printed(capsys):
    picks = sim_vs_published.default_picks()
    with capsys.disabled():
        print("\nsimulator at c=1 vs the post's measured winner per (model, dataset)")
        print(sim_vs_published.markdown_table(picks))
    # the default matrix simulates the post's Gemma-4-31B, Qwen3.5-122B-A10B, Kimi-K2.5 and MiniMax-M3: 4 × 4 datasets
    assert {calibration.model_key(p.model) for p in picks} == {"gemma-4-31b", "qwen3.5-122b-a10b", "kimi-k2.5",
                                                               "minimax-m3"}
    assert len(picks) == 16 and {p.dataset for p in picks} == {"GSM8K", "MATH500", "HumanEval", "MBPP"}
    ref = pl.read_csv(calibration.REFERENCE_DIR / "vllm-amd-2026-08" / "cells.csv")
    for p in picks:
        mine = ref.filter(pl.col("model") == p.model, pl.col("dataset") == p.dataset)
        assert p.post_speedup == mine["speedup"].max()  # the post's winner is its best measured speedup
        assert p.sim_measured[0] in set(mine["method"])  # restricted to the methods the post ran for the model


def test_picks_come_from_the_cells_given():
    """The comparison reads the simulated cells it is handed: a frame where one candidate is made fastest picks it."""
    cells = pl.read_parquet(sim_vs_published.DEFAULT_CELLS)
    boost = (pl.col("family") == "Kimi") & (pl.col("method") == "eagle3") & (pl.col("depth") == 2)
    cells = cells.with_columns(pl.when(boost).then(pl.col("output_throughput") * 100)
                               .otherwise(pl.col("output_throughput")).alias("output_throughput"))
    kimi = [p for p in sim_vs_published.picks(cells) if "Kimi" in p.model]
    assert kimi and all(p.sim_measured == ("eagle3", 2) and p.sim_any == ("eagle3", 2) for p in kimi)


def test_docs_carry_the_picks_table():
    doc = DOC.read_text()
    table = sim_vs_published_doc(doc)
    assert table is not None, "docs/simulator.md lacks the picks-table markers"
    assert table == sim_vs_published.markdown_table(sim_vs_published.default_picks()), \
        "docs/simulator.md is stale: run python scripts/validation_table.py"


def sim_vs_published_doc(doc: str) -> str | None:
    from analysis import validation
    return validation.doc_table(doc, sim_vs_published.DOC_START, sim_vs_published.DOC_END)
