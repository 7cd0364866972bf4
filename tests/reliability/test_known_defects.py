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
