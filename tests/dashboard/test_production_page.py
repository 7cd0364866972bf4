"""The Production page in the real Streamlit app (AppTest) on a real store: the default data plus constructed
watch samples — a segment whose acceptance drifted enough to change its winner (with a restart), and an A/B
segment served by two targets."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import store
from tests.dashboard.conftest import chart_specs, open_page, plain

PAGE = "views/production.py"


@pytest.fixture
def page(prod_db: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPECTUNE_DB", str(prod_db))

    def open_(query: dict[str, str] | None = None) -> AppTest:
        return open_page(PAGE, query)

    return open_


def test_drifted_segment_shows_its_new_winner_band_and_annotations(page) -> None:
    at = page({"seg": "acme/code", "win": "300"})
    assert any("is now the clear pick" in plain(e.value) for e in at.error), [plain(e.value) for e in at.error]
    (chart,) = [c for c in chart_specs(at) if any("band_low" in r for r in c["rows"])]
    rows = [r for r in chart["rows"] if "band_low" in r]
    assert len(rows) >= 3 and all(r["band_low"] <= r["expected"] <= r["band_high"] for r in rows)
    assert all(r["acceptance_rate"] < r["band_low"] for r in rows), "the drift sits below the benchmark band"
    kinds = {r.get("kind") for r in chart["rows"] if "kind" in r}
    assert kinds == {"restart", "config_change"}
    recs = next(df.value for df in at.dataframe if "Recommended" in df.value.columns)
    assert recs["Status"].to_list() == ["winner_changed"] and recs["Running"].to_list() == ["dspark·6"]
    labels = [b.label for b in at.get("download_button")]
    assert {"PNG", "SVG", "PDF", "CSV", "Parquet"} <= set(labels)
    url = dict(at.query_params)
    assert url.get("win") in (["300"], "300") and "seg" not in url, url  # the default segment is left out


def test_ab_segment_names_the_winner_and_per_position_is_on_demand(page) -> None:
    at = page({"seg": "globex/chat", "pos": "1"})
    text = " ".join(m.value for m in at.markdown)
    assert "Clear: ab-b" in text and "p99_tpot_ms" in text
    specs = chart_specs(at)
    assert any(any("position" in r for r in c["rows"]) for c in specs)
    assert any(any(r.get("arm") == "B" for r in c["rows"]) for c in specs)
    off = page({"seg": "globex/chat"})
    assert not any(any("position" in r and "acceptance" in r for r in c["rows"]) for c in chart_specs(off))


def test_a_bad_url_value_is_a_warning_and_an_empty_store_says_how_to_collect(page, tmp_path, monkeypatch) -> None:
    at = page({"seg": "<script>", "win": "7"})
    assert at.warning and "<script>" not in " ".join(w.value for w in at.warning)
    empty = tmp_path / "empty.duckdb"
    store.connect(empty).close()
    monkeypatch.setenv("SPECTUNE_DB", str(empty))
    at = open_page(PAGE)
    assert any("ingest watch" in plain(i.value) for i in at.info)
