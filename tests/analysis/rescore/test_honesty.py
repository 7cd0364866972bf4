"""What a re-scoring result rests on, said out loud (analysis.rescore.default / workload / shard): the default's
standing and provenance, where the workloads came from, the explicit selector, and shard keys. Real stores, the
public-format samples, no mocks."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from analysis.rescore import shard as shard_keys
from analysis.rescore import workload as wl
from analysis.rescore.config import Choice, parse_choice
from analysis.rescore.core import RescoreOptions, rescore
from analysis.rescore.stored import load_trace
from analysis.rescore.trace import bucketize
from ingest import store
from ingest.errors import UsageError
from ingest.trace_store import store_trace
from ingest.traces import read_trace
from ingest.traces.assigned import read_assigned
from tests.analysis.rescore.test_core import _trace, synthetic_store

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"
QWEN = RescoreOptions(families=("Qwen",), gpus=("MI355X",))


@pytest.fixture(scope="module")
def con(default_db):
    c = store.connect(default_db, read_only=True)
    yield c
    c.close()


def _mooncake_as(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    shutil.copy(SAMPLES / "mooncake.jsonl", path)
    return path


def _from_file(path: Path, selector: str | None = None) -> tuple[pl.DataFrame, dict]:
    tf = read_trace(path)
    frame, src = wl.assign_file(tf.frame, tf.format, tf.name, selector)
    return frame, {"name": tf.name, "format": tf.format, "workload_source": src.as_dict()}


# ---- the default ---------------------------------------------------------------------------------------

def test_a_never_measured_default_is_extrapolated_and_says_so(con, tmp_path):
    frame, meta = _from_file(_mooncake_as(tmp_path, "conversation_trace.jsonl"))
    measured = rescore(con, frame, QWEN, meta)
    deep = rescore(con, frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",), default=Choice("mtp", 9)), meta)
    (st,) = measured["default_status"]
    assert st["status"] == "measured" and st["provenance"] == {"measured": 1.0}
    assert not any(w.startswith("default ") for w in measured["warnings"])
    (st,) = deep["default_status"]
    assert st["status"] == "extrapolated" and st["measured_depths"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert st["provenance"] == {"model:depth": 1.0}  # not "measured 1.0": the default's numbers are the model's
    (rec,) = deep["recommendations"]
    assert rec["gain_vs_default_pct"] is not None and rec["default_provenance"] == {"model:depth": 1.0}
    (note,) = [w for w in deep["warnings"] if w.startswith("default ")]
    assert "mtp·9 never measured (extrapolated)" in note and "depth 1–8" in note and "model:depth 100%" in note


def test_a_default_inside_the_measured_depths_is_model_filled(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", {("none", 0): 20.0, ("eagle3", 2): 10.0, ("eagle3", 6): 9.0})
    with store.session(db, read_only=True) as c:
        doc = rescore(c, _trace(), RescoreOptions(default=Choice("eagle3", 4)))
        other = rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3)))
    (st,) = doc["default_status"]
    assert st["status"] == "model-filled" and st["scored"] and set(st["provenance"]) <= {"model:depth",
                                                                                        "model:acceptance"}
    assert any("eagle3·4 never measured (model-filled)" in w for w in doc["warnings"])
    (st,) = other["default_status"]  # mtp is not in this store at all: filled from the none cells
    assert st["status"] == "model-filled from none" and st["provenance"] == {"model:none": 1.0}
    assert any("mtp·3 never measured (model-filled from none)" in w for w in other["warnings"])


def test_a_default_method_not_in_the_store_warns_instead_of_an_empty_gain(con):
    frame = read_trace(SAMPLES / "azure_code.csv").frame
    doc = rescore(con, frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",), default=parse_choice("suffix:3")))
    (st,) = doc["default_status"]
    assert st["status"] == "not in store" and not st["scored"]
    (rec,) = doc["recommendations"]
    assert rec["gain_vs_default_pct"] is None and rec["default_provenance"] is None
    assert any(w.startswith("default suffix·3 not in the store") for w in doc["warnings"])


def test_the_default_accepts_the_candidate_notation():
    assert parse_choice("dflash·5") == parse_choice("dflash:5") == Choice("dflash", 5)
    assert parse_choice("none") == Choice("none", 0)


# ---- the workload: file name, selector, unknown ------------------------------------------------------

def test_the_file_name_guess_is_named_and_warned_and_renaming_changes_nothing_silently(con, tmp_path):
    named, named_meta = _from_file(_mooncake_as(tmp_path, "conversation_trace.jsonl"))
    plain, plain_meta = _from_file(_mooncake_as(tmp_path, "prod.jsonl"))
    assert named_meta["workload_source"]["source"] == "file name" and set(named["workload"]) == {"chat"}
    assert plain_meta["workload_source"]["source"] == "unknown" and plain["workload"].null_count() == plain.height
    a, b = rescore(con, named, QWEN, named_meta), rescore(con, plain, QWEN, plain_meta)
    assert any("workload from the file name" in w and "'conversation_trace.jsonl'" in w for w in a["warnings"])
    assert any("100% are 'unknown'" in w for w in b["warnings"])
    # the explicit selector: the same content under either name, the same answer and no workload warning
    chosen = [_from_file(_mooncake_as(tmp_path, n), "chat") for n in ("conversation_trace.jsonl", "prod.jsonl")]
    docs = [rescore(con, f, QWEN, m) for f, m in chosen]
    for doc in docs:
        assert doc["trace"]["workload_source"]["source"] == "selector"
        assert doc["trace"]["workload_source"]["counts"] == {"selector": 300}
        assert not any("workload" in w for w in doc["warnings"])
    keys = [[(r["shard"], r["label"], r["gain_vs_default_pct"]) for r in d["recommendations"]] for d in docs]
    assert keys[0] == keys[1]


def test_the_selector_fills_only_what_the_file_does_not_label(tmp_path):
    frame, meta = _from_file(SAMPLES / "sharegpt.json", "code")  # ShareGPT: prompts, no workload column
    counts = meta["workload_source"]["counts"]
    assert counts == {"selector": frame.height}  # the selector comes before the classifier
    frame, meta = _from_file(SAMPLES / "sharegpt.json")
    assert meta["workload_source"]["source"] == "classifier" and meta["workload_source"]["counts"]["classifier"] > 0
    csv = tmp_path / "t.csv"
    csv.write_text("input_tokens,output_tokens,workload\n10,20,chat\n10,20,\n10,20,\n")
    frame, meta = _from_file(csv, "code")
    assert frame["workload"].to_list() == ["chat", "code", "code"]
    assert meta["workload_source"]["counts"] == {"selector": 2, "file": 1}
    for bad in ("co de", "x" * 65, "<b>"):
        with pytest.raises(UsageError, match="--workload"):
            wl.normalise_selector(bad)
    assert wl.normalise_selector("auto") is None and wl.normalise_selector(" Chat ") == "chat"


def test_a_stored_trace_keeps_the_file_name_source_and_the_selector_overrides_it(tmp_path):
    db = tmp_path / "s.duckdb"
    with store.session(db) as c:
        for name in ("conversation_trace.jsonl", "AzureLLMInferenceTrace_code.csv"):
            src = SAMPLES / ("mooncake.jsonl" if name.endswith("jsonl") else "azure_code.csv")
            tf, assignment = read_assigned(src, "auto", None, None, name)
            tid, _ = store_trace(c, tf, assignment=assignment)
            frame, meta = load_trace(c, tid)
            _f, source = wl.assign_stored(frame, meta, None)
            assert source.source == "file name" and source.counts == {"file name": frame.height}
            chosen, source = wl.assign_stored(frame, meta, "reasoning")
            assert source.counts == {"selector": frame.height} and set(chosen["workload"]) == {"reasoning"}


# ---- shards ------------------------------------------------------------------------------------------

def test_shard_keys_are_per_request_expressions(tmp_path):
    frame = read_trace(SAMPLES / "azure_code.csv").frame
    for kind in ("workload", "column", "output_length", "hour", "none"):
        whole = frame.with_columns(shard_keys.key_expr(kind).alias("k"))["k"]
        # one request at a time (what a streaming reader sees) gives the same key as the whole frame
        one_by_one = [frame.slice(i, 1).with_columns(shard_keys.key_expr(kind).alias("k"))["k"][0]
                      for i in range(0, 500, 37)]
        assert one_by_one == whole.gather(list(range(0, 500, 37))).to_list()
    out = pl.DataFrame({"output_tokens": [1, 63, 64, 255, 256, 1023, 1024, 9000]})
    assert out.select(shard_keys.key_expr("output_length").alias("k"))["k"].to_list() == [
        "output <64", "output <64", "output 64–255", "output 64–255", "output 256–1023", "output 256–1023",
        "output ≥1024", "output ≥1024"]
    ts = pl.DataFrame({"timestamp_s": [0.0, 3599.9, 3600.0, 86_400.0 + 7200, None]})
    assert ts.select(shard_keys.key_expr("hour").alias("k"))["k"].to_list() == [
        "hour 00", "hour 00", "hour 01", "hour 02", "(no timestamps)"]
    with pytest.raises(ValueError, match="shard_by"):
        shard_keys.key_expr("auto")


def test_shard_by_output_length_and_hour_on_the_public_samples(con):
    frame = read_trace(SAMPLES / "mooncake.jsonl").frame.with_columns(pl.lit("chat").alias("workload"))
    by_len = rescore(con, frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",), shard_by="output_length"))
    shards = {s["shard"] for s in by_len["trace"]["shards"]}
    assert by_len["trace"]["shard_by"] == "output_length" and len(shards) >= 2
    assert shards <= {"output <64", "output 64–255", "output 256–1023", "output ≥1024"}
    assert {r["shard"] for r in by_len["recommendations"]} == shards
    assert sum(s["requests"] for s in by_len["trace"]["shards"]) == frame.height
    # BurstGPT's sample spans more than an hour: hour-of-day windows from its first request
    burst = read_trace(SAMPLES / "burstgpt.csv").frame.with_columns(pl.lit("chat").alias("workload"))
    b = bucketize(burst, "hour")
    span_h = int(burst["timestamp_s"].max() // 3600)
    assert b.shard_by == "hour" and len(b.shards) == min(24, span_h + 1)
    no_time = frame.with_columns(pl.lit(None, pl.Float64).alias("timestamp_s"))
    doc = rescore(con, no_time, RescoreOptions(families=("Qwen",), gpus=("MI355X",), shard_by="hour"))
    assert [s["shard"] for s in doc["trace"]["shards"]] == ["(no timestamps)"]
    assert any("shard by hour: the trace has no timestamps" in w for w in doc["warnings"])
    doc = rescore(con, frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",), shard_by="column"))
    assert any("no request carries a shard" in w for w in doc["warnings"])
