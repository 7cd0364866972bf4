"""The streaming re-score read (analysis.rescore.reduce): the same buckets, metadata and errors as the exact
reader + bucketize, for valid, odd and bad files, one file or many (folder, glob); the CLI on a folder."""

from __future__ import annotations

import json
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.rescore import reduce
from analysis.rescore.reduce import ReadSpec, read_buckets, trace_files
from analysis.rescore.trace import TraceBuckets, bucketize
from ingest.classify import assign_workloads
from ingest.errors import InputError
from ingest.traces import TraceMapping, read_trace
from tests.conftest import cli

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "data" / "samples" / "traces"
CORPUS = REPO / "tests" / "corpus" / "traces"
AZ = "TIMESTAMP,ContextTokens,GeneratedTokens"
DEFAULT_SPEC = ReadSpec()
ROWS = ["2023-11-16 18:15:46.6805900,374,44", "2023-11-16 18:15:50.7487640,396,109",
        "2023-11-16 18:15:51.4794010,879,45"]


def assert_same_buckets(a: TraceBuckets, b: TraceBuckets) -> None:
    assert a.rows.equals(b.rows), (a.rows, b.rows)
    assert a.counters.equals(b.counters), (a.counters, b.counters)
    for k in ("requests", "shards", "shard_by", "has_time", "duration_s", "bucket_s"):
        assert getattr(a, k) == getattr(b, k), k
    assert np.array_equal(a.bucket_len, b.bucket_len)


def exact(path: Path, spec: ReadSpec = DEFAULT_SPEC, shard_by: str = "auto"):
    tf = read_trace(path, spec.fmt, spec.mapping, spec.workload, limits=spec.limits)
    frame, assignment = assign_workloads(tf.frame)
    return bucketize(frame, shard_by), tf, assignment


def check_same(path: Path, spec: ReadSpec = DEFAULT_SPEC, shard_by: str = "auto") -> None:
    """Same buckets and metadata, or the same error."""
    try:
        want, tf, assignment = exact(path, spec, shard_by)
    except InputError as exc:
        with pytest.raises(InputError) as err:
            read_buckets(str(path), [path], spec, shard_by)
        assert str(err.value) == str(exc)
        return
    got = read_buckets(str(path), [path], spec, shard_by)
    assert_same_buckets(got.buckets, want)
    m = got.meta
    assert (m["warnings"], m["dropped"], m["workload_assignment"], m["file_hash"], m["format"], m["name"]) == (
        list(tf.warnings), dict(tf.dropped), assignment, tf.file_hash, tf.format, tf.name)


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.suffix != ".py"))
def test_every_sample_trace_gives_the_exact_readers_buckets(name: str) -> None:
    check_same(SAMPLES / name, shard_by="none" if name.startswith("burst") else "auto")


