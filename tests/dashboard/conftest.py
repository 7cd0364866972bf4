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


def open_page(page: str = "views/winners.py", query: dict[str, str | list[str]] | None = None) -> AppTest:
    """The app with ``query`` in the URL, switched to ``page``, after one run."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if page != "views/winners.py":  # open the page itself, as a link to it would
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def chart_specs(at: AppTest) -> list[dict]:
    """Every chart on the page as {"spec": Vega-Lite spec, "rows": rows of all its datasets}."""
    import json

    import polars as pl
    import pyarrow as pa

    out = []
    for el in at.get("vega_lite_chart"):
        rows = []
        for ds in el.proto.datasets:
            rows += pl.from_arrow(pa.ipc.open_stream(ds.data.data).read_all()).to_dicts()
        out.append({"spec": json.loads(el.proto.spec), "rows": rows})
    return out
