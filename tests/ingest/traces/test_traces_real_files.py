"""The readers on files shaped exactly like the real public traces (headers, key order, value shapes).

Each sample copies the *shape* of a few lines of the real file (checked against the public repos:
Azure/AzurePublicDataset ``data/AzureLLMInferenceTrace_code.csv`` and the 2024 notebook's rows of
``AzureLLMInferenceTrace_{code,conv}_1week.csv``, HPMLL/BurstGPT's README schema and release v2.0
``BurstGPT_3.csv`` header, kvcache-ai/Mooncake ``FAST25-release/traces/*.jsonl``, FastChat's ShareGPT
split output, vLLM's ``CustomDataset`` docstring, hemingkx/Spec-Bench categories); values are
illustrative. The tests then cover what users of those files hit: one-line JSON documents, Git LFS
pointers from a clone without ``git lfs``, pretty-printed JSON read as JSONL.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.traces import Limits, detect_format, read_trace

AZURE_2023 = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
              "2023-11-16 18:17:03.9799600,4808,10\n"
              "2023-11-16 18:17:04.0319600,3180,8\n"
              "2023-11-16 18:17:04.0781490,110,27\n")
# The 2024 week files mix whole seconds into the microsecond stamps (the notebook reads them with
# pandas' date_format="mixed" for that reason): "...00:00:00+00:00" next to "...00:00:00.001163+00:00".
AZURE_2024 = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
              "2024-05-12 00:00:00+00:00,1452,3\n"
              "2024-05-12 00:00:00.041683+00:00,584,3\n"
              "2024-05-12 00:00:01+00:00,862,38\n"
              "2024-05-12 00:00:01.248279+00:00,617,104\n")
BURSTGPT_1 = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
              "5,ChatGPT,472,18,490,Conversation log\n"
              "45,ChatGPT,1087,230,1317,Conversation log\n"
              "118,GPT-4,417,276,693,Conversation log\n"
              "120,GPT-4,300,0,300,API log\n")  # a failed request: Response tokens 0
BURSTGPT_3 = ("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
              "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\n"
              "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log\n"
              "19440192.0,,8,GPT-4,1779,123,1902,API log\n")
MOONCAKE = ('{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5]}\n'
            '{"timestamp": 3000, "input_length": 2012, "output_length": 354, "hash_ids": [0, 427, 428, 429]}\n'
            '{"timestamp": 5999, "input_length": 1053, "output_length": 26, "hash_ids": [0, 773, 774]}\n')
CONVS = [{"id": "QWJhYvA_0", "conversations": [
            {"from": "human", "value": "Summarize main points of this article about remote work."},
            {"from": "gpt", "value": "The article makes three points: flexibility, trust and tooling."}]},
         {"id": "i6IyJda_0", "conversations": [
            {"from": "human", "value": "How to tell if a customer segment is well segmented?"},
            {"from": "gpt", "value": "1. Homogeneity 2. Distinctiveness 3. Stability"},
            {"from": "human", "value": "Give an example."},
            {"from": "gpt", "value": "A retailer's weekend shoppers."}]},
         {"id": "A5AbcES_0", "conversations": []}]
VLLM_CUSTOM = ('{"prompt": "What is the capital of India?", "output_tokens": 10}\n'
               '{"prompt": "What is the capital of Iran?", "output_tokens": 1520}\n'
               '{"prompt": "What is the capital of China?"}\n')
SPECBENCH = ('{"question_id": 81, "category": "writing", "turns": ["Compose a travel blog post.", "Rewrite it."]}\n'
             '{"question_id": 119, "category": "math", "turns": ["Benjamin bought books.", "He sells them."], '
             '"reference": ["280", "350"]}\n'
             '{"question_id": 401, "category": "math_reasoning", "turns": ["Janet has 16 eggs."]}\n')


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.mark.parametrize("name, data, fmt, ins, outs, times", [
    ("AzureLLMInferenceTrace_code.csv", AZURE_2023, "azure", [4808, 3180, 110], [10, 8, 27],
     [0.0, 0.052, 0.098189]),
    ("AzureLLMInferenceTrace_conv_1week.csv", AZURE_2024, "azure", [1452, 584, 862, 617], [3, 3, 38, 104],
     [0.0, 0.041683, 1.0, 1.248279]),
    ("BurstGPT_1.csv", BURSTGPT_1, "burstgpt", [472, 1087, 417], [18, 230, 276], [0.0, 40.0, 113.0]),
    ("BurstGPT_3.csv", BURSTGPT_3, "burstgpt", [906, 36, 1779], [446, 29, 123], [0.0, 51.0, 82.0]),
    ("conversation_trace.jsonl", MOONCAKE, "mooncake", [6758, 2012, 1053], [500, 354, 26], [0.0, 3.0, 5.999]),
])
def test_counted_traces_in_their_real_shape(tmp_path: Path, name: str, data: str, fmt: str, ins: list[int],
                                            outs: list[int], times: list[float]) -> None:
    for variant, content in ((name, data.encode()), (name + ".gz", gzip.compress(data.encode(), mtime=0)),
                             ("bom-crlf-" + name, b"\xef\xbb\xbf" + data.replace("\n", "\r\n").encode())):
        tf = read_trace(write(tmp_path, variant, content))
        assert tf.format == fmt, variant
        df = tf.frame
        assert df.get_column("input_tokens").to_list() == ins, variant
        assert df.get_column("output_tokens").to_list() == outs, variant
        assert df.get_column("timestamp_s").to_list() == pytest.approx(times, abs=1e-6), variant
    if fmt == "burstgpt":
        assert set(df.get_column("shard")) <= {"ChatGPT", "GPT-4"}
        assert tf.dropped == ({"zero_output_tokens": 1} if "_1" in name else {})
    if fmt == "azure":  # the file name is the only code/conversation label the Azure traces carry
        assert set(df.get_column("workload")) == {"code" if "code" in name else "chat"}


def test_text_traces_in_their_real_shape(tmp_path: Path) -> None:
    share = read_trace(write(tmp_path, "ShareGPT_V3_unfiltered_cleaned_split.json", json.dumps(CONVS, indent=2)))
    assert (share.format, share.frame.height) == ("sharegpt", 3)
    assert share.frame.get_column("prompt")[2] == "Give an example."
    custom = read_trace(write(tmp_path, "custom.jsonl", VLLM_CUSTOM))
    assert custom.format == "jsonl" and custom.frame.get_column("output_tokens").to_list() == [10, 1520, 256]
    spec = read_trace(write(tmp_path, "question.jsonl", SPECBENCH))
    assert spec.format == "specbench"
    assert spec.frame.get_column("workload").to_list() == ["chat", "chat", "reasoning", "reasoning", "reasoning"]


def test_a_sharegpt_document_on_one_line_is_read_whatever_the_line_cap(tmp_path: Path) -> None:
    """``json.dump(convs, f)`` without indent writes the whole list on one line: still a valid document."""
    limits = Limits(max_line_bytes=64)  # the real cap is 1 MiB; one line here is ~700 bytes
    one_line = write(tmp_path, "sharegpt.json", json.dumps(CONVS))
    indented = write(tmp_path, "sharegpt_indented.json", json.dumps(CONVS, indent=2))
    for doc in (one_line, indented):  # a document is bounded by its own caps, not by lines
        tf = read_trace(doc, limits=limits)
        assert (tf.format, tf.frame.height) == ("sharegpt", 3)
    assert detect_format(one_line, limits=limits) == "sharegpt"
    gz = write(tmp_path, "sharegpt.json.gz", gzip.compress(json.dumps(CONVS).encode(), mtime=0))
    assert read_trace(gz, limits=limits).frame.height == 3
    # Only the document reader is exempt: the same line forced through a line reader is refused.
    for fmt in ("jsonl", "mooncake", "csv"):
        with pytest.raises(InputError, match="line longer than 64 bytes") as info:
            read_trace(one_line, fmt, limits=limits)
        assert info.value.line == 1
    # And a JSON-lines file with a long line is refused as before, before any reader runs.
    with pytest.raises(InputError, match="line longer than 64 bytes") as info:
        read_trace(write(tmp_path, "long.jsonl", MOONCAKE.replace("[0, 1, 2", "[" + "7, " * 30 + "0, 1, 2")),
                   limits=limits)
    assert info.value.line == 1


def test_sharegpt_as_json_lines_reads_like_the_list(tmp_path: Path) -> None:
    """Many ShareGPT-derived datasets ship one conversation object per line; same requests, same lines."""
    listing = read_trace(write(tmp_path, "sharegpt.json", json.dumps(CONVS)))
    lines = write(tmp_path, "sharegpt.jsonl", "".join(json.dumps(c) + "\n" for c in CONVS))
    assert detect_format(lines) == "sharegpt"
    tf = read_trace(lines)
    assert tf.format == "sharegpt"
    assert tf.frame.drop("request_index").equals(listing.frame.drop("request_index"))
    bad = write(tmp_path, "bad.jsonl", json.dumps(CONVS[0]) + "\n" + '{"conversations": [{"from": 1}]}\n')
    with pytest.raises(InputError, match="turn 1") as info:
        read_trace(bad)
    assert info.value.line == 2


@pytest.mark.parametrize("name", ["BurstGPT_1.csv", "conversation_trace.jsonl", "generic.parquet",
                                  "sharegpt.json", "BurstGPT_1.csv.gz"])
def test_a_git_lfs_pointer_is_named_not_parsed(tmp_path: Path, name: str) -> None:
    pointer = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4bb3783693d0a435686fbfc885615d2349bd067239079fa4b749f2e679e12122\nsize 52283111\n")
    data = gzip.compress(pointer.encode(), mtime=0) if name.endswith(".gz") else pointer
    path = write(tmp_path, name, data)
    for call in (lambda: read_trace(path), lambda: detect_format(path)):
        with pytest.raises(InputError) as info:
            call()
        assert info.value.line == 0
        assert "Git LFS pointer, not the data (the real file of 52,283,111 bytes" in info.value.message
        assert "git lfs pull" in info.value.message


def test_a_saved_web_page_is_named(tmp_path: Path) -> None:
    page = write(tmp_path, "AzureLLMInferenceTrace_code.csv", "<!DOCTYPE html>\n<html lang='en'>\n<head>\n")
    with pytest.raises(InputError, match="an HTML page") as info:
        read_trace(page)
    assert info.value.line == 0


def test_pretty_printed_json_read_as_json_lines_says_what_it_is(tmp_path: Path) -> None:
    result = write(tmp_path, "bench.json", json.dumps({"backend": "vllm", "input_lens": [1, 2]}, indent=2))
    with pytest.raises(InputError, match="an object spread over several lines") as info:
        read_trace(result)
    assert info.value.line == 1
    listing = write(tmp_path, "sharegpt.json", json.dumps(CONVS, indent=2))
    for fmt in ("jsonl", "mooncake", "specbench"):
        with pytest.raises(InputError, match=r"a list spread over several lines.*format sharegpt") as info:
            read_trace(listing, fmt)
        assert info.value.line == 1
    with pytest.raises(InputError, match=r"got a list .*format sharegpt"):
        read_trace(write(tmp_path, "one_line.json", json.dumps(CONVS)), "jsonl")
    # A list on a later line of real JSON lines is not taken for a ShareGPT file.
    with pytest.raises(InputError, match=r"got a list$") as info:
        read_trace(write(tmp_path, "mixed.jsonl", MOONCAKE + "[1, 2]\n"), "mooncake")
    assert info.value.line == 4


@pytest.mark.parametrize(("file", "name", "workload"), [
    ("conversation_trace.jsonl", None, "chat"),
    ("toolagent_trace.jsonl", None, None),
    ("synthetic_trace.jsonl", None, None),
    ("upload.jsonl", "conversation_trace.jsonl", "chat"),  # an upload: the display name says it
])
def test_mooncake_workload_comes_from_the_file_name(tmp_path: Path, file: str, name: str | None,
                                                    workload: str | None) -> None:
    tf = read_trace(write(tmp_path, file, MOONCAKE), name=name)
    assert tf.format == "mooncake" and set(tf.frame.get_column("workload").to_list()) == {workload}
    # an explicit workload wins over the name
    assert set(read_trace(tmp_path / file, workload="code", name=name).frame["workload"]) == {"code"}


def test_azure_workload_from_the_display_name_or_the_path(tmp_path: Path) -> None:
    data = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
    upload = write(tmp_path, "upload.csv", data)
    assert read_trace(upload).frame["workload"].to_list() == [None]
    assert read_trace(upload, name="AzureLLMInferenceTrace_code.csv").frame["workload"].to_list() == ["code"]
    real = write(tmp_path, "AzureLLMInferenceTrace_conv_1week.csv", data)
    assert read_trace(real, name="prod week 12").frame["workload"].to_list() == ["chat"]