def _odd_cases() -> dict[str, str | bytes]:
    body = "\n".join(ROWS)
    return {
        "bom.csv": b"\xef\xbb\xbf" + f"{AZ}\n{body}\n".encode(),
        "crlf.csv": "\r\n".join([AZ, *ROWS, ""]),
        "spaces.csv": "TIMESTAMP, ContextTokens , GeneratedTokens\n" + "\n".join(r.replace(",", ", ") for r in ROWS),
        "quoted.csv": AZ + "\n" + "\n".join('"' + r.replace(",", '","') + '"' for r in ROWS) + "\n",
        "extra.csv": "Region," + AZ + ",Notes\n" + "\n".join(f'westus,{r},"a, b"' for r in ROWS) + "\n",
        "blank_lines.csv": "\n\n" + AZ + "\n\n" + ROWS[0] + "\n   \n" + "\n".join(ROWS[1:]) + "\n\n",
        "many_blank_lines.csv": AZ + "\n" + ROWS[0] + "\n" * 120_000 + "\n".join(ROWS[1:]) + "\n",
        "whole_seconds.csv": AZ + "\n2023-11-16 18:15:46,1,2\n2023-11-16 18:15:50,3,4\n",
        "utc_offsets.csv": AZ + "\n2024-05-10 00:00:00.009930+00:00,5,6\n2024-05-10 00:00:09.1+00:00,7,8\n",
        "zulu_t.csv": AZ + "\n2024-05-10T00:00:00.5Z,5,6\n2024-05-10T00:01:00Z,7,8\n",
        "mixed_offsets.csv": AZ + "\n2024-05-10 05:30:00+05:30,5,6\n2024-05-10 00:00:09.25,7,8\n",
        "leap_second.csv": AZ + "\n2016-12-31 23:59:59.5,5,6\n2016-12-31 23:59:60.5,7,8\n",
        "float_tokens.csv": AZ + "\n2023-11-16 18:15:46.1,12.0,3\n2023-11-16 18:15:47.1, 4 ,5\n",
        "disorder.csv": AZ + "\n" + "\n".join([ROWS[1], ROWS[0], ROWS[2]]) + "\n",
        "zero_rows.csv": AZ + "\n" + ROWS[0] + "\n2023-11-16 18:15:47.0,0,5\n2023-11-16 18:15:48.0,5,0\n" + ROWS[2],
        "AzureLLMInferenceTrace_conv_hint.csv": AZ + "\n" + "\n".join(ROWS) + "\n",
        "burst.csv": "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     "5,ChatGPT,10,20,30,x\n7.5,GPT-4,11,0,11,x\n9,gpt-4 ,12,22,34,x\n",
        "counters.csv": "timestamp,input_tokens,output_tokens,workload,tenant,drafted_tokens,accepted_tokens\n"
                        "1.5,10,20,Code,a,30,20\n2.5,11,21,,b,,\n3.5,12,22,chat,a,40,39\n",
        "no_times.csv": "input_tokens,output_tokens\n5,6\n7,8\n",
        "empty_times.csv": "timestamp,input_tokens,output_tokens\n,5,6\n,7,8\n",
        "one_row.csv": AZ + "\n" + ROWS[0] + "\n",
        "same_instant.csv": AZ + "\n" + ROWS[0] + "\n" + ROWS[0] + "\n",
        # whitespace-only lines the pre-scan does not count (it looks for a newline then "\n", "\r", " ", "\t")
        "form_feed_line.csv": AZ + "\n" + ROWS[0] + "\n\x0c\n" + "\n".join(ROWS[1:]) + "\n",
        "no_break_space_line.csv": AZ + "\n" + ROWS[0] + "\n\u00a0\n" + "\n".join(ROWS[1:]) + "\n",
        "empty_fields_line.csv": AZ + "\n" + ROWS[0] + "\n,,\n" + "\n".join(ROWS[1:]) + "\n",
        # the first timestamp beyond the file's first 64 KiB (the head the sample is looked for in)
        "late_first_row.csv": AZ + "\n" + "\n" * 70_000 + "\n".join(ROWS) + "\n",
        "padded_timestamps.csv": AZ + "\n" + "\n".join(" " + r.replace(",", " ,", 1) for r in ROWS) + "\n",
        "no_break_space_separator.csv": AZ + "\n" + "\n".join(r.replace(" ", "\u00a0", 1) for r in ROWS) + "\n",
        # chrono's lenient minute parse: the exact reader reads "2023-1-16  18:15" as a time (its leniency, not
        # the streaming pass's; whatever it decides, the two readers agree)
        "lenient_date_fields.csv": AZ + "\n2023-1-16  18:15:46.5,5,6\n2023-11-16 18: 5:46.5,7,8\n",
    }


@pytest.mark.parametrize("name", sorted(_odd_cases()))
def test_odd_but_valid_files_give_the_exact_readers_buckets(tmp_path: Path, name: str) -> None:
    data = _odd_cases()[name]
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    mapping = TraceMapping(input_tokens="input_tokens", output_tokens="output_tokens", timestamp="timestamp",
                           timestamp_unit="s", workload="workload", shard="tenant", drafted_tokens="drafted_tokens",
                           accepted_tokens="accepted_tokens") if name == "counters.csv" else None
    check_same(path, ReadSpec(mapping=mapping, workload="Code" if "o" in name else None))


@pytest.mark.parametrize(("name", "streamed"), [
    ("plain.csv", True),  # the streaming pass decides
    ("blank_lines.csv", True),  # lines the pre-scan counts: trimmed to find them, still streamed
    ("form_feed_line.csv", False),  # a whitespace-only line it cannot see: flagged, the exact reader drops it
    ("late_first_row.csv", True),
    ("unicode_digit.csv", False),  # a seconds digit outside ASCII: the exact reader's error
])
def test_which_reader_decides_a_csv_file(tmp_path: Path, monkeypatch, name: str, streamed: bool) -> None:
    cases = {**_odd_cases(), "plain.csv": AZ + "\n" + "\n".join(ROWS) + "\n",
             "unicode_digit.csv": AZ + "\n" + ROWS[0] + "\n2023-11-16 18:15:4\u0666.5,7,8\n"}
    path = tmp_path / name
    path.write_bytes(cases[name].encode())
    check_same(path)
    calls: list[Path] = []
    real = reduce._reduce_exact
    monkeypatch.setattr(reduce, "_reduce_exact", lambda p, *a, **k: calls.append(p) or real(p, *a, **k))
    try:
        reduce.reduce_file(path, DEFAULT_SPEC, None)
    except InputError:
        assert not streamed
    assert calls == ([] if streamed else [path])


