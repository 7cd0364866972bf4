"""One candidate notation (`dflash·5`, `none`) and human column titles (machine names stay in Parquet/JSON)."""

from __future__ import annotations

import re

import polars as pl

from analysis.labels import OLD_NOTATION, and_more, candidate, candidate_expr, human_columns, human_table, of, title


def test_candidate_notation():
    assert candidate("dflash", 5) == "dflash·5"
    assert candidate("none", 0) == "none" and candidate("none", None) == "none"
    assert of({"method": "eagle3", "depth": 2}) == "eagle3·2"
    df = pl.DataFrame({"method": ["none", "mtp"], "depth": [0, 3]})
    assert df.select(candidate_expr().alias("c"))["c"].to_list() == ["none", "mtp·3"]


def test_old_notation_pattern_finds_what_it_must():
    for old in ("dflash:5", "none:0", "tie: mtp:3, eagle3:2"):
        assert re.search(OLD_NOTATION, old), old
    for new in ("dflash·5", "none", "tie: mtp·3, eagle3·2", "error: a.csv:12: bad", "http://x"):
        assert not re.search(OLD_NOTATION, new), new


def test_plain_word_lists():
    assert and_more(["a"]) == "a"
    assert and_more(["a", "b"]) == "a and b"
    assert and_more(["a", "b", "c", "d"]) == "a, b and 2 more"


def test_human_columns_rename_every_machine_name():
    df = pl.DataFrame({"gain_vs_default_pct": [1.0], "keep_default": [True], "gpu": ["MI300X"],
                       "some_new_ms": [2.0]})
    out = human_columns(df)
    assert out.columns == ["Gain vs default (%)", "Keep the default?", "GPU", "Some new (ms)"]
    assert title("p99_e2e_ms") == "p99 end-to-end latency (ms)"  # label and unit from analysis.metrics
    assert not any("_" in c for c in out.columns)


def test_tables_get_human_titles_and_one_candidate_column():
    frame = pl.DataFrame({"family": ["Qwen", "Qwen"], "method": ["dflash", "none"], "depth": [5, 0],
                          "gain_vs_none_pct": [3.0, 0.0], "odd_thing_ms": [1.0, 2.0]})
    out = human_table(frame)
    assert out.columns == ["Model family", "Candidate", "Gain vs none (%)", "Odd thing (ms)"]
    assert out["Candidate"].to_list() == ["dflash·5", "none"]
    published = pl.DataFrame({"method": ["eagle3"], "depth": [None]}, schema={"method": pl.String, "depth": pl.Int64})
    assert human_table(published)["Candidate"].to_list() == ["eagle3·?"]  # depth not stated: labels.candidate's "?"
    assert candidate("eagle3", None) == "eagle3·?"
