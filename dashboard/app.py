"""spectune dashboard entry point: ``streamlit run dashboard/app.py``. Builds the navigation (and, on a first start,
the default store, with its progress on screen: dashboard/first_start.py).

Pages are listed once in :data:`PAGES` (file, title, icon); pages owned by other parts of the project
("Your traffic", "Runs & drift") are included only when their file exists.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # `streamlit run` puts dashboard/ on the path, not the repo root
    sys.path.insert(0, str(HERE.parent))

import streamlit as st  # noqa: E402

PAGES: list[tuple[str, str, str]] = [
    ("views/winners.py", "Winners", ":material/emoji_events:"),
    ("views/explore.py", "Explore", ":material/query_stats:"),
    ("views/tradeoffs.py", "Trade-offs", ":material/scatter_plot:"),
    ("views/gpus.py", "GPUs", ":material/memory:"),
    ("views/load.py", "Load", ":material/speed:"),
    ("views/traffic.py", "Your traffic", ":material/upload_file:"),
    ("views/runs.py", "Runs & drift", ":material/history:"),
    ("views/production.py", "Production", ":material/monitor_heart:"),
    ("views/datasets.py", "Data", ":material/table_view:"),
]


def pages() -> list[st.Page]:
    out = []
    for i, (file, title, icon) in enumerate(p for p in PAGES if (HERE / p[0]).exists()):
        out.append(st.Page(str(HERE / file), title=title, icon=icon, default=i == 0))
    return out


st.set_page_config(page_title="spectune", page_icon="⚡", layout="wide")
from dashboard.first_start import ensure_store  # noqa: E402  (light: before any page imports the engines)

ensure_store()  # first start: the default store is built with its steps on screen, not behind a blank page
st.navigation(pages()).run()
