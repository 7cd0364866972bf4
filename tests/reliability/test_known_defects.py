"""Defects found by the reliability work, kept as regression tests once fixed.

A defect still open is pinned as ``xfail(strict=True)`` (it FAILS once fixed, so the marker and the entry
under "Known gaps" in docs/reliability.md get removed rather than forgotten).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.results import ReadOptions, read_file
from tests.conftest import REPO


def test_absurd_latency_is_refused_not_landed_as_infinity(tmp_path: Path) -> None:
    doc = json.loads((REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json").read_text())
    doc["ttfts"][0] = 1e308
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="not a plausible request time"):
        read_file(path, "auto", ReadOptions())


@pytest.mark.parametrize("label", ["evil\u202etxt.exe", "a\u2067b", "tab\there", "bell\x07x"])
def test_trace_labels_with_bidi_or_control_characters_are_refused(tmp_path: Path, label: str) -> None:
    from ingest.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text(f"input_tokens,output_tokens,tenant\n10,20,acme\n11,21,\"{label}\"\n", encoding="utf-8")
    with pytest.raises(InputError, match="control or bidi-override") as exc:
        read_trace(path)
    assert exc.value.line == 3
