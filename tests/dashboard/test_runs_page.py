"""The "Runs & drift" page in the real Streamlit app (AppTest) on a real store: two identical simulated runs,
one with a shifted traffic mix, and an imported vLLM bench file."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import RUNS_SAMPLE as SAMPLE
from tests.dashboard.conftest import open_page

PAGE = "views/runs.py"


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
    runs = _frame(at, "Run", "Backend", "Started")
    assert {"A", "A2", "B"} <= set(runs["Run"]) and set(runs["Backend"]) == {"sim", "import"}
    imports = _frame(at, "File", "Format", "File hash")
    assert list(imports["File"]) == [str(SAMPLE)] and list(imports["Format"]) == ["vllm_bench"]
    assert int(imports["Cells"].iloc[0]) == 1 and int(imports["Requests"].iloc[0]) == 120
    assert any("Simulated data" in w.value for w in at.warning)  # sim rows on screen: the banner


def test_shifted_run_shows_changed_winners_and_shards(page) -> None:
    at = page({"run_a": "A", "run_b": "B"})
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cells compared"] == "30" and int(metrics["Winners changed"]) >= 1
    retune = _frame(at, "Shard", "From", "To", "Speculative config")
    assert len(retune) == int(metrics["Winners changed"])
    assert all(s.startswith("MI300X/MiniMax-M3/chat/") for s in retune["Shard"])  # the model names the shard
    groups = _frame(at, "Winner in A", "Winner in B", "Status")
    assert set(groups.loc[groups["Status"] == "changed", "Workload"]) == {"chat"}
    cells = _frame(at, "Change B − A (%)", "95 % CI low", "95 % CI high")
    assert len(cells) and set(cells["Workload"]) == {"chat"} and cells["Significant?"].all()
    # the per-cell values are headed by the metric picked ("Per-cell change in", default acceptance rate)
    assert {"Acceptance rate in A", "Acceptance rate in B"} <= set(cells.columns)


def test_identical_runs_nothing_to_retune_and_every_cell_on_request(page) -> None:
    at = page({"run_a": "A", "run_b": "A2"})
    assert {m.label: m.value for m in at.metric}["Winners changed"] == "0"
    assert any("nothing to re-tune" in s.value for s in at.success)
    assert not any(len(df.value) and "Shard" in df.value.columns for df in at.dataframe)
    at.toggle(key="runs.allcells").set_value(True).run()
    cells = _frame(at, "Change B − A (%)", "95 % CI low", "95 % CI high")
    assert len(cells) == 30 and (cells["Change B − A (%)"].fillna(0) == 0).all()
    assert at.query_params["allcells"] in ("1", ["1"])  # the choice is in the URL


def test_hostile_url_values_fall_back_to_defaults(page) -> None:
    at = page({"run_a": "A'; DROP TABLE runs; --", "run_b": "B", "metric": "<script>"})
    assert any("not valid" in w.value for w in at.warning)
    assert at.selectbox(key="runs.run_b").value == "B"
    assert at.selectbox(key="runs.metric").value == "output_throughput"
    assert not at.exception
