"""What a label (a model id, workload, GPU, tenant, a run's name) may hold, whichever route it arrives by.

Control characters (C0, DEL, C1) and bidi embeddings/overrides/isolates garble tables or spoof what a
chart shows (a name rendered right-to-left), so a label holding one is refused: by ``--set``, by the
result importers for values read from a file, by the trace readers (as a polars regex) and by the matrix
reader for its ``name`` (which becomes the run id). ZWJ/ZWNJ stay allowed: real scripts need them.
"""

from __future__ import annotations

import re

FORBIDDEN = r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"  # also used as a polars regex
_FORBIDDEN = re.compile(FORBIDDEN)


def unsafe(value: str) -> bool:
    """True when ``value`` holds a control or bidi-override character."""
    return _FORBIDDEN.search(value) is not None


def shown(value: str, limit: int = 40) -> str:
    """``value`` as an escaped, short repr for an error line."""
    text = ascii(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
