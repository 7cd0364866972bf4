"""Odd-but-valid inputs read correctly (and errors after them still name the right line)."""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.errors import InputError
from ingest.traces import TraceMapping, estimate_tokens, read_trace

AZ_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
AZ_ROWS = ["2023-11-16 18:15:46.6805900,374,44", "2023-11-16 18:15:50.7487640,396,109",
           "2023-11-16 18:15:51.4794010,879,45"]
SPAN = 51.4794010 - 46.6805900


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def azure_values(path: Path, **kw: object) -> tuple[list[int], list[int], float]:
    df = read_trace(path, **kw).frame  # type: ignore[arg-type]
    return (df.get_column("input_tokens").to_list(), df.get_column("output_tokens").to_list(),
            df.get_column("timestamp_s")[-1])


def assert_azure(path: Path, **kw: object) -> None:
    ins, outs, last = azure_values(path, **kw)
    assert (ins, outs) == ([374, 396, 879], [44, 109, 45])
    assert last == pytest.approx(SPAN, abs=1e-6)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("bom.csv", b"\xef\xbb\xbf" + "\n".join([AZ_HEADER, *AZ_ROWS, ""]).encode()),
        ("crlf.csv", "\r\n".join([AZ_HEADER, *AZ_ROWS, ""])),
        ("no_trailing_newline.csv", "\n".join([AZ_HEADER, *AZ_ROWS])),
        ("spaces.csv", "TIMESTAMP, ContextTokens , GeneratedTokens\n"
         + "\n".join(r.replace(",", ", ") for r in AZ_ROWS) + "\n"),
        ("quoted.csv", AZ_HEADER + "\n" + "\n".join('"' + r.replace(",", '","') + '"' for r in AZ_ROWS) + "\n"),
        ("extra_columns.csv", "Region," + AZ_HEADER + ",Notes\n"
         + "\n".join(f"westus,{r},\"a, b\"" for r in AZ_ROWS) + "\n"),
        ("blank_lines.csv", "\n\n" + AZ_HEADER + "\n\n" + AZ_ROWS[0] + "\n   \n" + "\n".join(AZ_ROWS[1:]) + "\n\n"),
        ("lowercase_header.csv", AZ_HEADER.lower() + "\n" + "\n".join(AZ_ROWS) + "\n"),
        ("reordered.csv", "GeneratedTokens,TIMESTAMP,ContextTokens\n"
         + "\n".join(",".join([r.split(",")[2], *r.split(",")[:2]]) for r in AZ_ROWS) + "\n"),
    ],
)
def test_odd_but_valid_azure_csv(tmp_path: Path, name: str, data: str | bytes) -> None:
    assert_azure(write(tmp_path, name, data))


@pytest.mark.parametrize(
    "stamps",
    [
        ["2023-11-16 18:15:46.68059", "2023-11-16 18:15:50.748764", "2023-11-16 18:15:51.479401"],
        ["2023-11-16T18:15:46.6805900", "2023-11-16T18:15:50.7487640Z", "2023-11-16T18:15:51.4794010"],
        ["2023-11-16 19:15:46.68059+01:00", "2023-11-16 18:15:50.748764+00:00", "2023-11-16 17:15:51.479401-0100"],
    ],
)
def test_azure_timestamp_variants(tmp_path: Path, stamps: list[str]) -> None:
    rows = [f"{s},{r.split(',', 1)[1]}" for s, r in zip(stamps, AZ_ROWS, strict=True)]
    assert_azure(write(tmp_path, "variants.csv", "\n".join([AZ_HEADER, *rows]) + "\n"))


