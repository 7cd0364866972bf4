"""One pipeline per streamable format (ingest.traces.lazy.normalised): read_trace's frame comes from the validating
lazy query, and equals what the format's exact parse + normalise give — frame, drops, warnings, hash — on every
sample and corpus file; a file the query flags still gets the exact parse's error (file:line)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ingest.errors import InputError
from ingest.traces import DEFAULT_LIMITS, read_trace
from ingest.traces.detect import detect_kind
from ingest.traces.lazy import STREAMABLE, normalised
from ingest.traces.normalise import normalise
from ingest.traces.registry import FORMATS, check_request
from ingest.traces.source import open_source

REPO = Path(__file__).resolve().parents[3]
FILES = sorted([*(REPO / "data" / "samples" / "traces").glob("*.csv"),
                *(REPO / "data" / "samples" / "traces").glob("*.parquet"),
                *(REPO / "tests" / "corpus" / "traces").glob("*.csv"),
                *(REPO / "tests" / "corpus" / "traces").glob("*.parquet")])
AZ_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _exact(path: Path, workload: str | None) -> tuple[str, pl.DataFrame, dict, list, str]:
    """The exact parse alone, as read_trace did it before the query yielded frames."""
    with open_source(path, DEFAULT_LIMITS, check_request(path, "auto", None, workload)) as src:
        kind = detect_kind(src, None)
        src.check_line_cap()
        spec = FORMATS[kind]
        raw = spec.reader(src, None, DEFAULT_LIMITS)
        if raw.workload_hint is None and spec.name_hint:
            raw.workload_hint = spec.name_hint(path.name)
        frame, dropped, warnings = normalise(path, raw, DEFAULT_LIMITS, workload)
        return kind, frame, dropped, warnings, src.sha256


@pytest.mark.parametrize("workload", [None, "chat"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_query_gives_the_exact_parse_frame_or_error(path: Path, workload: str | None) -> None:
    try:
        want = _exact(path, workload)
    except InputError as exc:
        with pytest.raises(InputError) as got:
            read_trace(path, workload=workload)
        assert str(got.value) == str(exc)
        return
    tf = read_trace(path, workload=workload)
    kind, frame, dropped, warnings, sha = want
    assert (tf.format, tf.dropped, list(tf.warnings), tf.file_hash) == (kind, dropped, warnings, sha)
    assert_frame_equal(tf.frame, frame)


def test_the_samples_are_read_by_the_query() -> None:
    # not vacuous: the streamable samples come out of the query itself, not the exact parse
    read = 0
    for path in (p for p in FILES if "samples" in p.parts):
        with open_source(path, DEFAULT_LIMITS, True if path.suffix == ".parquet" else None) as src:
            kind = detect_kind(src, None)
            if kind in STREAMABLE and normalised(src, kind, None, DEFAULT_LIMITS, None) is not None:
                read += 1
    assert read >= 4


def test_out_of_order_times_are_sorted_and_said_as_the_exact_parse_does(tmp_path: Path) -> None:
    path = tmp_path / "AzureLLMInferenceTrace_code.csv"
    path.write_text(AZ_HEADER + "2023-11-16 18:15:47.0000000,10,2\n2023-11-16 18:15:46.5000000,11,0\n"
                    "2023-11-16 18:15:46.0000000,12,3\n2023-11-16 18:15:48.0000000,0,4\n")
    with open_source(path, DEFAULT_LIMITS) as src:
        assert normalised(src, "azure", None, DEFAULT_LIMITS, "code") is not None
    tf = read_trace(path)
    assert tf.frame["request_index"].to_list() == [2, 0]
    assert tf.frame["timestamp_s"].to_list() == [0.0, 1.0]
    assert tf.dropped == {"zero_output_tokens": 1, "zero_input_tokens": 1}
    assert tf.warnings == ("1 requests were out of time order (by at most 1.000 s) and were sorted by timestamp",)
    assert tf.frame["workload"].to_list() == ["code", "code"]


def test_a_flagged_value_is_located_by_the_exact_parse(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(AZ_HEADER + "2023-11-16 18:15:46.0000000,10,2\n" * 5 + "2023-11-16 18:15:47.0000000,-3,2\n")
    with open_source(path, DEFAULT_LIMITS) as src:
        assert normalised(src, "azure", None, DEFAULT_LIMITS, None) is None
    with pytest.raises(InputError) as exc:
        read_trace(path)
    assert exc.value.line == 7 and str(exc.value).startswith(f"error: {path}:7: ")


def test_counts_written_as_decimals_are_read_by_the_general_pass_not_the_exact_parse(tmp_path: Path) -> None:
    # pandas writes an integer column holding NaN as "12.0": the query's general pass reads it, as check_counts does
    path = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    path.write_text(AZ_HEADER + "2023-11-16 18:15:46.0000000,10.0,2\n2023-11-16 18:15:47.0000000, 11 ,3\n"
                    "2023-11-16 18:15:48.0000000,12,4.00\n")
    with open_source(path, DEFAULT_LIMITS) as src:
        got = normalised(src, "azure", None, DEFAULT_LIMITS, "chat")
    assert got is not None
    frame = _exact(path, None)[1]
    assert_frame_equal(got[0], frame)
    assert frame["input_tokens"].to_list() == [10, 11, 12] and frame["output_tokens"].to_list() == [2, 3, 4]
