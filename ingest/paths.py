"""Where spectune's own files are, in a checkout and in an installed copy (``pip install .``).

In a checkout the packages sit next to ``data/`` and ``.streamlit/``; an installed wheel carries those two
folders as ``spectune/data`` and ``spectune/streamlit`` beside the packages in site-packages. The default store
is ``data/spectune.duckdb`` in a checkout (as the README says) and, installed, a per-user file
(``$XDG_DATA_HOME/spectune/spectune.duckdb``, i.e. ``~/.local/share/spectune``) rather than site-packages.
The ``db`` setting (ingest.settings, docs/settings.md) overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

from ingest import settings as settings_mod
from ingest.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]  # the checkout, or site-packages
INSTALLED = not (ROOT / "data" / "sim_params.toml").is_file() and (ROOT / "spectune" / "data").is_dir()
DATA_DIR = ROOT / "spectune" / "data" if INSTALLED else ROOT / "data"
STREAMLIT_CONFIG = (ROOT / "spectune" / "streamlit" if INSTALLED else ROOT / ".streamlit") / "config.toml"
DASHBOARD_APP = ROOT / "dashboard" / "app.py"
MATRICES_DIR = ROOT / "runner" / "matrices"


def user_data_dir() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "spectune"


DEFAULT_DB = user_data_dir() / "spectune.duckdb" if INSTALLED else DATA_DIR / "spectune.duckdb"


def default_db_path(settings: settings_mod.Settings | None = None) -> Path:
    """The store a command opens without ``--db``: the ``db`` setting (default: this process's), else
    :data:`DEFAULT_DB`."""
    s = settings if settings is not None else settings_mod.load()
    return s.db if s.db is not None else DEFAULT_DB


def announce_first_start(db: Path | None, settings: settings_mod.Settings | None = None) -> None:
    """Say on stderr, before the heavy imports, that the default store is about to be built (a first start takes
    seconds; ingest/default_data.py then reports each step). Nothing when ``--db`` is given or the store exists.
    ``settings``: the command's (default: this process's)."""
    if db is not None:
        return
    try:
        target = default_db_path(settings)
    except UsageError:  # a bad setting: the command itself says so, in one line
        return
    if os.path.lexists(target):
        return
    import sys

    print(f"first start: building the default store {target} from the embedded data "
          "(about 10 s, once)…", file=sys.stderr, flush=True)
