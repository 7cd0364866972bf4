"""Write the bad-input corpus for the trace readers (deterministic; re-run after changing a case).

    python tests/corpus/traces/make_corpus.py

Each file is one defect, named after it; MANIFEST.toml says which format to force, the expected
line and a substring of the expected error. Big cases (a 5 MB line, a 5 GB sparse file) are not
committed: tests/ingest/traces/test_traces_corpus.py builds them at test time.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import zipfile
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW1 = "2023-11-16 18:15:46.6805900,374,44\n"
ROW2 = "2023-11-16 18:15:50.7487640,396,109\n"
ROW3 = "2023-11-16 18:15:51.4794010,879,45\n"
MC = '{"timestamp": %d, "input_length": %s, "output_length": %s, "hash_ids": [0, 1]}\n'
BG = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def sharegpt(convs: list[object]) -> str:
    return json.dumps(convs, indent=2) + "\n"


GOOD_CONV = {"id": "a_0", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}

TEXT: dict[str, str | bytes] = {
    "empty.csv": b"",
    "whitespace_only.csv": "  \n\n \t\n",
    "azure_header_only.csv": AZ,
    "csv_only_blank_rows.csv": AZ + "\n\n   \n",
    "unknown_columns.csv": "foo,bar,baz\n1,2,3\n",
    "ambiguous_columns.csv": "TIMESTAMP,ContextTokens,GeneratedTokens,Model,Request tokens,Response tokens\n"
    "2023-11-16 18:15:46,1,2,GPT-4,1,2\n",
    "azure_missing_column.csv": "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46,12\n",
    "azure_missing_column_forced.csv": "TIMESTAMP,ContextTokens,Tokens\n2023-11-16 18:15:46,12,3\n",
    "azure_duplicate_headers.csv": "TIMESTAMP,ContextTokens,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46,1,2,3\n",
    "azure_negative_tokens.csv": AZ + ROW1 + ROW2 + "2023-11-16 18:15:51.4794010,-879,45\n",
    "azure_nan_tokens.csv": AZ + ROW1 + "2023-11-16 18:15:50.7487640,NaN,109\n",
    "azure_inf_tokens.csv": AZ + ROW1 + ROW2 + ROW3 + "2023-11-16 18:15:52.0000000,12,inf\n",
    "azure_huge_tokens.csv": AZ + ROW1 + "2023-11-16 18:15:50.7487640,10000001,109\n",
    "azure_int32_overflow.csv": AZ + "2023-11-16 18:15:46.6805900,3000000000,44\n",
    "azure_text_in_number.csv": AZ + ROW1 + ROW2 + "2023-11-16 18:15:51.4794010,12a,45\n",
    "azure_fractional_tokens.csv": AZ + ROW1 + "2023-11-16 18:15:50.7487640,396,10.5\n",
    "azure_missing_value.csv": AZ + ROW1 + "2023-11-16 18:15:50.7487640,,109\n",
    "azure_bad_timestamp.csv": AZ + ROW1 + ROW2 + "2023-13-45 99:00:00,879,45\n",
    "azure_timestamps_backwards.csv": AZ + ROW1 + ROW2 + "2023-11-16 16:00:00.0000000,879,45\n",
    "azure_ragged_row.csv": AZ + ROW1 + "2023-11-16 18:15:50.7487640,396,109,7\n",
    "azure_unterminated_quote.csv": AZ + ROW1 + '"2023-11-16 18:15:50.7487640,396,109\n' + ROW3,
    "azure_stray_quote.csv": AZ + ROW1 + ROW2 + '2023-11-16 18:15:51.4794010,8"79,45\n',
    "binary_junk.csv": bytes(random.Random(7).randrange(128, 256) for _ in range(4096)),
    "nul_bytes.csv": (AZ + ROW1 + "2023-11-16 18:15:50.7487640,39\x006,109\n").encode(),
    "invalid_utf8.csv": (AZ + ROW1 + ROW2).encode() + b"2023-11-16 18:15:51.4794010,879,45\xff\n",
    "latin1_encoded.csv": "prompt,output_tokens\nhello,3\ncaf\u00e9 cr\u00e8me,4\n".encode("latin-1"),
    "utf16_no_bom.csv": (AZ + ROW1).encode("utf-16-le"),
    "utf16_bom.csv": (AZ + ROW1).encode("utf-16"),
    "png_as_csv.csv": b"\x89PNG\r\n\x1a\n" + bytes(range(64)),
    # What a clone of HPMLL/BurstGPT without Git LFS holds instead of data/BurstGPT_1.csv.
    "git_lfs_pointer.csv": "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4bb3783693d0a435686fbfc885615d2349bd067239079fa4b749f2e679e12122\nsize 52283111\n",
    "git_lfs_pointer.parquet": "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:0000000000000000000000000000000000000000000000000000000000000000\nsize 1234\n",
    "html_page.csv": "\n<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>AzurePublicDataset</title></head>\n",
    "sharegpt_one_line.json": json.dumps([GOOD_CONV, GOOD_CONV]) + "\n",
    "jsonl_pretty_printed_list.jsonl": sharegpt([GOOD_CONV]),
    "cr_only_newlines.csv": (AZ + ROW1 + ROW2).replace("\n", "\r"),
    "not_parquet.parquet": AZ + ROW1,
    "burstgpt_all_failed.csv": BG + "5,ChatGPT,472,0,472,Conversation log\n45,GPT-4,0,0,0,API log\n",
    "burstgpt_bad_timestamp.csv": BG + "5,ChatGPT,472,18,490,API log\nsoon,ChatGPT,472,18,490,API log\n",
    "burstgpt_missing_model.csv": "Timestamp,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,472,18,490,API log\n",
    "generic_accepted_gt_drafted.csv": "input_tokens,output_tokens,drafted_tokens,accepted_tokens\n"
    "10,20,30,12\n10,20,30,31\n",
    "generic_mapping_missing_column.csv": "prompt_tok,completion_tok\n10,20\n",
    "generic_ambiguous_columns.csv": "input_tokens,prompt_tokens,output_tokens\n1,1,2\n",
    "generic_partial_timestamps.csv": "timestamp_s,input_tokens,output_tokens\n0.5,1,2\n,1,2\n",
    "generic_bare_timestamp_numeric.csv": "timestamp,input_tokens,output_tokens\n1,2,3\n",
    "generic_label_too_long.csv": "input_tokens,output_tokens,tenant\n1,2," + "x" * 300 + "\n",
    "generic_label_bidi_override.csv": "input_tokens,output_tokens,tenant\n1,2,acme\n3,4,evil\u202eexe.txt\n",
    "json_extension_not_json.jsonl": AZ + ROW1,
    "mooncake_truncated.jsonl": MC % (0, 10, 5) + MC % (10, 11, 6) + '{"timestamp": 20, "input_len',
    "mooncake_list_line.jsonl": MC % (0, 10, 5) + "[1, 2, 3]\n",
    "mooncake_lone_surrogate.jsonl": MC % (0, 10, 5) + '{"timestamp": 10, "input_length": 11, "output_length": 6, '
                                     '"hash_ids": [], "note": "\\udc80"}\n',
    # 120,000 blank lines before a bad row: read from a compacted copy, the error still names the real line
    "azure_blank_padding_bad_row.csv": AZ + ROW1 + "\n" * 120_000 + "2023-11-16 18:15:50.7487640,3x4,44\n",
    "mooncake_string_tokens.jsonl": MC % (0, 10, 5) + MC % (10, 11, 6) + MC % (20, '"12"', 7),
    "mooncake_missing_field.jsonl": MC % (0, 10, 5) + MC % (10, 11, 6) + '{"timestamp": 20, "input_length": 9}\n',
    "mooncake_deep_nesting.jsonl": MC % (0, 10, 5) + '{"timestamp": 1, "input_length": 3, "x": ' + "[" * 100_000 + "\n",
    "mooncake_deep_value.jsonl": MC % (0, 10, 5) + '{"timestamp": 1, "output_length": 3, "input_length": '
    + "[" * 50_000 + "]" * 50_000 + "}\n",
    "mooncake_duplicate_key.jsonl": MC % (0, 10, 5) + '{"timestamp": 1, "input_length": 3, "input_length": 4, '
    '"output_length": 2}\n',
    "mooncake_timestamp_string.jsonl": MC % (0, 10, 5) + '{"timestamp": "1s", "input_length": 3, "output_length": 2}\n',
    "mooncake_backwards.jsonl": MC % (5_000_000, 10, 5) + MC % (5_000_100, 11, 6) + MC % (0, 12, 7),
    "mooncake_negative_output.jsonl": MC % (0, 10, 5) + MC % (1, 10, -5),
    "jsonl_pretty_printed.jsonl": '{\n  "prompt": "hi",\n  "output_tokens": 3\n}\n',
    "jsonl_unknown_keys.jsonl": '{"question": "hi", "answer": "there"}\n',
    "vllm_prompt_not_string.jsonl": '{"prompt": "hi", "output_tokens": 3}\n{"prompt": 42, "output_tokens": 3}\n',
    "specbench_turns_not_list.jsonl": '{"question_id": 81, "category": "writing", "turns": ["a"]}\n'
    '{"question_id": 82, "category": "writing", "turns": "just one"}\n',
    "specbench_turn_not_string.jsonl": '{"question_id": 81, "category": "coding", "turns": ["a", {"t": 1}]}\n',
    "sharegpt_truncated.json": sharegpt([GOOD_CONV, GOOD_CONV])[:-40],
    "sharegpt_deep_nesting.json": "[\n" + "[" * 100_000 + "\n",
    "sharegpt_not_list.json": "\"conversations\"\n",
    "sharegpt_value_not_text.json": sharegpt([GOOD_CONV, {"id": "b_0", "conversations": [
        {"from": "human", "value": "hi"}, {"from": "gpt", "value": 42}]}]),
    "sharegpt_missing_conversations.json": sharegpt([GOOD_CONV, {"id": "c_0", "turns": []}]),
    "sharegpt_trailing_garbage.json": sharegpt([GOOD_CONV]) + "{}\n",
    "sharegpt_empty_list.json": "[]\n",
    "sharegpt_too_big.json": sharegpt([GOOD_CONV] * 3),
    "unknown_format_name.csv": AZ + ROW1,
}


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf, statistics=False)
    return buf.getvalue()


def binary_cases() -> dict[str, bytes]:
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("trace.csv", date_time=(2024, 1, 1, 0, 0, 0)), AZ + ROW1)
    good = parquet_bytes(pl.DataFrame({"input_tokens": [1, 2], "output_tokens": [3, 4]}))
    rows = (AZ + ROW1).encode()
    bomb = gzip.compress(AZ.encode() + ROW1.encode() * 200_000, mtime=0)  # ~7 MB inflated, ~25 kB stored
    return {
        "zip_as_csv.csv": zbuf.getvalue(),
        "parquet_wrong_types.parquet": parquet_bytes(
            pl.DataFrame({"input_tokens": ["1", "2"], "output_tokens": [3, 4]})),
        "parquet_truncated.parquet": good[: len(good) // 2],
        "parquet_nested_column.parquet": parquet_bytes(
            pl.DataFrame({"input_tokens": [1, 2], "output_tokens": [3, 4], "tenant": [[1], [2]]})),
        "gzip_truncated.csv.gz": gzip.compress(rows * 50, mtime=0)[:60],
        "gzip_bomb.csv.gz": bomb,
        # 5 MB of newlines in 5 KB (the upload that took the dashboard to 3.9 GB), then a bad row
        "gzip_blank_padding.csv.gz": gzip.compress((AZ + ROW1).encode() + b"\n" * 5_000_000
                                                   + b"2023-11-16 18:15:50.7487640,3x4,44\n", mtime=0),
    }


def main() -> None:
    for name, content in TEXT.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (HERE / name).write_bytes(data)
    for name, data in binary_cases().items():
        (HERE / name).write_bytes(data)


if __name__ == "__main__":
    main()
