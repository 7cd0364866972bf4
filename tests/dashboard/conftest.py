"""Dashboard tests run the real Streamlit app (AppTest) on a real store built from the embedded data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


@pytest.fixture(scope="session", autouse=True)
def app_db(default_db: Path):
    """Point the app at the session's store (never data/): the dashboard reads SPECTUNE_DB."""
    old = os.environ.get("SPECTUNE_DB")
    os.environ["SPECTUNE_DB"] = str(default_db)
    yield default_db
    if old is None:
        os.environ.pop("SPECTUNE_DB", None)
    else:
        os.environ["SPECTUNE_DB"] = old


def open_page(page: str = "pages/winners.py", query: dict[str, str | list[str]] | None = None) -> AppTest:
    """The app with ``query`` in the URL, switched to ``page``, after one run."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    if page != "pages/winners.py":
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at
