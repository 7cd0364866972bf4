"""The "Runs & drift" page in the real Streamlit app (AppTest) on a real store: two identical simulated runs,
one with a shifted traffic mix, and an imported vLLM bench file."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.analysis.test_compare import MATRIX, write_shifted_run
from tests.conftest import REPO, cli
from tests.dashboard.conftest import open_page

PAGE = "views/runs.py"
SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"


@pytest.fixture(scope="module")
def runs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs_page")
    matrix, db = root / "drift.toml", root / "runs.duckdb"
    matrix.write_text(MATRIX)
    for run_id in ("A", "A2"):
        res = cli("runner", "run", "--matrix", str(matrix), "--db", str(db), "--run-id", run_id, "--json")
        assert res.returncode == 0, res.stderr
    write_shifted_run(db, matrix, "B")
    res = cli("ingest", "results", str(SAMPLE), "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db


@pytest.fixture
def page(runs_db: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPECTUNE_DB", str(runs_db))

    def open_(query: dict[str, str] | None = None) -> AppTest:
        return open_page(PAGE, query)

    return open_


def _frame(at: AppTest, *columns: str):
    for df in at.dataframe:
        if all(c in df.value.columns for c in columns):
            return df.value
    raise AssertionError(f"no table with {columns}")


def test_runs_and_imported_files_with_provenance(page) -> None:
    at = page()
    assert [t.value for t in at.title] == ["Runs & drift"]
    assert [s.value for s in at.subheader] == ["Runs", "Imported files", "Compare two runs"]
    runs = _frame(at, "run_id", "backend", "started_at")
    assert {"A", "A2", "B"} <= set(runs["run_id"]) and set(runs["backend"]) == {"sim", "import"}
    imports = _frame(at, "file", "format", "file_hash")
    assert list(imports["file"]) == [str(SAMPLE)] and list(imports["format"]) == ["vllm_bench"]
    assert int(imports["cells"].iloc[0]) == 1 and int(imports["requests"].iloc[0]) == 120
    assert any("Simulated data" in w.value for w in at.warning)  # sim rows on screen: the banner


def test_shifted_run_shows_changed_winners_and_shards(page) -> None:
    at = page({"run_a": "A", "run_b": "B"})
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cells compared"] == "30" and int(metrics["Winners changed"]) >= 1
    retune = _frame(at, "shard", "from", "to", "speculative_config")
    assert len(retune) == int(metrics["Winners changed"])
    assert all(s.startswith("MI300X/MiniMax/chat/") for s in retune["shard"])
    groups = _frame(at, "winner_a", "winner_b", "status")
    assert set(groups.loc[groups["status"] == "changed", "workload"]) == {"chat"}
    cells = _frame(at, "change_pct", "ci_low", "ci_high")
    assert len(cells) and set(cells["workload"]) == {"chat"} and cells["significant"].all()


def test_identical_runs_nothing_to_retune_and_every_cell_on_request(page) -> None:
    at = page({"run_a": "A", "run_b": "A2"})
    assert {m.label: m.value for m in at.metric}["Winners changed"] == "0"
    assert any("nothing to re-tune" in s.value for s in at.success)
    assert not any(len(df.value) and "shard" in df.value.columns for df in at.dataframe)
    at.toggle(key="runs.allcells").set_value(True).run()
    cells = _frame(at, "change_pct", "ci_low", "ci_high")
    assert len(cells) == 30 and (cells["change_pct"].fillna(0) == 0).all()
    assert at.query_params["allcells"] in ("1", ["1"])  # the choice is in the URL


def test_hostile_url_values_fall_back_to_defaults(page) -> None:
    at = page({"run_a": "A'; DROP TABLE runs; --", "run_b": "B", "metric": "<script>"})
    assert any("not valid" in w.value for w in at.warning)
    assert at.selectbox(key="runs.run_b").value == "B"
    assert at.selectbox(key="runs.metric").value == "output_throughput"
    assert not at.exception
