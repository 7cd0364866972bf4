"""Write the bad-input corpus for ``python -m ingest results`` (one defect per case) and its MANIFEST.toml.

    python tests/corpus/results/make_corpus.py

Each case starts from a realistic sample in data/samples/results/ (or a tiny hand-made export) and breaks
one thing. The manifest records, per case, the file (or folder), the extra CLI arguments, the 1-based line
the error must name (0 = the file as a whole) and a substring of the expected one-line message. Lines are
computed here from the text written, so they stay right if a sample changes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[2] / "data" / "samples" / "results"
CASES: list[dict] = []


def case(file: str, line: int, contains: str, *, args: tuple[str, ...] = (), generate: str = "") -> None:
    entry = {"file": file, "line": line, "contains": contains}
    if args:
        entry["args"] = list(args)
    if generate:
        entry["generate"] = generate
    CASES.append(entry)


def write(name: str, text: str | bytes) -> Path:
    path = HERE / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def vllm() -> dict:
    return json.loads((SAMPLES / "vllm_bench_eagle3_qwen_code.json").read_text())


def lines(name: str) -> list[dict]:
    return [json.loads(x) for x in (SAMPLES / name).read_text().splitlines() if x.strip()]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def pretty(d: dict) -> str:
    """One key per line (arrays on one line), so errors can name the key's line."""
    return "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in d.items()) + "\n}\n"


