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


def test_drifted_segment_shows_its_new_winner_band_and_annotations(page, prod_db: Path) -> None:
    from analysis.production.report import ProductionQuery, production_report

    at = page({"seg": "acme/code", "win": "300"})
    errors = [plain(e.value) for e in at.error]
    with store.session(prod_db, read_only=True) as con:
        (seg,) = production_report(con, ProductionQuery(segments=("acme/code",), window_s=300))["segments"]
    clear = seg["recommendation"]["clear"]
    # "clear pick" only when it is; else the alert is that the running config is clearly beaten
    wording = "is now the clear pick" if clear else "leads (a tie among the leaders) and the running config is " \
        "clearly beaten"
    assert any(wording in e for e in errors), errors
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
    assert any("spectune watch" in plain(i.value) for i in at.info)


@pytest.fixture
def fleet_page(default_db: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """The page on a store whose benchmark cells were measured from counters only (no per-request data)."""
    from tests.analysis.production import fleet

    db, _bench = fleet.counters_only_store(tmp_path_factory, default_db)
    monkeypatch.setenv("SPECTUNE_DB", str(db))
    return lambda query: open_page(PAGE, query)


def _acceptance_chart(at: AppTest) -> dict:
    (chart,) = [c for c in chart_specs(at) if any("band_low" in r for r in c["rows"])]
    return chart


def test_counters_only_benchmark_draws_its_band_and_flags_acceptance_outside_it(fleet_page) -> None:
    at = fleet_page({"seg": "seg-f90", "win": "300"})  # open_page: no exception on counters-only cells
    warnings = [plain(w.value) for w in at.warning]
    assert any("outside the benchmark band" in w and "below" in w and "re-measure" in w for w in warnings), warnings
    rows = [r for r in _acceptance_chart(at)["rows"] if "band_low" in r]
    assert rows and all(r["band_low"] < r["expected"] < r["band_high"] for r in rows)
    assert all(r["ci_high"] < r["band_low"] for r in rows if r["interval"] == "95 %")
    recs = next(df.value for df in at.dataframe if "Recommended" in df.value.columns)
    assert recs["Status"].to_list() == ["acceptance_outside_band"]
    low = fleet_page({"seg": "seg-low", "win": "300"})
    assert any("seg-low" in plain(e.value) and "mtp" in plain(e.value) for e in low.error)


def test_times_are_utc_and_a_tiny_window_is_drawn_hollow_not_exact(fleet_page) -> None:
    at = fleet_page({"seg": "seg-tiny", "win": "60"})
    captions = " ".join(plain(c.value) for c in at.caption)
    assert "All times UTC" in captions and "Period: 2026-11-30 00:53 UTC → 2026-11-30 00:54 UTC" in captions
    chart = _acceptance_chart(at)
    points = [r for r in chart["rows"] if "interval" in r]
    assert points and all(r["interval"] == "too few tokens to tell" and r["ci_low"] is None for r in points)
    layers = chart["spec"]["layer"]
    assert all(lyr["encoding"]["x"]["scale"]["type"] == "utc" for lyr in layers if "x" in lyr.get("encoding", {}))
    (pts,) = [lyr for lyr in layers if lyr["mark"]["type"] == "point"]
    assert pts["encoding"]["fill"]["condition"]["test"] == "datum.interval == '95 %'"
    assert pts["encoding"]["fill"]["value"] == "white"  # hollow: not an exact value
    window_tip = next(t for t in pts["encoding"]["tooltip"] if t["field"] == "window")
    assert window_tip["formatType"] == "utc" and window_tip["format"].endswith(" UTC")
