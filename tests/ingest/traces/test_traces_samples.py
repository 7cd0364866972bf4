"""Each sample trace reads correctly: values checked against an independent stdlib parse of the file."""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.traces import TRACE_SCHEMA, TraceMapping, detect_format, estimate_tokens, read_trace

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"
GENERIC_MAPPING = TraceMapping(
    input_tokens="prompt_tokens", output_tokens="completion_tokens", timestamp="arrival_ms",
    timestamp_unit="ms", workload="task", shard="tenant",
    drafted_tokens="spec_draft_tokens", accepted_tokens="spec_accepted_tokens",
)


def _rows(name: str) -> list[dict[str, str]]:
    with (SAMPLES / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (SAMPLES / name).read_text().splitlines() if line.strip()]


def _sum(tf_frame: pl.DataFrame, col: str) -> int:
    return int(tf_frame.get_column(col).sum())


def _azure_seconds(stamp: str) -> float:
    body, _, _zone = stamp.partition("+")
    day, _, frac = body.partition(".")
    base = datetime.strptime(day, "%Y-%m-%d %H:%M:%S").timestamp()
    return base + (float("0." + frac) if frac else 0.0)


@pytest.mark.parametrize(("name", "workload"), [("azure_code.csv", "code"), ("azure_conv.csv", "chat")])
def test_azure_samples(name: str, workload: str) -> None:
    rows = _rows(name)
    tf = read_trace(SAMPLES / name)
    df = tf.frame
    assert (tf.format, df.height, len(rows)) == ("azure", 500, 500)
    assert df.schema == pl.Schema(TRACE_SCHEMA)
    assert _sum(df, "input_tokens") == sum(int(r["ContextTokens"]) for r in rows)
    assert _sum(df, "output_tokens") == sum(int(r["GeneratedTokens"]) for r in rows)
    assert df.get_column("timestamp_s")[0] == 0.0
    span = _azure_seconds(rows[-1]["TIMESTAMP"]) - _azure_seconds(rows[0]["TIMESTAMP"])
    assert df.get_column("timestamp_s")[-1] == pytest.approx(span, abs=1e-5)
    assert df.get_column("workload").unique().to_list() == [workload]
    assert df.get_column("request_index").to_list() == list(range(500))
    assert tf.file_hash == hashlib.sha256((SAMPLES / name).read_bytes()).hexdigest()
    summary = tf.summary()
    assert summary["workload_mix"] == {workload: 1.0} and summary["requests"] == 500
    assert summary["duration_s"] == pytest.approx(span, abs=1e-5)


def test_azure_sample_distributions_look_like_the_real_traces() -> None:
    code, conv = read_trace(SAMPLES / "azure_code.csv").summary(), read_trace(SAMPLES / "azure_conv.csv").summary()
    assert 1500 < code["mean_input_tokens"] < 3000 and 15 < code["mean_output_tokens"] < 50
    assert 700 < conv["mean_input_tokens"] < 1500 and 150 < conv["mean_output_tokens"] < 400


@pytest.mark.parametrize("name", ["burstgpt.csv", "burstgpt_v1.csv"])
def test_burstgpt_samples(name: str) -> None:
    rows = _rows(name)
    kept = [r for r in rows if int(r["Response tokens"]) > 0 and int(r["Request tokens"]) > 0]
    failed = [r for r in rows if int(r["Response tokens"]) == 0]
    tf = read_trace(SAMPLES / name)
    df = tf.frame
    assert tf.format == "burstgpt" and df.height == len(kept) and failed
    assert tf.dropped == {"zero_output_tokens": len(failed)}
    assert _sum(df, "input_tokens") == sum(int(r["Request tokens"]) for r in kept)
    assert _sum(df, "output_tokens") == sum(int(r["Response tokens"]) for r in kept)
    stamps = [float(r["Timestamp"]) for r in kept]
    assert df.get_column("timestamp_s")[-1] == pytest.approx(stamps[-1] - stamps[0])
    assert sorted(df.get_column("shard").unique().to_list()) == ["ChatGPT", "GPT-4"]
    assert df.get_column("shard").to_list() == [r["Model"] for r in kept]
    assert tf.summary()["workload_mix"] == {"unknown": 1.0}


def test_burstgpt_sample_anchors() -> None:
    assert read_trace(SAMPLES / "burstgpt.csv").frame.height == 469
    assert read_trace(SAMPLES / "burstgpt_v1.csv").frame.height == 288


