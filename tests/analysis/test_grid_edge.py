"""A winner at the deepest (or shallowest) depth its method has in the group is flagged "at the edge of the
grid": in ``analysis winners --json`` (``at_grid_edge``, ``grid_edge``) and in the CLI text."""

from __future__ import annotations

import heapq
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.winners import grid_edge, winners
from ingest import store
from ingest.records import CellKey
from tests.conftest import cli


def _rows(method_depths: list[tuple[str, int]]) -> list[dict]:
    return [{"method": m, "depth": d, "cell_id": f"{m}{d}"} for m, d in method_depths]


@pytest.mark.parametrize(("winner", "edge"), [
    (("eagle3", 5), "deepest"), (("eagle3", 2), "shallowest"), (("eagle3", 3), None), (("none", 0), None),
])
def test_edge_of_the_depths_the_method_has(winner, edge):
    rows = _rows([("none", 0), ("eagle3", 2), ("eagle3", 3), ("eagle3", 5), ("mtp", 1), ("mtp", 8)])
    got = grid_edge(rows, np.ones(len(rows)), rows.index(next(r for r in rows if (r["method"], r["depth"]) == winner)))
    assert (got or {}).get("edge") == edge
    if edge:
        assert got["depths"] == [2, 5] and "edge of the grid" in got["text"]


def test_depth_one_is_no_edge_and_a_single_depth_is_both():
    rows = _rows([("mtp", 1), ("mtp", 2), ("mtp", 3), ("ngram", 3)])
    assert grid_edge(rows, np.ones(4), 0) is None  # nothing shallower than 1 but no speculation
    only = grid_edge(rows, np.ones(4), 3)
    assert only["edge"] == "deepest" and "only depth" in only["text"]


def test_unmeasured_depths_do_not_count():
    rows = _rows([("mtp", 2), ("mtp", 3), ("mtp", 4)])
    assert grid_edge(rows, np.array([1.0, 2.0, np.nan]), 1)["edge"] == "deepest"  # depth 4 has no value


def _requests(rate: float, n: int = 120, slots: int = 4) -> pl.DataFrame:
    e2e = np.full(n, 2.0)
    free = [0.0] * slots
    start = []
    for d in e2e:
        t = heapq.heappop(free)
        start.append(t)
        heapq.heappush(free, t + d)
    out = np.full(n, int(rate * 2))
    return pl.DataFrame({"request_index": np.arange(n, dtype=np.int32), "output_tokens": out.astype(np.int32),
                         "ttft_ms": np.full(n, 50.0), "e2e_ms": e2e * 1e3, "start_s": np.asarray(start),
                         "ok": np.ones(n, bool)})


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two groups: in `code` eagle3's deepest depth wins by far; in `chat` its middle depth does."""
    db = tmp_path_factory.mktemp("edge") / "e.duckdb"
    from ingest.records import RunInfo

    with store.session(db) as con:
        store.write_run(con, RunInfo(run_id="r", backend="vllm", source="test"))
        for wl, best in (("code", 4), ("chat", 3)):
            for method, depth in (("none", 0), ("eagle3", 2), ("eagle3", 3), ("eagle3", 4)):
                rate = 100.0 if method == "none" else 200.0 - 40.0 * abs(depth - best)
                key = CellKey(method, depth, "Qwen", "q", wl, "MI300X", 4)
                store.write_cell(con, "r", key, _requests(rate), window_s=60.0, gpu_count=1)
    return db


def test_winners_json_and_cli_flag_the_edge(edge_store: Path):
    with store.connect(edge_store, read_only=True) as con:
        doc = winners(con, "output_throughput")
    by_wl = {c["workload"]: c for c in doc["cells"]}
    assert by_wl["code"]["winner"]["depth"] == 4 and by_wl["code"]["at_grid_edge"] is True
    assert by_wl["code"]["grid_edge"]["edge"] == "deepest" and by_wl["code"]["grid_edge"]["depths"] == [2, 4]
    assert by_wl["chat"]["winner"]["depth"] == 3 and by_wl["chat"]["at_grid_edge"] is False
    assert by_wl["chat"]["grid_edge"] is None
    proc = cli("analysis", "winners", "--db", str(edge_store))
    lines = {ln.split(" · ")[2]: ln for ln in proc.stdout.splitlines() if ln.count(" · ") >= 3}  # GPU · model · wl
    assert "at the edge of the grid (deepest depth measured for eagle3: 2–4)" in lines["code"]
    assert "edge of the grid" not in lines["chat"]
    cells = json.loads(cli("analysis", "winners", "--json", "--best-depth", "--db", str(edge_store)).stdout)["cells"]
    # comparing each method at its best depth still judges the edge on every depth measured
    assert {c["workload"]: c["at_grid_edge"] for c in cells} == {"code": True, "chat": False}
