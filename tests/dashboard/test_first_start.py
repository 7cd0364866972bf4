"""First start of the dashboard (dashboard/data.py ``_first_start``): while the default store is built, the main area
shows a status box with each build step, not a blank page. Real app (AppTest), real build of a fresh store."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import APP


def test_the_first_build_is_shown_step_by_step(tmp_path, monkeypatch):
    db = tmp_path / "first" / "spectune.duckdb"
    monkeypatch.setenv("SPECTUNE_DB", str(db))
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    assert db.exists()
    [box] = [s for s in at.status if "store" in s.label]
    assert box.label == "Results store built"
    steps = [m.value for m in box.markdown]
    assert steps[0].startswith("1/4 · reading the embedded data") and steps[-1].startswith("4/4 · default store ready")
    assert len(steps) == 4
    # The next run finds the store: no status box any more.
    again = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not [s for s in again.status if "store" in s.label] and not again.exception
    assert Path(str(db) + ".default-stamp").is_file()