def files() -> None:
    write("empty.json", "")
    case("empty.json", 0, "empty file")
    write("whitespace_only.jsonl", "  \n\n\t\n")
    case("whitespace_only.jsonl", 0, "empty file")
    write("binary_junk.json", b"{\x00\x01\x02\xff\xfe" * 40)
    case("binary_junk.json", 1, "binary data (NUL byte)")
    write("gzip_compressed.json", b"\x1f\x8b\x08\x00" + b"\x00" * 32)
    case("gzip_compressed.json", 0, "gzip-compressed")
    write("utf16.jsonl", '{"batch_size": 1}\n'.encode("utf-16"))
    case("utf16.jsonl", 1, "UTF-16")
    raw = (SAMPLES / "specbench_qwen3-8b-eagle3.jsonl").read_bytes().split(b"\n")[:5]
    raw[2] = raw[2].replace(b'"category": "', b'"category": "\xff', 1)
    write("specbench_invalid_utf8.jsonl", b"\n".join(raw) + b"\n")
    case("specbench_invalid_utf8.jsonl", 3, "invalid UTF-8 (byte 0xff)")
    write("json_list.json", "[1, 2, 3]\n")
    case("json_list.json", 1, "a JSON list")
    write("unknown_keys.json", '\n{"foo": 1, "bar": [2]}\n')
    case("unknown_keys.json", 2, "unrecognised JSON keys 'foo', 'bar'")
    write("deep_nesting.json", '{"a":' * 60000 + "1" + "}" * 60000)
    case("deep_nesting.json", 1, "nesting too deep")
    write("unrecognised.txt", "hello,world\n1,2\n")
    case("unrecognised.txt", 1, "unrecognised content starting 'hello,world'")

    text = json.dumps(vllm())
    write("vllm_truncated.json", text[:5000])
    case("vllm_truncated.json", 1, "invalid JSON")
    d = vllm()
    del d["duration"]
    write("vllm_missing_duration.json", json.dumps(d))
    case("vllm_missing_duration.json", 1, "missing duration")
    d = vllm()
    d["duration"] = -3.0
    t = write("vllm_negative_duration.json", pretty(d)).read_text()
    case("vllm_negative_duration.json", line_of(t, '"duration"'), "'duration' = -3.0 is out of range")
    d = vllm()
    d["ttfts"] = d["ttfts"][:-1]
    t = write("vllm_array_length_mismatch.json", pretty(d)).read_text()
    case("vllm_array_length_mismatch.json", line_of(t, '"ttfts"'), "'ttfts' has 119 entries but other")
    d = vllm()
    d["ttfts"][3] = "fast"
    t = write("vllm_ttft_text.json", pretty(d)).read_text()
    case("vllm_ttft_text.json", line_of(t, '"ttfts"'), "'ttfts'[3] must be a number")
    d = vllm()
    d["itls"][0] = 0.02
    t = write("vllm_itls_not_lists.json", pretty(d)).read_text()
    case("vllm_itls_not_lists.json", line_of(t, '"itls"'), "'itls'[0] must be a list")
    d = vllm()
    d["output_lens"][2] = 12.5
    t = write("vllm_fractional_output_lens.json", pretty(d)).read_text()
    case("vllm_fractional_output_lens.json", line_of(t, '"output_lens"'), "whole token counts")
    d = vllm()
    d["spec_decode_acceptance_rate"] = 160.5
    t = write("vllm_acceptance_over_100_percent.json", pretty(d)).read_text()
    case("vllm_acceptance_over_100_percent.json", line_of(t, '"spec_decode_acceptance_rate"'),
         "'spec_decode_acceptance_rate' = 160.5 is out of range")
    d = vllm()
    d["num_speculative_tokens"] = "three"
    t = write("vllm_bad_metadata_depth.json", pretty(d)).read_text()
    case("vllm_bad_metadata_depth.json", line_of(t, '"num_speculative_tokens"'),
         "metadata 'num_speculative_tokens' = 'three': expected a whole number")
    d = vllm()
    d["output_throughput"] = "fast"
    t = write("vllm_throughput_text.json", pretty(d)).read_text()
    case("vllm_throughput_text.json", line_of(t, '"output_throughput"'), "'output_throughput' must be a number")
    sweep = (SAMPLES / "vllm_bench_mtp_sweep.jsonl").read_text().splitlines()
    write("vllm_append_duplicate_cell.jsonl", "\n".join([*sweep, sweep[1]]) + "\n")
    case("vllm_append_duplicate_cell.jsonl", 4, "same cell as the result on line 2")
    write("vllm_append_bad_second.jsonl", sweep[0] + "\n" + sweep[1][:300] + "\n")
    case("vllm_append_bad_second.jsonl", 2, "invalid JSON")
    impossible()

    rows = lines("specbench_qwen3-8b-eagle3.jsonl")
    bad = [dict(r) for r in rows[:8]]
    del bad[4]["choices"]
    write("specbench_missing_choices.jsonl", jsonl(bad))
    case("specbench_missing_choices.jsonl", 5, "missing 'choices'")
    bad = json.loads(json.dumps(rows[:8]))
    bad[6]["choices"][0]["wall_time"] = bad[6]["choices"][0]["wall_time"][:1]
    write("specbench_wall_time_short.jsonl", jsonl(bad))
    case("specbench_wall_time_short.jsonl", 7, "wall_time must be a list of 2 numbers")
    bad = json.loads(json.dumps(rows[:8]))
    bad[2]["choices"][0]["accept_lengths"][5] = 0
    write("specbench_accept_below_one.jsonl", jsonl(bad))
    case("specbench_accept_below_one.jsonl", 3, "accept_lengths must hold numbers ≥ 1")
    bad = json.loads(json.dumps(rows[:10]))
    bad[8]["model_id"] = "llama-3-8b-medusa"
    write("specbench_two_models.jsonl", jsonl(bad))
    case("specbench_two_models.jsonl", 9, "model_id 'llama-3-8b-medusa' differs")
    bad = json.loads(json.dumps(rows[:6]))
    bad[3]["choices"][0]["new_tokens"][0] = -5
    write("specbench_negative_tokens.jsonl", jsonl(bad))
    case("specbench_negative_tokens.jsonl", 4, "new_tokens must hold whole non-negative numbers")

    srows = lines("sglang_bench_speculative.jsonl")
    bad = [dict(r) for r in srows]
    del bad[5]["speed"]
    write("sglang_missing_speed.jsonl", jsonl(bad))
    case("sglang_missing_speed.jsonl", 6, "missing speed")
    bad = [dict(r) for r in srows]
    bad[2]["acc_length"] = 0.4
    write("sglang_acc_below_one.jsonl", jsonl(bad))
    case("sglang_acc_below_one.jsonl", 3, "'acc_length' = 0.4 is below 1")
    bad = [dict(r) for r in srows]
    bad[0]["batch_size"] = 0
    write("sglang_batch_zero.jsonl", jsonl(bad))
    case("sglang_batch_zero.jsonl", 1, "'batch_size' must be at least 1")
    text = jsonl(srows).splitlines()
    text[7] = text[7].replace(f'"step_time": {srows[7]["step_time"]}', '"step_time": NaN')
    write("sglang_nan_step_time.jsonl", "\n".join(text) + "\n")
    case("sglang_nan_step_time.jsonl", 8, "'step_time' must be a positive number")

    pub = (HERE.parents[2] / "data" / "published_results.csv").read_text().splitlines()[:12]
    header = pub[0].split(",")
    write("published_missing_value_column.csv",
          "\n".join([",".join(h for h in header if h != "value"), *pub[1:3]]) + "\n")
    case("published_missing_value_column.csv", 1, "missing columns value")
    write("published_duplicate_header.csv", "\n".join([pub[0] + ",unit", *pub[1:3]]) + "\n")
    case("published_duplicate_header.csv", 1, "duplicate header 'unit'")
    rows_ = [r for r in pl.read_csv(HERE.parents[2] / "data" / "published_results.csv",
                                    infer_schema_length=0).head(10).iter_rows(named=True)]
    frame = pl.DataFrame(rows_)
    for name, row, col, value, contains in (
        ("published_text_value.csv", 5, "value", "fast", "value 'fast' is not a number"),
        ("published_nan_value.csv", 3, "value", "nan", "value 'nan' is not a finite number"),
        ("published_empty_metric.csv", 7, "metric", "", "empty 'metric'"),
    ):
        f = frame.with_columns(pl.when(pl.int_range(pl.len()) == row - 2).then(pl.lit(value))
                               .otherwise(pl.col(col)).alias(col))
        f.write_csv(HERE / name)
        case(name, row, contains)
    write("published_ragged_row.csv", "\n".join([pub[0], pub[1], ",".join(pub[2].split(",")[:5]), pub[3]]) + "\n")
    case("published_ragged_row.csv", 3, "5 fields, expected 19")
    simple = "https://y.example/post,t,2026-01-01,vllm,MI300X,1,m,Qwen,true,eagle3,3,code,d,1,0.0,acceptance_length,2.5,x,n"
    write("published_unterminated_quote.csv", "\n".join([pub[0], pub[1], '"https://x.example/a,title never closed',
                                                        simple, simple]) + "\n")
    case("published_unterminated_quote.csv", 3, "a quote opened here runs to line")