def test_parquet_datetime_date_and_categorical_columns(tmp_path: Path) -> None:
    t0 = datetime(2024, 1, 1)
    frame = pl.DataFrame({"timestamp": [t0 + timedelta(seconds=s) for s in (0.25, 3.5, 2.0, 90.0)],
                          "input_tokens": [5, 6, 7, 8], "output_tokens": [1, 2, 0, 4],
                          "workload": pl.Series(["code", "Chat", None, "code"], dtype=pl.Categorical)})
    frame.write_parquet(tmp_path / "dt.parquet")
    check_same(tmp_path / "dt.parquet")
    frame.with_columns(pl.col("timestamp").dt.date()).write_parquet(tmp_path / "date.parquet")
    check_same(tmp_path / "date.parquet")


LABEL_CASES = {  # labels are checked once per distinct value after grouping, counts by range for integer columns
    "trimmed_and_cased": ([" Code ", "code", "CHAT", "  ", None], [5, 6, 7, 8, 9]),
    "bidi_on_a_kept_row": (["code", "chat\u202e", "code", "chat", "code"], [5, 6, 7, 8, 9]),
    "control_on_a_dropped_row": (["code", "chat", "co\x1bde", "chat", "code"], [5, 6, 0, 8, 9]),
    "long_label": (["code", "x" * 257, "code", "chat", "code"], [5, 6, 7, 8, 9]),
    "negative_count": (["code", "chat", "code", "chat", "code"], [5, -6, 7, 8, 9]),
    "count_over_the_cap": (["code", "chat", "code", "chat", "code"], [5, 6, 7, 10_000_001, 9]),
    "missing_count": (["code", "chat", "code", "chat", "code"], [5, None, 7, 8, 9]),
}


@pytest.mark.parametrize("name", sorted(LABEL_CASES))
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_labels_and_integer_counts_as_the_exact_reader_decides(tmp_path: Path, name: str, fmt: str) -> None:
    workloads, outputs = LABEL_CASES[name]
    frame = pl.DataFrame({"timestamp": [1.5, 2.5, 3.5, 4.5, 5.5], "input_tokens": [10, 11, 12, 13, 14],
                          "output_tokens": pl.Series(outputs, dtype=pl.Int64), "workload": workloads,
                          "tenant": pl.Series([1, 2, 1, None, 2], dtype=pl.Int32)})
    path = tmp_path / f"{name}.{fmt}"
    frame.write_parquet(path) if fmt == "parquet" else frame.write_csv(path)
    mapping = TraceMapping(input_tokens="input_tokens", output_tokens="output_tokens", timestamp="timestamp",
                           timestamp_unit="s", workload="workload", shard="tenant")
    for spec in (ReadSpec(mapping=mapping), ReadSpec(mapping=mapping, workload="Reasoning")):
        check_same(path, spec)


