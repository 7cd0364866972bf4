"""The "Simulated data" banner shows exactly when simulated rows are on screen: absent on a store that holds
only measured (imported) results, present once a simulated run lands in the same store (real app, AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, cli
from tests.dashboard.conftest import chart_specs, open_page

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
MATRIX = """
name = "banner"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 128
[load]
concurrency = [1]
[run]
requests_per_cell = 20
"""


def _banner(at) -> bool:
    return any("Simulated data on screen" in w.value for w in at.warning)


@pytest.fixture(scope="module")
def measured_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("banner") / "measured.duckdb"
    res = cli("ingest", "results", str(SAMPLE), "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db


@pytest.mark.parametrize("page", ["views/winners.py", "views/explore.py", "views/datasets.py"])
def test_no_banner_without_simulated_rows(measured_db: Path, monkeypatch: pytest.MonkeyPatch, page: str):
    monkeypatch.setenv("SPECTUNE_DB", str(measured_db))
    at = open_page(page)
    assert not _banner(at)
    if page == "views/winners.py":  # the page did render the measured cell (not an empty page without a banner)
        rows = [r for c in chart_specs(at) for r in c["rows"]]  # the every-load view: one row per cell and load
        assert {(r["family"], r["workload"]) for r in rows if "pick" in r} == {("Qwen", "code")}


def test_the_banner_appears_once_a_simulated_run_lands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db = tmp_path / "mixed.duckdb"
    assert cli("ingest", "results", str(SAMPLE), "--db", str(db)).returncode == 0
    matrix = tmp_path / "banner.toml"
    matrix.write_text(MATRIX)
    res = cli("runner", "run", "--matrix", str(matrix), "--db", str(db))
    assert res.returncode == 0, res.stderr
    monkeypatch.setenv("SPECTUNE_DB", str(db))
    assert _banner(open_page("views/winners.py"))
