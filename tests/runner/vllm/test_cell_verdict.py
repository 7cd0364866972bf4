"""A cell's verdict when its server dies: a crash whose exit is not yet visible when the load ends (the
sockets close before the kernel reports the exit) still fails the cell as "server died", never lands as an
``ok`` cell with a few "failed" requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.records import CellKey
from runner.matrix import load_matrix
from runner.vllm import cell
from runner.vllm.cell import Target, measure_cell
from runner.vllm.client import LoadResult, RequestResult
from runner.workloads import WorkloadRequests
from tests.runner.test_vllm_backend import write_matrix


def _load(errors: list[str | None]) -> LoadResult:
    reqs = [RequestResult(i, start_s=0.01 * i, ok=e is None, error=e, output_tokens=12, ttft_ms=5.0, e2e_ms=50.0)
            for i, e in enumerate(errors)]
    return LoadResult(requests=reqs, window_s=1.0)


@pytest.mark.parametrize(("errors", "dies_after", "status"), [
    # 3 of 6 requests refused after the crash: not a majority, so only the death check can fail the cell
    ([None, None, None, "connection error: refused", "connection error: refused", "connection error: refused"], 2,
     "failed"),
    ([None] * 5 + ["connection error: reset"], None, "ok"),  # a lone reset with a live server: an ok cell
])
def test_a_crash_that_shows_late_still_fails_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      errors: list[str | None], dies_after: int | None,
                                                      status: str) -> None:
    matrix = load_matrix(write_matrix(tmp_path, ["ok"], methods="[methods.none]"))
    key = CellKey("none", 0, "ok", "ok", "code", "cpu", 2)
    monkeypatch.setattr(cell, "run_requests", lambda *a, **k: _load(errors))
    monkeypatch.setattr(cell, "_snapshot", lambda url: None)
    calls = [0]

    def died() -> str | None:
        calls[0] += 1
        return "exit code 9: (no log)" if dies_after is not None and calls[0] > dies_after else None

    out = measure_cell(matrix, key, Target("http://127.0.0.1:9", "ok", died), WorkloadRequests("code", [], None, ""),
                       gpu_count=1)
    assert out.status == status
    if status == "failed":
        assert out.error == "server died during the cell: exit code 9: (no log)"