def impossible() -> None:
    """Values no vLLM run writes (issue 15): each refused on its key's line, whatever route it came by."""
    def ok_index(d: dict) -> int:
        return next(i for i, e in enumerate(d.get("errors") or [""] * len(d["ttfts"])) if not e)

    d = vllm()
    d["latencies"] = [t + sum(row) for t, row in zip(d["ttfts"], d["itls"], strict=True)]
    i = ok_index(d)
    d["ttfts"][i] = d["latencies"][i] + 0.431
    t = write("vllm_ttft_over_latency.json", pretty(d)).read_text()
    case("vllm_ttft_over_latency.json", line_of(t, '"ttfts"'), "longer than the request's latency")
    d = vllm()
    d["ttfts"][ok_index(d)] = 12345.678
    t = write("vllm_ttft_1e400.json", pretty(d).replace("12345.678", "1e400")).read_text()
    case("vllm_ttft_1e400.json", line_of(t, '"ttfts"'), "not a finite number on a successful request")
    d = vllm()
    d["num_speculative_tokens"] = "99"
    t = write("vllm_metadata_depth_99.json", pretty(d)).read_text()
    case("vllm_metadata_depth_99.json", line_of(t, '"num_speculative_tokens"'), "expected a whole number ≤ 64")
    d = vllm()
    d["model_id"] = "Qwen\u202e3.5"
    t = write("vllm_model_id_bidi.json", pretty(d)).read_text()
    case("vllm_model_id_bidi.json", line_of(t, '"model_id"'), "expected a printable value")
    d = vllm()
    d["itls"][ok_index(d)] = [0.0] * 20_000
    t = write("vllm_itls_beyond_tokens.json", pretty(d)).read_text()
    case("vllm_itls_beyond_tokens.json", line_of(t, '"itls"'), "gaps for")
    d = vllm()
    d["request_rate"] = "fast"
    t = write("vllm_request_rate_text.json", pretty(d)).read_text()
    case("vllm_request_rate_text.json", line_of(t, '"request_rate"'), "'request_rate' must be a positive number")
    d = vllm()
    d["output_throughput"] = float("nan")
    t = write("vllm_throughput_nan.json", pretty(d)).read_text()
    case("vllm_throughput_nan.json", line_of(t, '"output_throughput"'), "expected a finite number")


