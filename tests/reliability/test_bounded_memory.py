"""Memory follows what is kept, not the file's padding: every reader, fed inputs that are mostly padding.

Each case runs the reader in a fresh process (``tests/reliability/memprobe.py``) and measures its peak RSS
(``ru_maxrss``) after imports and after reading. The padding (40 MiB of blank lines, whitespace, comments or
one huge ignored field per record) keeps 1–120 rows; the bound is fixed. Before the fix, the CSV case with
40 MiB of newlines peaked at ~2.7 GB (polars materialised a row per blank line).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, SMALL_MATRIX

BOUND_MB = 300  # above the interpreter with spectune imported
PAD = 40 << 20
HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW = "2024-05-10 00:00:0{}.000,10,20\n"
REC = '{{"timestamp": {}, "input_length": 5, "output_length": 3, "hash_ids": []}}\n'


def _csv_newlines(path: Path) -> None:
    path.write_text(HEADER + ROW.format(0) + "\n" * PAD + ROW.format(1))


def _csv_whitespace(path: Path) -> None:
    path.write_text(HEADER + ROW.format(0) + "   \n" * (PAD // 4) + ROW.format(1))


def _csv_bad_row_after_padding(path: Path) -> None:
    path.write_text(HEADER + ROW.format(0) + "\n" * PAD + "2024-05-10 00:00:01.000,1x,20\n")


def _gz_newlines(path: Path) -> None:  # 40 KB on the wire: the upload that took the dashboard to 3.9 GB
    with gzip.open(path, "wb") as fh:
        fh.write((HEADER + ROW.format(0)).encode() + b"\n" * PAD + ROW.format(1).encode())


def _jsonl_blank(path: Path) -> None:
    path.write_text(REC.format(1) + "\n" * PAD + REC.format(2))


def _jsonl_huge_ignored_field(path: Path) -> None:
    with path.open("w") as fh:
        for i in range(40):  # 1 MB of an unknown key per record (just under the line cap)
            fh.write(REC.format(i).replace("}\n", f', "junk": "{"x" * 1_000_000}"}}\n'))


def _results_whitespace(path: Path) -> None:
    doc = json.loads((REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json").read_text())
    path.write_text(json.dumps(doc) + " " * PAD + "\n")


def _results_jsonl_blank(path: Path) -> None:
    lines = (REPO / "data" / "samples" / "results" / "vllm_bench_mtp_sweep.jsonl").read_text().splitlines()
    path.write_text(("\n" * (PAD // len(lines))).join(lines) + "\n")


def _matrix_comments(path: Path) -> None:  # as much comment as the 4 MiB matrix cap allows
    path.write_text(SMALL_MATRIX + ("#" + "x" * 78 + "\n") * (4_000_000 // 80))


CASES: dict[str, tuple[str, str, Callable[[Path], None], str]] = {
    "csv_blank_lines": ("trace", "t.csv", _csv_newlines, "accepted"),
    "csv_whitespace_lines": ("trace", "t.csv", _csv_whitespace, "accepted"),
    "csv_bad_row_after_padding": ("trace", "t.csv", _csv_bad_row_after_padding, "refused"),
    "upload_gz_of_newlines": ("upload", "t.csv.gz", _gz_newlines, "accepted"),
    "jsonl_blank_lines": ("trace", "t.jsonl", _jsonl_blank, "accepted"),
    "jsonl_huge_ignored_field": ("trace", "t.jsonl", _jsonl_huge_ignored_field, "accepted"),
    "vllm_json_whitespace": ("results", "bench.json", _results_whitespace, "accepted"),
    "vllm_jsonl_blank_lines": ("results", "bench.jsonl", _results_jsonl_blank, "accepted"),
    "matrix_comments": ("matrix", "m.toml", _matrix_comments, "accepted"),
}


class TestMemoryIsBoundedByWhatIsKept:
    @pytest.mark.parametrize("case", list(CASES))
    def test_padding_does_not_cost_memory(self, tmp_path: Path, case: str) -> None:
        kind, name, write, expected = CASES[case]
        path = tmp_path / name
        write(path)
        proc = subprocess.run([sys.executable, "-m", "tests.reliability.memprobe", kind, str(path)], cwd=REPO,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert expected in report, report
        grew = report["peak_mb"] - report["base_mb"]
        assert grew < BOUND_MB, f"{case}: {path.stat().st_size:,} bytes read with {grew:.0f} MB above the imports"
