"""Every result importer, fed files that are mostly padding, keeps its memory to what it keeps (issue 15).

Each case pads a real sample (data/samples/results) with :data:`PAD` bytes of something the importer does not
keep — whitespace inside a JSON document, blank lines between JSON Lines records, a huge ``generated_texts``
array, an unknown top-level key holding a big array, per-request arrays a headline-only reader ignores, the
answer text of Spec-Bench, GuideLLM's per-request samples, whitespace-only CSV lines — and runs ``ingest
results``' reader (format detection included) in a fresh process (``tests/reliability/memprobe.py``). It
asserts the peak RSS above the imports stays under :data:`BOUND_MB`, and that the cells imported (keys,
headline figures, per-request rows, ITL samples, landed tables) equal the unpadded sample's.

The whole-file reader these importers used before needed at least twice the file in memory (its bytes and
its text), i.e. ≥ 2 × :data:`PAD` = 128 MB here, so every case fails the bound with it (measured for each
case, old and new: docs/reliability.md §5b); the streaming reader stays under 20 MB.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.reliability.memprobe import result_cells

SAMPLES = REPO / "data" / "samples" / "results"
PAD = 64 << 20
BOUND_MB = 100  # above the interpreter with spectune imported; the whole-file reader needed >= 2 * PAD = 128 MB
SETS = {"family": "Qwen", "gpu": "MI300X", "workload": "chat"}
MiB = 1 << 20


def _lines(name: str) -> list[str]:
    return (SAMPLES / name).read_text().splitlines()


def _write_padded(path: Path, head: str, pad_unit: str, tail: str) -> None:
    """``head`` + ``pad_unit`` repeated to PAD bytes + ``tail``, written a MiB at a time."""
    block = pad_unit * (MiB // len(pad_unit))
    with path.open("w") as fh:
        fh.write(head)
        for _ in range(PAD // len(block)):
            fh.write(block)
        fh.write(tail)


def _big_strings(total: int, size: int = 100_000, char: str = "x") -> str:
    """A JSON array of strings adding up to about ``total`` bytes."""
    return "[" + ",".join([json.dumps(char * size)] * (total // (size + 3))) + "]"


def _vllm_doc() -> dict[str, Any]:
    return json.loads((SAMPLES / "vllm_bench_eagle3_qwen_code.json").read_text())


def vllm_whitespace_inside(path: Path) -> Path:
    text = json.dumps(_vllm_doc(), indent=1)
    _write_padded(path, "{", " " * 127 + "\n", text[1:])
    return SAMPLES / "vllm_bench_eagle3_qwen_code.json"


def _blank_lines_after_first(path: Path, sample: str) -> Path:
    """A JSONL sample with blank-line padding between its first record and the rest."""
    first, *rest = _lines(sample)
    _write_padded(path, first + "\n", "\n", "\n".join(rest) + "\n")
    return SAMPLES / sample


def vllm_jsonl_blank_lines(path: Path) -> Path:
    return _blank_lines_after_first(path, "vllm_bench_mtp_sweep.jsonl")


def vllm_generated_texts(path: Path) -> Path:
    doc = json.dumps(_vllm_doc())
    path.write_text(doc[:-1] + ', "generated_texts": ' + _big_strings(PAD) + "}")
    return SAMPLES / "vllm_bench_eagle3_qwen_code.json"


def vllm_unknown_key_big_array(path: Path) -> Path:
    blob = json.dumps({"trace": "y" * 100_000, "ids": list(range(50))})
    doc = json.dumps(_vllm_doc())
    path.write_text(doc[:-1] + ', "my_tool_debug": [' + ",".join([blob] * (PAD // len(blob))) + "]}")
    return SAMPLES / "vllm_bench_eagle3_qwen_code.json"


def vllm_sweep_padded_run(path: Path) -> Path:
    shutil.copytree(SAMPLES / "vllm_sweep_qwen", path)
    run = path / "SERVE--eagle3-k3-BENCH--c16" / "run=0.json"
    doc = run.read_text().rstrip()
    run.write_text(doc[:-1] + ', "generated_texts": ' + _big_strings(PAD) + "}\n")
    return SAMPLES / "vllm_sweep_qwen"


def sglang_serving_output_details(path: Path) -> Path:
    lines = _lines("sglang_bench_serving.jsonl")
    share = PAD // len(lines)
    with path.open("w") as fh:  # --output-details: per-request arrays bench_serving adds, unread here
        for line in lines:
            fh.write(line[:-1] + ', "ttfts": [0.5, 0.25], "itls": [[0.01, 0.02]], "generated_texts": '
                     + _big_strings(share) + "}\n")
    return SAMPLES / "sglang_bench_serving.jsonl"


def sglang_spec_blank_lines(path: Path) -> Path:
    return _blank_lines_after_first(path, "sglang_bench_speculative.jsonl")


def specbench_answer_text(path: Path) -> Path:
    lines = _lines("specbench_qwen3-8b-eagle3.jsonl")
    share = PAD // len(lines)
    with path.open("w") as fh:  # each answer's text (choices[0].turns) is what dominates a real file
        for line in lines:
            rec = json.loads(line)
            rec["choices"][0]["turns"] = ["z" * (share // 2), "z" * (share // 2)]
            fh.write(json.dumps(rec) + "\n")
    return SAMPLES / "specbench_qwen3-8b-eagle3.jsonl"


def guidellm_request_samples(path: Path) -> Path:
    report = json.loads((SAMPLES / "guidellm_benchmarks.json").read_text())
    share = PAD // len(report["benchmarks"])
    sample = {"request_id": "r", "output": "w" * 100_000, "prompt_tokens": 5, "output_tokens": 7}
    for b in report["benchmarks"]:
        b["requests"] = {"successful": [sample] * (share // 100_050), "errored": [], "incomplete": []}
    path.write_text(json.dumps(report))
    return SAMPLES / "guidellm_benchmarks.json"


def published_whitespace_lines(path: Path) -> Path:
    src = REPO / "data" / "published_results.csv"
    header, *rows = src.read_text().splitlines(keepends=True)
    _write_padded(path, header + "".join(rows[:5]), " " * 1023 + "\n", "".join(rows[5:]))
    return src


def published_cells_whitespace_lines(path: Path) -> Path:
    src = REPO / "data" / "published" / "vllm-amd-2026-08" / "cells.csv"
    header, *rows = src.read_text(encoding="utf-8").splitlines(keepends=True)
    _write_padded(path, header + "".join(rows[:5]), " " * 1023 + "\n", "".join(rows[5:]))
    return src


CASES: dict[str, tuple[str, Callable[[Path], Path], dict[str, str]]] = {
    "vllm_bench: whitespace inside the document": ("bench.json", vllm_whitespace_inside, {}),
    "vllm_bench: blank lines between --append-result records": ("bench.jsonl", vllm_jsonl_blank_lines, {}),
    "vllm_bench: huge generated_texts": ("bench.json", vllm_generated_texts, {}),
    "vllm_bench: unknown key holding a big array": ("bench.json", vllm_unknown_key_big_array, {}),
    "vllm_sweep: a run file with huge generated_texts": ("sweep", vllm_sweep_padded_run, SETS),
    "sglang_serving: --output-details arrays": ("sgl.jsonl", sglang_serving_output_details, SETS),
    "sglang_spec: blank lines between records": ("spec.jsonl", sglang_spec_blank_lines, {}),
    "specbench: long answer texts": ("answers.jsonl", specbench_answer_text, {}),
    "guidellm: per-request samples": ("benchmarks.json", guidellm_request_samples,
                                      {**SETS, "method": "eagle3", "depth": "3"}),
    "published_csv: whitespace-only lines": ("published.csv", published_whitespace_lines, {}),
    "published_cells: whitespace-only lines": ("cells.csv", published_cells_whitespace_lines, {}),
}


def test_the_streaming_reader_runs_on_ijsons_c_backend() -> None:
    """The pinned ijson wheel ships yajl2_c; without it ijson silently falls back to its pure-Python backend
    (same events, slower), which CI should notice rather than inherit."""
    from ingest.results import jsonstream

    assert jsonstream.BACKEND == "yajl2_c"


class TestPaddedResultFilesCostNoMemory:
    @pytest.mark.parametrize("case", list(CASES))
    def test_padding_is_streamed_past_and_the_import_is_unchanged(self, tmp_path: Path, case: str) -> None:
        name, write, overrides = CASES[case]
        path = tmp_path / name
        unpadded = write(path)
        size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size
        assert size > PAD * 0.99
        proc = subprocess.run([sys.executable, "-m", "tests.reliability.memprobe", "result_cells", str(path),
                               *(f"{k}={v}" for k, v in overrides.items())], cwd=REPO, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert "accepted" in report, report
        grew = report["peak_mb"] - report["base_mb"]
        assert grew < BOUND_MB, f"{case}: {size:,} bytes read with {grew:.0f} MB above the imports"
        expected = json.loads(json.dumps(result_cells(unpadded, overrides)))
        assert expected and report["accepted"] == expected