def exports() -> None:
    runs = pl.DataFrame({"run_id": ["r1"], "backend": ["sim"], "source": ["m.toml"]})
    cells = pl.DataFrame({"run_id": ["r1"], "cell_id": ["c1"], "method": ["mtp"], "depth": [2], "family": ["Qwen"],
                          "model": ["q"], "workload": ["code"], "gpu": ["MI300X"], "concurrency": [1],
                          "status": ["ok"], "output_throughput": [100.0]})
    for name in ("export_not_parquet", "export_missing_runs", "export_orphan_cells", "export_bad_status",
                 "export_missing_columns", "folder_without_cells"):
        shutil.rmtree(HERE / name, ignore_errors=True)
        (HERE / name).mkdir()
    (HERE / "export_not_parquet" / "cells.parquet").write_text("run_id,cell_id\nr1,c1\n")
    runs.write_parquet(HERE / "export_not_parquet" / "runs.parquet")
    case("export_not_parquet", 0, "not a Parquet file (missing PAR1 magic)")
    cells.write_parquet(HERE / "export_missing_runs" / "cells.parquet")
    case("export_missing_runs", 0, "runs.parquet:0: missing")
    cells.with_columns(pl.lit("r2").alias("run_id")).write_parquet(HERE / "export_orphan_cells" / "cells.parquet")
    runs.write_parquet(HERE / "export_orphan_cells" / "runs.parquet")
    case("export_orphan_cells", 0, "cells of run 'r2' have no row in runs.parquet")
    cells.with_columns(pl.lit("done").alias("status")).write_parquet(HERE / "export_bad_status" / "cells.parquet")
    runs.write_parquet(HERE / "export_bad_status" / "runs.parquet")
    case("export_bad_status", 0, "status 'done'; expected ok or failed")
    cells.drop("workload", "gpu").write_parquet(HERE / "export_missing_columns" / "cells.parquet")
    runs.write_parquet(HERE / "export_missing_columns" / "runs.parquet")
    case("export_missing_columns", 0, "cells.parquet lacks columns workload, gpu")
    (HERE / "folder_without_cells" / "notes.txt").write_text("nothing here\n")
    case("folder_without_cells", 0, "a folder without cells.parquet")


def published_cells() -> None:
    """The published per-cell table (data/published/vllm-amd-2026-08) and its per-position file, each broken."""
    folder = HERE.parents[2] / "data" / "published" / "vllm-amd-2026-08"
    cells = (folder / "cells.csv").read_text(encoding="utf-8").splitlines()[:9]
    header = cells[0].split(",")
    at = {h: i for i, h in enumerate(header)}

    def changed(line: str, col: str, value: str) -> str:
        import csv
        import io

        row = next(csv.reader([line]))
        row[at[col]] = value
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(row)
        return buf.getvalue()

    for name, row, col, value, contains in (
        ("published_cells_text_tok_s.csv", 4, "output_tok_s", "fast", "output_tok_s 'fast' is not a number"),
        ("published_cells_rate_above_one.csv", 6, "acceptance_rate", "1.4", "acceptance_rate '1.4' outside 0–1"),
        ("published_cells_load_zero.csv", 3, "concurrency", "0", "concurrency '0' is not a whole number ≥ 1"),
        ("published_cells_depth_range.csv", 8, "depth", "3-8", "depth '3-8' is not a whole number of 1–64"),
    ):
        lines = list(cells)
        lines[row - 1] = changed(lines[row - 1], col, value)
        write(name, "\n".join(lines) + "\n")
        case(name, row, contains)
    write("published_cells_ragged_row.csv", "\n".join([*cells[:4], cells[4] + ",extra", *cells[5:]]) + "\n")
    case("published_cells_ragged_row.csv", 5, f"{len(header) + 1} fields, expected {len(header)}")
    positions = (folder / "positions.csv").read_text(encoding="utf-8").splitlines()[:6]
    write("published_positions_alone.csv", "\n".join(positions) + "\n")
    case("published_positions_alone.csv", 0, "a per-position table is imported together with its cells table")
    write("published_positions_orphan.csv", "\n".join([*positions[:3], positions[3].replace("gemma-4-26B", "gemma-9")])
          + "\n")
    case("published_positions_orphan.csv", 4, "no row of the cells table for google/gemma-9",
         args=("data/published/vllm-amd-2026-08/cells.csv",))


def generated() -> None:
    case("huge_sparse.json", 0, "over the 1073741824-byte import limit", generate="sparse_2gb")
    case("missing_file.json", 0, "no such file", generate="missing")
    case("spec_no_baseline_file.jsonl", 0, "no such file", generate="copy_specbench",
         args=("--baseline", "tests/corpus/results/does_not_exist.jsonl"))


def manifest() -> str:
    out = ["# Bad-input corpus for `python -m ingest results` (written by make_corpus.py): one defect per case.",
           "#   file      name in this folder (a folder for spectune exports; built at test time when `generate`)",
           "#   line      expected 1-based line of the error (0 = the file or folder as a whole)",
           "#   contains  a substring of the expected one-line message;  args = extra CLI arguments", ""]
    for c in CASES:
        out.append("[[case]]")
        for k, v in c.items():
            out.append(f"{k} = {json.dumps(v, ensure_ascii=False)}")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    files()
    exports()
    published_cells()
    generated()
    (HERE / "MANIFEST.toml").write_text(manifest(), encoding="utf-8")
    print(f"{len(CASES)} cases")
