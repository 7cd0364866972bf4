"""The workload classifier: accuracy measured on the project's labelled prompts, and assignment precedence."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import polars as pl
import pytest

from ingest.classify import LABELS, UNKNOWN, assign_workloads, classify, classify_frame
from ingest.traces import read_trace

REPO = Path(__file__).resolve().parents[2]
LABELLED = REPO / "data" / "samples" / "labelled_prompts.jsonl"
DOC = REPO / "docs" / "classifier.md"


def _rows() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]


def _scored() -> pl.DataFrame:
    df = pl.DataFrame(_rows())
    return df.with_columns(classify_frame(df["text"])["label"].alias("pred"))


def _accuracy(df: pl.DataFrame) -> float:
    return float((df["label"] == df["pred"]).mean())


def test_the_labelled_set_is_big_varied_and_reproducible():
    rows = _rows()
    assert len(rows) >= 300
    counts = {lab: sum(r["label"] == lab for r in rows) for lab in LABELS}
    assert min(counts.values()) >= 90
    assert sum(r["hard"] for r in rows) >= 30 and len({r["text"] for r in rows}) == len(rows)
    assert any(len(r["text"]) > 300 for r in rows) and any(not r["text"].isascii() for r in rows)
    spec = importlib.util.spec_from_file_location("mk", REPO / "data" / "samples" / "make_labelled_prompts.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    assert mk.rows() == rows  # the committed file is exactly what the generator writes


def test_accuracy_on_held_out_prompts():
    df = _scored()
    test = df.filter(pl.col("split") == "test")
    assert _accuracy(test) >= 0.85
    for lab in LABELS:  # no class is sacrificed for the others
        part = test.filter(pl.col("label") == lab)
        assert _accuracy(part) >= 0.75, lab
    assert set(df["pred"].unique()) <= {*LABELS, UNKNOWN}


def test_docs_report_the_measured_numbers():
    """docs/classifier.md's accuracy and confusion matrix are what the classifier scores today."""
    df = _scored()
    text = DOC.read_text(encoding="utf-8")
    for split in ("test", "dev", "all"):
        part = df if split == "all" else df.filter(pl.col("split") == split)
        hits = int((part["label"] == part["pred"]).sum())
        assert f"| {split} | {part.height} | {hits} | {hits / part.height:.1%} |" in text, split
    for lab in LABELS:  # the confusion matrix row of the held-out split
        part = df.filter((pl.col("split") == "test") & (pl.col("label") == lab))
        cells = " | ".join(str(int((part["pred"] == p).sum())) for p in (*LABELS, UNKNOWN))
        assert re.search(rf"\| \*\*{lab}\*\* \| {re.escape(cells)} \|", text), lab


@pytest.mark.parametrize(("text", "label"), [
    ("", UNKNOWN), (None, UNKNOWN), ("   \n", UNKNOWN), ("1234 5678", UNKNOWN), ("😀😀😀", UNKNOWN),
    ("```python\nprint('hi')\n```", "code"), ("Solve 2x + 3 = 11 step by step.", "reasoning"),
    ("Write a poem about rain.", "chat"),
])
def test_obvious_and_empty_prompts(text, label):
    assert classify([text]) == [label]


def test_assignment_precedence_column_then_choice_then_classifier_then_unknown():
    frame = pl.DataFrame({
        "workload": ["chat", None, None, None],
        "prompt": ["def f(): return 1", "def f(x):\n    return x * 2", None, "   "],
        "input_tokens": [1, 1, 1, 1], "output_tokens": [1, 1, 1, 1],
    })
    out, counts = assign_workloads(frame)
    assert out["workload"].to_list() == ["chat", "code", None, None]  # a given label is never overridden
    assert counts == {"given": 1, "classifier": 1, "unknown": 2}


def test_a_sharegpt_sample_is_classified_from_its_text():
    tf = read_trace(REPO / "data" / "samples" / "traces" / "sharegpt.json")
    assert tf.frame["workload"].null_count() == tf.frame.height
    out, counts = assign_workloads(tf.frame)
    assert counts["classifier"] == tf.frame.height
    assert set(out["workload"].unique()) == set(LABELS)  # the sample mixes code, chat and reasoning prompts
    chosen = read_trace(REPO / "data" / "samples" / "traces" / "sharegpt.json", workload="chat")
    out2, counts2 = assign_workloads(chosen.frame)  # a per-file choice comes before the classifier
    assert counts2["given"] == chosen.frame.height and set(out2["workload"]) == {"chat"}
