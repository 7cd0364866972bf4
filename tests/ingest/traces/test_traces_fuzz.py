"""Property tests: arbitrary bytes, CSV-ish and JSON-ish text never raise anything but InputError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.errors import InputError
from ingest.traces import FORMAT_CHOICES, TRACE_SCHEMA, Limits, read_trace

SETTINGS = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
LIMITS = Limits(max_line_bytes=4096, max_json_bytes=1 << 20, max_decompressed_bytes=1 << 20)
HEADERS = [
    "TIMESTAMP,ContextTokens,GeneratedTokens",
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "input_tokens,output_tokens,timestamp_s,tenant,workload,prompt,drafted_tokens,accepted_tokens",
    "prompt,output_tokens",
]
CSV_PIECES = st.sampled_from([*'0123456789,,,,"\n\r .-+eEnaNifT:Z\t\x00é你', "2023-11-16 18:15:46.1", "GPT-4"])
CSV_BODIES = st.lists(CSV_PIECES, max_size=200).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["timestamp", "input_length", "output_length", "prompt", "output_tokens", "turns",
                         "category", "conversations", "from", "value", "hash_ids", "x"]), kids, max_size=4),
    max_leaves=12,
)


def _check(data: bytes, suffix: str, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"trace{suffix}"
        path.write_bytes(data)
        try:
            tf = read_trace(path, fmt, limits=LIMITS)
        except InputError as exc:
            assert "\n" not in exc.one_line()
            assert exc.line >= 0
        else:
            assert dict(tf.frame.schema) == TRACE_SCHEMA
            assert tf.frame.height > 0


@SETTINGS
@given(data=st.binary(max_size=2048), suffix=st.sampled_from([".csv", ".jsonl", ".json", ".parquet", ".gz", ""]),
       fmt=st.sampled_from(FORMAT_CHOICES))
def test_random_bytes_only_raise_input_error(data: bytes, suffix: str, fmt: str) -> None:
    _check(data, suffix, fmt)


@SETTINGS
@given(header=st.sampled_from(HEADERS), body=CSV_BODIES,
       fmt=st.sampled_from(["auto", "azure", "burstgpt", "csv"]))
def test_csv_ish_text_only_raises_input_error(header: str, body: str, fmt: str) -> None:
    _check((header + "\n" + body).encode("utf-8", "surrogatepass"), ".csv", fmt)


@SETTINGS
@given(records=st.lists(JSON_VALUES, max_size=6), as_list=st.booleans(),
       fmt=st.sampled_from(["auto", "mooncake", "jsonl", "specbench", "sharegpt"]))
def test_json_ish_text_only_raises_input_error(records: list[object], as_list: bool, fmt: str) -> None:
    text = json.dumps(records) if as_list else "\n".join(json.dumps(r) for r in records)
    _check(text.encode(), ".json" if as_list else ".jsonl", fmt)
