"""The dashboard's first start: the default store is built from the embedded data (ingest/default_data.py) with its
steps shown in a status box in the main area, before any page imports the analysis engines — not a blank page.

``app.py`` calls :func:`ensure_store` before the navigation runs, so the box is on screen as soon as the script
starts. The builder is imported only when the store is missing, after the box is drawn: importing it costs ~0.34 s
(duckdb, polars, the result readers), which at the top of this module put the box more than 1 s after the first
paint on a loaded machine (tests/e2e/test_first_start_browser.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from ingest import paths
from ingest.errors import UsageError


def db_path() -> str:
    """The store the dashboard reads: the ``db`` setting (``$SPECTUNE_DB``), else the default store (resolved)."""
    return str(paths.default_db_path().resolve())


def ensure_store(path: str | None = None) -> None:
    """Build the default store at ``path`` when it is missing, showing each step as it starts. A bad ``SPECTUNE_*``
    setting (ingest.settings) stops the app here with its one line: no page runs on settings that do not hold."""
    try:
        target = Path(path or db_path())
    except UsageError as exc:
        st.error(exc.one_line())
        st.stop()
    if os.path.lexists(target):
        return
    with st.status("First start: building the results store from the embedded data (about 10 s, once)…",
                   expanded=True) as box:
        def progress(step: int, steps: int, text: str) -> None:
            box.write(f"{step}/{steps} · {text}")

        # Deliberately lazy: the builder's imports (~0.34 s) come after the box is on screen, and only on a first start.
        from ingest.default_data import build_default_db

        build_default_db(target, progress=progress)
        box.update(label="Results store built", state="complete", expanded=False)
