"""A cell with more request rows than Altair accepts (5,000) drills down without error: the latency chart is fed
binned statistics from DuckDB, never the request rows (issue 16: MaxRowsError at 10 M request rows)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.dashboard.conftest import chart_specs, figure_title, latency_boxes, latency_figure, open_page

REQUESTS = 6000  # one cell's requests: over Altair's 5,000-row limit on its own

MATRIX = f"""
name = "big-cell"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [2]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 64
[load]
concurrency = [1]
[run]
requests_per_cell = {REQUESTS}
"""


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bigcell")
    (folder / "m.toml").write_text(MATRIX)
    db = folder / "big.duckdb"
    proc = cli("runner", "run", "--matrix", str(folder / "m.toml"), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    return db


@pytest.fixture
def on_big_store(big_db: Path):
    old = os.environ["SPECTUNE_DB"]
    os.environ["SPECTUNE_DB"] = str(big_db)
    yield big_db
    os.environ["SPECTUNE_DB"] = old


@pytest.mark.parametrize("lat", ["e2e_ms", "tpot_ms"])
def test_drilldown_of_a_cell_over_altairs_row_limit(on_big_store, lat: str):
    at = open_page(query={"conc": "1", "cell": "MI300X|Qwen|code", "dlat": lat})  # open_page asserts no exception
    specs = chart_specs(at)
    latency = latency_figure(at)  # the distribution is an interactive (Plotly) figure
    assert figure_title(latency) == f"Request {lat.replace('_ms', '').upper()} distribution"
    boxes = latency_boxes(latency)
    assert {r["candidate"] for r in boxes} == {"none", "eagle3·2"}
    assert all(r["n"] == REQUESTS for r in boxes)  # every request is in the statistics, none in the chart
    drawn = sum(len(t.get("x") or []) for t in latency["figure"]["data"])  # outlier bins only
    assert drawn < 100
    assert all(len(s["rows"]) < 1000 for s in specs)