def test_mooncake_sample() -> None:
    recs = _lines("mooncake.jsonl")
    tf = read_trace(SAMPLES / "mooncake.jsonl")
    df = tf.frame
    assert (tf.format, df.height) == ("mooncake", 300)
    assert _sum(df, "input_tokens") == sum(r["input_length"] for r in recs)
    assert _sum(df, "output_tokens") == sum(r["output_length"] for r in recs)
    assert df.get_column("timestamp_s")[-1] == pytest.approx((recs[-1]["timestamp"] - recs[0]["timestamp"]) / 1000)


def test_sharegpt_sample() -> None:
    convs = json.loads((SAMPLES / "sharegpt.json").read_text())
    pairs = [
        (t[i]["value"], t[i + 1]["value"])
        for c in convs
        for t in [c["conversations"]]
        for i in range(len(t) - 1)
        if t[i]["from"] == "human" and t[i + 1]["from"] == "gpt"
    ]
    tf = read_trace(SAMPLES / "sharegpt.json")
    df = tf.frame
    assert (tf.format, df.height, len(pairs)) == ("sharegpt", 86, 86)
    assert df.get_column("prompt").to_list() == [p for p, _ in pairs]
    assert _sum(df, "output_tokens") == sum(estimate_tokens(a) for _, a in pairs)
    assert _sum(df, "input_tokens") == sum(estimate_tokens(p) for p, _ in pairs)
    assert df.get_column("timestamp_s").null_count() == 86
    assert tf.dropped == {"unpaired_turns": 1}


def test_vllm_custom_sample() -> None:
    recs = _lines("vllm_custom.jsonl")
    tf = read_trace(SAMPLES / "vllm_custom.jsonl")
    df = tf.frame
    assert (tf.format, df.height) == ("jsonl", 60)
    assert df.get_column("output_tokens").to_list() == [r.get("output_tokens", 256) for r in recs]
    assert df.get_column("input_tokens").to_list() == [estimate_tokens(r["prompt"]) for r in recs]
    assert any("6 requests had no output token count; used 256" in w for w in tf.warnings)


def test_specbench_sample() -> None:
    recs = _lines("specbench_questions.jsonl")
    tf = read_trace(SAMPLES / "specbench_questions.jsonl")
    df = tf.frame
    turns = [t for r in recs for t in r["turns"]]
    assert (tf.format, df.height, len(turns)) == ("specbench", 63, 63)
    assert df.get_column("prompt").to_list() == turns
    expected = {"coding": "code", "math": "reasoning", "reasoning": "reasoning", "math_reasoning": "reasoning"}
    assert df.get_column("workload").to_list() == [
        expected.get(r["category"], "chat") for r in recs for _ in r["turns"]
    ]
    assert set(df.get_column("output_tokens").to_list()) == {256}


@pytest.mark.parametrize("name", ["generic.csv", "generic.parquet"])
def test_generic_samples_with_mapping(name: str) -> None:
    rows = _rows("generic.csv")
    tf = read_trace(SAMPLES / name, mapping=GENERIC_MAPPING)
    df = tf.frame
    assert (tf.format, df.height) == (name.split(".")[1], 400)
    assert _sum(df, "drafted_tokens") == sum(int(r["spec_draft_tokens"]) for r in rows)
    assert _sum(df, "accepted_tokens") == sum(int(r["spec_accepted_tokens"]) for r in rows)
    assert df.get_column("shard").to_list() == [r["tenant"] for r in rows]
    assert df.get_column("workload").to_list() == [r["task"] for r in rows]
    assert df.get_column("timestamp_s")[-1] == pytest.approx(
        (int(rows[-1]["arrival_ms"]) - int(rows[0]["arrival_ms"])) / 1000)
    assert tf.summary()["has_acceptance_counters"] is True


@pytest.mark.parametrize("name", ["generic.csv", "generic.parquet"])
def test_generic_samples_without_mapping_use_well_known_names(name: str) -> None:
    tf = read_trace(SAMPLES / name)
    df = tf.frame
    assert df.height == 400 and df.get_column("drafted_tokens").null_count() == 400
    assert sorted(df.get_column("shard").unique().to_list()) == ["acme", "globex", "initech"]
    assert _sum(df, "output_tokens") == sum(int(r["completion_tokens"]) for r in _rows("generic.csv"))


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("azure_code.csv", "azure"), ("burstgpt_v1.csv", "burstgpt"), ("mooncake.jsonl", "mooncake"),
     ("sharegpt.json", "sharegpt"), ("vllm_custom.jsonl", "jsonl"), ("specbench_questions.jsonl", "specbench"),
     ("generic.csv", "csv"), ("generic.parquet", "parquet")],
)
def test_detect_and_forced_format_agree(name: str, fmt: str) -> None:
    assert detect_format(SAMPLES / name) == fmt
    assert read_trace(SAMPLES / name, fmt).frame.equals(read_trace(SAMPLES / name).frame)