def test_azure_whole_seconds(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", f"{AZ_HEADER}\n2024-05-10 00:00:00+00:00,1,2\n2024-05-10 00:00:01+00:00,3,4\n")
    assert read_trace(path).frame.get_column("timestamp_s").to_list() == [0.0, 1.0]


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    plain = "\n".join([AZ_HEADER, *AZ_ROWS, ""]).encode()
    path = write(tmp_path, "AzureLLMInferenceTrace_code.csv.gz", gzip.compress(plain, mtime=0))
    tf = read_trace(path)
    assert tf.format == "azure" and tf.file_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert tf.frame.get_column("workload").to_list() == ["code"] * 3
    assert_azure(path)


def test_errors_after_quoted_multiline_fields_name_the_physical_line(tmp_path: Path) -> None:
    data = ('input_tokens,output_tokens,prompt\n10,5,"line one\nline two, with ""quotes"""\n'
            '12,6,"x"\n\n13,oops,"y"\n')
    with pytest.raises(InputError) as info:
        read_trace(write(tmp_path, "q.csv", data))
    assert info.value.line == 6
    good = read_trace(write(tmp_path, "q2.csv", data.replace("oops", "7")))
    assert good.frame.get_column("prompt").to_list() == ['line one\nline two, with "quotes"', "x", "y"]


def test_request_index_skips_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", "input_tokens,output_tokens\n1,2\n\n3,4\n\n\n5,x\n")
    with pytest.raises(InputError) as info:
        read_trace(path)
    assert info.value.line == 7
    tf = read_trace(write(tmp_path, "c.csv", "input_tokens,output_tokens\n1,2\n\n3,4\n"))
    assert tf.frame.get_column("request_index").to_list() == [0, 1]


def test_missing_optional_fields_and_workload_fill(tmp_path: Path) -> None:
    data = ("input_tokens,output_tokens,workload,tenant,drafted_tokens,accepted_tokens\n"
            "10,5,Code,acme,9,6\n11,6,,,,\n12,7,chat,globex,,\n")
    df = read_trace(write(tmp_path, "g.csv", data), workload="reasoning").frame
    assert df.get_column("workload").to_list() == ["code", "reasoning", "chat"]
    assert df.get_column("shard").to_list() == ["acme", None, "globex"]
    assert df.get_column("drafted_tokens").to_list() == [9, None, None]
    assert df.get_column("timestamp_s").null_count() == 3


def test_explicit_workload_beats_the_azure_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, "AzureLLMInferenceTrace_conv.csv", "\n".join([AZ_HEADER, *AZ_ROWS]))
    assert read_trace(path).frame.get_column("workload").unique().to_list() == ["chat"]
    assert read_trace(path, workload="RAG").frame.get_column("workload").unique().to_list() == ["rag"]


def test_small_disorder_is_sorted_with_a_warning(tmp_path: Path) -> None:
    rows = [AZ_ROWS[1], AZ_ROWS[0], AZ_ROWS[2]]
    tf = read_trace(write(tmp_path, "o.csv", "\n".join([AZ_HEADER, *rows])))
    assert tf.frame.get_column("request_index").to_list() == [1, 0, 2]
    assert tf.frame.get_column("timestamp_s").to_list()[0] == 0.0
    assert any("out of time order" in w for w in tf.warnings)


def test_burstgpt_v3_blank_session_ids_and_failures(tmp_path: Path) -> None:
    data = ("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\n"
            "19440161.0,,2,ChatGPT,36,29,65,API log\n"
            "19440170.0,,2,ChatGPT,0,0,0,API log\n"
            "19440180.0,,2,ChatGPT,0,5,5,API log\n")
    tf = read_trace(write(tmp_path, "BurstGPT_3.csv", data))
    assert tf.frame.get_column("shard").to_list() == ["GPT-4", "ChatGPT"]
    assert tf.frame.get_column("timestamp_s").to_list() == [0.0, 51.0]
    assert tf.dropped == {"zero_output_tokens": 1, "zero_input_tokens": 1}


