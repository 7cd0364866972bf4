"""Which result format a path holds: folder/Parquet magic, then the first JSON record's keys, then a CSV header.

Order: a folder (or a table file inside one) with ``cells.parquet`` → ``spectune_parquet``; a folder of
``SERVE-…/BENCH-…/run=N.json`` → ``vllm_sweep``; a ``.yaml``/``.yml`` GuideLLM report → ``guidellm``; a JSON
object with SGLang's ``mean_e2e_latency_ms`` → ``sglang_serving``; with vLLM's ``duration, completed,
output_throughput`` → ``vllm_bench``; ``question_id`` + ``choices`` → ``specbench``; ``batch_size, steps,
acc_length, step_time`` → ``sglang_spec``; ``{"benchmarks": [{"metrics": …}]}`` → ``guidellm``; a CSV header
with ``source_url, metric, value`` → ``published_csv``; with ``source_url, model, method, depth, output_tok_s`` →
``published_cells`` (a folder holding one too); with ``source_url, position, acceptance_rate`` →
``published_positions``. Anything else is an error on line 1 saying what was
found and what was expected.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ingest.errors import InputError
from ingest.filechecks import HEAD_BYTES, PARQUET_MAGIC, head_bytes
from ingest.results import (
    guidellm,
    jsonstream,
    published,
    published_cells,
    sglang_serving,
    sglang_spec,
    specbench,
    spectune_parquet,
    vllm_bench,
    vllm_sweep,
)
from ingest.results.source import check_size, scan_text

EXPECTED = ("expected vllm bench serve JSON, a vllm bench sweep folder, a GuideLLM report, SGLang bench_serving or "
            "bench_speculative JSONL, Spec-Bench output JSONL, a published-results CSV, a published cells table (or "
            "its folder) or a spectune export folder")


# What the formats' ``looks_like`` tests read of the first document: its keys, GuideLLM's first benchmark's
# metrics, the PyTorch-benchmark copy's first record's metric. Every other array/object is streamed past.
_DETECT_PATHS = frozenset({("benchmarks",), ("benchmarks", 0), ("benchmarks", 0, "metrics"), (0,), (0, "metric")})


def _first_object(path: Path) -> object:
    """The first JSON document's shape, streamed (the rest of the file is not read; the reader parses it)."""
    doc = jsonstream.first_doc(path, lambda p, is_array: p in _DETECT_PATHS)
    return doc.value if doc else None


def _pytorch_benchmark_records(path: Path) -> bool:
    """vllm/benchmarks/lib/utils.py ``convert_to_pytorch_benchmark_format``: ``[{benchmark, model, metric}]``."""
    try:
        obj = _first_object(path)
    except InputError:
        return False
    first = obj[0] if isinstance(obj, list) and obj else None
    return isinstance(first, dict) and {"benchmark", "model", "metric"} <= set(first) and \
        isinstance(first["metric"], dict) and "benchmark_values" in first["metric"]


def detect(path: Path) -> str:
    if path.is_dir():
        if spectune_parquet.folder_of(path):
            return spectune_parquet.FORMAT
        if vllm_sweep.experiment_dir(path):
            return vllm_sweep.FORMAT
        if published_cells.folder_files(path):
            return published_cells.FORMAT
        raise InputError(path, 0, f"a folder without cells.parquet or SERVE-…/BENCH-… run=N.json files; {EXPECTED}")
    check_size(path)
    head = head_bytes(path, HEAD_BYTES)
    if head.startswith(PARQUET_MAGIC):
        if path.stem in spectune_parquet.TABLES and spectune_parquet.folder_of(path):
            return spectune_parquet.FORMAT
        raise InputError(path, 0, f"a Parquet file outside a spectune export folder; {EXPECTED}")
    if len(head) < HEAD_BYTES:  # small files: the full checks (binary, UTF-8) first
        scan_text(path)
        text = head.decode("utf-8-sig")
    else:
        text = head.decode("utf-8-sig", errors="replace")
        if "\x00" in text:
            raise InputError(path, text.count("\n", 0, text.index("\x00")) + 1, f"binary data (NUL byte); {EXPECTED}")
    stripped = text.lstrip()
    if path.suffix.lower() in guidellm.YAML_SUFFIXES:
        if guidellm.looks_like(guidellm.load(path)[1]):
            return guidellm.FORMAT
        raise InputError(path, 1, f"a YAML file that is not a GuideLLM benchmarks report; {EXPECTED}")
    first_line = text.count("\n", 0, len(text) - len(stripped)) + 1
    if stripped.startswith("{"):
        obj = _first_object(path)
        for module in (sglang_serving, vllm_bench, specbench, sglang_spec, guidellm):
            if module.looks_like(obj):
                return module.FORMAT
        keys = ", ".join(repr(k) for k in list(obj)[:10]) if isinstance(obj, dict) else type(obj).__name__
        raise InputError(path, first_line, f"unrecognised JSON keys {keys}; {EXPECTED}")
    if stripped.startswith("["):
        if _pytorch_benchmark_records(path):
            main = path.name.removesuffix(".pytorch.json") + ".json" if path.name.endswith(".pytorch.json") else ""
            raise InputError(path, first_line, "vLLM's PyTorch-benchmark-format copy of a result (one record per "
                             "metric, written next to the --save-result file when SAVE_TO_PYTORCH_BENCHMARK_FORMAT "
                             "is set); import the result file itself" + (f" ({main})" if main else ""))
        raise InputError(path, first_line, f"a JSON list; {EXPECTED}")
    header_line = stripped.splitlines()[0] if stripped else ""
    try:
        header = next(csv.reader(io.StringIO(header_line)))
    except (csv.Error, StopIteration):
        header = []
    if published.looks_like_header(header):
        return published.FORMAT
    if published_cells.looks_like_cells(header):
        return published_cells.FORMAT
    if published_cells.looks_like_positions(header):
        return published_cells.POSITIONS_FORMAT
    shown = header_line[:80]
    raise InputError(path, first_line, f"unrecognised content starting {shown!r}; {EXPECTED}")