def test_a_parquet_file_read_a_slice_of_row_groups_at_a_time_gives_the_same_buckets(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    # arrivals out of order across slices (the running maximum is carried over), a dropped row, two workloads
    frame = pl.DataFrame({"timestamp": [1.0, 5.0, 2.0, 3.0, 9.0, 4.0, 8.5, 10.0, 9.5],
                          "input_tokens": [5, 6, 7, 8, 9, 10, 11, 12, 13],
                          "output_tokens": [1, 2, 0, 4, 5, 6, 7, 8, 9],
                          "workload": ["code", "chat", "code", " Chat", "code", None, "chat", "code", "chat"]})
    path = tmp_path / "groups.parquet"
    frame.write_parquet(path, row_group_size=2)
    mapping = TraceMapping(input_tokens="input_tokens", output_tokens="output_tokens", timestamp="timestamp",
                           timestamp_unit="s", workload="workload")
    whole = read_buckets(str(path), [path], ReadSpec(mapping=mapping))
    monkeypatch.setattr(reduce, "SLICE_ROWS", 3)  # two row groups (4 rows) a slice: 3 slices
    assert reduce._slices(path) == [(0, 4), (4, 4), (8, 1)]
    sliced = read_buckets(str(path), [path], ReadSpec(mapping=mapping))
    assert_same_buckets(sliced.buckets, whole.buckets)
    assert sliced.meta == whole.meta and sliced.meta["warnings"]  # the late arrivals are counted across slices
    check_same(path, ReadSpec(mapping=mapping))


@pytest.mark.parametrize("case", [c for c in tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["case"]
                                  # a few are built by the corpus test; .gz goes straight to the exact reader
                                  if (CORPUS / c["file"]).is_file() and not c["file"].endswith(".gz")],
                         ids=lambda c: c["file"])
def test_bad_corpus_files_raise_the_exact_readers_error(case: dict) -> None:
    path = CORPUS / case["file"]
    try:
        exact(path)
    except (InputError, ValueError) as exc:
        want = str(exc)
    else:
        want = None
    try:
        read_buckets(str(path), [path], ReadSpec())
    except (InputError, ValueError) as exc:
        got = str(exc)
    else:
        got = None
    assert got == want


def _day_files(tmp_path: Path, days: int = 3, per_day: int = 400, seed: int = 1) -> tuple[Path, Path]:
    """A trace split a day per file (Azure CSV), and the same requests in one file."""
    rng = np.random.default_rng(seed)
    folder = tmp_path / "days"
    folder.mkdir()
    lines = []
    for d in range(days):
        secs = np.sort(rng.uniform(0, 86_400, per_day))
        rows = [f"{(datetime(2023, 11, 16 + d) + timedelta(seconds=float(s))).isoformat(' ')}0,"
                f"{rng.integers(1, 4000)},{rng.integers(1, 900)}" for s in secs]
        (folder / f"AzureLLMInferenceTrace_code_day{d}.csv").write_text(AZ + "\n" + "\n".join(rows) + "\n")
        lines += rows
    whole = tmp_path / "AzureLLMInferenceTrace_code_all.csv"
    whole.write_text(AZ + "\n" + "\n".join(lines) + "\n")
    return folder, whole


def test_a_folder_or_glob_of_day_files_equals_the_one_file(tmp_path: Path) -> None:
    folder, whole = _day_files(tmp_path)
    want, _tf, _a = exact(whole)
    for arg in (str(folder), str(folder / "*.csv")):
        files = trace_files(arg)
        assert files is not None and len(files) == 3
        got = read_buckets(arg, files, ReadSpec())
        assert_same_buckets(got.buckets, want)
        assert got.meta["files"] == 3 and got.meta["source"] == "files" and got.meta["format"] == "azure"
        assert got.meta["workload_assignment"] == {"given": 1200, "classifier": 0, "unknown": 0}


def test_a_wrong_guess_of_the_time_span_costs_a_second_pass_not_a_wrong_answer(tmp_path: Path, monkeypatch) -> None:
    # the first row is not the earliest and the last not the latest: a guess from one row at each end is off
    monkeypatch.setattr(reduce, "EDGE_ROWS", 1)
    path = tmp_path / "edges.csv"
    path.write_text(AZ + "\n" + "\n".join([ROWS[1], ROWS[0], "2023-11-16 18:16:30.0,5,6",
                                           "2023-11-16 18:16:10.0,5,6"]) + "\n")
    got = read_buckets(str(path), [path], ReadSpec())
    assert got.passes == 2
    check_same(path)
    in_order = tmp_path / "ordered.csv"
    in_order.write_text(AZ + "\n" + "\n".join(ROWS) + "\n")
    assert read_buckets(str(in_order), [in_order], ReadSpec()).passes == 1


def test_a_bad_day_file_is_named_with_its_line(tmp_path: Path) -> None:
    folder, _whole = _day_files(tmp_path)
    bad = folder / "AzureLLMInferenceTrace_code_day1.csv"
    lines = bad.read_text().splitlines()
    lines[7] = lines[7].rsplit(",", 1)[0] + ",-3"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_buckets(str(folder), trace_files(str(folder)) or [], ReadSpec())
    assert Path(err.value.path) == bad and err.value.line == 8 and "negative" in str(err.value)


def test_an_empty_folder_or_pattern_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"not a regular file \(an empty folder\)"):
        trace_files(str(tmp_path))
    with pytest.raises(InputError, match="no files match"):
        trace_files(str(tmp_path / "*.csv"))
    assert trace_files(str(tmp_path / "nope.csv")) is None


def test_cli_rescores_a_folder_like_the_one_file(default_db: Path, tmp_path: Path) -> None:
    folder, whole = _day_files(tmp_path)
    docs = []
    for arg in (str(whole), str(folder)):
        res = cli("analysis", "rescore", arg, "--json", "--family", "Qwen", db=default_db)
        assert res.returncode == 0, res.stderr
        docs.append(json.loads(res.stdout))
    one, many = docs
    assert many["trace"]["files"] == 3 and many["trace"]["requests"] == one["trace"]["requests"] == 1200
    assert many["recommendations"] == one["recommendations"] and many["candidates"] == one["candidates"]


def test_the_trace_cap_is_a_setting_named_in_the_error(default_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "AzureLLMInferenceTrace_code.csv"
    path.write_text(AZ + "\n" + "\n".join(ROWS) + "\n")
    res = cli("analysis", "rescore", str(path), "--json", db=default_db, env={"SPECTUNE_MAX_TRACE_BYTES": "100"})
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "more than the 100-byte limit ($SPECTUNE_MAX_TRACE_BYTES); raise it with --max-trace-bytes" in res.stderr
    res = cli("analysis", "rescore", str(path), "--json", "--max-trace-bytes", "1KiB", db=default_db,
              env={"SPECTUNE_MAX_TRACE_BYTES": "100"})
    assert res.returncode == 0, res.stderr
