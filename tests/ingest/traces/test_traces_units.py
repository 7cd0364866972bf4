"""Unit tests: token estimator, date-time parsing, mapping inference, registry and summary."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.errors import InputError
from ingest.traces import (
    FORMAT_CHOICES,
    FORMATS,
    TRACE_SCHEMA,
    TraceMapping,
    empty_trace,
    estimate_tokens,
    estimate_tokens_expr,
    read_trace,
)
from ingest.traces.checks import BadValue, check_timestamps, resolve_auto_unit
from ingest.traces.mapping import AmbiguousMapping, infer_mapping
from ingest.traces.timeparse import parse_datetime_seconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("   \n", 0), ("hi", 1), ("Hello, world!", 3), ("你好世界", 4), ("你好, world", 4),
     (" ".join(["word"] * 100), 129)],  # 0.5 * 499/4 + 0.5 * 100 * 4/3 = 129.04
)
def test_estimate_tokens_examples(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.text(max_size=60), max_size=20))
def test_estimate_expr_matches_scalar(texts: list[str]) -> None:
    got = pl.DataFrame({"t": texts}, schema={"t": pl.String}).select(estimate_tokens_expr(pl.col("t"))).to_series()
    assert got.to_list() == [estimate_tokens(t) for t in texts]


def test_estimate_is_near_the_four_chars_rule_for_prose() -> None:
    prose = ("Speculative decoding drafts several tokens with a cheap model and verifies them in one pass "
             "of the target model, which keeps the output distribution unchanged. ") * 20
    assert abs(estimate_tokens(prose) - len(prose) / 4) / (len(prose) / 4) < 0.2


def test_parse_datetime_seconds() -> None:
    values = ["2023-11-16 18:17:03.9799600", "2023-11-16T18:17:03Z", "2024-05-10 00:00:00.009930+00:00",
              "2024-05-10 02:00:00+02:00", "2023-02-30 00:00:00", "2023-11-16 24:00:00", "2023-11-16 18:17:03.",
              "2023-11-16", "x", None]
    out = parse_datetime_seconds(pl.DataFrame({"t": values}).lazy(), "t", "s").collect().get_column("s").to_list()
    assert out[0] == pytest.approx(out[1] + 0.97996)
    assert out[2] == pytest.approx(out[3] + 0.00993)
    assert out[4:] == [None] * 6


def test_infer_mapping() -> None:
    m = infer_mapping(["Prompt_Tokens", "completion tokens", "arrival_ms", "Tenant", "x"])
    assert m == TraceMapping(input_tokens="Prompt_Tokens", output_tokens="completion tokens",
                             timestamp="arrival_ms", timestamp_unit="ms", shard="Tenant")
    assert infer_mapping(["a", "b"]) is None
    with pytest.raises(AmbiguousMapping):
        infer_mapping(["input_tokens", "input_length", "output_tokens"])
    with pytest.raises(AmbiguousMapping):
        infer_mapping(["input_tokens", "output_tokens", "timestamp_s", "timestamp_ms"])


def test_mapping_problems() -> None:
    assert TraceMapping(input_tokens="a", output_tokens="b").problems() == []
    assert TraceMapping(output_tokens="b").problems()
    assert TraceMapping(input_tokens="a", timestamp_unit="h").problems()
    assert TraceMapping(input_tokens="a\x00b").problems()


def test_registry_names_match_the_cli_contract() -> None:
    assert FORMAT_CHOICES[0] == "auto"
    assert set(FORMATS) == {"azure", "burstgpt", "mooncake", "sharegpt", "jsonl", "specbench", "csv", "parquet"}
    assert {f.container for f in FORMATS.values()} == {"csv", "jsonl", "json", "parquet"}


def test_empty_trace_has_the_schema() -> None:
    assert dict(empty_trace().schema) == TRACE_SCHEMA


def test_summary_shape(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp_s,input_tokens,output_tokens,workload,shard\n0,10,2,code,a\n1.5,20,4,,b\n3,30,6,,\n")
    s = read_trace(path, name="mine").summary()
    assert s["name"] == "mine" and s["requests"] == 3
    assert s["workload_mix"] == {"unknown": pytest.approx(2 / 3, abs=1e-6), "code": pytest.approx(1 / 3, abs=1e-6)}
    assert s["shards"] == ["a", "b"] and s["shard_count"] == 2
    assert s["duration_s"] == 3.0 and s["mean_input_tokens"] == 20.0 and s["mean_output_tokens"] == 4.0


def test_input_error_for_usage_mistakes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("input_tokens,output_tokens\n1,2\n")
    with pytest.raises(InputError, match="unknown format"):
        read_trace(path, "xlsx")
    with pytest.raises(InputError, match="fixed columns"):
        read_trace(path, "mooncake", mapping=TraceMapping(input_tokens="input_tokens"))


@pytest.mark.slow
def test_one_million_row_azure_csv_is_read_whole_and_in_order(tmp_path: Path) -> None:
    # Correctness at scale only: its speed is a benchmark figure (benchmarks/run.py: rescore_1m_csv_s), not a
    # timing assertion that a busy CI machine would turn into noise.
    n = 1_000_000
    t0 = pl.datetime(2023, 11, 16, 18, 15, 46)
    frame = pl.DataFrame({"i": pl.int_range(n, eager=True)}).select(
        (t0 + pl.duration(microseconds=pl.col("i") * 187_003)).dt.strftime("%Y-%m-%d %H:%M:%S%.6f").alias("TIMESTAMP")
        + "0",
        (pl.col("i") * 7919 % 8000 + 1).alias("ContextTokens"),
        (pl.col("i") * 104_729 % 500 + 1).alias("GeneratedTokens"),
    )
    path = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    frame.write_csv(path)
    tf = read_trace(path)
    assert tf.frame.height == n
    assert tf.frame.get_column("timestamp_s")[-1] == pytest.approx((n - 1) * 0.187003, abs=1e-3)
    expected = frame.get_column("ContextTokens").cast(pl.Int64)
    assert tf.frame.get_column("input_tokens").equals(expected, check_names=False)
    assert tf.frame.get_column("timestamp_s").is_sorted() and set(tf.frame["workload"]) == {"chat"}


def test_ambiguous_columns_are_named_in_the_error() -> None:
    with pytest.raises(AmbiguousMapping) as err:
        infer_mapping(["input_tokens", "Prompt Tokens", "output_tokens"])
    assert str(err.value) == "columns 'input_tokens', 'Prompt Tokens' could all be input_tokens; pass a mapping"
    with pytest.raises(AmbiguousMapping) as err:
        infer_mapping(["input_tokens", "arrival_s", "created_at"])
    assert str(err.value) == "columns 'arrival_s', 'created_at' could all be the timestamp; pass a mapping"


@pytest.mark.parametrize(
    ("values", "dtype", "unit"),
    [
        ([None, "2023-11-16 18:17:03", "12"], pl.String, "datetime"),  # the first non-null value decides
        (["2023-11-16T18:17:03Z"], pl.String, "datetime"),
        (["12.5", "2023-11-16 18:17:03"], pl.String, None),  # a bare number: its unit cannot be told
        ([None, None], pl.String, None),
        ([], pl.String, None),
        ([1, 2], pl.Int64, None),
        ([1.5], pl.Float64, None),
    ],
)
def test_a_bare_timestamp_column_is_datetime_only_when_its_first_value_is_one(
        values: list, dtype: pl.DataType, unit: str | None) -> None:
    assert resolve_auto_unit(pl.Series("timestamp", values, dtype=dtype)) == unit


def test_typed_date_time_columns_are_datetime() -> None:
    assert resolve_auto_unit(pl.Series("t", [None], dtype=pl.Datetime("us"))) == "datetime"
    assert resolve_auto_unit(pl.Series("t", [None], dtype=pl.Date)) == "datetime"


def test_mapping_problems_say_what_is_wrong() -> None:
    assert TraceMapping(input_tokens="a", timestamp_unit="h").problems() == [
        "timestamp_unit must be one of s, ms, us, datetime, got 'h'"]
    assert TraceMapping(output_tokens="b").problems() == [
        "mapping needs input_tokens or prompt (to estimate input tokens from)"]
    assert TraceMapping(input_tokens="a\x00b").problems() == ["mapping for input_tokens contains control characters"]
    too_long = "mapping for prompt must be a non-empty column name of at most 256 chars"
    assert TraceMapping(prompt="   ").problems() == [too_long]
    assert TraceMapping(prompt="x" * 257).problems() == [too_long]
    assert TraceMapping(prompt="x" * 256).problems() == []  # the limit itself is allowed


@pytest.mark.parametrize(
    ("values", "unit", "seconds"),
    [(["1500", " 3 ", "-2"], "ms", [1.5, 0.003, -0.002]), (["1500"], "us", [0.0015]), ([2.5, 4], "s", [2.5, 4.0]),
     (["2e12"], "us", [2e6]),  # 2·10¹² µs is 23 days: in range for µs, not for s
     (["1e12", "-1e12"], "s", [1e12, -1e12]),  # the range's ends themselves are allowed
     (["2023-11-16 18:17:03", "2023-11-16T18:17:04.5Z"], "datetime",
      [datetime(2023, 11, 16, 18, 17, 3, tzinfo=UTC).timestamp(), datetime(2023, 11, 16, 18, 17, 4, 500000,
                                                                           tzinfo=UTC).timestamp()])],
)
def test_timestamps_in_each_unit_become_seconds(values: list, unit: str, seconds: list[float]) -> None:
    got = check_timestamps(pl.Series("arrival", values), "arrival", unit, required=True)
    assert got is not None and got.name == "arrival" and got.to_list() == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    ("values", "unit", "required", "row", "message"),
    [(["1", "nan"], "s", True, 1, "expected a number of seconds for arrival, got 'nan'"),
     (["1", "2", "-inf"], "s", True, 2, "expected a number of seconds for arrival, got '-inf'"),
     (["1", "abc"], "ms", True, 1, "expected a number of milliseconds for arrival, got 'abc'"),
     (["1", " ", "3"], "s", False, 1, "missing arrival; expected a timestamp on every request (or on none)"),
     (["", None], "us", True, 0, "missing arrival; expected a timestamp on every request (or on none)"),
     (["1", "2e12"], "s", True, 1, "arrival '2e12' is out of range for unit 's'; check the unit"),
     ([True, False], "s", True, -1, "arrival holds Boolean values; expected numbers"),
     (["2023-11-16 18:17:03", "x"], "datetime", True, 1,
      "arrival 'x' is not a date-time; expected one like '2023-11-16 18:17:03.9799600'")],
)
def test_a_bad_timestamp_names_its_row_and_what_was_expected(values: list, unit: str, required: bool, row: int,
                                                            message: str) -> None:
    with pytest.raises(BadValue) as err:
        check_timestamps(pl.Series("arrival", values), "arrival", unit, required=required)
    assert (err.value.row, err.value.message) == (row, message)


def test_an_empty_timestamp_column_is_no_timestamps_unless_required() -> None:
    assert check_timestamps(pl.Series("t", ["", None, " "]), "t", "s", required=False) is None
