"""Property-based fuzzing (hypothesis, bounded): result readers, mutated real trace/result files, URL parsing.

Complements tests/ingest/traces/test_traces_fuzz.py (random bytes and CSV/JSON-ish text into the trace
readers). Here:
- result readers get random bytes and structured-but-wrong JSON/CSV in each format's shape; whatever they
  accept must also turn into store rows (``store.cell_frames``) without an exception;
- real sample files (traces and results) get mutated (bytes flipped, cut, lines duplicated, hostile
  snippets spliced in) — the readers either accept them with a sane frame or raise InputError;
- the dashboard's query-parameter parser (:func:`dashboard.state.parse`) gets arbitrary URL values: it
  returns an allowed value or raises ValueError, nothing else, and round-trips what it serialises.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ingest import store
from ingest.errors import InputError, UsageError
from ingest.results import FORMAT_CHOICES as RESULT_FORMATS
from ingest.results import ReadOptions, read_file
from ingest.traces import TRACE_SCHEMA, Limits, read_trace
from tests.conftest import REPO

SETTINGS = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TRACE_SAMPLES = sorted(p for p in (REPO / "data" / "samples" / "traces").iterdir() if p.suffix != ".py")
RESULT_SAMPLES = sorted(p for p in (REPO / "data" / "samples" / "results").iterdir()
                        if p.is_file() and p.suffix != ".py")  # (folders: the vllm sweep sample)
LIMITS = Limits(max_line_bytes=1 << 20, max_json_bytes=8 << 20, max_decompressed_bytes=8 << 20)
OPTS = ReadOptions(overrides={"gpu": "MI300X", "workload": "code", "family": "Qwen"})
HOSTILE_SNIPPETS = [b"\x00", b"\xff\xfe", b'"', b"\n", b"\r", b",,,,", b"NaN", b"-1", b"1e308", b"inf",
                    b"99999999999999999999", b'{"a":' * 50, b"]" * 20, b"' OR 1=1 --", b"\xe2\x80\xae", b"\t"]


def _in_tmp(data: bytes, name: str):
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / name
    path.write_bytes(data)
    return tmp, path


def _check_result(data: bytes, name: str, kind: str) -> None:
    tmp, path = _in_tmp(data, name)
    with tmp:
        try:
            parsed = read_file(path, kind, OPTS)
        except (InputError, UsageError) as exc:
            line = exc.one_line()
            assert "\n" not in line and line.startswith("error: ")
            return
        for cell in parsed.cells:  # what a reader accepts must land: derive the store rows, all finite or null
            frames = store.cell_frames(parsed.run.run_id, cell.key, cell.requests, window_s=cell.window_s,
                                       gpu_count=cell.gpu_count, counters=cell.counters, itl_ms=cell.itl_ms,
                                       headline=cell.headline)
            for table, frame in frames.items():
                for col, dtype in frame.schema.items():
                    if dtype.is_float():
                        assert not frame[col].is_infinite().any(), (table, col, "infinite value would land")


# ---- result readers -------------------------------------------------------------------------------

@SETTINGS
@given(data=st.binary(max_size=4096), name=st.sampled_from(["r.json", "r.jsonl", "r.csv", "r.txt", "cells.parquet"]),
       kind=st.sampled_from(RESULT_FORMATS))
def test_result_readers_random_bytes_only_raise_input_error(data: bytes, name: str, kind: str) -> None:
    _check_result(data, name, kind)


VLLM_KEYS = ["date", "backend", "model_id", "num_prompts", "request_rate", "max_concurrency", "duration", "completed",
             "request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms", "p99_ttft_ms",
             "median_tpot_ms", "p99_e2el_ms", "input_lens", "output_lens", "ttfts", "itls",
             "spec_decode_acceptance_rate", "spec_decode_acceptance_length", "spec_decode_num_drafts",
             "spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates",
             "request_goodput:", "method", "num_speculative_tokens", "gpu", "workload"]
SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**64) | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=6) | st.dictionaries(st.text(max_size=6), kids,
                                                                                         max_size=3), max_leaves=20)


def _vllm_like() -> st.SearchStrategy[dict]:
    base = {"duration": st.floats(-10, 1e4) | VALUES, "completed": st.integers(-5, 500) | VALUES,
            "output_throughput": st.floats(-1, 1e5) | VALUES}
    return st.fixed_dictionaries(base, optional={k: VALUES for k in VLLM_KEYS if k not in base})


@SETTINGS
@given(doc=_vllm_like(), lines=st.integers(1, 3))
def test_vllm_bench_shaped_json_only_raises_input_error(doc: dict, lines: int) -> None:
    text = "\n".join(json.dumps(doc, allow_nan=True) for _ in range(lines))
    _check_result(text.encode(), "bench.jsonl" if lines > 1 else "bench.json", "auto")


SPEC_RECORD = st.fixed_dictionaries(
    {"question_id": st.integers(-3, 99) | VALUES, "category": st.text(max_size=8) | VALUES,
     "choices": st.lists(st.fixed_dictionaries({}, optional={
         "new_tokens": st.lists(st.integers(-5, 600) | VALUES, max_size=3),
         "wall_time": st.lists((st.floats(-1, 10) | st.just(math.nan)) | VALUES, max_size=3),
         "accept_lengths": st.lists(st.integers(-1, 9) | VALUES, max_size=8),
         "turns": VALUES}), max_size=2) | VALUES},
    optional={"model_id": st.text(max_size=10) | VALUES})
SGLANG_RECORD = st.fixed_dictionaries(
    {"batch_size": st.integers(-2, 64) | VALUES, "steps": st.integers(-2, 8) | VALUES,
     "acc_length": st.floats(-1, 9) | st.just(math.nan) | VALUES,
     "step_time": st.floats(-1, 1) | st.just(math.nan) | VALUES},
    optional={"topk": VALUES, "num_draft_tokens": VALUES, "speed": st.floats(allow_nan=True) | VALUES,
              "completion_tokens": VALUES})


@SETTINGS
@given(records=st.lists(SPEC_RECORD | SGLANG_RECORD, min_size=1, max_size=5))
def test_specbench_and_sglang_shaped_jsonl_only_raises_input_error(records: list[dict]) -> None:
    _check_result("\n".join(json.dumps(r, allow_nan=True) for r in records).encode(), "out.jsonl", "auto")


PUBLISHED_HEADER = ("source_url,source_title,published,engine,gpu,gpu_count,model,model_family,moe,method,depth,"
                    "workload,dataset,concurrency,temperature,metric,value,unit,notes")
CSV_CELL = st.sampled_from(["", "x", "MI300X", "eagle3", "3", "-1", "NaN", "inf", "1e400", '"', '""', "a,b",
                            "acceptance_length", "speedup", "output_throughput_tok_s", "https://x", "\t", "é"])


@SETTINGS
@given(rows=st.lists(st.lists(CSV_CELL, min_size=0, max_size=22), min_size=1, max_size=6))
def test_published_csv_shaped_text_only_raises_input_error(rows: list[list[str]]) -> None:
    body = "\n".join(",".join(r) for r in rows)
    _check_result((PUBLISHED_HEADER + "\n" + body + "\n").encode(), "published.csv", "auto")


# ---- mutated real files ---------------------------------------------------------------------------

@st.composite
def mutated(draw: st.DrawFn, samples: list[Path]) -> tuple[Path, bytes]:
    sample = draw(st.sampled_from(samples))
    data = bytearray(sample.read_bytes()[:200_000])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "splice", "dup_line", "drop_line"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[i:]
        elif op == "splice":
            data[i:i] = draw(st.sampled_from(HOSTILE_SNIPPETS))
        else:
            lines = bytes(data).split(b"\n")
            j = draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(j, lines[j])
            elif len(lines) > 1:
                del lines[j]
            data = bytearray(b"\n".join(lines))
    return sample, bytes(data)


@SETTINGS
@given(case=mutated(TRACE_SAMPLES), fmt=st.sampled_from(["auto", "auto", "csv", "jsonl"]))
def test_mutated_real_traces_are_read_or_refused_cleanly(case: tuple[Path, bytes], fmt: str) -> None:
    sample, data = case
    assume(data)
    tmp, path = _in_tmp(data, sample.name)
    with tmp:
        try:
            tf = read_trace(path, fmt, limits=LIMITS)
        except InputError as exc:
            assert "\n" not in exc.one_line() and exc.line >= 0
            return
        assert dict(tf.frame.schema) == TRACE_SCHEMA and tf.frame.height > 0
        assert tf.frame["input_tokens"].min() >= 0 and tf.frame["output_tokens"].min() >= 0


@SETTINGS
@given(case=mutated([p for p in RESULT_SAMPLES if p.suffix != ".parquet"]))
def test_mutated_real_results_are_read_or_refused_cleanly(case: tuple[Path, bytes]) -> None:
    sample, data = case
    _check_result(data, sample.name, "auto")


# ---- dashboard query parameters -------------------------------------------------------------------

def _params():
    from dashboard.state import Param

    return [
        Param("metric", "one", "output_throughput", ("output_throughput", "p99_e2e_ms", "goodput")),
        Param("conc", "one", 1, (1, 16, 64)),
        Param("gpu", "many", [], ("MI300X", "MI355X")),
        Param("slo_ttft", "float", 2000.0, lo=1.0, hi=600_000.0),
        Param("n", "int", 3, lo=1, hi=8),
        Param("depth", "range", (2, 5), (2, 3, 4, 5)),
        Param("best", "bool", False),
    ]


URL_TEXT = st.text(max_size=40) | st.sampled_from(
    ["1", "16", "-1", "2-5", "5-2", "1e3", "0x10", "NaN", "inf", "MI300X", "' OR 1=1 --", "1.5", "00016", "١٦",
     "\x00", "2-5-7", " 16", "16 ", "A" * 10_000, "goodput", "p99_e2e_ms"])


@settings(max_examples=300, deadline=None, database=None)
@given(index=st.integers(0, 6), raw=st.lists(URL_TEXT, max_size=5))
def test_query_param_parsing_returns_an_allowed_value_or_value_error(index: int, raw: list[str]) -> None:
    from dashboard.state import parse, serialise

    p = _params()[index]
    try:
        value = parse(p, raw)
    except ValueError:
        return
    if p.kind == "one":
        assert value in p.options
    elif p.kind == "many":
        assert all(v in p.options for v in value) and len(set(value)) == len(value)
    elif p.kind in ("int", "float"):
        assert isinstance(value, int | float) and math.isfinite(value) and p.lo <= value <= p.hi
    elif p.kind == "range":
        assert value[0] in p.options and value[1] in p.options and value[0] <= value[1]
    else:
        assert isinstance(value, bool)
    ser = serialise(p, value)  # what goes back into the URL parses to the same value
    assert parse(p, ser or []) == value


@settings(max_examples=200, deadline=None, database=None)
@given(index=st.integers(0, 6), data=st.data())
def test_every_valid_value_round_trips_through_the_url(index: int, data: st.DataObject) -> None:
    from dashboard.state import parse, serialise

    p = _params()[index]
    if p.kind == "one":
        value = data.draw(st.sampled_from(p.options))
    elif p.kind == "many":
        value = data.draw(st.lists(st.sampled_from(p.options), unique=True))
    elif p.kind == "int":
        value = data.draw(st.integers(int(p.lo), int(p.hi)))
    elif p.kind == "float":
        value = data.draw(st.floats(p.lo, p.hi).map(lambda x: round(x, 3)))
    elif p.kind == "range":
        a, b = sorted(data.draw(st.lists(st.sampled_from(p.options), min_size=2, max_size=2)))
        value = (a, b)
    else:
        value = data.draw(st.booleans())
    assert parse(p, serialise(p, value) or []) == value


def test_fuzz_inputs_exist() -> None:
    """The mutation fuzzers start from real files; fail loudly if the samples moved."""
    assert len(TRACE_SAMPLES) >= 5 and len(RESULT_SAMPLES) >= 4
    assert pl.read_csv(REPO / "data" / "samples" / "traces" / "azure_code.csv").height > 0

