"""Defects found by the reliability work and reported to their owners, pinned as strict xfails.

Each test states the correct behaviour. ``strict=True`` makes it FAIL once the defect is fixed, so the
marker (and the entry under "Known gaps" in docs/reliability.md) gets removed rather than forgotten.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest import store
from ingest.errors import InputError
from ingest.results import ReadOptions, read_file
from tests.conftest import REPO


@pytest.mark.xfail(strict=True, reason="ingest/results/vllm_bench.py: per-request seconds are not range-checked; "
                                       "1e308 s becomes an infinite ttft_ms (owner: result importers)")
def test_absurd_latency_is_refused_not_landed_as_infinity(tmp_path: Path) -> None:
    doc = json.loads((REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json").read_text())
    doc["ttfts"][0] = 1e308
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    try:
        parsed = read_file(path, "auto", ReadOptions())
    except InputError:
        return  # refused: the fix
    cell = parsed.cells[0]
    frames = store.cell_frames(parsed.run.run_id, cell.key, cell.requests, window_s=cell.window_s,
                               gpu_count=cell.gpu_count, counters=cell.counters, itl_ms=cell.itl_ms,
                               headline=cell.headline)
    assert not frames["requests"]["ttft_ms"].is_infinite().any()
