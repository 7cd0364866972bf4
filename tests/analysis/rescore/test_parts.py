"""The pieces of re-scoring: buckets, deploy configs, comparisons, stored traces, the benchmark generator."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.rescore import compare as rescore_compare
from analysis.rescore import summary as rescore_summary
from analysis.rescore.config import (
    Choice,
    needs_draft_model,
    parse_choice,
    parse_draft_models,
    speculative_config,
    vllm_args,
)
from analysis.rescore.core import RescoreOptions, rescore
from analysis.rescore.stored import list_traces, load_trace
from analysis.rescore.trace import MAX_SHARDS, OTHER_SHARD, bucketize
from benchmarks.traces import make_trace
from ingest import store
from ingest.errors import UsageError
from ingest.trace_store import store_trace
from ingest.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"


def _frame(n: int, seed: int = 0, shards: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "timestamp_s": np.sort(rng.uniform(0, 5000, n)), "input_tokens": rng.integers(1, 5000, n),
        "output_tokens": rng.integers(1, 3000, n), "workload": rng.choice(["code", "chat", None], n),
        "shard": rng.choice([f"t{i}" for i in range(shards)], n),
    })


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_buckets_keep_every_request_and_token(seed):
    frame = _frame(5000, seed, shards=40)
    b = bucketize(frame)
    assert b.rows["n"].sum() == 5000 == b.requests
    assert b.rows["out_sum"].sum() == frame["output_tokens"].sum()
    assert b.rows["in_sum"].sum() == frame["input_tokens"].sum()
    assert len(b.shards) == MAX_SHARDS and b.shards[-1] == OTHER_SHARD  # 40 tenants: the tail is pooled
    assert b.bucket_len.sum() == pytest.approx(float(frame["timestamp_s"].max() - frame["timestamp_s"].min()))
    assert b.workload_mix()["unknown"] == pytest.approx(frame["workload"].null_count() / 5000, abs=1e-6)
    by_wl = bucketize(frame, "workload")
    assert set(by_wl.shards) == {"code", "chat", "unknown"}
    rate = rescore_summary.arrival_rate(b)
    assert rate["requests"].sum() == 5000


def test_length_buckets_are_half_octaves():
    frame = pl.DataFrame({"input_tokens": [10] * 6, "output_tokens": [1, 2, 3, 4, 1000, 1500]})
    b = bucketize(frame)
    assert sorted(b.rows["lb"].to_list()) == [0, 2, 3, 4, 19, 21]
    assert not b.has_time and b.bucket_len.tolist() == [1.0]


def test_speculative_configs_are_what_vllm_parses():
    assert speculative_config(Choice("none", 0)) is None and vllm_args(None) == ""
    ng = speculative_config(Choice("ngram", 4))
    assert ng == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    flag = vllm_args(ng)
    assert flag.startswith("--speculative-config ") and json.loads(shlex.split(flag)[1]) == ng
    assert needs_draft_model(Choice("eagle3", 3)) and not needs_draft_model(Choice("mtp", 3))
    drafts = parse_draft_models(["eagle3=/models/eagle3-qwen"])
    assert speculative_config(Choice("eagle3", 3), drafts)["model"] == "/models/eagle3-qwen"
    assert not needs_draft_model(Choice("eagle3", 3), drafts)


@pytest.mark.parametrize("text", ["mtp", "mtp:0", "mtp:x", "warp:3", "none:2", "", "mtp:99", "eagle3=3"])
def test_bad_default_choices_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_choice(text)


def test_good_default_choices_parse():
    assert parse_choice(" MTP:3 ") == Choice("mtp", 3) and parse_choice("none") == Choice("none", 0)
    with pytest.raises(UsageError):
        parse_draft_models(["eagle3"])


def test_comparing_two_traces_shows_mix_drift_and_changed_advice(default_db):
    with store.session(default_db, read_only=True) as con:
        opts = RescoreOptions(families=("Kimi",), gpus=("MI355X",))
        a = rescore(con, read_trace(SAMPLES / "azure_code.csv").frame, opts)
        b = rescore(con, read_trace(SAMPLES / "azure_conv.csv").frame, opts)
    same = rescore_compare.compare(a, a)
    assert same["total_variation"] == 0 and not same["any_change"]
    cmp = rescore_compare.compare(a, b)
    assert cmp["total_variation"] == 1.0  # all code vs all chat
    assert cmp["changes"].height == 2  # shard "code" only in A, "chat" only in B
    assert cmp["any_change"]
    drift = cmp["mix_drift"].sort("workload")
    assert drift["delta_pp"].to_list() == [100.0, -100.0]


def test_a_stored_trace_rescoring_equals_the_file(default_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(default_db, db)
    tf = read_trace(SAMPLES / "azure_conv.csv")
    with store.session(db) as con:
        tid, new = store_trace(con, tf, assignment={"given": tf.frame.height})
        again, new2 = store_trace(con, read_trace(SAMPLES / "azure_conv.csv", name="other name"), assignment={})
        assert new and not new2 and again == tid  # same bytes, one trace
        assert list_traces(con).height == 1
        frame, meta = load_trace(con, tid[:8])  # a unique prefix is enough
        opts = RescoreOptions(families=("Gemma",), gpus=("MI300X",))
        from_store = rescore(con, frame, opts, meta)
        from_file = rescore(con, tf.frame, opts)
        with pytest.raises(UsageError):
            load_trace(con, "ffffffff")
        with pytest.raises(UsageError):
            load_trace(con, "not-an-id")
    assert meta["name"] == "azure_conv.csv" and from_store["trace"]["trace_id"] == tid
    strip = lambda d: [(r["shard"], r["method"], r["depth"], r["gain_vs_default_pct"]) for r in d["recommendations"]]  # noqa: E731
    assert strip(from_store) == strip(from_file)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_benchmark_generator_writes_readable_azure_shaped_traces(tmp_path, fmt):
    path = make_trace(20_000, tmp_path / f"t.{fmt}", fmt, workload="code")
    tf = read_trace(path)
    assert tf.format == ("azure" if fmt == "csv" else "parquet") and tf.frame.height == 20_000
    out = tf.frame["output_tokens"]
    assert 8 <= out.median() <= 30 and 1200 <= tf.frame["input_tokens"].median() <= 2800  # Azure code shapes
    rate = tf.frame.height / tf.frame["timestamp_s"].max()
    assert 3 < rate < 8
