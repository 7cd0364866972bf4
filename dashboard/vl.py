"""Plain Vega-Lite dict pieces for the specs the pages build without Altair's object model (issue 16).

Owns what those specs share with Altair's output so they stay equal to it: the schema URL of the pinned
Altair, its default view config plus :func:`charts.finish`'s, and inline data registered under the same
content-hash names Altair gives it. Altair's build (a deep copy per layer and per ``configure_*`` call, each
channel re-validated) costs ~0.1 s of CPU a chart on every rerun after a filter change; these dicts ~1 ms.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import polars as pl

from dashboard import theme

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"  # what the pinned Altair writes
# Altair's default theme (continuous sizes) with charts.finish's frame-less view and subtitle ink
CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300, "stroke": None},
          "title": {"subtitleColor": theme.INK_SOFT}}


def nominal(field: str, **kw: Any) -> dict:
    return {"field": field, **kw, "type": "nominal"}


def dataset(frame: pl.DataFrame, datasets: dict[str, list[dict]]) -> dict:
    """Register ``frame``'s rows under a content-hash name (as Altair names inline data) and refer to it."""
    values = frame.to_dicts()
    name = "data-" + hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:32]
    datasets[name] = values
    return {"name": name}


def top_level(datasets: dict[str, list[dict]], **spec: Any) -> dict:
    """A finished top-level spec (charts.finish without export styling) around ``spec``."""
    return {"config": CONFIG, **spec, "autosize": {"type": "pad"}, "$schema": SCHEMA, "datasets": datasets}
