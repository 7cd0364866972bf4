"""Puts the repo root on ``sys.path`` so a page can ``import dashboard`` / ``analysis``.

Why: because a ``pages/`` folder sits next to app.py, Streamlit's legacy multipage mode runs a page file
directly (without app.py) when a link points at it (e.g. ``/load``); only app.py's folder is then on the
path. Pages import this module first (it is importable as a top-level module from that folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