def test_jsonl_blank_lines_extra_keys_and_later_error_lines(tmp_path: Path) -> None:
    lines = ['{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1], "extra": {"a": [1]}}',
             "", "   ", '{"timestamp": 250, "input_length": 6, "output_length": 3}']
    df = read_trace(write(tmp_path, "m.jsonl", "\r\n".join(lines) + "\r\n")).frame
    assert df.get_column("timestamp_s").to_list() == [0.0, 0.25]
    bad = "\n".join([*lines, '{"timestamp": 300, "input_length": -1, "output_length": 3}'])
    with pytest.raises(InputError) as info:
        read_trace(write(tmp_path, "m2.jsonl", bad))
    assert info.value.line == 5


def test_mooncake_without_timestamps(tmp_path: Path) -> None:
    df = read_trace(write(tmp_path, "m.jsonl", '{"input_length": 5, "output_length": 2}\n')).frame
    assert df.get_column("timestamp_s").to_list() == [None]


def test_jsonl_mapping_with_awkward_key_names_is_safe(tmp_path: Path) -> None:
    keys = {"in": "in tok'ens\"); DROP TABLE x; --", "out": "out/put~"}
    recs = [{keys["in"]: 7, keys["out"]: 3, "ts": "2024-05-10T00:00:00Z"},
            {keys["in"]: 8, keys["out"]: 4, "ts": "2024-05-10T00:00:02Z"}]
    path = write(tmp_path, "weird[1].jsonl", "\n".join(json.dumps(r) for r in recs))
    m = TraceMapping(input_tokens=keys["in"], output_tokens=keys["out"], timestamp="ts", timestamp_unit="datetime")
    df = read_trace(path, mapping=m).frame
    assert df.get_column("input_tokens").to_list() == [7, 8]
    assert df.get_column("timestamp_s").to_list() == [0.0, 2.0]


def test_csv_path_with_glob_characters(tmp_path: Path) -> None:
    assert_azure(write(tmp_path, "trace[*].csv", "\n".join([AZ_HEADER, *AZ_ROWS])))


def test_parquet_datetime_and_categorical_columns(tmp_path: Path) -> None:
    frame = pl.DataFrame({
        "created_at": [datetime(2024, 5, 10, 0, 0, 0), datetime(2024, 5, 10, 0, 0, 3)],
        "prompt_tokens": pl.Series([10, 20], dtype=pl.Int16),
        "completion_tokens": [1.0, 2.0],
        "tenant": pl.Series(["a", "b"], dtype=pl.Categorical),
    })
    path = tmp_path / "t.parquet"
    frame.write_parquet(path)
    df = read_trace(path).frame
    assert df.get_column("timestamp_s").to_list() == [0.0, 3.0]
    assert df.get_column("output_tokens").to_list() == [1, 2]
    assert df.get_column("shard").to_list() == ["a", "b"]


def test_sharegpt_role_aliases_system_turns_and_cjk(tmp_path: Path) -> None:
    convs = [{"id": "x", "conversations": [
        {"from": "system", "value": "be nice"}, {"from": "user", "value": "你好，世界"},
        {"from": "assistant", "value": "hello there friend"}, {"from": "human", "value": "again"}]}]
    tf = read_trace(write(tmp_path, "s.json", json.dumps(convs, ensure_ascii=False)))
    df = tf.frame
    assert df.get_column("prompt").to_list() == ["你好，世界"]
    assert df.get_column("input_tokens").to_list() == [estimate_tokens("你好，世界")]
    assert tf.dropped == {"unpaired_turns": 1}


def test_specbench_unknown_and_missing_category(tmp_path: Path) -> None:
    data = ('{"question_id": 1, "category": "Coding", "turns": ["a", "b"]}\n'
            '{"question_id": 2, "turns": ["c"]}\n{"question_id": 3, "category": "poetry", "turns": []}\n')
    tf = read_trace(write(tmp_path, "q.jsonl", data))
    assert tf.frame.get_column("workload").to_list() == ["code", "code", None]
    assert tf.dropped == {"empty_turns": 1}
    mix = tf.summary()["workload_mix"]
    assert mix == {"code": pytest.approx(2 / 3, abs=1e-6), "unknown": pytest.approx(1 / 3, abs=1e-6)}
